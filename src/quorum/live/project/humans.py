"""The ``[humans]`` section of a project file: how the human arm reaches people.

The file queue or a Label Studio project (``[humans.labelstudio]``), labels per item, how
long a task may wait, and how much the people are trusted before evidence.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_Strict = ConfigDict(extra="forbid", allow_inf_nan=False)  # inf/nan: a clear error


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
        default=None, ge=1, le=10_000,
        description="human tasks sent ahead and waiting at once (advised: twice the team's "
        "size); unset or 1: a pass stops at its first unanswered task",
    )  # fmt: skip
    team_size: int | None = Field(
        default=None, ge=1, le=10_000,
        description="people on the team: a random check whose labels disagree asks one more "
        "person only where the team has more than labels_per_item people (unset: only where "
        "someone other than the check's own people has answered a task of the run)",
    )  # fmt: skip
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
    def _team_holds_k(self) -> HumansConfig:
        if self.team_size is not None and self.team_size < self.labels_per_item:
            raise ValueError(
                f"humans.team_size ({self.team_size}) is below humans.labels_per_item "
                f"({self.labels_per_item}): each label of an item comes from a different person"
            )
        return self

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
