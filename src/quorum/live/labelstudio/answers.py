"""Annotations read back from Label Studio as answers, with who gave them.

Every submitted annotation becomes a :class:`LabelStudioAnswer` with the identity (e-mail)
of the annotator who gave it (:class:`People`); the chosen option comes back as its label
value (the caller matches it with :func:`~quorum.live.humans.queue.match_label`, like the file
queue's rows), a summary as its text, a span task's regions (one result each) as one span
list with character offsets (:meth:`~quorum.tasks.base.TaskKind.labelstudio_result`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from quorum.live.humans.queue import HumanAnswer
from quorum.live.labelstudio.client import LabelStudioClient, LabelStudioError
from quorum.live.labelstudio.page import task_options, unshown
from quorum.tasks.base import TaskType
from quorum.tasks.registry import kind_of

log = logging.getLogger("quorum.live")


@dataclass(frozen=True)
class LabelStudioAnswer(HumanAnswer):
    """A submitted annotation; ``by`` is the annotator's e-mail, ``raw`` the chosen option's
    label value (or the text given: a summary, or a value typed through the API)."""

    task_id: int = 0
    annotation_id: int = 0
    submitted_at: float = 0.0
    lead_time: float | None = None


def timestamp(s: str | None) -> float:
    """Seconds since the epoch of one of Label Studio's ISO times (0 for none)."""
    if not s:
        return 0.0
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def signature(answers: list[LabelStudioAnswer]) -> frozenset:
    """What :meth:`~quorum.live.labelstudio.queue.LabelStudioHumanQueue.wait` compares: who
    answered what, where."""
    return frozenset((a.annotation_id, a.item_id, a.raw, a.by) for a in answers)


class People:
    """The server's users by id: who gave an annotation (their e-mail)."""

    def __init__(self, client: LabelStudioClient) -> None:
        self.client = client
        self._users: dict[int, str] = {}

    def who(self, completed_by: Any) -> str | None:
        """The e-mail of an annotation's ``completed_by`` (a user object or an id)."""
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


class AnswerReader:
    """A task's submitted (not skipped) annotations as answers.

    Parameters
    ----------
    people : who the annotators are.
    task_type : classification, multiple choice or summarization.
    labels : the task's labels (an answer's option index maps to ``labels[index]``).
    """

    def __init__(self, people: People, task_type: TaskType, labels: list[str]) -> None:
        self.people = people
        self.task_type = task_type
        self.labels = labels
        #: the task's kind: which control holds an answer and how it reads
        self.kind = kind_of(task_type, labels)

    def answers(self, item_id: str, task: dict[str, Any]) -> list[LabelStudioAnswer]:
        """The answers of one task (as the API lists it, with its annotations)."""
        opts = task_options(task.get("data"))
        text = (task.get("data") or {}).get("text")
        out = []
        for a in task.get("annotations") or []:
            if a.get("was_cancelled"):
                continue
            ans = self._answer(item_id, int(task["id"]), opts, a, text)
            if ans is not None:
                out.append(ans)
        return out

    def _answer(
        self, item_id: str, task_id: int, opts: list[str], a: dict[str, Any],
        text: str | None = None,
    ) -> LabelStudioAnswer | None:  # fmt: skip
        raw = self._raw(a.get("result") or [], text)
        if raw is None:
            return None
        return LabelStudioAnswer(
            item_id, self._value(raw, opts), self.people.who(a.get("completed_by")), None,
            task_id=task_id, annotation_id=int(a["id"]),
            submitted_at=timestamp(a.get("created_at")), lead_time=a.get("lead_time"),
        )  # fmt: skip

    def _raw(self, result: list[dict[str, Any]], text: str | None = None) -> str | None:
        """The answer in ``result`` given with the kind's control (the first one; a span
        task's regions joined into one span list), ``text`` being the item's text."""
        return self.kind.labelstudio_result(result, unshown, text)

    def _value(self, raw: str, opts: list[str]) -> str:
        """A chosen option's label value (known by its position, so never ambiguous); any
        other answer as given."""
        return self.kind.labelstudio_value(raw, opts)
