"""The task kinds (quorum.tasks) and QuorumRouter's parameter groups: what the rest of
QUORUM asks a kind, and that no module outside quorum.tasks tests the task type."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import quorum
from quorum.data.schema import TaskSpec
from quorum.routing.quorum.params import DESCRIPTIONS, GROUPS, QuorumParams
from quorum.tasks.base import ItemView, TaskType
from quorum.tasks.registry import KINDS, kind_of

SRC = Path(__file__).resolve().parents[1] / "src" / "quorum"


def test_no_module_outside_the_kinds_tests_the_task_type():
    pattern = re.compile(
        r"TaskType\.\w+\s*(?:is|==|!=|in)|(?:is|==|!=)\s*TaskType\.|\.summ\b"
        r"|(?:type|ttype)(?:\.value)?\s*==\s*\"(?:classification|multiple_choice|summarization)\""
    )
    hits = [
        f"{p.relative_to(SRC)}:{i}"
        for p in SRC.rglob("*.py")
        if p.relative_to(SRC).parts[0] not in ("tasks", "data")
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert hits == []


def test_every_task_type_has_a_kind_and_the_spec_knows_it():
    assert set(KINDS) == set(TaskType)
    spec = TaskSpec(name="t", type="classification", labels=["neg", "pos"])
    assert spec.kind.discrete and spec.kind.labels == ["neg", "pos"]
    assert not kind_of("summarization").discrete


def test_classification_vote_similarity_and_delta():
    agg = kind_of("classification", ["a", "b"]).aggregator(10.0, 1.0, 0.66)
    outs = {"llm1": "a", "llm2": "b", "human": "b"}
    y, agr = agg.vote_item(outs, lambda a: a == "human", None, None)
    assert (y, round(agr, 4)) == ("b", round(11 / 12, 4))
    assert agg.similarity("a", "a") == 1.0 and agg.similarity(None, "a") == 0.0
    assert agg.delta(["a", "a", "b"]) == pytest.approx(1 / 3)
    assert agg.majority({"x": "a", "y": "a", "z": "b"}, lambda a: False, None, None) == "a"


def test_summaries_use_the_embeddings():
    vecs = {"s1": [1.0, 0.0], "s2": [0.9, 0.1], "s3": [0.0, 1.0]}

    def embed(texts):
        v = np.array([vecs[s] for s in texts])
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    agg = kind_of("summarization").aggregator(10.0, 1.0, 0.66)
    y, _ = agg.vote_item({"a": "s1", "b": "s2", "c": "s3"}, lambda a: False, None, embed)
    assert y in ("s1", "s2")
    assert agg.similarity("s1", "s3", embed) == pytest.approx(0.0)
    assert 0.0 <= agg.delta(["s1", "s2", "s3"], embed) <= 1.0


def test_multiple_choice_options_are_the_items_choices():
    mc = kind_of("multiple_choice", ["0", "1", "2"])
    item = ItemView("q1", "Which?", ("red", "green", "blue"))
    assert mc.options(item) == ["red", "green", "blue"]
    assert mc.answer_forms(item) == ["0", "1", "2"]
    assert mc.match_human("green", item) == "1"
    assert mc.parse(mc.parser(), "Label: 2", item).output == "2"
    plain = kind_of("classification", ["0", "1"], {"0": "neg", "1": "pos"})
    assert plain.options(item) == ["neg", "pos"]


def test_metrics_of_the_kinds():
    out = pd.Series({"a": "x", "b": "y"})
    ref = pd.Series({"a": "x", "b": "x"})
    assert kind_of("classification", ["x", "y"]).metric(out, ref, "en") == 0.5
    s = kind_of("summarization").metric(
        pd.Series({"a": "the cat"}), pd.Series({"a": "the cat"}), "en"
    )
    assert s == pytest.approx(1.0)


def test_labelstudio_controls_read_back_their_own_answers():
    cls, summ = kind_of("classification", ["neg", "pos"]), kind_of("summarization")
    assert 'name="label"' in cls.labelstudio_control()
    assert "TextArea" in summ.labelstudio_control()
    assert cls.labelstudio_raw({"from_name": "label", "value": {"choices": ["pos"]}}, str) == (
        True,
        "pos",
    )
    assert (
        summ.labelstudio_raw({"from_name": "label", "value": {"choices": ["x"]}}, str)[0] is False
    )
    assert cls.labelstudio_value("pos", ["neg", "pos"]) == "pos"
    assert cls.labelstudio_prediction("pos", ["Negative", "Positive"], str) == (
        {"choices": ["Positive"]},
        "choices",
    )


def test_every_parameter_is_in_one_group_and_described_once():
    in_groups = [f for _cls, _title, fields in GROUPS.values() for f in fields]
    assert sorted(in_groups) == sorted(QuorumParams.model_fields)
    described = [f.strip() for key in DESCRIPTIONS for f in key.split(",")]
    assert sorted(described) == sorted(QuorumParams.model_fields)
    doc = quorum.QuorumRouter.__doc__
    for key in DESCRIPTIONS:
        assert doc.count(f"\n    {key} : ") == 1, key


def test_groups_and_flat_keywords_give_the_same_router():
    grouped = quorum.QuorumRouter(
        exploration=quorum.Exploration(tau_h=0.6, epsilon0=0.1), aggregation={"w_human": 5.0}
    )
    flat = quorum.QuorumRouter(tau_h=0.6, epsilon0=0.1, w_human=5.0)
    assert grouped.get_params() == flat.get_params()
    assert grouped.groups["exploration"].tau_h == 0.6
    with pytest.raises(TypeError, match=r"tau_h given as 0\.5"):
        quorum.QuorumRouter(exploration={"tau_h": 0.6}, tau_h=0.5)
    with pytest.raises(ValueError, match="exploration: tau_h"):
        quorum.QuorumRouter(exploration={"tau_h": 7})
