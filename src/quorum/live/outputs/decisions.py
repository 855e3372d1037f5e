"""The router's decisions in plain words, for the report and the dataset card.

:func:`decision_lines` reads ``router_decisions`` of :func:`quorum.live.outputs.status.status`
(the ``DECISION_KEYS`` a router reports, :mod:`quorum.live.run.summary`);
:func:`run_decision_lines` adds the machine annotators the run never asked.
"""

from __future__ import annotations

import json
from typing import Any

from quorum.live.project.config import ProjectConfig
from quorum.live.run.summary import DECISION_KEYS


def decision_lines(dec: dict[str, Any], last: dict[str, Any] | None = None) -> list[str]:
    """The router's decisions (``router_decisions`` of the status) in plain words."""
    lines = _strategy_lines(dec) + _audit_lines(dec)
    if "unasked_labels" in dec:
        lines.append(f"Items nobody was asked on were labelled by the {dec['unasked_labels']}.")
    if "auditor_order" in dec:
        lines.append(f"Audit order: {dec['auditor_order']}.")
    if "label_model" in dec:
        lines.append(f"Label model: {dec['label_model']}.")
    for k in sorted(set(dec) - set(DECISION_KEYS)):  # keys a newer router added
        lines.append(f"{k}: {json.dumps(dec[k], default=str)}")
    summary = _run_summary(last)
    dead = summary.get("dead") or []
    if dead:
        lines.append(f"Taken out of the run (dead endpoint): {', '.join(dead)}.")
    return lines


def _strategy_lines(dec: dict[str, Any]) -> list[str]:
    """The strategy the router took, its panel check and the calibration accuracy."""
    lines = []
    strat = dec.get("dollars_strategy")
    n_cal = dec.get("n_calibration")
    if strat == "bandit":
        lines.append(
            f"Strategy: the bandit routed each item between the LLMs and the humans, after "
            f"calibrating on {n_cal} item(s)."
        )
    elif strat == "audit":
        lines.append(
            "Strategy: audit. The cheapest LLM labelled the items and humans checked the "
            "ones it was likeliest to get wrong"
            + (f" (after calibrating on {n_cal} item(s))." if n_cal else ".")
        )
    pc = dec.get("panel_check")
    if isinstance(pc, str):
        lines.append(f"Panel check: {pc}.")
    if "panel_dominated" in dec:
        lines.append(
            "Panel check: the LLM panel was no better than its cheapest member for the "
            "money, so the run audited with that one."
            if dec["panel_dominated"]
            else "Panel check: the LLM panel was worth its price; the bandit went on."
        )
    acc = dec.get("calibration_accuracy")
    if isinstance(acc, dict) and acc:
        lines.append(
            "Accuracy on the calibration items: "
            + ", ".join(f"{k} {_num(v)}" for k, v in acc.items())
            + "."
        )
    return lines


def _audit_lines(dec: dict[str, Any]) -> list[str]:
    """The audit plan, the audit check and the LLM sample, where the router made them."""
    lines = []
    for key, setting in (("dollars_audit_plan", "dollars"), ("auditor_audit_plan", "auditor")):
        if key in dec:
            lines.append(f"Audit plan ({setting}): {_PLANS.get(dec[key], dec[key])}.")
    chk = dec.get("audit_check")
    if isinstance(chk, dict) and chk.get("skipped"):
        wrong, known = (chk.get("calibration_errors") or [0, 0])[:2]
        lines.append(
            f"Audit check: not made; humans changed {wrong} of the cheapest LLM's {known} "
            f"calibration label(s), so it is mostly right; the plan taken: {chk.get('plan')}."
        )
    elif isinstance(chk, dict):
        fw, nw = (chk.get("fixed_llm_first") or [0, 0])[:2]
        fu, nu = (chk.get("fixed_humans_instead") or [0, 0])[:2]
        lines.append(
            f"Audit check: on a sample of {chk.get('sample')} item(s) with "
            f"{chk.get('humans')} human label(s), humans changed {fw} of {nw} labels where the "
            f"LLM was likeliest wrong and {fu} of {nu} elsewhere; the plan taken: "
            f"{chk.get('plan')}."
        )
    ls = dec.get("llm_sample")
    if isinstance(ls, dict):
        dropped = bool(ls.get("humans_only"))
        lines.append(
            f"LLM sample: {ls.get('differ_from_commonest')} of {ls.get('answers')} answers of "
            f"the cheapest LLM differ from its commonest answer (r = {float(ls.get('r', 0)):.2f}"
            f" against {float(ls.get('humans_worth', 0)):.2f} for humans): "
            + ("the LLM was dropped, humans label instead." if dropped else "the LLM was kept.")
        )
    return lines


#: the audit plans a router can take, in words
_PLANS = {
    "llm-first": "llm-first: humans check the items where the LLM is likeliest wrong",
    "humans-instead": "humans-instead: humans label some items in place of the LLM",
    "humans-only": "humans-only: the cheapest LLM was dropped, humans label the items",
}


def _run_summary(last: dict[str, Any] | None) -> dict[str, Any]:
    """The summary JSON of the status's ``last_run`` (empty where there is none)."""
    if not last or not last.get("summary"):
        return {}
    try:
        return dict(json.loads(last["summary"]))
    except (ValueError, TypeError):
        return {}


def unasked_machines(cfg: ProjectConfig, st: dict[str, Any]) -> list[str]:
    """Machine annotators of the project the ledger has no call of (never asked)."""
    per = st["per_annotator"]
    called = set(per.loc[per["calls"] > 0, "annotator"]) if len(per) else set()
    return [a.name for a in cfg.annotators if a.kind != "human" and a.name not in called]


def run_decision_lines(cfg: ProjectConfig, st: dict[str, Any]) -> list[str]:
    """:func:`decision_lines` of the status, and the machine annotators never asked."""
    lines = decision_lines(st.get("router_decisions") or {}, st.get("last_run"))
    unasked = unasked_machines(cfg, st)
    if unasked and st.get("last_run"):
        lines.append(f"Never asked (no call in the ledger): {', '.join(unasked)}.")
    return lines


def _num(v: Any) -> str:
    """A figure to two decimals, "n/a" where there is none (an LLM never asked on the
    calibration items)."""
    try:
        return f"{float(v):.2f}"
    except (TypeError, ValueError):
        return "n/a"
