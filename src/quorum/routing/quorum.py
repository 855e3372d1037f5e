"""The QUORUM router (paper, sec. 3 and Algorithms 1-2).

Dollars setting (Algorithm 1)
  1. Calibration: N_cal = floor(calibration_share * floor(B / c_H)) items with the highest
     Mahalanobis uncertainty u_t of phi(d_t) get a human label and every LLM's answer; the
     rewards r_a = 1(y_hat_a == y) initialise the LLM posteriors.
  2. Routing: every other item, in a random order, goes to the arm chosen by decaying
     epsilon-greedy on q_a = mu_a^T x_t, escalated to the human when max q < tau_H.
  3. Extra annotations: while money remains, the unsettled item with the highest priority
     P_t = D_t + Delta_t + 1(no human) gets one more annotation (at most
     ``max_annotations``); an item settles on consensus (weighted agreement >= threshold),
     a human label, or when it has no arm left. Rewards come from the human label where
     there is one and from agreement with the weighted majority otherwise.
  4. Aggregation: weighted majority vote (labels) or embedding centroid (summaries).

Auditor setting (Algorithm 2): the cheapest LLM everywhere; a random calibration slice of
calibration_share * B items gets human labels; the remaining B - |C| human labels go to
the items nearest the centroid of the LLM's calibration errors.

Choices the paper leaves open are parameters, documented in docs/router.md.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from quorum.data.schema import TaskType
from quorum.routing.aggregation import CentroidSummary, WeightedMajorityVote, disagreement
from quorum.routing.base import AnnotationSource, Router, RoutingProblem, RoutingResult
from quorum.routing.budget import Budget
from quorum.routing.outputs import LABEL_COLUMNS
from quorum.routing.policy import EpsilonGreedyPolicy
from quorum.routing.posterior import BayesianLinearPosterior
from quorum.routing.recorder import CallRecorder

_EPS = 1e-9


def mahalanobis_uncertainty(phi: np.ndarray) -> np.ndarray:
    """u_t = sqrt((phi_t - mu)^T Sigma^-1 (phi_t - mu)), with a pseudo-inverse for rank loss."""
    phi = np.asarray(phi, dtype=np.float64)
    if len(phi) < 2:
        return np.zeros(len(phi))
    mu = phi.mean(axis=0)
    cov = np.atleast_2d(np.cov(phi, rowvar=False))
    inv = np.linalg.pinv(cov)
    d = phi - mu
    return np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", d, inv, d), 0.0))


class QuorumRouter(Router):
    """QUORUM: features-based contextual bandit routing with calibration and refinement.

    Parameters (paper defaults where the paper gives one)
    ----------
    tau_h : escalation threshold tau_H (0.5).
    epsilon0, gamma : exploration epsilon_t = epsilon0 / (1 + gamma t) (0.3, 0.005).
    w_human, w_llm : vote weights w_H, w_LLM (10, 1).
    calibration_share : share of the affordable human budget used for calibration (0.2).
    calibration_budget : "money" (default): calibration may spend calibration_share * B,
        each calibration item costing c_H plus every LLM; "items": Algorithm 1's
        N_cal = floor(0.2 * floor(B / c_H)) items, which matches the money reading only
        when LLM answers on calibration items are free (as in the paper's replay).
    max_annotations : most annotations per item (3).
    consensus_threshold : weighted agreement that stops extra annotations (0.66).
    prior_mean_human, prior_var_human, prior_var_llm : priors mu_H = 0.3 * 1,
        Sigma_H = 0.5 I, Sigma_LLM = I, mu_LLM = 0.
    reward_noise : sigma^2 of the reward model (ours: 0.25, the largest variance of a
        0/1 reward).
    budget_prior_var : prior variance of the weights on b_t and p_t (ours: 1e-3; the
        other weights keep the paper's Sigma). Calibration sees b_t = 1, p_t = 0 only, so
        with a unit prior those weights absorb part of the intercept and q_a drifts as the
        budget drains; a tight prior keeps x_t as in the paper while letting only strong
        evidence make quality depend on budget or progress.
    reserve_share : share of the money above the coverage floor that phase 2 may not
        touch, kept for phase 3 (B_reserved; ours: 0.8, from a grid on MMLU-Redux).
    pacing : phase 2 spends its working budget at an even rate over the items (ours).
    cost_penalty : lambda in score_a = q_a - lambda * c_a / c_H used to exploit
        (ours: 1, i.e. one human label is worth one unit of quality; 0 = the paper's
        pure argmax q, which in the dollars setting buys the dearest LLM everywhere).
    escalate_disagreement : in phase 3, an item whose annotations disagree goes to the
        human if affordable (ours; the paper's priority puts such items first but does
        not say which arm they get).
    agreement_reward : without a human label, reward an LLM by agreement with the
        weighted majority (issue spec); False = learn only from human labels.
    include_bias : append a constant 1 to x_t (ours: q_a needs an intercept).
    priority_refresh : recompute all priorities every this many phase-3 picks (speed).
    auditor_space : "embedding" or "features": where the error centroid is computed.
    auditor_rule : "centroid" (Algorithm 2: distance to the centroid of the calibration
        errors) or "knn" (ours: share of errors among the ``auditor_k`` nearest
        calibration items, so that several separate error regions all count).
    spend_leftover : when no item is open any more and money remains, give human labels
        to settled items without one, highest priority first (ours: the paper's phase 3
        runs "while budget remains" but stops items on consensus).
    summary_error_quantile : auditor, summaries: a calibration summary counts as an
        error when its similarity to the human one is below this quantile.
    batch_size : phase-2 requests sent together (concurrency for live sources).
    """

    name = "quorum"
    supports_summarization = True

    def __init__(
        self,
        tau_h: float = 0.5,
        epsilon0: float = 0.3,
        gamma: float = 0.005,
        w_human: float = 10.0,
        w_llm: float = 1.0,
        calibration_share: float = 0.2,
        calibration_budget: str = "money",
        max_annotations: int = 3,
        consensus_threshold: float = 0.66,
        prior_mean_human: float = 0.3,
        prior_var_human: float = 0.5,
        prior_var_llm: float = 1.0,
        reward_noise: float = 0.25,
        budget_prior_var: float = 1e-3,
        reserve_share: float = 0.8,
        pacing: bool = True,
        cost_penalty: float = 1.0,
        escalate_disagreement: bool = True,
        agreement_reward: bool = True,
        include_bias: bool = True,
        priority_refresh: int = 64,
        auditor_space: str = "embedding",
        auditor_rule: str = "centroid",
        auditor_k: int = 10,
        summary_error_quantile: float = 0.5,
        spend_leftover: bool = True,
        batch_size: int = 256,
    ) -> None:
        self.tau_h = tau_h
        self.epsilon0 = epsilon0
        self.gamma = gamma
        self.w_human = w_human
        self.w_llm = w_llm
        self.calibration_share = calibration_share
        self.calibration_budget = calibration_budget
        self.max_annotations = max_annotations
        self.consensus_threshold = consensus_threshold
        self.prior_mean_human = prior_mean_human
        self.prior_var_human = prior_var_human
        self.prior_var_llm = prior_var_llm
        self.reward_noise = reward_noise
        self.budget_prior_var = budget_prior_var
        self.reserve_share = reserve_share
        self.pacing = pacing
        self.cost_penalty = cost_penalty
        self.escalate_disagreement = escalate_disagreement
        self.agreement_reward = agreement_reward
        self.include_bias = include_bias
        self.priority_refresh = priority_refresh
        self.auditor_space = auditor_space
        self.auditor_rule = auditor_rule
        self.auditor_k = auditor_k
        self.summary_error_quantile = summary_error_quantile
        self.spend_leftover = spend_leftover
        self.batch_size = batch_size
        self._validate()

    def _validate(self) -> None:
        if not 0.0 <= self.calibration_share <= 1.0:
            raise ValueError("calibration_share must be in [0, 1]")
        if self.calibration_budget not in ("money", "items"):
            raise ValueError("calibration_budget must be 'money' or 'items'")
        if not 0.0 <= self.reserve_share <= 1.0:
            raise ValueError("reserve_share must be in [0, 1]")
        if self.max_annotations < 1:
            raise ValueError("max_annotations must be >= 1")
        if not 0.0 <= self.consensus_threshold <= 1.0:
            raise ValueError("consensus_threshold must be in [0, 1]")
        if self.budget_prior_var <= 0 or self.reward_noise <= 0:
            raise ValueError("budget_prior_var and reward_noise must be > 0")
        if self.w_human <= 0 or self.w_llm <= 0:
            raise ValueError("vote weights must be > 0")
        if self.auditor_space not in ("embedding", "features"):
            raise ValueError("auditor_space must be 'embedding' or 'features'")
        if self.auditor_rule not in ("centroid", "knn"):
            raise ValueError("auditor_rule must be 'centroid' or 'knn'")
        if self.auditor_k < 1:
            raise ValueError("auditor_k must be >= 1")
        if self.batch_size < 1 or self.priority_refresh < 1:
            raise ValueError("batch_size and priority_refresh must be >= 1")
        EpsilonGreedyPolicy(self.epsilon0, self.gamma, self.tau_h)

    # ------------------------------------------------------------------ API
    def route(
        self, problem: RoutingProblem, source: AnnotationSource, budget: Budget, seed: int = 0
    ) -> RoutingResult:
        self._validate()
        if not problem.llms:
            raise ValueError("QUORUM needs at least one machine annotator (LLM or model)")
        run = _Run(self, problem, source, budget, seed)
        if problem.setting == "auditor":
            run.auditor()
        else:
            run.dollars()
        return run.result()


class _Run:
    """State of one routing run (kept out of the estimator, sklearn-style)."""

    def __init__(
        self,
        cfg: QuorumRouter,
        problem: RoutingProblem,
        source: AnnotationSource,
        budget: Budget,
        seed: int,
    ) -> None:
        self.cfg = cfg
        self.p = problem
        self.budget = budget
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.rec = CallRecorder(problem.task, source, budget)
        self.source = source
        self.summ = problem.task.type is TaskType.summarization
        self.ids = problem.item_ids
        self.T = len(self.ids)
        self.llm_names = [a.name for a in problem.llms]  # cheapest first
        self.K = len(self.llm_names)
        self.human = problem.task.human
        self.c = np.array([self.rec.price(a) for a in self.llm_names])
        self.c_h = self.rec.price(self.human)
        self.c_min = float(self.c.min())
        self.policy = EpsilonGreedyPolicy(cfg.epsilon0, cfg.gamma, cfg.tau_h)
        if self.summ:
            self.agg = CentroidSummary(cfg.w_human, cfg.w_llm, cfg.consensus_threshold)
        else:
            self.agg = WeightedMajorityVote(cfg.w_human, cfg.w_llm, cfg.consensus_threshold)
        self.phi = problem.phi
        self.m = self.phi.shape[1]
        self.dim = self.m + 2 + self.K + (1 if cfg.include_bias else 0)
        bp = slice(self.m, self.m + 2)  # b_t, p_t
        pv_llm = np.full(self.dim, float(cfg.prior_var_llm))
        pv_llm[bp] = cfg.budget_prior_var
        pv_h = np.full(self.dim, float(cfg.prior_var_human))
        pv_h[bp] = cfg.budget_prior_var
        self.post = {
            a: BayesianLinearPosterior(self.dim, 0.0, pv_llm, cfg.reward_noise)
            for a in self.llm_names
        }
        self.post_h = BayesianLinearPosterior(
            self.dim, cfg.prior_mean_human, pv_h, cfg.reward_noise
        )
        self.mask = np.zeros((self.T, self.K))
        self.asked_x: dict[tuple[int, str], np.ndarray] = {}
        self.rewarded: set[tuple[int, str]] = set()
        self.settled = np.zeros(self.T, dtype=bool)
        self.trace: list[dict] = []
        self.step = 0
        self.info: dict = {}
        self._emb: dict[str, np.ndarray] = {}

    # ----------------------------------------------------------- context
    def context(self, t: int, b: float, p: float, mask: np.ndarray | None = None) -> np.ndarray:
        """x_t = [phi(d_t), b_t, p_t, m_t, 1]."""
        parts = [self.phi[t], [b, p], self.mask[t] if mask is None else mask]
        if self.cfg.include_bias:
            parts.append([1.0])
        return np.concatenate(parts)

    def context_names(self) -> list[str]:
        names = [f"phi{i}" for i in range(self.m)] + ["b_t", "p_t"]
        names += [f"m:{a}" for a in self.llm_names]
        return names + (["bias"] if self.cfg.include_bias else [])

    def q_values(self, x: np.ndarray) -> np.ndarray:
        return np.array([self.post[a].pull(x) for a in self.llm_names])

    # --------------------------------------------------------- bookkeeping
    def _log(
        self,
        t: int,
        phase: str,
        arm: str,
        mode: str,
        x: np.ndarray | None,
        q: np.ndarray | None,
        priority: float | None = None,
    ) -> None:
        self.step += 1
        row = {
            "step": self.step,
            "phase": phase,
            "item_id": self.ids[t],
            "arm": arm,
            "mode": mode,
            "epsilon": self.policy.epsilon(self.step),
            "b_t": float(x[self.m]) if x is not None else np.nan,
            "p_t": float(x[self.m + 1]) if x is not None else np.nan,
            "price": self.rec.price(arm),
            "budget_left": self.budget.remaining,
            "priority": priority,
        }
        if q is not None:
            for a, v in zip(self.llm_names, q, strict=True):
                row[f"q:{a}"] = float(v)
        self.trace.append(row)

    def _embed(self, texts: list[str]) -> np.ndarray:
        missing = [s for s in dict.fromkeys(texts) if s not in self._emb]
        if missing:
            vecs = np.asarray(self.source.embed_outputs(missing), dtype=np.float64)
            for s, v in zip(missing, vecs, strict=True):
                n = np.linalg.norm(v)
                self._emb[s] = v / n if n > 0 else v
        return np.stack([self._emb[s] for s in texts])

    def outputs(self, t: int) -> dict[str, str]:
        return self.rec.outputs(self.ids[t])

    def is_h(self, a: str) -> bool:
        return self.rec.is_human(a)

    def vote_priority(self) -> list[str]:
        """Trust order for tie-breaks: human, then LLMs from the most expensive."""
        return [self.human, *sorted(self.llm_names, key=lambda a: -self.rec.price(a))]

    def aggregate(self, t: int) -> tuple[str | None, float, int]:
        outs = self.outputs(t)
        n = len(outs)
        if n == 0:
            return None, 0.0, 0
        if not self.summ:
            y, agr = self.agg.vote(outs, self.is_h, self.vote_priority())
            return y, agr, n
        names = list(outs)
        emb = self._embed([outs[a] for a in names])
        w = np.array([self.cfg.w_human if self.is_h(a) else self.cfg.w_llm for a in names])
        agr = self.agg.agreement(emb)
        return outs[names[self.agg.choose(emb, w)]], agr, n

    def delta(self, t: int) -> float:
        outs = list(self.outputs(t).values())
        if len(outs) < 2:
            return 0.0
        if not self.summ:
            return disagreement(outs)
        return float(np.clip((1.0 - self.agg.agreement(self._embed(outs))) / 2.0, 0.0, 1.0))

    def similarity_reward(self, out: str | None, ref: str) -> float:
        if out is None:
            return 0.0
        if not self.summ:
            return float(out == ref)
        e = self._embed([out, ref])
        return float(np.clip(e[0] @ e[1], 0.0, 1.0))

    # ---------------------------------------------------------- rewards
    def settle(self, t: int) -> None:
        """Item t is done: give each arm asked on it its reward (once)."""
        if self.settled[t]:
            return
        self.settled[t] = True
        item = self.ids[t]
        answers = self.rec.by_item.get(item, {})
        outs = self.outputs(t)
        human_out = outs.get(self.human)
        if human_out is not None:
            ref = human_out
        elif self.cfg.agreement_reward and len(outs) >= 2:
            ref, _, _ = self.aggregate(t)
        else:
            return
        for a, o in answers.items():
            if self.is_h(a) or (t, a) in self.rewarded or (t, a) not in self.asked_x:
                continue
            if o.status == "pending" or o.status == "failed":
                continue
            r = self.similarity_reward(o.output if o.ok else None, ref)
            self.post[a].update(self.asked_x[(t, a)], r)
            self.rewarded.add((t, a))
        # the human arm: agreement with the other annotators' majority, when there are >= 2
        others = {a: y for a, y in outs.items() if not self.is_h(a)}
        if human_out is not None and len(others) >= 2 and (t, self.human) in self.asked_x:
            if self.summ:
                names = list(others)
                emb = self._embed([others[a] for a in names])
                ref_o = others[names[self.agg.choose(emb, np.ones(len(names)))]]
            else:
                ref_o, _ = self.agg.vote(others, self.is_h, self.vote_priority())
            self.post_h.update(
                self.asked_x[(t, self.human)], self.similarity_reward(human_out, ref_o)
            )
            self.rewarded.add((t, self.human))

    # ------------------------------------------------------------ dollars
    def dollars(self) -> None:
        cfg, T = self.cfg, self.T
        B = self.budget.remaining
        if self.budget.limit <= 0 or self.c_min > B + _EPS:
            self.info["note"] = "budget below one annotation: nothing was annotated"
            return
        # Phase 1: calibration ------------------------------------------------
        per_cal = self.c_h + self.c.sum()
        if cfg.calibration_budget == "money":
            n_cal = math.floor(cfg.calibration_share * B / per_cal + _EPS)
        else:
            n_cal = math.floor(cfg.calibration_share * math.floor(B / self.c_h + _EPS))
        if per_cal > self.c_min:
            n_cal = min(n_cal, int((B - T * self.c_min) // (per_cal - self.c_min + _EPS)))
        n_cal = max(0, min(n_cal, T))
        cal: list[int] = []
        if n_cal > 0:
            u = mahalanobis_uncertainty(self.phi)
            cal = list(np.argsort(-u, kind="stable")[:n_cal])
            reqs = []
            for t in cal:
                x = self.context(t, 1.0, 0.0, np.zeros(self.K))
                for a in [self.human, *self.llm_names]:
                    reqs.append((self.ids[t], a))
                    self.asked_x[(t, a)] = x
                    self._log(t, "calibration", a, "calibration", x, None)
            self.rec.annotate_many(reqs, phase="calibration")
            for t in cal:
                self.mask[t] = 1.0
                self.settle(t)
        self.info["n_calibration"] = len(cal)

        # Phase 2: routing ----------------------------------------------------
        in_cal = np.zeros(T, dtype=bool)
        in_cal[cal] = True
        rest = [int(t) for t in self.rng.permutation(T) if not in_cal[t]]
        n_rest = len(rest)
        spare = self.budget.remaining - n_rest * self.c_min
        working = max(0.0, (1.0 - cfg.reserve_share) * spare)
        planned_left = self.budget.remaining  # b_t from planned prices (outcome-independent)
        extra_spent = 0.0
        pending: list[tuple[int, str]] = []
        for j, t in enumerate(rest):
            b = max(0.0, planned_left / self.budget.limit)
            x = self.context(t, b, (len(cal) + j) / T, np.zeros(self.K))
            q = self.q_values(x)
            allow = working * (j + 1) / n_rest if cfg.pacing else working
            allow -= extra_spent
            keep = (n_rest - j - 1) * self.c_min
            fits = [
                k
                for k in range(self.K)
                if self.c[k] - self.c_min <= allow + _EPS
                and planned_left - self.c[k] >= keep - _EPS
            ]
            if not fits:
                fits = [int(np.argmin(self.c))] if planned_left - self.c_min >= keep - _EPS else []
            human_ok = (
                self.c_h - self.c_min <= allow + _EPS
                and planned_left - self.c_h >= keep - _EPS
                and self.budget.can_afford(self.c_h, human=True)
            )
            scores = q[fits] - cfg.cost_penalty * self.c[fits] / self.c_h
            k, mode = self.policy.select(
                q[fits], len(cal) + j, self.rng, human_allowed=human_ok, scores=scores
            )
            if k is None and mode == "none":
                self._log(t, "route", "-", "unaffordable", x, q)
                continue
            arm = self.human if k is None else self.llm_names[fits[k]]
            price = self.c_h if k is None else float(self.c[fits[k]])
            planned_left -= price
            extra_spent += price - self.c_min
            self.asked_x[(t, arm)] = x
            if k is not None:
                self.mask[t, fits[k]] = 1.0
            self._log(t, "route", arm, mode, x, q)
            pending.append((t, arm))
            if len(pending) >= cfg.batch_size:
                self._flush(pending)
        self._flush(pending)
        for t in rest:
            if self.human in self.outputs(t):
                self.settle(t)

        # Phase 3: extra annotations by priority ------------------------------
        if cfg.max_annotations > 1:
            self.refine()

    def _flush(self, pending: list[tuple[int, str]]) -> None:
        if pending:
            self.rec.annotate_many([(self.ids[t], a) for t, a in pending], phase="route")
            pending.clear()

    def _open_arms(self, t: int) -> tuple[list[int], bool]:
        asked = self.rec.asked(self.ids[t])
        llms = [k for k, a in enumerate(self.llm_names) if a not in asked]
        return llms, self.human not in asked

    def refine(self) -> None:
        cfg, T = self.cfg, self.T
        n_asked = np.array([len(self.rec.by_item.get(i, {})) for i in self.ids])
        no_answer = np.array([len(self.outputs(t)) == 0 for t in range(T)])
        open_ = (~self.settled) & (n_asked < cfg.max_annotations)
        # items whose only answer agrees with itself are open; consensus needs >= 2
        for t in np.flatnonzero(open_):
            _, agr, n = self.aggregate(t)
            if n >= 2 and self.agg.consensus(agr, n):
                self.settle(t)
                open_[t] = False
        prio = np.full(T, -np.inf)
        delta = np.zeros(T)
        has_h = np.zeros(T)
        for t in np.flatnonzero(open_):
            delta[t] = self.delta(t)
            has_h[t] = float(self.human in self.outputs(t))

        def recompute() -> None:
            idx = np.flatnonzero(open_)
            if len(idx) == 0:
                return
            b = self.budget.remaining_fraction
            X = np.hstack(
                [
                    self.phi[idx],
                    np.full((len(idx), 1), b),
                    np.ones((len(idx), 1)),
                    self.mask[idx],
                    *([np.ones((len(idx), 1))] if cfg.include_bias else []),
                ]
            )
            D = np.mean([self.post[a].variance(X) for a in self.llm_names], axis=0)
            prio[idx] = D + delta[idx] + (1.0 - has_h[idx])

        recompute()
        picks = 0
        while open_.any():
            # keep money to give a first annotation to items that still have none
            keep = float(no_answer[open_].sum()) * self.c_min
            t = int(np.argmax(np.where(open_, prio, -np.inf)))
            llms, human_free = self._open_arms(t)
            x = self.context(t, self.budget.remaining_fraction, 1.0)
            fits = [k for k in llms if self.rec.can_afford(self.llm_names[k], keep=keep)]
            human_ok = human_free and self.rec.can_afford(self.human, keep=keep)
            if not fits and not human_ok:
                open_[t] = False
                prio[t] = -np.inf
                if not (self.budget.can_afford(self.c_min)):
                    break
                continue
            q = self.q_values(x)
            _, agr, n = self.aggregate(t)
            if cfg.escalate_disagreement and human_ok and n >= 2 and not self.agg.consensus(agr, n):
                k, mode = None, "disagreement"
            else:
                qs = q[fits] if fits else np.array([])
                scores = qs - cfg.cost_penalty * self.c[fits] / self.c_h if fits else None
                k, mode = self.policy.select(
                    qs, self.step, self.rng, human_allowed=human_ok, scores=scores
                )
            arm = self.human if k is None else self.llm_names[fits[k]]
            self.asked_x[(t, arm)] = x
            self._log(t, "extra", arm, mode, x, q, float(prio[t]))
            self.rec.annotate(self.ids[t], arm, phase="extra")
            if k is not None:
                self.mask[t, fits[k]] = 1.0
            n_asked[t] += 1
            outs = self.outputs(t)
            no_answer[t] = len(outs) == 0
            _y, agr, n = self.aggregate(t)
            done = (
                self.human in outs
                or (n >= 2 and self.agg.consensus(agr, n))
                or n_asked[t] >= cfg.max_annotations
            )
            if done:
                self.settle(t)
                open_[t] = False
                prio[t] = -np.inf
            else:
                delta[t] = self.delta(t)
                has_h[t] = float(self.human in outs)
                idx = np.array([t])
                xv = self.context(t, self.budget.remaining_fraction, 1.0)[None, :]
                D = np.mean([self.post[a].variance(xv) for a in self.llm_names], axis=0)
                prio[idx] = D + delta[idx] + (1.0 - has_h[idx])
            picks += 1
            if picks % max(cfg.priority_refresh, int(open_.sum()) // 50 + 1) == 0:
                recompute()
        if cfg.spend_leftover:
            self.leftover_humans(n_asked)

    def leftover_humans(self, n_asked: np.ndarray) -> None:
        """Money left after refinement buys human labels, highest priority first."""
        cfg = self.cfg
        cand = np.array(
            [
                t
                for t in range(self.T)
                if n_asked[t] < cfg.max_annotations
                and self.human not in self.rec.asked(self.ids[t])
            ],
            dtype=int,
        )
        if len(cand) == 0 or not self.rec.can_afford(self.human):
            return
        b = self.budget.remaining_fraction
        X = np.hstack(
            [
                self.phi[cand],
                np.full((len(cand), 1), b),
                np.ones((len(cand), 1)),
                self.mask[cand],
                *([np.ones((len(cand), 1))] if cfg.include_bias else []),
            ]
        )
        D = np.mean([self.post[a].variance(X) for a in self.llm_names], axis=0)
        agr = np.array([self.aggregate(t)[1] for t in cand])
        prio = D + (1.0 - agr)
        n_afford = int(self.budget.remaining // self.c_h + 1e-9)
        if self.budget.humans_left is not None:
            n_afford = min(n_afford, self.budget.humans_left)
        chosen = cand[np.argsort(-prio, kind="stable")[:n_afford]]
        for t in chosen:
            self.asked_x[(int(t), self.human)] = X[0] * 0 + X[list(cand).index(t)]
            self._log(int(t), "leftover", self.human, "leftover", None, None, None)
        reqs = [(self.ids[t], self.human) for t in chosen]
        for i in range(0, len(reqs), cfg.batch_size):
            self.rec.annotate_many(reqs[i : i + cfg.batch_size], phase="leftover")

    # ------------------------------------------------------------ auditor
    def auditor(self) -> None:
        cfg, T = self.cfg, self.T
        B = int(min(self.p.human_budget or 0, T))
        cheap = self.llm_names[int(np.argmin(self.c))]
        n_cal = round(cfg.calibration_share * B)
        n_cal = min(n_cal, B)
        order = self.rng.permutation(T)
        cal = [int(t) for t in order[:n_cal]]
        reqs = [(self.ids[t], a) for t in cal for a in (self.human, cheap)]
        for t in cal:
            self._log(t, "calibration", self.human, "calibration", None, None)
            self._log(t, "calibration", cheap, "calibration", None, None)
        self.rec.annotate_many(reqs, phase="calibration")
        # errors of the cheapest LLM on the calibration slice
        errs = []
        sims = []
        for t in cal:
            outs = self.outputs(t)
            y = outs.get(self.human)
            if y is None:
                continue
            s = self.similarity_reward(outs.get(cheap), y)
            sims.append((t, s))
        if self.summ and sims:
            cut = np.quantile([s for _, s in sims], cfg.summary_error_quantile)
            errs = [t for t, s in sims if s < cut]
        else:
            errs = [t for t, s in sims if s < 1.0]
        self.info["calibration_errors"] = len(errs)
        rest = np.array([t for t in order[n_cal:]], dtype=int)
        n_h = B - len(cal)
        space = self.p.embeddings if cfg.auditor_space == "embedding" else None
        if space is None:
            space = self.phi
        if cfg.auditor_rule == "knn" and len(errs) >= 1 and len(rest) and len(sims) >= 2:
            judged = np.array([t for t, _ in sims])
            is_err = np.isin(judged, errs).astype(float)
            k = min(cfg.auditor_k, len(judged))
            if cfg.auditor_space == "embedding":
                d = 1.0 - space[rest] @ space[judged].T
            else:
                d = np.linalg.norm(space[rest][:, None, :] - space[judged][None], axis=2)
            nn = np.argpartition(d, k - 1, axis=1)[:, :k]
            score = is_err[nn].mean(axis=1)
            rest = rest[np.argsort(-score, kind="stable")]
            self.info["auditor_order"] = "knn-error-rate"
        elif len(errs) >= 2 and len(rest):
            centroid = space[errs].mean(axis=0)
            if cfg.auditor_space == "embedding":
                nrm = np.linalg.norm(centroid)
                centroid = centroid / nrm if nrm > 0 else centroid
                dist = 1.0 - space[rest] @ centroid
            else:
                dist = np.linalg.norm(space[rest] - centroid, axis=1)
            rest = rest[np.argsort(dist, kind="stable")]
            self.info["auditor_order"] = "error-centroid"
        else:
            self.info["auditor_order"] = "random (fewer than 2 calibration errors)"
        to_h = [int(t) for t in rest[:n_h]]
        to_llm = [int(t) for t in rest[n_h:]]
        for t in to_h:
            self._log(t, "route", self.human, "error-centroid", None, None)
        for t in to_llm:
            self._log(t, "route", cheap, "llm", None, None)
        reqs = [(self.ids[t], self.human) for t in to_h]
        reqs += [(self.ids[t], cheap) for t in to_llm]
        for i in range(0, len(reqs), cfg.batch_size):
            self.rec.annotate_many(reqs[i : i + cfg.batch_size], phase="route")

    # ------------------------------------------------------------ result
    def result(self) -> RoutingResult:
        rows = []
        for t in range(self.T):
            item = self.ids[t]
            outs = self.outputs(t)
            if self.p.setting == "auditor" and self.human in outs:
                y, agr, _n = outs[self.human], 1.0, len(outs)
            else:
                y, agr, _n = self.aggregate(t)
            rows.append(
                {
                    "item_id": item,
                    "output": y,
                    "n_annotations": len(self.rec.by_item.get(item, {})),
                    "agreement": agr,
                    "human": self.human in outs,
                    "annotators": ";".join(self.rec.by_item.get(item, {})),
                }
            )
        labels = pd.DataFrame(rows, columns=LABEL_COLUMNS)
        self.info["context_names"] = self.context_names()
        self.info["posterior_means"] = {a: p.mean_.tolist() for a, p in self.post.items()}
        self.info["posterior_means"][self.human] = self.post_h.mean_.tolist()
        return RoutingResult(
            method=self.cfg.name,
            setting=self.p.setting,
            seed=self.seed,
            labels=labels,
            annotations=self.rec.frame(),
            budget_limit=self.budget.limit,
            cost=self.budget.spent,
            human_labels=self.budget.human_used,
            llm_calls=self.rec.llm_calls,
            trace=pd.DataFrame(self.trace),
            info=self.info,
        )
