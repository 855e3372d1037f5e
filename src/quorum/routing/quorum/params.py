"""QUORUM's hyperparameters as one validated, immutable object.

:class:`~quorum.routing.quorum.router.QuorumRouter` takes every hyperparameter as a named
``__init__`` argument (scikit-learn style) and validates them here before each run, so
a bad value fails with the field's name and its allowed range, and a run reads its
settings from one frozen object (``router.params``). Each field is described once, in
:data:`DESCRIPTIONS`, and belongs to one group of :data:`GROUPS` (one concept each, as
MABWiser groups a learning policy); the router's docstring is made from them
(:func:`parameters_doc`), and each group is also a validated object of its own
(:func:`group_models`: ``QuorumRouter(exploration=Exploration(tau_h=0.6))`` is
``QuorumRouter(tau_h=0.6)``). The constraints live only here.

Examples
--------
>>> from quorum.routing.quorum.params import QuorumParams
>>> QuorumParams(tau_h=0.6).tau_h
0.6
>>> QuorumParams(reserve_share=1.5)
Traceback (most recent call last):
...
ValueError: reserve_share: Input should be less than or equal to 1 (got 1.5)
"""

from __future__ import annotations

import textwrap
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator

__all__ = [
    "DESCRIPTIONS",
    "GROUPS",
    "Aggregation",
    "Auditing",
    "Calibration",
    "Engineering",
    "Exploration",
    "LabelModel",
    "Posterior",
    "QuorumParams",
    "Refinement",
    "Spending",
    "group_models",
    "parameters_doc",
]


class QuorumParams(BaseModel):
    """Every QuorumRouter hyperparameter with its default and allowed range."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)

    # escalation and exploration (paper: tau_H, epsilon_0, gamma)
    tau_h: float = Field(0.5, ge=0.0, le=1.0)
    epsilon0: float = Field(0.3, ge=0.0, le=1.0)
    gamma: float = Field(0.005, ge=0.0)
    # aggregation (paper: w_H, w_LLM, consensus threshold, max annotations)
    w_human: float = Field(10.0, gt=0.0)
    w_llm: float = Field(1.0, gt=0.0)
    consensus_threshold: float = Field(0.66, ge=0.0, le=1.0)
    max_annotations: int = Field(3, ge=1)
    # calibration
    calibration_share: float = Field(0.2, ge=0.0, le=1.0)
    calibration_budget: Literal["money", "items"] = "money"
    # priors and noise of the Bayesian linear posteriors
    prior_mean_human: float = 0.3
    prior_var_human: float = Field(0.5, gt=0.0)
    prior_var_llm: float = Field(1.0, gt=0.0)
    reward_noise: float = Field(1.0, gt=0.0)
    budget_prior_var: float = Field(1e-3, gt=0.0)
    include_bias: bool = True
    # spending (ours)
    reserve_share: float = Field(0.5, ge=0.0, le=1.0)
    pacing: bool = True
    cost_penalty: float = Field(1.0, ge=0.0)
    phase2_rule: Literal["lagrangian", "paper"] = "lagrangian"
    human_quality: float = Field(1.0, ge=0.0, le=1.0)
    pessimism: float = Field(0.0, ge=0.0)
    adaptive_tau: bool = True
    # refinement (phase 3)
    escalate_disagreement: bool = True
    agreement_reward: bool = True
    agreement_reward_value: Literal["calibrated", "one"] = "calibrated"
    extra_arm_rule: Literal["value", "paper"] = "value"
    priority_refresh: int = Field(64, ge=1)
    spend_leftover: bool = True
    # auditing (auditor setting, and dollars when the panel is dominated)
    auditor_space: Literal["embedding", "features"] = "embedding"
    auditor_rule: Literal["knn", "centroid"] = "knn"
    auditor_k: int = Field(10, ge=1)
    auditor_max_pairs: int = Field(2**29, ge=1)
    summary_error_quantile: float = Field(0.5, ge=0.0, le=1.0)
    summary_audit: Literal[
        "random", "longest", "lead", "central", "focused", "checked", "calibrated"
    ] = "central"
    summary_lead_sentences: int = Field(3, ge=1)
    summary_check_share: float = Field(0.1, ge=0.0, le=1.0)
    summary_check_min: int = Field(10, ge=0)
    summary_check_z: float = 0.0
    summary_check_target: Literal["lead", "llm"] = "lead"
    auditor_cost_match: bool = False
    value_audit_order: Literal["random", "fewest-marks", "by-value", "if-free"] = "if-free"
    value_margin: float = Field(0.0, ge=0.0)
    value_order_key: Literal["marks", "top-type"] = "top-type"
    probe_step: int = Field(8, ge=0)
    probe_bootstrap: int = Field(200, ge=1)
    dollars_strategy: Literal["auto", "audit", "bandit"] = "auto"
    probe_share: float = Field(0.5, gt=0.0, le=1.0)
    probe_order: Literal["uncertainty", "random"] = "random"
    probe_min: int = Field(40, ge=0)
    dominance_z: float = Field(2.0, ge=0.0)
    # the label model learned from the human labels bought so far (ours, issue 14)
    label_model_vote: Literal["off", "skill", "skill+knn"] = "skill+knn"
    audit_llm_first: bool = True
    audit_rounds: int = Field(5, ge=1)
    dollars_audit_plan: Literal["llm-first", "humans-instead", "humans-only", "check"] = "check"
    auditor_audit_plan: Literal["llm-first", "humans-instead", "humans-only", "check"] = "check"
    llm_sample: int = Field(40, ge=0)
    audit_check_share: float = Field(0.25, gt=0.0, le=1.0)
    audit_check_min: int = Field(40, ge=2)
    audit_check_confidence: float = Field(0.9, ge=0.5, lt=1.0)
    label_model_k: int = Field(10, ge=1)
    label_model_strength: float = Field(2.0, gt=0.0)
    label_model_fit: bool = True
    label_model_bandit: bool = False
    label_model_max_items: int = Field(50_000, ge=0)
    label_model_final_prior: Literal["frequencies", "uniform"] = "frequencies"
    label_model_final_floor: Literal["none", "chance"] = "none"
    # engineering
    batch_size: int = Field(256, ge=1)
    posterior_backend: Literal["numba", "numpy"] = "numba"
    loop_backend: Literal["numba", "python"] = "numba"

    @model_validator(mode="before")
    @classmethod
    def _no_bool_numbers(cls, data: Any) -> Any:
        """``True`` is not a number here (pydantic would read it as 1)."""
        if isinstance(data, dict):
            for k, v in data.items():
                field = cls.model_fields.get(k)
                if field is not None and field.annotation in (float, int) and isinstance(v, bool):
                    raise ValueError(f"{k}: expected a number, got {v!r}")
        return data

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise ValueError(_one_line(exc)) from None


def _one_line(exc: ValidationError) -> str:
    """``field: message (got value)`` for each error, joined by ``; ``."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "parameters"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            parts.append(f"unknown parameter {loc!r}")
        elif "input" in err and err["type"] != "value_error":
            parts.append(f"{loc}: {msg} (got {err['input']!r})")
        else:
            parts.append(msg if msg.startswith(f"{loc}:") else f"{loc}: {msg}")
    return "; ".join(parts)


#: the parameter groups, one concept each, in the order the docstring lists them:
#: key -> (class name, what the group is, its fields)
GROUPS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "exploration": (
        "Exploration",
        "routing and escalation (paper: tau_H, epsilon_0, gamma; phase 2's rule is ours)",
        (
            "tau_h",
            "epsilon0",
            "gamma",
            "adaptive_tau",
            "phase2_rule",
            "cost_penalty",
            "human_quality",
            "pessimism",
        ),
    ),
    "aggregation": (
        "Aggregation",
        "aggregation (paper: w_H, w_LLM, the consensus threshold, at most 3 annotations)",
        ("w_human", "w_llm", "consensus_threshold", "max_annotations"),
    ),
    "calibration": (
        "Calibration",
        "calibration and the panel check (dollars)",
        (
            "calibration_share",
            "calibration_budget",
            "dollars_strategy",
            "probe_share",
            "probe_order",
            "probe_min",
            "dominance_z",
        ),
    ),
    "posterior": (
        "Posterior",
        "the Bayesian linear posteriors (paper: the priors; the rest ours)",
        (
            "prior_mean_human",
            "prior_var_human",
            "prior_var_llm",
            "reward_noise",
            "budget_prior_var",
            "include_bias",
        ),
    ),
    "spending": (
        "Spending",
        "spending in phase 2 (ours)",
        ("reserve_share", "pacing", "batch_size"),
    ),
    "refinement": (
        "Refinement",
        "refinement, phase 3 (paper: the priority P_t; the arm rule is ours)",
        (
            "escalate_disagreement",
            "agreement_reward",
            "agreement_reward_value",
            "extra_arm_rule",
            "priority_refresh",
            "spend_leftover",
        ),
    ),
    "auditing": (
        "Auditing",
        "auditing (the auditor setting, and dollars when the panel is dominated)",
        (
            "auditor_space",
            "auditor_rule",
            "auditor_k",
            "auditor_max_pairs",
            "summary_error_quantile",
            "summary_audit",
            "summary_lead_sentences",
            "summary_check_share",
            "summary_check_min",
            "summary_check_z",
            "summary_check_target",
            "auditor_cost_match",
            "value_audit_order",
            "value_margin",
            "value_order_key",
            "probe_step",
            "probe_bootstrap",
        ),
    ),
    "label_model": (
        "LabelModel",
        "the label model learned from the human labels bought (ours, issue 14)",
        (
            "label_model_vote",
            "audit_llm_first",
            "audit_rounds",
            "dollars_audit_plan",
            "auditor_audit_plan",
            "llm_sample",
            "audit_check_share",
            "audit_check_min",
            "audit_check_confidence",
            "label_model_k",
            "label_model_strength",
            "label_model_fit",
            "label_model_bandit",
            "label_model_max_items",
            "label_model_final_prior",
            "label_model_final_floor",
        ),
    ),
    "engineering": (
        "Engineering",
        "engineering (the same results either way)",
        ("posterior_backend", "loop_backend"),
    ),
}

#: every parameter's description, written once (a key names one field, or fields described
#: together); the router's docstring and docs/router.md's table are made from it
DESCRIPTIONS: dict[str, str] = {
    "tau_h": ("escalation threshold tau_H (0.5)."),
    "epsilon0, gamma": ("exploration epsilon_t = epsilon0 / (1 + gamma t) (0.3, 0.005)."),
    "w_human, w_llm": ("vote weights w_H, w_LLM (10, 1)."),
    "calibration_share": ("share of the affordable human budget used for calibration (0.2)."),
    "calibration_budget": (
        '"money" (default): calibration may spend calibration_share * B, each calibration item '
        'costing c_H plus every LLM; "items": Algorithm 1\'s N_cal = floor(0.2 * floor(B / '
        "c_H)) items, which matches the money reading only when LLM answers on calibration "
        "items are free (as in the paper's replay)."
    ),
    "max_annotations": ("most annotations per item (3)."),
    "consensus_threshold": ("weighted agreement that stops extra annotations (0.66)."),
    "prior_mean_human, prior_var_human, prior_var_llm": (
        "priors mu_H = 0.3 * 1, Sigma_H = 0.5 I, Sigma_LLM = I, mu_LLM = 0."
    ),
    "reward_noise": (
        "sigma^2 of the reward model (ours: 1.0, the usual default of Bayesian linear bandits; "
        "0.25, the largest variance of a 0/1 reward, overfits the small calibration sets of "
        "300-500 item tasks)."
    ),
    "budget_prior_var": (
        "prior variance of the weights on b_t and p_t (ours: 1e-3; the other weights keep the "
        "paper's Sigma). Calibration sees b_t = 1, p_t = 0 only, so with a unit prior those "
        "weights absorb part of the intercept and q_a drifts as the budget drains; a tight "
        "prior keeps x_t as in the paper while letting only strong evidence make quality "
        "depend on budget or progress."
    ),
    "reserve_share": (
        "share of the money above the coverage floor that phase 2 may not touch, kept for "
        "phase 3 (B_reserved; ours: 0.5, half for first answers, half for refinement; see "
        "docs/router.md for the grid behind it)."
    ),
    "pacing": ("phase 2 spends its working budget at an even rate over the items (ours)."),
    "cost_penalty": (
        "lambda in score_a = q_a - lambda * c_a / c_H used to exploit (ours: 1, i.e. one human "
        "label is worth one unit of quality; 0 = the paper's pure argmax q, which in the "
        "dollars setting buys the dearest LLM everywhere)."
    ),
    "escalate_disagreement": (
        "in phase 3, an item whose annotations disagree goes to the human if affordable (ours; "
        "the paper's priority puts such items first but does not say which arm they get)."
    ),
    "agreement_reward": (
        "without a human label, reward an LLM by agreement with the weighted majority (issue "
        "spec); False = learn only from human labels."
    ),
    "include_bias": ("append a constant 1 to x_t (ours: q_a needs an intercept)."),
    "priority_refresh": ("recompute all priorities every this many phase-3 picks (speed)."),
    "auditor_space": ('"embedding" or "features": where the error centroid is computed.'),
    "auditor_rule": (
        '"knn" (ours, default: share of errors among the k nearest calibration items, k = '
        "min(auditor_k, |C| // 4), ties broken by the distance to the nearest error, so that "
        'several separate error regions all count) or "centroid" (Algorithm 2 as written: '
        "distance to the centroid of the calibration errors)."
    ),
    "auditor_max_pairs": (
        'most (remaining item, calibration item) distances the "knn" rule computes (ours: '
        "2^29; the largest bench cell, imdb-mlapi auditor 0.7, needs 7.5e7). Above it, the "
        "neighbours come from a fixed random sample of the calibration items, so that ordering "
        "a million items stays linear in the number of items."
    ),
    "spend_leftover": (
        "when no item is open any more and money remains, give human labels to settled items "
        "without one, highest priority first (ours: the paper's phase 3 runs \"while budget "
        'remains" but stops items on consensus).'
    ),
    "summary_error_quantile": (
        "auditor, summaries: a calibration summary counts as an error when its similarity to "
        "the human one is below this quantile."
    ),
    "summary_audit": (
        "which items get the human summaries when auditing (auditor setting, dollars audit "
        'path). "random" (ours): a random sample, with no calibration and no LLM '
        'answer on them (the default before issue 39); "longest" (ours): the items with the '
        "longest source texts first "
        "(an LLM's summary of a long source is further from the human one: +1 ROUGE-1 point "
        "on the bench's news summaries, -1 on SummEval's, docs/router.md); \"lead\" (ours, "
        "issue 39): in the auditor setting the cheapest LLM summarises every item first, then "
        "the humans get the items lowest on the mean rank of the summary's ROUGE-1 against "
        "its source's lead (the first ``summary_lead_sentences`` sentences) and the lead's "
        "against the rest of the source; in the dollars audit, where no summary is bought "
        "first, the sources whose lead is least like the rest (ahead of Random in every dev "
        "cell of the bench's summaries at the setting's human count, but behind Random at "
        'equal spend in the auditor setting, docs/router.md); "central" (ours, issue 39, the '
        "default): in both settings the sources whose lead is least like the rest first, with "
        "no LLM "
        "summary bought before the humans are placed (Random's spend; ahead of Random at "
        "equal spend in most cells of the bench's summaries, a point ahead in few, "
        'docs/router.md); "focused" (ours, issue 39): as "central", with the humans on the '
        "sources lowest on the sum of five text-only signals' ranks (the lead's centrality, "
        "the lead's coverage of the source's most frequent content words, their spread over "
        "its sentences, repeated words, capitalised words; "
        'quorum.routing.quorum.audit.source_focus, docs/router.md); "checked" (ours, issue '
        "39): the first ``summary_check_share`` of the human summaries on random items, then "
        'the others as "focused" only where the focus ranks that slice\'s evidence the right '
        "way (``summary_check_target``), else at random, Random's plan "
        '(quorum.routing.quorum.audit.signal_check, docs/router.md); "calibrated": '
        "calibration items with the human and the cheapest LLM, then the likeliest errors by "
        "``auditor_rule`` (Algorithm 2), which gave the same ROUGE-1 as a random order on the "
        "bench's summaries and paid the LLM on every calibration item."
    ),
    "summary_lead_sentences": (
        'the lead read by ``summary_audit="lead"``, ``"central"``, ``"focused"`` and '
        '``"checked"``: this many sentences of the source (ours: 3, the Lead-3 baseline of '
        "news summarisation)"
    ),
    "summary_check_share": (
        'summary_audit="checked": the share of the audit\'s human summaries spent first on '
        "random items to check the focus (ours: 0.1, chosen on the dev summary sets, "
        "docs/router.md)."
    ),
    "summary_check_min": (
        'summary_audit="checked": the fewest human summaries in the check\'s slice (ours: 10; '
        "never more than the audit's humans)."
    ),
    "summary_check_z": (
        'summary_audit="checked": the focus is followed where the slice\'s Spearman rho with '
        "the target exceeds z / sqrt(n - 1) (ours: 0, a positive rho; chosen on the dev sets)."
    ),
    "summary_check_target": (
        'summary_audit="checked": what the focus must predict on the slice. "lead" (ours, '
        "default): the ROUGE-1 of the source's lead against the human summary, no LLM asked "
        "(Random's spend); \"llm\": the cheapest LLM's ROUGE-1 against the human summary, its "
        "summary bought on the slice (n c_l more than Random)."
    ),
    "adaptive_tau": (
        "raise the escalation threshold with the money left (ours; False = the paper's fixed "
        "tau_H): tau_t = tau_H + (1 - tau_H) * rho_t, with rho_t the share of the remaining "
        "items a human could still be paid for (phase 2: spare money per remaining item / (c_H "
        "- c_min); phase 3: money left / (n_open c_H)), so that weak LLM answers go to humans "
        "when the budget allows it."
    ),
    "value_audit_order": (
        "the audit by value (spans, ``TaskKind.audit_llm_by_value``; ours): which items get "
        'the humans. "fewest-marks" (default): the chosen LLM answers every item left first, '
        "then the humans take the items where it marked the fewest spans, at least one "
        "(an unreadable answer first, an answer with no span last); the LLM's expected "
        'quality is read off the probe in the same order. "random": humans on random items '
        "and the LLM only on the others (no LLM answer under a human's). docs/router.md, "
        '"Span tasks".'
    ),
    "value_margin": (
        "the audit by value (spans; ours): the expected mean quality by which a dearer LLM "
        "must pass the cheapest measured one to be chosen (0: the best expected value). "
        'docs/router.md, "Span tasks".'
    ),
    "value_order_key": (
        'the audit by value (spans; ours): the order of "fewest-marks". "top-type" (default): '
        "the fewest spans of the type the humans marked most on the probe first, then the "
        'fewest spans; "marks": the fewest spans first; an answer with no span last either '
        "way. "
        'docs/router.md, "Span tasks".'
    ),
    "probe_step": (
        "the audit by value (spans; ours): probe items bought at a time; after each step the "
        "probe goes on only while the expected loss of choosing the LLM now (bootstrap over "
        "the probe items) is larger than what the next step's LLM answers would buy as "
        'humans. 0: the whole probe at once. docs/router.md, "Span tasks".'
    ),
    "probe_bootstrap": ("resamples of the probe items behind ``probe_step``'s expected loss."),
    "auditor_cost_match": (
        "auditor setting: calibration needs the cheapest LLM's answer on |C| human-labelled "
        "items; give up ceil(|C| c_min / (c_H - c_min)) human labels so that the total cost "
        "stays at or below B c_H + (T - B) c_min, the cost of a router that sends B items to "
        "humans and the rest to the cheapest LLM (ours; off by default since issue 14: the "
        "auditor's equal-spend level is B c_H + T c_min, and the labels given up cost "
        "accuracy; only used with ``audit_llm_first=False`` or for summaries)."
    ),
    "extra_arm_rule": (
        'how phase 3 picks the arm for an item\'s extra annotation. "paper": the routing rule '
        'of phase 2 (epsilon-greedy on q, escalation below tau_H). "value" (ours, default): '
        "with probability epsilon_t explore an LLM; otherwise take the arm with the most "
        "expected errors fixed per unit of money, with p = estimated correctness of the item's "
        "current label (q of its best agreeing answer): human (1 - p) / c_H; LLM b (1 - p) q_b "
        "/ (c_b + P_dis c_H), where P_dis = (1 - p) q_b + p (1 - q_b) is the chance that b "
        "disagrees and so sends the item to a human. Cheap second opinions win when LLMs are "
        "good; humans win when LLMs are weak."
    ),
    "phase2_rule": (
        '"lagrangian" (ours, default): with probability epsilon_t explore an LLM; otherwise '
        "take argmax over LLMs and the human of q_a - lambda c_a / c_H, the human scoring "
        "``human_quality``, with the shadow price lambda set once by bisection so that the "
        "planned phase-2 spend fits its money (the Lagrangian relaxation of the budgeted "
        'assignment); an LLM whose q is below tau_H is still escalated. "paper": '
        "epsilon-greedy on q - cost_penalty c_a / c_H, escalation below tau_H (adaptive if "
        "``adaptive_tau``)."
    ),
    "human_quality": ("expected quality of a human label used by the Lagrangian rule (1.0)."),
    "pessimism": (
        "kappa in the lower confidence bound q_a - kappa sqrt(x^T Sigma_a x) that the "
        "Lagrangian rule uses for LLMs when it weighs them against the human (ours). The "
        "argmax over noisy estimates favours the arms whose quality is over-estimated (the "
        "optimiser's curse), while the human's quality is known; with few calibration items "
        "the bound sends more items to humans, with many it is close to mu^T x."
    ),
    "dollars_strategy": (
        'what the dollars setting does after calibration (ours). "bandit": phases 2 and 3 as '
        'above. "audit": the cheapest LLM on every other item and, with the money left, humans '
        "on the items most likely to be its errors (the auditor ordering, ``auditor_rule``). "
        '"auto" (default): "audit" when the calibration shows the panel dominated, i.e. no '
        "dearer LLM gains more accuracy per unit of money over the cheapest one than a human "
        "label does (Beta(1, 1)-smoothed calibration accuracies; the upper hull of (price, "
        'accuracy) holds only the cheapest LLM and the human), else "bandit". For summaries, '
        "accuracy is the mean similarity to the human summary and an error is a similarity "
        "below ``summary_error_quantile``."
    ),
    "probe_share": (
        '"auto"/"audit": share of the calibration items calibrated before the panel check '
        '(ours: 0.5); "audit" stops there, "bandit" calibrates the rest.'
    ),
    "probe_order": (
        '"auto"/"audit": the order in which calibration items are drawn. "random" (ours, '
        "default): a random sample, so the panel check's accuracies and the label model's "
        'first labels are unbiased; "uncertainty": ``calibration_order`` (Mahalanobis distance '
        'first), as ``dollars_strategy="bandit"`` does.'
    ),
    "probe_min": (
        '"auto": the fewest probe items worth a panel check (ours: 40). A smaller probe (money '
        "for 1 to ``probe_min / probe_share`` calibration items) is skipped and the run audits "
        'with the cheapest LLM (``info["panel_check"]``): each probe item buys every LLM\'s '
        "answer beside the human's, money no label uses, and in the bench only imdb-mlapi's "
        "probes (hundreds of items) ever showed a dearer LLM that pays (docs/router.md). 0: "
        "always probe."
    ),
    "dominance_z": (
        "standard errors taken off an LLM's measured gain in the panel check (ours: 2.0; "
        "bandit routing pays for learning, so it needs evidence that it pays; on the 12 "
        "llms-for-css tasks 2.0 beat 1.0 and 0, see docs/router.md)."
    ),
    "batch_size": ("phase-2 requests sent together (concurrency for live sources)."),
    "agreement_reward_value": (
        '"calibrated" (ours, default): without a human label, an LLM that agrees with the '
        "majority is rewarded P(LLM consensus is right), measured on the human-labelled items "
        "where the LLMs reached consensus, and a dissenting one (1 - that) / (labels - 1) "
        '(:func:`~quorum.routing.quorum.calibration.agreement_reward`); "one": 1 and 0 (shared '
        "errors are then learned as correct)."
    ),
    "label_model_vote": (
        'final label of an item without a human label (labels only; ours). "skill+knn" '
        "(default): the one-coin posterior of its answers, each LLM right with 1 - e_a(x), its "
        "kNN error rate on the human-labelled items it answered, under the prior of a kNN "
        "label model over every human label bought (:mod:`~quorum.routing.core.label_model`); "
        '"skill": the same with the human label frequencies as the prior; "off": the weighted '
        "majority vote."
    ),
    "audit_llm_first": (
        "auditing (auditor setting, dollars audit path; labels): the cheapest LLM answers "
        "every item first, so every human label also tells whether the LLM was wrong there; "
        "humans then go, in ``audit_rounds`` rounds, to the items whose label is most likely "
        "wrong under the label model (refitted each round). False: the ranking of "
        "``auditor_rule`` from the calibration errors, humans instead of the LLM."
    ),
    "audit_rounds": ("rounds of human labels when ``audit_llm_first`` (5)."),
    "dollars_audit_plan": (
        'the dollars audit path with ``audit_llm_first`` (ours). "llm-first": as above; each '
        'human label then costs c_H on top of the LLM\'s c_l. "humans-instead": each item gets '
        "one answer, a human's or the cheapest LLM's, so the money buys c_H / (c_H - c_l) "
        "times as many humans; they go, in rounds, to the items whose label model prior is "
        'least sure. "check" (default): both plans\' choice of humans on a random '
        "``audit_check_share`` of the items, then the plan whose humans there changed more "
        'labels per unit of money (``info["audit_check"]``); where the sample would get fewer '
        'than ``audit_check_min`` human labels the run keeps "llm-first".'
    ),
    "auditor_audit_plan": (
        'the same choice in the auditor setting (labels; ours, default "check"). The human '
        'labels are a count there, so both plans buy the same number; "humans-instead" saves '
        "the LLM's price on each of them, and the check weighs that saving with the same rule "
        '(a human bought instead of the LLM costs c_H - c_l). ``info["auditor_audit_plan"]`` '
        "is the plan taken."
    ),
    "audit_check_share, audit_check_min": (
        'the sample of "check": 0.25 of the items left after calibration, and at least 40 '
        'human labels in it (20 to each plan\'s choice). Both also take "humans-only" (below), '
        "which then runs without the check."
    ),
    "audit_check_confidence": (
        "where the cheapest LLM is mostly right (the share of labels humans changed, "
        "Beta(1, 1), below half of what they change after a random answer, (1 - 1/L) / 2; "
        ":func:`~quorum.routing.quorum.audit.plans.mostly_right`): the check is not made when "
        'at least ``audit_check_min`` calibration labels show it ("llm-first"); otherwise '
        "it buys its humans in two rounds, the second picked by the label model refitted on "
        'the first where the first shows it, and leaves "llm-first" for '
        '"humans-instead" only when its sample makes it this likely that a human bought '
        "instead fixes more labels per unit of money (ours: 0.9; p_first, p_instead "
        "Beta(1 + changed, 1 + kept), their difference per unit of money taken as normal, "
        ":func:`~quorum.routing.quorum.audit.plans.instead_z`). There the plan's value is "
        "finding the LLM's few errors, which a sample picked in one round by a label model "
        "that has seen few or no human labels cannot show, while the plan learns over "
        '``audit_rounds`` rounds: a tie favours "llm-first". Elsewhere the one-round picks '
        "and the means' rule stand. 0.5: the rule before issue 39, in full."
    ),
    "llm_sample": (
        "before either plan, the cheapest LLM's answers on this many random items (ours: 40; "
        "those it answered in calibration count) are looked at, with no label. Its answer can "
        "move an item's label away from the label model's only where it is not its commonest "
        "answer, so r = (answers that differ + 1) / (answers + 2) bounds what it adds per "
        "item. If r < (c_l / c_H)(1 - p_maj), what its price buys in human labels instead "
        "(p_maj: the commonest human label's share, Beta(1)-smoothed; 1/L before any human "
        'label), the run goes "humans-only": no more LLM answers, the money (auditor: the '
        "human labels left) buys humans in ``audit_rounds`` rounds on the items whose label "
        "model prior is least sure; an item nobody was asked on gets the kNN vote of its "
        "human-labelled neighbours (shrunk towards the uniform distribution, not the label "
        "frequencies), or the LLM's commonest answer where the neighbours were found "
        'uninformative (``info["llm_sample"]``, ``info["unasked_labels"]``). 0: no check.'
    ),
    "label_model_k, label_model_strength": ("neighbours and pseudo-counts of the label model."),
    "label_model_fit": (
        "choose the kNN prior's pseudo-counts by the leave-one-out likelihood of the human "
        "labels (:func:`~quorum.routing.core.label_model.fit_knn_strength`), so that "
        "neighbours that say nothing about the label fall back to the label frequencies."
    ),
    "label_model_final_prior": (
        'the prior of the final labels\' posterior (ours, issue 38). "frequencies" '
        "(default): the kNN prior of ``label_model_vote``, shrunk towards the human label "
        'frequencies. "uniform": the kNN vote shrunk towards the uniform distribution '
        "with pseudo-counts by the one-standard-error rule: the human labels are bought "
        "where the LLMs looked weakest, so their frequencies are not the data's, and a few "
        "dozen of them on features that say little let the prior overrule a 76 %-right LLM "
        "(a live team's run; the live runner's default, docs/live.md)."
    ),
    "label_model_final_floor": (
        "an LLM's accuracy in the final labels' posterior (ours, issue 38). \"none\" (default "
        "in replay): 1 - e_a(x) as fitted, so where its neighbours say it is mostly wrong its "
        'answer is voted against (a systematic error region corrected for free). "chance" '
        "(the live runner's default): at least chance, so it is ignored there, never voted "
        "against: live, the human labels are few and bought where the LLM looked weakest, "
        "and voting against a 76 %-right LLM relabelled 20 items 20 % right. On the reduced "
        "bench it moved 43 of 145 cells, 30 up and 13 down, +0.0008 on average."
    ),
    "label_model_bandit": (
        "also use ``label_model_vote`` after bandit routing (dollars, panel not dominated). "
        "Off: there the human labels are escalations, bought where the LLMs disagreed or "
        "looked weak, so they overstate the LLMs' error rates (IMDB, dollars 30%: 0.889 with "
        "it, 0.929 without)."
    ),
    "label_model_max_items": (
        "the label model (``label_model_vote``, ``audit_llm_first``) runs on problems of at "
        "most this many items (50,000). Its kNN search is exact, so a round costs O(T x human "
        "labels): above the cap the run uses the one-shot audit and the weighted vote, and "
        '``info["label_model"]`` says so.'
    ),
    "posterior_backend": (
        '"numba" (compiled posterior kernels, :mod:`quorum.routing.quorum.compiled.kernels`) '
        'or "numpy" (the reference path; the results before the kernels, which differ from it '
        "only in the order of some float sums: docs/performance.md)."
    ),
    "loop_backend": (
        '"numba": in replay (a source with fixed answers, '
        ":mod:`quorum.routing.quorum.compiled.fixed_answers`) the dollars setting's per-item "
        "loops run compiled (:mod:`quorum.routing.quorum.compiled.phase2_loop`, "
        ':mod:`quorum.routing.quorum.compiled.phase3_loop`); "python": always the Python loops '
        "(the reference path; live sources always take it)."
    ),
    "auditor_k": ('neighbours of the "knn" auditor rule (ours: 10; k = min(auditor_k, |C| // 4)).'),
}


def _described() -> dict[str, str]:
    """field -> the key of its description in :data:`DESCRIPTIONS`."""
    return {f.strip(): key for key in DESCRIPTIONS for f in key.split(",")}


@cache
def group_models() -> dict[str, type[BaseModel]]:
    """One validated model per group (``Exploration``, ``Aggregation``, ...): the group's
    fields with QuorumParams's defaults and ranges, nothing else."""
    models = {}
    for key, (cls_name, title, fields) in GROUPS.items():
        defs = {
            f: (QuorumParams.model_fields[f].annotation, QuorumParams.model_fields[f])
            for f in fields
        }
        model = create_model(  # type: ignore[call-overload]
            cls_name, __config__=ConfigDict(frozen=True, extra="forbid"), **defs
        )
        model.__doc__ = f"QUORUM's {title}: " + ", ".join(fields) + "."
        model.__module__ = __name__
        models[key] = model
    return models


def parameters_doc(indent: str = "    ") -> str:
    """The ``Parameters`` section of QuorumRouter's docstring: every group, then each of its
    parameters with its default and description (each description once, at its first
    field)."""
    where = _described()
    lines = ["Parameters", "----------"]
    done: set[str] = set()
    for key, (cls_name, title, fields) in GROUPS.items():
        lines += ["", f"{cls_name} (``{key}=``): {title}"]
        for f in fields:
            doc_key = where[f]
            if doc_key in done:
                continue
            done.add(doc_key)
            names = [n.strip() for n in doc_key.split(",")]
            defaults = ", ".join(repr(QuorumParams.model_fields[n].default) for n in names)
            head = f"{doc_key} : (default {defaults}) "
            body = textwrap.fill(head + DESCRIPTIONS[doc_key], 92, subsequent_indent="    ")
            lines += body.split("\n")
    return "\n".join(indent + line if line else "" for line in lines)


#: the groups as classes (``from quorum import Exploration``)
_MODELS = group_models()
Exploration = _MODELS["exploration"]
Aggregation = _MODELS["aggregation"]
Calibration = _MODELS["calibration"]
Posterior = _MODELS["posterior"]
Spending = _MODELS["spending"]
Refinement = _MODELS["refinement"]
Auditing = _MODELS["auditing"]
LabelModel = _MODELS["label_model"]
Engineering = _MODELS["engineering"]
