"""Parsing of LLM answers and the paper's prompt templates."""

from __future__ import annotations

import pytest

from quorum.data.schema import TaskType
from quorum.errors import ConfigError
from quorum.live.machines.prompts import PromptBuilder, PromptTemplate, default_template
from quorum.tasks.base import ItemView
from quorum.tasks.parsing import LabelParser, parse_confidence, parse_summary

SST = LabelParser(["0", "1"], {"0": "negative", "1": "positive"})
AG = LabelParser(
    ["1", "2", "3", "4"], {"1": "World", "2": "Sports", "3": "Business", "4": "Sci/Tech"}
)
MC = LabelParser(["A", "B", "C", "D"])


@pytest.mark.parametrize(
    "raw, want",
    [
        ("Label: 1", "1"),
        ("label: 0", "0"),
        ("Label: 1 (positive)", "1"),
        ("**Label:** 0", "0"),
        ("Label: positive", "1"),
        ("positive", "1"),
        ("Negative.", "0"),
        ("1", "1"),
        ("  0\n", "0"),
        ("I think the sentiment here is positive overall.", "1"),
        ("The label is: negative", "0"),
        ("Label: 'negative'", "0"),
    ],
)
def test_sst2_answers(raw: str, want: str) -> None:
    got = SST.parse(raw)
    assert got.ok and got.output == want, got


@pytest.mark.parametrize(
    "raw, want",
    [
        ("Label: 2", "3"),  # an index into the label list, as the prompt defines
        ("Label: Business", "3"),
        ("Sci/Tech", "4"),
        ("label: B", "2"),  # a letter is an index too
        ("The answer is (C)", "3"),
        ("Answer: 0", "1"),
    ],
)
def test_indices_map_through_the_label_list(raw: str, want: str) -> None:
    got = AG.parse(raw)
    assert got.ok and got.output == want, got


@pytest.mark.parametrize(
    "raw, options, want",
    [
        ("Label: 2", ["Paris", "Rome", "Oslo", "Bern"], "C"),
        ("The answer is (D)", None, "D"),
        ("b", None, "B"),
        ("Oslo", ["Paris", "Rome", "Oslo", "Bern"], "C"),
        ("Label: 1. Rome is the capital", ["Paris", "Rome", "Oslo", "Bern"], "B"),
    ],
)
def test_multiple_choice(raw, options, want) -> None:
    got = MC.parse(raw, options)
    assert got.ok and got.output == want, got


@pytest.mark.parametrize(
    "raw",
    [
        "",
        None,
        "%%%garbage%%% ???",
        "Label: 7",
        "It could be positive or negative.",
        "The sentence is: It's a charming",
        "label: Z",
    ],
)
def test_unusable_answers_are_unparseable(raw) -> None:
    got = SST.parse(raw)
    assert got.status == "unparseable" and got.output is None and got.reason


def test_confidence_and_summary() -> None:
    assert parse_confidence("0.85").confidence == pytest.approx(0.85)
    assert parse_confidence("Probability: .7").confidence == pytest.approx(0.7)
    assert parse_confidence("I'd say 90%").confidence == pytest.approx(0.9)
    assert parse_confidence("1").confidence == 1.0
    assert parse_confidence("7 out of 10").status == "unparseable"
    assert parse_confidence("no idea").status == "unparseable"
    assert parse_summary("  a short summary ").output == "a short summary"
    assert parse_summary("   ").status == "unparseable"


def _builder(kind: str, **kw) -> PromptBuilder:
    return PromptBuilder(
        TaskType(kind),
        kw.get("labels", ["0", "1"]),
        kw.get("names", {"0": "negative", "1": "positive"}),
        kw.get("instructions"),
        PromptTemplate(default_template(kind), bundled=True),
        PromptTemplate(default_template("confidence"), bundled=True),
    )


def test_paper_prompts() -> None:
    b = _builder("classification")
    msg = b.annotation_messages(ItemView("1", "a fine film"))[-1]["content"]
    assert msg == (
        "This is a text classification task. The possible labels are ['negative', 'positive'] "
        "while the indices of the labels are [0, 1]. Output only 'Label: the predicted index "
        "of the label that you predict'. This is the sentence to classify: a fine film"
    )
    conf = b.confidence_messages(ItemView("1", "a fine film"), "1")[-1]["content"]
    assert conf.startswith("How likely is it that the following text is correctly classified?")
    assert conf.endswith("Text: a fine film Prediction: positive")
    mc = _builder("multiple_choice", labels=["A", "B"], names=None)
    q = mc.annotation_messages(ItemView("q", "2+2?", ("4", "5")))[-1]["content"]
    assert "This is the question 2+2? and the possible answers are: 0: 4; 1: 5" in q
    s = _builder("summarization", labels=None, names=None)
    assert s.annotation_messages(ItemView("d", "long text"))[-1]["content"].endswith(
        "summarize the following text long text"
    )
    withins = _builder("classification", instructions="Judge the sentiment.")
    assert withins.annotation_messages(ItemView("1", "x"))[-1]["content"].startswith(
        "Judge the sentiment.\n\nThis is a text classification task."
    )


def test_bad_templates_are_rejected() -> None:
    with pytest.raises(ConfigError, match="unknown placeholder"):
        PromptTemplate("Classify {txt}")
    with pytest.raises(ConfigError, match="must contain"):
        PromptTemplate("Classify {labels}")
