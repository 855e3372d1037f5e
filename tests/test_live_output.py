"""Answers parseable by construction (issue 27): the request fields of each ``output`` mode,
the logprob confidence, and against the real llama.cpp SmolLM2 server, 0 unparseable
answers with ``output = "auto"``."""

from __future__ import annotations

import asyncio
import math

import pandas as pd
import pytest

from quorum.data.schema import TaskType
from quorum.live.machines.calls import Redactor
from quorum.live.machines.llm import LLMAnnotator
from quorum.live.machines.output import OutputConstraint
from quorum.live.machines.prompts import PromptBuilder, PromptTemplate
from quorum.live.project.annotators import AnnotatorConfig
from quorum.tasks.base import ItemView
from quorum.tasks.parsing import LabelParser
from test_live_e2e import smollm2  # noqa: F401 - the real llama.cpp server fixture

LABELS, NAMES = ["0", "1"], {"0": "negative", "1": "positive"}


def _builder(task: TaskType = TaskType.classification) -> PromptBuilder:
    return PromptBuilder(
        task, LABELS, NAMES, "Is the sentiment of this review negative or positive?",
        PromptTemplate.resolve(None, task.value, None, "prompt"),
        PromptTemplate.resolve(None, "confidence", None, "confidence"), None,
    )  # fmt: skip


def test_request_fields_of_each_mode() -> None:
    item = ItemView("a", "a fine film")
    g = OutputConstraint("grammar", True, _builder()).params(item)
    assert g["grammar"] == 'root ::= "negative" | "positive"'
    assert g["logprobs"] is True and g["top_logprobs"] == 20
    both = OutputConstraint("grammar", True, _builder(), index_form=True).params(item)
    assert both["grammar"] == 'root ::= "Label: " ("0" | "1") | "negative" | "positive"'
    j = OutputConstraint("json_schema", False, _builder()).params(item)
    enum = j["response_format"]["json_schema"]["schema"]["properties"]["label"]["enum"]
    assert enum == ["negative", "positive"] and "logprobs" not in j
    assert OutputConstraint("free", False, _builder()).params(item) == {}
    ref = OutputConstraint("grammar", True, _builder())
    ref.refused = True  # the endpoint refused it: free text from then on
    assert ref.params(item) == {}
    assert OutputConstraint("json_schema").answer('{"label": "positive"}', j) == "positive"
    assert OutputConstraint("grammar").answer("Label: 1", g) == "1"


def test_logprob_confidence_over_the_option_tokens() -> None:
    oc = OutputConstraint("grammar", True, _builder())
    lp = [
        {"token": "pos", "logprob": math.log(0.6),
         "top_logprobs": [{"token": "pos", "logprob": math.log(0.6)},
                          {"token": "neg", "logprob": math.log(0.2)},
                          {"token": "The", "logprob": math.log(0.2)}]},
        {"token": "itive", "logprob": math.log(0.99), "top_logprobs": []},
    ]  # fmt: skip
    # "The" begins no option: 0.6 / (0.6 + 0.2)
    conf = oc.confidence("positive", "positive", lp, ["negative", "positive"])
    assert conf == pytest.approx(0.75)
    # with the index form allowed, the indices "0" and "1" are not listed, so each may have
    # at most the smallest listed probability (0.2): (0.6 + 0.2) / (0.6 + 0.2 + 0.2 + 0.2)
    oc.index_form = True
    conf = oc.confidence("positive", "positive", lp, ["negative", "positive"])
    assert conf == pytest.approx(0.8 / 1.2)
    # the index form: "1" chosen among the listed "0" and "1"
    lp_idx = [
        {"token": "Label", "logprob": 0.0, "top_logprobs": []},
        {"token": ":", "logprob": 0.0, "top_logprobs": []},
        {"token": " 1", "logprob": math.log(0.7),
         "top_logprobs": [{"token": " 1", "logprob": math.log(0.7)},
                          {"token": " 0", "logprob": math.log(0.3)}]},
    ]  # fmt: skip
    conf = oc.confidence("Label: 1", "1", lp_idx, ["negative", "positive"])
    assert 0.5 < conf < 1.0
    assert oc.confidence("positive", "positive", None, ["negative", "positive"]) is None


@pytest.mark.slow
@pytest.mark.realdata
def test_constrained_output_against_llama_cpp_gives_no_unparseable_answer(
    smollm2,  # noqa: F811
    shared_data_dir,
) -> None:
    api_base, _log = smollm2
    df = pd.read_csv(shared_data_dir / "sst2_dev" / "sst2_dev.csv", dtype=str).head(20)
    items = [ItemView(r["idx"], r["sentence"]) for r in df.to_dict("records")]
    parser = LabelParser(LABELS, NAMES)
    cfg = AnnotatorConfig(name="smol", model="openai/smollm2", api_base=api_base,
                          price=0.0005, max_tokens=8, max_retries=1)  # fmt: skip
    ann = LLMAnnotator(cfg, _builder(), items, Redactor(), 8)
    assert ann.output.mode == "grammar" and ann.output.logprobs  # detected: llama.cpp

    async def go() -> list:
        out = []
        for it in items:
            resp = await ann.call(ann.request(it, "annotate"), lambda *a: None)
            text = resp.extra.get("output", resp.raw) if resp.extra else resp.raw
            out.append((resp, parser.parse(text)))
        return out

    try:
        got = asyncio.run(go())
    finally:
        ann.close()
    assert all(r.status == "ok" for r, _ in got)
    assert all(p.ok for _, p in got)  # 0 unparseable
    conf = [r.confidence for r, _ in got]
    assert all(c is not None and 0.0 < c <= 1.0 for c in conf)


def test_one_http_try_for_both_engines_without_an_import_cycle() -> None:
    """issue 23's live part: the Ray worker and the local annotator make their try with the
    same ChatTry; ray_calls does not import llm (and llm imports ray_calls only for Ray)."""
    import subprocess
    import sys

    code = (
        "import sys, quorum.live.machines.ray_calls as r, quorum.live.machines.chat_try as c;"
        "assert 'quorum.live.machines.llm' not in sys.modules;"
        "import quorum.live.machines.llm as l;"
        "assert 'quorum.live.machines.ray_calls' in sys.modules;"
        "assert l.ChatTry is c.ChatTry is r.ChatTry"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
