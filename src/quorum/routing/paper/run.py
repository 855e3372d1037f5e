"""The state and steps of one paper-preset run (:class:`PaperRun`): the authors' code's
dollars loop (calibration, routing, refinement) and auditor split, over the rules of
:mod:`~quorum.routing.paper.rules`. Set-up, trace and result come from the shared run
core (:mod:`~quorum.routing.core.run_core`, :class:`~quorum.routing.core.trace.DecisionTrace`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from quorum.routing.core.base import AnnotationSource, RoutingProblem, RoutingResult
from quorum.routing.core.budget import Budget
from quorum.routing.core.outputs import LABEL_COLUMNS
from quorum.routing.core.recorder import CallRecorder
from quorum.routing.core.run_core import RunCore, build_result
from quorum.routing.core.trace import DecisionTrace
from quorum.routing.paper.rules import (
    auditor_calibration_size,
    base_from_problem,
    paper_calibration_size,
    paper_select,
    paper_uncertainty,
    per_step_arms,
    refinement_order,
)
from quorum.routing.paper.votes import PaperVotes
from quorum.routing.quorum.audit.auditing import calibration_error_mask, error_order
from quorum.routing.quorum.policy import decayed_epsilon
from quorum.routing.quorum.posterior import BayesianLinearPosterior
from quorum.tasks.summarization import OutputEmbeddings

__all__ = ["PaperRun"]

#: tolerance of money comparisons (the code compares floats directly)
_TOL = 1e-9
#: a budget no free call can exhaust (authors' accounting)
_UNMETERED = 1e12


class PaperRun:
    """State of one paper-preset run (the estimator keeps only its parameters)."""

    def __init__(
        self,
        cfg: Any,
        problem: RoutingProblem,
        source: AnnotationSource,
        budget: Budget,
        seed: int,
    ) -> None:
        self.cfg = cfg  # the PaperQuorumRouter: its parameters
        self.core = RunCore.open(problem, source, budget, seed)
        self.p = problem
        self.source = source
        self.budget = budget
        self.seed = seed
        self.rng = self.core.rng
        self.rec = self.core.rec
        self.free = (
            CallRecorder(problem.task, source, Budget(_UNMETERED))
            if cfg.authors_accounting
            else None
        )
        self.kind = problem.task.kind
        self.ids = problem.item_ids
        self.T = len(self.ids)
        self.llm_names = [a.name for a in problem.llms]  # cheapest first
        self.K = len(self.llm_names)
        self.human = problem.task.human
        self.c = np.array([self.rec.price(a) for a in self.llm_names], dtype=np.float64)
        self.c_h = float(self.rec.price(self.human))
        self.cheapest = int(np.argmin(self.c))
        # the code's arm order (claude, nova_pro, qwen at 0.05, 0.03, 0.01): dearest first
        self.arm_order = sorted(range(self.K), key=lambda k: -self.c[k])
        self.base, feature_source = base_from_problem(problem)
        self.progress = np.arange(self.T) / max(self.T - 1, 1)
        self.dim = self.base.shape[1] + 2 + self.K
        self.post = [
            BayesianLinearPosterior(self.dim, 0.0, cfg.prior_var_llm, cfg.noise_var)
            for _ in range(self.K)
        ]
        self.mask = np.zeros((self.T, self.K))
        self.agg = self.kind.aggregator(cfg.w_human, cfg.w_llm, cfg.consensus_threshold)
        self.embed = OutputEmbeddings(source.embed_outputs)
        by_meaning = self.embed if self.kind.embeds_outputs else None
        self.votes = PaperVotes(self.T, self.human, self.agg, cfg.consensus_threshold, by_meaning)
        self.trace = DecisionTrace(self.llm_names)
        self.info: dict = {
            "accounting": "authors" if cfg.authors_accounting else "paid",
            "feature_source": feature_source,
            "unpaid_cost": 0.0,
            "unpaid_calls": 0,
        }

    # ------------------------------------------------------------ helpers
    def context(self, t: int, b: float | None = None) -> np.ndarray:
        """x_t = [base(d_t), b_t, p_t, m_t]; b_t is the money left / B unless given."""
        b = self.budget.remaining_fraction if b is None else b
        return np.concatenate([self.base[t], [b, self.progress[t]], self.mask[t]])

    def contexts(self, idx: np.ndarray, b: float) -> np.ndarray:
        n = len(idx)
        return np.hstack(
            [self.base[idx], np.full((n, 1), b), self.progress[idx, None], self.mask[idx]]
        )

    def qualities(self, x: np.ndarray) -> np.ndarray:
        """clip(mu_a^T x, 0, 1) for every LLM (our order)."""
        return np.clip([post.pull(x) for post in self.post], 0.0, 1.0)

    def mean_variance(self, X: np.ndarray) -> np.ndarray:
        """(1/K) sum_a x^T Sigma_a x for the rows of X."""
        return np.mean([post.variance(X) for post in self.post], axis=0)

    def epsilon(self, t: int) -> float:
        return decayed_epsilon(t, self.cfg.epsilon0, self.cfg.gamma)

    def similarity(self, out: str | None, ref: str) -> float:
        """The kind's similarity: 1(out == ref) for labels; clip(cos, 0, 1) of the embeddings
        for summaries."""
        return self.agg.similarity(out, ref, self.embed)

    def _log(self, t: int, phase: str, arm: str, mode: str, x=None, priority=None) -> None:
        self.trace.append(
            phase,
            self.ids[t],
            arm,
            mode,
            self.epsilon(t),
            float(x[self.base.shape[1]]) if x is not None else np.nan,
            float(self.progress[t]),
            self.c_h if arm == self.human else self.rec.price(arm),
            self.budget.remaining,
            priority,
            None if x is None else self.qualities(x),
        )

    @staticmethod
    def _out(outcome) -> str | None:
        return outcome.output if outcome is not None and outcome.ok else None

    def buy(self, t: int, arm: str, phase: str) -> str | None:
        return self._out(self.rec.annotate(self.ids[t], arm, phase=phase))

    def get_free(self, requests: list[tuple[int, str]], phase: str) -> list[str | None]:
        """Calls the authors' code makes without paying (authors' accounting only)."""
        assert self.free is not None
        outs = self.free.annotate_many([(self.ids[t], a) for t, a in requests], phase=phase)
        self.info["unpaid_calls"] += len(requests)
        self.info["unpaid_cost"] = round(self.free.budget.spent, 9)
        return [self._out(o) for o in outs]

    def record(self, t: int, arm: str, out: str | None) -> None:
        """Item t got ``out`` from ``arm``: an LLM enters m_t; the vote is added."""
        if arm != self.human:
            self.mask[t, self.llm_names.index(arm)] = 1.0
        self.votes.add(t, arm, out)

    # ------------------------------------------------------------ dollars
    def dollars(self) -> None:
        cfg, T = self.cfg, self.T
        B = self.budget.limit
        if B <= 0 or self.c.min() > B + _TOL:
            self.info["note"] = "budget below one annotation: nothing was annotated"
            self.info["n_calibration"] = 0
            return
        # D0_t: the prior's x^T Sigma x at b = 1, before any spending (the code's difficulty)
        X0 = self.contexts(np.arange(T), 1.0)
        self.d0 = self.mean_variance(X0)
        self._calibrate()
        self._route()
        if cfg.max_annotations > 1:
            self._refine()

    def _calibrate(self) -> None:
        cfg = self.cfg
        per_item = None if cfg.authors_accounting else self.c_h + float(self.c.sum())
        n_cal = paper_calibration_size(
            self.budget.limit, self.c_h, cfg.calibration_share, per_item, self.T
        )
        order = np.argsort(-paper_uncertainty(self.base), kind="stable")[:n_cal]
        done = 0
        for t in order:
            t = int(t)
            need = self.c_h + (0.0 if cfg.authors_accounting else float(self.c.sum()))
            if not self.budget.can_afford(need - _TOL, human=True):
                break
            reqs = [(self.ids[t], self.human)]
            if not cfg.authors_accounting:
                reqs += [(self.ids[t], a) for a in self.llm_names]
            outs = [self._out(o) for o in self.rec.annotate_many(reqs, phase="calibration")]
            y = outs[0]
            answers = (
                self.get_free([(t, a) for a in self.llm_names], "unpaid-calibration")
                if cfg.authors_accounting
                else outs[1:]
            )
            self.votes.add(t, self.human, y)
            x = self.context(t)
            self._log(t, "calibration", self.human, "calibration", x)
            done += 1
            if y is None:
                continue
            for k in range(self.K):
                self.post[k].update(x, self.similarity(answers[k], y))
        self.info["n_calibration"] = done

    def _choose(self, t: int, llms: list[int], human_ok: bool) -> tuple[str, str, np.ndarray]:
        x = self.context(t)
        q = self.qualities(x)
        cand = [k for k in self.arm_order if k in llms]
        choice, mode = paper_select(
            q[cand], human_ok=human_ok, epsilon=self.epsilon(t), tau_h=self.cfg.tau_h, rng=self.rng
        )
        if choice is None:
            return (self.human if mode != "none" else "-"), mode, x
        return self.llm_names[cand[choice]], mode, x

    def _route(self) -> None:
        uncovered = [t for t in range(self.T) if not self.votes.lists[t]]
        n = len(uncovered)
        prices = np.append(self.c, self.c_h)
        routed = 0
        for j, t in enumerate(uncovered):
            avail = per_step_arms(self.budget.remaining, n - j, prices, self.cheapest)
            if avail is None:
                break
            human_ok = self.K in avail and self.budget.can_afford(self.c_h, human=True)
            # the rule compares prices with a float tolerance; the budget is exact (nano-units)
            llms = [k for k in avail if k < self.K and self.budget.can_afford(self.c[k])]
            if not llms and not human_ok:
                break
            arm, mode, x = self._choose(t, llms, human_ok)
            if arm == "-":
                break
            self._log(t, "route", arm, mode, x)
            out = self.buy(t, arm, "route")
            self.record(t, arm, out)
            routed += 1
        self.info["routed"] = routed
        self.info["not_reached"] = n - routed

    def _refine(self) -> None:
        cfg = self.cfg
        min_cost = float(min(self.c.min(), self.c_h))
        picks = 0
        while self.budget.can_afford(min_cost):
            cand = np.flatnonzero(
                (self.votes.n_valid < cfg.max_annotations)
                & ~(self.votes.consensus & (self.votes.n_valid >= 2))
            )
            if len(cand) == 0:
                break
            unc = np.zeros(self.T)
            unc[cand] = self.mean_variance(self.contexts(cand, self.budget.remaining_fraction))
            order = refinement_order(
                self.d0,
                unc,
                self.votes.dis,
                self.votes.has_human,
                self.votes.n_valid,
                self.votes.consensus,
                max_annotations=cfg.max_annotations,
                disagreement_weight=cfg.disagreement_weight,
                no_human_bonus=cfg.no_human_bonus,
            )
            if len(order) == 0:
                break
            t = int(order[0])
            voted = {a for a, _ in self.votes.lists[t]}
            llms = [
                k
                for k in range(self.K)
                if self.llm_names[k] not in voted and self.budget.can_afford(self.c[k])
            ]
            # ours (bug fix): never buy the same human label twice
            human_ok = self.human not in voted and self.budget.can_afford(self.c_h, human=True)
            if not llms and not human_ok:
                break
            prio = float(self.d0[t] + unc[t])
            arm, mode, x = self._choose(t, llms, human_ok)
            if arm == "-":
                break
            held = self.rec.by_item.get(self.ids[t], {}).get(arm)
            if held is not None and arm != self.human:
                # paid: a calibration answer already bought is used, not bought again
                out = self._out(held)
                self._log(t, "extra", arm, "held", x, prio)
            else:
                self._log(t, "extra", arm, mode, x, prio)
                out = self.buy(t, arm, "extra")
            self.record(t, arm, out)
            picks += 1
        self.info["refinement_picks"] = picks

    # ------------------------------------------------------------ auditor
    def auditor(self) -> None:
        cfg, T = self.cfg, self.T
        B = int(min(self.p.human_budget or 0, T))
        cheap = self.llm_names[self.cheapest]
        n_cal = auditor_calibration_size(
            B, cfg.auditor_calibration_share, cfg.auditor_min_calibration
        )
        cal = np.sort(self.rng.choice(T, size=n_cal, replace=False)) if n_cal else np.array([], int)
        reqs = [(self.ids[t], self.human) for t in cal]
        if not cfg.authors_accounting:
            reqs += [(self.ids[t], cheap) for t in cal]
        outs = [self._out(o) for o in self.rec.annotate_many(reqs, phase="calibration")]
        human_out = outs[:n_cal]
        if cfg.authors_accounting:
            cheap_out = self.get_free([(int(t), cheap) for t in cal], "unpaid-calibration")
        else:
            cheap_out = outs[n_cal:]
        for t, y in zip(cal, human_out, strict=True):
            self.votes.add(int(t), self.human, y)
            self._log(int(t), "calibration", self.human, "calibration")
        judged = [(int(t), o, y) for t, o, y in zip(cal, cheap_out, human_out, strict=True) if y]
        sims = np.array([self.similarity(o, y) for _, o, y in judged])
        if self.kind.graded and cfg.summary_error_quantile is not None:
            wrong = calibration_error_mask(sims, True, cfg.summary_error_quantile)
        else:
            wrong = sims < 1.0
        judged_idx = np.array([t for t, _, _ in judged], dtype=int)
        self.info["n_calibration"] = int(n_cal)
        self.info["calibration_errors"] = int(wrong.sum())
        in_cal = np.zeros(T, dtype=bool)
        in_cal[cal] = True
        rest = np.flatnonzero(~in_cal)
        order, how = error_order(rest, judged_idx, wrong, self.base, rule="centroid", cosine=False)
        if how != "error-centroid":
            how = "item order (fewer than 2 calibration errors)"
        self.info["auditor_order"] = how
        n_h = max(0, B - n_cal)
        for i, t in enumerate(order):
            arm = self.human if i < n_h else cheap
            self._log(int(t), "route", arm, "error-centroid" if i < n_h else "llm")
        got = self.rec.annotate_many(
            [(self.ids[t], self.human) for t in order[:n_h]]
            + [(self.ids[t], cheap) for t in order[n_h:]],
            phase="route",
        )
        for i, (t, o) in enumerate(zip(order, got, strict=True)):
            self.votes.add(int(t), self.human if i < n_h else cheap, self._out(o))

    # ------------------------------------------------------------ result
    def result(self) -> RoutingResult:
        cfg = self.cfg
        empty = [t for t in range(self.T) if self.votes.n_valid[t] == 0]
        backup: dict[int, str | None] = {}
        if empty and cfg.authors_accounting:
            cheap = self.llm_names[self.cheapest]
            outs = self.get_free([(t, cheap) for t in empty], "unpaid-backup")
            backup = dict(zip(empty, outs, strict=True))
            self.info["unpaid_backup_labels"] = len(empty)
        else:
            self.info["unlabelled_items"] = len(empty)
        rows = []
        for t in range(self.T):
            if t in backup:
                y, agr = backup[t], float(backup[t] is not None)
                names = [self.llm_names[self.cheapest]]
            else:
                y, agr = self.votes.final(t)
                names = [a for a, _ in self.votes.lists[t]]
            human = any(a == self.human and o is not None for a, o in self.votes.lists[t])
            rows.append(
                {
                    "item_id": self.ids[t],
                    "output": y,
                    "n_annotations": len(names),
                    "agreement": agr,
                    "human": human,
                    "annotators": ";".join(names),
                }
            )
        labels = pd.DataFrame(rows, columns=LABEL_COLUMNS)
        frames = [self.rec.frame()]
        if self.free is not None and self.free.rows:
            frames.append(self.free.frame())
        annotations = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        self.info["cost_if_paid"] = round(self.budget.spent + self.info["unpaid_cost"], 9)
        self.info["posterior_means"] = {
            a: p.mean_.tolist() for a, p in zip(self.llm_names, self.post, strict=True)
        }
        return build_result(
            cfg.method_name,
            self.core,
            labels,
            self.info,
            self.trace.frame(),
            annotations=annotations,
        )
