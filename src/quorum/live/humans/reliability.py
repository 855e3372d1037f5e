"""How far each human annotator can be trusted, and the vote of an item's k human labels.

Reliability is an accuracy per person, estimated from the labels that can be checked: a
label on an item someone else labelled too (agreement, through crowd-kit's Dawid-Skene on
the long ``task, worker, label`` frame) or on an item with a known (gold/control) label,
which Dawid-Skene takes as the truth of that item. A label nobody else gave and no gold
checks says nothing about its author and is left out of the fit.

Each person's accuracy is the share of their checked labels that are right (soft: the
Dawid-Skene probability of their label), shrunk towards ``prior_accuracy`` with the weight of
``prior_strength`` labels, so that two or three labels never make anyone perfect or useless.

An item's labels are aggregated by a weighted vote (the one-coin model): a person of
accuracy ``r`` among ``K`` labels votes with ``log(r / (1 - r)) + log(K - 1)``, never below 0
(someone worse than chance is ignored, not inverted). The label with the largest sum wins;
its probability ``exp(score) / sum(exp(scores))`` is the vote's confidence, and the mean
confidence over the human items is the human arm's quality for the router.

>>> rel = Reliability({"ann": Person("ann", 10, 10, 0, 0, 0.95)}, n_classes=2)
>>> rel.vote([("ann", "1"), ("bob", "0")]).label  # ann (0.95) outweighs bob (the prior, 0.8)
'1'
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import pandas as pd

#: accuracies are kept inside (EPS, 1 - EPS) so that weights stay finite
EPS = 1e-3


@dataclass(frozen=True)
class Person:
    """One annotator's record: ``labels`` given, ``checked`` of them (agreement or gold),
    ``gold`` of them on gold items (``gold_correct`` right), ``accuracy`` (shrunk)."""

    name: str
    labels: int
    checked: int
    gold: int
    gold_correct: int
    accuracy: float
    agreement: float | None = None  # raw share of checked labels judged right (unshrunk)


@dataclass(frozen=True)
class Vote:
    """The aggregate of one item's labels: the label, its probability, each label's score."""

    label: str
    confidence: float
    scores: dict[str, float]


@dataclass
class Reliability:
    """Accuracies by person; unknown people get ``prior_accuracy``."""

    people: dict[str, Person] = field(default_factory=dict)
    n_classes: int = 2
    prior_accuracy: float = 0.8

    def accuracy(self, person: str) -> float:
        p = self.people.get(person)
        return p.accuracy if p is not None else self.prior_accuracy

    def weight(self, person: str) -> float:
        """The one-coin vote weight, at least 0."""
        r = min(1.0 - EPS, max(EPS, self.accuracy(person)))
        return max(0.0, math.log(r / (1.0 - r)) + math.log(max(1, self.n_classes - 1)))

    @property
    def evidence(self) -> int:
        """Labels that could be checked (against another person's label or gold)."""
        return sum(p.checked for p in self.people.values())

    def vote(self, labels: Iterable[tuple[str, str]], majority_first: bool = False) -> Vote:
        """Weighted vote over ``(person, label)`` pairs (oldest first). Ties go to the label
        of the most reliable person among the tied, then to the earliest label.

        ``majority_first`` (the weights are not dependable, issue 38): the label most
        people gave wins, the weights only break ties among those; with two labels it is
        the weighted vote, with three people in two camps the two win whatever weights
        fitted from a few labels say.

        >>> rel = Reliability({"cat": Person("cat", 9, 9, 0, 0, 0.97)}, n_classes=2)
        >>> three = [("ann", "1"), ("bea", "1"), ("cat", "0")]
        >>> rel.vote(three).label, rel.vote(three, majority_first=True).label
        ('0', '1')
        """
        pairs = list(labels)
        if not pairs:
            raise ValueError("no labels to vote on")
        scores: dict[str, float] = {}
        count: dict[str, int] = {}
        best: dict[str, tuple[float, int]] = {}
        for i, (who, lab) in enumerate(pairs):
            w = self.weight(who)
            scores[lab] = scores.get(lab, 0.0) + w
            count[lab] = count.get(lab, 0) + 1
            cand = (w, -i)
            best[lab] = max(best.get(lab, cand), cand)
        top = max(scores.values())
        pool = list(scores)
        if majority_first:
            most = max(count.values())
            pool = [lab for lab in pool if count[lab] == most]
        high = max(scores[lab] for lab in pool)
        tied = [lab for lab in pool if math.isclose(scores[lab], high, abs_tol=1e-12)]
        label = max(tied, key=lambda lab: best[lab])
        # labels nobody chose score 0 (the one-coin model with a uniform prior)
        unseen = max(0, self.n_classes - len(scores))
        z = sum(math.exp(s - top) for s in scores.values()) + unseen * math.exp(-top)
        return Vote(label, math.exp(scores[label] - top) / z, scores)


def estimate(
    frame: pd.DataFrame,
    gold: Mapping[str, str] | None = None,
    n_classes: int = 2,
    prior_accuracy: float = 0.8,
    prior_strength: float = 4.0,
) -> Reliability:
    """Each person's accuracy from a ``task, worker, label`` frame (one label per person
    and task) and the known labels ``gold`` (task -> label) where there are any."""
    gold = dict(gold or {})
    rel = Reliability({}, n_classes, prior_accuracy)
    if frame.empty:
        return rel
    df = frame[["task", "worker", "label"]].astype(str).drop_duplicates(["task", "worker"])
    per_task = df.groupby("task")["worker"].transform("nunique")
    checked = df[(per_task >= 2) | df["task"].isin(list(gold))]
    right = pd.Series(0.0, index=checked.index)
    if len(checked):
        right = _soft_correct(checked, gold)
    for who, rows in df.groupby("worker", sort=True):
        c = checked[checked["worker"] == who]
        on_gold = c[c["task"].isin(list(gold))]
        n_gold_ok = int(sum(gold[t] == lab for t, lab in zip(on_gold["task"], on_gold["label"],
                                                              strict=True)))  # fmt: skip
        hits = float(right.loc[c.index].sum()) if len(c) else 0.0
        acc = (prior_accuracy * prior_strength + hits) / (prior_strength + len(c))
        rel.people[str(who)] = Person(
            str(who), len(rows), len(c), len(on_gold), n_gold_ok,
            min(1.0 - EPS, max(EPS, acc)), hits / len(c) if len(c) else None,
        )  # fmt: skip
    return rel


def _soft_correct(checked: pd.DataFrame, gold: Mapping[str, str]) -> pd.Series:
    """The Dawid-Skene probability that each checked label is the item's true label."""
    from crowdkit.aggregation import DawidSkene

    seen = set(checked["label"])
    truth = pd.Series(
        {t: lab for t, lab in gold.items() if t in set(checked["task"]) and lab in seen},
        dtype=object,
    )
    ds = DawidSkene(n_iter=100)
    data = checked.reset_index(drop=True)
    with warnings.catch_warnings():  # crowd-kit 1.4 uses pandas keywords pandas 3 deprecates
        warnings.simplefilter("ignore")
        probas = ds.fit_predict_proba(data, truth if len(truth) else None)
    p = [float(probas.at[t, lab]) for t, lab in zip(data["task"], data["label"], strict=True)]
    out = pd.Series(p, index=checked.index)
    # an item whose gold label nobody gave: every label on it is wrong
    for t, lab in gold.items():
        if lab not in seen:
            out.loc[checked.index[(checked["task"] == t).to_numpy()]] = 0.0
    return out
