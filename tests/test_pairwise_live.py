"""The pairwise kind against the real llama.cpp SmolLM2 server: a judge asked in both orders
(the second call with the outputs exchanged, mapped back), every answer parseable under the
grammar, each pair's consistency recorded. (A project's judges with ``swap = true``:
tests/test_pairwise_swap_live.py and tests/test_pairwise_labelstudio.py.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pandas as pd
import pytest

from quorum.live.machines.calls import Redactor
from quorum.live.machines.llm import LLMAnnotator
from quorum.live.machines.prompts import PromptBuilder, PromptTemplate
from quorum.live.project.annotators import AnnotatorConfig
from quorum.tasks.base import ItemView
from quorum.tasks.pairwise import combine_swap, pair_text, swap_back
from quorum.tasks.registry import kind_of
from test_live_e2e import smollm2  # noqa: F401 - the real llama.cpp server fixture


@pytest.mark.slow
@pytest.mark.realdata
def test_smollm2_judges_each_pair_in_both_orders(smollm2, shared_data_dir) -> None:  # noqa: F811
    api_base, _log = smollm2
    df = pd.read_parquet(shared_data_dir / "pairwise_llmbar" / "items.parquet")
    size = df["instruction"].str.len() + df["output_1"].str.len() + df["output_2"].str.len()
    df = df.loc[size.nsmallest(8).index]
    kind = kind_of("pairwise")
    builder = PromptBuilder(
        "pairwise", kind.labels, kind.label_names, None,
        PromptTemplate.resolve(None, "pairwise", Path("."), "prompt"),
        PromptTemplate.resolve(None, "confidence", Path("."), "confidence"),
    )  # fmt: skip
    orders = {
        "orig": [ItemView(r.item_id, pair_text(r.instruction, r.output_1, r.output_2))
                 for r in df.itertuples()],
        "swapped": [ItemView(r.item_id, pair_text(r.instruction, r.output_2, r.output_1))
                    for r in df.itertuples()],
    }  # fmt: skip
    cfg = AnnotatorConfig(name="smol", model="openai/smollm2", api_base=api_base,
                          price=0.0005, max_tokens=4, max_retries=1)  # fmt: skip
    ann = LLMAnnotator(cfg, builder, orders["orig"] + orders["swapped"], Redactor(), 4)
    assert ann.output.mode == "grammar"
    parser = kind.parser()

    async def go() -> dict[str, list[str | None]]:
        got: dict[str, list[str | None]] = {}
        for order, items in orders.items():
            got[order] = []
            for it in items:
                resp = await ann.call(ann.request(it, "annotate"), lambda *a: None)
                assert resp.status == "ok"
                text = resp.extra.get("output", resp.raw) if resp.extra else resp.raw
                p = kind.parse(parser, text, it)
                assert p.ok, text
                got[order].append(p.output)
        return got

    try:
        got = asyncio.run(go())
    finally:
        ann.close()
    first = got["orig"]
    second = [swap_back(y) for y in got["swapped"]]  # mapped back to the original numbering
    verdicts = [combine_swap(a, b) for a, b in zip(first, second, strict=True)]
    assert all(c is not None for _, c in verdicts)  # every pair judged in both orders
    share = sum(bool(c) for _, c in verdicts) / len(verdicts)
    print(f"SmolLM2: {share:.0%} of {len(verdicts)} pairs consistent; first order {first}")
    for (y, consistent), a in zip(verdicts, first, strict=True):
        assert (y == a) if consistent else (y is None)
