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

Choices the paper leaves open are parameters, documented in docs/router.md. This module
holds the estimator (its parameters); the run is :mod:`~quorum.routing.quorum.flow` (the two
settings, step by step) over the state of :mod:`~quorum.routing.quorum.run`.
"""

from __future__ import annotations

import inspect
from typing import Any

from quorum.routing.core.base import AnnotationSource, Router, RoutingProblem, RoutingResult
from quorum.routing.core.budget import Budget
from quorum.routing.quorum import flow
from quorum.routing.quorum.calibration import mahalanobis_uncertainty
from quorum.routing.quorum.final_labels import result
from quorum.routing.quorum.params import QuorumParams
from quorum.routing.quorum.policy import EpsilonGreedyPolicy
from quorum.routing.quorum.run import QuorumRun

__all__ = ["QuorumRouter", "mahalanobis_uncertainty"]


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
        (1 - that) / (labels - 1) (:func:`~quorum.routing.quorum.calibration.agreement_reward`);
        "one": 1 and 0 (shared errors are then learned as correct).
    label_model_vote : final label of an item without a human label (labels only; ours).
        "skill+knn" (default): the one-coin posterior of its answers, each LLM right with
        1 - e_a(x), its kNN error rate on the human-labelled items it answered, under the
        prior of a kNN label model over every human label bought
        (:mod:`~quorum.routing.core.label_model`); "skill": the same with the human label
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
        of the human labels (:func:`~quorum.routing.core.label_model.fit_knn_strength`), so that
        neighbours that say nothing about the label fall back to the label frequencies.
    label_model_bandit : also use ``label_model_vote`` after bandit routing (dollars, panel
        not dominated). Off: there the human labels are escalations, bought where the LLMs
        disagreed or looked weak, so they overstate the LLMs' error rates (IMDB, dollars
        30%: 0.889 with it, 0.929 without).
    label_model_max_items : the label model (``label_model_vote``, ``audit_llm_first``) runs
        on problems of at most this many items (50,000). Its kNN search is exact, so a
        round costs O(T x human labels): above the cap the run uses the one-shot audit and
        the weighted vote, and ``info["label_model"]`` says so.
    posterior_backend : "numba" (compiled posterior kernels,
    :mod:`quorum.routing.quorum.compiled.kernels`)
        or "numpy" (the reference path; the results before the kernels, which differ from
        it only in the order of some float sums: docs/performance.md).
    loop_backend : "numba": in replay (a source with fixed answers,
        :mod:`quorum.routing.quorum.compiled.fixed_answers`) the dollars setting's per-item loops
        run
        compiled (:mod:`quorum.routing.quorum.compiled.phase2_loop`,
        :mod:`quorum.routing.quorum.compiled.phase3_loop`);
        "python": always the Python loops (the reference path; live sources always
        take it).
    """

    name = "quorum"
    supports_summarization = True
    uses_item_features = True
    is_quorum = True

    def __init__(self, **params: Any) -> None:
        """Every hyperparameter a named keyword argument, kept as given (scikit-learn
        style). The names, defaults and types are :class:`QuorumParams`'s fields, written
        once there (``__init__.__signature__``, what ``get_params`` and ``help`` read)."""
        unknown = sorted(set(params) - set(QuorumParams.model_fields))
        if unknown:
            raise TypeError(f"QuorumRouter() got unexpected keyword arguments {unknown}")
        for name, field in QuorumParams.model_fields.items():
            setattr(self, name, params.get(name, field.default))
        self._validate()

    __init__.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [
            inspect.Parameter(
                k, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=f.annotation
            )
            for k, f in QuorumParams.model_fields.items()
        ]
    )

    @property
    def params(self) -> QuorumParams:
        """The hyperparameters, validated (:class:`~quorum.routing.quorum.params.QuorumParams`)."""
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
        run = QuorumRun(params, problem, source, budget, seed, method=self.name)
        plans = flow.Plans.of(params)  # every plan, chosen once
        if problem.setting == "auditor":
            flow.auditor(run, plans)
            return result(run)
        path = flow.dollars(run, plans)
        return result(run, after_bandit=path is flow.DollarsPath.BANDIT)
