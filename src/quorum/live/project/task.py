"""The ``[items]`` and ``[task]`` sections of a project file: what is labelled, and how."""

from __future__ import annotations

import string
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from quorum.data.schema import TaskType
from quorum.tasks.parsing import label_key

_Strict = ConfigDict(extra="forbid", allow_inf_nan=False)  # inf/nan: a clear error


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
    pair_columns: list[str] | None = Field(
        default=None,
        min_length=3,
        max_length=3,
        description="pairwise: the columns of the instruction, output 1 and output 2 "
        "(default: found by name, e.g. instruction, output_1, output_2)",
    )
    context_column: str | None = Field(
        default=None,
        description="data the text is about or was written from (e.g. the table a report "
        "describes): shown to LLMs ({context}) and people beside the text, never annotated",
    )
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
    #: multi-label: bounds on the size of an answer's label set
    min_labels: int | None = Field(default=None, ge=0)
    max_labels: int | None = Field(default=None, ge=1)

    @property
    def kind(self) -> Any:
        """The task's kind (:mod:`quorum.tasks`) with its labels and options."""
        from quorum.tasks.registry import kind_of

        return kind_of(
            self.type,
            self.labels,
            self.label_names,
            min_labels=self.min_labels,
            max_labels=self.max_labels,
        )

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
        if self.labels:  # a set's labels and span types are read by name too
            self._distinct_labels(at_least_two=self.type.has_labels)
        from quorum.tasks.registry import KINDS

        kind_cls = KINDS[self.type]
        if kind_cls.needs_labels() and not self.labels:
            raise ValueError(f"a {self.type.value} task needs a non-empty `labels` list")
        for key in ("min_labels", "max_labels"):
            if getattr(self, key) is not None and key not in kind_cls.option_keys:
                raise ValueError(f"`{key}` does not apply to a {self.type.value} task")
        if kind_cls.option_keys:
            _ = self.kind  # the kind's own checks (e.g. label names), one line each
        return self

    def _distinct_labels(self, at_least_two: bool = True) -> None:
        """Labels that a person or a model can tell apart, in every spelling: the values,
        and the names shown, are distinct ignoring case and spaces (an answer is matched
        that way, :func:`~quorum.live.humans.queue.match_label`; a multi-label set's labels
        and a span's type too); ``at_least_two``: and there are two or more (a label
        set or a span type may be alone)."""
        labels = self.labels or []
        names = self.label_names or {}
        shown = [str(names.get(lab, lab)) for lab in labels]
        for what, vals in (("labels", labels), ("label names", shown)):
            folded: dict[str, str] = {}
            for v in vals:
                k = label_key(v)
                if k in folded:
                    raise ValueError(
                        f"{what} {folded[k]!r} and {v!r} are the same answer (case, spaces "
                        "and outer punctuation are ignored when answers are read); give "
                        "each label its own name"
                    )
                folded[k] = v
        if at_least_two and len(labels) < 2:
            raise ValueError(
                f"a {self.type.value} task needs at least two labels, got {labels}"
                + (f" (shown as {shown})" if names else "")
                + ": with one there is nothing to decide"
            )
