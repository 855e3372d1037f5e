"""Loaders for span sets: d2t-eval's error spans (the ``span_d2t_eval`` folder, read as a
span folder by :meth:`quorum.tasks.spans.Spans.folder_task`)."""

from __future__ import annotations

from pathlib import Path

from quorum.data.loaders._common import finalize, source_file
from quorum.data.schema import Dataset, TaskType
from quorum.tasks.spans import Spans

D2T_FILE = "span_d2t_eval/items.parquet"
D2T_ANSWERS = "span_d2t_eval/answers.parquet"
#: the panel and prices of the span benchmark: the README's best to weakest overlap F1 on
#: a price ladder (docs/router.md, "Span tasks")
D2T_PRICES = {
    "o3-mini": 0.05,
    "claude-3-7-sonnet": 0.03,
    "gemini-2-0-flash-thinking": 0.02,
    "llama3-3": 0.01,
    "gpt4o": 0.01,
    "deepseek-r1": 0.05,
}
D2T_PANEL = ["o3-mini", "claude-3-7-sonnet", "gemini-2-0-flash-thinking", "llama3-3"]


def load_span_d2t(root: Path, sub: str | None, name: str) -> Dataset:
    """Kasner et al. 2025 (d2t-eval test): error spans of 6 LLMs and crowd workers on
    1,200 LLM-written reports; gold = the first crowd worker."""
    import pandas as pd

    path = source_file(root, D2T_FILE, name)
    answers_path = source_file(root, D2T_ANSWERS, name)
    items = pd.read_parquet(path)
    answers = pd.read_parquet(answers_path)
    task, items, ann = Spans.folder_task(name, items, answers)
    items = items.assign(language="en")  # the reports are English
    kinds = {a["name"]: a["kind"] for a in task.get("annotators", [])}
    prices = {a: D2T_PRICES.get(a, 0.10) for a in kinds}
    return finalize(
        name,
        TaskType.spans,
        items,
        ann,
        kinds=kinds,
        sources=[path, answers_path],
        labels=task.get("labels"),
        prices=prices,
        panel=D2T_PANEL,
        reference_llm="o3-mini",
        description="d2t-eval error spans: 6 LLMs and crowd workers on 1,200 reports",
        notes=[
            "gold = the first crowd worker; exact-boundary agreement between people is "
            "0.06 F1, overlap 0.31"
        ],
    )
