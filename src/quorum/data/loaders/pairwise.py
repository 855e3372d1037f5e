"""LLMBar as a named dataset (``llmbar``): the pairwise folder ``pairwise_llmbar`` read as
it is (the pairwise kind recognises it, :mod:`quorum.tasks.pairwise`), with our prices.

The folder has no prices. Ours follow the data's cost ladder (LLaMA2-70B, Falcon-180B,
ChatGPT, GPT-4; README of the folder), per call: :data:`CALL_PRICES`. A swap judge (the
judge's name: both answer orders) pays two calls; each order alone (``<judge>/Vanilla/orig``,
``.../swapped``) one. The panel is the four swap judges; a person costs the task's
``human_price`` (0.10).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from quorum.data.loaders._common import finalize
from quorum.data.schema import Dataset
from quorum.errors import DatasetNotFoundError
from quorum.tasks.base import TaskType
from quorum.tasks.pairwise import Pairwise

LLMBAR_FOLDER = "pairwise_llmbar"
LLMBAR_FILE = f"{LLMBAR_FOLDER}/items.parquet"
#: price of one call of each judge (ours; the cost ladder of the data's README)
CALL_PRICES: dict[str, float] = {"LLaMA2": 0.002, "Falcon": 0.004, "ChatGPT": 0.004, "GPT-4": 0.02}


def llmbar_prices(names: list[str]) -> dict[str, float]:
    """Price of each annotator name: a judge's own name (its swap annotator) two calls, one
    order one call.

    >>> llmbar_prices(["GPT-4", "GPT-4/Vanilla/orig"])
    {'GPT-4': 0.04, 'GPT-4/Vanilla/orig': 0.02}
    """
    out = {}
    for n in names:
        judge = n.split("/")[0]
        if judge in CALL_PRICES:
            out[n] = round(CALL_PRICES[judge] * (2 if n == judge else 1), 6)
    return out


def load_llmbar(root: Path, sub: str | None, name: str) -> Dataset:
    """The folder's pairs and answers as the pairwise kind reads them
    (:meth:`~quorum.tasks.pairwise.Pairwise.folder_task`), priced by :func:`llmbar_prices`."""
    folder = root / LLMBAR_FOLDER
    items_file, answers_file = folder / "items.parquet", folder / "answers.parquet"
    for f in (items_file, answers_file):
        if not f.is_file():
            raise DatasetNotFoundError(f"dataset {name!r}: file not found: {f}")
    raw_items, raw_answers = pd.read_parquet(items_file), pd.read_parquet(answers_file)
    task, items, answers = Pairwise.folder_task(name, raw_items, raw_answers)
    items = items.assign(language="en")
    names = sorted(set(answers["annotator"].astype(str)))
    prices = llmbar_prices(names)
    return finalize(
        name,
        TaskType.pairwise,
        items,
        answers,
        kinds={a: "llm" for a in names},
        sources=[items_file, answers_file],
        labels=task["labels"],
        description=task.get("description"),
        prices=prices,
        panel=[j for j in reversed(CALL_PRICES) if j in prices],
        reference_llm="GPT-4" if "GPT-4" in prices else None,
        notes=[
            "llmbar: prices per call "
            + ", ".join(f"{j} {p:g}" for j, p in CALL_PRICES.items())
            + "; a swap judge (both orders) pays two calls; panel: the four swap judges; "
            "an inconsistent pair is no answer from its swap judge"
        ],
    )
