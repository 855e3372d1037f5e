"""QUORUM's hyperparameters as one validated, immutable object.

:class:`~quorum.routing.quorum.router.QuorumRouter` takes every hyperparameter as a named
``__init__`` argument (scikit-learn style) and validates them here before each run, so
a bad value fails with the field's name and its allowed range, and a run reads its
settings from one frozen object (``router.params_``). The meaning of each field is in
the router's docstring and docs/router.md; the constraints live only here.

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

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

__all__ = ["QuorumParams"]


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
    summary_audit: Literal["random", "calibrated"] = "random"
    auditor_cost_match: bool = False
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
    label_model_k: int = Field(10, ge=1)
    label_model_strength: float = Field(2.0, gt=0.0)
    label_model_fit: bool = True
    label_model_bandit: bool = False
    label_model_max_items: int = Field(50_000, ge=0)
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
