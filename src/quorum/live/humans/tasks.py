"""What a human task is made of: its request key, what it shows, how its answers read.

Pure functions of the human arm (:class:`~quorum.live.humans.queue.HumanArm`), the item and what
the ledger holds of the task; the live source and the answer collector use them.
"""

from __future__ import annotations

from quorum.live.humans.book import HumanBook
from quorum.live.humans.queue import HumanArm, HumanTask
from quorum.live.machines.calls import request_key
from quorum.tasks.base import ItemView, TaskKind


def task_key(arm: HumanArm, item: ItemView) -> str:
    """The request key of ``item``'s human task (the same item and page: the same task)."""
    page = {"human": arm.name, "text": item.text, "choices": item.choices,
            "instructions": arm.builder.instructions, "item_id": item.item_id}  # fmt: skip
    if item.context is not None:  # (without a context: the key of a project before it)
        page["context"] = item.context
    return request_key(page)


def human_task(arm: HumanArm, item: ItemView, book: HumanBook, key: str | None = None) -> HumanTask:
    """The task shown to people, with who answered it so far (several labels per item);
    its options are the task kind's (none for a free-text answer)."""
    b = arm.builder
    choices = b.kind.human_options(item)
    k = arm.labels_per_item
    by: tuple[str, ...] = ()
    if k > 1 and key is not None:
        row = book.ledger.human_task(key)
        if row is not None and row["wanted"]:
            k = max(k, int(row["wanted"]))  # a check whose labels disagree wants one more
        lab = book.labels(key)
        by = tuple(p for p, st in zip(lab["person"], lab["status"], strict=True)
                   if st in ("answered", "late") and isinstance(p, str))  # fmt: skip
    return HumanTask(item, b.instructions, choices, wanted=k, answered_by=by)


def match_answer(arm: HumanArm | None, kind: TaskKind, item: ItemView, raw: str) -> str | None:
    """The output a person's answer names (a label; a summary: its text), or None."""
    if not kind.people_choose:
        return kind.match_human(raw, item)
    return None if arm is None else arm.builder.kind.match_human(raw, item)


def label_help(arm: HumanArm, item: ItemView) -> str:
    """What a person may answer on ``item`` (for a message)."""
    b = arm.builder
    own = b.kind.human_answer_help(item)
    if own is not None:  # the kind's own form (e.g. a span list)
        return own
    opts = b.options(item)
    names = [b.label_names.get(lab, lab) for lab in b.labels]
    shown = sorted(set(b.labels) | set(names) | set(opts), key=str)
    return f"use one of {shown} or an index 0..{min(len(opts), len(b.labels)) - 1}"
