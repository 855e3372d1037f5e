"""Human answers into the ledger: slots filled, late answers, timeouts, reliabilities, votes.

:class:`AnswerCollector` is what :meth:`LiveSource.collect_answers` runs each time it looks
at the human queue (at the start of a run, before a routing batch that asks humans, while
the run waits):

1. every answer row is matched to a label (:func:`~quorum.live.humans.queue.match_label`);
2. each item's rows are grouped by person (with one label per item, every row is the same
   "person": a later row corrects the label, as the file queue always did); the first
   ``labels_per_item`` people fill the task's slots, a person answering again corrects their
   label; anyone else, or anyone after the task stopped waiting, is a *late* answer
   (see :mod:`quorum.live.humans.book`);
3. a task whose slots are all filled is answered: its label is the reliability-weighted
   vote of its labels (:mod:`quorum.live.humans.reliability`; sets of labels are voted label
   by label, each person weighted by their reliability on that label), refitted whenever
   labels change;
4. a task unanswered past ``humans.timeout`` is withdrawn from the queue and ``expired``
   (its held money released; the router is told the human is not coming for that item and
   plans it without); one that has some but not all of its labels is closed with them.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from quorum.live.humans.answer_sink import AnswerSink, Collected, line_of, task_was, where
from quorum.live.humans.book import COUNTED, EXTRA, HumanBook
from quorum.live.humans.queue import HumanAnswer
from quorum.live.humans.reliability import (
    LabelSetReliability,
    Reliability,
    team_reliability,
)
from quorum.routing.core.budget import to_units

log = logging.getLogger("quorum.live")


@dataclass
class _Slots:
    """A task's label slots as the ledger holds them."""

    have: dict[str, dict] = field(default_factory=dict)  # by person
    free: list[int] = field(default_factory=list)
    withdrawn: list[int] = field(default_factory=list)
    paid: int = 0  # labels of this task that count (are paid): never more than ``wanted``


class AnswerCollector:
    """Attaches the human queue's answers to the ledger for a :class:`AnswerSink`."""

    def __init__(self, source: AnswerSink, clock: Callable[[], float] = time.time) -> None:
        self.src = source
        self.book = HumanBook(source.ledger)
        self.clock = clock
        h = source.human
        assert h is not None
        self.k = h.labels_per_item
        self.reliability: Reliability | LabelSetReliability = team_reliability(
            h.builder.kind, None, None, self._n_classes(), h.prior_accuracy
        )
        self.quality: float | None = None
        self._fitted = False
        #: items whose answers so far are none of them a label (see :meth:`expire`)
        self._only_invalid: set[str] = set()

    def _n_classes(self) -> int:
        """The number of labels of the one-coin weights (2 for graded answers)."""
        h = self.src.human
        assert h is not None
        return 2 if h.builder.kind.graded_people else max(2, len(h.builder.labels))

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
                    ans.item_id, where(ans.line, ans.by),
                )  # fmt: skip
                continue
            label = src.match(item, ans.raw)
            if label is None:
                src.report(
                    ("invalid", ans.item_id, ans.line, ans.raw),
                    "answers: %s, item %s: %r is not a label (%s)%s; the item "
                    "keeps its earlier answer, or stays pending until corrected or until "
                    "humans.timeout",
                    where(ans.line, ans.by), ans.item_id, ans.raw, src.label_help(item),
                    f"; {ans.note}" if ans.note else "",
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
                    iid, prev[1].raw, where(prev[1].line, prev[1].by, on=True), ans.raw,
                    where(ans.line, ans.by, on=True),
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
            # every task's slots as records, in one pass over the ledger's rows (a pandas
            # group and its records per task was most of a waiting run's CPU)
            slots_of: dict[str, list[dict]] = {}
            for slot in self.book.labels().to_dict("records"):  # task and slot order
                slots_of.setdefault(slot["request_key"], []).append(slot)
            for iid, item_rows in rows.items():
                task = by_item.get(iid)
                if task is None:
                    src.report(
                        ("unasked", iid),
                        "answers: item %s (%s) was never sent to a human; the answer is "
                        "kept in the file and used if it is asked for",
                        iid, where(item_rows[-1][1].line, item_rows[-1][1].by),
                    )  # fmt: skip
                    continue
                self._attach(task, item_rows, slots_of.get(task["request_key"]), got)
        self.expire(got)
        if got.any or not self._fitted:
            self.refit(got)
        if got.done:
            h.queue.withdraw(got.done)
        return got

    def _attach(self, task: dict, rows: list, slots: list[dict] | None, got: Collected) -> None:
        """Attach one task's answer rows: each person's latest row corrects their slot,
        fills a free slot, is an extra label beyond ``wanted`` or a late answer."""
        key, iid, status = task["request_key"], task["item_id"], task["status"]
        wanted = int(task.get("wanted") or 1)
        s = self._slots(slots, wanted)
        filled = changed = late = False
        for who, (label, ans) in self._latest(iid, rows, wanted).items():
            mine = s.have.get(who)
            if mine is not None:
                changed |= self._correct(key, iid, mine, label, ans)
                continue
            if status == "pending" and s.free:
                self.book.fill(key, s.free.pop(0), ans.by, label, ans.raw, ans.line)
                filled = True
                s.paid += 1
            elif s.paid >= wanted:
                self._extra(key, iid, who, label, ans, wanted)
            else:
                late |= self._late(task, who, label, ans, s, got)
            s.have[who] = {"label": label}
        self._after(key, iid, status, got, filled, changed, late, not s.free)

    def _slots(self, slots: list[dict] | None, wanted: int) -> _Slots:
        """A task's slots (records of :meth:`HumanBook.labels`) as the ledger holds them."""
        out = _Slots()
        for s in slots or []:
            if s["status"] == "open":
                out.free.append(int(s["slot"]))
            elif s["status"] == "withdrawn":
                out.withdrawn.append(int(s["slot"]))
            else:
                out.have[self._person(None, wanted, s["person"])] = s
                out.paid += s["status"] in COUNTED
        return out

    def _correct(self, key: str, iid: str, s: dict, label: str, ans: HumanAnswer) -> bool:
        """A person answered again: their slot takes the new row (True: a new label)."""
        if s["label"] == label and (s["person"] or None) == ans.by:
            return False
        if s["status"] not in COUNTED:
            return False  # recorded once, never paid nor used
        self.book.correct(key, int(s["slot"]), ans.by, label, ans.raw, ans.line)
        if s["label"] == label:
            return False
        log.info(
            "answers: item %s is now %r (%s), replacing %r (%s)",
            iid, ans.raw, where(ans.line, ans.by), s["raw"], where(line_of(s["line"]), s["person"]),
        )  # fmt: skip
        return True

    def _extra(self, key: str, iid: str, who: str, label: str, ans: HumanAnswer,
               wanted: int) -> None:  # fmt: skip
        """k = humans.labels_per_item is a hard cap on what a task pays: a label beyond it
        (a web queue may hand a task to one person too many) is kept as a record, never
        paid nor voted."""
        self.book.add(key, iid, None, ans.by, label, ans.raw, ans.line, EXTRA)
        self.src.report(
            ("extra", iid, who),
            "answers: item %s got a label %s beyond the %d wanted "
            "(humans.labels_per_item); it is recorded, not paid, not used",
            iid, where(ans.line, ans.by), wanted,
        )  # fmt: skip

    def _late(self, task: dict, who: str, label: str, ans: HumanAnswer, s: _Slots,
              got: Collected) -> bool:  # fmt: skip
        """A label after the task stopped waiting with fewer than the labels wanted: paid
        and used while the budget has room (True), else recorded only."""
        src, book = self.src, self.book
        key, iid, status = task["request_key"], task["item_id"], task["status"]
        wanted = int(task.get("wanted") or 1)
        price_u = to_units(task["price"] or 0.0)
        if not src.room(price_u):
            book.add(key, iid, None, ans.by, label, ans.raw, ans.line, "late-unpaid")
            got.refused.append(iid)
            src.report(
                ("late", iid, who),
                "answers: item %s got a late answer %s (its task was %s) and the budget "
                "has no room left to pay for it; it is recorded, not paid, not used",
                iid, where(ans.line, ans.by), task_was(status, wanted),
            )  # fmt: skip
            return False
        if s.withdrawn:
            book.fill(key, s.withdrawn.pop(0), ans.by, label, ans.raw, ans.line, "late")
        else:
            cid = src.late_call(key, iid, len(s.have) + len(s.free), label, ans.raw,
                                task["price"] or 0.0)  # fmt: skip
            book.add(key, iid, cid, ans.by, label, ans.raw, ans.line, "late")
        src.commit(price_u)
        s.paid += 1
        log.info(
            "answers: item %s got a late answer %s (its task was %s); it is paid "
            "and used", iid, where(ans.line, ans.by), task_was(status, wanted),
        )  # fmt: skip
        return True

    def _after(self, key: str, iid: str, status: str, got: Collected, filled: bool,
               changed: bool, late: bool, full: bool) -> None:  # fmt: skip
        """What the task's new labels change: its vote, its status, whether it is shown
        again (``full``: no free slot left)."""
        src = self.src
        if filled:
            got.new.append(iid)
            if full and self._widen(key, iid):
                src.resubmit(key, iid)
            elif full:
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

    def _widen(self, key: str, iid: str) -> bool:
        """A random quality check (``purpose`` 'check') whose k labels disagree asks one
        more person before it closes (issue 38): with two labels and weights fitted from a
        few of them, nothing says which one is right, and the check's truth would rest on
        that guess. True: a slot was added (it holds one label's price, from the money kept
        for the checks). Once per task; with one label per item, never; nor where the team
        has no one else: ``humans.team_size`` at most k, or, unset, nobody but the task's
        own people has answered a task of the run (a team of two has no third person, and
        the task would wait for one until the timeout)."""
        task = self.src.ledger.human_task(key)
        if task is None or task["purpose"] != "check":
            return False
        lab = self.disagreeing(task)
        if lab is None:
            return False
        size = self.src.human.team_size if self.src.human is not None else None
        if size is not None and size <= self.k:
            return False  # nobody else to ask (humans.team_size)
        if size is None and not self.book.people() - set(lab["person"].dropna().astype(str)):
            log.info(
                "check on item %s: its %d labels disagree and no other person has answered "
                "yet (%d known; humans.team_size says how many there are); its truth is the "
                "vote of the two", iid, len(lab), len(self.book.people()),
            )  # fmt: skip
            return False
        price = float(task["price"] or 0.0)
        if not self.src.room(to_units(price), for_checks=True):
            log.info(
                "check on item %s: its %d labels disagree and the budget has no room for one "
                "more person; its truth is the vote of the two", iid, len(lab),
            )  # fmt: skip
            return False
        cid = self.src.open_call(key, iid, len(self.book.labels(key)), price)
        self.book.widen(key, iid, cid)
        self.src.commit(to_units(price), for_checks=True)
        log.info("check on item %s: its %d labels disagree (%s); one more person is asked",
                 iid, len(lab), ", ".join(map(str, lab["label"])))  # fmt: skip
        return True

    def disagreeing(self, task: sqlite3.Row) -> pd.DataFrame | None:
        """The task's counted labels where they disagree and it has not asked one more
        person yet (what :meth:`_widen` acts on, before the team and the money); None
        otherwise (also with one label per item)."""
        if self.k < 2 or int(task["wanted"] or 1) > self.k:
            return None
        lab = self.book.labels(task["request_key"])
        lab = lab[lab["status"].isin(COUNTED)]
        return lab if lab["label"].nunique() > 1 else None

    def recheck(self, key: str, iid: str) -> bool:
        """An answered task that has just become a random check (its labels came while the
        router held it) is settled as a check: where its labels disagree and one more
        person can be asked (:meth:`_widen`), it waits again and is shown again (True)."""
        if not self._widen(key, iid):
            return False
        self.book.wait_again(key)
        self.src.resubmit(key, iid)
        return True

    def dependable(self) -> bool:
        """Whether the people's reliabilities can be trusted (as ``quorum status`` says,
        :func:`~quorum.live.humans.book.reliability_evidence`): each person has
        ``min_evidence`` labels on control items, or three labels per item and as many
        checked labels. Where not, a vote is the majority's (the weights break ties)."""
        h = self.src.human
        assert h is not None
        people = list(self.reliability.people.values())
        if not people:
            return False
        need = h.min_evidence
        return all(p.gold >= need for p in people) or (
            self.k >= 3 and all(p.checked >= need for p in people)
        )

    def _close(self, key: str, status: str | None) -> None:
        """Set the task's label to the vote of its labels (and its status)."""
        lab = self.book.labels(key)
        lab = lab[lab["status"].isin(("answered", "late"))].sort_values("answered_at")
        if lab.empty:
            return
        v = self.reliability.vote(zip(lab["person"].fillna(""), lab["label"], strict=True),
                                  majority_first=not self.dependable())  # fmt: skip
        last = lab.iloc[-1]
        if len(lab) == 1:
            raw, by, line = last["raw"], last["person"], line_of(last["line"])
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
                have = int((counted["request_key"] == key).sum())
                short = f"closed at the timeout with {have} of {r['wanted']} label(s)"
                self.book.note(key, short)
                log.warning(
                    "human task for item %s: %s; its label rests on fewer people than wanted "
                    "(in Label Studio a person who opened it and left holds it until "
                    "TASK_LOCK_TTL: docs/labelstudio.md)", iid, short,
                )  # fmt: skip
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
        kind = h.builder.kind  # the task's kind, with its labels and bounds
        if self.src.gold and (kind.discrete or kind.label_set_outputs or kind.graded_people):
            for k, iid in zip(lab["request_key"], lab["item_id"], strict=True):
                g = self.src.gold.get(iid)
                if g is not None:
                    gold[k] = g
        # one accuracy per person (by the kind's score where answers are graded), or one
        # per person and label for sets of labels
        self.reliability = team_reliability(
            kind, frame, gold, self._n_classes(), h.prior_accuracy, h.prior_strength
        )
        tasks = self.src.ledger.human_tasks("answered")
        confs = []
        groups = {k: g for k, g in lab.groupby("request_key")} if len(lab) else {}
        majority = not self.dependable()
        for t in tasks.to_dict("records"):
            g = groups.get(t["request_key"])
            if g is None:
                continue
            v = self.reliability.vote(zip(g["person"].fillna(""), g["label"], strict=True),
                                      majority_first=majority)  # fmt: skip
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
