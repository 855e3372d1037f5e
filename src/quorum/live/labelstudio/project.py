"""The Label Studio project that holds QUORUM's human tasks: found, created, checked, listed.

One project per QUORUM project (title :func:`~quorum.live.labelstudio.page.project_title`),
using sequential sampling, so annotators get tasks in the order they were routed. Before
the first paid call :meth:`LabelStudioProject.check` says in one line what is wrong with
the server, the token or the project, if anything.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

from quorum.live.labelstudio.client import LabelStudioClient, LabelStudioError
from quorum.live.labelstudio.page import (
    HIDDEN_COLUMNS,
    TASK_LIST_TITLE,
    label_config,
    project_title,
)
from quorum.tasks.base import TaskType
from quorum.tasks.registry import kind_of

log = logging.getLogger("quorum.live")


class LabelStudioProject:
    """One project on a Label Studio server, by title (or by id).

    Parameters
    ----------
    client : the API client (holds the token).
    name : the project's name (the title is :func:`project_title` of it).
    task_type : classification, multiple choice or summarization.
    instructions : whether tasks carry instructions (a header on the page).
    context : whether tasks carry the item's context (shown above the text).
    overlap : labels wanted per item, each from a different annotator.
    predictions : whether annotators see the LLM answers as pre-annotations.
    description : the description of a project this creates.
    project_id : use this project instead of looking it up by title.
    page_size : tasks per page when listing.
    """

    def __init__(
        self,
        client: LabelStudioClient,
        name: str,
        task_type: TaskType,
        *,
        instructions: bool = True,
        context: bool = False,
        overlap: int = 1,
        predictions: bool = False,
        description: str = "",
        project_id: int | None = None,
        page_size: int = 500,
    ) -> None:
        self.client = client
        self.title = project_title(name)
        self.task_type = task_type
        self.instructions = instructions
        self.context = context
        self.overlap = overlap
        self.predictions = predictions
        self.description = description
        self.page_size = page_size
        self.create = True  # False: never create the project (read-only uses like status)
        self._id = project_id

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
            self.client.request("GET", f"/api/projects/{self.id}/")
        except LabelStudioError as exc:
            who = me.get("email") or me.get("username") or "the token's user"
            raise LabelStudioError(
                f"Label Studio at {url}: {who} may not use project {self.title!r}"
                f"{'' if self._id is None else f' (id {self._id})'}: {exc}"
            ) from None

    @property
    def id(self) -> int:
        """The project's id (found by title, or created, on first use)."""
        if self._id is None:
            self._id = self._find_or_create()
        return self._id

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
            "label_config": label_config(self.task_type, self.instructions, self.context),
            "sampling": "Sequential sampling",
            "maximum_annotations": self.overlap,
            "show_collab_predictions": self.predictions,
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
        want = label_config(self.task_type, self.instructions, self.context)
        if (p.get("label_config") or "").strip() != want:
            log.warning(
                "Label Studio project %r has its own labelling config; QUORUM reads answers "
                "from the control named %r",
                self.title,
                kind_of(self.task_type).labelstudio_name,
            )
        if int(p.get("maximum_annotations") or 1) != self.overlap:
            self.client.request(
                "PATCH", f"/api/projects/{p['id']}/", json={"maximum_annotations": self.overlap}
            )

    @property
    def url(self) -> str:
        """The project's task list in the browser."""
        return f"{self.client.url}/projects/{self.id}/data"

    def task_url(self, task_id: int) -> str:
        return f"{self.url}?task={task_id}"

    # -- tasks ---------------------------------------------------------------------
    def pages(self, fields: str, query: dict | None = None) -> Iterable[dict[str, Any]]:
        """Every task of the project (``fields``: ``task_only`` or ``all``), page by page."""
        page, seen = 1, 0
        while True:
            params: dict[str, Any] = {"project": self.id, "fields": fields,
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
