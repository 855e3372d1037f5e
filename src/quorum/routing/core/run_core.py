"""What every router's run opens with and how it hands back its result (one core).

QUORUM (:mod:`~quorum.routing.quorum.router`), the paper preset
(:mod:`~quorum.routing.paper.router`)
and the baselines (:mod:`quorum.baselines`) all open a run the same way
(:meth:`RunCore.open`: the problem, the budget, ``default_rng(seed)`` and a
:class:`~quorum.routing.core.recorder.CallRecorder` of the calls paid for) and all build
their :class:`~quorum.routing.core.base.RoutingResult` with :func:`build_result`. Every
router's decision trace is one format, :class:`~quorum.routing.core.trace.DecisionTrace`
(a baseline's through :func:`quorum.baselines._common.item_trace`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from quorum.routing.core.base import AnnotationSource, RoutingProblem, RoutingResult
from quorum.routing.core.budget import Budget
from quorum.routing.core.recorder import CallRecorder

__all__ = ["RunCore", "build_result"]


@dataclass
class RunCore:
    """The problem, the budget, the seeded generator and the recorder of one run."""

    problem: RoutingProblem
    budget: Budget
    seed: int
    rng: np.random.Generator
    rec: CallRecorder

    @classmethod
    def open(
        cls, problem: RoutingProblem, source: AnnotationSource, budget: Budget, seed: int
    ) -> RunCore:
        """A fresh run: ``default_rng(seed)`` and a recorder on ``source`` and ``budget``."""
        rng = np.random.default_rng(seed)
        return cls(problem, budget, seed, rng, CallRecorder(problem.task, source, budget))

    @property
    def source(self) -> AnnotationSource:
        return self.rec.source

    @property
    def ids(self) -> np.ndarray:
        return self.problem.item_ids

    @property
    def T(self) -> int:
        return len(self.problem.item_ids)

    @property
    def human(self) -> str:
        return self.problem.task.human

    @property
    def llm_names(self) -> list[str]:
        """The machine annotators, cheapest first (as the task lists them)."""
        return [a.name for a in self.problem.llms]


def build_result(
    method: str,
    core: RunCore,
    labels: pd.DataFrame,
    info: dict[str, Any],
    trace: pd.DataFrame | None = None,
    *,
    annotations: pd.DataFrame | None = None,
    confidence: tuple[float, int] = (0.0, 0),
) -> RoutingResult:
    """The :class:`RoutingResult` of a finished run: its labels, the calls the recorder
    paid for (or ``annotations``), the money spent, the trace and the report ``info``."""
    budget, rec = core.budget, core.rec
    return RoutingResult(
        method=method,
        setting=core.problem.setting,
        seed=core.seed,
        labels=labels,
        annotations=rec.frame() if annotations is None else annotations,
        budget_limit=budget.limit,
        cost=budget.spent,
        human_labels=budget.human_used,
        llm_calls=rec.llm_calls,
        confidence_cost=confidence[0],
        confidence_calls=confidence[1],
        trace=trace,
        info=info,
    )
