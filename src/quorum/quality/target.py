"""Target-quality mode: spend in steps until the interval's lower bound reaches the target.

The user gives a target quality Q, a confidence 1 - alpha and a budget as ceiling.
:class:`TargetQuality` climbs a *budget ladder* (by default 25 %, 50 %, 75 %, 100 % of the
ceiling, ours): at each step the router runs on that share of the ceiling with every call
paid at earlier steps handed back to it as a prior outcome (charged to the step's budget,
never paid twice: live, a higher ceiling reuses paid calls through the ledger's cache; in
replay the spend is the union of the calls over the steps), random checks are bought
(:class:`~quorum.quality.checks.QualityChecks`), and the run stops at the first step
whose lower bound is at least Q.

Looking again and again at a fixed-sample interval and stopping when it crosses Q is not
valid under that optional stopping, so each of the K planned looks uses a one-sided lower
bound at level 1 - alpha / K (Bonferroni): the chance that *any* look puts its lower bound
above that look's true quality is at most alpha, so a stop claims "quality >= Q" wrongly
with probability at most alpha, however the looks depend on each other. (The ``betting``
interval is anytime-valid on its own; the correction is kept for both rules.)

When the ceiling does not reach Q the outcome says so, with the estimate and about how
much more money the lower bound's rise over the last two steps suggests it would take.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from quorum.quality.checks import QualityChecks
from quorum.quality.estimators import QualityEstimate
from quorum.routing.core.base import (
    AnnotationSource,
    Outcome,
    Router,
    RoutingProblem,
    RoutingResult,
)
from quorum.routing.core.budget import Budget

#: the checks of the target mode when none are given (ours): more than a plain run's
#: (``QualityChecks()``), since the stop rests on the lower bound
TARGET_CHECKS = {"share": 0.1, "min_checks": 20, "max_share": 0.15}


class PriorSource:
    """A source that hands the router the calls paid at earlier steps (``prior_outcomes``)
    and answers everything else from the source it wraps."""

    def __init__(self, source: AnnotationSource, prior: Sequence[Outcome]) -> None:
        self._source = source
        self._prior = list(prior)

    def prior_outcomes(self) -> list[Outcome]:
        return list(self._prior)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._source, name)


def paid_outcomes(result: RoutingResult) -> list[Outcome]:
    """Every answer a result paid for (prior ones included), as outcomes to hand back."""
    ann = result.annotations
    if "kind" in ann.columns:
        ann = ann.loc[ann["kind"] != "confidence"]
    out = []
    for i, a, o, s, c in zip(
        ann["item_id"], ann["annotator"], ann["output"], ann["status"], ann["cost"], strict=True
    ):
        out.append(Outcome(str(i), str(a), None if not isinstance(o, str) else o, float(c), s))
    return out


@dataclass
class TargetOutcome:
    """What the target mode did: the looks, where it stopped, what it spent."""

    target: float
    confidence: float
    reached: bool
    steps: list[dict[str, Any]]
    ceiling: float
    spent: float
    estimate: QualityEstimate
    more_money: float | None = None
    message: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def stopped_early(self) -> bool:
        return self.reached and len(self.steps) < self.extra.get("looks", len(self.steps))

    def row(self) -> dict[str, Any]:
        return {
            "target_quality": self.target,
            "target_confidence": self.confidence,
            "target_reached": self.reached,
            "target_stopped_early": self.stopped_early,
            "target_looks": len(self.steps),
            "target_ceiling": round(self.ceiling, 6),
            "target_spent": round(self.spent, 6),
            "target_saved": round(self.ceiling - self.spent, 6),
            "target_more_money": None if self.more_money is None else round(self.more_money, 6),
            "target_message": self.message,
        }


class TargetQuality:
    """Stop spending once the lower bound of the quality reaches ``target``.

    Parameters
    ----------
    target: the quality wanted (accuracy, or mean ROUGE-1 for summaries).
    confidence: 1 - alpha, the chance that a stop's claim "quality >= target" is right.
    ladder: the shares of the ceiling spent at the looks, increasing, ending at 1.0.
    """

    def __init__(
        self,
        target: float,
        confidence: float = 0.9,
        ladder: Sequence[float] = (0.25, 0.5, 0.75, 1.0),
    ) -> None:
        if not 0.0 < target <= 1.0:
            raise ValueError(f"target quality must be in (0, 1], got {target}")
        if not 0.0 < confidence < 1.0:
            raise ValueError(f"confidence must be in (0, 1), got {confidence}")
        lad = [float(x) for x in ladder]
        if not lad or any(b <= a for a, b in itertools.pairwise(lad)) or lad[-1] != 1.0:
            raise ValueError(f"ladder must increase and end at 1.0, got {list(ladder)}")
        if lad[0] <= 0.0:
            raise ValueError(f"ladder shares must be > 0, got {list(ladder)}")
        self.target = target
        self.confidence = confidence
        self.ladder = tuple(lad)

    def look_confidence(self) -> float:
        """The two-sided level of each look whose lower bound is one-sided 1 - alpha / K."""
        alpha = 1.0 - self.confidence
        return 1.0 - 2.0 * alpha / len(self.ladder)

    def run(
        self,
        make_router: Callable[[], Router],
        make: Callable[[float], tuple[RoutingProblem, Budget]],
        source: AnnotationSource,
        checks: QualityChecks | None = None,
        seed: int = 0,
    ) -> tuple[RoutingResult, TargetOutcome]:
        """Climb the ladder: ``make(share)`` gives the problem and budget of a share of the
        ceiling (``make(1.0)``: the ceiling)."""
        look = self.look_checks(checks)
        ceiling = make(1.0)[1].limit
        paid: dict[tuple[str, str], float] = {}
        prior: list[Outcome] = []
        steps: list[dict[str, Any]] = []
        result: RoutingResult | None = None
        est: QualityEstimate | None = None
        for share in self.ladder:
            problem, budget = make(share)
            result, est = look.route(
                make_router(), problem, PriorSource(source, prior), budget, seed
            )
            prior = paid_outcomes(result)
            for o in prior:
                paid.setdefault((o.item_id, o.annotator), o.cost)
            steps.append(_step(share, budget, float(sum(paid.values())), est))
            if est.low >= self.target:
                break
        assert result is not None and est is not None
        out = self.outcome(steps, ceiling, est)
        result.info["target"] = out.row()
        result.info["target_steps"] = steps
        return result, out

    def look_checks(self, checks: QualityChecks | None) -> QualityChecks:
        """The checks of every look: ``checks``' (default :data:`TARGET_CHECKS`) at the
        look's level (:meth:`look_confidence`)."""
        base = checks or QualityChecks(**TARGET_CHECKS)
        names = ("share", "min_checks", "max_share", "interval", "replace", "use_leftover")
        params = {k: getattr(base, k) for k in (*names, "stream")}
        return QualityChecks(**params, confidence=self.look_confidence())

    def outcome(
        self, steps: list[dict[str, Any]], ceiling: float, est: QualityEstimate
    ) -> TargetOutcome:
        """Where the climb ended, and the message for the user."""
        spent = steps[-1]["spent"]
        reached = est.low >= self.target
        more = None
        if reached:
            msg = (
                f"target {self.target:.3f} reached at {confidence_pct(self.confidence)} "
                f"after {len(steps)} of {len(self.ladder)} steps: lower bound {est.low:.3f}, "
                f"spent {spent:.4g} of {ceiling:.4g}"
            )
        else:
            more = _more_money(steps, self.target)
            tail = (
                f"; about {more:.4g} more money would reach it if the lower bound kept "
                "rising as over the last step"
                if more is not None
                else "; the lower bound did not rise over the last step, so more money "
                "alone may not reach it"
            )
            msg = (
                f"target {self.target:.3f} not reached within the budget {ceiling:.4g}: "
                f"estimate {est.estimate:.3f}, lower bound {est.low:.3f} at "
                f"{confidence_pct(self.confidence)}" + tail
            )
        extra = {"looks": len(self.ladder)}
        return TargetOutcome(
            self.target, self.confidence, reached, steps, ceiling, spent, est, more, msg, extra
        )


def _step(share: float, budget: Budget, spent: float, est: QualityEstimate) -> dict[str, Any]:
    """One look of the ladder, as ``info["target_steps"]`` holds it."""
    return {
        "share": share,
        "limit": budget.limit,
        "spent": spent,
        "estimate": est.estimate,
        "low": est.low,
        "high": est.high,
        "n_checks": est.n_checks,
    }


def confidence_pct(c: float) -> str:
    return f"{c:.0%} confidence"


def _more_money(steps: list[dict[str, Any]], target: float) -> float | None:
    """Money the lower bound's rise over the last two looks says the target needs."""
    if len(steps) < 2:
        return None
    a, b = steps[-2], steps[-1]
    dm, dl = b["spent"] - a["spent"], b["low"] - a["low"]
    if dm <= 0 or dl <= 0:
        return None
    return float(np.maximum(0.0, (target - b["low"]) / dl * dm))
