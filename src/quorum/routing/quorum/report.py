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
    """The report of one QUORUM run; ``None`` = not set (left out of ``info``).

    Each field and the step that writes it (module: function):

    - ``note``: the budget affords no annotation (flow: ``dollars``);
    - ``panel_check``: the probe was below ``probe_min`` (flow: ``dollars``);
    - ``calibration_accuracy``, ``panel_dominated``: the panel verdict
      (flow: ``panel_verdict``, ``dollars``);
    - ``n_calibration``, ``dollars_strategy``: the dollars path taken (flow);
    - ``shadow_price``: lambda of phase 2 (phase2: ``route_rest``);
    - ``label_model``: "on" or why it is off (run: ``label_model_fits``);
    - ``calibration_errors``, ``auditor_order``, ``human_labels_given_up``: the one-shot
      audit or the plan's ordering (one_shot_audit, audit_plans);
    - ``llm_sample``, ``audit_check``: the cheapest LLM's sample and the "check" plan's
      sample (audit_plans: ``llm_adds_little``, ``Check``);
    - ``dollars_audit_plan``, ``auditor_audit_plan``: the audit plan taken (flow);
    - ``label_model_strength``: the last fitted kNN pseudo-counts (label_state);
    - ``unasked_labels``: how items nobody was asked on were labelled (final_labels);
    - ``context_names``, ``posterior_means``: the context and each arm's posterior mean
      (final_labels: ``result``).
    """

    note: str | None = None
    panel_check: str | None = None
    calibration_accuracy: dict[str, float] | None = None
    panel_dominated: bool | None = None
    n_calibration: int | None = None
    dollars_strategy: str | None = None
    context_names: list[str] | None = None
    shadow_price: float | None = None
    label_model: str | None = None
    label_model_strength: float | None = None
    llm_sample: dict[str, Any] | None = None
    calibration_errors: int | None = None
    auditor_order: str | None = None
    posterior_means: dict[str, list[float]] | None = None
    human_labels_given_up: int | None = None
    audit_check: dict[str, Any] | None = None
    dollars_audit_plan: str | None = None
    auditor_audit_plan: str | None = None
    #: the audit by value's LLM, its humans and each LLM's expected quality (audit.by_value)
    audit_by_value: dict[str, Any] | None = None
    unasked_labels: str | None = None

    def as_info(self) -> dict[str, Any]:
        """The fields that were set, by name."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                out[f.name] = value
        return out
