"""What a QUORUM run reports (``RoutingResult.info``): one typed record, written by the
step that decides each field, read by nobody in the run (no decision depends on it).

Each field is set once, by the step named beside it; :meth:`RunReport.as_info` gives the
fields that were set, as the ``info`` dict the bench, the live ledger and the dashboard
read.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

__all__ = ["RunReport"]


@dataclass
class RunReport:
    """The report of one QUORUM run; ``None`` = not set (left out of ``info``)."""

    #: flow: the budget affords no annotation
    note: str | None = None
    #: flow, probe: the panel check was skipped (probe below ``probe_min``)
    panel_check: str | None = None
    #: flow, panel verdict: calibration accuracy of every LLM
    calibration_accuracy: dict[str, float] | None = None
    #: flow, panel verdict: no dearer LLM pays
    panel_dominated: bool | None = None
    #: flow: calibration items
    n_calibration: int | None = None
    #: flow: "audit" or "bandit", the dollars path taken
    dollars_strategy: str | None = None
    #: phase 2, Lagrangian rule: lambda
    shadow_price: float | None = None
    #: label model: "on" or why it is off (``label_model_max_items``)
    label_model: str | None = None
    #: audit plans: calibration errors of the cheapest LLM
    calibration_errors: int | None = None
    #: audit plans: the cheapest LLM's sample (``llm_sample``)
    llm_sample: dict[str, Any] | None = None
    #: audit plans, "check": the sample's counts and the plan taken
    audit_check: dict[str, Any] | None = None
    #: audit plans: how the humans were ordered
    auditor_order: str | None = None
    #: the audit plan taken (dollars / auditor setting)
    dollars_audit_plan: str | None = None
    auditor_audit_plan: str | None = None
    #: auditor, one-shot audit with ``auditor_cost_match``
    human_labels_given_up: int | None = None
    #: label model: the fitted kNN pseudo-counts (last fit)
    label_model_strength: float | None = None
    #: final labels: how the items nobody was asked on were labelled
    unasked_labels: str | None = None
    #: result: the context's names and each arm's posterior mean
    context_names: list[str] | None = None
    posterior_means: dict[str, list[float]] | None = None

    def as_info(self) -> dict[str, Any]:
        """The fields that were set, by name."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                out[f.name] = value
        return out
