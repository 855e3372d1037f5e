"""Reliability per annotator and the weighted vote of k human labels, on hand-made frames."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from quorum.live.humans.reliability import Reliability, estimate
from quorum.live.project.humans import parse_duration


def _team_frame(n: int = 30, seed: int = 0) -> tuple[pd.DataFrame, dict[str, str]]:
    """Three people, two labels per item (each pair in turn): two careful people (95%) and
    one who is wrong 70% of the time."""
    rng = np.random.default_rng(seed)
    people = ["ann", "bea", "bad"]
    rows, truth = [], {}
    for i in range(n):
        t, y = f"t{i}", int(rng.integers(2))
        truth[t] = str(y)
        for who in (people[i % 3], people[(i + 1) % 3]):
            wrong = rng.random() < (0.7 if who == "bad" else 0.05)
            rows.append((t, who, str(1 - y if wrong else y)))
    return pd.DataFrame(rows, columns=["task", "worker", "label"]), truth


def test_a_bad_annotator_gets_low_weight_and_is_outvoted() -> None:
    frame, truth = _team_frame()
    rel = estimate(frame, n_classes=2)
    acc = {p: rel.accuracy(p) for p in ("ann", "bea", "bad")}
    assert acc["ann"] > 0.9 and acc["bea"] > 0.9 and acc["bad"] < 0.5
    assert rel.weight("bad") == 0.0 < rel.weight("ann")  # worse than chance: ignored
    assert rel.people["bad"].checked == 20 and rel.evidence == 60
    # every item where the bad annotator disagrees with a careful one goes the careful way
    disagreements = 0
    for _t, g in frame.groupby("task"):
        pairs = list(zip(g["worker"], g["label"], strict=True))
        if "bad" in g["worker"].tolist() and g["label"].nunique() == 2:
            disagreements += 1
            good = next(lab for who, lab in pairs if who != "bad")
            assert rel.vote(pairs).label == good
    assert disagreements >= 8
    voted = {t: rel.vote(zip(g["worker"], g["label"], strict=True)).label
             for t, g in frame.groupby("task")}  # fmt: skip
    last_wins = {t: g["label"].iloc[-1] for t, g in frame.groupby("task")}
    hits = sum(voted[t] == truth[t] for t in truth)
    assert hits >= 27 > sum(last_wins[t] == truth[t] for t in truth)


def test_gold_items_check_people_without_overlap() -> None:
    """One label per item: only gold (control) items say anything about a person."""
    frame = pd.DataFrame(
        [(f"g{i}", "ann", "1") for i in range(8)] + [(f"g{i}", "bob", "0") for i in range(8, 16)]
        + [("x1", "ann", "0"), ("x2", "bob", "1")],
        columns=["task", "worker", "label"],
    )  # fmt: skip
    gold = {f"g{i}": "1" for i in range(16)}
    rel = estimate(frame, gold, n_classes=2, prior_accuracy=0.8, prior_strength=4)
    ann, bob = rel.people["ann"], rel.people["bob"]
    assert (ann.gold, ann.gold_correct, bob.gold, bob.gold_correct) == (8, 8, 8, 0)
    assert ann.checked == 8 and ann.labels == 9  # x1: nobody else, no gold: not checked
    assert ann.accuracy == pytest.approx((0.8 * 4 + 8) / 12)
    assert bob.accuracy == pytest.approx(0.8 * 4 / 12)
    assert rel.vote([("bob", "1"), ("ann", "0")]).label == "0"


def test_prior_only_and_ties() -> None:
    rel = Reliability(n_classes=2, prior_accuracy=0.8)
    v = rel.vote([("x", "1"), ("y", "0")])
    assert v.label == "1" and v.confidence == pytest.approx(0.5)  # tie: the earliest label
    one = rel.vote([("x", "1")])
    assert one.confidence == pytest.approx(0.8)  # one label: its author's accuracy
    assert estimate(pd.DataFrame(columns=["task", "worker", "label"])).people == {}
    # a single label per item and no gold: nothing is checked, everyone keeps the prior
    alone = estimate(pd.DataFrame({"task": ["a", "b"], "worker": ["x", "y"], "label": ["1", "0"]}))
    assert alone.evidence == 0 and alone.accuracy("x") == pytest.approx(0.8)
    with pytest.raises(ValueError):
        rel.vote([])


def test_durations() -> None:
    assert parse_duration("90") == 90.0 and parse_duration("1.5h") == 5400.0
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration("soon")


def test_a_refit_on_the_same_checked_labels_reuses_the_fit() -> None:
    """A live run refits after every collect; a collect that brings only a first label of a
    task without gold leaves the checked labels as they were, and the Dawid-Skene fit is
    taken from the cache: the same reliabilities as a fresh fit."""
    from quorum.live.humans import reliability as rel_mod

    frame, truth = _team_frame(seed=3)
    gold = dict(list(truth.items())[:5])
    rel_mod._soft_correct_rows.cache_clear()
    first = estimate(frame, gold, n_classes=2)
    more = pd.concat([frame, pd.DataFrame([("new", "ann", "1")], columns=frame.columns)])
    again = estimate(more, gold, n_classes=2)  # one label on a new task: nothing checked
    info = rel_mod._soft_correct_rows.cache_info()
    assert (info.misses, info.hits) == (1, 1)
    for p in ("ann", "bea", "bad"):
        assert again.accuracy(p) == first.accuracy(p)
    rel_mod._soft_correct_rows.cache_clear()
    fresh = estimate(more, gold, n_classes=2)
    assert {p: fresh.accuracy(p) for p in ("ann", "bea", "bad")} == {
        p: again.accuracy(p) for p in ("ann", "bea", "bad")
    }
