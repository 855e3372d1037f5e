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

import pandas as pd

from quorum.data.schema import GOLD_HUMAN, TaskSpec
from quorum.routing.base import AnnotationSource, Outcome
from quorum.routing.budget import Budget


class CallRecorder:
    def __init__(self, task: TaskSpec, source: AnnotationSource, budget: Budget) -> None:
        self.task = task
        self.source = source
        self.budget = budget
        self.human_name = task.human
        self.rows: list[dict] = []
        self.by_item: dict[str, dict[str, Outcome]] = defaultdict(dict)
        self.confidence_cost = 0.0
        self.confidence_calls = 0
        self.llm_calls = 0
        self._step = 0
        self._prior: dict[tuple[str, str], Outcome] = {}
        prior = getattr(source, "prior_outcomes", None)
        for out in prior() if callable(prior) else []:
            self._record_prior(out)

    def _record_prior(self, out: Outcome) -> None:
        human = self.is_human(out.annotator)
        if not self.budget.can_afford(out.cost, human=human):
            return
        self.budget.reserve(out.cost, human=human).settle(out.cost, counted=human and out.ok)
        self._prior[(out.item_id, out.annotator)] = out
        self._step += 1
        self.rows.append(
            {
                "item_id": out.item_id,
                "annotator": out.annotator,
                "output": out.output,
                "status": out.status,
                "cost": out.cost,
                "phase": "prior",
                "step": self._step,
                "kind": "human" if human else "llm",
            }
        )
        self.by_item[out.item_id][out.annotator] = out

    def is_human(self, annotator: str) -> bool:
        return annotator == self.human_name or annotator == GOLD_HUMAN

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

    def _settle_and_record(self, res, out: Outcome, item_id: str, annotator: str, phase: str):
        human = self.is_human(annotator)
        res.settle(out.cost, counted=human and out.status not in ("failed", "pending"))
        if not human:
            self.llm_calls += 1
        self._step += 1
        self.rows.append(
            {
                "item_id": item_id,
                "annotator": annotator,
                "output": out.output,
                "status": out.status,
                "cost": out.cost,
                "phase": phase,
                "step": self._step,
                "kind": "human" if human else "llm",
            }
        )
        self.by_item[item_id][annotator] = out

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
            self.rows.append(
                {
                    "item_id": item_id,
                    "annotator": annotator,
                    "output": None if out.confidence is None else f"{out.confidence:.6g}",
                    "status": out.status,
                    "cost": out.cost,
                    "phase": phase,
                    "step": self._step,
                    "kind": "confidence",
                }
            )
        return out

    def outputs(self, item_id: str) -> dict[str, str]:
        """Usable outputs collected so far for an item, by annotator."""
        return {a: o.output for a, o in self.by_item.get(item_id, {}).items() if o.ok}

    def asked(self, item_id: str) -> set[str]:
        return set(self.by_item.get(item_id, {}))

    def frame(self) -> pd.DataFrame:
        cols = ["item_id", "annotator", "output", "status", "cost", "phase", "step", "kind"]
        return pd.DataFrame(self.rows, columns=cols)
