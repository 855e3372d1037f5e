"""The task kinds by name, and the kind of a task."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from quorum.tasks.base import TaskKind, TaskType
from quorum.tasks.classification import Classification, MultipleChoice
from quorum.tasks.multilabel import MultiLabel
from quorum.tasks.pairwise import Pairwise
from quorum.tasks.spans import Spans
from quorum.tasks.summarization import Summarization

#: every kind, by its ``[task] type`` name; a new kind is one class and one entry here
KINDS: dict[TaskType, type[TaskKind]] = {
    TaskType.classification: Classification,
    TaskType.multiple_choice: MultipleChoice,
    TaskType.summarization: Summarization,
    TaskType.pairwise: Pairwise,
    TaskType.multilabel: MultiLabel,
    TaskType.spans: Spans,
}


def recognise_folder(items: pd.DataFrame, answers: pd.DataFrame) -> type[TaskKind] | None:
    """The kind whose columns a folder without a task file has (the first in
    :data:`KINDS` that recognises them), or None."""
    for cls in KINDS.values():
        if cls.recognise(items, answers):
            return cls
    return None


def kind_of(
    task_type: TaskType | str,
    labels: Sequence[str] | None = None,
    label_names: Mapping[str, str] | None = None,
    **options: object,
) -> TaskKind:
    """The kind object of a task type, with the task's labels.

    >>> kind_of("classification", ["neg", "pos"]).discrete
    True
    >>> kind_of("summarization").metric_name
    'rouge1'
    """
    cls = KINDS[TaskType(task_type)]
    opts = {k: v for k, v in options.items() if v is not None}
    return cls(labels, label_names, **opts) if opts else cls(labels, label_names)  # type: ignore[arg-type]
