"""The human arm in Label Studio: a :class:`~quorum.live.humans.HumanQueue` over its REST API.

Items QUORUM routes to humans become tasks of one Label Studio project, in the order they
were routed (the project uses sequential sampling, so annotators get them in that order).
The labelling page is generated from the task: single-choice buttons for classification and
multiple choice (the item's own options), a text box for summaries. Everything that comes
from the data (item text, options, instructions) travels as task *data*, never inside the
labelling config, so hostile text cannot change the page: Label Studio's ``Text`` tag shows
it as plain text.

Every submitted annotation is read back with the identity (e-mail) of the annotator who gave
it, oldest first; the chosen option comes back as its label value (the caller matches it
with :func:`~quorum.live.humans.match_label`, like the file queue's rows). A task
nobody answered within ``timeout`` seconds can be withdrawn (deleted, only while it has no
annotation) so the router can plan it again. The project itself is the record of what was
pushed: a restarted process lists it and never pushes an item twice.

The API token comes from an environment variable named in the project file; it lives only
in the HTTP client's headers, never in logs, reprs, files or exports.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from quorum.data.schema import TaskType
from quorum.errors import ConfigError, QuorumError
from quorum.live.humans import HumanAnswer, HumanQueue, HumanTask

log = logging.getLogger("quorum.live")

#: data keys QUORUM adds to every task (besides ``text``, ``instructions``, ``options``)
ITEM_KEY = "quorum_item_id"
PRIORITY_KEY = "quorum_priority"
#: data columns the annotators' task list hides (bookkeeping, or shown on the page anyway)
HIDDEN_COLUMNS = (ITEM_KEY, PRIORITY_KEY, "options", "instructions")
TASK_LIST_TITLE = "Tasks (QUORUM)"
FROM_LABEL = "label"
FROM_SUMMARY = "summary"
# Label Studio reads ``$name`` in a choice's value as a reference to task data; a word
# joiner after each ``$`` keeps the text as it is (and is removed again when read back).
_WJ = "\u2060"


class LabelStudioError(QuorumError):
    """Label Studio refused a request or could not be reached."""


# -- the labelling page ---------------------------------------------------------------
def label_config(task_type: TaskType, instructions: bool = True) -> str:
    """The labelling interface for a task type. It holds no text from the project: the
    instructions, item text and options are task data shown by reference (``$name``)."""
    head = '  <Header value="$instructions"/>\n' if instructions else ""
    text = '  <Text name="text" value="$text"/>\n'
    if task_type is TaskType.summarization:
        ctrl = (
            f'  <TextArea name="{FROM_SUMMARY}" toName="text" rows="5" editable="true" '
            'maxSubmissions="1" required="true" placeholder="Write the summary"/>\n'
        )
    else:
        ctrl = (
            f'  <Choices name="{FROM_LABEL}" toName="text" choice="single-radio" '
            'required="true" value="$options"/>\n'
        )
    return f"<View>\n{head}{text}{ctrl}</View>"


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


# -- predictions ----------------------------------------------------------------------
@dataclass(frozen=True)
class Prediction:
    """An LLM's answer shown to annotators as a pre-annotation; ``score`` in [0, 1]."""

    annotator: str
    output: str
    score: float | None = None


PredictionSource = Callable[[list[str]], dict[str, list[Prediction]]]


def ledger_predictions(ledger_path: str | Path, humans: Iterable[str] = ()) -> PredictionSource:
    """LLM answers so far, read from the project's ledger (read-only). The score is the
    model's own confidence where it gave one (logprobs or a confidence call), else the share
    of the item's machine answers that agree with it."""
    skip = set(humans)

    def read(item_ids: list[str]) -> dict[str, list[Prediction]]:
        p = Path(ledger_path)
        if not item_ids or not p.is_file():
            return {}
        con = sqlite3.connect(f"file:{p}?mode=ro", uri=True, timeout=30)
        try:
            marks = ",".join("?" * len(item_ids))
            rows = con.execute(
                "SELECT item_id, annotator, kind, output, confidence FROM calls "
                f"WHERE status='ok' AND item_id IN ({marks}) AND annotator_kind != 'human' "
                "ORDER BY call_id",
                item_ids,
            ).fetchall()
        finally:
            con.close()
        answers: dict[str, dict[str, tuple[str, float | None]]] = {}
        conf: dict[tuple[str, str], float] = {}
        for item_id, annotator, kind, output, c in rows:
            if annotator in skip or output is None:
                continue
            if kind == "confidence":
                if c is not None:
                    conf[(item_id, annotator)] = float(c)
            elif kind == "annotate":
                answers.setdefault(item_id, {})[annotator] = (str(output), c)
        out: dict[str, list[Prediction]] = {}
        for item_id, by in answers.items():
            outputs = [o for o, _ in by.values()]
            preds = []
            for annotator, (o, c) in by.items():
                score = c if c is not None else conf.get((item_id, annotator))
                if score is None:
                    score = outputs.count(o) / len(outputs)
                preds.append(Prediction(annotator, o, min(1.0, max(0.0, float(score)))))
            out[item_id] = preds
        return out

    return read


# -- the HTTP client ------------------------------------------------------------------
class LabelStudioClient:
    """A small JSON client. ``token`` is a legacy API token (``Token``) or a personal access
    token (a JWT refresh token, exchanged for short-lived ``Bearer`` access tokens)."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
    ) -> None:
        if not token:
            raise ConfigError("Label Studio: empty API token")
        self.url = url.rstrip("/")
        self._token = token
        self._pat = token.count(".") == 2
        self.max_retries = max_retries
        self.backoff = backoff
        self._http = httpx.Client(base_url=self.url, timeout=timeout)
        self._auth: dict[str, str] = {}
        if not self._pat:
            self._auth = {"Authorization": f"Token {token}"}

    def __repr__(self) -> str:
        return f"LabelStudioClient(url={self.url!r})"

    def _refresh(self) -> None:
        r = self._http.post("/api/token/refresh/", json={"refresh": self._token})
        if r.status_code != 200:
            raise LabelStudioError(
                f"Label Studio {self.url}: the personal access token was refused "
                f"(HTTP {r.status_code}: {r.text[:200].replace(self._token, '***')})"
            )
        self._auth = {"Authorization": f"Bearer {r.json()['access']}"}

    def request(self, method: str, path: str, **kw: Any) -> Any:
        """One API call with retries on connection errors and 5xx; JSON back (or None)."""
        refreshed = False
        for attempt in range(self.max_retries + 1):
            try:
                if not self._auth:
                    self._refresh()
                r = self._http.request(method, path, headers=self._auth, **kw)
            except httpx.TransportError as exc:
                if attempt >= self.max_retries:
                    raise LabelStudioError(
                        f"Label Studio {self.url} unreachable ({type(exc).__name__})"
                    ) from None
                time.sleep(self.backoff * 2**attempt)
                continue
            if r.status_code == 401 and self._pat and not refreshed:
                refreshed = True
                self._auth = {}
                continue
            if r.status_code >= 500 and attempt < self.max_retries:
                time.sleep(self.backoff * 2**attempt)
                continue
            if r.status_code >= 400:
                raise LabelStudioError(
                    f"Label Studio {method} {path}: HTTP {r.status_code}: {r.text[:300]}"
                )
            return r.json() if r.content else None
        raise LabelStudioError(f"Label Studio {method} {path}: no answer")

    def close(self) -> None:
        self._http.close()


# -- the queue ------------------------------------------------------------------------
@dataclass(frozen=True)
class LabelStudioAnswer(HumanAnswer):
    """A submitted annotation; ``by`` is the annotator's e-mail, ``raw`` the chosen option's
    label value (or the text given: a summary, or a value typed through the API)."""

    task_id: int = 0
    annotation_id: int = 0
    submitted_at: float = 0.0
    lead_time: float | None = None


@dataclass
class _Task:
    task_id: int
    item_id: str
    options: list[str]
    created_at: float
    n_annotations: int = 0


def _ts(s: str | None) -> float:
    if not s:
        return 0.0
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


class LabelStudioHumanQueue(HumanQueue):
    """Items wait in a Label Studio project; answers come back with the annotator's e-mail.

    Parameters
    ----------
    client : the API client (holds the token).
    project : project title (see :func:`project_title`); found, or created with
        :func:`label_config`.
    task_type : classification, multiple choice or summarization.
    labels : the task's labels (an answer's option index maps to ``labels[index]``).
    instructions : whether tasks carry instructions (a header on the page).
    predictions : where LLM answers come from, shown as pre-annotations (None: not shown).
    overlap : labels wanted per item, each from a different annotator.
    timeout : seconds a task may stay unanswered before :meth:`expired` lists it.
    project_id : use this project instead of looking it up by title.
    page_size : tasks per page when listing.
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
        predictions: PredictionSource | None = None,
        overlap: int = 1,
        timeout: float | None = None,
        project_id: int | None = None,
        page_size: int = 500,
        description: str = "",
        check_every: float = 2.0,
    ) -> None:
        self.client = client
        self.title = project_title(project)
        self.task_type = task_type
        self.labels = list(labels or [])
        self.instructions = instructions
        self.predictions = predictions
        self.overlap = overlap
        self.timeout = timeout
        self.page_size = page_size
        self.description = description
        self.check_every = check_every
        self._project_id = project_id
        self.create = True  # False: never create the project (read-only uses like status)
        self._tasks: dict[str, _Task] = {}
        self._unsent: dict[str, HumanTask] = {}
        self._answers: dict[str, list[LabelStudioAnswer]] = {}
        self._users: dict[int, str] = {}
        self._priority = 0
        self._listed = False
        self._seen: frozenset | None = None  # what the last poll read (see wait)
        self._down_since: float | None = None  # when the server stopped answering

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
            predictions=preds,
            overlap=cfg.humans.labels_per_item,
            timeout=cfg.humans.timeout,
            project_id=ls.project_id,
            page_size=ls.page_size,
            description=f"QUORUM project {cfg.name}: items routed to humans",
        )

    def check(self, token_env: str = "the token variable") -> None:
        """Before the first paid call: the URL is a Label Studio, it takes the token, and
        the token's user may use (or create) the project. One clear error, else nothing."""
        url = self.client.url
        try:
            me = self.client.request("GET", "/api/current-user/whoami")
        except LabelStudioError as exc:
            text = str(exc)
            if "unreachable" in text:
                raise LabelStudioError(
                    f"Label Studio at {url} is unreachable: check humans.labelstudio.url and "
                    "that the server runs"
                ) from None
            if "HTTP 401" in text or "HTTP 403" in text or "token was refused" in text:
                raise LabelStudioError(
                    f"Label Studio at {url} refused the token in {token_env} (check it, or "
                    "make a new one: Account & Settings > Personal Access Token)"
                ) from None
            if "HTTP 404" in text:
                raise LabelStudioError(
                    f"{url} does not answer like a Label Studio server (HTTP 404 on its API): "
                    "check humans.labelstudio.url"
                ) from None
            raise
        if not isinstance(me, dict):
            raise LabelStudioError(
                f"{url} does not answer like a Label Studio server: check humans.labelstudio.url"
            )
        try:
            pid = self.project_id
            self.client.request("GET", f"/api/projects/{pid}/")
        except LabelStudioError as exc:
            who = me.get("email") or me.get("username") or "the token's user"
            raise LabelStudioError(
                f"Label Studio at {url}: {who} may not use project {self.title!r}"
                f"{'' if self._project_id is None else f' (id {self._project_id})'}: {exc}"
            ) from None

    # -- project ------------------------------------------------------------------
    @property
    def project_id(self) -> int:
        if self._project_id is None:
            self._project_id = self._find_or_create()
        return self._project_id

    def _find_or_create(self) -> int:
        page = 1
        while True:
            res = self.client.request(
                "GET", "/api/projects/", params={"title": self.title, "page": page,
                                                 "page_size": 100}
            )  # fmt: skip
            for p in res.get("results", []):
                if p.get("title") == self.title:
                    self._check_config(p)
                    if self.create:
                        self._task_list(int(p["id"]))
                    return int(p["id"])
            if not res.get("next"):
                break
            page += 1
        if not self.create:
            raise LabelStudioError(f"no project {self.title!r} on {self.client.url}")
        body = {
            "title": self.title,
            "description": self.description,
            "label_config": label_config(self.task_type, self.instructions),
            "sampling": "Sequential sampling",
            "maximum_annotations": self.overlap,
            "show_collab_predictions": self.predictions is not None,
            "show_skip_button": True,
        }
        p = self.client.request("POST", "/api/projects/", json=body)
        log.info("Label Studio: created project %r (id %s) at %s", self.title, p["id"],
                 self.client.url)  # fmt: skip
        self._task_list(int(p["id"]))
        return int(p["id"])

    def _task_list(self, pid: int) -> None:
        """The project's task list (a Data Manager tab every member sees) shows people the
        item text and what they need, not QUORUM's bookkeeping (:data:`HIDDEN_COLUMNS`)."""
        try:
            views = self.client.request("GET", "/api/dm/views/", params={"project": pid}) or []
            if any((v.get("data") or {}).get("title") == TASK_LIST_TITLE for v in views):
                return
            hidden = [f"tasks:data.{c}" for c in HIDDEN_COLUMNS]
            data = {"title": TASK_LIST_TITLE, "hiddenColumns": {"explore": hidden,
                                                                "labeling": hidden}}  # fmt: skip
            self.client.request("POST", "/api/dm/views/", json={"project": pid, "data": data})
        except LabelStudioError as exc:
            log.warning("Label Studio: could not set up the task list of project %s (%s); "
                        "people see every data column", pid, exc)  # fmt: skip

    def _check_config(self, p: dict[str, Any]) -> None:
        want = label_config(self.task_type, self.instructions)
        if (p.get("label_config") or "").strip() != want:
            log.warning(
                "Label Studio project %r has its own labelling config; QUORUM reads answers "
                "from the control named %r",
                self.title,
                FROM_SUMMARY if self.task_type is TaskType.summarization else FROM_LABEL,
            )
        if int(p.get("maximum_annotations") or 1) != self.overlap:
            self.client.request(
                "PATCH", f"/api/projects/{p['id']}/", json={"maximum_annotations": self.overlap}
            )

    @property
    def project_url(self) -> str:
        return f"{self.client.url}/projects/{self.project_id}/data"

    def task_url(self, task_id: int) -> str:
        return f"{self.project_url}?task={task_id}"

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
    def _pages(self, fields: str, query: dict | None = None) -> Iterable[dict[str, Any]]:
        page, seen = 1, 0
        while True:
            params: dict[str, Any] = {"project": self.project_id, "fields": fields,
                                      "page": page, "page_size": self.page_size}  # fmt: skip
            if query is not None:
                params["query"] = json.dumps(query)
            res = self.client.request("GET", "/api/tasks/", params=params)
            tasks = res.get("tasks", [])
            yield from tasks
            seen += len(tasks)
            if not tasks or seen >= int(res.get("total", 0)):
                return
            page += 1

    def _ensure_listed(self) -> None:
        if not self._listed:
            self._list_tasks()

    def _list_tasks(self) -> None:
        """What the project holds: the record of what was pushed (survives restarts)."""
        tasks: dict[str, _Task] = {}
        top = 0
        for t in self._pages("task_only"):
            data = t.get("data") or {}
            item_id = data.get(ITEM_KEY)
            if item_id is None:
                continue
            top = max(top, int(data.get(PRIORITY_KEY) or 0))
            opts = [unshown(str(o.get("value", ""))) for o in data.get("options") or []]
            prev = tasks.get(str(item_id))
            if prev is not None and prev.task_id < int(t["id"]):
                log.warning("Label Studio: item %s has two tasks (%s, %s); reading both",
                            item_id, prev.task_id, t["id"])  # fmt: skip
                continue
            tasks[str(item_id)] = _Task(
                int(t["id"]), str(item_id), opts, _ts(t.get("created_at")),
                int(t.get("total_annotations") or 0),
            )  # fmt: skip
        self._tasks = tasks
        self._priority = max(self._priority, top)
        self._listed = True

    # -- HumanQueue ---------------------------------------------------------------
    def submit(self, tasks: list[HumanTask]) -> None:
        """Push the tasks not in the project yet, in the order given (priority order)."""
        for t in tasks:
            self._unsent.setdefault(t.item.item_id, t)
        self._flush()

    def _flush(self) -> None:
        if not self._unsent:
            return
        try:
            self._ensure_listed()
            new = [t for i, t in self._unsent.items() if i not in self._tasks]
            for s in range(0, len(new), self.page_size):
                self._import(new[s : s + self.page_size])
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
            data: dict[str, Any] = {"text": t.item.text, ITEM_KEY: t.item.item_id,
                                    PRIORITY_KEY: self._priority}  # fmt: skip
            if self.instructions:
                data["instructions"] = t.instructions
            if self.task_type is not TaskType.summarization:
                data["options"] = [{"value": shown(c)} for c in t.choices]
            task: dict[str, Any] = {"data": data}
            p = [self._prediction(t, x) for x in preds.get(t.item.item_id, [])]
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

    def _prediction(self, t: HumanTask, p: Prediction) -> dict[str, Any] | None:
        if self.task_type is TaskType.summarization:
            value, kind, name = {"text": [p.output]}, "textarea", FROM_SUMMARY
        else:
            i = self.labels.index(p.output) if p.output in self.labels else -1
            if not 0 <= i < len(t.choices):
                return None
            value, kind, name = {"choices": [shown(t.choices[i])]}, "choices", FROM_LABEL
        out: dict[str, Any] = {
            "model_version": p.annotator,
            "result": [{"from_name": name, "to_name": "text", "type": kind, "value": value}],
        }
        if p.score is not None:
            out["score"] = p.score
        return out

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
            if self._down_since is None:
                log.warning("Label Studio: could not read answers (%s); using the last ones", exc)
        else:
            self._up()
            self._merge(got)
            self._seen = _signature(got)
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
                now = _signature(self._read_answers(count=False))
            except LabelStudioError as exc:
                self._down(exc)
                continue
            self._up()
            if now != self._seen:
                return True

    def _down(self, exc: Exception) -> None:
        """Say once per outage that the server does not answer (the wait goes on)."""
        if self._down_since is None:
            self._down_since = time.monotonic()
            log.warning(
                "Label Studio at %s does not answer (%s); still waiting: the time counts "
                "against --wait, nothing is lost (answers are read when it is back)",
                self.client.url, exc,
            )  # fmt: skip

    def _up(self) -> None:
        if self._down_since is not None:
            log.warning(
                "Label Studio at %s answers again after %.0f s", self.client.url,
                time.monotonic() - self._down_since,
            )  # fmt: skip
            self._down_since = None

    def _read_answers(self, count: bool = True) -> list[LabelStudioAnswer]:
        """Every submitted answer the project holds now (``count``: note each pushed task's
        number of annotations, for :meth:`pending`)."""
        query = {"filters": {"conjunction": "and", "items": [
            {"filter": "filter:tasks:total_annotations", "operator": "greater",
             "type": "Number", "value": 0}]}}  # fmt: skip
        answers: list[LabelStudioAnswer] = []
        for t in self._pages("all", query):
            data = t.get("data") or {}
            item_id = data.get(ITEM_KEY)
            if item_id is None:
                continue
            item_id = str(item_id)
            opts = [unshown(str(o.get("value", ""))) for o in data.get("options") or []]
            known = self._tasks.get(item_id)
            if count and known is not None and known.task_id == int(t["id"]):
                known.n_annotations = int(t.get("total_annotations") or 0)
            for a in t.get("annotations") or []:
                if a.get("was_cancelled"):
                    continue
                ans = self._answer(item_id, int(t["id"]), opts, a)
                if ans is not None:
                    answers.append(ans)
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

    def _answer(
        self, item_id: str, task_id: int, opts: list[str], a: dict[str, Any]
    ) -> LabelStudioAnswer | None:
        raw = self._raw(a.get("result") or [])
        if raw is None:
            return None
        return LabelStudioAnswer(
            item_id, self._value(raw, opts), self._who(a.get("completed_by")), None,
            task_id=task_id, annotation_id=int(a["id"]), submitted_at=_ts(a.get("created_at")),
            lead_time=a.get("lead_time"),
        )  # fmt: skip

    def _raw(self, result: list[dict[str, Any]]) -> str | None:
        for r in result:
            v = r.get("value") or {}
            if self.task_type is TaskType.summarization:
                if r.get("from_name") == FROM_SUMMARY or "text" in v:
                    text = v.get("text")
                    if isinstance(text, list):
                        text = "\n".join(map(str, text))
                    return (str(text).strip() or None) if text is not None else None
            elif r.get("from_name") == FROM_LABEL or "choices" in v:
                ch = v.get("choices") or []
                return unshown(str(ch[0])).strip() if ch else None
        return None

    def _value(self, raw: str, opts: list[str]) -> str:
        """A chosen option's label value (known by its position, so never ambiguous); any
        other answer as given."""
        if self.task_type is TaskType.summarization:
            return raw
        if raw in opts and opts.index(raw) < len(self.labels):
            return self.labels[opts.index(raw)]
        return raw

    def _who(self, completed_by: Any) -> str | None:
        if isinstance(completed_by, dict):
            email = completed_by.get("email")
            if email and completed_by.get("id") is not None:
                self._users[int(completed_by["id"])] = str(email)
            return str(email) if email else None
        if completed_by is None:
            return None
        uid = int(completed_by)
        if uid not in self._users:
            try:
                for u in self.client.request("GET", "/api/users/"):
                    self._users[int(u["id"])] = str(u.get("email") or u.get("username"))
            except LabelStudioError as exc:
                log.warning("Label Studio: cannot list users (%s)", exc)
        return self._users.get(uid, f"user:{uid}")

    # -- withdrawing --------------------------------------------------------------
    def pending(self) -> list[str]:
        """Items pushed and not answered yet (as of the last listing or poll)."""
        self._ensure_listed()
        return [i for i, t in self._tasks.items() if not t.n_annotations and
                i not in self._answers]  # fmt: skip

    def expired(self, now: float | None = None) -> list[str]:
        """Pushed items unanswered for longer than ``timeout`` seconds."""
        if self.timeout is None:
            return []
        now = time.time() if now is None else now
        return [i for i in self.pending() if now - self._tasks[i].created_at > self.timeout]

    def withdraw(self, item_ids: list[str]) -> list[str]:
        """Delete the tasks of ``item_ids`` that have no annotation; answered tasks stay (they
        are the record of who labelled what), and one with fewer annotations than
        ``overlap`` is closed (its task overlap set to what it has, so the label stream
        stops handing it out). Returns the items withdrawn."""
        self._ensure_listed()
        gone = []
        for i in item_ids:
            self._unsent.pop(i, None)
            t = self._tasks.get(i)
            if i in self._answers:
                if t is not None and self.overlap > 1:
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
            self.client.request("DELETE", f"/api/tasks/{t.task_id}/")
            del self._tasks[i]
            gone.append(i)
        if gone:
            log.info("Label Studio: withdrew %d unanswered task(s)", len(gone))
        return gone

    def _close(self, t: _Task, n: int) -> None:
        """No more annotations wanted on a task that has ``n``: Label Studio then counts it
        as labelled (its stream hands it to nobody else)."""
        if n >= self.overlap:
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


def _signature(answers: list[LabelStudioAnswer]) -> frozenset:
    """What :meth:`LabelStudioHumanQueue.wait` compares: who answered what, where."""
    return frozenset((a.annotation_id, a.item_id, a.raw, a.by) for a in answers)
