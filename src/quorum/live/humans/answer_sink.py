"""What the answer collector reports, what it needs from the run, how it words answers.

:class:`Collected` is what one look at the human queue changed in the ledger;
:class:`AnswerSink` is the small public face of the run (a
:class:`~quorum.live.run.source.LiveSource`) that
:class:`~quorum.live.humans.collector.AnswerCollector`
works through; :func:`where` and :func:`task_was` word an answer in its messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from quorum.live.humans.queue import HumanArm
from quorum.live.ledger.store import Ledger
from quorum.tasks.base import ItemView, TaskKind, TaskType


@dataclass
class Collected:
    """What one look at the human queue changed in the ledger (item ids)."""

    new: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    late: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)  # tasks that got all their labels

    @property
    def any(self) -> bool:
        return bool(self.new or self.changed or self.late or self.expired)


class AnswerSink(Protocol):
    """What the collector needs from the run (a :class:`~quorum.live.run.source.LiveSource`):
    its items, human arm, ledger and control labels, and seven public operations."""

    items: dict[str, ItemView]
    human: HumanArm | None
    ledger: Ledger
    gold: dict[str, str]
    task_type: TaskType
    kind: TaskKind

    def report(self, key: tuple, msg: str, *args: Any) -> None:
        """Log a problem with the answers once per project."""

    def match(self, item: ItemView, raw: str) -> str | None:
        """The label an answer names, or None."""

    def label_help(self, item: ItemView) -> str:
        """What a person may answer on ``item`` (for a message)."""

    def room(self, units: int, for_checks: bool | None = None) -> bool:
        """Whether the budget has ``units`` left beside what is paid, held and reserved
        (``for_checks``: the money kept for the random checks may be used)."""

    def late_call(self, key: str, item_id: str, slot: int, label: str, raw: str,
                  price: float) -> int:  # fmt: skip
        """The paid call row of a late answer (its id)."""

    def open_call(self, key: str, item_id: str, slot: int, price: float) -> int:
        """The call row of a slot added to a task (pending, holding ``price``; its id)."""

    def commit(self, units: int, for_checks: bool | None = None) -> None:
        """Count money just paid (or held) outside a call of the run."""

    def resubmit(self, key: str, item_id: str) -> None:
        """Show a task again (it still wants labels)."""


def task_was(status: str, wanted: int) -> str:
    """What a task was when a late answer came (for a message)."""
    names = {"pending": f"complete with its {wanted} label(s)", "answered": "answered",
             "withdrawn": "withdrawn", "expired": "withdrawn after its timeout"}  # fmt: skip
    return names.get(status, status)


def where(line: int | None, by: str | None, on: bool = False) -> str:
    """Where an answer came from: its line in the answers file, else who gave it (web queues).

    >>> where(3, None), where(None, "ann@example.org", on=True), where(None, None)
    ('line 3', 'from ann@example.org', 'from the queue')
    """
    if line is not None:
        return f"on line {line}" if on else f"line {line}"
    return f"from {by}" if by else "from the queue"


def line_of(x: Any) -> int | None:
    """A line number read back from the ledger (pandas may hand it over as a float)."""
    try:
        return None if x is None or x != x else int(x)
    except (TypeError, ValueError):
        return None
