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

Sets of labels (a kind with ``label_set_outputs``, multi-label) are estimated and voted
label by label (:class:`LabelSetReliability`, binary relevance): for each label, whether a
person's set holds it is a 0/1 answer, each person's accuracy on those answers is estimated
as above (Dawid-Skene on the 0/1 answers, control items' sets as the truth), and the item's
set keeps the labels whose 0/1 vote says 1. So a person careless about one label and careful
about the others is outvoted on that label only.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

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

    def vote(self, labels: Iterable[tuple[str, str]]) -> Vote:
        """Weighted vote over ``(person, label)`` pairs (oldest first). Ties go to the label
        of the most reliable person among the tied, then to the earliest label."""
        pairs = list(labels)
        if not pairs:
            raise ValueError("no labels to vote on")
        scores: dict[str, float] = {}
        best: dict[str, tuple[float, int]] = {}
        for i, (who, lab) in enumerate(pairs):
            w = self.weight(who)
            scores[lab] = scores.get(lab, 0.0) + w
            cand = (w, -i)
            best[lab] = max(best.get(lab, cand), cand)
        top = max(scores.values())
        tied = [lab for lab, s in scores.items() if math.isclose(s, top, abs_tol=1e-12)]
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
    skip_unanimous: bool = False,
) -> Reliability:
    """Each person's accuracy from a ``task, worker, label`` frame (one label per person
    and task) and the known labels ``gold`` (task -> label) where there are any.

    ``skip_unanimous``: where no two checked labels of a task differ and no gold differs
    from them, every checked label is right without a Dawid-Skene fit (the fit would give
    nearly 1 to each; the per-label fits of label sets skip most labels so)."""
    gold = dict(gold or {})
    rel = Reliability({}, n_classes, prior_accuracy)
    if frame.empty:
        return rel
    df = frame[["task", "worker", "label"]].astype(str).drop_duplicates(["task", "worker"])
    per_task = df.groupby("task")["worker"].transform("nunique")
    checked = df[(per_task >= 2) | df["task"].isin(list(gold))]
    right = pd.Series(0.0, index=checked.index)
    if len(checked) and skip_unanimous and _unanimous(checked, gold):
        right = pd.Series(1.0, index=checked.index)
    elif len(checked):
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


@dataclass
class LabelSetReliability:
    """Each person's reliability per label, for answers that are sets of labels (binary
    relevance): ``per_label[lab]`` is the :class:`Reliability` of the 0/1 answers "the set
    holds ``lab``"; ``people`` the overall record of each person (sets given, checked, on
    gold, exactly right on gold; accuracy and agreement the mean over the labels).

    ``kind`` reads and writes the sets (``label_set``, ``output_of_labels``) and bounds
    them (``min_labels``, ``max_labels``).
    """

    kind: Any
    per_label: dict[str, Reliability] = field(default_factory=dict)
    people: dict[str, Person] = field(default_factory=dict)
    prior_accuracy: float = 0.8

    def _of(self, label: str) -> Reliability:
        got = self.per_label.get(label)
        return got if got is not None else Reliability({}, 2, self.prior_accuracy)

    def accuracy(self, person: str) -> float:
        """The mean of the person's accuracies over the labels."""
        labels = self.kind.labels
        return sum(self._of(lab).accuracy(person) for lab in labels) / max(1, len(labels))

    def weight(self, person: str) -> float:
        """The mean of the person's one-coin weights over the labels."""
        labels = self.kind.labels
        return sum(self._of(lab).weight(person) for lab in labels) / max(1, len(labels))

    @property
    def evidence(self) -> int:
        """Sets that could be checked (against another person's set or gold)."""
        return sum(p.checked for p in self.people.values())

    def vote(self, labels: Iterable[tuple[str, str]]) -> Vote:
        """Per label, the weighted 0/1 vote of ``(person, set)`` pairs (oldest first; a
        tie goes to the person most reliable over all labels, then the earliest); then
        ``min_labels`` / ``max_labels`` add / drop labels by P(label in the set). The
        confidence stands for the expected Jaccard of the set A with the truth T under the
        labels' vote probabilities: E|A & T| / E|A | T|, and for the empty set P(no label
        applies); ``scores`` holds P(label in the set)."""
        pairs = [(who, self.kind.label_set(out)) for who, out in labels]
        if not pairs:
            raise ValueError("no labels to vote on")
        # a label's tie goes to the person most reliable over all labels, then the earliest
        trust = {who: (self.accuracy(who), -i) for i, (who, _) in reversed(list(enumerate(pairs)))}
        p_in: dict[str, float] = {}
        keep: set[str] = set()
        for lab in self.kind.labels:
            rel = self._of(lab)
            answers = [(who, "1" if s and lab in s else "0") for who, s in pairs]
            v = rel.vote(answers)
            if math.isclose(v.scores.get("1", 0.0), v.scores.get("0", 0.0), abs_tol=1e-12):
                top = max(answers, key=lambda a: trust[a[0]])[1]
                if top != v.label:
                    v = Vote(top, v.confidence, v.scores)
            p_in[lab] = v.confidence if v.label == "1" else 1.0 - v.confidence
            if v.label == "1":
                keep.add(lab)
        order = {lab: j for j, lab in enumerate(self.kind.labels)}

        def likelier(lab: str) -> tuple[float, int]:
            return (-p_in[lab], order[lab])

        low = int(getattr(self.kind, "min_labels", 0) or 0)
        high = getattr(self.kind, "max_labels", None)
        if len(keep) < low:
            extra = sorted((x for x in p_in if x not in keep), key=likelier)
            keep |= set(extra[: low - len(keep)])
        if high is not None and len(keep) > high:
            keep = set(sorted(keep, key=likelier)[:high])
        if keep:
            both = sum(p_in[x] for x in keep)
            conf = both / (len(keep) + sum(p for x, p in p_in.items() if x not in keep))
        else:  # the empty set is right only when no label applies
            conf = math.prod(1.0 - p for p in p_in.values())
        return Vote(self.kind.output_of_labels(keep), conf, p_in)


def estimate_label_sets(
    kind: Any,
    frame: pd.DataFrame,
    gold: Mapping[str, str] | None = None,
    prior_accuracy: float = 0.8,
    prior_strength: float = 4.0,
) -> LabelSetReliability:
    """Each person's reliability per label from a ``task, worker, label`` frame whose
    labels are sets (``kind.label_set``): :func:`estimate` of the 0/1 answers of each
    label (crowd-kit's Dawid-Skene per label, as its ``BinaryRelevance`` does; the sets of
    ``gold`` tell the truth of control items per label)."""
    gold = dict(gold or {})
    rel = LabelSetReliability(kind, {}, {}, prior_accuracy)
    if frame.empty:
        return rel
    df = frame[["task", "worker", "label"]].astype(str).drop_duplicates(["task", "worker"])
    sets = [kind.label_set(x) or frozenset() for x in df["label"]]
    truth = {t: kind.label_set(g) for t, g in gold.items()}
    truth = {t: s for t, s in truth.items() if s is not None}
    for lab in kind.labels:
        ones = df.assign(label=["1" if lab in s else "0" for s in sets])
        rel.per_label[lab] = estimate(
            ones, {t: "1" if lab in s else "0" for t, s in truth.items()}, 2,
            prior_accuracy, prior_strength, skip_unanimous=True,
        )  # fmt: skip
    exact: dict[str, int] = {}  # sets exactly right on control items, by person
    for who, t, s in zip(df["worker"], df["task"], sets, strict=True):
        if truth.get(t) == s:
            exact[who] = exact.get(who, 0) + 1
    first = rel.per_label[kind.labels[0]].people if kind.labels else {}
    for who, p in first.items():
        mine = [rel.per_label[lab].people[who] for lab in kind.labels]
        agree = [x.agreement for x in mine if x.agreement is not None]
        rel.people[who] = Person(
            who, p.labels, p.checked, p.gold, int(exact.get(who, 0)),
            sum(x.accuracy for x in mine) / len(mine),
            sum(agree) / len(agree) if agree else None,
        )  # fmt: skip
    return rel


def team_reliability(
    kind: Any,
    frame: pd.DataFrame | None = None,
    gold: Mapping[str, str] | None = None,
    n_classes: int = 2,
    prior_accuracy: float = 0.8,
    prior_strength: float = 4.0,
) -> Reliability | LabelSetReliability:
    """The team's reliabilities for ``kind``: per label where people answer sets of labels
    (``kind.label_set_outputs``), else one accuracy per person; no ``frame``: nobody
    known yet."""
    if kind is not None and kind.label_set_outputs:
        if frame is None:
            return LabelSetReliability(kind, {}, {}, prior_accuracy)
        return estimate_label_sets(kind, frame, gold, prior_accuracy, prior_strength)
    if frame is None:
        return Reliability({}, n_classes, prior_accuracy)
    return estimate(frame, gold, n_classes, prior_accuracy, prior_strength)


def _unanimous(checked: pd.DataFrame, gold: Mapping[str, str]) -> bool:
    """Whether every task's checked labels, and its gold label where known, are one."""
    if (checked.groupby("task")["label"].nunique() > 1).any():
        return False
    first = checked.drop_duplicates("task").set_index("task")["label"]
    return all(first.get(t, lab) == lab for t, lab in gold.items())


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
