"""Scripted people who answer human tasks while a live run waits, on either human backend.

- :class:`FileQueueTeam`: people reading the file queue's ``pending.csv`` and appending to
  its ``answers.csv``; each pending item that still wants labels goes to the next person in
  turn who has not labelled it (so ``labels_per_item = k`` gets k different people).
- :class:`LabelStudioPeople`: people taking tasks from a Label Studio project's label
  stream (``/next``), each with their own token, and answering through its API.

What each person answers is the caller's ``answer(person, item_id)``; the tests and the
scenario scripts (``scripts/team_checks_scenario.py``, ``scripts/pairwise_live_run.py``,
``scripts/trial_team_scenario.py``) differ only there.
"""

from __future__ import annotations

import csv
import json
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

#: ``answer(person, item_id)``: the label a person writes for an item
Answer = Callable[[str, str], str]


def append_answers(path: Path, rows: list[list[str]]) -> None:
    """Append ``rows`` (item_id, label, annotator) to a file queue's answers file, with its
    header when the file is new."""
    new = not path.is_file()
    with path.open("a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["item_id", "label", "annotator"])
        w.writerows(rows)


class FileQueueTeam:
    """People answering a file queue in turn while a run waits.

    Parameters
    ----------
    queue : the project's queue folder (``pending.csv`` out, ``answers.csv`` in).
    answer : ``answer(person, item_id)``, the label a person writes (as it goes into
        ``answers.csv``).
    people : the people, in the order they take turns.
    every : seconds between two looks at ``pending.csv``.

    Attributes
    ----------
    written : (item_id, person, label) of every answer written, in order.
    columns : every column ``pending.csv`` showed.
    most_pending : the most tasks ever pending at once.
    first_seen : when (``time.time()``) a task was first seen pending.
    """

    def __init__(
        self,
        queue: Path,
        answer: Answer,
        people: Sequence[str] = ("ann", "bea", "bad"),
        every: float = 0.05,
    ) -> None:
        self.queue, self.answer, self.people, self.every = Path(queue), answer, list(people), every
        self.written: list[tuple[str, str, str]] = []
        self.columns: set[str] = set()
        self.most_pending = 0
        self.first_seen: float | None = None
        self.turn = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _pending(self) -> list[dict[str, str]]:
        p = self.queue / "pending.csv"
        try:
            df = pd.read_csv(p, dtype=str, keep_default_na=False) if p.is_file() else None
        except (pd.errors.EmptyDataError, pd.errors.ParserError, OSError):
            df = None  # caught while the run rewrites it
        if df is None:
            return []
        self.columns |= set(df.columns)
        return df.to_dict("records")

    def _next_person(self, done: set[str]) -> str | None:
        n = len(self.people)
        return next((w for k in range(n) if (w := self.people[(self.turn + k) % n]) not in done),
                    None)  # fmt: skip

    def _run(self) -> None:
        while not self.stop.is_set():
            pending = self._pending()
            self.most_pending = max(self.most_pending, len(pending))
            if pending and self.first_seen is None:
                self.first_seen = time.time()
            rows = []
            for r in pending:
                item = r["item_id"]
                done = set(json.loads(r.get("answered_by") or "[]"))
                done |= {w for i, w, _ in self.written if i == item}
                if len(done) >= int(r.get("labels_wanted") or 1):
                    continue
                who = self._next_person(done)
                if who is None:
                    continue
                self.turn += 1
                rows.append([item, self.answer(who, item), who])
                self.written.append((item, who, rows[-1][1]))
            if rows:
                append_answers(self.queue / "answers.csv", rows)
            time.sleep(self.every)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)

    def __enter__(self) -> FileQueueTeam:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LabelStudioPeople:
    """People taking tasks from a Label Studio project's label stream (``/next``) and
    answering each with one choice through the API, while a run waits; one thread a person.

    Parameters
    ----------
    url : the Label Studio server.
    users : (e-mail, API token) of each person.
    admin_token : a token that can list the projects (to find ``title``'s id).
    title : the project's title (it appears once the run has created it).
    answer : ``answer(email, item_id)``, the option a person chooses (as shown).
    from_name : the choice control's name in the labelling config.
    think : ``think(email)``, seconds a person takes before submitting (None: none).
    idle : seconds a person waits when there is no project or no task yet.
    busy : seconds a person waits after the server refused or failed a request.

    Attributes
    ----------
    given : (item_id, email, choice) of every answer submitted.
    lost : (item_id, email, error) of every submit refused (e.g. a task deleted meanwhile).
    """

    def __init__(
        self,
        url: str,
        users: Sequence[tuple[str, str]],
        admin_token: str,
        title: str,
        answer: Answer,
        from_name: str = "label",
        think: Callable[[str], float] | None = None,
        idle: float = 0.5,
        busy: float = 0.5,
    ) -> None:
        self.url, self.admin, self.title, self.answer = url, admin_token, title, answer
        self.from_name, self.think, self.idle, self.busy = from_name, think, idle, busy
        self.pid: int | None = None
        self.given: list[tuple[str, str, str]] = []
        self.lost: list[tuple[str, str, str]] = []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=u, daemon=True) for u in users]
        for t in self.threads:
            t.start()

    def _project(self) -> int | None:
        """The project's id once the run has created it."""
        from quorum.live.labelstudio.client import LabelStudioClient

        if self.pid is None:
            c = LabelStudioClient(self.url, self.admin, max_retries=1)
            try:
                res = c.request("GET", "/api/projects/", params={"title": self.title})["results"]
                self.pid = next((int(p["id"]) for p in res if p["title"] == self.title), None)
            except Exception:
                pass
            finally:
                c.close()
        return self.pid

    def _run(self, email: str, token: str) -> None:
        from quorum.live.labelstudio.client import LabelStudioClient
        from quorum.live.labelstudio.page import ITEM_KEY

        c = LabelStudioClient(self.url, token, max_retries=1)
        while not self.stop.is_set():
            if self._project() is None:
                time.sleep(self.idle)
                continue
            try:
                t: Any = c.request("GET", f"/api/projects/{self.pid}/next")
            except Exception:  # nothing to do (404), or the server is busy
                time.sleep(self.idle)
                continue
            if not t or t.get("id") is None:
                time.sleep(self.idle)
                continue
            item = str((t.get("data") or {}).get(ITEM_KEY))
            choice = self.answer(email, item)
            if self.think is not None:
                time.sleep(self.think(email))
            r = {"from_name": self.from_name, "to_name": "text", "type": "choices",
                 "value": {"choices": [choice]}}  # fmt: skip
            try:
                c.request("POST", f"/api/tasks/{t['id']}/annotations/", json={"result": [r]})
                self.given.append((item, email, choice))
            except Exception as exc:  # e.g. 404: the task was deleted while they worked
                self.lost.append((item, email, str(exc)[:200]))
                time.sleep(self.busy)
        c.close()

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=10)
