"""A pairwise judge asked in both orders (``swap = true`` on a machine annotator).

:class:`SwapAnnotator` wraps one machine annotator (an LLM endpoint or a local model). For
each item it makes two calls, each recorded in the ledger as its own call: the pair as
given, then the pair with its two outputs exchanged (its request key is derived from the
inner annotator's, so it can never be served as another item's first order). The second
verdict is mapped back to the original numbering when it is parsed
(:meth:`~quorum.tasks.base.TaskKind.swap_back`), so every ``calls.output`` names an output
of the item as the items file numbers it. The two verdicts make the judge's answer by its
``swap_rule`` (:func:`quorum.tasks.pairwise.combine_swap`; default ``"consistent"``: the
verdict both orders give, an inconsistent pair is no answer).

Money (:func:`execute_swap`): the judge's price is the two calls together; both
reservations are held in the project's money guard before the first request leaves, so a
pair is never started that the budget cannot finish. A first order that fails stops the
pair (its second call is not made); a pair whose calls are both answered is recorded in the
ledger's ``swap_pairs`` (each order's verdict, their consistency, the judge's answer, the
cost), written before the calls (so the second order's call is known as such) and
completed after them. The router gets one outcome per pair, at the cost of both calls:
``ok`` with the judge's answer, ``unparseable`` (paid, no vote) for an inconsistent pair
under ``"consistent"`` or a verdict that could not be read, ``failed`` if a call failed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from quorum.live.ledger.store import Ledger
from quorum.live.machines.calls import (
    Annotator,
    AttemptHook,
    CallKind,
    Request,
    Response,
    request_key,
)
from quorum.live.machines.machine_calls import DEFERRED, MachineCalls
from quorum.routing.core.base import Outcome
from quorum.routing.core.budget import from_units, to_units
from quorum.tasks.base import ItemView, TaskKind
from quorum.tasks.pairwise import combine_swap
from quorum.tasks.parsing import Parsed


class SwapAnnotator(Annotator):
    """One machine annotator asked on each item in both orders (one arm for the router).

    Parameters
    ----------
    inner : the annotator that makes each call.
    swapped : each item's view with its two outputs exchanged
        (:meth:`~quorum.tasks.base.TaskKind.swapped_view`), by item id.
    kind : the task's kind (maps the second verdict back).
    rule : ``swap_rule``: how the two verdicts make the answer.
    """

    def __init__(
        self, inner: Annotator, swapped: Mapping[str, ItemView], kind: TaskKind, rule: str
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.kind = inner.kind
        self.model = inner.model
        self.api_base = inner.api_base
        self.reports_sends = inner.reports_sends
        self.health = inner.health
        self.swapped = dict(swapped)
        self.task_kind = kind
        self.rule = rule
        self._second: set[str] = set()

    def __repr__(self) -> str:
        return f"SwapAnnotator({self.name!r}, rule={self.rule!r})"

    @property
    def available(self) -> bool:
        return self.inner.available

    def price(self) -> float:
        """Both calls: what the router reserves for one pair."""
        return from_units(2 * to_units(self.inner.price()))

    def confidence_price(self) -> float:
        return self.inner.confidence_price()

    @property
    def gives_confidence(self) -> bool:
        return self.inner.gives_confidence

    def request(self, item: ItemView, kind: CallKind, prediction: str | None = None) -> Request:
        """The first order's request (and a confidence call on it)."""
        return self.inner.request(item, kind, prediction)

    def orders(self, item: ItemView) -> tuple[Request, Request]:
        """The two requests of a pair: as given, and with the outputs exchanged."""
        first = self.inner.request(item, "annotate")
        other = self.inner.request(self.swapped[item.item_id], "annotate")
        second = dataclasses.replace(other, key=request_key({"swapped": other.key}))
        self._second.add(second.key)
        return first, second

    async def call(self, req: Request, on_attempt: AttemptHook) -> Response:
        return await self.inner.call(req, on_attempt)

    def reads(self, req: Request, parsed: Parsed) -> Parsed:
        """The second order's verdict in the original numbering (its raw answer stays in
        ``calls.response_raw``)."""
        if req.key not in self._second or parsed.output is None:
            return parsed
        back = self.task_kind.swap_back(parsed.output)
        note = f"asked with the outputs exchanged: answered {parsed.output!r}, read as {back!r}"
        reason = f"{parsed.reason}; {note}" if parsed.reason else note
        return Parsed(parsed.status, back, reason, parsed.confidence)

    def close(self) -> None:
        self.inner.close()


async def execute_swap(
    calls: MachineCalls, ann: SwapAnnotator, item: ItemView, *, frozen: bool, skip_unpaid: bool
) -> Outcome:
    """Both orders of ``item`` for ``ann``: served from the ledger where answered, else
    made one after the other with both reservations held first (see the module
    docstring); returns the pair's outcome for the router."""
    first, second = ann.orders(item)
    ledger = calls.ledger
    ledger.start_pair(item.item_id, ann.name, first.key, second.key, ann.rule)
    todo = {r.key for r in (first, second) if ledger.completed(r.key) is None}
    todo_reqs = [r for r in (first, second) if r.key in todo]
    held = False
    if todo:
        if frozen:
            return Outcome(item.item_id, ann.name, None, 0.0, status="failed", raw=DEFERRED)
        if ann.available and not any(r.refuse for r in todo_reqs):
            # both calls' money is held before the first request leaves
            if not calls.guard.hold(from_units(sum(to_units(r.reserved) for r in todo_reqs))):
                if skip_unpaid:
                    return calls.overplanned(item.item_id, ann.name)
                why = calls.budget_reached()
                for r in todo_reqs:
                    calls.refuse(ann, r, why)
                return Outcome(item.item_id, ann.name, None, 0.0, status="failed", raw=why)
            held = True
    outs: list[Outcome] = []
    for r in (first, second):
        mine = held and r.key in todo
        if outs and outs[-1].status == "failed":  # the pair cannot be finished: no 2nd call
            if mine:
                calls.guard.release(r.reserved)
            break
        outs.append(await calls.execute(ann, r, frozen=frozen, skip_unpaid=skip_unpaid, held=mine))
    return _pair_outcome(ledger, ann, item.item_id, (first, second), outs)


def _pair_outcome(
    ledger: Ledger,
    ann: SwapAnnotator,
    item_id: str,
    reqs: tuple[Request, Request],
    outs: list[Outcome],
) -> Outcome:
    """The router's outcome of a pair (and its ``swap_pairs`` row once both are answered)."""
    cost = from_units(sum(to_units(o.cost) for o in outs))
    verdicts = [o.output if o.status == "ok" else None for o in outs]
    done = len(outs) == 2 and all(o.status in ("ok", "unparseable") for o in outs)
    if not done:
        why = next((o.raw for o in outs if o.status not in ("ok", "unparseable")), None)
        return Outcome(item_id, ann.name, None, cost, status="failed",
                       raw=f"swap: the pair is not complete ({why or 'not made'})")  # fmt: skip
    y1, y2 = verdicts
    answer, consistent = combine_swap(y1, y2, ann.rule)
    ledger.finish_pair(
        item_id, ann.name, reqs[0].key, reqs[1].key, rule=ann.rule, first=y1, second=y2,
        consistent=None if consistent is None else int(consistent), answer=answer, cost=cost,
    )  # fmt: skip
    said = "consistent" if consistent else ("inconsistent" if consistent is False else "unread")
    raw = f"swap ({ann.rule}): given order {y1 or '-'}, swapped order {y2 or '-'}: {said}"
    conf = None
    if consistent and all(o.confidence is not None for o in outs):
        conf = sum(float(o.confidence or 0.0) for o in outs) / 2
    status = "ok" if answer is not None else "unparseable"
    return Outcome(item_id, ann.name, answer, cost, status=status, confidence=conf, raw=raw)


def pair_from_ledger(ledger: Ledger, ann: SwapAnnotator, item: ItemView) -> Outcome | None:
    """A pair's outcome from the ledger alone, nothing called (an answer handed to the
    router as a prior outcome); None where neither order was answered. A pair with one
    order answered is a paid answer without a vote."""
    reqs = ann.orders(item)
    rows = [ledger.completed(r.key) for r in reqs]
    if all(r is None for r in rows):
        return None
    outs = [
        Outcome(item.item_id, ann.name, row["output"] if row["status"] == "ok" else None,
                float(row["cost"] or 0.0), status=row["status"], confidence=row["confidence"])
        if row is not None
        else Outcome(item.item_id, ann.name, None, 0.0, status="failed", raw="not made")
        for row in rows
    ]  # fmt: skip
    out = _pair_outcome(ledger, ann, item.item_id, reqs, outs)
    if out.status == "failed":  # one order paid, the other never made: no vote
        return dataclasses.replace(out, status="unparseable")
    return out
