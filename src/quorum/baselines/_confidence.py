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

from typing import Literal

import numpy as np

from quorum.baselines._common import BaselineRouter, human_cap
from quorum.baselines._signals import ConfidencePlan, Kind, Signals, collect
from quorum.routing.core.base import AnnotationSource, RoutingProblem
from quorum.routing.core.budget import Budget, from_units, to_units
from quorum.routing.core.recorder import CallRecorder

ConfidenceMode = Literal["auto", "paper", "confidence", "entropy", "none"]
Substitute = Literal["agreement", "entropy", "none"]
CONFIDENCE_MODES = ("auto", "paper", "confidence", "entropy", "none")
SUBSTITUTES = ("agreement", "entropy", "none")


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


def _checked(
    problem: RoutingProblem,
    mode: str,
    labeller: str | None,
    entropy_annotators: list[str] | None,
    substitute: str,
) -> tuple[str, list[str]]:
    """The labeller and the entropy annotators (the labeller first), each checked."""
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
    return lab, [lab] + [a for a in ent if a != lab]


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
    lab, ent = _checked(problem, mode, labeller, entropy_annotators, substitute)
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
