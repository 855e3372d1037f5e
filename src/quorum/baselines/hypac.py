"""HyPAC (Zeng et al., 2026) as the QUORUM paper ran it: one LLM per item by confidence tier.

What the authors' code does (amazon-science/QUORUM, ``routers/pac_router.py``), re-implemented:
the uncertainty of an item is ``U = 1 - confidence`` of the labelling LLM. A random
calibration set (``calibration_share`` = 15 % of the human budget) gets a human label and
every tier's answer; each calibration item is kept with probability ``pi`` (weight
``xi / pi``). Tiers are the LLMs from the cheapest up, then the human. Every
non-decreasing tuple of thresholds ``u_1 <= ... <= u_k`` on the calibration uncertainties
sends an item to tier ``#{j: u_j < U}``; among the tuples whose one-sided CLT upper bound
(level ``alpha``, ``ddof=1``) on the weighted 0-1 loss of the calibration items is at most
``epsilon``, the one with the smallest calibration cost wins (none passes: thresholds 0,
every item with ``U > 0`` to the human). The other items are routed most uncertain first;
auditor: a human-tier item goes to the strongest LLM once the human budget is spent;
dollars: an item steps down to the dearest tier the money left still pays for.

Ours (the authors' code does not need them): every call is paid when it is made (their
code charges every LLM on every item up front in dollars and counts no LLM cost in the
auditor setting); the labeller's answer and confidence are bought for every item and a
tier's answer only where it is used (calibration, routed items); the threshold grid is cut
to ``n_grid`` quantiles of the calibration uncertainties when there are more distinct
values (the authors' triple loop over every value is cubic); items whose confidence the
money could not buy keep the labeller's answer; summaries use ``1 - cos`` as the loss.
"""

from __future__ import annotations

from itertools import combinations_with_replacement

import numpy as np
from scipy.stats import norm

from quorum.baselines._common import Routed, affordable_humans, item_trace, label_frame
from quorum.baselines._confidence import (
    ConfidenceBaseline,
    ConfidenceMode,
    Substitute,
    extra_cost,
    plan_info,
)
from quorum.baselines._signals import Signals
from quorum.baselines.cdi_rules import summary_errors
from quorum.routing.core.base import AnnotationSource, RoutingProblem
from quorum.routing.core.recorder import CallRecorder
from quorum.routing.core.run_core import RunCore
from quorum.routing.core.trace import DecisionTrace


def tier_of(u: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Tier of each uncertainty: how many thresholds lie strictly below it."""
    return (np.asarray(u)[None, :] > np.asarray(thresholds)[:, None]).sum(axis=0)


def clt_ucb(x: np.ndarray, alpha: float) -> np.ndarray:
    """One-sided CLT upper bound of the row means of ``x`` (sample std, ``ddof=1``)."""
    n = x.shape[-1]
    if n == 0:
        return np.full(x.shape[:-1], np.inf)
    std = x.std(axis=-1, ddof=1) if n > 1 else np.zeros(x.shape[:-1])
    return x.mean(axis=-1) + norm.ppf(1.0 - alpha) * std / np.sqrt(n)


def best_thresholds(
    u_cal: np.ndarray,
    loss: np.ndarray,
    weights: np.ndarray,
    tier_cost: np.ndarray,
    epsilon: float,
    alpha: float,
    n_grid: int = 41,
    chunk: int = 4096,
) -> tuple[np.ndarray, bool]:
    """The cheapest threshold tuple whose bound on the weighted loss is at most ``epsilon``.

    ``loss[j, i]``: loss of tier ``j`` on calibration item ``i`` (the last tier, the
    human, is 0); ``tier_cost[j]``: its price. Returns (thresholds, found); not found:
    zeros (every item with ``U > 0`` to the human), as the authors' code.
    """
    k = loss.shape[0] - 1
    grid = np.unique(u_cal)
    if len(grid) > n_grid:
        grid = np.unique(np.quantile(u_cal, np.linspace(0.0, 1.0, n_grid), method="lower"))
    combos = np.array(list(combinations_with_replacement(range(len(grid)), k)), dtype=np.int64)
    best, best_cost = None, np.inf
    cols = np.arange(len(u_cal))
    # tier of item i under thresholds (g_1..g_k): sum_j [u_i > grid[g_j]], from one row per
    # grid value (small integers: the same tiers as comparing every combination anew)
    above = (u_cal[None, :] > grid[:, None]).astype(np.uint8)  # (grid, n)
    weighted = loss * weights[None, :]  # x = weighted[tier_i, i]: the same products
    for s in range(0, len(combos), chunk):
        idx = combos[s : s + chunk]
        tiers = np.zeros((len(idx), len(u_cal)), dtype=np.uint8)  # (c, n)
        for j in range(k):
            tiers += above[idx[:, j]]
        cost = tier_cost[tiers].sum(axis=1)
        # only a combination cheaper than the best so far can replace it (strict '<'), so
        # the bound is computed for those alone (row by row: the same numbers)
        cand = np.flatnonzero(cost < best_cost)
        if len(cand) == 0:
            continue
        x = weighted[tiers[cand], cols[None, :]]
        ok = clt_ucb(x, alpha) <= epsilon
        if not ok.any():
            continue
        cost_ok = np.where(ok, cost[cand], np.inf)
        j = int(np.argmin(cost_ok))  # first of the cheapest, as the authors' strict '<'
        if cost_ok[j] < best_cost:
            best, best_cost = grid[idx[cand[j]]], float(cost_ok[j])
    if best is None:
        return np.zeros(k), False
    return np.asarray(best, dtype=np.float64), True


def tier_losses(
    rec: CallRecorder,
    items: list[int],
    truth: dict[int, str],
    pred: np.ndarray,
    summaries: bool,
) -> np.ndarray:
    """Loss of ``pred`` on each calibration item: 0-1 (labels) or ``1 - cos`` (summaries);
    1 where the item has no human answer or no prediction."""
    out = np.ones(len(items))
    have = [j for j, t in enumerate(items) if t in truth]
    if not summaries:
        for j in have:
            t = items[j]
            out[j] = 0.0 if pred[t] is not None and pred[t] == truth[t] else 1.0
        return out
    errs = summary_errors(rec.source, [(items[j], truth[items[j]]) for j in have], pred)
    out[have] = errs
    return out


class HyPACRouter(ConfidenceBaseline):
    """One source per item by confidence tier (the QUORUM paper's HyPAC).

    Parameters
    ----------
    epsilon: error target of the PAC bound (0.1, as the authors' code).
    alpha: 1 - confidence of the bound (0.05).
    sampling_prob: ``pi``, chance that a calibration item counts (weight ``1 / pi``; 0.5).
    calibration_share: calibration size as a share of the human budget (0.15; dollars:
        of the human labels the money left after the labels and confidences pays for).
    n_grid: most distinct threshold values tried per tier (41 quantiles).
    tiers: the LLM tiers, cheapest first (default: the labeller, then the task's other
        LLMs by price).
    confidence, labeller, entropy_annotators, substitute: see ``ConfidenceBaseline``
        (default ``confidence="paper"``: the labeller's own confidence).
    """

    name = "hypac"

    def __init__(
        self,
        epsilon: float = 0.1,
        alpha: float = 0.05,
        sampling_prob: float = 0.5,
        calibration_share: float = 0.15,
        n_grid: int = 41,
        tiers: list[str] | None = None,
        confidence: ConfidenceMode = "paper",
        labeller: str | None = None,
        entropy_annotators: list[str] | None = None,
        substitute: Substitute = "agreement",
    ) -> None:
        super().__init__(confidence, labeller, entropy_annotators, substitute)
        if not 0.0 <= epsilon <= 1.0 or not 0.0 < alpha < 1.0:
            raise ValueError("need 0 <= epsilon <= 1 and 0 < alpha < 1")
        if not 0.0 < sampling_prob <= 1.0 or not 0.0 <= calibration_share <= 1.0:
            raise ValueError("need 0 < sampling_prob <= 1 and 0 <= calibration_share <= 1")
        if n_grid < 2:
            raise ValueError("n_grid must be at least 2")
        self.epsilon = epsilon
        self.alpha = alpha
        self.sampling_prob = sampling_prob
        self.calibration_share = calibration_share
        self.n_grid = n_grid
        self.tiers = list(tiers) if tiers else None

    def tier_names(self, problem: RoutingProblem, source: AnnotationSource) -> list[str]:
        """The LLM tiers, the labeller first."""
        lab = self.plan(problem, source).labeller
        names = [a.name for a in problem.llms]
        if self.tiers:
            unknown = sorted(set(self.tiers) - set(names))
            if unknown:
                raise ValueError(f"tiers {unknown} are not LLMs of the task ({names})")
            rest = [a for a in self.tiers if a != lab]
        else:
            rest = sorted((a for a in names if a != lab), key=source.price)
        return [lab, *rest]

    def extra_cost_estimate(self, problem: RoutingProblem, source: AnnotationSource) -> float:
        """Confidence on every item plus, at most, every other tier's answer on every item."""
        if not problem.llms:
            return 0.0
        plan = self.plan(problem, source)
        tiers = self.tier_names(problem, source)
        more = sum(source.price(a) for a in tiers[1:] if a not in plan.others)
        return extra_cost(plan, problem.n_items) + problem.n_items * more

    def _route(self, run: RunCore) -> Routed:
        """HyPAC: signals, a calibration sample, thresholds per tier, routing."""
        problem, rec, ids, T, human = run.problem, run.rec, run.ids, run.T, run.human
        plan, sig, _order, cap = self.buy_signals(problem, rec, run.budget, run.rng)
        tiers = self.tier_names(problem, rec.source)
        k = len(tiers)
        u = sig.uncertainty
        known = sig.estimated & sig.labelled & ~np.isnan(u)
        cal, th, found = self._calibrate(run, sig, known, tiers, cap)
        # ---- route the other items, most uncertain first
        is_cal = np.zeros(T, dtype=bool)
        is_cal[cal] = True
        open_ = np.flatnonzero(known & ~is_cal)
        by_u = open_[np.lexsort((run.rng.random(len(open_)), -u[open_]))]
        ideal = tier_of(u[by_u], th) if len(by_u) else np.empty(0, dtype=int)
        route = self._assign(run, by_u, ideal, tiers, max(0, cap - len(cal)))
        to_h = [int(t) for t in by_u if route[t] == k]
        rec.annotate_many([(ids[t], human) for t in to_h], phase="route")
        reqs = [
            (ids[t], tiers[route[t]])
            for t in by_u
            if 0 < route[t] < k and tiers[route[t]] not in rec.asked(ids[t])
        ]
        rec.annotate_many(reqs, phase="route")
        outputs = {ids[t]: sig.label[t] for t in range(T)}
        for t in by_u:
            if 0 < route[t] < k:
                o = rec.outputs(ids[t]).get(tiers[route[t]])
                if o is not None:
                    outputs[ids[t]] = o
        names = np.array([*tiers, "human"], dtype=object)
        where = names[route]
        where[~known] = tiers[0]
        where[cal] = "calibration"
        trace = self._trace(run, cal, by_u, route, tiers, known, u)
        info = plan_info(plan, sig)
        info.update(
            {
                "rule": "cheapest tier per item under a PAC bound (authors' pac_router)",
                "tiers": tiers,
                "thresholds": [float(x) for x in th],
                "thresholds_found": bool(found),
                "epsilon": float(self.epsilon),
                "calibration_labels": len(cal),
                "n_routed_human": len(to_h),
                "n_per_tier": {str(n): int((where[known & ~is_cal] == n).sum()) for n in names},
                "degraded": bool(sig.estimated.sum() < T),
            }
        )
        return Routed(label_frame(ids, rec, outputs), info, trace)

    def _calibrate(
        self, run: RunCore, sig: Signals, known: np.ndarray, tiers: list[str], cap: int
    ) -> tuple[list[int], np.ndarray, bool]:
        """A random share of the human budget, every tier answers; (the calibration items,
        the thresholds of :func:`best_thresholds`, whether they meet epsilon)."""
        rec, rng, ids, human = run.rec, run.rng, run.ids, run.human
        c_h = rec.price(human)

        def missing(t: int) -> list[str]:
            asked = rec.asked(ids[t])
            return [a for a in tiers[1:] if a not in asked]

        n_h = affordable_humans(rec, cap)
        n_cal = max(1, int(self.calibration_share * n_h)) if n_h > 0 else 0
        pool = [int(t) for t in rng.permutation(np.flatnonzero(known))]
        cal: list[int] = []
        money = rec.budget.remaining
        for t in pool:
            if len(cal) >= n_cal:
                break
            need = c_h + sum(rec.price(a) for a in missing(t))
            if need > money + 1e-12:
                break
            money -= need
            cal.append(t)
        outs = rec.annotate_many([(ids[t], human) for t in cal], phase="calibration")
        truth = {t: o.output for t, o in zip(cal, outs, strict=True) if o is not None and o.ok}
        rec.annotate_many([(ids[t], a) for t in cal for a in missing(t)], phase="calibration")
        summaries = not run.problem.task.type.has_labels
        preds = [sig.label] + [self._answers(rec, ids, a) for a in tiers[1:]]
        loss = np.zeros((len(tiers) + 1, len(cal)))
        for j in range(len(tiers)):
            loss[j] = tier_losses(rec, cal, truth, preds[j], summaries)
        w = (rng.random(len(cal)) < self.sampling_prob) / self.sampling_prob
        tier_cost = np.array([rec.price(a) for a in tiers] + [c_h])
        u = sig.uncertainty
        th, found = best_thresholds(
            u[cal], loss, w, tier_cost, self.epsilon, self.alpha, self.n_grid
        )
        return cal, th, found

    @staticmethod
    def _trace(
        run: RunCore,
        cal: list[int],
        by_u: np.ndarray,
        route: np.ndarray,
        tiers: list[str],
        known: np.ndarray,
        u: np.ndarray,
    ) -> DecisionTrace:
        """The decisions in order: the calibration sample (human), the items routed most
        uncertain first (tier 0 kept, a higher tier, the human), then the items without an
        uncertainty (tier 0)."""
        k, T = len(tiers), run.T
        arm = np.array([*tiers, run.human], dtype=object)[route]
        mode = np.where(route == k, "escalate", np.where(route > 0, "tier", "keep"))
        mode = mode.astype(object)
        arm[~known], mode[~known] = tiers[0], "unknown"
        phase = np.full(T, "route", dtype=object)
        arm[cal], mode[cal], phase[cal] = run.human, "calibration", "calibration"
        seen = np.zeros(T, dtype=bool)
        seen[cal] = True
        seen[by_u] = True
        rows = np.concatenate([np.asarray(cal, dtype=int), by_u, np.flatnonzero(~seen)])
        return item_trace(run, rows, arm, mode, phase, uncertainty=u)

    @staticmethod
    def _assign(
        run: RunCore, by_u: np.ndarray, ideal: np.ndarray, tiers: list[str], humans_left: int
    ) -> np.ndarray:
        """Each item's tier (``len(tiers)``: the human): its ideal tier, or the next
        cheaper one the money left pays for (an answer already bought is free)."""
        rec, ids, k = run.rec, run.ids, len(tiers)
        c_h = rec.price(run.human)
        money = rec.budget.remaining
        route = np.zeros(run.T, dtype=int)
        for t, j in zip(by_u, ideal, strict=True):
            j = int(j)
            if j == k and humans_left <= 0:
                j = k - 1  # auditor: no human left, the strongest LLM
            while j > 0:
                price = c_h if j == k else rec.price(tiers[j])
                if j < k and tiers[j] in rec.asked(ids[t]):
                    price = 0.0
                if price <= money + 1e-12:
                    money -= price
                    break
                j -= 1
            if j == k:
                humans_left -= 1
            route[t] = j
        return route

    @staticmethod
    def _answers(rec: CallRecorder, ids: np.ndarray, name: str) -> np.ndarray:
        """The answers of ``name`` bought so far, aligned with ``ids`` (None elsewhere)."""
        return np.array([rec.outputs(i).get(name) for i in ids], dtype=object)
