"""Issue 23: QUORUM's router as named steps and plans; one factory; traits on the class."""

from __future__ import annotations

import pytest

from quorum.errors import ConfigError
from quorum.live.run.runner import make_method
from quorum.methods import METHODS, get_router_class, make_router, method_trait
from quorum.routing.core.budget import Budget
from quorum.routing.core.replay import RecordedSource
from quorum.routing.quorum import flow
from quorum.routing.quorum.audit.plans import Check, HumansInstead, HumansOnly, LlmFirst, audit_plan
from quorum.routing.quorum.final_labels import result
from quorum.routing.quorum.params import QuorumParams
from quorum.routing.quorum.phase2 import LagrangianRule, PaperRule, route_rule
from quorum.routing.quorum.phase3 import PaperExtraRule, ValueRule, extra_arm_rule
from quorum.routing.quorum.report import RunReport
from quorum.routing.quorum.run import QuorumRun
from test_quorum_router import make_dataset, problem_for


# ------------------------------------------------------------------ one factory
def test_a_router_is_built_by_registry_name_or_module_and_class():
    by_name = make_router("random")
    by_path = make_router("quorum.baselines.random:RandomRouter")
    assert type(by_name) is type(by_path)
    assert type(make_method("quorum.baselines.random:RandomRouter", {})) is type(by_name)


@pytest.mark.parametrize(
    "name", ["quorum.nowhere:Router", "quorum.methods:NoSuchClass", "quorum.methods:METHODS"]
)
def test_a_bad_module_and_class_is_one_clear_error(name):
    with pytest.raises(ValueError, match="method"):
        get_router_class(name)
    with pytest.raises(ConfigError, match="method"):
        make_method(name, {})


# ------------------------------------------------------------------ traits
def test_method_traits_come_from_the_router_classes():
    features = {m for m in METHODS if method_trait(m, "uses_item_features")}
    confidence = {m for m in METHODS if method_trait(m, "pays_for_confidence")}
    quorum = {m for m in METHODS if method_trait(m, "is_quorum")}
    # the sets the bench used to keep by name
    assert features == {"quorum", "quorum-paper", "quorum-paper-authors-accounting", "araida",
                        "sant"}  # fmt: skip
    assert confidence == {"coannotating", "cdi", "hypac", "coannotating-ensemble",
                          "cdi-ensemble", "hypac-ensemble"}  # fmt: skip
    assert quorum == {m for m in METHODS if m.startswith("quorum")}
    assert not method_trait("no-such-method", "is_quorum")


# ------------------------------------------------------------------ plans chosen once
def test_plans_and_rules_are_objects_chosen_from_the_parameters():
    cfg = QuorumParams()
    kinds = {
        "llm-first": LlmFirst,
        "humans-instead": HumansInstead,
        "humans-only": HumansOnly,
        "check": Check,
    }
    for name, cls in kinds.items():
        plan = audit_plan(name, cfg)
        assert type(plan) is cls and plan.name == name
    assert isinstance(route_rule(cfg), LagrangianRule)
    assert isinstance(route_rule(QuorumParams(phase2_rule="paper")), PaperRule)
    assert isinstance(extra_arm_rule(cfg), ValueRule)
    assert isinstance(extra_arm_rule(QuorumParams(extra_arm_rule="paper")), PaperExtraRule)
    s = flow.Strategy.of(QuorumParams(dollars_strategy="auto"))
    assert (s.probe, s.always_audit, s.skip_small_probe) == (True, False, True)
    s = flow.Strategy.of(QuorumParams(dollars_strategy="bandit"))
    assert (s.probe, s.always_audit, s.skip_small_probe) == (False, False, False)
    plans = flow.Plans.of(QuorumParams(dollars_audit_plan="humans-only", phase2_rule="paper"))
    assert isinstance(plans.dollars_audit, HumansOnly) and plans.dollars_audit.trace_q
    assert isinstance(plans.auditor_audit, Check) and not plans.auditor_audit.trace_q
    assert isinstance(plans.route, PaperRule) and isinstance(plans.extra, ValueRule)


# ------------------------------------------------------------------ the report is never read
def _open(ds, setting="dollars", frac=0.5, **params):
    T = ds.n_items
    if setting == "auditor":
        n_h = round(frac * T)
        prob, budget = (
            problem_for(ds, "auditor", n_h),
            Budget(n_h * 0.1 + T * 0.01, human_limit=n_h),
        )
    else:
        prob, budget = problem_for(ds), Budget(frac * T * 0.1)
    return QuorumRun(QuorumParams(**params), prob, RecordedSource(ds), budget, seed=0)


@pytest.mark.parametrize("setting", ["dollars", "auditor"])
def test_what_the_run_reports_decides_nothing(setting):
    """The final labels come from the run's state, not from its report: a report
    overwritten before the last step leaves every label as it was (the old ``_final_votes``
    read ``info["dollars_strategy"]`` and ``info["label_model_strength"]``)."""
    ds = make_dataset(120, acc=(0.6, 0.7, 0.8))
    outs = []
    for clobber in (False, True):
        run = _open(ds, setting, dollars_strategy="bandit", label_model_bandit=False)
        after_bandit = (
            flow.dollars(run) is flow.DollarsPath.BANDIT if setting == "dollars" else False
        )
        if setting == "auditor":
            flow.auditor(run)
        if clobber:
            run.report = RunReport(dollars_strategy="audit", label_model_strength=1e9)
        outs.append(result(run, after_bandit).labels["output"].tolist())
    assert outs[0] == outs[1]


def test_the_dollars_flow_names_the_path_it_took():
    ds = make_dataset(120, acc=(0.6, 0.7, 0.8))
    run = _open(ds, dollars_strategy="bandit")
    assert flow.dollars(run) is flow.DollarsPath.BANDIT
    assert run.report.as_info()["dollars_strategy"] == "bandit"
    run = _open(ds, dollars_strategy="audit")
    assert flow.dollars(run) is flow.DollarsPath.AUDIT
    assert run.report.dollars_audit_plan in {"llm-first", "humans-instead", "humans-only"}
    run = _open(ds, frac=0.0001)
    assert flow.dollars(run) is flow.DollarsPath.NOTHING
    assert "note" in run.report.as_info()
