"""LiveSource: the AnnotationSource that calls LLMs, local models and humans for real.

Machine calls are made once and recorded (:class:`~quorum.live.machines.machine_calls.MachineCalls`:
ledger cache look-up -> money guard -> concurrency slot -> ``inflight`` row -> the call ->
result committed). ``annotate_many`` runs its requests concurrently on a private asyncio
loop (:mod:`~quorum.live.machines.loop`), under per-annotator semaphores and rate limits and a
global concurrency cap.

Human tasks are sent ahead (issue 27): a pass that reaches a human task still waiting for
its answer goes on, routing the rest with the human answers it has (the waiting item counts
as asked, its label provisional), until ``queue_depth`` of its human tasks wait at once.
Then the pass is *frozen*: it makes no new paid call and sends no new human task (answers
already in the ledger are still served, so the pass ends with provisional labels). The
runner routes again as soon as any of those answers comes (delayed feedback: the next pass
takes it into account from the start), so that a slow person holds up nobody. With
``queue_depth = 1`` a pass freezes at its first unanswered task, and the replay takes
exactly the path a router with an instant human would take (the behaviour before).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from quorum.live.humans.book import HumanBook
from quorum.live.humans.collector import AnswerCollector, Collected
from quorum.live.humans.queue import HumanArm, HumanTask
from quorum.live.humans.tasks import human_task, label_help, match_answer, task_key
from quorum.live.ledger.store import Ledger
from quorum.live.machines.answer_health import constant_answers
from quorum.live.machines.calls import Annotator, Redactor, Request
from quorum.live.machines.loop import shared_loop
from quorum.live.machines.machine_calls import DEFERRED, KEPT_CHECK, NOT_MADE, MachineCalls
from quorum.live.machines.money_guard import LiveStats, MoneyGuard
from quorum.live.machines.swap import SwapAnnotator, execute_swap, pair_from_ledger
from quorum.routing.core.base import Outcome
from quorum.routing.core.budget import from_units, to_units
from quorum.tasks.base import ItemView, TaskKind, TaskType
from quorum.tasks.parsing import LabelParser
from quorum.tasks.registry import kind_of

log = logging.getLogger("quorum.live")


class LiveSource:
    """An :class:`~quorum.routing.core.base.AnnotationSource` backed by real calls and a ledger."""

    def __init__(
        self,
        *,
        task_type: TaskType,
        items: list[ItemView],
        annotators: dict[str, Annotator],
        ledger: Ledger,
        run_id: int,
        budget_limit: float,
        parser: LabelParser | None,
        human: HumanArm | None = None,
        concurrency: int = 16,
        redactor: Redactor | None = None,
        on_event: Callable[[Outcome, LiveStats], None] | None = None,
        gold: dict[str, str] | None = None,
        queue_depth: int = 1,
        charge_interrupted: bool = True,
        kind: TaskKind | None = None,
    ) -> None:
        self.task_type = task_type
        #: the task's kind with its labels (``kind``, else the bare kind of ``task_type``):
        #: how an answer reads, whether gold is a label
        self.kind = kind if kind is not None else kind_of(task_type)
        #: human tasks a pass may have waiting at once before it freezes
        self.queue_depth = max(1, int(queue_depth))
        self.items = {it.item_id: it for it in items}
        self.annotators = annotators
        self.ledger = ledger
        self.run_id = run_id
        self.parser = parser
        self.human = human
        self.redact = redactor or Redactor()
        self.on_event = on_event
        self.concurrency = concurrency
        self.stats = LiveStats(len(items), budget_limit, committed=ledger.money()["committed"])
        self.guard = MoneyGuard(ledger, budget_limit, self.stats, charge_interrupted)
        self.calls = MachineCalls(
            ledger=ledger, run_id=run_id, task_type=task_type, parser=parser, guard=self.guard,
            stats=self.stats, redact=self.redact, concurrency=concurrency, event=self._event,
            overplanned=self._overplanned, kind=self.kind,
        )  # fmt: skip
        self._to_submit: dict[str, HumanTask] = {}
        #: the pass makes no new call and sends no new task (see the module docstring)
        self.frozen = False
        #: human tasks (request key -> item id) the pass is waiting for
        self.blocking: dict[str, str] = {}
        #: human tasks (request key -> item id) the pass asked for
        self.asked_human: dict[str, str] = {}
        #: the checks being asked are a complete pass's (see :meth:`checking`)
        self._settle_checks = False
        self._reported: set[tuple] = set()
        self._last: dict[tuple[str, str], str] = {}
        self._emb: dict[str, np.ndarray] = {}
        #: a call the router planned that the ledger has no money left for (spent on calls
        #: this pass does not reuse: an earlier pass's, a killed run's) is not made and not
        #: written, only counted in ``not_made`` (False: written as a refused call); the
        #: runner then hands the paid machine answers to the router as prior outcomes
        self.skip_unpaid = False
        self.not_made = 0
        #: the router asked for a check's task that its money could not take over
        #: (:meth:`_claim`): the task stays the checks'
        self.kept_checks = 0
        self._loop = shared_loop()
        #: known labels of control items (the items file's gold column), to check people
        self.gold = {k: v for k, v in (gold or {}).items() if isinstance(v, str)}
        self.book = HumanBook(ledger)
        self.collector = AnswerCollector(self) if human is not None else None
        #: machine annotators taken out as uninformative (see :meth:`is_available`)
        self.uninformative: set[str] = set()

    # -- AnnotationSource ------------------------------------------------------
    def price(self, annotator: str) -> float:
        if self.human is not None and annotator == self.human.name:
            return self.human.task_price
        return self.annotators[annotator].price()

    def confidence_price(self, annotator: str) -> float:
        a = self.annotators.get(annotator)
        return a.confidence_price() if a is not None and a.gives_confidence else 0.0

    def is_available(self, annotator: str) -> bool:
        """False once an endpoint is declared dead, or found uninformative (one label on
        nearly every item while people disagree, :func:`constant_answers`): routers should
        drop that arm."""
        if annotator in self.uninformative:
            return False
        a = self.annotators.get(annotator)
        return True if a is None else a.available

    def _find_uninformative(self) -> None:
        """Machine annotators that answer one label on nearly every item while people give
        it far less often: out of the run from this pass on (said once, issue 38)."""
        if self.human is None or not self.kind.discrete:
            return
        for c in constant_answers(self.ledger):
            if (
                c.uninformative
                and c.annotator in self.annotators
                and (c.annotator not in self.uninformative)
            ):
                self.uninformative.add(c.annotator)
                log.warning("%s", c.line())

    def check_price(self, annotator: str) -> float:
        """What a random quality check holds (:class:`~quorum.live.run.target.LiveChecks`):
        the task's k labels and, with k >= 2, half a label more: where a check's k labels
        disagree one more person is asked (:meth:`HumanBook.widen`), about every other
        check on a team with one careless person."""
        price = self.price(annotator)
        h = self.human
        if h is not None and annotator == h.name and h.labels_per_item >= 2:
            return price + 0.5 * h.price
        return price

    def bound_pass(self, cap: float | None, keep: float) -> None:
        """The pass's bounds on the money (:meth:`MoneyGuard.bound`): the rung's limit and
        the money kept for its random checks, which no other call may take (with a
        human arm only: the gold column answers at once, nothing can be queued ahead of
        its checks)."""
        self.guard.bound(cap, keep if self.human is not None else 0.0)

    @contextlib.contextmanager
    def checking(self, settle: bool = True) -> Iterator[None]:
        """The calls made inside are the random quality checks: their tasks are marked
        (``purpose`` 'check') and may use the money kept for them. ``settle``: the checks
        of a complete pass, so a task answered while the router held it is settled as a
        check (:meth:`_claim`); False for the checks sent ahead of the router
        (:func:`~quorum.live.run.target.send_checks_first`), which the router may still
        take: a resumed run must not buy a third person for an item the run's last pass
        gave to the router."""
        self.guard.for_checks = True
        self._settle_checks = settle
        try:
            yield
        finally:
            self.guard.for_checks = False
            self._settle_checks = False

    def annotate(self, item_id: str, annotator: str) -> Outcome:
        return self.annotate_many([(item_id, annotator)])[0]

    def annotate_many(self, requests: list[tuple[str, str]]) -> list[Outcome]:
        if not requests:
            return []
        frozen = self.frozen
        outs = self._loop.run(self._many(requests))
        if not frozen and len(self.blocking) >= self.queue_depth:
            self.frozen = True  # the queue is full: later decisions wait for answers
        return outs

    @property
    def waiting(self) -> bool:
        """The pass waits for human answers (frozen, or ended with tasks pending)."""
        return self.frozen or bool(self.blocking)

    def confidence(self, item_id: str, annotator: str) -> Outcome:
        return self._loop.run(self._confidence(item_id, annotator))

    def embed_outputs(self, texts: list[str]) -> np.ndarray:
        from quorum.models.embedders import embed

        missing = [t for t in dict.fromkeys(texts) if t not in self._emb]
        if missing:
            for t, v in zip(missing, embed(missing), strict=True):
                self._emb[t] = v
        return np.stack([self._emb[t] for t in texts]) if texts else np.zeros((0, 384))

    # -- passes --------------------------------------------------------------
    def begin_pass(self) -> None:
        """A new routing pass: nothing frozen, nothing asked yet, money from the ledger."""
        self.frozen = False
        self.not_made = 0
        self.kept_checks = 0
        self.blocking = {}
        self.asked_human = {}
        self.guard.sync()
        self.stats.items_ok = set()
        self._find_uninformative()

    def prior_outcomes(self) -> list[Outcome]:
        """Answers the router gets before it starts, charged to its budget: machine answers
        and human answers to tasks an earlier pass paid for that no later complete pass
        asked for; used as labels and rewards, never asked or paid again (see
        :class:`~quorum.routing.core.recorder.CallRecorder`). So the router never plans the money
        the ledger spent on them."""
        out = []
        calls = self.ledger.given_calls()
        pairs: set[tuple[str, str]] = set()
        for r in calls.to_dict("records"):
            ann = self.annotators.get(r["annotator"])
            if r["item_id"] in self.items and isinstance(ann, SwapAnnotator):
                if (r["item_id"], ann.name) not in pairs:  # one outcome a pair (two calls)
                    pairs.add((r["item_id"], ann.name))
                    got = pair_from_ledger(self.ledger, ann, self.items[r["item_id"]])
                    if got is not None and ann.name in self.uninformative:  # paid, not used
                        got = dataclasses.replace(got, output=None, status="unparseable")
                    out += [got] if got is not None else []
            elif r["item_id"] in self.items and ann is not None:
                # an uninformative annotator's answers are paid, not used
                ok = r["status"] == "ok" and r["annotator"] not in self.uninformative
                out.append(Outcome(r["item_id"], r["annotator"], r["output"] if ok else None,
                                   float(r["cost"] or 0.0), status="ok" if ok else "unparseable",
                                   raw=r["response_raw"]))  # fmt: skip
        if self.human is None:
            return out
        tasks = self.ledger.human_tasks("answered")
        tasks = tasks[(tasks["given"] == 1) & tasks["item_id"].isin(list(self.items))]
        for r in tasks.to_dict("records"):
            cost = self._task_cost(r["request_key"])
            out.append(Outcome(r["item_id"], self.human.name, r["label"], cost, raw=r["raw"]))
        return out

    # -- human answers ---------------------------------------------------------
    def collect_answers(self) -> Collected:
        """Read the human queue and attach every answer to its task in the ledger
        (:class:`~quorum.live.humans.collector.AnswerCollector`: slots, late answers, timeouts,
        reliabilities and votes), independent of any routing pass."""
        if self.collector is None:
            return Collected()
        got = self.collector.collect()
        self.guard.sync()
        return got

    def human_quality(self) -> float | None:
        """The human arm's estimated quality for the router (None: keep its default)."""
        return None if self.collector is None else self.collector.arm_quality()

    def next_expiry(self) -> float | None:
        return None if self.collector is None else self.collector.next_expiry()

    def _task_cost(self, key: str) -> float:
        """What a human task cost (paid and held) as the router sees it: at most the k
        labels it reserved. Late labels beyond them are paid from money nobody held; the
        ledger (and so the project guard) counts them, the router's own budget does not."""
        assert self.human is not None
        cap = to_units(self.human.task_price)
        return from_units(min(self.book.cost_units(key), cap))

    # -- the public face the answer collector uses (quorum.live.humans.collector.AnswerSink) --
    def room(self, units: int, for_checks: bool | None = None) -> bool:
        """Whether the budget has ``units`` left beside what is paid, held and reserved
        (and, unless ``for_checks``, beside the money kept for the random checks)."""
        return self.guard.room(units, for_checks)

    def commit(self, units: int, for_checks: bool | None = None) -> None:
        self.guard.commit(units, for_checks)

    def open_call(self, key: str, item_id: str, slot: int, price: float) -> int:
        """The call row of a slot added to a check whose labels disagree: pending, holding
        the price of one label until it comes."""
        assert self.human is not None
        return self.ledger.start_call(
            self.run_id, f"{key}#{slot + 1}", "annotate", item_id, self.human.name, "human",
            None, None, self.items[item_id].text if item_id in self.items else "",
            {"slot": slot, "tie_break": True}, price, status="pending", cost=price,
            cost_source="human price (held until answered)",
        )  # fmt: skip

    def late_call(self, key: str, item_id: str, slot: int, label: str, raw: str,
                  price: float) -> int:  # fmt: skip
        """The paid call row of a late answer that has no slot of its own yet."""
        assert self.human is not None
        return self.ledger.start_call(
            self.run_id, f"{key}#{slot + 1}", "annotate", item_id, self.human.name, "human",
            None, None, self.items[item_id].text if item_id in self.items else "",
            {"late": True}, price, status="ok", cost=price,
            cost_source="human price (late answer)",
        )  # fmt: skip

    def resubmit(self, key: str, item_id: str) -> None:
        """Show a task again with who answered it so far (it still wants labels)."""
        if self.human is not None and item_id in self.items:
            self.human.queue.submit([self._human_task(self.items[item_id], key)])

    def match(self, item: ItemView, raw: str) -> str | None:
        return match_answer(self.human, self.kind, item, raw)

    def label_help(self, item: ItemView) -> str:
        assert self.human is not None
        return label_help(self.human, item)

    def report(self, key: tuple, msg: str, *args: Any) -> None:
        """Log a problem with the answers once per project (remembered in the ledger)."""
        if key in self._reported:
            return
        self._reported.add(key)
        text = msg % args
        if self.ledger.note_once(json.dumps(key, default=str), text):
            log.warning("%s", text)

    def resubmit_pending(self) -> int:
        """Put every pending human task of the ledger back in the queue (start of a run)."""
        if self.human is None:
            return 0
        pend = self.ledger.pending_humans()
        tasks = [self._human_task(self.items[i], k)
                 for i, k in zip(pend["item_id"], pend["request_key"], strict=True)
                 if i in self.items]  # fmt: skip
        self.human.queue.submit(tasks)
        return len(tasks)

    def withdraw_tasks(self, keys: dict[str, str]) -> None:
        """Withdraw pending tasks no pass needs (key -> item id): the held money is freed."""
        for key in keys:
            self.book.stop(key, "withdrawn", "no routing pass needs it")
        if self.human is not None and keys:
            self.human.queue.withdraw(list(keys.values()))
        self.guard.sync()

    def close(self) -> None:
        for a in self.annotators.values():
            a.close()
        if self.human is not None:
            self.human.queue.close()

    # -- the async core --------------------------------------------------------
    async def _many(self, requests: list[tuple[str, str]]) -> list[Outcome]:
        if (
            not self.frozen
            and self.human is not None
            and any(a == self.human.name for _, a in requests)
        ):
            self.collect_answers()
        try:
            return list(await asyncio.gather(*(self._one(i, a) for i, a in requests)))
        finally:
            if self._to_submit and self.human is not None:
                tasks, self._to_submit = list(self._to_submit.values()), {}
                self.human.queue.submit(tasks)

    async def _one(self, item_id: str, annotator: str) -> Outcome:
        item = self.items[item_id]
        if self.human is not None and annotator == self.human.name:
            return self._human_call(item)
        if annotator in self.uninformative:  # taken out: no call, nothing paid
            out = Outcome(item_id, annotator, None, 0.0, status="failed",
                          raw="uninformative: one label on nearly every item")  # fmt: skip
            self._event(out)
            return out
        ann = self.annotators[annotator]
        if isinstance(ann, SwapAnnotator):  # a pairwise judge asked in both orders
            out = await execute_swap(self.calls, ann, item, frozen=self.frozen,
                                     skip_unpaid=self.skip_unpaid)  # fmt: skip
        else:
            out = await self._execute(ann, ann.request(item, "annotate"))
        if out.ok and out.output is not None:
            self._last[(item_id, annotator)] = out.output
        return out

    async def _confidence(self, item_id: str, annotator: str) -> Outcome:
        ann = self.annotators.get(annotator)
        item = self.items[item_id]
        if ann is None or not ann.gives_confidence:
            return Outcome(item_id, annotator, None, 0.0, status="failed")
        pred = self._last.get((item_id, annotator))
        row = self.ledger.completed(ann.request(item, "annotate").key)
        if row is not None and row["status"] == "ok" and row["confidence"] is not None:
            # the answer came with logprobs over the options: its confidence, free (issue 27)
            conf = float(row["confidence"])
            out = Outcome(item_id, annotator, None, 0.0, confidence=conf, raw="logprobs")
            self._event(out)
            return out
        if pred is None:
            pred = row["output"] if row is not None and row["status"] == "ok" else None
        if pred is None:
            return Outcome(item_id, annotator, None, 0.0, status="failed", raw="no prior answer")
        return await self._execute(ann, ann.request(item, "confidence", prediction=pred))

    async def _execute(self, ann: Annotator, req: Request) -> Outcome:
        return await self.calls.execute(ann, req, frozen=self.frozen, skip_unpaid=self.skip_unpaid)

    def _overplanned(self, item_id: str, annotator: str) -> Outcome:
        """A call the router planned that the ledger has no money left for (it went to
        calls this pass does not reuse): not made, not written; counted in ``not_made``,
        after the pass the runner hands those calls to the router and routes again."""
        self.not_made += 1
        out = Outcome(item_id, annotator, None, 0.0, status="failed", raw=NOT_MADE)
        self._event(out)
        return out

    # -- humans ----------------------------------------------------------------
    def _human_task(self, item: ItemView, key: str | None = None) -> HumanTask:
        assert self.human is not None
        return human_task(self.human, item, self.book, key)

    def _human_call(self, item: ItemView) -> Outcome:
        """The item's human task: its (voted) label if it has one, pending while it waits
        (sent once, holding the price of each label wanted), failed if it expired."""
        assert self.human is not None
        h = self.human
        key = task_key(h, item)
        self.asked_human[key] = item.item_id
        task = self.ledger.human_task(key)
        status = task["status"] if task is not None else None
        if task is not None:
            claim = self._claim(key, task)
            if claim == "wait":  # a check to settle, and queue_depth tasks wait already
                self.frozen = True
                return Outcome(item.item_id, h.name, None, 0.0, status="pending", raw=DEFERRED)
            if claim == "kept":  # a check's task the router's money cannot take over
                self.kept_checks += 1
                out = Outcome(item.item_id, h.name, None, 0.0, status="failed", raw=KEPT_CHECK)
                self._event(out)
                return out
            if claim == "widened":
                status = "pending"  # a check whose labels disagree waits for one more person
        if status == "answered":
            out = Outcome(item.item_id, h.name, task["label"], self._task_cost(key),
                          raw=task["raw"])  # fmt: skip
            self._event(out)
            return out
        if status == "expired":
            out = Outcome(item.item_id, h.name, None, 0.0, status="failed",
                          raw=f"expired: {task['note'] or 'no answer in time'}")  # fmt: skip
            self._event(out)
            return out
        if not self.frozen and status != "pending" and self._queue_full():
            self.frozen = True  # queue_depth tasks wait already: this one waits its turn
        if self.frozen and status != "pending":
            return Outcome(item.item_id, h.name, None, 0.0, status="pending", raw=DEFERRED)
        if status is None or status == "withdrawn":
            if not self.guard.hold(h.task_price):
                if self.skip_unpaid:
                    return self._overplanned(item.item_id, h.name)
                return Outcome(
                    item.item_id, h.name, None, 0.0, status="failed", raw="project budget reached"
                )
            if status is None:
                ids = [
                    self.ledger.start_call(
                        self.run_id, key if j == 0 else f"{key}#{j + 1}", "annotate",
                        item.item_id, h.name, "human", None, None, item.text,
                        {"queue": type(h.queue).__name__, "slot": j}, h.price, status="pending",
                        cost=h.price, cost_source="human price (held until answered)",
                    )
                    for j in range(h.labels_per_item)
                ]  # fmt: skip
                self.ledger.queue_human(key, item.item_id, h.name, ids, h.price,
                                        "check" if self.guard.for_checks else None)  # fmt: skip
            else:
                self.book.reopen(key, h.price)
            self.guard.settle(h.task_price, h.task_price)
            self._to_submit[item.item_id] = self._human_task(item, key)
        cost = self._task_cost(key)
        if not self.frozen:
            self.blocking[key] = item.item_id
        out = Outcome(item.item_id, h.name, None, cost, status="pending")
        self._event(out)
        return out

    def _claim(self, key: str, task: sqlite3.Row) -> str | None:
        """A task is the random checks' while they ask for it and the router's once the
        router asks for it (its item left the machine-labelled set): its money then counts
        for the router, and the money kept for the checks covers the check drawn instead.
        The router takes a check's task only where its money leaves the checks' kept money
        whole (:meth:`MoneyGuard.takes_over`); else the task stays the checks' and the
        router is told "kept" (issue 38's trial: the router took over the 5 checks sent
        first after a resume, their money with them, and the checks drawn instead found
        none left, so the run ended "from 0 random checks"). A check's task the router
        could not take is still its item's label in the end: the checks ask for it.
        A task answered while the router held it that becomes a check is settled as a check
        (issue 38): where its k labels disagree it waits again for one more person
        ("widened"); where ``queue_depth`` tasks wait already, it is left as it is until
        one of them is answered ("wait": the pass waits, and asks again)."""
        want = "check" if self.guard.for_checks else None
        if task["purpose"] == want:
            return None
        if want is None and task["purpose"] == "check":
            units = self.book.cost_units(key)
            if not self.guard.takes_over(units):
                return "kept"
        settle = (
            want is not None
            and task["status"] == "answered"
            and self.collector is not None
            and self._settle_checks
        )
        if settle and self.collector.disagreeing(task) is not None and self._queue_full():
            return "wait"
        self.ledger.set_purpose(key, want)
        self.guard.sync()
        if settle and self.collector.recheck(key, task["item_id"]):
            return "widened"
        return None

    def _queue_full(self) -> bool:
        """``humans.queue_depth`` (when set above 1) is a cap on the human tasks pending at
        once, whichever pass sent them (issue 38: a calibration batch, or tasks earlier
        passes sent, once made 26 wait at depth 6). When it is reached the pass waits for
        any of them (they join ``blocking``)."""
        if self.queue_depth <= 1:
            return False
        pend = self.ledger.pending_humans()
        if len(pend) < self.queue_depth:
            return False
        for k, i in zip(pend["request_key"], pend["item_id"], strict=True):
            self.blocking.setdefault(k, i)
        return True

    def _event(self, out: Outcome) -> None:
        self.stats.count(out)
        if self.on_event is not None:
            try:
                self.on_event(out, self.stats)
            except Exception:  # a display problem must never break a run
                log.debug("progress callback failed", exc_info=True)
