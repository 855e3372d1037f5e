"""The state of one QUORUM run, split by concept, and the steps every plan buys with.

- :class:`~quorum.routing.quorum.answers.Answers`: the answers and votes;
- :class:`~quorum.routing.quorum.arms.ArmModels`: the arm models and contexts;
- :class:`Spending`: the prices, the budget and the recorder of the calls paid for;
- :class:`~quorum.routing.quorum.audit.label_state.LabelModelState`: the label model;
- :class:`~quorum.routing.quorum.report.RunReport`: what the run reports (never read back);
- :class:`~quorum.routing.core.trace.DecisionTrace`: one row per decision.

:class:`QuorumRun` holds them and the three ways a plan spends money: :meth:`QuorumRun.buy`
(one arm on many items), :meth:`QuorumRun.send_split` (humans on the first items, an LLM
on the rest) and :meth:`QuorumRun.flush` (phase 2's routed batch). The flow that decides
what to buy is :mod:`~quorum.routing.quorum.flow`.
"""

from __future__ import annotations

import numpy as np

from quorum.routing.core.base import AnnotationSource, RoutingProblem
from quorum.routing.core.budget import Budget
from quorum.routing.core.recorder import CallRecorder
from quorum.routing.core.run_core import RunCore
from quorum.routing.core.trace import DecisionTrace
from quorum.routing.quorum.answers import Answers
from quorum.routing.quorum.arms import ArmModels
from quorum.routing.quorum.audit.label_state import LabelModelState
from quorum.routing.quorum.compiled.fixed_answers import AnswerCodes, gc_paused
from quorum.routing.quorum.loops import Loops, choose_loops
from quorum.routing.quorum.params import QuorumParams
from quorum.routing.quorum.report import RunReport

__all__ = ["QuorumRun", "Spending"]

_EPS = 1e-9


class Spending:
    """Prices c_a (LLMs, cheapest first), c_H and c_min, the budget and the recorder."""

    def __init__(
        self, rec: CallRecorder, budget: Budget, llm_names: list[str], human: str, batch: int
    ) -> None:
        self.rec = rec
        self.budget = budget
        self.llm_names = llm_names
        self.c = np.array([rec.price(a) for a in llm_names])
        self.c_h = rec.price(human)
        self.c_min = float(self.c.min())
        self.batch_size = batch
        self._is_available = getattr(rec.source, "is_available", None)

    @property
    def checks_liveness(self) -> bool:
        """Whether the source says, per arm, whether it still answers (live sources)."""
        return self._is_available is not None

    def alive(self, k: int) -> bool:
        """False once a live source has declared arm k's endpoint dead."""
        check = self._is_available
        return True if check is None else bool(check(self.llm_names[k]))

    def live_cheapest(self) -> list[int]:
        """The live LLMs, cheapest first (ties in panel order)."""
        return [int(k) for k in np.argsort(self.c, kind="stable") if self.alive(int(k))]

    def send(self, reqs: list[tuple[str, str]], phase: str) -> None:
        """Buy ``reqs`` in batches of ``batch_size`` (concurrent for live sources)."""
        for i in range(0, len(reqs), self.batch_size):
            self.rec.annotate_many(reqs[i : i + self.batch_size], phase=phase)


class QuorumRun:
    """One run of :class:`~quorum.routing.quorum.router.QuorumRouter` (kept out of the estimator,
    scikit-learn style)."""

    def __init__(
        self,
        cfg: QuorumParams,
        problem: RoutingProblem,
        source: AnnotationSource,
        budget: Budget,
        seed: int,
        method: str = "quorum",
    ) -> None:
        self.cfg = cfg
        self.method = method
        self.core = RunCore.open(problem, source, budget, seed)
        self.p = problem
        self.budget = budget
        self.rng = self.core.rng
        self.rec = self.core.rec
        #: the task's kind (:mod:`quorum.tasks`): its aggregation, agreement and scores
        self.kind = problem.task.kind
        self.ids: list[str] = problem.item_ids.tolist()
        self.T = len(self.ids)
        self.llm_names = self.core.llm_names
        self.K = len(self.llm_names)
        self.human = problem.task.human
        self.spend = Spending(self.rec, budget, self.llm_names, self.human, cfg.batch_size)
        self.arms = ArmModels(cfg, problem, self.llm_names, self.human)
        agg = self.kind.aggregator(cfg.w_human, cfg.w_llm, cfg.consensus_threshold)
        self.answers = Answers(
            self.rec,
            self.ids,
            self.human,
            agg,
            (cfg.w_human, cfg.w_llm),
            lambda t: self.arms.trust_order(t, self.budget.remaining_fraction),
        )
        self.labels = LabelModelState(cfg, problem, self.answers, self.llm_names)
        self.report = RunReport()
        self.trace = DecisionTrace(self.llm_names)
        self._loops: Loops | None = None  # chosen at the first look

    @property
    def loops(self) -> Loops:
        """The loops this run takes, Python or compiled (:mod:`~quorum.routing.quorum.loops`:
        the one place that decides); chosen at the first look."""
        if self._loops is None:
            self._loops = choose_loops(self)
        return self._loops

    def compiled_answers(self) -> AnswerCodes | None:
        """The source's fixed answers as codes where the compiled steps apply, else None."""
        return self.loops.fixed

    def buy_calls(self, reqs: list[tuple[int, str]], phase: str) -> None:
        """Buy the calls (item index, annotator) together: with fixed answers, recorded at
        once (:meth:`~quorum.routing.core.recorder.CallRecorder.record_known`) when they all fit
        the budget; else as :meth:`~quorum.routing.core.recorder.CallRecorder.annotate_many`
        (which skips a call it cannot reserve)."""
        fixed = self.loops.fixed
        if fixed is not None and reqs:
            col = {a: j for j, a in enumerate([*self.llm_names, self.human])}
            t_of = np.array([t for t, _ in reqs], dtype=np.int64)
            arm_of = np.array([col[a] for _, a in reqs], dtype=np.int64)
            units = int(fixed.price_units[arm_of].sum())
            if self.budget.can_afford_many(units, int((arm_of == self.K).sum())):
                ids = [self.ids[t] for t in t_of.tolist()]
                with gc_paused():
                    outs = fixed.outcomes(ids, t_of, arm_of, [a for _, a in reqs])
                    self.rec.record_known(outs, phase=phase)
                return
        self.rec.annotate_many([(self.ids[t], a) for t, a in reqs], phase=phase)

    # ------------------------------------------------------------ the trace
    def log(
        self,
        t: int,
        phase: str,
        arm: str,
        mode: str,
        x: np.ndarray | None,
        q: np.ndarray | None,
        priority: float | None = None,
    ) -> None:
        """One decision: item t to ``arm`` (``mode`` says why), with x_t and q_a(x_t)."""
        ctx = self.arms.ctx
        self.trace.append(
            phase,
            self.ids[t],
            arm,
            mode,
            self.arms.epsilon(),
            float(x[ctx.b_index]) if x is not None else np.nan,
            float(x[ctx.p_index]) if x is not None else np.nan,
            self.rec.price(arm) if arm != "-" else 0.0,
            self.budget.remaining,
            priority,
            q,
        )

    # ------------------------------------------------------------ buying
    def label_model_fits(self) -> bool:
        """The label model runs at this size (``label_model_max_items``); reported."""
        fits = self.labels.fits
        self.report.label_model = "on" if fits else "off: more items than label_model_max_items"
        return fits

    def buy(
        self,
        items: np.ndarray,
        arm: str,
        mode: str,
        X: np.ndarray | None = None,
        Q: np.ndarray | None = None,
    ) -> None:
        """One answer of ``arm`` on each of ``items`` it has not been asked on yet: logged
        (with the rows of ``X`` and ``Q`` as x_t and q_a(x_t) when given), then bought in
        batches. An (item, annotator) pair is never paid twice."""
        items = np.asarray(items, dtype=int)
        new = ~self.answers.asked(items, arm)
        if not new.all():
            items = items[new]
            X = None if X is None else X[new]
            Q = None if Q is None else Q[new]
        for i, t in enumerate(items):
            x, q = (None, None) if X is None or Q is None else (X[i], Q[i])
            self.log(int(t), "route", arm, mode, x, q)
        self.spend.send([(self.ids[t], arm) for t in items], "route")

    def send_split(
        self,
        rest: np.ndarray,
        n_h: int,
        cheap: str,
        human_mode: str,
        X: np.ndarray | None = None,
        Q: np.ndarray | None = None,
    ) -> None:
        """The first ``n_h`` items of ``rest`` to the human, the others to ``cheap``."""
        for i, t in enumerate(rest):
            arm, mode = (self.human, human_mode) if i < n_h else (cheap, "llm")
            x = None if X is None else X[i]
            self.log(int(t), "route", arm, mode, x, None if Q is None else Q[i])
        reqs = [(self.ids[t], self.human) for t in rest[:n_h]]
        reqs += [(self.ids[t], cheap) for t in rest[n_h:]]
        self.spend.send(reqs, "route")

    def flush(self, pending: list[tuple[int, str]]) -> None:
        """Buy phase 2's routed batch (one concurrent request)."""
        if pending:
            self.rec.annotate_many([(self.ids[t], a) for t, a in pending], phase="route")
            pending.clear()

    def contexts_now(self, rest: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray]:
        """x_t (no LLM in m_t, b_t = money left) and mu_a^T x_t of the items ``rest``:
        what the trace keeps of an audit's decisions, as in bandit routing."""
        X = self.arms.unasked_contexts(rest, self.budget.remaining_fraction, p)
        return X, self.arms.q_means(X)
