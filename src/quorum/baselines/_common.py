"""Pieces shared by the baselines: the route template, human caps, label frames, the
decision trace, result building, ranking. The run's set-up, trace format and result are
the run core every router shares (:mod:`quorum.routing.core.run_core`,
:class:`~quorum.routing.core.trace.DecisionTrace`)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from quorum.errors import UnsupportedTaskError
from quorum.routing.core.base import AnnotationSource, Router, RoutingProblem, RoutingResult
from quorum.routing.core.budget import Budget
from quorum.routing.core.outputs import LABEL_COLUMNS
from quorum.routing.core.recorder import CallRecorder
from quorum.routing.core.run_core import RunCore, build_result
from quorum.routing.core.trace import DecisionTrace

#: phases whose calls exist only to estimate uncertainty (reported as confidence cost)
UNCERTAINTY_PHASES = ("confidence", "uncertainty")


def human_cap(problem: RoutingProblem, budget: Budget) -> int:
    """Most human labels a router may ask for (auditor: ``B``; dollars: every item)."""
    cap = problem.n_items
    if problem.setting == "auditor":
        cap = min(cap, int(problem.human_budget or 0))
    left = budget.humans_left
    if left is not None:
        cap = min(cap, max(0, int(left)))
    return max(0, cap)


def affordable_humans(rec: CallRecorder, cap: int, keep: float = 0.0) -> int:
    """How many human labels the money left (minus ``keep``) pays for, at most ``cap``."""
    c_h = rec.price(rec.human_name)
    money = rec.budget.remaining - keep
    if c_h <= 0:
        return cap
    return int(max(0, min(cap, np.floor(money / c_h + 1e-9))))


def require_labels(router: Router, problem: RoutingProblem) -> None:
    """Raise UnsupportedTaskError for summarization (ARAIDA, SANT)."""
    if not problem.task.type.has_labels:
        raise UnsupportedTaskError(
            f"{router.name} needs label-based confidence (a kNN/classifier over labels) and "
            f"cannot run on the summarization task {problem.task.name!r}; use random, "
            "coannotating, cdi, hypac or quorum for summaries"
        )


def require_llm(router: Router, problem: RoutingProblem) -> None:
    if not problem.llms:
        raise ValueError(
            f"{router.name} needs at least one machine annotator (LLM) in the task "
            f"{problem.task.name!r}; pass a panel with LLMs (e.g. --annotators)"
        )


class Routed(NamedTuple):
    """What a baseline's ``_route`` hands back: final labels, result info, decision trace
    (the one format, :func:`item_trace`)."""

    labels: pd.DataFrame
    info: dict[str, Any]
    trace: DecisionTrace | None = None


class BaselineRouter(Router):
    """Template of the paper's baselines. :meth:`route` checks the task (``needs_labels``,
    ``needs_llm``), opens the run (the shared run core,
    :meth:`~quorum.routing.core.run_core.RunCore.open`: ``default_rng(seed)`` and a
    :class:`CallRecorder` on the source and budget), calls :meth:`_route` (under
    ``threadpool_limits(n_threads)`` when ``n_threads`` is set) and builds the result
    (:func:`make_result`, through :func:`~quorum.routing.core.run_core.build_result`)."""

    #: refuse summaries (label-model baselines)
    needs_labels: bool = False
    #: refuse a task without a machine annotator
    needs_llm: bool = True
    #: BLAS/OpenMP threads while routing (None: leave the process setting alone)
    n_threads: int | None = None

    def route(
        self, problem: RoutingProblem, source: AnnotationSource, budget: Budget, seed: int = 0
    ) -> RoutingResult:
        limit = nullcontext() if self.n_threads is None else threadpool_limits(self.n_threads)
        with limit:
            if self.needs_labels:
                require_labels(self, problem)
            if self.needs_llm:
                require_llm(self, problem)
            run = RunCore.open(problem, source, budget, seed)
            out = self._route(run)
        return make_result(self, run, out)

    @abstractmethod
    def _route(self, run: RunCore) -> Routed:
        """The method's own rule, on an opened run."""


class LabelModelRouter(BaselineRouter):
    """Base of the routers that train a model over labels (ARAIDA, SANT): they refuse
    summaries, need no extra money, and route under ``threadpool_limits(n_threads)``
    (their numpy/scikit-learn models would otherwise take every core of a bench worker)."""

    needs_labels = True
    n_threads: int | None = 1
    uses_item_features = True  # a kNN / model over the item embeddings

    def extra_cost_estimate(self, problem: RoutingProblem, source: AnnotationSource) -> float:
        require_labels(self, problem)
        return 0.0


def ranked(scores: np.ndarray, rng: np.random.Generator, descending: bool = True) -> np.ndarray:
    """Indices sorted by score (NaN last), ties broken uniformly at random."""
    s = np.asarray(scores, dtype=np.float64)
    key = -s if descending else s.copy()
    key = np.where(np.isnan(key), np.inf, key)
    tie = rng.random(len(s))
    return np.lexsort((tie, key))


def label_frame(
    item_ids: Sequence[str],
    rec: CallRecorder,
    outputs: Mapping[str, str | None],
    agreement: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """Final labels: the human's output where there is one, else ``outputs[item]``.

    Same columns as :func:`quorum.routing.core.outputs.single_output_labels`.
    """
    rows = []
    for i in item_ids:
        outs = rec.outputs(i)
        h = next((o for a, o in outs.items() if rec.is_human(a)), None)
        out = h if h is not None else outputs.get(i)
        if out is None and outs:  # fall back to any usable answer
            out = next(iter(outs.values()))
        agr = 1.0 if h is not None else (agreement or {}).get(i, 1.0 if out is not None else 0.0)
        rows.append(
            {
                "item_id": i,
                "output": out,
                "n_annotations": len(rec.by_item.get(i, {})),
                "agreement": float(agr),
                "human": h is not None,
                "annotators": ";".join(rec.by_item.get(i, {})),
            }
        )
    return pd.DataFrame(rows, columns=LABEL_COLUMNS)


def uncertainty_spend(rec: CallRecorder) -> tuple[float, int]:
    """Cost and number of calls made only to estimate uncertainty.

    Verbalised-confidence calls (``CallRecorder.confidence``) plus the extra answers
    (other prompts / models) asked for in the ``"uncertainty"`` phase.
    """
    cost, calls = rec.confidence_cost, rec.confidence_calls
    for r in rec.rows:
        if r["phase"] == "uncertainty" and r["kind"] != "confidence":
            cost += float(r["cost"])
            calls += 1
    return cost, calls


def make_result(router: Router, run: RunCore, out: Routed) -> RoutingResult:
    """The baseline's result (the shared :func:`~quorum.routing.core.run_core.build_result`):
    its parameters first in ``info``, the money spent only on uncertainty apart."""
    info = {"params": router.get_params(), **out.info}
    conf = uncertainty_spend(run.rec)
    trace = None if out.trace is None else out.trace.frame()
    return build_result(router.name, run, out.labels, info, trace, confidence=conf)


def item_trace(
    run: RunCore,
    rows: Sequence[int] | np.ndarray,
    arm: Sequence[str] | np.ndarray,
    mode: Sequence[str] | np.ndarray,
    phase: Sequence[str] | np.ndarray | str = "route",
    **scores: np.ndarray,
) -> DecisionTrace:
    """A baseline's decisions in the one trace format
    (:class:`~quorum.routing.core.trace.DecisionTrace`): a row for each item ``t`` of ``rows``,
    in that order (the order the rule took the items), with ``arm[t]`` (where it went;
    ``"-"``: nowhere), ``mode[t]`` (why), ``phase[t]``, the arm's price and ``scores[k][t]``
    for each score the rule decided on (``priority``, ``uncertainty``, ``confidence``,
    ``p_human``). QUORUM's context fields (epsilon_t, b_t, p_t, money left) are NaN."""
    rows = np.asarray(rows, dtype=np.int64)
    arms = np.asarray(arm, dtype=object)[rows]
    prices = {a: (0.0 if a == "-" else run.rec.price(a)) for a in set(arms)}
    phases = [phase] * len(rows) if isinstance(phase, str) else np.asarray(phase)[rows]
    trace = DecisionTrace(run.llm_names)
    trace.extend(
        list(phases),
        list(run.ids[rows]),
        list(arms),
        list(np.asarray(mode, dtype=object)[rows]),
        np.array([prices[a] for a in arms], dtype=np.float64),
        **{k: np.asarray(v, dtype=np.float64)[rows] for k, v in scores.items()},
    )
    return trace


def item_vectors(problem: RoutingProblem) -> np.ndarray:
    """Unit-norm vectors for kNN: the item embeddings, else the standardised phi."""
    if problem.embeddings is not None:
        x = np.asarray(problem.embeddings, dtype=np.float32)
    else:
        p = problem.phi
        x = ((p - p.mean(0)) / (p.std(0) + 1e-9)).astype(np.float32)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return np.ascontiguousarray(x / np.where(n > 0, n, 1.0))
