"""Make paid calls through one place: reserve, call, settle, record.

Routers use :class:`CallRecorder` for every annotation and confidence call, so that no
call is ever made without a reservation and nothing paid for is lost from the record.
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
        human = self.is_human(annotator)
        res = self.budget.reserve(self.price(annotator), human=human)
        try:
            out = self.source.annotate(item_id, annotator)
        except BaseException:
            res.release()
            raise
        res.settle(out.cost, counted=human and out.status != "failed")
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
        return out

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
