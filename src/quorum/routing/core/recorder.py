"""Make paid calls through one place: reserve, call, settle, record.

Routers use :class:`CallRecorder` for every annotation and confidence call, so that no
call is ever made without a reservation and nothing paid for is lost from the record.

A source may hold annotations the router did not ask for (live: human answers to tasks an
earlier pass sent). If it has ``prior_outcomes()``, they are recorded first (phase
``prior``, charged to the budget) and a later request for the same (item, annotator) is
answered from them without a second charge.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import pandas as pd

from quorum.data.schema import GOLD_HUMAN, TaskSpec
from quorum.routing.core.base import AnnotationSource, Outcome
from quorum.routing.core.budget import Budget, to_units

#: columns of :meth:`CallRecorder.frame`, one per call recorded
COLUMNS = ("item_id", "annotator", "output", "status", "cost", "phase", "step", "kind")


class CallLog:
    """Every call recorded, one list per column (a list of dicts costs ~10x the memory).

    >>> log = CallLog()
    >>> log.append("i1", "gpt", "A", "ok", 0.01, "route", 1, "llm")
    >>> len(log), log.rows()[0]["output"], log.frame().shape
    (1, 'A', (1, 8))
    """

    def __init__(self) -> None:
        self.columns: dict[str, list[Any]] = {c: [] for c in COLUMNS}
        self._appenders = [col.append for col in self.columns.values()]

    def append(self, *values: Any) -> None:
        """One call: values in the order of :data:`COLUMNS`."""
        for add, v in zip(self._appenders, values, strict=True):
            add(v)

    def __len__(self) -> int:
        return len(self.columns["step"])

    def rows(self) -> list[dict[str, Any]]:
        """The calls as dicts (built on demand)."""
        rows = zip(*self.columns.values(), strict=True)
        return [dict(zip(COLUMNS, vals, strict=True)) for vals in rows]

    def frame(self) -> pd.DataFrame:
        if not len(self):
            return pd.DataFrame([], columns=list(COLUMNS))
        return pd.DataFrame(self.columns, columns=list(COLUMNS))


class CallRecorder:
    def __init__(self, task: TaskSpec, source: AnnotationSource, budget: Budget) -> None:
        self.task = task
        self.source = source
        self.budget = budget
        self.human_name = task.human
        self.log = CallLog()
        self.by_item: dict[str, dict[str, Outcome]] = defaultdict(dict)
        #: usable outputs per item (what :meth:`outputs` returns), kept as calls come in
        self._usable: dict[str, dict[str, str]] = {}
        self.confidence_cost = 0.0
        self.confidence_calls = 0
        self.llm_calls = 0
        self._step = 0
        self._prior: dict[tuple[str, str], Outcome] = {}
        prior = getattr(source, "prior_outcomes", None)
        for out in prior() if callable(prior) else []:
            self._record_prior(out)

    @property
    def usable_by_item(self) -> dict[str, dict[str, str]]:
        """item id -> {annotator: usable output}, as recorded (read it, never change it)."""
        return self._usable

    @property
    def has_prior(self) -> bool:
        """Whether the recorder started with earlier outcomes (a resumed live pass)."""
        return bool(self._prior)

    def _record_prior(self, out: Outcome) -> None:
        human = self.is_human(out.annotator)
        if not self.budget.can_afford(out.cost, human=human):
            return
        self.budget.reserve(out.cost, human=human).settle(out.cost, counted=human and out.ok)
        self._prior[(out.item_id, out.annotator)] = out
        self._step += 1
        kind = "human" if human else "llm"
        self.log.append(
            out.item_id, out.annotator, out.output, out.status, out.cost, "prior", self._step, kind
        )
        self._keep(out.item_id, out.annotator, out)

    def _keep(self, item_id: str, annotator: str, out: Outcome) -> None:
        """File an outcome under its item (a repeated call replaces the earlier one)."""
        answers = self.by_item[item_id]
        again = annotator in answers
        answers[annotator] = out
        if again:  # keep the order of by_item: rebuild the item's usable outputs
            self._usable[item_id] = {a: o.output for a, o in answers.items() if o.ok}
        elif out.ok:
            self._usable.setdefault(item_id, {})[annotator] = out.output

    @property
    def rows(self) -> list[dict[str, Any]]:
        """Every call recorded, as dicts (see :meth:`frame` for a DataFrame)."""
        return self.log.rows()

    def is_human(self, annotator: str) -> bool:
        return annotator == self.human_name or annotator == GOLD_HUMAN

    def human_names(self) -> tuple[str, str]:
        """The names :meth:`is_human` takes for the human."""
        return (self.human_name, GOLD_HUMAN)

    def price(self, annotator: str) -> float:
        return self.source.price(annotator)

    def can_afford(self, annotator: str, keep: float = 0.0) -> bool:
        return self.budget.can_afford(
            self.price(annotator), human=self.is_human(annotator), keep=keep
        )

    def annotate(self, item_id: str, annotator: str, phase: str = "") -> Outcome:
        """Reserve the price, call the source, settle the real cost, record the outcome."""
        if (item_id, annotator) in self._prior:
            return self._prior[(item_id, annotator)]
        human = self.is_human(annotator)
        res = self.budget.reserve(self.price(annotator), human=human)
        try:
            out = self.source.annotate(item_id, annotator)
        except BaseException:
            res.release()
            raise
        self._settle_and_record(res, out, item_id, annotator, phase)
        return out

    def annotate_many(self, requests: list[tuple[str, str]], phase: str = "") -> list[Outcome]:
        """Reserve every request first, then let the source answer them together.

        Requests that cannot be reserved are not made; their slot in the result is None.
        """
        reservations = []
        for item_id, annotator in requests:
            if (item_id, annotator) in self._prior:
                reservations.append(None)
                continue
            human = self.is_human(annotator)
            price = self.price(annotator)
            if self.budget.can_afford(price, human=human):
                reservations.append(self.budget.reserve(price, human=human))
            else:
                reservations.append(None)
        todo = [r for r, res in zip(requests, reservations, strict=True) if res is not None]
        try:
            answers = iter(self.source.annotate_many(todo) if todo else [])
        except BaseException:
            for res in reservations:
                if res is not None:
                    res.release()
            raise
        outs: list[Outcome | None] = []
        for (item_id, annotator), res in zip(requests, reservations, strict=True):
            if res is None:
                outs.append(self._prior.get((item_id, annotator)))
                continue
            out = next(answers)
            self._settle_and_record(res, out, item_id, annotator, phase)
            outs.append(out)
        return outs

    def record_known(self, outcomes: list[Outcome], phase: str = "") -> None:
        """Calls whose answers were known before they were made (a source's fixed
        answers, :mod:`~quorum.routing.quorum.compiled.fixed_answers`), each paid at its cost: the
        budget,
        the log and the answers end as :meth:`annotate_many` of the same requests leaves
        them (no call may fail or be pending; a human label counts). Raises, recording
        nothing, when they do not all fit the budget."""
        is_human = [self.is_human(o.annotator) for o in outcomes]
        n_h = sum(is_human)
        self.budget.charge_many(sum(to_units(o.cost) for o in outcomes), len(outcomes), n_h)
        self.llm_calls += len(outcomes) - n_h
        cols = self.log.columns
        cols["item_id"].extend([o.item_id for o in outcomes])
        cols["annotator"].extend([o.annotator for o in outcomes])
        cols["output"].extend([o.output for o in outcomes])
        cols["status"].extend([o.status for o in outcomes])
        cols["cost"].extend([o.cost for o in outcomes])
        cols["phase"].extend([phase] * len(outcomes))
        cols["step"].extend(range(self._step + 1, self._step + 1 + len(outcomes)))
        cols["kind"].extend(["human" if h else "llm" for h in is_human])
        self._step += len(outcomes)
        keep = self._keep
        for o in outcomes:
            keep(o.item_id, o.annotator, o)

    def _settle_and_record(self, res, out: Outcome, item_id: str, annotator: str, phase: str):
        human = self.is_human(annotator)
        res.settle(out.cost, counted=human and out.status not in ("failed", "pending"))
        if not human:
            self.llm_calls += 1
        self._step += 1
        kind = "human" if human else "llm"
        self.log.append(
            item_id, annotator, out.output, out.status, out.cost, phase, self._step, kind
        )
        self._keep(item_id, annotator, out)

    def confidence(self, item_id: str, annotator: str, phase: str = "confidence") -> Outcome:
        """A paid verbalised-confidence call (uncertainty baselines)."""
        res = self.budget.reserve(self.source.confidence_price(annotator))
        try:
            out = self.source.confidence(item_id, annotator)
        except BaseException:
            res.release()
            raise
        res.settle(out.cost)
        if out.cost > 0 or out.status == "ok":
            self.confidence_calls += 1
            self.confidence_cost += out.cost
            self._step += 1
            self.log.append(
                item_id,
                annotator,
                None if out.confidence is None else f"{out.confidence:.6g}",
                out.status,
                out.cost,
                phase,
                self._step,
                "confidence",
            )
        return out

    def outputs(self, item_id: str) -> dict[str, str]:
        """Usable outputs collected so far for an item, by annotator (a copy)."""
        return dict(self._usable.get(item_id, _NONE))

    def usable(self, item_id: str) -> Mapping[str, str]:
        """As :meth:`outputs`, without the copy: read it, never change it."""
        return self._usable.get(item_id, _NONE)

    def asked(self, item_id: str) -> set[str]:
        return set(self.by_item.get(item_id, {}))

    def frame(self) -> pd.DataFrame:
        return self.log.frame()


_NONE: Mapping[str, str] = {}
