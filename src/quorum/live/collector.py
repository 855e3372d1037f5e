"""Human answers into the ledger: slots filled, late answers, timeouts, reliabilities, votes.

:class:`AnswerCollector` is what :meth:`LiveSource.collect_answers` runs each time it looks
at the human queue (at the start of a run, before a routing batch that asks humans, while
the run waits):

1. every answer row is matched to a label (:func:`~quorum.live.humans.match_label`);
2. each item's rows are grouped by person (with one label per item, every row is the same
   "person": a later row corrects the label, as the file queue always did); the first
   ``labels_per_item`` people fill the task's slots, a person answering again corrects their
   label; anyone else, or anyone after the task stopped waiting, is a *late* answer
   (see :mod:`quorum.live.human_book`);
3. a task whose slots are all filled is answered: its label is the reliability-weighted
   vote of its labels (:mod:`quorum.live.reliability`), refitted whenever labels change;
4. a task unanswered past ``humans.timeout`` is withdrawn from the queue and ``expired``
   (its held money released; the router is told the human is not coming for that item and
   plans it without); one that has some but not all of its labels is closed with them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import pandas as pd

from quorum.data.schema import TaskType
from quorum.live.human_book import COUNTED, EXTRA, HumanBook
from quorum.live.humans import HumanAnswer, HumanArm
from quorum.live.ledger import Ledger
from quorum.live.prompts import ItemView
from quorum.live.reliability import Reliability, estimate
from quorum.routing.budget import to_units

log = logging.getLogger("quorum.live")


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
    """What the collector needs from the run (a :class:`~quorum.live.source.LiveSource`):
    its items, human arm, ledger and control labels, and six public operations."""

    items: dict[str, ItemView]
    human: HumanArm | None
    ledger: Ledger
    gold: dict[str, str]
    task_type: TaskType

    def report(self, key: tuple, msg: str, *args: Any) -> None:
        """Log a problem with the answers once per project."""

    def match(self, item: ItemView, raw: str) -> str | None:
        """The label an answer names, or None."""

    def label_help(self, item: ItemView) -> str:
        """What a person may answer on ``item`` (for a message)."""

    def room(self, units: int) -> bool:
        """Whether the budget has ``units`` left beside what is paid, held and reserved."""

    def late_call(self, key: str, item_id: str, slot: int, label: str, raw: str,
                  price: float) -> int:  # fmt: skip
        """The paid call row of a late answer (its id)."""

    def commit(self, units: int) -> None:
        """Count money just paid outside a call of the run."""

    def resubmit(self, key: str, item_id: str) -> None:
        """Show a task again (it still wants labels)."""


class AnswerCollector:
    """Attaches the human queue's answers to the ledger for a :class:`AnswerSink`."""

    def __init__(self, source: AnswerSink, clock: Callable[[], float] = time.time) -> None:
        self.src = source
        self.book = HumanBook(source.ledger)
        self.clock = clock
        h = source.human
        assert h is not None
        self.k = h.labels_per_item
        self.reliability = Reliability(n_classes=max(2, len(h.builder.labels)),
                                       prior_accuracy=h.prior_accuracy)  # fmt: skip
        self.quality: float | None = None
        self._fitted = False
        #: items whose answers so far are none of them a label (see :meth:`expire`)
        self._only_invalid: set[str] = set()

    # -- reading ---------------------------------------------------------------------
    def rows(self) -> dict[str, list[tuple[str, HumanAnswer]]]:
        """The queue's answer rows that are labels, by item, oldest first."""
        src = self.src
        assert src.human is not None
        out: dict[str, list[tuple[str, HumanAnswer]]] = {}
        invalid: set[str] = set()
        for ans in src.human.queue.poll():
            item = src.items.get(ans.item_id)
            if item is None:
                src.report(
                    ("unknown", ans.item_id),
                    "answers: item id %r (%s) is not in the items file; the answer is ignored",
                    ans.item_id, _at(ans.line, ans.by),
                )  # fmt: skip
                continue
            label = src.match(item, ans.raw)
            if label is None:
                src.report(
                    ("invalid", ans.item_id, ans.line, ans.raw),
                    "answers: %s, item %s: %r is not a label (%s); the item "
                    "keeps its earlier answer, or stays pending until corrected or until "
                    "humans.timeout",
                    _at(ans.line, ans.by), ans.item_id, ans.raw, src.label_help(item),
                )  # fmt: skip
                invalid.add(ans.item_id)
                continue
            out.setdefault(ans.item_id, []).append((label, ans))
        self._only_invalid = invalid - set(out)
        return out

    def _person(self, ans: HumanAnswer | None, wanted: int, by: str | None = None) -> str:
        """Who a row (or a slot) is: with one label per item every row is the same person."""
        if wanted <= 1:
            return ""
        return (ans.by if ans is not None else by) or ""

    def _latest(self, iid: str, rows: list[tuple[str, HumanAnswer]], wanted: int) -> dict:
        """Each person's latest row, in the order people first answered."""
        final: dict[str, tuple[str, HumanAnswer]] = {}
        for label, ans in rows:
            who = self._person(ans, wanted)
            prev = final.get(who)
            if prev is not None and prev[0] != label:
                self.src.report(
                    ("fix", iid, ans.line, who),
                    "answers: item %s was answered %r %s and %r %s; the later row wins",
                    iid, prev[1].raw, _at(prev[1].line, prev[1].by, on=True), ans.raw,
                    _at(ans.line, ans.by, on=True),
                )  # fmt: skip
            final[who] = (label, ans)
        return final

    # -- attaching ---------------------------------------------------------------------
    def collect(self) -> Collected:
        got = Collected()
        src = self.src
        h = src.human
        assert h is not None
        rows = self.rows()
        if rows:
            tasks = src.ledger.human_tasks()
            tasks = tasks[tasks["annotator"] == h.name]
            by_item: dict[str, dict] = {}
            for r in tasks.to_dict("records"):  # oldest first: a pending task wins
                if r["item_id"] not in by_item or r["status"] == "pending":
                    by_item[r["item_id"]] = r
            slots = self.book.labels()
            slots_of = {k: g for k, g in slots.groupby("request_key")} if len(slots) else {}
            for iid, item_rows in rows.items():
                task = by_item.get(iid)
                if task is None:
                    src.report(
                        ("unasked", iid),
                        "answers: item %s (%s) was never sent to a human; the answer is "
                        "kept in the file and used if it is asked for",
                        iid, _at(item_rows[-1][1].line, item_rows[-1][1].by),
                    )  # fmt: skip
                    continue
                self._attach(task, item_rows, slots_of.get(task["request_key"]), got)
        self.expire(got)
        if got.any or not self._fitted:
            self.refit(got)
        if got.done:
            h.queue.withdraw(got.done)
        return got

    def _attach(self, task: dict, rows: list, slots: pd.DataFrame | None, got: Collected) -> None:
        src, book = self.src, self.book
        key, iid, status = task["request_key"], task["item_id"], task["status"]
        wanted = int(task.get("wanted") or 1)
        have: dict[str, dict] = {}
        free: list[int] = []
        withdrawn: list[int] = []
        paid = 0  # labels of this task that count (are paid): never more than ``wanted``
        for s in [] if slots is None else slots.to_dict("records"):
            if s["status"] == "open":
                free.append(int(s["slot"]))
            elif s["status"] == "withdrawn":
                withdrawn.append(int(s["slot"]))
            else:
                have[self._person(None, wanted, s["person"])] = s
                paid += s["status"] in COUNTED
        filled = changed = late = False
        for who, (label, ans) in self._latest(iid, rows, wanted).items():
            s = have.get(who)
            if s is not None:
                if s["label"] != label or (s["person"] or None) != ans.by:
                    if s["status"] not in COUNTED:
                        continue  # recorded once, never paid nor used
                    book.correct(key, int(s["slot"]), ans.by, label, ans.raw, ans.line)
                    if s["label"] != label:
                        log.info(
                            "answers: item %s is now %r (%s), replacing %r (%s)",
                            iid, ans.raw, _at(ans.line, ans.by), s["raw"],
                            _at(_line(s["line"]), s["person"]),
                        )  # fmt: skip
                        changed = True
                continue
            if status == "pending" and free:
                book.fill(key, free.pop(0), ans.by, label, ans.raw, ans.line)
                filled = True
                paid += 1
                have[who] = {"label": label}
                continue
            if paid >= wanted:
                # k = humans.labels_per_item is a hard cap on what a task pays: a label
                # beyond it (a web queue may hand a task to one person too many) is kept
                # as a record, never paid nor voted
                book.add(key, iid, None, ans.by, label, ans.raw, ans.line, EXTRA)
                have[who] = {"label": label}
                src.report(
                    ("extra", iid, who),
                    "answers: item %s got a label %s beyond the %d wanted "
                    "(humans.labels_per_item); it is recorded, not paid, not used",
                    iid, _at(ans.line, ans.by), wanted,
                )  # fmt: skip
                continue
            # late: the task stopped waiting with fewer than the labels wanted
            price_u = to_units(task["price"] or 0.0)
            if src.room(price_u):
                if withdrawn:
                    book.fill(key, withdrawn.pop(0), ans.by, label, ans.raw, ans.line, "late")
                else:
                    cid = src.late_call(key, iid, len(have) + len(free), label, ans.raw,
                                         task["price"] or 0.0)  # fmt: skip
                    book.add(key, iid, cid, ans.by, label, ans.raw, ans.line, "late")
                src.commit(price_u)
                late = True
                paid += 1
                have[who] = {"label": label}
                log.info(
                    "answers: item %s got a late answer %s (its task was %s); it is paid "
                    "and used", iid, _at(ans.line, ans.by), _was(status, wanted),
                )  # fmt: skip
            else:
                book.add(key, iid, None, ans.by, label, ans.raw, ans.line, "late-unpaid")
                got.refused.append(iid)
                have[who] = {"label": label}
                src.report(
                    ("late", iid, who),
                    "answers: item %s got a late answer %s (its task was %s) and the budget "
                    "has no room left to pay for it; it is recorded, not paid, not used",
                    iid, _at(ans.line, ans.by), _was(status, wanted),
                )  # fmt: skip
        if filled:
            got.new.append(iid)
            if not free:
                self._close(key, "answered")
                got.done.append(iid)
            else:
                src.resubmit(key, iid)
        if changed:
            got.changed.append(iid)
            if status == "answered":
                self._close(key, None)
        if late:
            got.late.append(iid)
            if status in ("withdrawn", "expired"):
                self._close(key, "answered")
                src.ledger.mark_given([key])
            elif status == "answered":
                self._close(key, None)

    def _close(self, key: str, status: str | None) -> None:
        """Set the task's label to the vote of its labels (and its status)."""
        lab = self.book.labels(key)
        lab = lab[lab["status"].isin(("answered", "late"))].sort_values("answered_at")
        if lab.empty:
            return
        v = self.reliability.vote(zip(lab["person"].fillna(""), lab["label"], strict=True))
        last = lab.iloc[-1]
        if len(lab) == 1:
            raw, by, line = last["raw"], last["person"], _line(last["line"])
        else:
            raw = "; ".join(f"{p or '?'}: {r}" for p, r in zip(lab["person"], lab["raw"],
                                                                 strict=True))  # fmt: skip
            by, line = ", ".join(p or "?" for p in lab["person"]), None
        self.book.set_label(key, v.label, by, raw, line, v.confidence, status)

    # -- timeouts --------------------------------------------------------------------------
    def expire(self, got: Collected) -> None:
        """Tasks pending for longer than ``humans.timeout``: withdrawn (no label yet) or
        closed with the labels they have."""
        src = self.src
        h = src.human
        assert h is not None
        if h.timeout is None:
            return
        now = self.clock()
        tasks = src.ledger.human_tasks("pending")
        due = tasks[tasks["submitted_at"] + h.timeout <= now]
        if due.empty:
            return
        slots = self.book.labels()
        counted = slots[slots["status"].isin(("answered", "late"))]
        partial = set(counted["request_key"])
        empty = due[~due["request_key"].isin(partial)]
        gone = h.queue.withdraw(empty["item_id"].tolist()) if len(empty) else []
        gone = set(empty["item_id"]) if gone is None else set(gone)
        # a web queue keeps a task that has an answer; when none of its answers is a label
        # (e.g. "neutral" typed through the API) the task still times out
        gone |= set(empty["item_id"]) & self._only_invalid
        note = f"no answer within humans.timeout ({h.timeout:g} s)"
        for r in due.to_dict("records"):
            key, iid = r["request_key"], r["item_id"]
            if key in partial:
                self._close(key, "answered")
                got.done.append(iid)
                log.info("human task for item %s timed out with %s of %s label(s); closed "
                         "with them", iid, int((counted["request_key"] == key).sum()),
                         r["wanted"])  # fmt: skip
            elif iid in gone:
                self.book.stop(key, "expired", note)
                got.expired.append(iid)
        if got.expired:
            log.info(
                "%d human task(s) unanswered past humans.timeout (%g s) withdrawn, their held "
                "money released; the router plans items %s without them",
                len(got.expired), h.timeout, ", ".join(got.expired[:10]),
            )  # fmt: skip

    def next_expiry(self) -> float | None:
        """Seconds until the next pending task times out (None: no timeout or no task)."""
        h = self.src.human
        if h is None or h.timeout is None:
            return None
        tasks = self.src.ledger.human_tasks("pending")
        if tasks.empty:
            return None
        return max(0.0, float(tasks["submitted_at"].min()) + h.timeout - self.clock())

    # -- reliability -------------------------------------------------------------------------
    def refit(self, got: Collected | None = None) -> None:
        """Estimate each person's reliability from every counted label, vote each answered
        task again with it, record both (``human_reliability``, ``human_queue``)."""
        h = self.src.human
        assert h is not None
        lab = self.book.counted()
        frame = pd.DataFrame({"task": lab["request_key"], "worker": lab["person"].fillna(""),
                              "label": lab["label"]})  # fmt: skip
        gold = {}
        if self.src.gold and self.src.task_type is not TaskType.summarization:
            for k, iid in zip(lab["request_key"], lab["item_id"], strict=True):
                g = self.src.gold.get(iid)
                if g is not None:
                    gold[k] = g
        self.reliability = estimate(frame, gold, max(2, len(h.builder.labels)),
                                    h.prior_accuracy, h.prior_strength)  # fmt: skip
        tasks = self.src.ledger.human_tasks("answered")
        confs = []
        groups = {k: g for k, g in lab.groupby("request_key")} if len(lab) else {}
        for t in tasks.to_dict("records"):
            g = groups.get(t["request_key"])
            if g is None:
                continue
            v = self.reliability.vote(zip(g["person"].fillna(""), g["label"], strict=True))
            confs.append(v.confidence)
            old = t.get("confidence")
            stale = old is None or old != old or abs(old - v.confidence) > 0.005
            if v.label != t["label"] or stale:  # a small drift is not written
                if v.label != t["label"] and len(g) > 1:
                    log.info("item %s: the vote of its %d human labels is now %r (was %r)",
                             t["item_id"], len(g), v.label, t["label"])  # fmt: skip
                    if got is not None:
                        got.changed.append(t["item_id"])
                self._close(t["request_key"], None)
        self.quality = sum(confs) / len(confs) if confs else None
        self._fitted = True
        if len(lab) or self.book.reliability_frame().shape[0]:
            self.book.save_reliability(self.reliability, self.quality)

    def arm_quality(self) -> float | None:
        """The human arm's quality for the router (None: the router's own default)."""
        h = self.src.human
        assert h is not None
        if h.arm_quality == "router":
            return None
        if not isinstance(h.arm_quality, str):
            return float(h.arm_quality)
        if self.quality is None or self.reliability.evidence < h.min_evidence:
            return None
        return round(self.quality, 2)


def _was(status: str, wanted: int) -> str:
    names = {"pending": f"complete with its {wanted} label(s)", "answered": "answered",
             "withdrawn": "withdrawn", "expired": "withdrawn after its timeout"}  # fmt: skip
    return names.get(status, status)


def _at(line: int | None, by: str | None, on: bool = False) -> str:
    """Where an answer came from: its line in the answers file, else who gave it (web queues).

    >>> _at(3, None), _at(None, "ann@example.org", on=True), _at(None, None)
    ('line 3', 'from ann@example.org', 'from the queue')
    """
    if line is not None:
        return f"on line {line}" if on else f"line {line}"
    return f"from {by}" if by else "from the queue"


def _line(x: Any) -> int | None:
    """A line number read back from the ledger (pandas may hand it over as a float)."""
    try:
        return None if x is None or x != x else int(x)
    except (TypeError, ValueError):
        return None
