"""A small deterministic router for the live tests (independent of the real routers).

It uses every verb of the source: ``annotate_many`` (first pass), ``annotate`` (second
opinions, chosen from the first answers), ``confidence`` and the human arm, so a resumed
run must replay all of them identically.
"""

from __future__ import annotations

from collections import Counter
from typing import ClassVar

import numpy as np
import pandas as pd

from quorum.routing.core.base import AnnotationSource, Router, RoutingProblem, RoutingResult
from quorum.routing.core.budget import Budget
from quorum.routing.core.outputs import LABEL_COLUMNS
from quorum.routing.core.recorder import CallRecorder


class CascadeRouter(Router):
    name = "cascade"

    def __init__(
        self, batch: int = 4, confidence_every: int = 3, human_every: int = 4, second: float = 0.5
    ) -> None:
        self.batch = batch
        self.second = second
        self.confidence_every = confidence_every
        self.human_every = human_every

    def route(
        self, problem: RoutingProblem, source: AnnotationSource, budget: Budget, seed: int = 0
    ) -> RoutingResult:
        rng = np.random.default_rng(seed)
        rec = CallRecorder(problem.task, source, budget)
        ids = problem.item_ids
        alive = getattr(source, "is_available", lambda a: True)
        llms = [a.name for a in problem.llms]
        human = problem.task.human
        order = [ids[t] for t in rng.permutation(len(ids))]
        first = llms[0]
        for s in range(0, len(order), self.batch):
            chunk = order[s : s + self.batch]
            if alive(first):
                rec.annotate_many([(i, first) for i in chunk], phase="first")
        for k, i in enumerate(order):
            outs = rec.outputs(i)
            ask_conf = self.confidence_every and k % self.confidence_every == 0
            if (
                ask_conf
                and first in outs
                and rec.budget.can_afford(rec.source.confidence_price(first))
            ):
                rec.confidence(i, first)
            others = llms[1:]
            if others and (first not in outs or rng.random() < self.second):
                a = others[int(rng.integers(len(others)))]
                if alive(a) and rec.can_afford(a):
                    rec.annotate(i, a, phase="second")
            outs = rec.outputs(i)
            votes = Counter(outs.values())
            unsure = len(votes) != 1
            if (unsure or k % self.human_every == 0) and rec.can_afford(human):
                rec.annotate(i, human, phase="human")
        rows = []
        for i in ids:
            outs = rec.outputs(i)
            if human in outs:
                out = outs[human]
            elif outs:
                out = sorted(Counter(outs.values()).items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
            else:
                out = None
            agree = (sum(v == out for v in outs.values()) / len(outs)) if outs else 0.0
            rows.append(
                {
                    "item_id": i,
                    "output": out,
                    "n_annotations": len(rec.by_item.get(i, {})),
                    "agreement": agree,
                    "human": human in outs,
                    "annotators": ";".join(rec.by_item.get(i, {})),
                }
            )
        return RoutingResult(
            method=self.name,
            setting=problem.setting,
            seed=seed,
            labels=pd.DataFrame(rows, columns=LABEL_COLUMNS),
            annotations=rec.frame(),
            budget_limit=budget.limit,
            cost=budget.spent,
            human_labels=budget.human_used,
            llm_calls=rec.llm_calls,
            confidence_cost=rec.confidence_cost,
            confidence_calls=rec.confidence_calls,
        )


class CascadeWithQuality(CascadeRouter):
    """The cascade, taking the human arm's quality like QUORUM does (``human_quality``);
    ``seen`` records the value each instance was built with (the live runner sets it)."""

    seen: ClassVar[list[float]] = []

    def __init__(self, human_quality: float = 1.0, **kw) -> None:
        super().__init__(**kw)
        self.human_quality = human_quality
        CascadeWithQuality.seen.append(human_quality)
