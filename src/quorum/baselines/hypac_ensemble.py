"""HyPAC (Zeng et al., 2026) as PAC labeling with uncertainty thresholds (``hypac-ensemble``).

This is the project's earlier HyPAC, kept under its own name: on data without recorded
confidence its uncertainty is the entropy over the task's models (``confidence="auto"``).
The form the QUORUM paper ran, one LLM per item by confidence tier, is ``hypac``
(:mod:`quorum.baselines.hypac`).

HyPAC has no public code; this follows the nearest public code, PAC labeling
(tijana-zrnic/pac-labels, ``pac_labeling``): ``num_draws`` items are drawn uniformly with
replacement, each draw is kept with probability ``pi`` (``xi ~ Bernoulli(pi)``) and the kept
items get a human label; the importance-weighted errors ``loss * xi / pi`` of the draws give
a one-sided CLT upper confidence bound (level ``alpha``) on the error of auto-labelling the
items with uncertainty below ``lambda``; a binary search over the sorted uncertainties finds
the largest ``lambda`` whose bound stays <= ``epsilon``. Items with ``u >= lambda`` go to the
human. Uncertainty is ``1 - confidence`` of the labelling LLM.

Our guesses (parameters):
- ``epsilon=None`` (default) sweeps ``epsilon_grid`` upwards and keeps the smallest epsilon
  whose allocation fits the budget, so that HyPAC is compared at equal budget; a number
  runs plain PAC labeling at that error target (capped at the budget).
- calibration labels take at most ``calibration_share`` of the human budget (``num_draws``
  is cut short when they would exceed it).
- dollars, with two or more LLMs: two thresholds ``lambda_S <= lambda_H``: the cheap LLM
  keeps ``u < lambda_S``, the strong LLM (``strong_llm``, default the most expensive)
  takes ``lambda_S <= u < lambda_H``, the human the rest. The strong LLM also answers the
  calibration items; every pair on a grid of ``n_grid`` uncertainty quantiles gets the
  bound of the cascade's weighted error and its cost; the sweep keeps the pair with the
  smallest bound that fits the budget (a fixed ``epsilon``: the cheapest pair within it),
  i.e. each item goes to the cheapest source that keeps the guarantee. The auditor
  setting has one threshold (cheapest LLM vs human).
- ``spend_all``: with the sweep, human budget that even ``epsilon = 0`` leaves unused is
  spent on the next most uncertain items (plain PAC labeling would leave it unused).
- only the CLT bound (their ``asymptotic=True``), not the betting (WSR) bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from quorum.baselines._common import (
    Routed,
    affordable_humans,
    item_trace,
    label_frame,
)
from quorum.baselines._confidence import ConfidenceBaseline, ConfidenceMode, plan_info
from quorum.baselines._signals import Signals
from quorum.baselines.cdi_rules import summary_errors
from quorum.baselines.pac_rules import finite_or_none, pac_draws, pac_threshold, two_thresholds
from quorum.routing.core.base import RoutingProblem
from quorum.routing.core.recorder import CallRecorder
from quorum.routing.core.run_core import RunCore
from quorum.routing.core.trace import DecisionTrace


@dataclass
class _Calibration:
    """HyPAC's calibration sample: the human-labelled items, the number of draws, and per
    draw the uncertainty and the weighted losses of the cheap (and strong) labels."""

    items: list[int]
    n_draws: int
    u_draw: np.ndarray
    z_cheap: np.ndarray
    z_strong: np.ndarray
    c_h: float
    c_s: float


class HyPACEnsembleRouter(ConfidenceBaseline):
    """PAC-calibrated uncertainty thresholds; epsilon swept to fit the budget.

    Parameters
    ----------
    epsilon: target error; None (default) = the smallest epsilon of ``epsilon_grid`` that
        fits the budget.
    alpha: 1 - confidence of the PAC guarantee (0.05).
    num_draws: calibration draws with replacement (500, as pac-labels).
    sampling_prob: ``pi``, probability that a draw is sent to the human (0.2, as the
        pac-labels README).
    calibration_share: most of the human budget calibration may use (0.5).
    epsilon_grid: epsilons tried when sweeping (default 0, 0.0025, ..., 1).
    strong_llm: "auto" (the most expensive LLM, dollars only), a name, or None (one
        threshold).
    spend_all: when sweeping, if even the smallest epsilon leaves human budget unused (or
        ties in a coarse uncertainty block the next threshold), send the next most
        uncertain items to humans until the budget is spent (True; False = plain PAC).
    n_grid: uncertainty quantiles tried for the two thresholds (dollars, 101).
    llm_label, confidence, labeller, entropy_annotators: as in ``CDIRouter``.
    """

    name = "hypac-ensemble"

    def __init__(
        self,
        epsilon: float | None = None,
        alpha: float = 0.05,
        num_draws: int = 500,
        sampling_prob: float = 0.2,
        calibration_share: float = 0.5,
        epsilon_grid: Sequence[float] | None = None,
        strong_llm: str | None = "auto",
        spend_all: bool = True,
        n_grid: int = 101,
        llm_label: Literal["labeller", "majority"] = "labeller",
        confidence: ConfidenceMode = "auto",
        labeller: str | None = None,
        entropy_annotators: list[str] | None = None,
    ) -> None:
        super().__init__(confidence, labeller, entropy_annotators)
        if not 0.0 < sampling_prob <= 1.0 or not 0.0 < alpha < 1.0:
            raise ValueError("need 0 < sampling_prob <= 1 and 0 < alpha < 1")
        if not 0.0 <= calibration_share <= 1.0 or num_draws < 0:
            raise ValueError("need 0 <= calibration_share <= 1 and num_draws >= 0")
        if llm_label not in ("labeller", "majority"):
            raise ValueError("llm_label must be 'labeller' or 'majority'")
        self.epsilon = epsilon
        self.alpha = alpha
        self.num_draws = num_draws
        self.sampling_prob = sampling_prob
        self.calibration_share = calibration_share
        self.epsilon_grid = None if epsilon_grid is None else [float(e) for e in epsilon_grid]
        self.strong_llm = strong_llm
        self.spend_all = spend_all
        self.n_grid = n_grid
        self.llm_label = llm_label

    def _strong(self, problem: RoutingProblem, labeller: str) -> str | None:
        if problem.setting != "dollars" or self.strong_llm is None:
            return None
        names = [a.name for a in problem.llms]
        s = names[-1] if self.strong_llm == "auto" else self.strong_llm
        if s not in names:
            raise ValueError(f"strong_llm {s!r} is not one of the task's LLMs {names}")
        return None if s == labeller else s

    def _route(self, run: RunCore) -> Routed:
        """HyPAC: signals, a calibration sample, thresholds on the uncertainty, routing."""
        problem, rec, ids, T = run.problem, run.rec, run.ids, run.T
        plan, sig, _order, cap = self.buy_signals(problem, rec, run.budget, run.rng)
        strong = self._strong(problem, plan.labeller)
        llm_out = sig.aggregate if self.llm_label == "majority" else sig.label
        u = sig.uncertainty.copy()
        finite = u[~np.isnan(u)]
        u[np.isnan(u)] = finite.max() if len(finite) else 1.0  # unknown: most uncertain seen
        cal = self._calibrate(run, sig, u, cap, strong, llm_out)
        is_cal = np.zeros(T, dtype=bool)
        is_cal[cal.items] = True
        open_ = sig.labelled & ~is_cal
        humans_left = max(0, cap - len(cal.items))
        lam_h, lam_s, chosen_eps, fitted = self._thresholds(run, u, open_, cal, strong, humans_left)
        # ---- route: most uncertain first, so a capped run keeps the hardest items
        by_u = [int(t) for t in np.lexsort((run.rng.random(T), -u)) if open_[t]]
        n_afford = affordable_humans(rec, humans_left)
        to_h = [t for t in by_u if u[t] >= lam_h][:n_afford]
        plan_s = {t for t in by_u if lam_s <= u[t] < lam_h} if strong else set()
        n_fill = 0
        if self.spend_all and self.epsilon is None:
            n_fill = self._fill_to_budget(run, by_u, to_h, plan_s, n_afford, strong)
        rec.annotate_many([(ids[t], run.human) for t in to_h], phase="route")
        to_s: list[int] = []
        if strong:
            to_s = [t for t in by_u if t in plan_s]
            souts = rec.annotate_many([(ids[t], strong) for t in to_s], phase="route")
            to_s = [t for t, o in zip(to_s, souts, strict=True) if o is not None]
        outputs = {ids[t]: llm_out[t] for t in range(T)}
        for t in to_s:
            o = rec.outputs(ids[t]).get(strong)
            if o is not None:
                outputs[ids[t]] = o
        trace = self._trace(run, plan.labeller, strong, cal.items, is_cal, by_u, to_h, to_s, sig)
        info = plan_info(plan, sig)
        info.update(
            {
                "rule": "PAC labeling threshold on uncertainty (pac-labels)",
                "epsilon": chosen_eps,
                "epsilon_choice": fitted,
                "lambda_human": finite_or_none(lam_h),
                "lambda_strong": finite_or_none(lam_s) if strong else None,
                "strong_llm": strong,
                "calibration_labels": len(cal.items),
                "calibration_draws": cal.n_draws,
                "n_routed_human": len(to_h),
                "n_filled_to_budget": n_fill,
                "n_routed_strong": len(to_s),
                "llm_label": self.llm_label,
                "degraded": bool(sig.estimated.sum() < T),
            }
        )
        return Routed(label_frame(ids, rec, outputs), info, trace)

    def _trace(
        self,
        run: RunCore,
        labeller: str,
        strong: str | None,
        cal_items: list[int],
        is_cal: np.ndarray,
        by_u: list[int],
        to_h: list[int],
        to_s: list[int],
        sig: Signals,
    ) -> DecisionTrace:
        """One trace row per item, in the order decided: calibration (``cal_items``, the
        mask ``is_cal``), then by uncertainty, then the items without a label of the
        labeller (mode ``unknown``)."""
        T = run.T
        open_ = sig.labelled & ~is_cal
        keep = "keep" if self.llm_label == "labeller" else "majority"  # the LLM label kept
        arm = np.full(T, labeller, dtype=object)
        mode = np.full(T, keep, dtype=object)
        mode[~open_] = "unknown"  # no label of the labeller to route on
        arm[to_s], mode[to_s] = strong, "tier"
        arm[to_h], mode[to_h] = run.human, "escalate"
        phase = np.full(T, "route", dtype=object)
        arm[cal_items], mode[cal_items], phase[cal_items] = run.human, "calibration", "calibration"
        rest = np.flatnonzero(~open_ & ~is_cal)
        rows = np.concatenate([np.asarray(cal_items, dtype=int), by_u, rest]).astype(int)
        return item_trace(run, rows, arm, mode, phase, uncertainty=sig.uncertainty)

    def _calibrate(
        self,
        run: RunCore,
        sig: Signals,
        u: np.ndarray,
        cap: int,
        strong: str | None,
        llm_out: np.ndarray,
    ) -> _Calibration:
        """The calibration draws (pac-labels: uniform with replacement, xi ~ Bern(pi)),
        the human (and strong LLM) labels of the kept items, and the weighted losses."""
        rec, rng, ids, human = run.rec, run.rng, run.ids, run.human
        summaries = not run.problem.task.type.has_labels
        c_h = rec.price(human)
        c_s = rec.price(strong) if strong else 0.0
        n_h_money = affordable_humans(rec, cap)
        per_cal = c_h + c_s
        cal_cap = (
            int(
                np.floor(
                    self.calibration_share * min(n_h_money * c_h, rec.budget.remaining) / per_cal
                    + 1e-9
                )
            )
            if per_cal > 0
            else n_h_money
        )
        cal_cap = min(cal_cap, n_h_money)
        pool = np.flatnonzero(sig.labelled)
        draws_i, draws_xi, cal = pac_draws(rng, pool, self.num_draws, self.sampling_prob, cal_cap)
        outs = rec.annotate_many([(ids[t], human) for t in cal], phase="calibration")
        truth = {t: o.output for t, o in zip(cal, outs, strict=True) if o is not None and o.ok}
        strong_truth: dict[int, str | None] = {}
        if strong and cal:
            souts = rec.annotate_many([(ids[t], strong) for t in cal], phase="calibration")
            strong_truth = {
                t: (o.output if o is not None and o.ok else None)
                for t, o in zip(cal, souts, strict=True)
            }
        loss_cheap = self._losses(rec, cal, truth, llm_out, summaries)
        strong_pred = np.array([strong_truth.get(t) for t in range(run.T)], dtype=object)
        loss_strong = self._losses(rec, cal, truth, strong_pred, summaries) if strong else {}
        di = np.array(draws_i, dtype=int)
        w = np.array(draws_xi, dtype=float) / self.sampling_prob
        z_cheap = np.array([loss_cheap.get(t, 1.0) for t in di]) * w if len(di) else np.empty(0)
        z_strong = (
            np.array([loss_strong.get(t, 1.0) for t in di]) * w
            if len(di) and strong
            else np.empty(0)
        )
        u_draw = u[di] if len(di) else np.empty(0)
        return _Calibration(cal, len(draws_i), u_draw, z_cheap, z_strong, c_h, c_s)

    def _thresholds(
        self,
        run: RunCore,
        u: np.ndarray,
        open_: np.ndarray,
        cal: _Calibration,
        strong: str | None,
        humans_left: int,
    ) -> tuple[float, float, float | None, str]:
        """(lambda_H, lambda_S, epsilon, how): a fixed epsilon, or the smallest epsilon
        that fits the budget."""
        money = run.rec.budget.remaining
        if strong:
            # cheapest source per item: search every (lambda_S, lambda_H) pair on a grid of
            # uncertainty quantiles; sweep = the smallest bound that fits the budget
            grid = np.append(
                np.unique(
                    np.quantile(u[open_] if open_.any() else u, np.linspace(0.0, 1.0, self.n_grid))
                ),
                np.inf,
            )
            pairs = two_thresholds(
                grid, u[open_], cal.u_draw, cal.z_cheap, cal.z_strong, self.alpha, cal.c_s, cal.c_h
            )
            fits = (pairs["cost"] <= money + 1e-9) & (pairs["n_human"] <= humans_left)
            if self.epsilon is not None:
                ok = pairs[pairs["bound"] <= self.epsilon]
                pick = ok.sort_values(["cost", "bound"]).iloc[0] if len(ok) else pairs.iloc[0]
                chosen_eps, fitted = float(self.epsilon), "fixed-epsilon"
            else:
                pick = pairs[fits].sort_values(["bound", "cost"]).iloc[0]
                chosen_eps, fitted = float(pick["bound"]), "smallest bound that fits"
            return float(pick["lam_h"]), float(pick["lam_s"]), chosen_eps, fitted
        candidates = np.append(np.unique(u), np.inf)  # inf: every item auto-labelled
        if self.epsilon is not None:
            lam_h = pac_threshold(
                candidates, cal.u_draw, cal.z_cheap, float(self.epsilon), self.alpha
            )
            return lam_h, float("inf"), float(self.epsilon), "fixed-epsilon"
        for eps in sorted(self.epsilon_grid or np.linspace(0.0, 1.0, 401).tolist()):
            lam = pac_threshold(candidates, cal.u_draw, cal.z_cheap, eps, self.alpha)
            n_hum = int((open_ & (u >= lam)).sum())
            if n_hum <= humans_left and n_hum * cal.c_h <= money + 1e-9:
                return lam, float("inf"), float(eps), "smallest epsilon that fits"
        return float("inf"), float("inf"), None, "fallback: no human beyond calibration"

    @staticmethod
    def _fill_to_budget(
        run: RunCore,
        by_u: list[int],
        to_h: list[int],
        plan_s: set[int],
        n_afford: int,
        strong: str | None,
    ) -> int:
        """epsilon = 0 (or the coarse uncertainty) left budget unused: lower the human
        threshold to spend it on the next most uncertain items (``to_h``, ``plan_s``
        change in place); returns how many were added."""
        rec = run.rec
        c_h = rec.price(run.human)
        c_s = rec.price(strong) if strong else 0.0
        money = rec.budget.remaining - len(to_h) * c_h - len(plan_s) * c_s
        chosen = set(to_h)
        n_fill = 0
        for t in by_u:
            if len(to_h) >= n_afford:
                break
            if t in chosen:
                continue
            need = c_h - (c_s if t in plan_s else 0.0)
            if money + 1e-12 < need:
                break
            money -= need
            to_h.append(t)
            plan_s.discard(t)
            n_fill += 1
        return n_fill

    @staticmethod
    def _losses(
        rec: CallRecorder,
        items: list[int],
        truth: dict[int, str],
        pred: np.ndarray,
        summaries: bool,
    ) -> dict[int, float]:
        """0-1 loss (labels) or ``1 - cos`` (summaries) of ``pred`` on the human-labelled items."""
        have = [t for t in items if t in truth]
        if not summaries:
            return {t: 0.0 if pred[t] is not None and pred[t] == truth[t] else 1.0 for t in have}
        errs = summary_errors(rec.source, [(t, truth[t]) for t in have], pred)
        return dict(zip(have, errs, strict=True))
