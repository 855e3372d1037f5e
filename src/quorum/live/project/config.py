"""The project file of a live annotation job (TOML or YAML), validated with pydantic.

A project names the items file, the task, the annotators and the budget. Its sections
have their own modules: ``[items]`` and ``[task]`` in :mod:`~quorum.live.project.task`,
``[[annotators]]`` in :mod:`~quorum.live.project.annotators`, ``[humans]`` in
:mod:`~quorum.live.project.humans`; ``[budget]`` (:class:`BudgetConfig`) and the whole file
(:class:`ProjectConfig`) are here. Relative paths are resolved against the folder of the
project file; ``$VARS`` and ``~`` are expanded. Secrets never live in the file: an LLM
annotator names the environment variable that holds its key (``api_key_env``).
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from quorum.data.schema import GOLD_HUMAN
from quorum.errors import ConfigError
from quorum.live.project.annotators import MAX_AMOUNT, AnnotatorConfig
from quorum.live.project.humans import HumansConfig
from quorum.live.project.task import ItemsConfig, TaskConfig
from quorum.tasks.registry import kind_of

_Strict = ConfigDict(extra="forbid", allow_inf_nan=False)  # inf/nan: a clear error


class BudgetConfig(BaseModel):
    model_config = _Strict

    limit: float = Field(ge=0.0, le=MAX_AMOUNT, description="hard money budget for the project")
    setting: Literal["dollars", "auditor"] = "dollars"
    human_limit: int | None = Field(default=None, ge=0, description="auditor: human labels")
    charge_interrupted: bool = Field(
        default=True,
        description="count calls a kill cut off after their request left (possibly billed, "
        "at their reservation) as spent, so that the provider's bill never passes the "
        "limit; false: a resumed run routes as if they cost nothing (the bill may then "
        "pass the limit by at most their reservations)",
    )
    price_change: Literal["refuse", "accept"] = Field(
        default="refuse",
        description="a price edited since the ledger's last run: refuse to run (default), or "
        "accept it for new calls (calls already made keep the cost they were recorded at)",
    )
    quality_checks: Literal["auto"] | float | None = Field(
        default="auto",
        description="random human checks that estimate the labels' quality "
        "(docs/quality.md): 'auto' (default) as many as an interval about "
        "`quality_width` wide needs, at most `quality_max_share` of the money above one "
        "label per item; a number: that share of the human labels the budget can buy; "
        "0: no checks",
    )
    quality_width: float = Field(
        default=0.45,
        gt=0.0,
        le=1.0,
        description="'auto' checks: the width of the interval they are sized for (expected "
        "before the run, from an assumed score variance; docs/quality.md)",
    )
    quality_interval: Literal["clt", "betting"] = Field(
        default="clt",
        description="the checks' interval: 'clt' (Student t, narrower) or 'betting' (valid "
        "at any number of checks, about a third wider; docs/quality.md)",
    )
    quality_max_share: float = Field(
        default=0.5,
        gt=0.0,
        le=1.0,
        description="'auto' checks: the most of the money above one label per item that "
        "they may take; where that buys fewer, the run says so at its start with the "
        "width to expect",
    )
    confidence: float | None = Field(
        default=None,
        gt=0.0,
        lt=1.0,
        description="level of the quality estimate's interval (default 0.95), or with "
        "target_quality the chance that a stop's claim is right (default 0.9)",
    )
    target_quality: float | None = Field(
        default=None,
        gt=0.0,
        lt=1.0,
        description="stop spending once the labels' quality is at least this with "
        "`confidence` (the budget is then a ceiling; docs/quality.md)",
    )

    @field_validator("quality_checks")
    @classmethod
    def _share(cls, v: Any) -> Any:
        if isinstance(v, float) and not 0.0 <= v <= 1.0:
            raise ValueError(f"quality_checks must be 'auto' or a share in [0, 1], got {v}")
        return v

    @property
    def checks_on(self) -> bool:
        """Random quality checks are bought ('auto', a share above 0, or a target)."""
        return bool(self.quality_checks) or self.target_quality is not None

    @property
    def level(self) -> float:
        """``confidence``, or its default: 0.9 for a target, else 0.95."""
        if self.confidence is not None:
            return self.confidence
        return 0.9 if self.target_quality is not None else 0.95


class ProjectConfig(BaseModel):
    """The whole project file."""

    model_config = _Strict

    name: str = Field(min_length=1)
    items: ItemsConfig
    task: TaskConfig
    annotators: list[AnnotatorConfig] = Field(min_length=1)
    budget: BudgetConfig
    human: str | None = Field(
        default=None,
        description="annotator acting as the human arm; 'gold' uses the gold column; "
        "default: the one annotator of kind human, else 'gold' if a gold column is set",
    )
    human_price: float = Field(
        default=0.10, ge=0.0, le=MAX_AMOUNT, description="price of the 'gold' human"
    )
    method: str = "quorum"
    method_params: dict[str, Any] = Field(default_factory=dict)
    seed: int = 0
    ledger: str = ".quorum/ledger.sqlite"
    ledger_sync: Literal["normal", "full"] = "normal"
    human_queue: str = "human_queue"
    humans: HumansConfig = Field(default_factory=HumansConfig)
    features: Literal["auto", "full", "embeddings", "light"] = "auto"
    concurrency: int = Field(default=16, ge=1, le=4096, description="calls in flight at once")
    engine: Literal["local", "ray"] = Field(
        default="local", description="ray: LLM calls and features on Ray (same results)"
    )
    ray_address: str | None = Field(
        default=None, description="Ray cluster address (None: $RAY_ADDRESS, else local Ray)"
    )
    # set by the loader, not by the user
    root: Path = Field(default=Path("."), exclude=True)
    source_file: Path | None = Field(default=None, exclude=True)

    @model_validator(mode="after")
    def _check(self) -> ProjectConfig:
        names = [a.name for a in self.annotators]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"annotator names must be unique; repeated: {dup}")
        humans = [a.name for a in self.annotators if a.kind == "human"]
        if len(humans) > 1:
            raise ValueError(f"at most one annotator of kind human is supported, got {humans}")
        machines = [a.name for a in self.annotators if a.kind != "human"]
        if not machines:
            raise ValueError("declare at least one llm or model annotator")
        if self.human is None:
            if humans:
                self.human = humans[0]
            elif self.items.gold_column:
                self.human = GOLD_HUMAN
            else:
                raise ValueError(
                    "no human arm: add an annotator with kind = 'human', or set "
                    "items.gold_column and human = 'gold' to let gold labels act as the human"
                )
        if self.human == GOLD_HUMAN:
            if not self.items.gold_column:
                raise ValueError("human = 'gold' needs items.gold_column")
        elif self.human not in humans:
            raise ValueError(f"human {self.human!r} is not an annotator of kind human {humans}")
        k = self.humans.labels_per_item
        if k > 1 and not kind_of(self.task.type).people_vote:
            raise ValueError(
                f"humans.labels_per_item = {k} needs a label task: {k} summaries of one item "
                "have no vote to aggregate them"
            )
        if k > 1 and self.human == GOLD_HUMAN:
            raise ValueError(
                f"humans.labels_per_item = {k} needs a team (an annotator of kind human); the "
                "gold column is one label per item"
            )
        if self.budget.setting == "auditor" and self.budget.human_limit is None:
            raise ValueError("the auditor setting needs budget.human_limit")
        self._check_pairs()
        return self

    def _check_pairs(self) -> None:
        """``swap``, ``swap_rule`` and ``items.pair_columns`` fit the task (pairwise)."""
        kind = kind_of(self.task.type)
        t = self.task.type.value
        for a in self.annotators:
            if a.swap and not kind.swaps:
                raise ValueError(
                    f"annotator {a.name!r}: swap needs a pairwise task (task.type is {t!r})"
                )
            if a.swap and a.swap_rule == "tie" and "tie" not in (self.task.labels or []):
                raise ValueError(
                    f"annotator {a.name!r}: swap_rule 'tie' needs the label 'tie' in task.labels"
                )
        if self.items.pair_columns is not None and not kind.item_fields:
            raise ValueError(f"items.pair_columns is for a pairwise task (task.type is {t!r})")
        if kind.item_fields and "text_column" in self.items.model_fields_set:
            raise ValueError(
                "items.text_column: a pairwise item's text is its instruction and both outputs "
                "(items.pair_columns), or items.text_template"
            )

    # -- paths -------------------------------------------------------------
    def path(self, p: str) -> Path:
        """Resolve a path from the project file: env vars, ``~``, relative to its folder."""
        q = Path(os.path.expanduser(os.path.expandvars(p)))
        return q if q.is_absolute() else (self.root / q)

    @property
    def ledger_path(self) -> Path:
        return self.path(self.ledger)

    @property
    def queue_dir(self) -> Path:
        return self.path(self.human_queue)

    def annotator(self, name: str) -> AnnotatorConfig:
        for a in self.annotators:
            if a.name == name:
                return a
        raise KeyError(name)

    def fingerprint(self) -> str:
        """Hash of everything that changes routing (not secrets: the file holds none)."""
        # where calls run and which HTTP client makes them change no result: left out, so
        # the hash of a project is the same on every engine (and as before these keys)
        data = self.model_dump(mode="json", exclude={"engine", "ray_address"})
        for a in data.get("annotators", []):
            a.pop("client", None)
            if not a.get("swap"):  # pairwise keys, unset: the hash is the one from before them
                a.pop("swap", None)
                a.pop("swap_rule", None)
        if data.get("items", {}).get("pair_columns", 0) is None:
            data["items"].pop("pair_columns")
        for key in ("min_labels", "max_labels"):  # multi-label keys: unset, as before them
            if data.get("task", {}).get(key, 0) is None:
                data["task"].pop(key)
        if data.get("items", {}).get("context_column", 0) is None:  # unset, as before it
            data["items"].pop("context_column")
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def _format_errors(err: ValidationError, where: str) -> str:
    lines = [f"{where}: invalid project file ({err.error_count()} problem(s))"]
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "(top level)"
        msg = e["msg"].removeprefix("Value error, ")
        lines.append(f"  - {loc}: {msg}")
    return "\n".join(lines)


def read_raw(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"project file not found: {path}") from None
    suffix = path.suffix.lower()
    try:
        if suffix == ".toml":
            data = tomllib.loads(text)
        elif suffix in (".yaml", ".yml"):
            data = yaml.safe_load(text)
        else:
            raise ConfigError(f"{path}: project file must end in .toml, .yaml or .yml")
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot parse {suffix[1:].upper()}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the project file must hold a table/mapping at top level")
    return data


def load_project(path: str | Path) -> ProjectConfig:
    """Read and validate a project file; raise :class:`ConfigError` with every problem."""
    p = Path(path).expanduser().resolve()
    data = read_raw(p)
    try:
        cfg = ProjectConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc, str(p))) from None
    cfg.root = p.parent
    cfg.source_file = p
    return cfg
