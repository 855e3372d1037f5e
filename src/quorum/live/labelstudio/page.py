"""What Label Studio shows people: the labelling page, the task data keys, option text.

The labelling page is generated from the task type: single-choice buttons for
classification and multiple choice (the item's own options), a text box for summaries,
a pair's two outputs side by side above the choice for pairwise judgements.
Everything that comes from the data (item text, options, instructions) travels as task
*data*, never inside the labelling config, so hostile text cannot change the page: Label
Studio's ``Text`` tag shows it as plain text.
"""

from __future__ import annotations

import hashlib
from typing import Any

from quorum.live.humans.queue import HumanTask
from quorum.tasks.base import TaskKind, TaskType
from quorum.tasks.registry import kind_of

#: data keys QUORUM adds to every task (besides ``text``, ``instructions``, ``options``)
ITEM_KEY = "quorum_item_id"
PRIORITY_KEY = "quorum_priority"
#: data columns the annotators' task list hides (bookkeeping, or shown on the page anyway)
HIDDEN_COLUMNS = (ITEM_KEY, PRIORITY_KEY, "options", "instructions", "context")
TASK_LIST_TITLE = "Tasks (QUORUM)"
FROM_LABEL = "label"
FROM_SUMMARY = "summary"
# Label Studio reads ``$name`` in a choice's value as a reference to task data; a word
# joiner after each ``$`` keeps the text as it is (and is removed again when read back).
_WJ = "\u2060"


def label_config(
    kind: TaskKind | TaskType, instructions: bool = True, context: bool = False
) -> str:
    """The labelling interface for a task kind (its control: the kind's
    :meth:`~quorum.tasks.base.TaskKind.labelstudio_control`). It holds no text from the
    project: the instructions, item text, options and the item's context (``context``:
    the items have one, shown above the text) are task data shown by reference
    (``$name``)."""
    kind = kind if isinstance(kind, TaskKind) else kind_of(kind)
    head = '  <Header value="$instructions"/>\n' if instructions else ""
    if context:
        head += '  <Header value="Context" size="6"/>\n  <Text name="context" value="$context"/>\n'
        head += '  <Header value="Text" size="6"/>\n'
    text = '  <Text name="text" value="$text"/>\n'
    more = kind.labelstudio_objects()  # e.g. a pair's two outputs side by side
    return f"<View>\n{head}{text}{more}  {kind.labelstudio_control()}\n</View>"


def project_title(name: str) -> str:
    """A valid Label Studio project title (3 to 50 characters) for a project name."""
    if len(name) < 3:
        return f"{name} (QUORUM)"
    if len(name) > 50:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        return f"{name[:41]}~{digest}"
    return name


def shown(option: str) -> str:
    """An option as Label Studio must receive it to display it verbatim."""
    return option.replace("$", "$" + _WJ)


def unshown(value: str) -> str:
    return value.replace(_WJ, "")


def task_options(data: dict[str, Any] | None) -> list[str]:
    """The options a task shows (its ``options`` data), as the project gave them."""
    return [unshown(str(o.get("value", ""))) for o in (data or {}).get("options") or []]


def task_data(
    task: HumanTask, priority: int, instructions: bool, kind: TaskKind, context: bool = False
) -> dict:
    """The data of the task that shows ``task`` (its place in the stream: ``priority``;
    ``context``: the page shows the item's context, empty where it has none)."""
    data: dict[str, Any] = {"text": task.item.text, ITEM_KEY: task.item.item_id,
                            PRIORITY_KEY: priority}  # fmt: skip
    if instructions:
        data["instructions"] = task.instructions
    if kind.people_choose:
        data["options"] = [{"value": shown(c)} for c in task.choices]
    data.update(kind.labelstudio_data(task.item, task.choices))
    if context:
        data["context"] = task.item.context or ""
    return data
