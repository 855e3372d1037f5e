"""The project file of a live annotation job (TOML or YAML), validated with pydantic.

A project names the items file, the task, the annotators and the budget. Relative paths
are resolved against the folder of the project file; ``$VARS`` and ``~`` are expanded.
Secrets never live in the file: an LLM annotator names the environment variable that holds
its key (``api_key_env``).
"""

from __future__ import annotations

import hashlib
import json
import os
import string
import tomllib
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from quorum.data.schema import GOLD_HUMAN, TaskType
from quorum.errors import ConfigError

_Strict = ConfigDict(extra="forbid")


class ItemsConfig(BaseModel):
    """Where the items are and which columns hold what."""

    model_config = _Strict

    path: str = Field(min_length=1, description="CSV, JSONL, JSON or Parquet file")
    id_column: str | None = Field(default=None, description="default: item_id, else row number")
    text_column: str = "text"
    text_template: str | None = Field(
        default=None, description="build the text from columns, e.g. '{title}. {description}'"
    )
    gold_column: str | None = Field(default=None, description="known labels (for evaluation)")
    choices_column: str | None = Field(default=None, description="answer options (multiple choice)")
    limit: int | None = Field(default=None, ge=1, description="use only the first N items")

    @field_validator("text_template")
    @classmethod
    def _template(cls, v: str | None) -> str | None:
        if v is None:
            return v
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(v) if f is not None]
        except ValueError as exc:
            raise ValueError(
                f"malformed template {v!r} ({exc}); write {{column}} for a column and "
                "{{ or }} for a literal brace"
            ) from None
        for f in fields:
            if not f or f.isdigit() or "." in f or "[" in f:
                raise ValueError(
                    f"placeholder {{{f}}} in {v!r} is not a column name; write {{column}} "
                    "with the name of a column of the items file"
                )
        if not fields:
            raise ValueError(f"{v!r} uses no column; write e.g. '{{title}}. {{body}}'")
        return v


class TaskConfig(BaseModel):
    model_config = _Strict

    type: TaskType
    labels: list[str] | None = None
    label_names: dict[str, str] | None = None
    label_descriptions: dict[str, str] | None = None
    instructions: str | None = None
    instructions_in_prompt: Literal["auto", "always", "never"] = Field(
        default="auto",
        description="put `instructions` before an LLM prompt that has no {instructions}: "
        "auto (before the bundled default prompts only, never before a prompt you wrote), "
        "always, or never",
    )
    language: str = "en"

    @field_validator("labels", mode="before")
    @classmethod
    def _labels_str(cls, v: Any) -> Any:
        return [str(x) for x in v] if isinstance(v, list) else v

    @model_validator(mode="after")
    def _check(self) -> TaskConfig:
        if self.type.has_labels and not self.labels:
            raise ValueError(f"a {self.type.value} task needs a non-empty `labels` list")
        if self.labels and len(set(self.labels)) != len(self.labels):
            raise ValueError(f"labels have duplicates: {self.labels}")
        for field in ("label_names", "label_descriptions"):
            extra = set(getattr(self, field) or {}) - set(self.labels or [])
            if extra:
                raise ValueError(f"{field} has keys that are not labels: {sorted(extra)}")
        if self.type.has_labels and self.labels:
            self._distinct_labels()
        return self

    def _distinct_labels(self) -> None:
        """At least two labels that a person or a model can tell apart, in every spelling:
        the values, and the names shown, are distinct ignoring case and spaces (an answer
        is matched that way, :func:`~quorum.live.humans.match_label`)."""
        labels = self.labels or []
        names = self.label_names or {}
        shown = [str(names.get(lab, lab)) for lab in labels]
        for what, vals in (("labels", labels), ("label names", shown)):
            folded: dict[str, str] = {}
            for v in vals:
                k = " ".join(v.split()).casefold()
                if k in folded:
                    raise ValueError(
                        f"{what} {folded[k]!r} and {v!r} are the same answer (case and spaces "
                        "are ignored when answers are read); give each label its own name"
                    )
                folded[k] = v
        if len(labels) < 2:
            raise ValueError(
                f"a {self.type.value} task needs at least two labels, got {labels}"
                + (f" (shown as {shown})" if names else "")
                + ": with one there is nothing to decide"
            )


class AnnotatorConfig(BaseModel):
    """One arm: ``kind = "llm"`` (litellm), ``"model"`` (local) or ``"human"`` (file queue)."""

    model_config = _Strict

    name: str = Field(min_length=1)
    kind: Literal["llm", "model", "human"] = "llm"
    # -- llm ----------------------------------------------------------------
    model: str | None = Field(
        default=None,
        description="litellm model name (llm), or 'zero-shot' / 'module:function' (model)",
    )
    api_base: str | None = None
    api_key_env: str | None = Field(default=None, description="env var that holds the key")
    price: float | None = Field(default=None, ge=0.0, description="fixed cost per call")
    input_cost_per_token: float | None = Field(default=None, ge=0.0)
    output_cost_per_token: float | None = Field(default=None, ge=0.0)
    confidence_price: float | None = Field(default=None, ge=0.0)
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    seed: int | None = None
    params: dict[str, Any] = Field(default_factory=dict, description="extra litellm params")
    client: Literal["auto", "litellm", "http"] = Field(
        default="auto",
        description="auto: a lean HTTP client for openai/NAME at an api_base, litellm otherwise",
    )
    output: Literal["auto", "grammar", "json_schema", "free"] = Field(
        default="auto",
        description="constrain answers to the options (docs/live.md): auto detects it",
    )
    logprobs: bool | None = Field(
        default=None, description="logprobs over the options as confidence; None: if constrained"
    )
    prompt: str | None = Field(default=None, description="template text or a .txt file path")
    confidence_prompt: str | None = None
    system_prompt: str | None = None
    timeout: float = Field(default=60.0, gt=0.0)
    max_retries: int = Field(default=4, ge=0, le=20)
    backoff_base: float = Field(default=0.5, ge=0.0)
    backoff_max: float = Field(default=30.0, ge=0.0)
    concurrency: int = Field(default=8, ge=1, le=1024)
    rate_limit: float | None = Field(default=None, gt=0.0, description="requests per second")
    dead_after: int = Field(default=3, ge=1, description="consecutive failed calls -> dead")
    prompt_token_margin: float = Field(default=1.5, ge=1.0)
    # -- human --------------------------------------------------------------
    queue: str | None = Field(default=None, description="human queue folder")

    @model_validator(mode="after")
    def _check(self) -> AnnotatorConfig:
        if self.name == GOLD_HUMAN:
            raise ValueError("'gold' is reserved (the gold column acting as the human)")
        bad = sorted(set(self.params) & {"api_key", "model", "messages", "api_base"})
        if bad:
            raise ValueError(
                f"annotator {self.name!r}: params may not set {bad}; keys come from the "
                "environment (api_key_env), model and api_base are their own fields"
            )
        if self.kind == "llm" and not self.model:
            raise ValueError(f"annotator {self.name!r}: an llm annotator needs `model`")
        if self.kind == "model" and not self.model:
            raise ValueError(
                f"annotator {self.name!r}: a model annotator needs `model` "
                "('zero-shot' or 'package.module:function')"
            )
        if self.kind == "human" and self.price is None:
            raise ValueError(f"annotator {self.name!r}: a human annotator needs a `price`")
        if self.kind == "model" and self.model != "zero-shot" and ":" not in str(self.model):
            raise ValueError(
                f"annotator {self.name!r}: model must be 'zero-shot' or 'module:function', "
                f"got {self.model!r}"
            )
        return self


class BudgetConfig(BaseModel):
    model_config = _Strict

    limit: float = Field(ge=0.0, description="hard money budget for the project")
    setting: Literal["dollars", "auditor"] = "dollars"
    human_limit: int | None = Field(default=None, ge=0, description="auditor: human labels")
    charge_interrupted: bool = Field(
        default=False,
        description="charge calls cut off by a crash to the budget of the resumed run",
    )
    price_change: Literal["refuse", "accept"] = Field(
        default="refuse",
        description="a price edited since the ledger's last run: refuse to run (default), or "
        "accept it for new calls (calls already made keep the cost they were recorded at)",
    )
    quality_checks: float | None = Field(
        default=0.03,
        ge=0.0,
        le=1.0,
        description="share of the human labels the budget can buy spent on random checks "
        "that estimate the labels' quality (docs/quality.md); 0: no checks",
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

    @property
    def checks_on(self) -> bool:
        """Random quality checks are bought (a share above 0, or a target)."""
        return bool(self.quality_checks) or self.target_quality is not None

    @property
    def level(self) -> float:
        """``confidence``, or its default: 0.9 for a target, else 0.95."""
        if self.confidence is not None:
            return self.confidence
        return 0.9 if self.target_quality is not None else 0.95


class LabelStudioConfig(BaseModel):
    """The Label Studio server and project of ``humans.backend = "labelstudio"``."""

    model_config = _Strict

    url: str = Field(default="http://127.0.0.1:8080", min_length=1)
    token_env: str = Field(
        default="LABEL_STUDIO_API_KEY",
        min_length=1,
        description="env var that holds the API token (legacy token or personal access token)",
    )
    project: str | None = Field(default=None, description="project title; default: name")
    project_id: int | None = Field(default=None, ge=1, description="use this project")
    predictions: bool = Field(
        default=False, description="show the LLM answers so far as pre-annotations"
    )
    overlap: int | None = Field(
        default=None, ge=1, description="old name of humans.labels_per_item (still read)"
    )
    timeout: float | None = Field(
        default=None, gt=0.0, description="old name of humans.timeout (still read)"
    )
    page_size: int = Field(default=500, ge=1, le=5000)
    request_timeout: float = Field(default=30.0, gt=0.0)


class HumansConfig(BaseModel):
    """How the human arm reaches people: the file queue or a Label Studio project."""

    model_config = _Strict

    backend: Literal["file", "labelstudio"] = "file"
    labelstudio: LabelStudioConfig = Field(default_factory=LabelStudioConfig)
    seconds_per_label: float = Field(
        default=30.0, gt=0.0, description="time one human label takes (for `quorum plan`)"
    )
    labels_per_item: int = Field(
        default=1, ge=1, le=20, description="labels per human item, each by a different person"
    )
    queue_depth: int | None = Field(
        default=None,
        ge=1,
        le=10_000,
        description="human tasks sent ahead and waiting at once (advised: twice the team's "
        "size); unset or 1: a pass stops at its first unanswered task",
    )
    timeout: float | None = Field(
        default=None,
        gt=0.0,
        description="seconds (or '90m', '12h', '2d') a human task may wait unanswered; then "
        "it is withdrawn and the item re-planned without it",
    )
    prior_accuracy: float = Field(
        default=0.8, gt=0.0, lt=1.0, description="an annotator's accuracy before any evidence"
    )
    prior_strength: float = Field(
        default=4.0, gt=0.0, description="weight of prior_accuracy, in labels"
    )
    arm_quality: Literal["auto", "router"] | float = Field(
        default="auto",
        description="the human arm's quality for the router: auto (estimated once labels can "
        "be checked), router (its own default) or a number in [0, 1]",
    )
    min_evidence: int = Field(
        default=10, ge=1, description="checked labels before auto uses the estimate"
    )

    @field_validator("timeout", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> Any:
        return parse_duration(v) if isinstance(v, str) else v

    @field_validator("arm_quality")
    @classmethod
    def _quality(cls, v: Any) -> Any:
        if isinstance(v, float) and not 0.0 <= v <= 1.0:
            raise ValueError(f"arm_quality must be 'auto', 'router' or in [0, 1], got {v}")
        return v

    @model_validator(mode="after")
    def _old_names(self) -> HumansConfig:
        """``labelstudio.overlap`` / ``labelstudio.timeout`` (the first names) still work."""
        ls = self.labelstudio
        for old, new in (("overlap", "labels_per_item"), ("timeout", "timeout")):
            val = getattr(ls, old)
            if val is None:
                continue
            default = HumansConfig.model_fields[new].default
            mine = getattr(self, new)
            if mine != default and mine != val:
                raise ValueError(
                    f"humans.labelstudio.{old} = {val} and humans.{new} = {mine} disagree; "
                    f"set humans.{new} only"
                )
            setattr(self, new, val)
        return self


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
    human_price: float = Field(default=0.10, ge=0.0, description="price of the 'gold' human")
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
        if k > 1 and self.task.type is TaskType.summarization:
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
        return self

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
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(v: str) -> float:
    """Seconds from ``"90"``, ``"90s"``, ``"30m"``, ``"12h"`` or ``"2d"``.

    >>> parse_duration("30m"), parse_duration("2d"), parse_duration(" 45 ")
    (1800.0, 172800.0, 45.0)
    """
    t = v.strip().lower()
    unit = _UNITS.get(t[-1:])
    num = t[:-1] if unit is not None else t
    try:
        return float(num) * (unit or 1.0)
    except ValueError:
        raise ValueError(
            f"not a duration: {v!r} (use seconds, or e.g. '30m', '12h', '2d')"
        ) from None


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
