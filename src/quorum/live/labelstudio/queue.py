"""The human arm in Label Studio: a :class:`~quorum.live.humans.queue.HumanQueue` over its REST API.

Items QUORUM routes to humans become tasks of one Label Studio project
(:class:`~quorum.live.labelstudio.project.LabelStudioProject`), in the order they were
routed; the page shows them as :mod:`~quorum.live.labelstudio.page` builds it. Every
submitted annotation is read back with the identity (e-mail) of the annotator who gave it,
oldest first (:mod:`~quorum.live.labelstudio.answers`). A task nobody answered within
``timeout`` seconds can be withdrawn (deleted, only while it has no annotation) so the
router can plan it again. The project itself is the record of what was pushed: a
restarted process lists it and never pushes an item twice.

The API token comes from an environment variable named in the project file; it lives only
in the HTTP client's headers (:mod:`~quorum.live.labelstudio.client`), never in logs,
reprs, files or exports.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from quorum.errors import ConfigError
from quorum.live.humans.queue import HumanAnswer, HumanQueue, HumanTask
from quorum.live.labelstudio.answers import (
    AnswerReader,
    LabelStudioAnswer,
    People,
    signature,
    timestamp,
)
from quorum.live.labelstudio.client import LabelStudioClient, LabelStudioError, Outage
from quorum.live.labelstudio.page import ITEM_KEY, PRIORITY_KEY, task_data, task_options
from quorum.live.labelstudio.predictions import (
    PredictionSource,
    ledger_predictions,
    prediction_result,
)
from quorum.live.labelstudio.project import LabelStudioProject
from quorum.tasks.base import TaskType

log = logging.getLogger("quorum.live")


@dataclass
class _Task:
    task_id: int
    item_id: str
    options: list[str]
    created_at: float
    n_annotations: int = 0
    overlap: int = 0  # raised on this task (0: the project's)
    hidden: bool = False  # withdrawn: out of the label stream, kept for who has it open


class LabelStudioHumanQueue(HumanQueue):
    """Items wait in a Label Studio project; answers come back with the annotator's e-mail.

    Parameters
    ----------
    client : the API client (holds the token).
    project : the project's name (see :class:`LabelStudioProject`); found, or created.
    task_type : classification, multiple choice or summarization.
    labels : the task's labels (an answer's option index maps to ``labels[index]``).
    instructions : whether tasks carry instructions (a header on the page).
    context : whether tasks carry the item's context (shown above the text).
    predictions : where LLM answers come from, shown as pre-annotations (None: not shown).
    overlap : labels wanted per item, each from a different annotator.
    timeout : seconds a task may stay unanswered before :meth:`expired` lists it.
    project_id : use this project instead of looking it up by title.
    page_size : tasks per page when listing.
    description : the description of a project this creates.
    check_every : seconds between two reads of the answers while :meth:`wait` sleeps.
    """

    def __init__(
        self,
        client: LabelStudioClient,
        project: str,
        task_type: TaskType,
        labels: list[str] | None = None,
        *,
        instructions: bool = True,
        context: bool = False,
        predictions: PredictionSource | None = None,
        overlap: int = 1,
        timeout: float | None = None,
        project_id: int | None = None,
        page_size: int = 500,
        description: str = "",
        check_every: float = 2.0,
    ) -> None:
        self.client = client
        self.project = LabelStudioProject(
            client, project, task_type, instructions=instructions, context=context,
            overlap=overlap,
            predictions=predictions is not None, description=description,
            project_id=project_id, page_size=page_size,
        )  # fmt: skip
        self.title = self.project.title
        self.task_type = task_type
        self.labels = list(labels or [])
        self.predictions = predictions
        self.timeout = timeout
        self.check_every = check_every
        self.reader = AnswerReader(People(client), task_type, self.labels)
        #: the task's kind: what a task shows, how an LLM's answer is pre-annotated
        self.kind = self.reader.kind
        self._tasks: dict[str, _Task] = {}
        self._unsent: dict[str, HumanTask] = {}
        self._answers: dict[str, list[LabelStudioAnswer]] = {}
        self._priority = 0
        self._listed = False
        self._seen: frozenset | None = None  # what the last poll read (see wait)
        self.outage = Outage(client.url)  # when the server stopped answering

    def __repr__(self) -> str:
        return f"LabelStudioHumanQueue(url={self.client.url!r}, project={self.title!r})"

    @classmethod
    def from_config(cls, cfg: Any) -> LabelStudioHumanQueue:
        """The queue a project file asks for (``[humans] backend = "labelstudio"``)."""
        ls = cfg.humans.labelstudio
        token = os.environ.get(ls.token_env, "")
        if not token:
            raise ConfigError(
                f"Label Studio: set the API token in the environment variable {ls.token_env} "
                "(Account & Settings > Personal Access Token in Label Studio)"
            )
        humans = [a.name for a in cfg.annotators if a.kind == "human"]
        preds = ledger_predictions(cfg.ledger_path, humans) if ls.predictions else None
        return cls(
            LabelStudioClient(ls.url, token, timeout=ls.request_timeout),
            ls.project or cfg.name,
            cfg.task.type,
            cfg.task.labels,
            instructions=bool(cfg.task.instructions),
            context=cfg.items.context_column is not None,
            predictions=preds,
            overlap=cfg.humans.labels_per_item,
            timeout=cfg.humans.timeout,
            project_id=ls.project_id,
            page_size=ls.page_size,
            description=f"QUORUM project {cfg.name}: items routed to humans",
        )

    # -- project ------------------------------------------------------------------
    def check(self, token_env: str = "the token variable") -> None:
        """See :meth:`LabelStudioProject.check` (before the first paid call)."""
        self.project.check(token_env)

    @property
    def project_id(self) -> int:
        return self.project.id

    @property
    def create(self) -> bool:
        """False: never create the project (read-only uses like status)."""
        return self.project.create

    @create.setter
    def create(self, value: bool) -> None:
        self.project.create = value

    @property
    def project_url(self) -> str:
        return self.project.url

    def task_url(self, task_id: int) -> str:
        return self.project.task_url(task_id)

    def links(self, item_ids: Iterable[str] | None = None) -> dict[str, str]:
        """Label Studio links of the tasks of ``item_ids`` (default: every pushed task). An
        item not pushed by this queue is looked up again (another process may have pushed it)."""
        self._ensure_listed()
        if item_ids is not None:
            item_ids = list(item_ids)
            if any(i not in self._tasks for i in item_ids):
                self._list_tasks()
        ids = self._tasks if item_ids is None else [i for i in item_ids if i in self._tasks]
        return {i: self.task_url(self._tasks[i].task_id) for i in ids}

    # -- listing ------------------------------------------------------------------
    def _ensure_listed(self) -> None:
        if not self._listed:
            self._list_tasks()

    def _list_tasks(self) -> None:
        """What the project holds: the record of what was pushed (survives restarts)."""
        tasks: dict[str, _Task] = {}
        top = 0
        for t in self.project.pages("task_only"):
            data = t.get("data") or {}
            item_id = data.get(ITEM_KEY)
            if item_id is None:
                continue
            top = max(top, int(data.get(PRIORITY_KEY) or 0))
            opts = task_options(data)
            prev = tasks.get(str(item_id))
            if prev is not None and prev.task_id < int(t["id"]):
                log.warning("Label Studio: item %s has two tasks (%s, %s); reading both",
                            item_id, prev.task_id, t["id"])  # fmt: skip
                continue
            n = int(t.get("total_annotations") or 0)
            tasks[str(item_id)] = _Task(
                int(t["id"]), str(item_id), opts, timestamp(t.get("created_at")), n,
                hidden=bool(t.get("is_labeled")) and n == 0,
            )  # fmt: skip
        self._tasks = tasks
        self._priority = max(self._priority, top)
        self._listed = True

    # -- HumanQueue ---------------------------------------------------------------
    def submit(self, tasks: list[HumanTask]) -> None:
        """Push the tasks not in the project yet, in the order given (priority order). A
        task pushed already that now wants more labels than its overlap (a check whose
        labels disagree, issue 38) gets its overlap raised, so that the label stream hands
        it to one more person."""
        for t in tasks:
            pushed = self._tasks.get(t.item.item_id)
            if pushed is not None and pushed.hidden:
                self._show(pushed)  # withdrawn earlier, needed again: back in the stream
            if pushed is not None and t.wanted > max(pushed.overlap, self.project.overlap):
                self._set_overlap(pushed, t.wanted)
                continue
            self._unsent.setdefault(t.item.item_id, t)
        self._flush()

    def _show(self, t: _Task) -> None:
        try:
            self.client.request("PATCH", f"/api/tasks/{t.task_id}/", json={"is_labeled": False})
            t.hidden = False
            t.created_at = time.time()
        except LabelStudioError as exc:
            log.warning("Label Studio: cannot show task %s again (%s)", t.task_id, exc)

    def _set_overlap(self, t: _Task, n: int) -> None:
        try:
            # a task with its labels is "labeled" and out of the stream: back in with room
            self.client.request("PATCH", f"/api/tasks/{t.task_id}/",
                                json={"overlap": n, "is_labeled": False})  # fmt: skip
            t.overlap = n
        except LabelStudioError as exc:
            log.warning("Label Studio: cannot ask for one more label on task %s (%s)",
                        t.task_id, exc)  # fmt: skip

    def _flush(self) -> None:
        if not self._unsent:
            return
        try:
            self._ensure_listed()
            new = [t for i, t in self._unsent.items() if i not in self._tasks]
            for s in range(0, len(new), self.project.page_size):
                self._import(new[s : s + self.project.page_size])
            self._unsent.clear()
        except LabelStudioError as exc:
            # the project stays the record: list it again before the next push
            self._listed = False
            log.warning("Label Studio: %d task(s) not pushed yet (%s); retrying on the next "
                        "submit or poll", len(self._unsent), exc)  # fmt: skip

    def _import(self, batch: list[HumanTask]) -> None:
        preds = self.predictions([t.item.item_id for t in batch]) if self.predictions else {}
        payload = []
        for t in batch:
            self._priority += 1
            data = task_data(
                t, self._priority, self.project.instructions, self.kind, self.project.context
            )
            task: dict[str, Any] = {"data": data}
            p = [prediction_result(x, self.kind, t.choices)
                 for x in preds.get(t.item.item_id, [])]  # fmt: skip
            if p := [x for x in p if x is not None]:
                task["predictions"] = p
            payload.append(task)
        res = self.client.request(
            "POST", f"/api/projects/{self.project_id}/import", json=payload,
            params={"return_task_ids": "true"},
        )  # fmt: skip
        ids = res.get("task_ids") or []
        if len(ids) != len(batch):
            self._list_tasks()
            return
        now = time.time()
        for t, tid in zip(batch, ids, strict=True):
            self._tasks[t.item.item_id] = _Task(int(tid), t.item.item_id, list(t.choices), now)
        log.info("Label Studio: pushed %d task(s) to project %s", len(batch), self.project_id)

    def poll(self) -> list[HumanAnswer]:
        """Every submitted (not skipped) annotation, oldest first; with ``overlap`` > 1 an
        item has one per annotator. Pushes tasks a failed :meth:`submit` kept."""
        out: list[HumanAnswer] = list(self._all())
        return out

    def poll_all(self) -> dict[str, list[LabelStudioAnswer]]:
        """Every submitted answer by item, oldest first."""
        out: dict[str, list[LabelStudioAnswer]] = {}
        for a in self._all():
            out.setdefault(a.item_id, []).append(a)
        return out

    def _all(self) -> list[LabelStudioAnswer]:
        self._flush()
        try:
            got = self._read_answers()
        except LabelStudioError as exc:
            if self.outage.since is None:
                log.warning("Label Studio: could not read answers (%s); using the last ones", exc)
        else:
            self.outage.up()
            self._merge(got)
            self._seen = signature(got)
        return sorted(
            (a for lst in self._answers.values() for a in lst),
            key=lambda a: (a.submitted_at, a.annotation_id),
        )

    def wait(self, timeout: float) -> bool:
        """Read the answers every ``check_every`` seconds until they differ from what the
        last :meth:`poll` saw (True) or ``timeout`` seconds pass (False). Reads only: nothing
        is pushed, withdrawn or remembered meanwhile."""
        end = time.monotonic() + max(0.0, timeout)
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(self.check_every, left))
            try:
                now = signature(self._read_answers(count=False))
            except LabelStudioError as exc:
                self.outage.down(exc)
                continue
            self.outage.up()
            if now != self._seen:
                return True

    def _read_answers(self, count: bool = True) -> list[LabelStudioAnswer]:
        """Every submitted answer the project holds now (``count``: note each pushed task's
        number of annotations, for :meth:`pending`)."""
        query = {"filters": {"conjunction": "and", "items": [
            {"filter": "filter:tasks:total_annotations", "operator": "greater",
             "type": "Number", "value": 0}]}}  # fmt: skip
        answers: list[LabelStudioAnswer] = []
        for t in self.project.pages("all", query):
            item_id = (t.get("data") or {}).get(ITEM_KEY)
            if item_id is None:
                continue
            known = self._tasks.get(str(item_id))
            if count and known is not None and known.task_id == int(t["id"]):
                known.n_annotations = int(t.get("total_annotations") or 0)
            answers.extend(self.reader.answers(str(item_id), t))
        return answers

    def _merge(self, got: list[LabelStudioAnswer]) -> None:
        """Take the answers read now; an edited annotation replaces its earlier text, and
        answers are never forgotten (a withdrawn or deleted task keeps what it gave)."""
        fresh: dict[str, dict[int, LabelStudioAnswer]] = {}
        for a in got:
            fresh.setdefault(a.item_id, {})[a.annotation_id] = a
        for item_id, by_id in fresh.items():
            old = {a.annotation_id: a for a in self._answers.get(item_id, [])}
            old.update(by_id)
            self._answers[item_id] = sorted(
                old.values(), key=lambda a: (a.submitted_at, a.annotation_id)
            )

    # -- withdrawing --------------------------------------------------------------
    def pending(self) -> list[str]:
        """Items pushed and not answered yet (as of the last listing or poll)."""
        self._ensure_listed()
        return [i for i, t in self._tasks.items() if not t.n_annotations and not t.hidden and
                i not in self._answers]  # fmt: skip

    def expired(self, now: float | None = None) -> list[str]:
        """Pushed items unanswered for longer than ``timeout`` seconds."""
        if self.timeout is None:
            return []
        now = time.time() if now is None else now
        return [i for i in self.pending() if now - self._tasks[i].created_at > self.timeout]

    def withdraw(self, item_ids: list[str]) -> list[str]:
        """Take the tasks of ``item_ids`` that have no annotation out of the label stream;
        answered tasks stay (they are the record of who labelled what), and one with fewer
        annotations than ``overlap`` is closed (its task overlap set to what it has, so the
        label stream stops handing it out). Returns the items withdrawn.

        A withdrawn task is hidden (``is_labeled``), not deleted (issue 38): a person who
        has it open can still submit their label (a deleted task answered "404 No Task
        matches" and the work was lost); QUORUM records such an answer as a late one,
        paid and used where the budget has room (docs/live.md)."""
        self._ensure_listed()
        gone = []
        for i in item_ids:
            self._unsent.pop(i, None)
            t = self._tasks.get(i)
            if i in self._answers:
                if t is not None and self.project.overlap > 1:
                    self._close(t, len({a.by for a in self._answers[i]}))
                continue
            if t is None:  # never pushed (or deleted already): nothing left to answer
                gone.append(i)
                continue
            try:
                cur = self.client.request("GET", f"/api/tasks/{t.task_id}/")
            except LabelStudioError as exc:
                log.warning("Label Studio: cannot read task %s (%s)", t.task_id, exc)
                continue
            live = [a for a in cur.get("annotations") or [] if not a.get("was_cancelled")]
            if live or int(cur.get("total_annotations") or 0):
                t.n_annotations = max(1, len(live))
                continue
            if not t.hidden:
                self.client.request("PATCH", f"/api/tasks/{t.task_id}/",
                                    json={"is_labeled": True})  # fmt: skip
                t.hidden = True
            gone.append(i)
        if gone:
            log.info("Label Studio: withdrew %d unanswered task(s)", len(gone))
        return gone

    def _close(self, t: _Task, n: int) -> None:
        """No more annotations wanted on a task that has ``n``: Label Studio then counts it
        as labelled (its stream hands it to nobody else)."""
        if n >= max(t.overlap, self.project.overlap):
            return
        try:
            self.client.request("PATCH", f"/api/tasks/{t.task_id}/", json={"overlap": max(1, n)})
        except LabelStudioError as exc:
            log.warning("Label Studio: cannot close task %s (%s)", t.task_id, exc)

    def withdraw_expired(self, now: float | None = None) -> list[str]:
        """Withdraw every task unanswered past ``timeout``; the items go back to the router."""
        self.poll_all()
        return self.withdraw(self.expired(now))

    def close(self) -> None:
        self._flush()
        self.client.close()
