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

**Graded answers** (span lists: a kind with ``graded_people``; our choice, the paper has
no people of this kind). Two people rarely give the same span list, so counting equal
answers (Dawid-Skene over answers as classes) says nothing. Instead a person's accuracy is
the mean score (the kind's :meth:`~quorum.tasks.base.TaskKind.people_score`, for spans the
overlap span F1) of their checked answers against a reference: the item's gold where it
has one (control items), else the weighted vote of the *other* people's answers on the
item (leave one out), which counts as ``2c - 1`` of a check where ``c`` is that vote's
confidence (none at one half or below: a check against a coin toss says nothing; a whole
one at 1); refitted ``rounds`` times with the accuracies of the last fit, and shrunk
towards ``prior_accuracy`` as above. ``gold_correct`` counts the gold checks scoring at
least one half. An item's answers are voted with the kind's weighted vote
(:meth:`~quorum.tasks.base.TaskKind.weighted_vote`, for spans the span vote: a span kept
where people of more than half the weight marked it) with the one-coin weights
``log(r / (1 - r))`` (at least a tiny positive weight); its confidence is the accuracy of
the people the vote agrees with, each weighted by their answer's score against the vote
(the expected score of the vote, if each person's accuracy is theirs). With two people
per item and no gold, agreement is symmetric and cannot tell who is wrong, as for labels.

Sets of labels (a kind with ``label_set_outputs``, multi-label) are estimated and voted
label by label (:class:`LabelSetReliability`, binary relevance): for each label, whether a
person's set holds it is a 0/1 answer, each person's accuracy on those answers is estimated
as above (Dawid-Skene on the 0/1 answers, control items' sets as the truth), and the item's
set keeps the labels whose 0/1 vote says 1. So a person careless about one label and careful
about the others is outvoted on that label only.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Iterable, Mapping
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


@dataclass(frozen=True)
class GradedVote:
    """How a graded kind's answers are voted and scored: ``vote(outputs, weights,
    priority)`` -> the voted output, ``score(output, reference)`` in [0, 1]."""

    vote: Callable[[Mapping[str, str], Mapping[str, float], list[str] | None], str | None]
    score: Callable[[str, str], float]

    @classmethod
    def of(cls, kind: Any) -> GradedVote | None:
        """The kind's (a :class:`~quorum.tasks.base.TaskKind`), or None where its people's
        answers are labels (``graded_people`` off)."""
        if not getattr(kind, "graded_people", False):
            return None
        return cls(kind.weighted_vote, kind.people_score)


@dataclass
class Reliability:
    """Accuracies by person; unknown people get ``prior_accuracy``; ``graded``: answers
    are voted and scored by the kind (see the module docstring)."""

    people: dict[str, Person] = field(default_factory=dict)
    n_classes: int = 2
    prior_accuracy: float = 0.8
    graded: GradedVote | None = None

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
        if self.graded is not None:
            return self._graded_vote(pairs)
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

    def _weights(self, people: Iterable[str]) -> dict[str, float]:
        """One-coin weights of a graded vote, at least a tiny positive one (a vote of
        people all at or below one half is still a vote)."""
        return {w: max(self.weight(w), 1e-6) for w in people}

    def _graded_vote(self, pairs: list[tuple[str, str]]) -> Vote:
        """The kind's weighted vote of each person's latest answer (ties: the more reliable
        person, then the earlier answer); its confidence, see the module docstring."""
        assert self.graded is not None
        outputs: dict[str, str] = {}
        first: dict[str, int] = {}
        for i, (who, lab) in enumerate(pairs):
            outputs[who] = lab
            first.setdefault(who, i)
        weights = self._weights(outputs)
        order = sorted(outputs, key=lambda w: (-weights[w], first[w]))
        label = self.graded.vote(outputs, weights, order)
        if label is None:
            label = outputs[order[0]]
        fit = {w: self.graded.score(o, label) for w, o in outputs.items()}
        total = sum(fit.values())
        if total > 0:
            conf = sum(fit[w] * self.accuracy(w) for w in outputs) / total
        else:
            conf = max(self.accuracy(w) for w in outputs)
        return Vote(label, float(conf), {label: float(conf)})


def estimate_graded(
    frame: pd.DataFrame,
    gold: Mapping[str, str] | None,
    graded: GradedVote,
    prior_accuracy: float = 0.8,
    prior_strength: float = 4.0,
    rounds: int = 3,
) -> Reliability:
    """Each person's accuracy from a ``task, worker, label`` frame of graded answers (span
    lists): the mean score of their checked answers against the task's gold, else the
    weighted vote of the others' answers, ``rounds`` times (see the module docstring).

    >>> from quorum.tasks.registry import kind_of
    >>> g = GradedVote.of(kind_of("spans", ["E"]))
    >>> f = pd.DataFrame({"task": ["a", "a", "b", "b"], "worker": ["ann", "bob"] * 2,
    ...                   "label": ['[[0,4,"E"]]', "[]", '[[2,5,"E"]]', '[[3,9,"E"]]']})
    >>> rel = estimate_graded(f, {"a": '[[1,3,"E"]]'}, g, 0.8, 4.0)
    >>> round(rel.accuracy("ann"), 3), round(rel.accuracy("bob"), 3)  # b: agree, a: gold
    (0.851, 0.684)
    """
    gold = dict(gold or {})
    rel = Reliability({}, 2, prior_accuracy, graded)
    if frame.empty:
        return rel
    df = frame[["task", "worker", "label"]].astype(str).drop_duplicates(["task", "worker"])
    by_task = {t: dict(zip(g["worker"], g["label"], strict=True)) for t, g in df.groupby("task")}
    checked = df[df["task"].map(lambda t: len(by_task[t]) >= 2 or t in gold)]
    for _ in range(max(1, rounds)):
        scores, worth = [], []
        for t, w, lab in checked.itertuples(index=False):
            if t in gold:
                ref, weight = gold[t], 1.0
            else:
                others = [(o, x) for o, x in by_task[t].items() if o != w]
                v = rel.vote(others)
                ref, weight = v.label, max(0.0, 2.0 * v.confidence - 1.0)
            scores.append(graded.score(lab, ref) * weight)
            worth.append(weight)
        right = pd.Series(scores, index=checked.index, dtype=float)
        weight_of = pd.Series(worth, index=checked.index, dtype=float)
        people = {}
        for who, rows in df.groupby("worker", sort=True):
            c = checked[checked["worker"] == who]
            on_gold = c[c["task"].isin(list(gold))]
            hits = float(right.loc[c.index].sum()) if len(c) else 0.0
            n = float(weight_of.loc[c.index].sum()) if len(c) else 0.0
            acc = (prior_accuracy * prior_strength + hits) / (prior_strength + n)
            people[str(who)] = Person(
                str(who), len(rows), len(c), len(on_gold),
                int((right.loc[on_gold.index] >= 0.5).sum()),
                min(1.0 - EPS, max(EPS, acc)), hits / n if n else None,
            )  # fmt: skip
        rel.people = people
    return rel


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

    def vote(self, labels: Iterable[tuple[str, str]], majority_first: bool = False) -> Vote:
        """Per label, the weighted 0/1 vote of ``(person, set)`` pairs (oldest first; a
        tie goes to the person most reliable over all labels, then the earliest;
        ``majority_first``: per label, as :meth:`Reliability.vote`); then
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
            v = rel.vote(answers, majority_first)
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
    (``kind.label_set_outputs``), by the kind's score where their answers are graded (span
    lists, ``kind.graded_people``), else one accuracy per person; no ``frame``: nobody
    known yet."""
    if kind is not None and kind.label_set_outputs:
        if frame is None:
            return LabelSetReliability(kind, {}, {}, prior_accuracy)
        return estimate_label_sets(kind, frame, gold, prior_accuracy, prior_strength)
    graded = GradedVote.of(kind)
    if frame is None:
        return Reliability({}, n_classes, prior_accuracy, graded)
    if graded is not None:
        return estimate_graded(frame, gold, graded, prior_accuracy, prior_strength)
    return estimate(frame, gold, n_classes, prior_accuracy, prior_strength)


def _unanimous(checked: pd.DataFrame, gold: Mapping[str, str]) -> bool:
    """Whether every task's checked labels, and its gold label where known, are one."""
    if (checked.groupby("task")["label"].nunique() > 1).any():
        return False
    first = checked.drop_duplicates("task").set_index("task")["label"]
    return all(first.get(t, lab) == lab for t, lab in gold.items())


def _soft_correct(checked: pd.DataFrame, gold: Mapping[str, str]) -> pd.Series:
    """The Dawid-Skene probability that each checked label is the item's true label."""
    rows = tuple(zip(checked["task"], checked["worker"], checked["label"], strict=True))
    gold_items = tuple(gold.items())
    try:
        hash(gold_items)
    except TypeError:  # a gold label that cannot be a cache key: fitted without the cache
        return pd.Series(_soft_correct_rows.__wrapped__(rows, gold_items), index=checked.index)
    return pd.Series(_soft_correct_rows(rows, gold_items), index=checked.index)


@functools.lru_cache(maxsize=16)
def _soft_correct_rows(
    rows: tuple[tuple[str, str, str], ...], gold_items: tuple[tuple[str, str], ...]
) -> list[float]:
    """:func:`_soft_correct` of the ``task, worker, label`` rows, in their order. Kept for
    the last few inputs: a live run refits after every collect, and a collect that brings
    only first labels of tasks without gold leaves the checked labels as they were (a
    crowd-kit fit of 100 labels takes about half a second)."""
    from crowdkit.aggregation import DawidSkene

    gold = dict(gold_items)
    data = pd.DataFrame(list(rows), columns=["task", "worker", "label"])
    seen = set(data["label"])
    tasks = set(data["task"])
    truth = pd.Series(
        {t: lab for t, lab in gold.items() if t in tasks and lab in seen}, dtype=object
    )
    ds = DawidSkene(n_iter=100)
    with warnings.catch_warnings():  # crowd-kit 1.4 uses pandas keywords pandas 3 deprecates
        warnings.simplefilter("ignore")
        probas = ds.fit_predict_proba(data, truth if len(truth) else None)
    # an item whose gold label nobody gave: every label on it is wrong
    unseen = {t for t, lab in gold.items() if lab not in seen}
    return [
        0.0 if t in unseen else float(probas.at[t, lab])
        for t, lab in zip(data["task"], data["label"], strict=True)
    ]
