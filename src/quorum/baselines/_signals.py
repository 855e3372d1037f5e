"""What a confidence baseline buys to estimate uncertainty (:class:`ConfidencePlan`) and
buying it (:func:`collect` -> :class:`Signals`): the labeller's answer on every item, then
a confidence call, or the answers of other prompts / models (entropy for labels, mean
pairwise cosine for summaries), or nothing (a random order). Which plan a baseline takes is
:func:`quorum.baselines._confidence.plan_confidence`.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from quorum.routing.core.base import AnnotationSource, RoutingProblem
from quorum.routing.core.budget import to_units
from quorum.routing.core.recorder import CallRecorder

Kind = Literal["recorded", "verbalised", "entropy", "similarity", "none"]


@dataclass(frozen=True)
class ConfidencePlan:
    """Which calls buy the uncertainty signal, what they cost per item, and how to report it.

    ``label_price`` is the labeller's call (every item needs it anyway); ``extra_price``
    the calls made only for uncertainty (reported as confidence cost).
    """

    kind: Kind
    labeller: str
    others: tuple[str, ...]
    label_price: float
    extra_price: float
    source: str
    substitute: bool
    extra_prices: tuple[float, ...] = ()

    @property
    def item_price(self) -> float:
        return self.label_price + self.extra_price

    def extra_units(self) -> int:
        if self.kind in ("entropy", "similarity"):
            return sum(to_units(p) for p in self.extra_prices)
        return to_units(self.extra_price)


@dataclass
class Signals:
    """Per-item signals aligned with ``problem.item_ids`` (NaN / None where not bought)."""

    label: np.ndarray  # labeller's output
    aggregate: np.ndarray  # majority over prompts/models (medoid summary); = label if alone
    agreement: np.ndarray  # vote share of ``aggregate``
    confidence: np.ndarray  # confidence in the labeller's output, in [0, 1]
    uncertainty: np.ndarray
    estimated: np.ndarray  # bool
    labelled: np.ndarray  # bool: the labeller's call was made
    n_failed: int = 0
    similarity: str | None = None
    notes: list[str] = field(default_factory=list)


def _majority(answers: list[tuple[str, str]], rank: dict[str, int]) -> tuple[str, float]:
    """Most frequent answer; ties go to the answer of the highest-ranked annotator."""
    counts = Counter(y for _, y in answers)
    best = max(counts.values())
    tied = {y for y, c in counts.items() if c == best}
    label = min(
        (y for y in tied),
        key=lambda y: min(rank.get(a, len(rank)) for a, v in answers if v == y),
    )
    return label, best / len(answers)


def entropy_bits(values: list[str]) -> float:
    """Shannon entropy (bits) of the empirical answer distribution, as CoAnnotating."""
    if not values:
        return 0.0
    c = np.array(list(Counter(values).values()), dtype=np.float64)
    p = c / c.sum()
    return float(-(p * np.log2(p)).sum())


def embed_texts(source: AnnotationSource, texts: list[str]) -> tuple[Any, str]:
    """Unit-norm vectors of texts: the source's embedder (dense), else a hashed
    bag-of-words (a sparse matrix); use :func:`cosine_matrix` / :func:`paired_cosine`."""
    try:
        e = np.asarray(source.embed_outputs(texts), dtype=np.float64)
        n = np.linalg.norm(e, axis=1, keepdims=True)
        return e / np.where(n > 0, n, 1.0), "embed_outputs"
    except (RuntimeError, AttributeError, NotImplementedError):
        from sklearn.feature_extraction.text import HashingVectorizer

        v = HashingVectorizer(n_features=2**18, alternate_sign=False, norm="l2")
        return v.transform(texts).tocsr(), "hashed-bag-of-words"


def cosine_matrix(emb: Any, rows: list[int]) -> np.ndarray:
    """Pairwise cosines of the given rows of unit-norm vectors (dense or sparse)."""
    e = emb[rows]
    sims = e @ e.T
    return np.asarray(sims.toarray() if hasattr(sims, "toarray") else sims, dtype=np.float64)


def paired_cosine(a: Any, b: Any) -> np.ndarray:
    """Row-wise cosines of two aligned blocks of unit-norm vectors (dense or sparse)."""
    if hasattr(a, "multiply"):
        return np.asarray(a.multiply(b).sum(axis=1), dtype=np.float64).ravel()
    return (np.asarray(a) * np.asarray(b)).sum(axis=1)


def collect(
    plan: ConfidencePlan,
    problem: RoutingProblem,
    rec: CallRecorder,
    order: np.ndarray,
    n_estimate: int,
    rng: np.random.Generator,
) -> Signals:
    """Label every item in ``order`` with the labeller, then buy the uncertainty signal
    for the first ``n_estimate`` labelled items (those are the ones a degraded run covers).
    """
    ids = problem.item_ids
    T = len(ids)
    label = np.full(T, None, dtype=object)
    labelled = np.zeros(T, dtype=bool)
    outs = rec.annotate_many([(ids[t], plan.labeller) for t in order], phase="label")
    for t, o in zip(order, outs, strict=True):
        if o is not None:
            labelled[t] = True
            label[t] = o.output if o.ok else None
    conf = np.full(T, np.nan)
    unc = np.full(T, np.nan)
    agg = label.copy()
    agr = np.where(labelled, 1.0, 0.0)
    est = np.zeros(T, dtype=bool)
    todo = [t for t in order if labelled[t]][: max(0, n_estimate)]
    sig = Signals(label, agg, agr, conf, unc, est, labelled)
    if plan.kind in ("recorded", "verbalised"):
        _confidence_calls(sig, todo, plan, ids, rec)
    elif plan.kind in ("entropy", "similarity"):
        per_item = _other_answers(sig, todo, plan, ids, rec)
        if plan.kind == "entropy":
            _entropy(sig, per_item, plan, rec, len(problem.task.labels or []))
        else:
            _similarity(sig, per_item, rec, plan)
    else:  # none: no signal at all; a random order stands in for uncertainty
        for t in todo:
            est[t] = True
        unc[est] = rng.random(int(est.sum()))
        conf[est] = 1.0 - unc[est]
    return sig


def _confidence_calls(
    sig: Signals, todo: list[int], plan: ConfidencePlan, ids: np.ndarray, rec: CallRecorder
) -> None:
    """One confidence call of the labeller per item while the money lasts; a failed call
    gets the mean of the others."""
    conf, est = sig.confidence, sig.estimated
    cp = rec.source.confidence_price(plan.labeller)
    for t in todo:
        if not rec.budget.can_afford(cp):
            break
        o = rec.confidence(ids[t], plan.labeller)
        est[t] = True
        if o.status == "ok" and o.confidence is not None:
            conf[t] = float(np.clip(o.confidence, 0.0, 1.0))
        else:
            sig.n_failed += 1
        if sig.label[t] is None:  # no usable answer: nothing to be confident about
            conf[t] = 0.0
    miss = est & np.isnan(conf)
    if miss.any():
        seen = conf[est & ~np.isnan(conf)]
        conf[miss] = float(seen.mean()) if len(seen) else 0.5
        sig.notes.append(f"{int(miss.sum())} confidence call(s) failed; mean imputed")
    sig.uncertainty[est] = 1.0 - conf[est]


def _other_answers(
    sig: Signals, todo: list[int], plan: ConfidencePlan, ids: np.ndarray, rec: CallRecorder
) -> list[tuple[int, list[tuple[str, str]]]]:
    """The other prompts' / models' answers on ``todo``: (item, [(annotator, answer)])
    for the items whose every answer was bought (the labeller's first)."""
    label = sig.label
    reqs = [(ids[t], a) for t in todo for a in plan.others]
    answers = rec.annotate_many(reqs, phase="uncertainty")
    k = len(plan.others)
    per_item: list[tuple[int, list[tuple[str, str]]]] = []
    for j, t in enumerate(todo):
        got = answers[j * k : (j + 1) * k]
        if any(o is None for o in got):  # ran out of money part-way: not estimated
            continue
        vals = [(plan.labeller, label[t])] if label[t] is not None else []
        vals += [(a, o.output) for a, o in zip(plan.others, got, strict=True) if o.ok]
        per_item.append((t, vals))
        sig.estimated[t] = True
    return per_item


def _entropy(
    sig: Signals,
    per_item: list[tuple[int, list[tuple[str, str]]]],
    plan: ConfidencePlan,
    rec: CallRecorder,
    n_labels: int,
) -> None:
    """Labels: uncertainty = entropy of the answers, the aggregate their majority, the
    labeller's confidence the share that agrees with it."""
    k = len(plan.others)
    rank_order = sorted(
        [plan.labeller, *plan.others], key=lambda a: -rec.price(a)
    )  # stable: equal prices keep the given order
    rank = {a: i for i, a in enumerate(rank_order)}
    max_h = math.log2(max(2, min(k + 1, n_labels or (k + 1))))
    label = sig.label
    for t, vals in per_item:
        if not vals:
            sig.uncertainty[t], sig.confidence[t], sig.agreement[t] = max_h, 0.0, 0.0
            continue
        sig.aggregate[t], sig.agreement[t] = _majority(vals, rank)
        sig.uncertainty[t] = entropy_bits([v for _, v in vals])
        same = sum(v == label[t] for _, v in vals) if label[t] is not None else 0
        sig.confidence[t] = same / len(vals)


def _similarity(
    sig: Signals,
    per_item: list[tuple[int, list[tuple[str, str]]]],
    rec: CallRecorder,
    plan: ConfidencePlan,
) -> None:
    texts = sorted({v for _, vals in per_item for _, v in vals})
    if not texts:
        for t, _ in per_item:
            sig.uncertainty[t], sig.confidence[t], sig.agreement[t] = 1.0, 0.0, 0.0
        return
    emb, how = embed_texts(rec.source, texts)
    sig.similarity = how
    row = {s: i for i, s in enumerate(texts)}
    for t, vals in per_item:
        if len(vals) < 2:
            sig.uncertainty[t] = 1.0
            sig.confidence[t] = 0.0
            sig.agreement[t] = 0.0 if not vals else 1.0
            if vals:
                sig.aggregate[t] = vals[0][1]
            continue
        sims = np.clip(cosine_matrix(emb, [row[v] for _, v in vals]), -1.0, 1.0)
        n = len(vals)
        mean_pair = (sims.sum() - np.trace(sims)) / (n * (n - 1))
        sig.uncertainty[t] = float(1.0 - mean_pair)
        mean_to_others = (sims.sum(axis=1) - np.diag(sims)) / (n - 1)
        best = int(np.argmax(mean_to_others))
        sig.aggregate[t] = vals[best][1]
        sig.agreement[t] = float(np.clip(mean_pair, 0.0, 1.0))
        if vals[0][0] == plan.labeller:
            sig.confidence[t] = float(np.clip(mean_to_others[0], 0.0, 1.0))
        else:
            sig.confidence[t] = 0.0
