"""People's reliability per label for multi-label answers (binary relevance around
crowd-kit's Dawid-Skene): a person careless about one label is outvoted on that label
only, where a vote of whole sets would take or leave their whole set."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from quorum.live.humans.reliability import (
    LabelSetReliability,
    Reliability,
    estimate,
    estimate_label_sets,
    team_reliability,
)
from quorum.tasks.registry import kind_of

LABELS = ["care", "fairness", "purity"]


def _team(n: int = 30, seed: int = 0):
    """k = 2 people per item in turn among ann (never ticks fairness), bob (always ticks
    purity) and cat (careful): (kind, frame of sets, truth by item)."""
    kind = kind_of("multilabel", LABELS)
    rng = np.random.default_rng(seed)
    pairs = itertools.cycle([("ann", "bob"), ("bob", "cat"), ("ann", "cat")])
    rows, truth = [], {}
    for t in range(n):
        true = {lab for lab in LABELS if rng.random() < 0.4}
        truth[f"t{t}"] = true
        for who in next(pairs):
            got = set(true)
            if who == "ann":
                got.discard("fairness")
            if who == "bob":
                got.add("purity")
            rows.append((f"t{t}", who, kind.encode(got)))
    return kind, pd.DataFrame(rows, columns=["task", "worker", "label"]), truth


def test_a_person_is_outvoted_on_the_label_they_get_wrong_only():
    kind, frame, truth = _team()
    rel = estimate_label_sets(kind, frame)
    acc = {(who, lab): rel.per_label[lab].accuracy(who) for who in ("ann", "bob") for lab in LABELS}
    assert (
        acc["ann", "fairness"] < acc["ann", "care"]
        and acc["ann", "fairness"] < acc["ann", "purity"]
    )
    assert (
        acc["bob", "purity"] < acc["bob", "care"] and acc["bob", "purity"] < acc["bob", "fairness"]
    )
    # ann and bob disagree on fairness and purity: each is trusted where they are careful
    v = rel.vote(
        [("ann", kind.encode(["care"])), ("bob", kind.encode(["care", "fairness", "purity"]))]
    )
    assert kind.label_set(v.label) == {"care", "fairness"}
    assert 0.0 < v.confidence <= 1.0 and set(v.scores) == set(LABELS)
    # a vote of whole sets, one accuracy per person, takes one of the two sets whole
    whole = estimate(frame, None, n_classes=2 ** len(LABELS))
    w = whole.vote(
        [("ann", kind.encode(["care"])), ("bob", kind.encode(["care", "fairness", "purity"]))]
    )
    assert kind.label_set(w.label) in ({"care"}, {"care", "fairness", "purity"})
    # over the team's own items the per-label vote recovers more true sets
    per_label = whole_sets = 0
    for t, g in frame.groupby("task"):
        pairs = list(zip(g["worker"], g["label"], strict=True))
        per_label += kind.label_set(rel.vote(pairs).label) == truth[t]
        whole_sets += kind.label_set(whole.vote(pairs).label) == truth[t]
    assert per_label > whole_sets and per_label >= 0.9 * len(truth)


def test_control_items_check_each_person_per_label():
    kind, frame, truth = _team(30, seed=1)
    gold = {t: kind.encode(s) for t, s in truth.items()}
    rel = estimate_label_sets(kind, frame, gold)
    people = rel.people
    assert set(people) == {"ann", "bob", "cat"}
    assert people["cat"].gold == people["cat"].gold_correct == 20  # exactly right each time
    assert people["ann"].gold_correct < people["ann"].gold
    assert rel.per_label["fairness"].accuracy("ann") < rel.per_label["care"].accuracy("ann")
    assert people["cat"].accuracy > max(people["ann"].accuracy, people["bob"].accuracy)
    assert rel.evidence == len(frame)
    # an items file's gold may be written a;b
    semi = {t: ";".join(sorted(s)) for t, s in truth.items()}
    again = estimate_label_sets(kind, frame, semi)
    assert again.people == people


@pytest.mark.parametrize(("low", "high"), [(2, None), (1, 1)])
def test_min_and_max_labels_bound_the_vote(low, high):
    kind = kind_of("multilabel", LABELS, min_labels=low, max_labels=high)
    rel = LabelSetReliability(kind)
    v = rel.vote([("ann", kind.encode(["care", "purity"])), ("bob", kind.encode(["care"]))])
    got = kind.label_set(v.label)
    assert low <= len(got) <= (high or len(LABELS)) and "care" in got


def test_the_team_reliability_follows_the_kind():
    kind = kind_of("multilabel", LABELS)
    assert isinstance(team_reliability(kind), LabelSetReliability)
    labels = kind_of("classification", ["a", "b"])
    assert isinstance(team_reliability(labels, None, None, 2), Reliability)
    empty = team_reliability(kind).vote([("ann", "[]"), ("bob", "[]")])
    assert empty.label == "[]" and empty.confidence == pytest.approx(1.0, abs=0.2)
