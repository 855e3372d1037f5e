"""Phase 2 of the dollars setting: every item not calibrated, in a random order, goes to
one arm (QUORUM's "routing" step, Algorithm 1 line 7-15).

The money: every item keeps c_min; what an arm costs above it comes from the working
share of the spare money (``reserve_share``), paced over the items
(:class:`~quorum.routing.core.budget.SpendingPlan`). The arm: a :class:`RouteRule`, chosen once
from ``phase2_rule``: :class:`LagrangianRule` (ours, default) or :class:`PaperRule`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from quorum.routing.core.budget import SpendingPlan
from quorum.routing.quorum.params import QuorumParams
from quorum.routing.quorum.policy import (
    adaptive_tau,
    lagrangian_choice,
    route_tau_ratio,
    shadow_price,
)
from quorum.routing.quorum.rewards import settle, settle_many
from quorum.routing.quorum.run import QuorumRun

__all__ = ["LagrangianRule", "PaperRule", "RouteRule", "route_rest", "route_rule"]


class RouteRule(ABC):
    """How phase 2 picks an item's arm among the LLMs that fit and the human."""

    #: escalations pace on all the spare money (True), or on the working share only
    humans_on_spare = False
    #: the rule has a compiled twin (:mod:`~quorum.routing.quorum.compiled.phase2_loop`)
    compiled = False

    def __init__(self, cfg: QuorumParams) -> None:
        self.cfg = cfg

    def prepare(self, run: QuorumRun, rest: list[int], working: float) -> float:
        """Set up before the first item; returns the shadow price lambda (0: none)."""
        return 0.0

    @abstractmethod
    def choose(
        self,
        run: QuorumRun,
        x: np.ndarray,
        q: np.ndarray,
        fits: list[int],
        human_ok: bool,
        t: int,
        tau_ratio: float,
    ) -> tuple[int | None, str]:
        """(index into ``fits``, or None for the human; mode) at exploration time t."""
        raise NotImplementedError


class LagrangianRule(RouteRule):
    """``phase2_rule="lagrangian"``: with probability epsilon_t explore an LLM; otherwise
    argmax over the LLMs and the human of q_a - lambda c_a / c_H
    (:func:`~quorum.routing.quorum.policy.lagrangian_choice`), lambda set once by
    :func:`~quorum.routing.quorum.policy.shadow_price` so that the planned spend fits."""

    compiled = True

    def prepare(self, run: QuorumRun, rest: list[int], working: float) -> float:
        """lambda: the human an arm of quality ``human_quality``; the money what phase 2
        may spend, the cheapest LLM on every item plus the working share."""
        self.lam_ = 0.0
        if not rest:
            return self.lam_
        sp, arms = run.spend, run.arms
        X = arms.unasked_contexts(rest, run.budget.remaining_fraction, 0.5)
        Q = np.column_stack([arms.q_lower(X), np.full(len(rest), self.cfg.human_quality)])
        price = np.append(sp.c, sp.c_h) / sp.c_h
        self.lam_ = shadow_price(Q, price, sp.c_h, len(rest) * sp.c_min + working)
        return self.lam_

    def choose(self, run, x, q, fits, human_ok, t, tau_ratio):
        cfg, sp = self.cfg, run.spend
        q_lo = run.arms.q_lower(x) if cfg.pessimism > 0 else q
        return lagrangian_choice(
            q_lo[fits],
            sp.c[fits],
            sp.c_h,
            human_ok=human_ok,
            lam=self.lam_,
            human_quality=cfg.human_quality,
            tau_h=cfg.tau_h,
            epsilon=run.arms.policy.epsilon(t),
            rng=run.rng,
        )


class PaperRule(RouteRule):
    """``phase2_rule="paper"``: epsilon-greedy on q - ``cost_penalty`` c_a / c_H,
    escalation below tau_H (adaptive with ``adaptive_tau``)."""

    humans_on_spare = True

    def choose(self, run, x, q, fits, human_ok, t, tau_ratio):
        cfg, sp = self.cfg, run.spend
        scores = q[fits] - cfg.cost_penalty * sp.c[fits] / sp.c_h
        policy = run.arms.policy
        if cfg.adaptive_tau:
            policy = policy.with_tau(adaptive_tau(cfg.tau_h, tau_ratio))
        return policy.select(q[fits], t, run.rng, human_allowed=human_ok, scores=scores)


def route_rule(cfg: QuorumParams) -> RouteRule:
    """The phase-2 rule of ``cfg.phase2_rule``."""
    return {"lagrangian": LagrangianRule, "paper": PaperRule}[cfg.phase2_rule](cfg)


def route_rest(run: QuorumRun, cal: list[int], rule: RouteRule) -> list[int]:
    """Phase 2: route every item not in ``cal`` (random order) by ``rule``; returns them.

    Items are logged and batched (``batch_size`` requests at once); items that got a
    human label settle at once, the others wait for phase 3. Where the run's loops are
    compiled (:mod:`~quorum.routing.quorum.loops`) and the rule has a compiled twin, the
    loop runs compiled (:mod:`~quorum.routing.quorum.compiled.phase2_loop`), with the
    same results.
    """
    cfg, sp, T = run.cfg, run.spend, run.T
    in_cal = np.zeros(T, dtype=bool)
    in_cal[cal] = True
    perm = run.rng.permutation(T)
    rest = perm[~in_cal[perm]].tolist()
    n_rest = len(rest)
    spare = run.budget.remaining - n_rest * sp.c_min
    working = max(0.0, (1.0 - cfg.reserve_share) * spare)
    # b_t and the limits come from planned prices (outcome-independent)
    plan = SpendingPlan(run.budget.remaining, sp.c_min, n_rest, cfg.pacing)
    run.report.shadow_price = rule.prepare(run, rest, working)
    if run.loops.phase2 and rule.compiled:  # replay: the same loop, compiled
        from quorum.routing.quorum.compiled.phase2_loop import compiled_route

        humans = compiled_route(run, len(cal), rest, plan, working, rule.lam_)
        settle_many(run, [t for t in humans if run.human in run.answers.outputs(t)])
        return rest
    _route_python(run, cal, rest, rule, plan, spare, working)
    for t in rest:
        if run.human in run.answers.outputs(t):
            settle(run, t)
    return rest


def _route_python(
    run: QuorumRun,
    cal: list[int],
    rest: list[int],
    rule: RouteRule,
    plan: SpendingPlan,
    spare: float,
    working: float,
) -> None:
    """The loop of :func:`route_rest`, item by item (the reference path; live sources)."""
    cfg, sp, arms, T = run.cfg, run.spend, run.arms, run.T
    n_rest = len(rest)
    pending: list[tuple[int, str]] = []
    for j, t in enumerate(rest):
        arms.t_explore = len(cal) + j
        b = max(0.0, plan.left / run.budget.limit)
        x = arms.context(t, b, (len(cal) + j) / T, np.zeros(run.K))
        q = arms.q_values(x)
        allow = plan.allowance(j, working)
        allow_h = plan.allowance(j, spare) if rule.humans_on_spare else allow
        fits = _llms_that_fit(run, plan, j, allow)
        human_ok = plan.fits(sp.c_h, j, allow_h) and run.budget.can_afford(sp.c_h, human=True)
        ratio = route_tau_ratio(spare - plan.extra_spent, n_rest - j, sp.c_h, sp.c_min)
        k, mode = rule.choose(run, x, q, fits, human_ok, len(cal) + j, ratio)
        if k is None and mode == "none":
            run.log(t, "route", "-", "unaffordable", x, q)
            continue
        arm = run.human if k is None else run.llm_names[fits[k]]
        plan.take(sp.c_h if k is None else float(sp.c[fits[k]]))
        arms.mark_asked(t, arm, x)
        run.log(t, "route", arm, mode, x, q)
        pending.append((t, arm))
        if len(pending) >= cfg.batch_size:
            run.flush(pending)
    run.flush(pending)


def _llms_that_fit(run: QuorumRun, plan: SpendingPlan, j: int, allow: float) -> list[int]:
    """The live LLMs item j may take under ``allow``; else the cheapest live one while
    the floor is covered; else none."""
    sp = run.spend
    fits = [k for k in range(run.K) if plan.fits(sp.c[k], j, allow) and sp.alive(k)]
    if not fits:
        live = sp.live_cheapest()
        fits = [live[0]] if live and plan.covers_floor(j) else []
    return fits
