"""Expand a :class:`BenchConfig` into the runs each experiment needs.

Runs are shared across experiments when they are the same run (QUORUM at 50% in the
main table is also the "ours" cell of the ablation and the default of every sensitivity
grid): a run's key does not name the experiment.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from quorum.bench.cache import (
    ROW_VERSION,
    code_version,
    dataset_fingerprint,
    dataset_kind,
    digest,
)
from quorum.bench.config import BenchConfig, router_defaults, seed_list
from quorum.data.schema import GOLD_HUMAN

EXPERIMENTS = ("main", "features", "annotations", "sensitivity", "noisy", "dashboard")


def normalise_params(method: str, params: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """Sorted (name, value) pairs of the parameters that differ from the router's defaults
    (``quality``'s default: the checks are on for quorum only)."""
    from quorum.quality.checks import checks_by_default

    defaults = router_defaults(method) | {"quality": checks_by_default(method)}
    out = []
    for k, v in sorted(params.items()):
        d = defaults.get(k, object())
        same = v == d and isinstance(v, bool) == isinstance(d, bool)
        if not same:
            out.append((k, v))
    return tuple(out)


@dataclass(frozen=True)
class RunSpec:
    """One routing run: what to route, with what, and what to keep."""

    dataset: str
    method: str
    setting: str
    budget: float  # auditor: share of items for humans; dollars: share of all-human cost
    seed: int
    params: tuple[tuple[str, Any], ...] = ()
    variant: str = "ours"  # features: ours | random | uncertainty
    human: str = GOLD_HUMAN
    human_labels: int | None = None  # auditor budget as a count (overrides ``budget``)
    keep_trace: bool = False

    @property
    def group(self) -> tuple[str, str]:
        """Runs of one group share a prepared dataset in a worker."""
        return (self.dataset, self.human)

    @property
    def param_dict(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def quality_checks(self) -> bool:
        """Whether the run buys the random quality checks (docs/quality.md)."""
        from quorum.quality.checks import PARAM_PREFIX, SWITCH, checks_by_default

        on = dict(self.params).get(SWITCH)
        if on is not None:
            return bool(on)
        return checks_by_default(self.method) or any(
            k.startswith(PARAM_PREFIX) for k, _ in self.params
        )

    def payload(self) -> dict[str, Any]:
        out = {
            "row": ROW_VERSION,
            "dataset": self.dataset,
            "fingerprint": dataset_fingerprint(self.dataset),
            "method": self.method,
            "code": code_version(self.method, self.variant),
            "setting": self.setting,
            "budget": None if self.human_labels is not None else round(self.budget, 6),
            "human_labels": self.human_labels,
            "seed": self.seed,
            "params": [list(p) for p in self.params],
            "variant": self.variant,
            "human": self.human,
            "trace": self.keep_trace,
        }
        if self.quality_checks:  # runs with the random quality checks (QUORUM's default)
            out["quality_checks"] = True
        from quorum.features.profiles import resolve_profile

        profile = resolve_profile().name  # $QUORUM_FEATURE_PROFILE; default keys unchanged
        if profile != "default":
            out["features_profile"] = profile
        return out

    @property
    def key(self) -> str:
        k = self.__dict__.get("_key")
        if k is None:
            k = digest(self.payload())
            object.__setattr__(self, "_key", k)
        return k


@dataclass
class Plan:
    """Runs per experiment (in table order) and the datasets timed cold."""

    runs: dict[str, list[RunSpec]] = field(default_factory=dict)
    overhead_datasets: list[str] = field(default_factory=list)
    feature_sample: int = 2000

    def all_runs(self) -> list[RunSpec]:
        """Every distinct run, first occurrence order."""
        seen: dict[str, RunSpec] = {}
        for specs in self.runs.values():
            for s in specs:
                seen.setdefault(s.key, s)
        return list(seen.values())

    def datasets(self) -> list[str]:
        out = dict.fromkeys(s.dataset for s in self.all_runs())
        out.update(dict.fromkeys(self.overhead_datasets))
        return list(out)


def _supports(method: str, dataset: str) -> bool:
    from quorum.methods import get_router_class

    return bool(get_router_class(method).supports(dataset_kind(dataset)))  # type: ignore[arg-type]


def _seeds(cfg_section: Any, dataset: str) -> list[int]:
    if dataset_kind(dataset).bench_few_seeds and hasattr(cfg_section, "summarization_seeds"):
        return seed_list(cfg_section.summarization_seeds)
    return seed_list(cfg_section.seeds)


Params = Callable[..., tuple[tuple[str, Any], ...]]


def _main_runs(s: Any, params: Params) -> list[RunSpec]:
    return [
        RunSpec(d, m, st, b, seed, params(m))
        for d in s.datasets
        for m in s.methods
        if _supports(m, d)
        for st in s.settings
        if not s.skips(m, d, st)
        for b in s.budgets
        for seed in _seeds(s, d)
    ]


def _features_runs(s: Any, params: Params) -> list[RunSpec]:
    return [
        RunSpec(d, "quorum", st, b, seed, params("quorum"), variant=v)
        for d in s.datasets
        for st in s.settings
        for b in s.budgets
        for v in s.variants
        for seed in seed_list(s.seeds)
    ]


def _annotations_runs(s: Any, params: Params) -> list[RunSpec]:
    return [
        RunSpec(d, "quorum", s.setting, b, seed, params("quorum", {"max_annotations": k}))
        for d in s.datasets
        for b in s.budgets
        for k in s.max_annotations
        for seed in _seeds(s, d)
    ]


def _sensitivity_runs(s: Any, params: Params) -> list[RunSpec]:
    return [
        RunSpec(s.dataset, "quorum", s.setting, s.budget, seed, params("quorum", {name: v}))
        for name, values in s.grids.items()
        for v in values
        for seed in seed_list(s.seeds)
    ]


def _noisy_runs(s: Any, params: Params) -> list[RunSpec]:
    return [
        RunSpec(s.dataset, m, s.setting, 0.0, seed, params(m), human=h, human_labels=s.human_labels)
        for h in s.humans
        for m in s.methods
        for seed in seed_list(s.seeds)
    ]


def _dashboard_runs(s: Any, params: Params) -> list[RunSpec]:
    return [
        RunSpec(s.dataset, "quorum", s.setting, s.budget, s.seed, params("quorum"), keep_trace=True)
    ]


#: the experiments with runs, in the plan's order, and the runs each needs
_EXPERIMENT_RUNS: dict[str, Callable[[Any, Params], list[RunSpec]]] = {
    "main": _main_runs,
    "features": _features_runs,
    "annotations": _annotations_runs,
    "sensitivity": _sensitivity_runs,
    "noisy": _noisy_runs,
    "dashboard": _dashboard_runs,
}


def build_plan(cfg: BenchConfig) -> Plan:
    """The runs of every enabled experiment."""
    plan = Plan()

    def params(method: str, extra: dict[str, Any] | None = None) -> tuple[tuple[str, Any], ...]:
        p = dict(cfg.params.get(method, {}))
        p.update(extra or {})
        return normalise_params(method, p)

    for name, runs in _EXPERIMENT_RUNS.items():
        if (s := cfg.section(name)) is not None:
            plan.runs[name] = runs(s, params)
    if (s := cfg.section("overhead")) is not None:
        main = cfg.section("main")
        plan.overhead_datasets = list(s.datasets or (main.datasets if main else []))
        plan.feature_sample = s.feature_sample
    return plan
