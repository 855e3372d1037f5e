"""The human arm: a queue that tasks are submitted to and answers are read back from.

:class:`HumanQueue` is the interface (``submit``, ``poll``, ``withdraw``, ``wait``,
``close``) a web UI can implement. :class:`FileHumanQueue` is the file export:
``<queue>/pending.csv`` lists what waits for a human (``item_id, text, instructions,
choices``; with several labels per item also ``labels_wanted`` and ``answered_by``, the
people who already labelled it; then the item's named parts, e.g. a pair's
``instruction, output_1, output_2`` side by side; with items that have a context, last,
``context``) and ``<queue>/answers.csv`` (``item_id, label[, annotator]``) is read back; with
several labels per item the ``annotator`` column says who is who (rows without it count as
one person). A span task's ``label`` is a JSON list of spans (the kind's
:meth:`~quorum.tasks.base.TaskKind.match_human`).

The queue only transports rows; :func:`match_label` turns an answer into a label, exactly:
the label value, the label name, the option text shown in ``choices``, or the index into
``choices`` (case and surrounding spaces do not matter). Nothing else is guessed: "not
positive" is not a label.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from quorum.live.machines.prompts import PromptBuilder
from quorum.routing.core.budget import from_units, to_units
from quorum.tasks.base import ItemView

log = logging.getLogger("quorum.live")

PENDING_FILE = "pending.csv"
ANSWERS_FILE = "answers.csv"


@dataclass(frozen=True)
class HumanTask:
    """An item shown to people; ``wanted`` labels from different people, ``answered_by``
    those who gave one so far (the next label must come from someone else)."""

    item: ItemView
    instructions: str
    choices: list[str]
    wanted: int = 1
    answered_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class HumanAnswer:
    """One answer row as the human wrote it (``line``: its line in the answers file;
    ``note``: what looks wrong with the row itself, said with an answer that is not used)."""

    item_id: str
    raw: str
    by: str | None = None
    line: int | None = None
    note: str | None = None


class HumanQueue(ABC):
    """Where tasks wait for human labels."""

    @abstractmethod
    def submit(self, tasks: list[HumanTask]) -> None:
        """Make ``tasks`` visible to humans (idempotent: a task may be submitted again)."""

    @abstractmethod
    def poll(self) -> list[HumanAnswer]:
        """Every answer row available now, oldest first (a later row may correct one)."""

    def withdraw(self, item_ids: list[str]) -> list[str] | None:
        """Remove answered (or no longer needed) items from what humans see. Returns the
        items removed where the queue can refuse some (a web queue keeps a task that got an
        answer meanwhile), None when all were."""
        return None

    def wait(self, timeout: float) -> bool:
        """Sleep until answers may have changed since the last :meth:`poll` (True) or
        ``timeout`` seconds pass (False). The default checks once a second."""
        time.sleep(max(0.0, min(timeout, 1.0)))
        return timeout >= 1.0

    def close(self) -> None:  # noqa: B027 - optional
        pass


class FileHumanQueue(HumanQueue):
    """The file export: ``pending.csv`` out, ``answers.csv`` in.

    ``check_every``: seconds between two looks at the answers file's size and modification
    time while :meth:`wait` sleeps (it reads nothing and writes nothing meanwhile).
    """

    def __init__(self, folder: Path, check_every: float = 0.25) -> None:
        self.folder = Path(folder)
        self.check_every = check_every
        self._tasks: dict[str, HumanTask] = {}
        self._rows: list[HumanAnswer] = []
        self._stamp: tuple | None = None
        self._warned_cols = False

    @property
    def pending_path(self) -> Path:
        return self.folder / PENDING_FILE

    @property
    def answers_path(self) -> Path:
        return self.folder / ANSWERS_FILE

    def submit(self, tasks: list[HumanTask]) -> None:
        for t in tasks:
            self._tasks[t.item.item_id] = t
        self._write()

    def withdraw(self, item_ids: list[str]) -> list[str] | None:
        if any(i in self._tasks for i in item_ids):
            for i in item_ids:
                self._tasks.pop(i, None)
            self._write()
        return None

    def _write(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.pending_path.with_suffix(".csv.tmp")
        team = any(t.wanted > 1 for t in self._tasks.values())
        # the item's named parts (a pair's instruction and two outputs), one column each
        parts = list(dict.fromkeys(k for t in self._tasks.values() for k, _ in t.item.fields))
        context = any(t.item.context is not None for t in self._tasks.values())
        with tmp.open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            head = ["item_id", "text", "instructions", "choices"]
            head += ["labels_wanted", "answered_by"] if team else []
            w.writerow([*head, *parts, *(["context"] if context else [])])
            for t in sorted(self._tasks.values(), key=lambda t: t.item.item_id):
                row = [t.item.item_id, t.item.text, t.instructions, json.dumps(t.choices)]
                if team:
                    row += [t.wanted, json.dumps(list(t.answered_by))]
                row += [t.item.field(k) or "" for k in parts]
                if context:
                    row.append(t.item.context or "")
                w.writerow(row)
        os.replace(tmp, self.pending_path)

    def _file_stamp(self) -> tuple | None:
        try:
            st = self.answers_path.stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def wait(self, timeout: float) -> bool:
        end = time.monotonic() + max(0.0, timeout)
        while self._file_stamp() == self._stamp:
            left = end - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(self.check_every, left))
        return True

    def poll(self) -> list[HumanAnswer]:
        stamp = self._file_stamp()
        if stamp is None or stamp == self._stamp:
            self._stamp = stamp
            return list(self._rows)
        p = self.answers_path
        rows: list[HumanAnswer] = []
        try:
            with p.open(newline="", encoding="utf-8-sig") as f:
                reader = csv.DictReader(f)
                cols = set(reader.fieldnames or [])
                if not {"item_id", "label"} <= cols:
                    if not self._warned_cols:
                        self._warned_cols = True
                        log.warning("%s needs columns item_id,label; found %s", p, sorted(cols))
                    self._stamp = stamp
                    return list(self._rows)
                for row in reader:
                    iid = (row.get("item_id") or "").strip()
                    raw = (row.get("label") or "").strip()
                    if not iid or not raw:
                        continue  # a row still being filled in
                    by = (row.get("annotator") or "").strip() or None
                    note = _extra_fields(row, reader.fieldnames or [])
                    rows.append(HumanAnswer(iid, raw, by, reader.line_num, note))
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            log.warning("cannot read %s (%s); will read it again when it changes", p, exc)
            self._stamp = stamp
            return list(self._rows)
        self._stamp = stamp
        self._rows = rows
        return list(rows)


def _extra_fields(row: dict, header: list[str]) -> str | None:
    """What to say of an answers row with more fields than its header (None: it has
    not): most often a label holding commas (a JSON span list) written without quotes.

    >>> note = _extra_fields({"label": '[{"start":0', None: ['"end":7', "ann"]}, ["label"])
    >>> note[:64]
    "the row has 2 field(s) more than the header ['label']: a label h"
    >>> _extra_fields({"label": "positive"}, ["label"]) is None
    True
    """
    extra = row.get(None)
    if not extra:
        return None
    return (
        f"the row has {len(extra)} field(s) more than the header {list(header)}: a label "
        "holding commas must be in double quotes with its own quotes doubled, e.g. "
        '"[{""start"": 0, ""end"": 7, ""label"": ""Team""}]"'
    )


@dataclass
class HumanArm:
    """The human annotator: a name, the price of one label, the queue behind it, and the
    team's rules (labels per item, timeout, reliability prior, quality for the router)."""

    name: str
    price: float
    queue: HumanQueue
    builder: PromptBuilder
    labels_per_item: int = 1
    timeout: float | None = None
    team_size: int | None = None
    prior_accuracy: float = 0.8
    prior_strength: float = 4.0
    arm_quality: str | float = "auto"
    min_evidence: int = 10

    @property
    def task_price(self) -> float:
        """What one human task may cost: a label from each of ``labels_per_item`` people."""
        return from_units(to_units(self.price) * self.labels_per_item)
