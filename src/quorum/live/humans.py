"""The human arm: a queue that items are submitted to and answers are polled from.

:class:`HumanQueue` is the interface (``submit``, ``poll``, ``close``) a web UI can implement
later. :class:`FileHumanQueue` is the file export: ``<queue>/pending.csv`` lists what waits
for a human (``item_id, text, instructions, choices``) and ``<queue>/answers.csv``
(``item_id, label[, annotator]``) is read back. Labels may be given as the label value,
the label name or the index shown in ``choices``.
"""

from __future__ import annotations

import csv
import json
import logging
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from quorum.live.parsing import LabelParser
from quorum.live.prompts import ItemView

log = logging.getLogger("quorum.live")

PENDING_FILE = "pending.csv"
ANSWERS_FILE = "answers.csv"


@dataclass(frozen=True)
class HumanTask:
    item: ItemView
    instructions: str
    choices: list[str]


@dataclass(frozen=True)
class HumanAnswer:
    item_id: str
    label: str
    raw: str
    by: str | None = None


class HumanQueue(ABC):
    """Where items wait for human labels."""

    @abstractmethod
    def submit(self, tasks: list[HumanTask]) -> None:
        """Make ``tasks`` visible to humans (idempotent: a task may be submitted again)."""

    @abstractmethod
    def poll(self) -> dict[str, HumanAnswer]:
        """All valid answers available now, by item_id."""

    def withdraw(self, item_ids: list[str]) -> None:  # noqa: B027 - optional
        """Remove answered items from what humans see."""

    def close(self) -> None:  # noqa: B027 - optional
        pass


class FileHumanQueue(HumanQueue):
    """The file export: ``pending.csv`` out, ``answers.csv`` in."""

    def __init__(self, folder: Path, parser: LabelParser | None, free_text: bool = False) -> None:
        self.folder = Path(folder)
        self.parser = parser
        self.free_text = free_text
        self._tasks: dict[str, HumanTask] = {}
        self._answers: dict[str, HumanAnswer] = {}
        self._stamp: tuple[float, int] | None = None
        self._warned: set[tuple[str, str]] = set()

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

    def withdraw(self, item_ids: list[str]) -> None:
        for i in item_ids:
            self._tasks.pop(i, None)
        self._write()

    def _write(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.pending_path.with_suffix(".csv.tmp")
        with tmp.open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["item_id", "text", "instructions", "choices"])
            for t in sorted(self._tasks.values(), key=lambda t: t.item.item_id):
                w.writerow([t.item.item_id, t.item.text, t.instructions, json.dumps(t.choices)])
        os.replace(tmp, self.pending_path)

    def poll(self) -> dict[str, HumanAnswer]:
        p = self.answers_path
        if not p.is_file():
            return dict(self._answers)
        st = p.stat()
        stamp = (st.st_mtime, st.st_size)
        if stamp == self._stamp:
            return dict(self._answers)
        self._stamp = stamp
        answers: dict[str, HumanAnswer] = {}
        with p.open(newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            cols = set(reader.fieldnames or [])
            if not {"item_id", "label"} <= cols:
                log.warning("%s needs columns item_id,label; found %s", p, sorted(cols))
                return dict(self._answers)
            for row in reader:
                iid = (row.get("item_id") or "").strip()
                raw = (row.get("label") or "").strip()
                if not iid or not raw or iid in answers:
                    continue
                label = self._label(iid, raw)
                if label is None:
                    continue
                by = (row.get("annotator") or "").strip() or None
                answers[iid] = HumanAnswer(iid, label, raw, by)
        self._answers = answers
        return dict(answers)

    def _label(self, item_id: str, raw: str) -> str | None:
        if self.free_text or self.parser is None:
            return raw
        task = self._tasks.get(item_id)
        options = list(task.item.choices) if task and task.item.choices else None
        parsed = self.parser.parse(raw, options)
        if parsed.ok and parsed.output is not None:
            return parsed.output
        if (item_id, raw) not in self._warned:
            self._warned.add((item_id, raw))
            log.warning(
                "answers.csv: item %s has label %r, which is not a label (%s); "
                "it stays pending until corrected",
                item_id,
                raw,
                parsed.reason,
            )
        return None
