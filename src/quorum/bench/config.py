"""The benchmark configuration: a TOML file validated with pydantic.

One section per experiment of the paper; a section that is absent or has
``enabled = false`` is skipped. ``default.toml`` (the paper's experiments on the shared
data) and ``smoke.toml`` (a tiny run for the tests) ship with the package.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from quorum.errors import ConfigError

Setting = Literal["auditor", "dollars"]
BUILTIN = ("default", "smoke")


class BenchConfigError(ConfigError):
    """A configuration file that cannot be read or does not validate."""


def _methods() -> list[str]:
    from quorum.methods import method_names

    return method_names()


def _check_methods(v: list[str]) -> list[str]:
    known = _methods()
    bad = [m for m in v if m not in known]
    if bad:
        raise ValueError(f"unknown method(s) {bad}; known: {known}")
    return v


def _check_budgets(v: list[float]) -> list[float]:
    bad = [b for b in v if not 0.0 < b <= 1.0]
    if bad:
        raise ValueError(f"budgets are fractions in (0, 1], got {bad}")
    return v


def _nonempty(v: list) -> list:
    if not v:
        raise ValueError("must not be empty")
    return v


Seeds = int | list[int]


def seed_list(seeds: Seeds) -> list[int]:
    """``10`` -> ``[0, ..., 9]``; a list stays as given."""
    return list(range(seeds)) if isinstance(seeds, int) else list(seeds)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: bool = True

    @field_validator("seeds", "summarization_seeds", check_fields=False)
    @classmethod
    def _seeds(cls, v: Seeds) -> Seeds:
        if isinstance(v, int) and v < 1:
            raise ValueError("seeds must be >= 1 (or a list of seeds)")
        if isinstance(v, list) and not v:
            raise ValueError("seed list must not be empty")
        return v


class RunSection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    workers: int = Field(2, ge=1, le=64, description="worker processes")
    chunk_size: int = Field(8, ge=1, description="runs sent to a worker at a time")


class MainSection(_Section):
    """Auditor-style and dollars tables: every method x dataset x budget."""

    datasets: list[str]
    methods: list[str] = Field(default_factory=_methods)
    settings: list[Setting] = ["auditor", "dollars"]
    budgets: list[float] = [0.1, 0.3, 0.5, 0.7]
    seeds: Seeds = 10
    summarization_seeds: Seeds = 3
    #: runs left out, as "method@dataset" or "method@dataset@setting" (the tables show the
    #: cell as missing); for a method too slow on one dataset, with the reason in a comment
    skip: list[str] = []

    @field_validator("methods")
    @classmethod
    def _m(cls, v: list[str]) -> list[str]:
        return _check_methods(_nonempty(v))

    @field_validator("skip")
    @classmethod
    def _skip(cls, v: list[str]) -> list[str]:
        for entry in v:
            parts = entry.split("@")
            if len(parts) not in (2, 3) or not all(parts):
                raise ValueError(
                    f"skip entry {entry!r}: expected 'method@dataset' or 'method@dataset@setting'"
                )
            _check_methods([parts[0]])
            if len(parts) == 3 and parts[2] not in ("auditor", "dollars"):
                raise ValueError(f"skip entry {entry!r}: setting must be auditor or dollars")
        return v

    def skips(self, method: str, dataset: str, setting: str) -> bool:
        """True if ``skip`` leaves this (method, dataset, setting) out."""
        return f"{method}@{dataset}" in self.skip or f"{method}@{dataset}@{setting}" in self.skip

    @field_validator("budgets")
    @classmethod
    def _b(cls, v: list[float]) -> list[float]:
        return _check_budgets(_nonempty(v))

    @field_validator("datasets", "settings")
    @classmethod
    def _d(cls, v: list) -> list:
        return _nonempty(v)


class FeaturesSection(_Section):
    """RQ2: QUORUM with its features vs random features vs LLM-uncertainty features."""

    datasets: list[str]
    settings: list[Setting] = ["auditor", "dollars"]
    budgets: list[float] = [0.1, 0.7]
    seeds: Seeds = 10
    variants: list[Literal["uncertainty", "random", "ours"]] = ["uncertainty", "random", "ours"]

    @field_validator("budgets")
    @classmethod
    def _b(cls, v: list[float]) -> list[float]:
        return _check_budgets(_nonempty(v))

    @field_validator("datasets", "settings", "variants")
    @classmethod
    def _d(cls, v: list) -> list:
        return _nonempty(v)


class AnnotationsSection(_Section):
    """RQ3: QUORUM with at most 1, 2, 3 annotations per item."""

    datasets: list[str]
    setting: Setting = "dollars"
    budgets: list[float] = [0.3]
    max_annotations: list[int] = [1, 2, 3]
    seeds: Seeds = 10
    summarization_seeds: Seeds = 3

    @field_validator("budgets")
    @classmethod
    def _b(cls, v: list[float]) -> list[float]:
        return _check_budgets(_nonempty(v))

    @field_validator("datasets")
    @classmethod
    def _d(cls, v: list) -> list:
        return _nonempty(v)

    @field_validator("max_annotations")
    @classmethod
    def _ma(cls, v: list[int]) -> list[int]:
        if not v or any(x < 1 for x in v):
            raise ValueError("max_annotations must be a non-empty list of integers >= 1")
        return v


class SensitivitySection(_Section):
    """QUORUM hyper-parameters varied one at a time around the defaults."""

    dataset: str = "mmlu-redux"
    setting: Setting = "dollars"
    budget: float = Field(0.5, gt=0.0, le=1.0)
    seeds: Seeds = 10
    grids: dict[str, list[int | float]] = {
        "tau_h": [0.1, 0.3, 0.5, 0.7],
        "w_human": [1, 5, 10, 15],
        "epsilon0": [0.1, 0.3, 0.5, 0.7],
        "gamma": [0.001, 0.005, 0.01, 0.05],
        "calibration_share": [0.2, 0.4, 0.6, 0.8],
    }
    note: str = ""

    @field_validator("grids")
    @classmethod
    def _grids(cls, v: dict[str, list[int | float]]) -> dict[str, list[int | float]]:
        known = set(router_defaults("quorum"))
        bad = sorted(set(v) - known)
        if bad:
            raise ValueError(f"not QuorumRouter parameters: {bad}; known: {sorted(known)}")
        for k, vals in v.items():
            if not vals:
                raise ValueError(f"grid {k!r} is empty")
        return v


class NoisySection(_Section):
    """SentiMP-En: each recorded labeller acts as the (noisy) human."""

    dataset: str = "sentimp-en"
    humans: list[str] = ["labeller_1", "labeller_2", "labeller_3"]
    methods: list[str] = ["quorum", "cdi", "coannotating", "random"]
    setting: Setting = "auditor"
    human_labels: int = Field(200, ge=1, description="human labels (auditor budget B)")
    seeds: Seeds = 10

    @field_validator("methods")
    @classmethod
    def _m(cls, v: list[str]) -> list[str]:
        return _check_methods(_nonempty(v))

    @field_validator("humans")
    @classmethod
    def _h(cls, v: list) -> list:
        return _nonempty(v)


class OverheadSection(_Section):
    """Time before routing: cold feature/embedding extraction and routing time."""

    datasets: list[str] | None = Field(None, description="default: the main datasets")
    feature_sample: int = Field(
        200, ge=50, description="cold feature timing on at most this many items (scaled)"
    )


class DashboardSection(_Section):
    """The bandit dashboard: one QUORUM run whose trace and posterior are plotted."""

    dataset: str = "imdb-mlapi"
    setting: Setting = "dollars"
    budget: float = Field(0.5, gt=0.0, le=1.0)
    seed: int = 0
    window: int = Field(2000, ge=1, description="items per window of the arm-share plot")


class BenchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = "bench"
    description: str = ""
    run: RunSection = RunSection()
    #: router parameters applied in every experiment, by method (e.g. quorum.max_annotations)
    params: dict[str, dict[str, Any]] = {}
    main: MainSection | None = None
    features: FeaturesSection | None = None
    annotations: AnnotationsSection | None = None
    sensitivity: SensitivitySection | None = None
    noisy: NoisySection | None = None
    overhead: OverheadSection | None = None
    dashboard: DashboardSection | None = None

    @field_validator("params")
    @classmethod
    def _params(cls, v: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        from quorum.methods import check_params
        from quorum.quality.checks import QualityChecks

        for method, p in v.items():
            _check_methods([method])
            # quality (true/false) and quality_* keys: the random quality checks, on by
            # default for quorum only (docs/quality.md)
            _, _, rest = QualityChecks.read_params(p)
            check_params(method, rest)
        return v

    def section(self, name: str) -> Any | None:
        """The section if present and enabled."""
        s = getattr(self, name)
        return s if s is not None and getattr(s, "enabled", True) else None

    def digest(self) -> str:
        """Short hash of the whole configuration (for the report; not part of run keys)."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


def router_defaults(method: str) -> dict[str, Any]:
    """The ``__init__`` defaults of a routing method."""
    from quorum.methods import get_router_class

    sig = inspect.signature(get_router_class(method).__init__)
    return {
        k: p.default
        for k, p in sig.parameters.items()
        if k != "self" and p.default is not inspect.Parameter.empty
    }


def _format_error(exc: ValidationError, where: str) -> str:
    lines = [f"invalid bench configuration{' ' + where if where else ''}:"]
    for e in exc.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "(top level)"
        msg = e["msg"].removeprefix("Value error, ")
        lines.append(f"  - {loc}: {msg}")
    return "\n".join(lines)


def parse_config(data: dict[str, Any], where: str = "") -> BenchConfig:
    try:
        return BenchConfig.model_validate(data)
    except ValidationError as exc:
        raise BenchConfigError(_format_error(exc, where)) from None


def builtin_path(name: str) -> Path:
    return Path(str(resources.files("quorum.bench").joinpath(f"{name}.toml")))


def load_config(path: str | Path | None = None) -> BenchConfig:
    """Read a config: a TOML file, a built-in name ("default", "smoke"), or None = default."""
    if path is None:
        path = "default"
    if isinstance(path, str) and path in BUILTIN and not Path(path).exists():
        path = builtin_path(path)
    p = Path(path).expanduser()
    if not p.is_file():
        raise BenchConfigError(
            f"config file not found: {p} (or use a built-in name: {', '.join(BUILTIN)})"
        )
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise BenchConfigError(f"{p}: not valid TOML: {exc}") from None
    return parse_config(data, f"in {p}")
