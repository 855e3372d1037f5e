"""The canonical data model: a task description, items and long-format annotations.

crowd-kit style: annotations are one long DataFrame with columns
``item_id, annotator, output`` (plus optional ``confidence, cost, raw``). Items are a
DataFrame with ``item_id, text`` (plus optional ``gold, choices, reference, language``
and free metadata). Labels and item ids are always strings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from quorum.errors import DataValidationError
from quorum.tasks.base import TaskKind, TaskType
from quorum.tasks.registry import kind_of

ITEM_REQUIRED = ("item_id", "text")
ITEM_OPTIONAL = ("gold", "choices", "reference", "language")
ANNOTATION_REQUIRED = ("item_id", "annotator", "output")
ANNOTATION_OPTIONAL = ("confidence", "cost", "raw")

#: Annotator name that stands for "the gold label acts as a perfect human" (paper, sec. 4).
GOLD_HUMAN = "gold"


class AnnotatorSpec(BaseModel):
    """One annotator (an arm of the router): an LLM, a human or a local model."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    kind: Literal["llm", "human", "model"] = "llm"
    price: float = Field(
        ge=0.0, allow_inf_nan=False, description="cost per call, in the task's currency"
    )
    confidence_price: float | None = Field(
        default=None,
        ge=0.0,
        allow_inf_nan=False,
        description="cost of one verbalised-confidence call; defaults to `price`",
    )

    @property
    def confidence_cost(self) -> float:
        return self.price if self.confidence_price is None else self.confidence_price


class TaskSpec(BaseModel):
    """What is being labelled and by whom."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    type: TaskType
    labels: list[str] | None = None
    label_names: dict[str, str] | None = None
    instructions: str | None = None
    language: str = "en"
    annotators: list[AnnotatorSpec] = Field(default_factory=list)
    human: str = Field(
        default=GOLD_HUMAN,
        description="name of the annotator that acts as the human arm; 'gold' = gold labels",
    )
    human_price: float = Field(default=0.10, ge=0.0)
    reference_llm: str | None = Field(
        default=None, description="LLM used as reference for MCA; default: the most expensive"
    )
    description: str | None = None
    #: multi-label: bounds on the size of an output's label set (``[task]`` keys)
    min_labels: int | None = Field(default=None, ge=0)
    max_labels: int | None = Field(default=None, ge=1)

    @field_validator("labels")
    @classmethod
    def _labels_unique(cls, v: list[str] | None) -> list[str] | None:
        if v is None:
            return v
        v = [str(x) for x in v]
        if len(set(v)) != len(v):
            raise ValueError(f"label set has duplicates: {v}")
        if not v:
            raise ValueError("label set is empty")
        return v

    @model_validator(mode="after")
    def _check(self) -> TaskSpec:
        if self.type.has_labels and not self.labels:
            raise ValueError(f"a {self.type.value} task needs a non-empty `labels` list")
        from quorum.tasks.registry import KINDS

        kind_cls = KINDS[self.type]
        if kind_cls.needs_labels() and not self.labels:
            raise ValueError(f"a {self.type.value} task needs a non-empty `labels` list")
        for key in ("min_labels", "max_labels"):
            if getattr(self, key) is not None and key not in kind_cls.option_keys:
                raise ValueError(f"`{key}` does not apply to a {self.type.value} task")
        names = [a.name for a in self.annotators]
        if len(set(names)) != len(names):
            raise ValueError(f"annotator names must be unique, got {names}")
        if GOLD_HUMAN in names:
            raise ValueError("'gold' is reserved for the gold-label human; rename that annotator")
        if self.human != GOLD_HUMAN and self.human not in names:
            raise ValueError(f"human {self.human!r} is not one of the annotators {names}")
        if self.reference_llm is not None and self.reference_llm not in names:
            raise ValueError(f"reference_llm {self.reference_llm!r} is not an annotator")
        return self

    # -- convenience -------------------------------------------------------
    @property
    def kind(self) -> TaskKind:
        """The task's kind (:mod:`quorum.tasks`): what differs between kinds lives there."""
        return kind_of(
            self.type,
            self.labels,
            self.label_names,
            min_labels=self.min_labels,
            max_labels=self.max_labels,
        )

    def annotator(self, name: str) -> AnnotatorSpec:
        for a in self.annotators:
            if a.name == name:
                return a
        if name == GOLD_HUMAN:
            return AnnotatorSpec(name=GOLD_HUMAN, kind="human", price=self.human_price)
        raise KeyError(name)

    @property
    def llms(self) -> list[AnnotatorSpec]:
        """Machine annotators (kind llm or model), cheapest first."""
        return sorted(
            (a for a in self.annotators if a.kind != "human" and a.name != self.human),
            key=lambda a: (a.price, a.name),
        )

    @property
    def human_spec(self) -> AnnotatorSpec:
        if self.human == GOLD_HUMAN:
            return AnnotatorSpec(name=GOLD_HUMAN, kind="human", price=self.human_price)
        return self.annotator(self.human)

    @property
    def mca_reference(self) -> str | None:
        if self.reference_llm:
            return self.reference_llm
        llms = self.llms
        return max(llms, key=lambda a: (a.price, a.name)).name if llms else None

    def with_annotators(self, annotators: list[AnnotatorSpec], **changes) -> TaskSpec:
        data = self.model_dump()
        data["annotators"] = [a.model_dump() for a in annotators]
        data.update(changes)
        names = {a.name for a in annotators}
        if data.get("reference_llm") not in names:
            data["reference_llm"] = None
        if data.get("human") not in names:
            data["human"] = GOLD_HUMAN
        return TaskSpec.model_validate(data)


@dataclass
class Dataset:
    """A labelling job in canonical form."""

    task: TaskSpec
    items: pd.DataFrame
    annotations: pd.DataFrame
    source: str | None = None
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.items, self.annotations = validate_frames(self.task, self.items, self.annotations)

    @property
    def name(self) -> str:
        return self.task.name

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def has_gold(self) -> bool:
        return "gold" in self.items.columns and self.items["gold"].notna().any()

    def predictions(self, annotator: str) -> pd.Series:
        """Outputs of one annotator indexed by item_id (NaN where it has none)."""
        a = self.annotations
        s = a.loc[a["annotator"] == annotator].set_index("item_id")["output"]
        return s.reindex(self.items["item_id"])

    def annotator_accuracy(self) -> dict[str, float]:
        """Accuracy of each recorded annotator against gold, over all items (labels only)."""
        if not self.task.type.has_labels or not self.has_gold:
            return {}
        gold = self.items.set_index("item_id")["gold"]
        out = {}
        for name, grp in self.annotations.groupby("annotator", sort=True):
            g = gold.reindex(grp["item_id"]).to_numpy()
            out[str(name)] = float((grp["output"].to_numpy() == g).sum() / len(gold))
        return out

    def subset(self, item_ids) -> Dataset:
        ids = pd.Index(item_ids).astype(str)
        items = self.items.loc[self.items["item_id"].isin(ids)].reset_index(drop=True)
        ann = self.annotations.loc[self.annotations["item_id"].isin(ids)].reset_index(drop=True)
        return Dataset(self.task, items, ann, source=self.source, meta=dict(self.meta))


def _missing(df: pd.DataFrame, cols: tuple[str, ...]) -> list[str]:
    return [c for c in cols if c not in df.columns]


def validate_frames(
    task: TaskSpec, items: pd.DataFrame, annotations: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Check items and annotations against the task; return normalised copies.

    Raises :class:`DataValidationError` with a message naming the problem and a few
    offending rows.
    """
    labels = set(task.labels or [])
    items, annotations = task.kind.check_frames(items, annotations)
    items = _valid_items(task, items, labels)
    ann = _valid_annotations(task, annotations, set(items["item_id"]), labels)
    return items.reset_index(drop=True), ann


def _valid_items(task: TaskSpec, items: pd.DataFrame, labels: set[str]) -> pd.DataFrame:
    """The items checked (columns, unique ids, texts, gold in the label set), normalised."""
    miss = _missing(items, ITEM_REQUIRED)
    if miss:
        raise DataValidationError(
            f"items: missing required column(s) {miss}; found columns {list(items.columns)}"
        )
    items = items.copy()
    items["item_id"] = items["item_id"].astype(str)
    dup = items["item_id"][items["item_id"].duplicated()]
    if len(dup):
        raise DataValidationError(
            f"items: {len(dup)} duplicate item_id(s), e.g. {sorted(set(dup))[:5]}"
        )
    text = items["text"]
    empty = items["item_id"][text.isna() | (text.astype(str).str.strip() == "")]
    if len(empty):
        raise DataValidationError(
            f"items: {len(empty)} empty text(s), e.g. item_id {list(empty)[:5]}"
        )
    items["text"] = text.astype(str)
    if "gold" in items.columns:
        g = items["gold"]
        items["gold"] = g.where(g.isna(), _label_strs(g))
        if task.type.has_labels:
            bad = items.loc[items["gold"].notna() & ~items["gold"].isin(labels)]
            if len(bad):
                raise DataValidationError(
                    f"items: {len(bad)} gold label(s) outside the label set {sorted(labels)}, "
                    f"e.g. {bad[['item_id', 'gold']].head(3).to_dict('records')}"
                )
    return items


def _valid_annotations(
    task: TaskSpec, annotations: pd.DataFrame, item_ids: set[str], labels: set[str]
) -> pd.DataFrame:
    """The answers checked (columns, known items and annotators, labels, one per pair,
    confidence in [0, 1]); missing outputs dropped."""
    miss = _missing(annotations, ANNOTATION_REQUIRED)
    if miss:
        raise DataValidationError(
            f"annotations: missing required column(s) {miss}; "
            f"found columns {list(annotations.columns)}"
        )
    ann = annotations.copy()
    ann["item_id"] = ann["item_id"].astype(str)
    ann["annotator"] = ann["annotator"].astype(str)
    unknown = ann.loc[~ann["item_id"].isin(item_ids)]
    if len(unknown):
        raise DataValidationError(
            f"annotations: {len(unknown)} annotation(s) for unknown item_id(s), "
            f"e.g. {sorted(set(unknown['item_id']))[:5]}"
        )
    ann = ann.loc[ann["output"].notna()].reset_index(drop=True)
    ann["output"] = _label_strs(ann["output"]) if task.type.has_labels else ann["output"]
    if task.type.has_labels:
        bad = ann.loc[~ann["output"].isin(labels)]
        if len(bad):
            raise DataValidationError(
                f"annotations: {len(bad)} label(s) outside the label set {sorted(labels)}, "
                f"e.g. {bad[['item_id', 'annotator', 'output']].head(3).to_dict('records')}"
            )
    dup = ann.duplicated(["item_id", "annotator"])
    if dup.any():
        raise DataValidationError(
            f"annotations: {int(dup.sum())} duplicate (item_id, annotator) pair(s), e.g. "
            f"{ann.loc[dup, ['item_id', 'annotator']].head(3).to_dict('records')}"
        )
    known = {a.name for a in task.annotators}
    if known:
        extra = sorted(set(ann["annotator"]) - known)
        if extra:
            raise DataValidationError(
                f"annotations: annotator(s) {extra} are not declared in the task "
                f"(declared: {sorted(known)})"
            )
    if "confidence" in ann.columns:
        c = pd.to_numeric(ann["confidence"], errors="coerce")
        if ((c < 0) | (c > 1)).any():
            raise DataValidationError("annotations: confidence must lie in [0, 1]")
        ann["confidence"] = c
    return ann


def drop_unusable(
    annotations: pd.DataFrame,
    labels: Sequence[str] | None,
    usable: Callable[[pd.Series], pd.Series | None] | None = None,
) -> tuple[pd.DataFrame, dict[str, int], dict[str, list[str]]]:
    """The one rule for recorded answers, used by the named loaders and by dataset folders.

    A missing or blank ``output`` is *no answer* (the row goes; it is not counted). An
    answer outside the label set (``labels`` not None) is *dropped* and counted per
    annotator. Returns the kept rows (index reset, values untouched), the dropped counts
    (annotators with at least one) and up to three distinct dropped values per annotator.
    The router treats an absent answer as a paid, unparseable call.

    >>> a = pd.DataFrame({"item_id": ["1", "2", "3"], "annotator": ["m", "m", "m"],
    ...                   "output": ["pos", "maybe", " "]})
    >>> kept, dropped, examples = drop_unusable(a, ["pos", "neg"])
    >>> kept["output"].tolist(), dropped, examples
    (['pos'], {'m': 1}, {'m': ['maybe']})
    """
    out = annotations["output"]
    present = out.notna()
    norm = pd.Series("", index=out.index, dtype=object)
    norm[present] = _label_strs(out[present])
    answered = present & (norm != "")
    outside = answered & ~norm.isin(list(labels)) if labels is not None else answered & False
    fits = usable(norm) if usable is not None else None
    if fits is not None:  # the task kind's own rule (e.g. a multi-label set)
        outside = answered & ~fits.to_numpy(dtype=bool)
    dropped: dict[str, int] = {}
    examples: dict[str, list[str]] = {}
    if outside.any():
        who = annotations.loc[outside, "annotator"].astype(str)
        for name, vals in norm[outside].groupby(who.to_numpy(), sort=True):
            dropped[str(name)] = len(vals)
            examples[str(name)] = [str(v) for v in pd.unique(vals)[:3]]
    kept = annotations.loc[answered & ~outside].reset_index(drop=True)
    return kept, dropped, examples


def _label_strs(values: pd.Series) -> pd.Series:
    """:func:`_label_str` of every value, computed once per distinct value (fast on big
    answer frames, where a few labels repeat)."""
    table = {v: _label_str(v) for v in pd.unique(values)}
    return values.map(table)


def label_str(x: object) -> str:
    """Canonical string form of a label, the form answers, gold and label sets are
    compared in (``quorum.replay`` reads its label set so): 1.0 -> '1', ' A ' -> 'A'.

    >>> label_str(1.0), label_str(" A "), label_str(0)
    ('1', 'A', '0')
    """
    return _label_str(x)


def _label_str(x) -> str:
    """Canonical string form of a label: 1.0 -> '1', ' A ' -> 'A'."""
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x).strip()
