"""Uncertainty signals for the confidence baselines (CoAnnotating, CDI, HyPAC).

Everything a router learns here is bought through :class:`CallRecorder`: the labelling
LLM's answer, then either a confidence call or the answers of other prompts / models.
Sources, in order of faithfulness to the papers (``confidence="auto"``):

1. ``recorded``: the dataset stores the labeller's confidence (imdb-mlapi ``conf_<api>``,
   coannotating-stance per-prompt confidence); one paid confidence call per item.
2. ``entropy``: several recorded answers per item; uncertainty is the entropy of the
   answers over prompts (one model under several wordings, CoAnnotating's own signal) or
   over models (a substitute); the "confidence" of the labeller's answer is the share of
   answers that agree with it.
3. ``verbalised``: a live source (no recorded data) is asked for a verbalised confidence,
   one extra call per item, as in the QUORUM paper's reproduction of these baselines.

``confidence="paper"`` is the paper's form (the default of ``coannotating``, ``cdi`` and
``hypac``): the labelling LLM's own confidence, recorded or verbalised, one paid call per
item; where neither exists, a named ``substitute``: ``"agreement"`` (default: the answer
of one other LLM, the cheapest, bought on every item; the labeller's confidence is 1 where
they agree, 0.5 where not; reported as ``agreement-with:<model>``), ``"entropy"`` (every
other LLM, as ``auto``) or ``"none"`` (a random order).

Summaries have no label distribution: uncertainty is ``1 - mean pairwise cosine`` of the
models' summaries (``source.embed_outputs``; a hashed bag-of-words cosine if the source
has no embedder) and the aggregate output is the medoid summary.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from quorum.baselines._common import BaselineRouter, human_cap
from quorum.routing.base import AnnotationSource, RoutingProblem
from quorum.routing.budget import Budget, from_units, to_units
from quorum.routing.recorder import CallRecorder

ConfidenceMode = Literal["auto", "paper", "confidence", "entropy", "none"]
Substitute = Literal["agreement", "entropy", "none"]
Kind = Literal["recorded", "verbalised", "entropy", "similarity", "none"]
CONFIDENCE_MODES = ("auto", "paper", "confidence", "entropy", "none")
SUBSTITUTES = ("agreement", "entropy", "none")


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


def _stem(name: str) -> str | None:
    head, sep, _ = name.rpartition("/")
    return head if sep else None


def _entropy_source(names: list[str], summaries: bool) -> tuple[str, bool]:
    """('entropy-over-prompts:...' | 'entropy-over-models:...', is_prompts)."""
    stems = {_stem(n) for n in names}
    prompts = len(names) >= 2 and len(stems) == 1 and None not in stems
    what = "similarity" if summaries else "entropy"
    if prompts:
        return f"{what}-over-prompts:{','.join(names)}", True
    return f"{what}-over-models:{','.join(names)}", False


def plan_confidence(
    problem: RoutingProblem,
    source: AnnotationSource,
    *,
    mode: ConfidenceMode = "auto",
    labeller: str | None = None,
    entropy_annotators: list[str] | None = None,
    prompts_faithful: bool = False,
    substitute: Substitute = "agreement",
) -> ConfidencePlan:
    """Choose the uncertainty source for ``problem`` (see the module docstring).

    ``prompts_faithful``: entropy over prompts is the method's own signal (CoAnnotating),
    so it is not flagged as a substitute. ``substitute``: what ``mode="paper"`` uses when
    the labeller's confidence can be neither looked up nor asked for.
    """
    if mode not in CONFIDENCE_MODES:
        raise ValueError(f"confidence must be one of {CONFIDENCE_MODES}, got {mode!r}")
    if substitute not in SUBSTITUTES:
        raise ValueError(f"substitute must be one of {SUBSTITUTES}, got {substitute!r}")
    llms = [a.name for a in problem.llms]
    if not llms:
        raise ValueError("an uncertainty baseline needs at least one LLM in the task")
    lab = labeller or llms[0]
    if lab not in llms:
        raise ValueError(f"labeller {lab!r} is not one of the task's LLMs {llms}")
    ent = list(entropy_annotators) if entropy_annotators else list(llms)
    unknown = sorted(set(ent) - set(llms))
    if unknown:
        raise ValueError(f"entropy_annotators {unknown} are not LLMs of the task ({llms})")
    ent = [lab] + [a for a in ent if a != lab]
    others = tuple(ent[1:])
    summaries = not problem.task.type.has_labels
    has_conf = getattr(source, "has_recorded_confidence", None)
    live = has_conf is None
    recorded = (not live) and bool(has_conf(lab))
    lp = source.price(lab)

    if mode == "paper" and not recorded and not live:
        return _substitute_plan(problem, source, lab, ent, substitute, summaries, prompts_faithful)

    kind: Kind
    if mode in ("confidence", "paper"):
        kind = "recorded" if recorded else "verbalised"
    elif mode == "entropy":
        kind = "similarity" if summaries else "entropy"
    elif mode == "none":
        kind = "none"
    elif recorded:
        kind = "recorded"
    elif live:
        kind = "verbalised"
    elif others:
        kind = "similarity" if summaries else "entropy"
    else:
        kind = "none"
    if kind in ("entropy", "similarity") and not others:
        kind = "none"

    if kind in ("recorded", "verbalised"):
        cp = source.confidence_price(lab)
        return ConfidencePlan(kind, lab, (), lp, cp, kind, False, (cp,))
    if kind in ("entropy", "similarity"):
        prices = tuple(source.price(a) for a in others)
        name, prompts = _entropy_source(ent, summaries)
        sub = not (prompts and prompts_faithful)
        return ConfidencePlan(kind, lab, others, lp, float(sum(prices)), name, sub, prices)
    return ConfidencePlan("none", lab, (), lp, 0.0, "none", True, ())


def _substitute_plan(
    problem: RoutingProblem,
    source: AnnotationSource,
    lab: str,
    ent: list[str],
    substitute: Substitute,
    summaries: bool,
    prompts_faithful: bool,
) -> ConfidencePlan:
    """The paper form's plan where the labeller's confidence is neither recorded nor live."""
    lp = source.price(lab)
    if substitute == "entropy":
        return plan_confidence(
            problem,
            source,
            mode="entropy",
            labeller=lab,
            entropy_annotators=ent,
            prompts_faithful=prompts_faithful,
        )
    others = [a.name for a in problem.llms if a.name != lab]
    if substitute == "none" or not others:
        return ConfidencePlan("none", lab, (), lp, 0.0, "none", True, ())
    other = min(others, key=source.price)  # stable: the first of equal prices
    price = source.price(other)
    kind: Kind = "similarity" if summaries else "entropy"
    name = f"{'similarity' if summaries else 'agreement'}-with:{other}"
    return ConfidencePlan(kind, lab, (other,), lp, price, name, True, (price,))


def n_estimable(plan: ConfidencePlan, money: float, n_items: int, keep: float = 0.0) -> int:
    """Items whose full estimate fits in ``money`` after labelling all ``n_items``."""
    avail = to_units(money) - n_items * to_units(plan.label_price) - to_units(keep)
    eu = plan.extra_units()
    if eu <= 0:  # free signal: every labelled item gets it
        return n_items
    return int(min(n_items, max(0, avail // eu)))


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
            if label[t] is None:  # no usable answer: nothing to be confident about
                conf[t] = 0.0
        miss = est & np.isnan(conf)
        if miss.any():
            seen = conf[est & ~np.isnan(conf)]
            conf[miss] = float(seen.mean()) if len(seen) else 0.5
            sig.notes.append(f"{int(miss.sum())} confidence call(s) failed; mean imputed")
        unc[est] = 1.0 - conf[est]
    elif plan.kind in ("entropy", "similarity"):
        reqs = [(ids[t], a) for t in todo for a in plan.others]
        answers = rec.annotate_many(reqs, phase="uncertainty")
        k = len(plan.others)
        rank_order = sorted(
            [plan.labeller, *plan.others], key=lambda a: -rec.price(a)
        )  # stable: equal prices keep the given order
        rank = {a: i for i, a in enumerate(rank_order)}
        per_item: list[tuple[int, list[tuple[str, str]]]] = []
        for j, t in enumerate(todo):
            got = answers[j * k : (j + 1) * k]
            if any(o is None for o in got):  # ran out of money part-way: not estimated
                continue
            vals = [(plan.labeller, label[t])] if label[t] is not None else []
            vals += [(a, o.output) for a, o in zip(plan.others, got, strict=True) if o.ok]
            per_item.append((t, vals))
            est[t] = True
        if plan.kind == "entropy":
            n_lab = len(problem.task.labels or []) or (k + 1)
            max_h = math.log2(max(2, min(k + 1, n_lab)))
            for t, vals in per_item:
                if not vals:
                    unc[t], conf[t], agr[t] = max_h, 0.0, 0.0
                    continue
                agg[t], agr[t] = _majority(vals, rank)
                unc[t] = entropy_bits([v for _, v in vals])
                same = sum(v == label[t] for _, v in vals) if label[t] is not None else 0
                conf[t] = same / len(vals)
        else:
            _similarity(sig, per_item, rec, plan)
    else:  # none: no signal at all; a random order stands in for uncertainty
        for t in todo:
            est[t] = True
        unc[est] = rng.random(int(est.sum()))
        conf[est] = 1.0 - unc[est]
    return sig


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


def plan_info(plan: ConfidencePlan, sig: Signals | None = None) -> dict:
    """The fields every confidence baseline puts in ``RoutingResult.info``."""
    info = {
        "confidence_source": plan.source,
        "substitute": plan.substitute,
        "labeller": plan.labeller,
        "uncertainty_annotators": list(plan.others),
        "uncertainty_price_per_item": plan.extra_price,
    }
    if sig is not None:
        info["n_estimated"] = int(sig.estimated.sum())
        info["n_labelled"] = int(sig.labelled.sum())
        if sig.similarity:
            info["similarity"] = sig.similarity
        if sig.n_failed:
            info["confidence_failed"] = sig.n_failed
        if sig.notes:
            info["notes"] = list(sig.notes)
    return info


def extra_cost(plan: ConfidencePlan, n_items: int) -> float:
    """Money the uncertainty estimate costs on ``n_items`` (for the auditor money limit)."""
    return from_units(plan.extra_units() * n_items)


class ConfidenceBaseline(BaselineRouter):
    """Shared knobs of the uncertainty baselines: where confidence comes from, who labels.

    ``confidence``: "paper" (the labeller's own confidence, recorded or verbalised, else
    ``substitute``), "auto" (recorded > entropy/similarity over the task's LLMs > a live
    verbalised call), "confidence" (confidence calls only), "entropy" (several answers),
    "none" (no signal: random order, flagged as a substitute).
    ``labeller``: the LLM whose label is used (default: the cheapest).
    ``entropy_annotators``: the prompts/models asked for entropy (default: all task LLMs).
    ``substitute``: "agreement" (one other LLM, the cheapest), "entropy" (all of
    ``entropy_annotators``) or "none"; used by ``confidence="paper"`` only.
    """

    #: entropy over prompts is this method's own signal (not a substitute)
    prompts_faithful: bool = False
    pays_for_confidence = True

    def __init__(
        self,
        confidence: ConfidenceMode = "auto",
        labeller: str | None = None,
        entropy_annotators: list[str] | None = None,
        substitute: Substitute = "agreement",
    ) -> None:
        if confidence not in CONFIDENCE_MODES:
            raise ValueError(f"confidence must be one of {CONFIDENCE_MODES}, got {confidence!r}")
        if substitute not in SUBSTITUTES:
            raise ValueError(f"substitute must be one of {SUBSTITUTES}, got {substitute!r}")
        self.confidence = confidence
        self.labeller = labeller
        self.entropy_annotators = list(entropy_annotators) if entropy_annotators else None
        self.substitute = substitute

    def plan(self, problem: RoutingProblem, source: AnnotationSource) -> ConfidencePlan:
        return plan_confidence(
            problem,
            source,
            mode=self.confidence,
            labeller=self.labeller,
            entropy_annotators=self.entropy_annotators,
            prompts_faithful=self.prompts_faithful,
            substitute=self.substitute,
        )

    def extra_cost_estimate(self, problem: RoutingProblem, source: AnnotationSource) -> float:
        """Price of the uncertainty calls on every item: ``T * extra_price`` of the plan."""
        if not problem.llms:
            return 0.0
        return extra_cost(self.plan(problem, source), problem.n_items)

    def buy_signals(
        self,
        problem: RoutingProblem,
        rec: CallRecorder,
        budget: Budget,
        rng: np.random.Generator,
    ) -> tuple[ConfidencePlan, Signals, np.ndarray, int]:
        """Label every item and buy its uncertainty signal, degrading if money is short.

        Returns (plan, signals, stream order, human cap). Auditor: the money for the
        ``B`` human labels is kept aside first. Dollars: the estimate comes first (the
        methods need it before allocating), humans get what is left. If the estimate
        for every item does not fit, it is bought for as many items as fit (in a random
        order) and the rest keep the labeller's answer with no signal (info "degraded").
        """
        T = problem.n_items
        plan = self.plan(problem, rec.source)
        cap = human_cap(problem, budget)
        keep = cap * rec.price(rec.human_name) if problem.setting == "auditor" else 0.0
        order = rng.permutation(T)
        n_est = n_estimable(plan, budget.remaining, T, keep=keep)
        sig = collect(plan, problem, rec, order, n_est, rng)
        if n_est < T:
            sig.notes.append(
                f"budget covers the uncertainty estimate on {n_est} of {T} items only; "
                "the others keep the labeller's answer"
            )
        return plan, sig, order, cap
