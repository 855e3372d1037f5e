"""What a human task is made of: its request key, what it shows, how its answers read.

Pure functions of the human arm (:class:`~quorum.live.humans.queue.HumanArm`), the item and what
the ledger holds of the task; the live source and the answer collector use them.
"""

from __future__ import annotations

from quorum.data.schema import TaskType
from quorum.live.humans.book import HumanBook
from quorum.live.humans.queue import HumanArm, HumanTask, match_label
from quorum.live.machines.calls import request_key
from quorum.live.machines.prompts import ItemView


def task_key(arm: HumanArm, item: ItemView) -> str:
    """The request key of ``item``'s human task (the same item and page: the same task)."""
    return request_key(
        {"human": arm.name, "text": item.text, "choices": item.choices,
         "instructions": arm.builder.instructions, "item_id": item.item_id}
    )  # fmt: skip


def human_task(
    arm: HumanArm, item: ItemView, task_type: TaskType, book: HumanBook, key: str | None = None
) -> HumanTask:
    """The task shown to people, with who answered it so far (several labels per item)."""
    b = arm.builder
    choices = [] if task_type is TaskType.summarization else b.options(item)
    k = arm.labels_per_item
    by: tuple[str, ...] = ()
    if k > 1 and key is not None:
        lab = book.labels(key)
        by = tuple(p for p, st in zip(lab["person"], lab["status"], strict=True)
                   if st in ("answered", "late") and isinstance(p, str))  # fmt: skip
    return HumanTask(item, b.instructions, choices, wanted=k, answered_by=by)


def match_answer(arm: HumanArm | None, task_type: TaskType, item: ItemView, raw: str) -> str | None:
    """The label a person's answer names (a summary: its text), or None."""
    if task_type is TaskType.summarization:
        return raw.strip() or None
    b = arm.builder if arm is not None else None
    if b is None:
        return None
    return match_label(raw, b.labels, b.label_names, b.options(item))


def label_help(arm: HumanArm, item: ItemView) -> str:
    """What a person may answer on ``item`` (for a message)."""
    b = arm.builder
    opts = b.options(item)
    names = [b.label_names.get(lab, lab) for lab in b.labels]
    shown = sorted(set(b.labels) | set(names) | set(opts), key=str)
    return f"use one of {shown} or an index 0..{min(len(opts), len(b.labels)) - 1}"
