"""The QUORUM router (paper, sec. 3 and Algorithms 1-2).

Dollars setting (Algorithm 1)
  1. Calibration: N_cal = floor(calibration_share * floor(B / c_H)) items with the highest
     Mahalanobis uncertainty u_t of phi(d_t) get a human label and every LLM's answer; the
     rewards r_a = 1(y_hat_a == y) initialise the LLM posteriors. (Ours, by default: a probe
     of half those items first; if no dearer LLM beats a human label on accuracy per unit of
     money, the run is audited instead of routed, see ``dollars_strategy``.)
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

from collections import Counter
from collections.abc import Mapping

import numpy as np
import pandas as pd

from quorum.data.schema import TaskType
from quorum.features.context import ContextBuilder
from quorum.routing.aggregation import CentroidSummary, WeightedMajorityVote, disagreement
from quorum.routing.asked import AskedContexts
from quorum.routing.auditing import (
    audit_human_count,
    calibration_error_mask,
    cost_match_give_up,
    error_order,
)
from quorum.routing.base import AnnotationSource, Router, RoutingProblem, RoutingResult
from quorum.routing.budget import Budget, SpendingPlan
from quorum.routing.calibration import (
    agreement_reward,
    calibration_order,
    calibration_size,
    mahalanobis_uncertainty,
    panel_check,
    probe_size,
)
from quorum.routing.label_model import (
    STRENGTH_GRID,
    fit_knn_strength,
    knn_counts,
    knn_error_rate,
    knn_label_probs,
    knn_neighbours,
    label_indices,
    one_coin_posterior,
)
from quorum.routing.outputs import LABEL_COLUMNS
from quorum.routing.params import QuorumParams
from quorum.routing.policy import (
    EpsilonGreedyPolicy,
    adaptive_tau,
    lagrangian_choice,
    shadow_price,
    value_choice,
)
from quorum.routing.posterior import BayesianLinearPosterior
from quorum.routing.recorder import CallRecorder
from quorum.routing.refinement import PriorityQueue
from quorum.routing.trace import DecisionTrace

__all__ = ["QuorumRouter", "mahalanobis_uncertainty"]

_EPS = 1e-9


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
    reward_noise : sigma^2 of the reward model (ours: 1.0, the usual default of Bayesian
        linear bandits; 0.25, the largest variance of a 0/1 reward, overfits the small
        calibration sets of 300-500 item tasks).
    budget_prior_var : prior variance of the weights on b_t and p_t (ours: 1e-3; the
        other weights keep the paper's Sigma). Calibration sees b_t = 1, p_t = 0 only, so
        with a unit prior those weights absorb part of the intercept and q_a drifts as the
        budget drains; a tight prior keeps x_t as in the paper while letting only strong
        evidence make quality depend on budget or progress.
    reserve_share : share of the money above the coverage floor that phase 2 may not
        touch, kept for phase 3 (B_reserved; ours: 0.5, half for first answers, half for
        refinement; see docs/router.md for the grid behind it).
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
    auditor_rule : "knn" (ours, default: share of errors among the k nearest calibration
        items, k = min(auditor_k, |C| // 4), ties broken by the distance to the nearest
        error, so that several separate error regions all count) or "centroid"
        (Algorithm 2 as written: distance to the centroid of the calibration errors).
    auditor_max_pairs : most (remaining item, calibration item) distances the "knn" rule
        computes (ours: 2^29; the largest bench cell, imdb-mlapi auditor 0.7, needs 7.5e7). Above
        it, the neighbours come from a fixed random sample of the calibration items, so
        that ordering a million items stays linear in the number of items.
    spend_leftover : when no item is open any more and money remains, give human labels
        to settled items without one, highest priority first (ours: the paper's phase 3
        runs "while budget remains" but stops items on consensus).
    summary_error_quantile : auditor, summaries: a calibration summary counts as an
        error when its similarity to the human one is below this quantile.
    summary_audit : which items get the human summaries when auditing (auditor setting,
        dollars audit path). "random" (ours, default): a random sample, with no
        calibration and no LLM answer on them; "calibrated": calibration items with the
        human and the cheapest LLM, then the likeliest errors by ``auditor_rule``
        (Algorithm 2). On the bench's summaries the calibrated order gave the same ROUGE-1
        as a random one at the same budget and paid the LLM on every calibration item.
    adaptive_tau : raise the escalation threshold with the money left (ours; False =
        the paper's fixed tau_H): tau_t = tau_H + (1 - tau_H) * rho_t, with rho_t the
        share of the remaining items a human could still be paid for (phase 2: spare
        money per remaining item / (c_H - c_min); phase 3: money left / (n_open c_H)),
        so that weak LLM answers go to humans when the budget allows it.
    auditor_cost_match : auditor setting: calibration needs the cheapest LLM's answer on
        |C| human-labelled items; give up ceil(|C| c_min / (c_H - c_min)) human labels so
        that the total cost stays at or below B c_H + (T - B) c_min, the cost of a
        router that sends B items to humans and the rest to the cheapest LLM (ours; off
        by default since issue 14: the auditor's equal-spend level is B c_H + T c_min, and
        the labels given up cost accuracy; only used with ``audit_llm_first=False`` or
        for summaries).
    extra_arm_rule : how phase 3 picks the arm for an item's extra annotation. "paper":
        the routing rule of phase 2 (epsilon-greedy on q, escalation below tau_H).
        "value" (ours, default): with probability epsilon_t explore an LLM; otherwise
        take the arm with the most expected errors fixed per unit of money, with
        p = estimated correctness of the item's current label (q of its best agreeing
        answer): human (1 - p) / c_H; LLM b (1 - p) q_b / (c_b + P_dis c_H), where
        P_dis = (1 - p) q_b + p (1 - q_b) is the chance that b disagrees and so sends
        the item to a human. Cheap second opinions win when LLMs are good; humans win
        when LLMs are weak.
    phase2_rule : "lagrangian" (ours, default): with probability epsilon_t explore an LLM;
        otherwise take argmax over LLMs and the human of q_a - lambda c_a / c_H, the human
        scoring ``human_quality``, with the shadow price lambda set once by bisection so
        that the planned phase-2 spend fits its money (the Lagrangian relaxation of the
        budgeted assignment); an LLM whose q is below tau_H is still escalated. "paper":
        epsilon-greedy on q - cost_penalty c_a / c_H, escalation below tau_H (adaptive if
        ``adaptive_tau``).
    human_quality : expected quality of a human label used by the Lagrangian rule (1.0).
    pessimism : kappa in the lower confidence bound q_a - kappa sqrt(x^T Sigma_a x) that the
        Lagrangian rule uses for LLMs when it weighs them against the human (ours). The
        argmax over noisy estimates favours the arms whose quality is over-estimated (the
        optimiser's curse), while the human's quality is known; with few calibration
        items the bound sends more items to humans, with many it is close to mu^T x.
    dollars_strategy : what the dollars setting does after calibration (ours). "bandit":
        phases 2 and 3 as above. "audit": the cheapest LLM on every other item and, with
        the money left, humans on the items most likely to be its errors (the auditor
        ordering, ``auditor_rule``). "auto" (default): "audit" when the calibration shows
        the panel dominated, i.e. no dearer LLM gains more accuracy per unit of money over
        the cheapest one than a human label does (Beta(1, 1)-smoothed calibration
        accuracies; the upper hull of (price, accuracy) holds only the cheapest LLM and
        the human), else "bandit". For summaries, accuracy is the mean similarity to the
        human summary and an error is a similarity below ``summary_error_quantile``.
    probe_share : "auto"/"audit": share of the calibration items calibrated before the
        panel check (ours: 0.5); "audit" stops there, "bandit" calibrates the rest.
    probe_order : "auto"/"audit": the order in which calibration items are drawn.
        "random" (ours, default): a random sample, so the panel check's accuracies and the
        label model's first labels are unbiased; "uncertainty": ``calibration_order``
        (Mahalanobis distance first), as ``dollars_strategy="bandit"`` does.
    probe_min : "auto": the fewest probe items worth a panel check (ours: 40). A smaller
        probe (money for 1 to ``probe_min / probe_share`` calibration items) is
        skipped and the run audits with the cheapest LLM (``info["panel_check"]``): each
        probe item buys every LLM's answer beside the human's, money no label uses, and
        in the bench only imdb-mlapi's probes (hundreds of items) ever showed a dearer LLM
        that pays (docs/router.md). 0: always probe.
    dominance_z : standard errors taken off an LLM's measured gain in the panel check
        (ours: 2.0; bandit routing pays for learning, so it needs evidence that it pays;
        on the 12 llms-for-css tasks 2.0 beat 1.0 and 0, see docs/router.md).
    batch_size : phase-2 requests sent together (concurrency for live sources).
    agreement_reward_value : "calibrated" (ours, default): without a human label, an LLM
        that agrees with the majority is rewarded P(LLM consensus is right), measured on
        the human-labelled items where the LLMs reached consensus, and a dissenting one
        (1 - that) / (labels - 1) (:func:`~quorum.routing.calibration.agreement_reward`);
        "one": 1 and 0 (shared errors are then learned as correct).
    label_model_vote : final label of an item without a human label (labels only; ours).
        "skill+knn" (default): the one-coin posterior of its answers, each LLM right with
        1 - e_a(x), its kNN error rate on the human-labelled items it answered, under the
        prior of a kNN label model over every human label bought
        (:mod:`~quorum.routing.label_model`); "skill": the same with the human label
        frequencies as the prior; "off": the weighted majority vote.
    audit_llm_first : auditing (auditor setting, dollars audit path; labels): the cheapest
        LLM answers every item first, so every human label also tells whether the LLM was
        wrong there; humans then go, in ``audit_rounds`` rounds, to the items whose label is
        most likely wrong under the label model (refitted each round). False: the ranking
        of ``auditor_rule`` from the calibration errors, humans instead of the LLM.
    audit_rounds : rounds of human labels when ``audit_llm_first`` (5).
    dollars_audit_plan : the dollars audit path with ``audit_llm_first`` (ours). "llm-first":
        as above; each human label then costs c_H on top of the LLM's c_l. "humans-instead":
        each item gets one answer, a human's or the cheapest LLM's, so the money buys
        c_H / (c_H - c_l) times as many humans; they go, in rounds, to the items whose
        label model prior is least sure. "check" (default): both plans' choice of humans
        on a random ``audit_check_share`` of the items, then the plan whose humans there
        changed more labels per unit of money (``info["audit_check"]``); where the sample
        would get fewer than ``audit_check_min`` human labels the run keeps "llm-first".
    auditor_audit_plan : the same choice in the auditor setting (labels; ours, default
        "check"). The human labels are a count there, so both plans buy the same number;
        "humans-instead" saves the LLM's price on each of them, and the check weighs that
        saving with the same rule (a human bought instead of the LLM costs c_H - c_l).
        ``info["auditor_audit_plan"]`` is the plan taken.
    audit_check_share, audit_check_min : the sample of "check": 0.25 of the items left
        after calibration, and at least 40 human labels in it (20 to each plan's choice).
        Both also take "humans-only" (below), which then runs without the check.
    llm_sample : before either plan, the cheapest LLM's answers on this many random items
        (ours: 40; those it answered in calibration count) are looked at, with no label.
        Its answer can move an item's label away from the label model's only where it is
        not its commonest answer, so r = (answers that differ + 1) / (answers + 2) bounds
        what it adds per item. If r < (c_l / c_H)(1 - p_maj), what its price buys in human
        labels instead (p_maj: the commonest human label's share, Beta(1)-smoothed; 1/L
        before any human label), the run goes "humans-only": no more LLM answers, the money
        (auditor: the human labels left) buys humans in ``audit_rounds`` rounds on the items
        whose label model prior is least sure; an item nobody was asked on gets the kNN
        vote of its human-labelled neighbours (shrunk towards the uniform distribution, not
        the label frequencies), or the LLM's commonest answer where the neighbours were
        found uninformative (``info["llm_sample"]``, ``info["unasked_labels"]``). 0: no check.
    label_model_k, label_model_strength : neighbours and pseudo-counts of the label model.
    label_model_fit : choose the kNN prior's pseudo-counts by the leave-one-out likelihood
        of the human labels (:func:`~quorum.routing.label_model.fit_knn_strength`), so that
        neighbours that say nothing about the label fall back to the label frequencies.
    label_model_bandit : also use ``label_model_vote`` after bandit routing (dollars, panel
        not dominated). Off: there the human labels are escalations, bought where the LLMs
        disagreed or looked weak, so they overstate the LLMs' error rates (IMDB, dollars
        30%: 0.889 with it, 0.929 without).
    label_model_max_items : the label model (``label_model_vote``, ``audit_llm_first``) runs
        on problems of at most this many items (50,000). Its kNN search is exact, so a
        round costs O(T x human labels): above the cap the run uses the one-shot audit and
        the weighted vote, and ``info["label_model"]`` says so.
    posterior_backend : "numba" (compiled posterior kernels, :mod:`quorum.routing.kernels`)
        or "numpy" (the reference path; the results before the kernels, which differ from
        it only in the order of some float sums: docs/performance.md).
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
        reward_noise: float = 1.0,
        budget_prior_var: float = 1e-3,
        reserve_share: float = 0.5,
        pacing: bool = True,
        cost_penalty: float = 1.0,
        escalate_disagreement: bool = True,
        agreement_reward: bool = True,
        include_bias: bool = True,
        priority_refresh: int = 64,
        auditor_space: str = "embedding",
        auditor_rule: str = "knn",
        auditor_k: int = 10,
        auditor_max_pairs: int = 2**29,
        summary_error_quantile: float = 0.5,
        summary_audit: str = "random",
        spend_leftover: bool = True,
        adaptive_tau: bool = True,
        auditor_cost_match: bool = False,
        extra_arm_rule: str = "value",
        phase2_rule: str = "lagrangian",
        human_quality: float = 1.0,
        pessimism: float = 0.0,
        dollars_strategy: str = "auto",
        probe_share: float = 0.5,
        probe_min: int = 40,
        probe_order: str = "random",
        dominance_z: float = 2.0,
        batch_size: int = 256,
        agreement_reward_value: str = "calibrated",
        label_model_vote: str = "skill+knn",
        audit_llm_first: bool = True,
        audit_rounds: int = 5,
        dollars_audit_plan: str = "check",
        auditor_audit_plan: str = "check",
        audit_check_share: float = 0.25,
        audit_check_min: int = 40,
        llm_sample: int = 40,
        label_model_k: int = 10,
        label_model_strength: float = 2.0,
        label_model_fit: bool = True,
        label_model_bandit: bool = False,
        label_model_max_items: int = 50_000,
        posterior_backend: str = "numba",
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
        self.auditor_max_pairs = auditor_max_pairs
        self.summary_error_quantile = summary_error_quantile
        self.summary_audit = summary_audit
        self.spend_leftover = spend_leftover
        self.adaptive_tau = adaptive_tau
        self.auditor_cost_match = auditor_cost_match
        self.extra_arm_rule = extra_arm_rule
        self.phase2_rule = phase2_rule
        self.human_quality = human_quality
        self.pessimism = pessimism
        self.dollars_strategy = dollars_strategy
        self.probe_share = probe_share
        self.probe_min = probe_min
        self.probe_order = probe_order
        self.dominance_z = dominance_z
        self.batch_size = batch_size
        self.agreement_reward_value = agreement_reward_value
        self.label_model_vote = label_model_vote
        self.audit_llm_first = audit_llm_first
        self.audit_rounds = audit_rounds
        self.dollars_audit_plan = dollars_audit_plan
        self.auditor_audit_plan = auditor_audit_plan
        self.audit_check_share = audit_check_share
        self.audit_check_min = audit_check_min
        self.llm_sample = llm_sample
        self.label_model_k = label_model_k
        self.label_model_strength = label_model_strength
        self.label_model_fit = label_model_fit
        self.label_model_bandit = label_model_bandit
        self.label_model_max_items = label_model_max_items
        self.posterior_backend = posterior_backend
        self._validate()

    @property
    def params(self) -> QuorumParams:
        """The hyperparameters, validated (:class:`~quorum.routing.params.QuorumParams`)."""
        given = self.get_params()
        return QuorumParams(**{k: given[k] for k in QuorumParams.model_fields if k in given})

    def _validate(self) -> QuorumParams:
        params = self.params
        EpsilonGreedyPolicy(params.epsilon0, params.gamma, params.tau_h)
        return params

    # ------------------------------------------------------------------ API
    def route(
        self, problem: RoutingProblem, source: AnnotationSource, budget: Budget, seed: int = 0
    ) -> RoutingResult:
        params = self._validate()
        if not problem.llms:
            raise ValueError("QUORUM needs at least one machine annotator (LLM or model)")
        run = _Run(params, problem, source, budget, seed, method=self.name)
        if problem.setting == "auditor":
            run.auditor()
        else:
            run.dollars()
        return run.result()


class _Run:
    """State of one routing run (kept out of the estimator, sklearn-style)."""

    def __init__(
        self,
        cfg: QuorumParams,
        problem: RoutingProblem,
        source: AnnotationSource,
        budget: Budget,
        seed: int,
        method: str = "quorum",
    ) -> None:
        self.cfg = cfg
        self.method = method
        self.p = problem
        self.budget = budget
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.rec = CallRecorder(problem.task, source, budget)
        self.source = source
        self.summ = problem.task.type is TaskType.summarization
        self.ids: list[str] = problem.item_ids.tolist()
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
        self.ctx = ContextBuilder(
            self.phi, problem.feature_names, self.llm_names, bias=cfg.include_bias
        )
        self.m = self.ctx.n_features
        self.dim = self.ctx.dim
        bp = slice(self.ctx.b_index, self.ctx.p_index + 1)  # b_t, p_t
        pv_llm = np.full(self.dim, float(cfg.prior_var_llm))
        pv_llm[bp] = cfg.budget_prior_var
        pv_h = np.full(self.dim, float(cfg.prior_var_human))
        pv_h[bp] = cfg.budget_prior_var
        self.post = {
            a: BayesianLinearPosterior(
                self.dim, 0.0, pv_llm, cfg.reward_noise, backend=cfg.posterior_backend
            )
            for a in self.llm_names
        }
        self.post_h = BayesianLinearPosterior(
            self.dim, cfg.prior_mean_human, pv_h, cfg.reward_noise, backend=cfg.posterior_backend
        )
        self.mask = np.zeros((self.T, self.K))
        #: x_t each arm was asked with, and which arms had their reward
        self.asked = AskedContexts(self.T, [*self.llm_names, self.human], self.dim)
        self.settled = np.zeros(self.T, dtype=bool)
        self.trace = DecisionTrace(self.llm_names)
        self._is_available = getattr(source, "is_available", None)
        #: vote of each item that needed no tie-break: (its outputs, the result)
        self._votes: list[tuple[Mapping[str, str], int, tuple[str | None, float, int]] | None]
        self._votes = [None] * self.T
        self._space: np.ndarray | None = None  # the label model's item vectors
        #: "humans-only" (:meth:`_llm_adds_little`): the cheapest LLM's commonest answer,
        #: the fallback label of the items nobody was asked on (:meth:`_unasked_labels`)
        self._unasked_label: str | None = None
        self.step = 0
        # exploration time: routing decisions so far (items in phases 1-2, picks in phase 3)
        self.t_explore = 0
        # (items with a human label where the LLMs reached consensus, consensus right)
        self.agreed_seen = (0, 0)
        self.info: dict = {}
        self._emb: dict[str, np.ndarray] = {}

    # ----------------------------------------------------------- context
    def context(self, t: int, b: float, p: float, mask: np.ndarray | None = None) -> np.ndarray:
        """x_t = [phi(d_t), b_t, p_t, m_t, 1]; ``mask`` defaults to m_t."""
        return self.ctx.row(t, b, p, self.mask[t] if mask is None else mask)

    def contexts(self, idx, b: float, p: float, mask: np.ndarray | None = None) -> np.ndarray:
        """x_t for many items at once (rows of ``idx``); ``mask`` defaults to m_t."""
        idx = np.asarray(idx, dtype=int)
        return self.ctx.rows(idx, b, p, self.mask[idx] if mask is None else mask)

    def difficulty(self, X: np.ndarray) -> np.ndarray:
        """D_t = (1/K) sum_a x_t^T Sigma_a x_t for the rows of X."""
        return np.mean([self.post[a].variance(X) for a in self.llm_names], axis=0)

    def alive(self, k: int) -> bool:
        """False once a live source has declared arm k's endpoint dead."""
        check = self._is_available
        return True if check is None else bool(check(self.llm_names[k]))

    def q_values(self, x: np.ndarray) -> np.ndarray:
        return np.array([self.post[a].pull(x) for a in self.llm_names])

    def q_lower(self, X: np.ndarray) -> np.ndarray:
        """mu_a^T x - kappa sqrt(x^T Sigma_a x) for one context (K,) or many (n, K)."""
        kappa = self.cfg.pessimism
        cols = []
        for a in self.llm_names:
            post = self.post[a]
            q = post.pull(X)
            if kappa > 0:
                q = q - kappa * np.sqrt(np.maximum(post.variance(X), 0.0))
            cols.append(q)
        return np.array(cols) if np.ndim(X) == 1 else np.column_stack(cols)

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
        self.trace.append(
            self.step,
            phase,
            self.ids[t],
            arm,
            mode,
            self.policy.epsilon(self.t_explore),
            float(x[self.ctx.b_index]) if x is not None else np.nan,
            float(x[self.ctx.p_index]) if x is not None else np.nan,
            self.rec.price(arm) if arm != "-" else 0.0,
            self.budget.remaining,
            priority,
            q,
        )

    def _embed(self, texts: list[str]) -> np.ndarray:
        missing = [s for s in dict.fromkeys(texts) if s not in self._emb]
        if missing:
            vecs = np.asarray(self.source.embed_outputs(missing), dtype=np.float64)
            for s, v in zip(missing, vecs, strict=True):
                n = np.linalg.norm(v)
                self._emb[s] = v / n if n > 0 else v
        return np.stack([self._emb[s] for s in texts])

    def outputs(self, t: int) -> Mapping[str, str]:
        """Usable outputs of item t by annotator (the recorder's own: read, never change)."""
        return self.rec.usable(self.ids[t])

    def is_h(self, a: str) -> bool:
        return self.rec.is_human(a)

    def vote_priority(self, t: int) -> list[str]:
        """Trust order for tie-breaks: the human, then LLMs by estimated quality q_a(x_t)."""
        q = self.q_values(self.context(t, self.budget.remaining_fraction, 1.0))
        order = np.argsort(-q, kind="stable")
        return [self.human, *(self.llm_names[k] for k in order)]

    def aggregate(self, t: int) -> tuple[str | None, float, int]:
        outs = self.outputs(t)
        n = len(outs)
        if n == 0:
            return None, 0.0, 0
        if not self.summ:
            return self._vote(t, outs, n)
        names = list(outs)
        emb = self._embed([outs[a] for a in names])
        w = np.array([self.cfg.w_human if self.is_h(a) else self.cfg.w_llm for a in names])
        agr = self.agg.agreement(emb)
        return outs[names[self.agg.choose(emb, w)]], agr, n

    def _vote(self, t: int, outs: Mapping[str, str], n: int) -> tuple[str | None, float, int]:
        """Weighted majority vote of item t, kept until its outputs change.

        The trust order (:meth:`vote_priority`, which moves with the posteriors) is only
        asked for to break a tie, and a vote that needed it is not kept.
        """
        kept = self._votes[t]
        if kept is not None and kept[0] is outs and kept[1] == n:
            return kept[2]
        tied = False

        def priority() -> list[str]:
            nonlocal tied
            tied = True
            return self.vote_priority(t)

        y, agr = self.agg.vote(outs, self.is_h, priority)
        # outputs only grow in place; a repeated call gives the item a new mapping
        self._votes[t] = None if tied else (outs, n, (y, agr, n))
        return y, agr, n

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
        paid = None  # (reward if it agrees, if not) without a human label
        if human_out is not None:
            ref = human_out
        elif self.cfg.agreement_reward and len(outs) >= 2:
            ref, _, _ = self.aggregate(t)
            if not self.summ and self.cfg.agreement_reward_value == "calibrated":
                paid = agreement_reward(*self.agreed_seen, len(self.p.task.labels or []))
        else:
            return
        asked = self.asked
        for a, o in answers.items():
            if self.is_h(a) or asked.rewarded(t, a) or not asked.has(t, a):
                continue
            if o.status == "pending" or o.status == "failed":
                continue
            r = self.similarity_reward(o.output if o.ok else None, ref)
            if paid is not None:
                r = paid[0] if r >= 1.0 else paid[1]
            self.post[a].update(asked.get(t, a), r)
            asked.mark_rewarded(t, a)
        # the human arm: agreement with the other annotators' majority, when there are >= 2
        others = {a: y for a, y in outs.items() if not self.is_h(a)}
        if human_out is not None and not self.summ and len(others) >= 2:
            y_o, agr_o = self.agg.vote(others, self.is_h)
            if self.agg.consensus(agr_o, len(others)):  # how often LLM consensus is right
                n_seen, n_right = self.agreed_seen
                self.agreed_seen = (n_seen + 1, n_right + int(y_o == human_out))
        if human_out is not None and len(others) >= 2 and asked.has(t, self.human):
            if self.summ:
                names = list(others)
                emb = self._embed([others[a] for a in names])
                ref_o = others[names[self.agg.choose(emb, np.ones(len(names)))]]
            else:
                ref_o, _ = self.agg.vote(others, self.is_h, lambda: self.vote_priority(t))
            self.post_h.update(asked.get(t, self.human), self.similarity_reward(human_out, ref_o))
            asked.mark_rewarded(t, self.human)

    # ------------------------------------------------------------ dollars
    def dollars(self) -> None:
        cfg, T = self.cfg, self.T
        B = self.budget.remaining
        if self.budget.limit <= 0 or self.c_min > B + _EPS:
            self.info["note"] = "budget below one annotation: nothing was annotated"
            return
        # Phase 1: calibration ------------------------------------------------
        n_cal = calibration_size(
            B, T, self.c, self.c_h, cfg.calibration_share, cfg.calibration_budget
        )
        check = cfg.dollars_strategy != "bandit"
        # "auto"/"audit" first calibrate a probe, and only "bandit" needs the rest
        n_probe = probe_size(n_cal, cfg.probe_share) if check else n_cal
        small = cfg.dollars_strategy == "auto" and 0 < n_probe < cfg.probe_min
        if small and (cheap := self._audit_cheap()) is not None:
            self.info["panel_check"] = f"skipped: a probe of {n_probe} < probe_min items"
            self.info["n_calibration"] = 0
            self.info["dollars_strategy"] = "audit"
            self._audit_rest([], cheap)
            return
        if not n_cal:
            order = np.zeros(0, dtype=int)
        elif check and cfg.probe_order == "random":
            order = self.rng.permutation(T)[:n_cal]
        else:
            order = calibration_order(self.phi)
        cal = self._calibrate([int(t) for t in order[:n_probe]])
        if check:
            cheap, dominated = self._panel_check(cal)
            self.info["panel_dominated"] = dominated
            if cfg.dollars_strategy == "audit" or dominated:
                self.info["n_calibration"] = len(cal)
                self.info["dollars_strategy"] = "audit"
                self._audit_rest(cal, cheap)
                return
            cal += self._calibrate([int(t) for t in order[n_probe:n_cal]])
        self.info["n_calibration"] = len(cal)
        self.info["dollars_strategy"] = "bandit"

        # Phase 2: routing ----------------------------------------------------
        in_cal = np.zeros(T, dtype=bool)
        in_cal[cal] = True
        perm = self.rng.permutation(T)
        rest = perm[~in_cal[perm]].tolist()
        n_rest = len(rest)
        spare = self.budget.remaining - n_rest * self.c_min
        working = max(0.0, (1.0 - cfg.reserve_share) * spare)
        # b_t and the limits come from planned prices (outcome-independent)
        plan = SpendingPlan(self.budget.remaining, self.c_min, n_rest, cfg.pacing)
        pending: list[tuple[int, str]] = []
        lam = self._shadow_price(rest, working) if cfg.phase2_rule == "lagrangian" else 0.0
        self.info["shadow_price"] = lam
        for j, t in enumerate(rest):
            self.t_explore = len(cal) + j
            b = max(0.0, plan.left / self.budget.limit)
            x = self.context(t, b, (len(cal) + j) / T, np.zeros(self.K))
            q = self.q_values(x)
            allow = plan.allowance(j, working)
            # paper rule: escalations may pace on all the spare money, not only the working
            # share; the Lagrangian rule planned its humans inside the working share
            allow_h = plan.allowance(j, spare) if cfg.phase2_rule == "paper" else allow
            fits = [k for k in range(self.K) if plan.fits(self.c[k], j, allow) and self.alive(k)]
            if not fits:
                live = [k for k in np.argsort(self.c, kind="stable") if self.alive(int(k))]
                fits = [int(live[0])] if live and plan.covers_floor(j) else []
            human_ok = plan.fits(self.c_h, j, allow_h) and self.budget.can_afford(
                self.c_h, human=True
            )
            if cfg.phase2_rule == "lagrangian":
                q_lo = self.q_lower(x) if cfg.pessimism > 0 else q
                k, mode = lagrangian_choice(
                    q_lo[fits],
                    self.c[fits],
                    self.c_h,
                    human_ok=human_ok,
                    lam=lam,
                    human_quality=cfg.human_quality,
                    tau_h=cfg.tau_h,
                    epsilon=self.policy.epsilon(len(cal) + j),
                    rng=self.rng,
                )
            else:
                scores = q[fits] - cfg.cost_penalty * self.c[fits] / self.c_h
                policy = self.policy
                if cfg.adaptive_tau and n_rest:
                    per_item = max(0.0, spare - plan.extra_spent) / max(1, n_rest - j)
                    ratio = min(1.0, per_item / max(self.c_h - self.c_min, _EPS))
                    policy = policy.with_tau(adaptive_tau(cfg.tau_h, ratio))
                k, mode = policy.select(
                    q[fits], len(cal) + j, self.rng, human_allowed=human_ok, scores=scores
                )
            if k is None and mode == "none":
                self._log(t, "route", "-", "unaffordable", x, q)
                continue
            arm = self.human if k is None else self.llm_names[fits[k]]
            price = self.c_h if k is None else float(self.c[fits[k]])
            plan.take(price)
            self.asked.put(t, arm, x)
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

    def _calibrate(self, cal: list[int]) -> list[int]:
        """Human label and every LLM's answer on the items ``cal``; rewards to the posteriors."""
        reqs = []
        for t in cal:
            x = self.context(t, 1.0, 0.0, np.zeros(self.K))
            for a in [self.human, *self.llm_names]:
                reqs.append((self.ids[t], a))
                self.asked.put(t, a, x)
                self._log(t, "calibration", a, "calibration", x, None)
        if reqs:
            self.rec.annotate_many(reqs, phase="calibration")
        for t in cal:
            self.mask[t] = 1.0
            self.settle(t)
        return list(cal)

    def _audit_cheap(self) -> str | None:
        """The LLM to audit with when no probe was made: the first live cheapest one."""
        live = [k for k in np.argsort(self.c, kind="stable") if self.alive(int(k))]
        if not live or self.c[live[0]] > self.c_min + _EPS:
            return None  # every cheapest LLM is dead: the bandit routes around it
        return self.llm_names[int(live[0])]

    def _panel_check(self, cal: list[int]) -> tuple[str, bool]:
        """The cheapest LLM to audit with, and whether the panel is dominated.

        Rewards of every LLM on the human-labelled calibration items go to
        :func:`~quorum.routing.calibration.panel_check` (``dollars_strategy``).
        """
        judged = [t for t in cal if self.human in self.outputs(t)]
        right = np.zeros((len(judged), self.K))
        for i, t in enumerate(judged):
            outs = self.outputs(t)
            right[i] = [
                self.similarity_reward(outs.get(a), outs[self.human]) for a in self.llm_names
            ]
        alive = np.array([self.alive(k) for k in range(self.K)], dtype=bool)
        check = panel_check(
            right,
            self.c,
            self.c_h,
            alive,
            human_quality=self.cfg.human_quality,
            dominance_z=self.cfg.dominance_z,
        )
        self.info["calibration_accuracy"] = dict(
            zip(self.llm_names, check.accuracy.tolist(), strict=True)
        )
        return self.llm_names[check.cheap], check.dominated

    def _audit_rest(self, cal: list[int], cheap: str) -> None:
        """Dollars, "audit": the cheapest LLM on every item left, humans on its likely errors."""
        in_cal = np.zeros(self.T, dtype=bool)
        in_cal[cal] = True
        perm = self.rng.permutation(self.T)
        rest = perm[~in_cal[perm]].astype(int)
        if self._adaptive_audit():
            self._calibration_errors(cal, cheap)
            plan = self._audit_by_plan(rest, cheap, self.cfg.dollars_audit_plan, trace_q=True)
            self.info["dollars_audit_plan"] = plan
            return
        n_h = audit_human_count(
            self.budget.remaining,
            len(rest),
            self.rec.price(cheap),
            self.c_h,
            self.budget.humans_left,
        )
        judged, errs = self._calibration_errors(cal, cheap)
        if self.summ and self.cfg.summary_audit == "random":
            self.info["auditor_order"] = "random (summary_audit)"
        else:
            rest = self._error_order(rest, judged, errs)
        # the trace keeps x_t and q_a(x_t) as in bandit routing (for the dashboard)
        b, p = self.budget.remaining_fraction, len(cal) / max(self.T, 1)
        X = self.contexts(rest, b, p, np.zeros((len(rest), self.K)))
        Q = np.column_stack([X @ self.post[a].mean_ for a in self.llm_names])
        self._send_split(rest, n_h, cheap, "audit", X, Q)

    def _send_split(
        self,
        rest: np.ndarray,
        n_h: int,
        cheap: str,
        human_mode: str,
        X: np.ndarray | None = None,
        Q: np.ndarray | None = None,
    ) -> None:
        """The first ``n_h`` items of ``rest`` to the human, the others to ``cheap``."""
        for i, t in enumerate(rest):
            arm, mode = (self.human, human_mode) if i < n_h else (cheap, "llm")
            x = None if X is None else X[i]
            self._log(int(t), "route", arm, mode, x, None if Q is None else Q[i])
        reqs = [(self.ids[t], self.human) for t in rest[:n_h]]
        reqs += [(self.ids[t], cheap) for t in rest[n_h:]]
        for i in range(0, len(reqs), self.cfg.batch_size):
            self.rec.annotate_many(reqs[i : i + self.cfg.batch_size], phase="route")

    def _shadow_price(self, rest: list[int], working: float) -> float:
        """lambda for phase 2 (:func:`~quorum.routing.policy.shadow_price`).

        The human is an arm with quality ``human_quality``; the money is what phase 2 may
        spend: the cheapest LLM on every item plus the working share.
        """
        if not rest:
            return 0.0
        b = self.budget.remaining_fraction
        X = self.contexts(rest, b, 0.5, np.zeros((len(rest), self.K)))
        Q = np.column_stack([self.q_lower(X), np.full(len(rest), self.cfg.human_quality)])
        price = np.append(self.c, self.c_h) / self.c_h
        return shadow_price(Q, price, self.c_h, len(rest) * self.c_min + working)

    def _flush(self, pending: list[tuple[int, str]]) -> None:
        if pending:
            self.rec.annotate_many([(self.ids[t], a) for t, a in pending], phase="route")
            pending.clear()

    def _open_arms(self, t: int) -> tuple[list[int], bool]:
        asked = self.rec.asked(self.ids[t])
        llms = [k for k, a in enumerate(self.llm_names) if a not in asked and self.alive(k)]
        return llms, self.human not in asked

    def refine(self) -> None:
        """Phase 3: extra annotations, the open item with the highest priority P_t first.

        Counts of open items (with and without an answer) are kept as items close, and the
        next item comes from a heap (:class:`~quorum.routing.refinement.PriorityQueue`),
        so a pick costs O(log T), not O(T).
        """
        cfg, T = self.cfg, self.T
        n_asked = np.array([len(self.rec.by_item.get(i, ())) for i in self.ids])
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
        # open items that have no answer yet: phase 3 keeps c_min for each of them
        n_unanswered = int(no_answer[open_].sum())

        queue: PriorityQueue | None = None

        def progress() -> float:
            """p_t in phase 3: the share of items that need nothing more (was 1.0 throughout)."""
            n_open = len(queue) if queue is not None else int(open_.sum())  # O(1) once queued
            return 1.0 - n_open / max(T, 1)

        def recompute() -> None:
            idx = np.flatnonzero(open_)
            if len(idx) == 0:
                return
            b = self.budget.remaining_fraction
            D = self.difficulty(self.contexts(idx, b, progress()))
            prio[idx] = D + delta[idx] + (1.0 - has_h[idx])

        recompute()
        queue = PriorityQueue(prio, open_)

        def close(t: int) -> None:
            nonlocal n_unanswered
            if open_[t] and no_answer[t]:
                n_unanswered -= 1
            queue.close(t)
            prio[t] = -np.inf

        picks = 0
        while len(queue):
            self.t_explore = T + picks  # phase 2 made T decisions (calibration included)
            t = queue.top()
            # keep money to give a first annotation to the *other* open items that still have
            # none: budget.first_answer_reserve, kept incrementally (n_unanswered counts t)
            keep = float(n_unanswered - int(bool(no_answer[t]))) * self.c_min
            llms, human_free = self._open_arms(t)
            x = self.context(t, self.budget.remaining_fraction, progress())
            fits = [k for k in llms if self.rec.can_afford(self.llm_names[k], keep=keep)]
            human_ok = human_free and self.rec.can_afford(self.human, keep=keep)
            if not fits and not human_ok:
                close(t)
                if not (self.budget.can_afford(self.c_min)):
                    break
                continue
            q = self.q_values(x)
            _, agr, n = self.aggregate(t)
            if cfg.escalate_disagreement and human_ok and n >= 2 and not self.agg.consensus(agr, n):
                k, mode = None, "disagreement"
            elif cfg.extra_arm_rule == "value":
                k, mode = self._value_choice(t, q, fits, human_ok)
                if mode == "none":  # nothing to gain on t: it is done, nothing is bought
                    self.settle(t)
                    close(t)
                    continue
            else:
                qs = q[fits] if fits else np.array([])
                scores = qs - cfg.cost_penalty * self.c[fits] / self.c_h if fits else None
                policy = self.policy
                if cfg.adaptive_tau:
                    need = max(1.0, float(len(queue))) * self.c_h
                    ratio = min(1.0, self.budget.remaining / need)
                    policy = policy.with_tau(adaptive_tau(cfg.tau_h, ratio))
                k, mode = policy.select(
                    qs, self.t_explore, self.rng, human_allowed=human_ok, scores=scores
                )
            arm = self.human if k is None else self.llm_names[fits[k]]
            self.asked.put(t, arm, x)
            self._log(t, "extra", arm, mode, x, q, float(prio[t]))
            self.rec.annotate(self.ids[t], arm, phase="extra")
            if k is not None:
                self.mask[t, fits[k]] = 1.0
            n_asked[t] += 1
            outs = self.outputs(t)
            was_unanswered = bool(no_answer[t])
            no_answer[t] = len(outs) == 0
            n_unanswered += int(no_answer[t]) - int(was_unanswered)
            _y, agr, n = self.aggregate(t)
            done = (
                self.human in outs
                or (n >= 2 and self.agg.consensus(agr, n))
                or n_asked[t] >= cfg.max_annotations
            )
            if done:
                self.settle(t)
                close(t)
            else:
                delta[t] = self.delta(t)
                has_h[t] = float(self.human in outs)
                idx = np.array([t])
                xv = self.context(t, self.budget.remaining_fraction, progress())[None, :]
                D = self.difficulty(xv)
                prio[idx] = D + delta[idx] + (1.0 - has_h[idx])
                queue.push(t)
            picks += 1
            if picks % max(cfg.priority_refresh, len(queue) // 50 + 1) == 0:
                recompute()
                queue.rebuild()
        if cfg.spend_leftover:
            self.leftover_humans(n_asked)

    def _value_choice(
        self, t: int, q: np.ndarray, fits: list[int], human_ok: bool
    ) -> tuple[int | None, str]:
        """Arm for item t's next annotation (:func:`~quorum.routing.policy.value_choice`).

        p, the chance that the current label is right, is the q of its best agreeing LLM.
        """
        # the exploration draw comes first, as in value_choice (aggregation uses no rng)
        qc = np.clip(q, 0.0, 1.0)
        outs = self.outputs(t)
        y, _, _ = self.aggregate(t)
        agree = [k for k, a in enumerate(self.llm_names) if a in outs and outs[a] == y]
        p = float(qc[agree].max()) if agree else 0.0
        return value_choice(
            qc[fits],
            self.c[fits],
            self.c_h,
            p,
            human_ok=human_ok,
            epsilon=self.policy.epsilon(self.t_explore),
            rng=self.rng,
        )

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
        X = self.contexts(cand, b, 1.0)
        D = self.difficulty(X)
        agr = np.array([self.aggregate(t)[1] for t in cand])
        prio = D + (1.0 - agr)
        n_afford = int(self.budget.remaining / self.c_h + 1e-9)
        if self.budget.humans_left is not None:
            n_afford = min(n_afford, self.budget.humans_left)
        order = np.argsort(-prio, kind="stable")[:n_afford]
        chosen = cand[order]
        for pos, t in zip(order, chosen, strict=True):
            self.asked.put(int(t), self.human, X[pos])
            self._log(int(t), "leftover", self.human, "leftover", None, None, None)
        reqs = [(self.ids[t], self.human) for t in chosen]
        for i in range(0, len(reqs), cfg.batch_size):
            self.rec.annotate_many(reqs[i : i + cfg.batch_size], phase="leftover")

    # ------------------------------------------------------------ auditor
    def auditor(self) -> None:
        cfg, T = self.cfg, self.T
        B = int(min(self.p.human_budget or 0, T))
        cheap = self.llm_names[int(np.argmin(self.c))]
        order = self.rng.permutation(T)
        if self.summ and cfg.summary_audit == "random":
            self.info["auditor_order"] = "random (summary_audit)"
            self._send_split(order.astype(int), B, cheap, "random")
            return
        n_cal = round(cfg.calibration_share * B)
        n_cal = min(n_cal, B)
        cal = [int(t) for t in order[:n_cal]]
        reqs = [(self.ids[t], a) for t in cal for a in (self.human, cheap)]
        for t in cal:
            self._log(t, "calibration", self.human, "calibration", None, None)
            self._log(t, "calibration", cheap, "calibration", None, None)
        self.rec.annotate_many(reqs, phase="calibration")
        judged, errs = self._calibration_errors(cal, cheap)
        rest = order[n_cal:].astype(int)
        n_h = B - len(cal)
        if self._adaptive_audit():  # within B c_H + T c_min, no give-up
            plan = self._audit_by_plan(rest, cheap, cfg.auditor_audit_plan, n_h)
            self.info["auditor_audit_plan"] = plan
            return
        if cfg.auditor_cost_match and len(cal) and self.c_h > self.c_min:
            give_up = cost_match_give_up(len(cal), self.c_min, self.c_h)
            n_h = max(0, n_h - give_up)
            self.info["human_labels_given_up"] = give_up
        rest = self._error_order(rest, judged, errs)
        self._send_split(rest, n_h, cheap, "error-centroid")

    def _calibration_errors(self, cal: list[int], cheap: str) -> tuple[list[int], list[int]]:
        """Calibration items with a human label, and those where ``cheap`` got it wrong."""
        judged, sims = [], []
        for t in cal:
            outs = self.outputs(t)
            y = outs.get(self.human)
            if y is not None:
                judged.append(t)
                sims.append(self.similarity_reward(outs.get(cheap), y))
        wrong = calibration_error_mask(np.array(sims), self.summ, self.cfg.summary_error_quantile)
        errs = [t for t, w in zip(judged, wrong, strict=True) if w]
        self.info["calibration_errors"] = len(errs)
        return judged, errs

    def _error_order(self, rest: np.ndarray, judged: list[int], errs: list[int]) -> np.ndarray:
        """``rest``, likeliest errors of the cheapest LLM first (``auditor_rule``)."""
        cfg = self.cfg
        space = self.p.embeddings if cfg.auditor_space == "embedding" else None
        if space is None:
            space = self.phi
        judged_a = np.asarray(judged, dtype=int)
        order, how = error_order(
            rest,
            judged_a,
            np.isin(judged_a, errs),
            space,
            rule=cfg.auditor_rule,
            k=cfg.auditor_k,
            cosine=cfg.auditor_space == "embedding",
            max_pairs=cfg.auditor_max_pairs,
        )
        self.info["auditor_order"] = how
        return order

    # ------------------------------------------------- label model (issue 14)
    def _adaptive_audit(self) -> bool:
        cfg = self.cfg
        return (
            cfg.audit_llm_first
            and self._label_model_fits()
            and cfg.max_annotations >= 2
            and not self.summ
            and bool(self.p.task.labels)
        )

    def _label_model_fits(self) -> bool:
        """The label model runs at this size (``label_model_max_items``); recorded in info."""
        n_items = self.T
        fits = n_items <= self.cfg.label_model_max_items
        self.info["label_model"] = "on" if fits else "off: more items than label_model_max_items"
        return fits

    def _label_space(self) -> np.ndarray:
        """Unit-norm item vectors for the label model: the embeddings, else standardised phi
        (computed once a run)."""
        if self._space is None:
            if self.p.embeddings is not None:
                self._space = np.asarray(self.p.embeddings, dtype=np.float64)
            else:
                z = (self.phi - self.phi.mean(0)) / (self.phi.std(0) + 1e-9)
                self._space = z / np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-12)
        return self._space

    def _human_labelled(self) -> tuple[np.ndarray, np.ndarray]:
        """Items with a usable human label and its label index."""
        labels = list(self.p.task.labels or [])
        idx = [t for t in range(self.T) if self.outputs(t).get(self.human) is not None]
        y = label_indices([self.outputs(t)[self.human] for t in idx], labels)
        return np.array(idx, dtype=int)[y >= 0], y[y >= 0]

    def _label_prior(
        self,
        query: np.ndarray,
        hum: np.ndarray,
        y_h: np.ndarray,
        neighbours: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> np.ndarray:
        """p(y | x) of the label model (``label_model_vote``) for the items ``query``;
        ``neighbours``: their k nearest items among ``hum``, if already searched."""
        cfg, L = self.cfg, len(self.p.task.labels or [])
        if cfg.label_model_vote == "skill+knn":
            space, strength = self._label_space(), cfg.label_model_strength
            if cfg.label_model_fit:
                strength = fit_knn_strength(space, hum, y_h, L, k=cfg.label_model_k)
                self.info["label_model_strength"] = strength
            return knn_label_probs(
                space,
                hum,
                y_h,
                query,
                L,
                k=cfg.label_model_k,
                strength=strength,
                neighbours=neighbours,
            )
        freq = (np.bincount(y_h, minlength=L) + 1.0) / (len(y_h) + L)
        return np.repeat(freq[None, :], len(query), axis=0)

    def _label_posterior(self, items: np.ndarray) -> np.ndarray:
        """P(y | answers) for ``items`` (n, L): the label model's prior (``label_model_vote``)
        and each LLM answer as a one-coin annotator, right with 1 - e_a(x), e_a its kNN
        error rate on the human-labelled items it answered
        (:mod:`~quorum.routing.label_model`)."""
        cfg, labels = self.cfg, list(self.p.task.labels or [])
        hum, y_h = self._human_labelled()
        space = self._label_space()
        votes = np.column_stack(
            [
                label_indices([self.outputs(t).get(a) for t in range(self.T)], labels)
                for a in self.llm_names
            ]
        )
        # the k nearest human-labelled items of each of ``items``: searched once, shared
        # by the kNN prior and by the error rate of every LLM that answered them all
        found: list[tuple[np.ndarray, np.ndarray]] = []

        def near() -> tuple[np.ndarray, np.ndarray]:
            if not found:
                found.append(knn_neighbours(space, np.asarray(items), hum, cfg.label_model_k))
            return found[0]

        acc = np.ones((len(items), self.K))
        for k in range(self.K):
            if not (votes[items, k] >= 0).any():
                continue
            judged = votes[hum, k] >= 0
            e = knn_error_rate(
                space,
                hum[judged],
                votes[hum[judged], k] != y_h[judged],
                items,
                k=cfg.label_model_k,
                strength=cfg.label_model_strength,
                neighbours=near() if len(hum) and judged.all() and len(items) else None,
            )
            acc[:, k] = 1.0 - e
        if cfg.label_model_vote == "off" or len(hum) == 0:
            prior = np.full((len(items), len(labels)), 1.0 / len(labels))
        else:
            knn = cfg.label_model_vote == "skill+knn" and len(items)
            prior = self._label_prior(items, hum, y_h, near() if knn else None)
        return one_coin_posterior(prior, votes[items], acc)

    def _wrong_probability(self, pool: np.ndarray) -> np.ndarray:
        """P(the label an item of ``pool`` would get without a human is wrong)."""
        return 1.0 - self._label_posterior(pool).max(axis=1)

    def _buy(
        self,
        items: np.ndarray,
        arm: str,
        mode: str,
        X: np.ndarray | None = None,
        Q: np.ndarray | None = None,
    ) -> None:
        """One answer of ``arm`` on each of ``items`` it has not been asked on yet: logged
        (with the rows of ``X`` and ``Q`` as x_t and q_a(x_t) when given), then bought in
        batches. An (item, annotator) pair is never paid twice."""
        items = np.asarray(items, dtype=int)
        new = ~self._asked(items, arm)
        if not new.all():
            items = items[new]
            X = None if X is None else X[new]
            Q = None if Q is None else Q[new]
        for i, t in enumerate(items):
            x, q = (None, None) if X is None or Q is None else (X[i], Q[i])
            self._log(int(t), "route", arm, mode, x, q)
        reqs = [(self.ids[t], arm) for t in items]
        for i in range(0, len(reqs), self.cfg.batch_size):
            self.rec.annotate_many(reqs[i : i + self.cfg.batch_size], phase="route")

    def _audit_adaptive(
        self,
        rest: np.ndarray,
        cheap: str,
        n_h: int | None,
        trace_q: bool = False,
        answered: np.ndarray | None = None,
    ) -> None:
        """``audit_llm_first``: the cheapest LLM on every item of ``rest``, then humans in
        ``audit_rounds`` rounds on the items whose label is likeliest wrong (those of
        ``rest`` and ``answered``, items the LLM has already answered). ``trace_q``:
        the trace keeps x_t and q_a(x_t) as in bandit routing (dollars, for the dashboard)."""
        cfg = self.cfg
        X = Q = None
        if trace_q:
            b, p = self.budget.remaining_fraction, (self.T - len(rest)) / max(self.T, 1)
            X = self.contexts(rest, b, p, np.zeros((len(rest), self.K)))
            Q = np.column_stack([X @ self.post[a].mean_ for a in self.llm_names])
        self._buy(rest, cheap, "llm", X, Q)
        n_afford = int(self.budget.remaining / self.c_h + 1e-9) if self.c_h > 0 else len(rest)
        n_h = n_afford if n_h is None else min(n_h, n_afford)
        if self.budget.humans_left is not None:
            n_h = min(n_h, self.budget.humans_left)
        pool = np.asarray(rest, dtype=int)
        if answered is not None and len(answered):
            pool = np.concatenate([np.asarray(answered, dtype=int), pool])
        n_h = max(0, min(n_h, len(pool)))
        self.info["auditor_order"] = "label-model posterior, rounds"
        for size in np.diff(np.linspace(0, n_h, cfg.audit_rounds + 1).round().astype(int)):
            if size <= 0 or len(pool) == 0:
                continue
            score = self._wrong_probability(pool)
            pick = pool[np.argsort(-score, kind="stable")[:size]]
            self._buy(pick, self.human, "audit")
            pool = pool[~np.isin(pool, pick)]

    def _audit_by_plan(
        self,
        rest: np.ndarray,
        cheap: str,
        plan: str,
        n_h: int | None = None,
        trace_q: bool = False,
    ) -> str:
        """Audit ``rest`` by ``plan`` ("llm-first", "humans-instead", "humans-only", or
        "check", which first picks one of the first two on a sample); "humans-only" whatever
        the plan where the cheapest LLM's answers add too little (:meth:`_llm_adds_little`).
        Returns the plan taken."""
        answered = np.zeros(0, dtype=int)
        if plan != "humans-only" and self._llm_adds_little(rest, cheap):
            plan = "humans-only"
        if plan == "check":
            rest, answered, plan = self._audit_check(rest, cheap)
        if plan == "humans-only":
            self._audit_humans_instead(rest, cheap, n_h, llm_rest=False)
        elif plan == "humans-instead":
            self._audit_humans_instead(rest, cheap)
        else:
            self._audit_adaptive(rest, cheap, n_h, trace_q=trace_q, answered=answered)
        return plan

    def _audit_check(self, rest: np.ndarray, cheap: str) -> tuple[np.ndarray, np.ndarray, str]:
        """``dollars_audit_plan`` or ``auditor_audit_plan="check"``: both plans' choice of
        humans on a random sample, then the plan whose humans changed more labels there per
        unit of money.

        The cheapest LLM answers ``audit_check_share`` of ``rest`` (in random order), and the
        sample gets the humans "llm-first" would afford on it: half go to the items whose
        label is likeliest wrong given the LLM's answer (llm-first's choice), half to those
        whose label model prior p(y | x) is least sure (humans-instead's choice, made
        without the answer). Each half's share of labels the human changed (Beta(1, 1)),
        p_first and p_instead, is what a human fixes there; "llm-first" goes on iff
        p_first / c_H >= p_instead / (c_H - c_l), the fixes per unit of money (a human
        bought instead of the LLM costs c_H - c_l more than the LLM alone). Where the
        sample would get fewer than ``audit_check_min`` humans, nothing is sampled and the
        run keeps "llm-first" (too few labels to tell). Returns the items left,
        the sample's items the LLM answered and no human checked, and the plan."""
        cfg = self.cfg
        rest = np.asarray(rest, dtype=int)
        c_l = self.rec.price(cheap)
        m = int(np.ceil(cfg.audit_check_share * len(rest)))
        todo = self._not_asked(rest, cheap)
        afford = (self.budget.remaining - todo * c_l) / self.c_h if self.c_h > 0 else 0.0
        n_s = int(max(0.0, afford) * m / max(len(rest), 1) + 1e-9)
        if self.budget.humans_left is not None:
            n_s = min(n_s, self.budget.humans_left)
        if n_s < cfg.audit_check_min or self.c_h <= c_l:
            return rest, np.zeros(0, dtype=int), "llm-first"
        sample, rest = rest[:m], rest[m:]
        self._buy(sample, cheap, "llm")
        labels = list(self.p.task.labels or [])
        post = self._label_posterior(sample)
        guess, w = post.argmax(axis=1), 1.0 - post.max(axis=1)
        hum, y_h = self._human_labelled()
        u = 1.0 - self._label_prior(sample, hum, y_h).max(axis=1) if len(hum) else 0.0 * w
        # half of the sample's humans to each plan's choice: the largest w (llm-first),
        # the least sure prior (humans-instead, which does not see the LLM's answer)
        by_w = np.argsort(-w, kind="stable")[: (n_s + 1) // 2]
        order_u = np.argsort(-u, kind="stable")
        by_u = order_u[~np.isin(order_u, by_w)][: n_s - len(by_w)]
        pick = sample[np.concatenate([by_w, by_u])]
        self._buy(pick, self.human, "audit")

        def found(rows: np.ndarray) -> tuple[int, int]:
            """(labels that the human changed, human labels) among the sample's ``rows``."""
            y = label_indices([self.outputs(int(sample[j])).get(self.human) for j in rows], labels)
            ok = y >= 0
            return int((y[ok] != guess[rows][ok]).sum()), int(ok.sum())

        (f_w, n_w), (f_u, n_u) = found(by_w), found(by_u)
        p_w, p_u = (f_w + 1.0) / (n_w + 2.0), (f_u + 1.0) / (n_u + 2.0)
        plan = "llm-first" if p_w / self.c_h >= p_u / (self.c_h - c_l) else "humans-instead"
        self.info["audit_check"] = {
            "sample": int(m),
            "humans": len(pick),
            "fixed_llm_first": [f_w, n_w],
            "fixed_humans_instead": [f_u, n_u],
            "plan": plan,
        }
        answered = sample[~np.isin(sample, pick)]
        return rest, answered, plan

    def _audit_humans_instead(
        self, rest: np.ndarray, cheap: str, n_max: int | None = None, llm_rest: bool = True
    ) -> None:
        """``*_audit_plan="humans-instead"``: every item of ``rest`` gets one answer, a
        human's or the cheapest LLM's, so the money buys (M - U c_l) / (c_H - c_l) humans
        (U: the items of ``rest`` the LLM has not answered); in ``audit_rounds`` rounds
        humans go to the items whose label model prior p(y | x) is least sure (refitted
        after each round), and the cheapest LLM answers the items left.
        ``llm_rest=False`` ("humans-only"): no LLM answers, the money buys M / c_H humans
        (at most ``n_max``), and the items nobody was asked on are labelled by
        :meth:`_unasked_labels`."""
        cfg = self.cfg
        pool = np.asarray(rest, dtype=int)
        c_l = self.rec.price(cheap) if llm_rest else 0.0
        spare = self.budget.remaining - self._not_asked(pool, cheap) * c_l
        step = self.c_h - c_l
        n_h = int(spare / step + 1e-9) if step > 0 and spare > 0 else 0
        if n_max is not None:
            n_h = min(n_h, n_max)
        if self.budget.humans_left is not None:
            n_h = min(n_h, self.budget.humans_left)
        n_h = max(0, min(n_h, len(pool)))
        self.info["auditor_order"] = "label-model prior, rounds"
        L = len(self.p.task.labels or [])
        for size in np.diff(np.linspace(0, n_h, cfg.audit_rounds + 1).round().astype(int)):
            if size <= 0 or len(pool) == 0:
                continue
            hum, y_h = self._human_labelled()
            if len(hum):
                score = 1.0 - self._label_prior(pool, hum, y_h).max(axis=1)
            else:
                score = np.full(len(pool), 1.0 - 1.0 / max(L, 1))
            pick = pool[np.argsort(-score, kind="stable")[:size]]
            self._buy(pick, self.human, "audit")
            pool = pool[~np.isin(pool, pick)]
        if llm_rest:
            self._buy(pool, cheap, "llm")

    def _unasked_labels(self, items: np.ndarray) -> list[str]:
        """ "humans-only": labels of ``items``, which nobody was asked on.

        The label model's prior is a kNN vote of the human labels shrunk towards their
        frequencies. The frequencies say nothing of an item and, where a dataset is
        balanced by construction, the commonest human label is the one the rest has
        least of (talklife, auditor 70%: right on 28% of these items, against 34% for the
        LLM's constant answer). So these items get the kNN vote shrunk towards the uniform
        distribution instead, and where the fit found the neighbours uninformative (the
        largest pseudo-count, :func:`~quorum.routing.label_model.fit_knn_strength`) the
        LLM's commonest answer, what it would have said there."""
        cfg, labels = self.cfg, list(self.p.task.labels or [])
        fixed = STRENGTH_GRID[-1] if cfg.label_model_fit else cfg.label_model_strength
        strength = self.info.get("label_model_strength", fixed)
        hum, y_h = self._human_labelled()
        answer = self._unasked_label
        if cfg.label_model_vote != "skill+knn" or strength >= STRENGTH_GRID[-1] or not len(hum):
            self.info["unasked_labels"] = "llm's commonest answer"
            return [answer] * len(items)
        L = len(labels)
        c, tot = knn_counts(self._label_space(), hum, y_h, items, L, cfg.label_model_k)
        p = (c + strength / L) / (tot + strength)
        self.info["unasked_labels"] = "kNN vote, uniform prior"
        return [labels[int(j)] for j in p.argmax(axis=1)]

    def _asked(self, items: np.ndarray, arm: str) -> np.ndarray:
        """Whether ``arm`` has been asked on each of ``items`` (a boolean array)."""
        by_item = self.rec.by_item
        return np.array([arm in by_item.get(self.ids[t], ()) for t in items], dtype=bool)

    def _not_asked(self, items: np.ndarray, arm: str) -> int:
        """How many of ``items`` ``arm`` has not been asked on."""
        return int((~self._asked(items, arm)).sum())

    def _llm_adds_little(self, rest: np.ndarray, cheap: str) -> bool:
        """``llm_sample``: True where the cheapest LLM's answers are worth less than the
        human labels their price buys instead, judged without any label.

        It answers ``llm_sample`` items (those it answered already, then the first items
        of ``rest``, which is in random order). Its answer can take an item's label away
        from the label model's only where it is not its commonest answer, so
        r = (answers that differ from it + 1) / (answers + 2) bounds the accuracy it adds
        per item; the price c_l buys c_l / c_H of a human label, which fixes the label
        model's label with probability 1 - p_maj at most (p_maj: the commonest human
        label's Beta(1)-smoothed share; 1/L without human labels). Returns r < (c_l / c_H)
        (1 - p_maj) and records the numbers in ``info["llm_sample"]``. When True, the items
        nobody is asked on are labelled by :meth:`_unasked_labels`."""
        cfg, labels = self.cfg, list(self.p.task.labels or [])
        if cfg.llm_sample <= 0 or cfg.label_model_vote == "off" or not labels:
            return False
        c_l = self.rec.price(cheap)
        if self.c_h <= c_l:
            return False
        need = max(0, cfg.llm_sample - int(self._asked(np.arange(self.T), cheap).sum()))
        if need:
            self._buy(np.asarray(rest, dtype=int)[:need], cheap, "llm")
        answers = [o[cheap] for o in (self.outputs(t) for t in range(self.T)) if cheap in o]
        if not answers:
            return False
        mode, common = Counter(answers).most_common(1)[0]
        r = (len(answers) - common + 1.0) / (len(answers) + 2.0)
        _, y_h = self._human_labelled()
        L = len(labels)
        p_maj = (np.bincount(y_h, minlength=L).max() + 1.0) / (len(y_h) + L) if len(y_h) else 1 / L
        worth = c_l / self.c_h * (1.0 - p_maj)
        self.info["llm_sample"] = {
            "answers": len(answers),
            "differ_from_commonest": len(answers) - common,
            "r": float(r),
            "humans_worth": float(worth),
            "humans_only": bool(r < worth),
        }
        if r >= worth:
            return False
        self._unasked_label = mode if mode in labels else None
        return True

    def _final_votes(self) -> dict[int, str]:
        """``label_model_vote``: labels of the items without a human label, the argmax of
        :meth:`_label_posterior` (labels only)."""
        cfg, labels = self.cfg, list(self.p.task.labels or [])
        if cfg.label_model_vote == "off" or self.summ or not labels:
            return {}
        if not self._label_model_fits():
            return {}
        if self.info.get("dollars_strategy") == "bandit" and not cfg.label_model_bandit:
            return {}  # escalated human labels are no fair sample of the LLMs' errors
        if len(self._human_labelled()[0]) == 0:
            return {}
        todo = np.array([t for t in range(self.T) if self.human not in self.outputs(t)], dtype=int)
        if len(todo) == 0:
            return {}
        best = self._label_posterior(todo).argmax(axis=1)
        final = {int(t): labels[int(j)] for t, j in zip(todo, best, strict=True)}
        if self._unasked_label is not None:
            unasked = np.array([t for t in todo if not self.rec.by_item.get(self.ids[t])], int)
            if len(unasked):
                final.update(zip(unasked.tolist(), self._unasked_labels(unasked), strict=True))
        return final

    # ------------------------------------------------------------ result
    def result(self) -> RoutingResult:
        cols: dict[str, list] = {c: [] for c in LABEL_COLUMNS}  # one list per column
        final = self._final_votes()
        for t in range(self.T):
            item = self.ids[t]
            outs = self.outputs(t)
            if self.p.setting == "auditor" and self.human in outs:
                y, agr, _n = outs[self.human], 1.0, len(outs)
            else:
                y, agr, _n = self.aggregate(t)
            answers = self.rec.by_item.get(item, {})
            y = final.get(t, y)
            cols["item_id"].append(item)
            cols["output"].append(y)
            cols["n_annotations"].append(len(answers))
            cols["agreement"].append(agr)
            cols["human"].append(self.human in outs)
            cols["annotators"].append(";".join(answers))
        labels = pd.DataFrame(cols, columns=LABEL_COLUMNS)
        self.info["context_names"] = list(self.ctx.names_)
        self.info["posterior_means"] = {a: p.mean_.tolist() for a, p in self.post.items()}
        self.info["posterior_means"][self.human] = self.post_h.mean_.tolist()
        return RoutingResult(
            method=self.method,
            setting=self.p.setting,
            seed=self.seed,
            labels=labels,
            annotations=self.rec.frame(),
            budget_limit=self.budget.limit,
            cost=self.budget.spent,
            human_labels=self.budget.human_used,
            llm_calls=self.rec.llm_calls,
            trace=self.trace.frame(),
            info=self.info,
        )
