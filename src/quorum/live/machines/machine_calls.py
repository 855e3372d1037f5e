"""Machine calls made exactly once, and recorded: the paid path of the live source.

Every call goes: ledger cache look-up -> project money guard -> global concurrency slot ->
``inflight`` row committed -> the call (with retries) -> response, parse result and cost
committed -> Outcome returned. The same request in flight twice is made once (the second
waits for the first one's answer).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from quorum.live.ledger.store import Ledger
from quorum.live.machines.calls import MAYBE_BILLED, SENDING, Annotator, Redactor, Request, Response
from quorum.live.machines.money_guard import LiveStats, MoneyGuard
from quorum.routing.core.base import Outcome
from quorum.routing.core.budget import from_units
from quorum.tasks.base import TaskKind, TaskType
from quorum.tasks.parsing import LabelParser, Parsed, parse_confidence
from quorum.tasks.registry import kind_of

log = logging.getLogger("quorum.live")

#: the raw text of an outcome the source did not produce because the pass is frozen
DEFERRED = "deferred: the routing pass waits for human answers"
#: ... and of a call the router planned that the ledger has no money left for
NOT_MADE = "not made: the project budget is spent (see the ledger)"
#: the router asked for a random check's task its money could not take over: the task stays
#: the checks' (:meth:`quorum.live.run.source.LiveSource._claim`)
KEPT_CHECK = "not taken: the task is a random check and the money kept for the checks stays theirs"


@dataclass(kw_only=True, repr=False, eq=False)  # the redactor holds secrets: no repr
class MachineCalls:
    """LLM and local-model calls for a :class:`~quorum.live.run.source.LiveSource`.

    Parameters
    ----------
    ledger, run_id : where every call is recorded (and the response cache).
    task_type, parser : how an answer is read (the task kind's
        :meth:`~quorum.tasks.base.TaskKind.parse`
        with the label parser; summaries as text).
    guard : the project's money guard.
    stats : the running counts.
    redact : removes secrets from what is recorded.
    concurrency : calls in flight at once (all annotators together).
    event : told every outcome handed to the router.
    overplanned : the outcome of a call the ledger has no money left for, where the
        source skips such calls (see ``LiveSource.skip_unpaid``).
    """

    ledger: Ledger
    run_id: int
    task_type: TaskType
    parser: LabelParser | None
    guard: MoneyGuard
    stats: LiveStats
    redact: Redactor
    concurrency: int
    event: Callable[[Outcome], None]
    overplanned: Callable[[str, str], Outcome]
    #: the task's kind with its labels (None: the bare kind of ``task_type``, which reads
    #: an answer without knowing the labels: a span type outside them would pass)
    kind: TaskKind | None = None
    _inflight: dict[str, asyncio.Future] = field(default_factory=dict, init=False)
    _sem: asyncio.Semaphore | None = field(default=None, init=False)
    _guard_warned: bool = field(default=False, init=False)
    _kind: TaskKind = field(init=False)

    def __post_init__(self) -> None:
        #: the task's kind, which reads an LLM's raw answer (built once, not per call)
        self._kind = self.kind if self.kind is not None else kind_of(self.task_type)

    async def execute(
        self, ann: Annotator, req: Request, *, frozen: bool, skip_unpaid: bool,
        held: bool = False,
    ) -> Outcome:  # fmt: skip
        """Serve from the ledger, or make (and record) the call exactly once; ``frozen``:
        a pass waiting for people makes no new call; ``held``: the caller already holds
        ``req.reserved`` in the money guard (given back if the call is not made)."""
        row = self.ledger.completed(req.key)
        if row is not None:
            self._unhold(held, req)
            return self._from_row(req, row, cached=True)
        if frozen:
            self._unhold(held, req)
            return Outcome(req.item_id, req.annotator, None, 0.0, status="failed", raw=DEFERRED)
        waiting = self._inflight.get(req.key)
        if waiting is not None:  # the same request is in flight: share its answer
            await asyncio.shield(waiting)
            row = self.ledger.completed(req.key)
            if row is not None:
                self._unhold(held, req)
                return self._from_row(req, row, cached=True)
        fut = asyncio.get_running_loop().create_future()
        self._inflight[req.key] = fut
        try:
            return await self._call(ann, req, skip_unpaid, held)
        finally:
            self._inflight.pop(req.key, None)
            fut.set_result(None)

    def _unhold(self, held: bool, req: Request) -> None:
        if held:
            self.guard.release(req.reserved)

    def budget_reached(self) -> str:
        """Why a call the ledger has no money left for is refused."""
        return (
            "project budget reached: the ledger already holds "
            f"{from_units(self.guard.committed_u):.6g} of {from_units(self.guard.limit_u):.6g} "
            "(calls from earlier runs that this run did not reuse count too)"
        )

    async def _call(
        self, ann: Annotator, req: Request, skip_unpaid: bool, held: bool = False
    ) -> Outcome:
        if not ann.available:
            self._unhold(held, req)
            return self._refuse(ann, req, f"endpoint declared dead: {ann.health.reason}")
        if req.refuse:  # e.g. an item too long for this annotator: recorded, not sent
            self._unhold(held, req)
            return self._refuse(ann, req, req.refuse)
        if not held and not self.guard.hold(req.reserved):
            if skip_unpaid:
                return self.overplanned(req.item_id, req.annotator)
            return self._refuse(ann, req, self.budget_reached())
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.concurrency)
        try:
            # the ``inflight`` row is written once the call has a slot: at most
            # ``concurrency`` rows can be in flight, so a kill cuts off at most that many
            async with self._sem:
                if not ann.available:  # it died while this call waited for a slot
                    self.guard.release(req.reserved)
                    return self._refuse(ann, req, f"endpoint declared dead: {ann.health.reason}")
                resp, parsed = await self._send(ann, req)
        except BaseException:
            self.guard.release(req.reserved)
            raise
        cost = resp.cost
        self.guard.settle(req.reserved, cost)
        status = "failed" if resp.status != "ok" else parsed.status
        out = Outcome(
            req.item_id,
            req.annotator,
            parsed.output if status == "ok" and req.kind == "annotate" else None,
            cost,
            status=status,  # type: ignore[arg-type]
            confidence=parsed.confidence,
            raw=self.redact(resp.raw) if resp.raw is not None else resp.error,
        )
        self.stats.new_calls += 1
        self.event(out)
        return out

    async def _send(self, ann: Annotator, req: Request) -> tuple[Response, Parsed]:
        """Write the ``inflight`` row, make the call, record its result (inside a slot)."""
        reports = bool(getattr(ann, "reports_sends", False))
        call_id = self.ledger.start_call(
            self.run_id, req.key, req.kind, req.item_id, req.annotator, ann.kind, ann.model,
            ann.api_base, req.prompt, req.params, req.reserved, sent=not reports,
        )  # fmt: skip

        def on_attempt(n: int, started: float, lat: float, outcome: str, err: str | None):
            if outcome == SENDING:  # committed before the request leaves (issue 37)
                self.ledger.mark_sent(call_id)
                return
            if outcome != "ok":  # successful tries are recorded with the call itself
                self.ledger.add_attempt(call_id, n, started, lat, outcome, self.redact(err))
                if reports and outcome not in MAYBE_BILLED:  # an error reply: not billed
                    self.ledger.mark_sent(call_id, sent=False)

        resp = await ann.call(req, on_attempt)
        parsed = ann.reads(req, self._parse(req, resp))
        status = "failed" if resp.status != "ok" else parsed.status
        cost = resp.cost
        if cost > req.reserved + 1e-12:
            log.warning(
                "call to %s cost %.6g, more than its reserved bound %.6g; raise "
                "prompt_token_margin or set max_tokens for this annotator",
                req.annotator,
                cost,
                req.reserved,
            )
        self.ledger.finish_call(
            call_id,
            status=status,
            output=parsed.output,
            confidence=parsed.confidence,
            parse_note=parsed.reason or None,
            **self._recorded(resp),
        )
        return resp, parsed

    def _recorded(self, resp: Response) -> dict[str, Any]:
        """What the ledger keeps of a response besides its parse (texts redacted); a reply
        cut at ``max_reply_chars`` says so in ``error``."""
        error = resp.error
        cut = (resp.extra or {}).get("truncated")
        if cut and resp.raw is not None:
            error = f"reply truncated: {cut} characters, {len(resp.raw)} kept (max_reply_chars)"
        return {
            "response_raw": self.redact(resp.raw), "error": self.redact(error),
            "cost": resp.cost, "cost_source": resp.cost_source, "token_cost": resp.token_cost,
            "prompt_tokens": resp.prompt_tokens, "completion_tokens": resp.completion_tokens,
            "latency_s": resp.latency, "attempts": resp.attempts,
        }  # fmt: skip

    def _parse(self, req: Request, resp: Response) -> Parsed:
        if resp.status != "ok":
            return Parsed("unparseable", None, "")
        conf = resp.confidence
        bad_conf = conf is not None and not 0.0 <= conf <= 1.0  # NaN too
        if req.kind == "confidence":
            if bad_conf:
                return Parsed("unparseable", None, f"confidence {conf:.6g} is not a probability")
            if conf is not None:
                return Parsed("ok", f"{conf:.6g}", confidence=conf)
            return parse_confidence(resp.raw)
        text = resp.extra.get("output", resp.raw) if resp.extra else resp.raw
        p = self._kind.parse(self.parser, text, req.item)
        if p.ok and bad_conf:  # the answer counts, its confidence is left out (said so)
            note = f"confidence {conf:.6g} is not a probability: left out"
            return Parsed(p.status, p.output, "; ".join(x for x in (p.reason, note) if x))
        if p.ok and conf is not None:
            return Parsed(p.status, p.output, p.reason, confidence=conf)
        return p

    def refuse(self, ann: Annotator, req: Request, why: str) -> Outcome:
        """Record ``req`` as a call not made (failed, at no cost) for the reason ``why``."""
        return self._refuse(ann, req, why)

    def _refuse(self, ann: Annotator, req: Request, why: str) -> Outcome:
        call_id = self.ledger.start_call(
            self.run_id, req.key, req.kind, req.item_id, req.annotator, ann.kind, ann.model,
            ann.api_base, req.prompt, req.params, 0.0,
        )  # fmt: skip
        self.ledger.finish_call(
            call_id, status="failed", error=why, cost=0.0, cost_source="not made", attempts=0
        )
        if why.startswith("project budget") and not self._guard_warned:
            self._guard_warned = True
            log.warning("%s", why)
        out = Outcome(req.item_id, req.annotator, None, 0.0, status="failed", raw=why)
        self.event(out)
        return out

    def _from_row(self, req: Request, row: Any, cached: bool) -> Outcome:
        status = row["status"]
        out = Outcome(
            req.item_id,
            req.annotator,
            row["output"] if status == "ok" and req.kind == "annotate" else None,
            float(row["cost"] or 0.0),
            status=status,
            confidence=row["confidence"],
            raw=row["response_raw"],
        )
        if cached:
            self.stats.cached += 1
        self.event(out)
        return out
