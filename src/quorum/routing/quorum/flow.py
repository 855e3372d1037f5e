"""QUORUM's flow: the paper's Algorithms 1 (dollars) and 2 (auditor) with our plans as
named steps. Read :func:`dollars` and :func:`auditor` top to bottom; each branch names the
step (and the module) that decides it. docs/architecture.md has the same tree as a table.

Dollars (Algorithm 1)
  nothing affordable -> stop
  probe            : calibrate a random half of the calibration items (``dollars_strategy``
                     "auto"/"audit"; too small a probe: audit at once)
  panel verdict    : :func:`~quorum.routing.quorum.calibration.panel_check`: does a dearer LLM
                     pay? no -> audit plan (:mod:`~quorum.routing.quorum.audit.plans`, or the
                     one-shot audit, :mod:`~quorum.routing.quorum.audit.one_shot`)
  calibration      : the rest of the calibration items (``calibrate``)
  phase-2 routing  : :func:`~quorum.routing.quorum.phase2.route_rest` with the rule of
                     ``phase2_rule`` (:mod:`~quorum.routing.quorum.phase2`)
  refinement       : :func:`~quorum.routing.quorum.phase3.refine` with the rule of
                     ``extra_arm_rule``, then the leftover humans
  final labels     : :func:`~quorum.routing.quorum.final_labels.final_labels`

Auditor (Algorithm 2)
  calibration      : a random slice of ``calibration_share`` B items, human + cheapest LLM
  audit plan       : label model on -> :func:`~quorum.routing.quorum.audit.plans.audit`; off ->
                     the one-shot audit by the calibration errors
  final labels     : as above
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from quorum.routing.quorum.audit.by_value import probe_panel, probe_worth_more, value_audit
from quorum.routing.quorum.audit.one_shot import (
    FREE_SUMMARY_ORDERS,
    TEXT_SUMMARY_ORDERS,
    calibration_errors,
    checked_auditor,
    lead_audit,
    one_shot_auditor,
    one_shot_dollars,
    summary_order,
)
from quorum.routing.quorum.audit.plans import AuditPlan, audit, audit_plan
from quorum.routing.quorum.calibration import (
    calibration_order,
    calibration_size,
    panel_check,
    probe_size,
)
from quorum.routing.quorum.params import QuorumParams
from quorum.routing.quorum.phase2 import RouteRule, route_rest, route_rule
from quorum.routing.quorum.phase3 import ExtraArmRule, extra_arm_rule, refine
from quorum.routing.quorum.rewards import settle_many
from quorum.routing.quorum.run import QuorumRun

__all__ = ["DollarsPath", "Plans", "Strategy", "auditor", "dollars"]

_EPS = 1e-9
#: the most looks of a stepped probe (``probe_step``): each look resamples the probe, so a
#: probe of thousands of items (a million-item run) takes steps of len / 16, not of 8
_PROBE_CHECKS = 16


class DollarsPath(Enum):
    """The way a dollars run went (what the final labels need to know)."""

    NOTHING = "nothing"
    AUDIT = "audit"
    BANDIT = "bandit"


@dataclass(frozen=True)
class Strategy:
    """``dollars_strategy`` as three switches, read once."""

    #: calibrate a probe first and check the panel on it ("auto", "audit")
    probe: bool
    #: audit whatever the panel check says ("audit")
    always_audit: bool
    #: audit at once when the probe is below ``probe_min`` ("auto")
    skip_small_probe: bool

    @classmethod
    def of(cls, cfg: QuorumParams) -> Strategy:
        s = cfg.dollars_strategy
        return cls(probe=s != "bandit", always_audit=s == "audit", skip_small_probe=s == "auto")


@dataclass(frozen=True)
class Plans:
    """Every plan of a run, chosen once from the validated parameters."""

    strategy: Strategy
    #: phase 2 (``phase2_rule``)
    route: RouteRule
    #: phase 3 (``extra_arm_rule``)
    extra: ExtraArmRule
    #: ``dollars_audit_plan`` (the trace keeps x_t and q_a there) / ``auditor_audit_plan``
    dollars_audit: AuditPlan
    auditor_audit: AuditPlan

    @classmethod
    def of(cls, cfg: QuorumParams) -> Plans:
        return cls(
            Strategy.of(cfg),
            route_rule(cfg),
            extra_arm_rule(cfg),
            audit_plan(cfg.dollars_audit_plan, cfg, trace_q=True),
            audit_plan(cfg.auditor_audit_plan, cfg),
        )


def dollars(run: QuorumRun, plans: Plans | None = None) -> DollarsPath:
    """Algorithm 1: probe, panel verdict, (audit plan | calibration, phase-2 routing,
    refinement). ``plans``: by default those of the run's parameters. Returns the path
    taken."""
    cfg, T, sp, report = run.cfg, run.T, run.spend, run.report
    plans = Plans.of(cfg) if plans is None else plans
    strategy = plans.strategy
    if run.budget.limit <= 0 or sp.c_min > run.budget.remaining + _EPS:
        report.note = "budget below one annotation: nothing was annotated"
        return DollarsPath.NOTHING
    # probe: the calibration items, the probe's share of them and their order
    n_cal = calibration_size(
        run.budget.remaining, T, sp.c, sp.c_h, cfg.calibration_share, cfg.calibration_budget
    )
    n_probe = probe_size(n_cal, cfg.probe_share) if strategy.probe else n_cal
    if run.kind.audit_llm_by_value:  # spans: a probe, then the LLM worth most (audit.by_value)
        items = [int(t) for t in run.rng.permutation(T)[:n_probe]]
        probe = _value_probe(run, items)
        report.dollars_strategy = DollarsPath.AUDIT.value
        value_audit(run, probe, run.llm_names[int(np.argmin(sp.c))], run.kind.audit_value_z)
        return DollarsPath.AUDIT
    small = strategy.skip_small_probe and 0 < n_probe < cfg.probe_min
    if small and (cheap := _live_cheapest(run)) is not None:
        report.panel_check = f"skipped: a probe of {n_probe} < probe_min items"
        return _audit_rest(run, [], cheap, plans.dollars_audit)
    central = (
        run.kind.graded and cfg.summary_audit in TEXT_SUMMARY_ORDERS and run.p.texts is not None
    )
    if central and not n_cal and (cheap := _live_cheapest(run)) is not None:
        # money too short for a calibration item: the summaries' audit all the same (its
        # order puts the LLM first where its summary should be best)
        report.panel_check = "skipped: no calibration item affordable"
        return _audit_rest(run, [], cheap, plans.dollars_audit)
    if not n_cal:
        order = np.zeros(0, dtype=int)
    elif strategy.probe and cfg.probe_order == "random":
        order = run.rng.permutation(T)[:n_cal]
    else:
        order = calibration_order(run.p.phi)
    cal = calibrate(run, [int(t) for t in order[:n_probe]])
    if strategy.probe:
        # panel verdict: a dominated panel (or "audit") is audited, not routed
        cheap, dominated = panel_verdict(run, cal)
        report.panel_dominated = dominated
        if strategy.always_audit or dominated:
            return _audit_rest(run, cal, cheap, plans.dollars_audit)
        cal += calibrate(run, [int(t) for t in order[n_probe:n_cal]])
    report.n_calibration = len(cal)
    report.dollars_strategy = DollarsPath.BANDIT.value
    route_rest(run, cal, plans.route)  # phase 2
    if cfg.max_annotations > 1:
        refine(run, plans.extra)  # phase 3
    return DollarsPath.BANDIT


def auditor(run: QuorumRun, plans: Plans | None = None) -> None:
    """Algorithm 2: calibration slice, then the audit plan (label model on) or the one-shot
    audit by the calibration errors."""
    cfg, T = run.cfg, run.T
    plans = Plans.of(cfg) if plans is None else plans
    B = int(min(run.p.human_budget or 0, T))
    cheap = run.llm_names[int(np.argmin(run.spend.c))]
    order = run.rng.permutation(T)
    if run.kind.audit_llm_by_value:  # spans: a probe, then the LLM worth most (audit.by_value)
        sp = run.spend
        fits = int(B * sp.c_h / max(sp.c_h + float(sp.c.sum()) - sp.c_min, _EPS))
        n_p = min(probe_size(round(cfg.calibration_share * B), cfg.probe_share), fits, B)
        items = [int(t) for t in order[:n_p]]
        probe = _value_probe(run, items)
        value_audit(run, probe, cheap, run.kind.audit_value_z)
        return
    if run.kind.graded and cfg.summary_audit == "lead" and run.p.texts is not None:
        lead_audit(run, order.astype(int), cheap, B)
        return
    if run.kind.graded and cfg.summary_audit == "checked" and run.p.texts is not None:
        checked_auditor(run, order.astype(int), cheap, B)
        return
    if run.kind.graded and cfg.summary_audit != "calibrated":
        free = ("longest", *FREE_SUMMARY_ORDERS)
        mode = cfg.summary_audit if cfg.summary_audit in free else "random"
        run.send_split(summary_order(run, order).astype(int), B, cheap, mode)
        return
    n_cal = min(round(cfg.calibration_share * B), B)
    cal = [int(t) for t in order[:n_cal]]
    reqs = [(run.ids[t], a) for t in cal for a in (run.human, cheap)]
    for t in cal:
        run.log(t, "calibration", run.human, "calibration", None, None)
        run.log(t, "calibration", cheap, "calibration", None, None)
    run.rec.annotate_many(reqs, phase="calibration")
    rest = order[n_cal:].astype(int)
    n_h = B - len(cal)
    if label_model_audits(run):  # within B c_H + T c_min, no give-up
        calibration_errors(run, cal, cheap)
        run.report.auditor_audit_plan = audit(run, rest, cheap, plans.auditor_audit, n_h)
        return
    one_shot_auditor(run, cal, rest, cheap, n_h)


# ------------------------------------------------------------------ the steps
def _value_probe(run: QuorumRun, items: list[int]) -> list[int]:
    """The audit by value's probe on ``items`` (human and the LLMs of
    :func:`_value_probe_panel`): all at once, or ``probe_step`` items (at least 1/16 of the
    probe) at a time while
    :func:`~quorum.routing.quorum.audit.by_value.probe_worth_more` says the next step is
    worth its price (at least ``probe_step`` items)."""
    panel = _value_probe_panel(run, len(items))
    step = run.cfg.probe_step
    if step > 0:  # at most _PROBE_CHECKS looks: a large probe grows its step
        step = max(step, -(-len(items) // _PROBE_CHECKS))
    if step <= 0 or step >= len(items):
        return calibrate(run, items, panel)
    cheap = run.llm_names[int(np.argmin(run.spend.c))]
    probe: list[int] = []
    while len(probe) < len(items):
        probe += calibrate(run, items[len(probe) : len(probe) + step], panel)
        if not probe_worth_more(run, probe, step, cheap):
            break
    return probe


def _value_probe_panel(run: QuorumRun, n_probe: int) -> list[str] | None:
    """The LLMs the audit by value probes (:func:`~quorum.routing.quorum.audit.by_value.probe_panel`
    when ``TaskKind.probe_fitting_llms_only``, else every LLM: None)."""
    if not run.kind.probe_fitting_llms_only:
        return None
    sp = run.spend
    alive = np.array([sp.alive(k) for k in range(run.K)], dtype=bool)
    keep = probe_panel(sp.c, alive, run.budget.remaining, run.T, n_probe, sp.c_h)
    return [a for a, k in zip(run.llm_names, keep, strict=True) if k]


def calibrate(run: QuorumRun, cal: list[int], llms: list[str] | None = None) -> list[int]:
    """Human label and every LLM's answer (or those of ``llms``) on the items ``cal``;
    rewards to the posteriors."""
    arms, ids = run.arms, run.ids
    panel = [run.human, *(run.llm_names if llms is None else llms)]
    X = arms.unasked_contexts(cal, 1.0, 0.0)  # b_t = 1, p_t = 0, no LLM in m_t
    for t, x in zip(cal, X, strict=True):
        for a in panel:
            arms.asked.put(t, a, x)
    # one trace row per call, as QuorumRun.log writes it
    n = len(cal) * len(panel)
    price = np.array([run.rec.price(a) for a in panel] * len(cal))
    run.trace.extend(
        ["calibration"] * n, [ids[t] for t in cal for _ in panel], panel * len(cal),
        ["calibration"] * n, price, epsilon=np.full(n, arms.epsilon()), b_t=np.ones(n),
        p_t=np.zeros(n), budget_left=np.full(n, run.budget.remaining),
    )  # fmt: skip
    run.buy_calls([(t, a) for t in cal for a in panel], "calibration")
    arms.mask[cal] = 1.0
    settle_many(run, cal)
    return list(cal)


def panel_verdict(run: QuorumRun, cal: list[int]) -> tuple[str, bool]:
    """The cheapest LLM to audit with, and whether the panel is dominated: every LLM's
    rewards on the human-labelled calibration items go to
    :func:`~quorum.routing.quorum.calibration.panel_check` (``dollars_strategy``)."""
    ans, sp = run.answers, run.spend
    judged = [t for t in cal if run.human in ans.outputs(t)]
    right = np.zeros((len(judged), run.K))
    for i, t in enumerate(judged):
        outs = ans.outputs(t)
        right[i] = [ans.similarity(outs.get(a), outs[run.human]) for a in run.llm_names]
    alive = np.array([sp.alive(k) for k in range(run.K)], dtype=bool)
    check = panel_check(
        right,
        sp.c,
        sp.c_h,
        alive,
        human_quality=run.cfg.human_quality,
        dominance_z=run.cfg.dominance_z,
    )
    run.report.calibration_accuracy = dict(zip(run.llm_names, check.accuracy.tolist(), strict=True))
    return run.llm_names[check.cheap], check.dominated


def label_model_audits(run: QuorumRun) -> bool:
    """The audit plans apply: ``audit_llm_first``, the label model fits the problem's size,
    labels (not summaries) and ``max_annotations`` >= 2."""
    cfg = run.cfg
    return (
        cfg.audit_llm_first
        and run.label_model_fits()
        and cfg.max_annotations >= 2
        and run.kind.discrete
        and bool(run.p.task.labels)
    )


def _audit_rest(run: QuorumRun, cal: list[int], cheap: str, plan: AuditPlan) -> DollarsPath:
    """Dollars, audit path: the cheapest LLM on every item left, humans on its likely
    errors, by the audit plan of ``dollars_audit_plan`` or the one-shot audit."""
    run.report.n_calibration = len(cal)
    run.report.dollars_strategy = DollarsPath.AUDIT.value
    in_cal = np.zeros(run.T, dtype=bool)
    in_cal[cal] = True
    perm = run.rng.permutation(run.T)
    rest = perm[~in_cal[perm]].astype(int)
    if label_model_audits(run):
        calibration_errors(run, cal, cheap)
        run.report.dollars_audit_plan = audit(run, rest, cheap, plan)
    else:
        one_shot_dollars(run, cal, rest, cheap)
    return DollarsPath.AUDIT


def _live_cheapest(run: QuorumRun) -> str | None:
    """The LLM to audit with when no probe was made: the first live cheapest one."""
    sp = run.spend
    live = sp.live_cheapest()
    if not live or sp.c[live[0]] > sp.c_min + _EPS:
        return None  # every cheapest LLM is dead: the bandit routes around it
    return run.llm_names[live[0]]
