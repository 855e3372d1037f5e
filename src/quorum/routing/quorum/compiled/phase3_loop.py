"""Phase 3 in one compiled call: when it applies, the arrays it needs, and what it hands
back to the run (the recorder, the posteriors, the contexts asked, the trace).

It applies in replay (a source with fixed answers,
:mod:`~quorum.routing.quorum.compiled.fixed_answers`)
for labels with :class:`~quorum.routing.quorum.phase3.ValueRule`, the numba posteriors and
``loop_backend="numba"``; everywhere else :func:`~quorum.routing.quorum.phase3.refine` runs its
Python loop, the reference this one is tested against (tests/test_phase3_loop.py).

The compiled loop reads each answer when it buys it; afterwards the recorder records the
same calls in the same order (:meth:`~quorum.routing.core.recorder.CallRecorder.record_known`:
the outcomes the source gives for them, charged at their price, which the loop's money
checks guarantee fits), so the log, the budget and the human count end as the Python
loop leaves them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from quorum.routing.core.budget import to_units
from quorum.routing.quorum.compiled.coded_sets import OutputCoding
from quorum.routing.quorum.compiled.fixed_answers import AnswerCodes, gc_paused
from quorum.routing.quorum.run import QuorumRun

__all__ = ["LoopState", "compiled_refine", "compiled_settle", "output_coding"]


class LoopSettings(NamedTuple):
    """The floats the compiled phase 3 and rewards read, by name."""

    w_human: float
    w_llm: float
    threshold: float  # the consensus threshold
    epsilon0: float
    gamma: float
    limit: float  # B (0.0 without a limit)
    c_min: float


class LoopCounts(NamedTuple):
    """The integers (and flags, 0/1) the compiled phase 3 and rewards read, by name."""

    K: int  # LLMs
    T: int  # items
    max_annotations: int
    escalate_disagreement: int
    agreement_reward: int
    calibrated: int  # agreement_reward_value == "calibrated"
    n_labels: int
    refresh_every: int
    bias: int  # x_t ends with a bias 1
    priority_refresh: int
    c_min_units: int
    asked_rows: int  # rows of the AskedContexts buffer in use


class LoopState:
    """The run's state as the compiled steps read it: each item's usable answers (arm
    codes in the order given) and the arms asked, the posteriors stacked (LLMs, then the
    human), the money, the parameters. Built from the run before a step; :meth:`write_back`
    hands the posteriors and the consensus counts back after it."""

    def __init__(self, run: QuorumRun, fixed: AnswerCodes, items: np.ndarray) -> None:
        cfg, arms, budget, K = run.cfg, run.arms, run.budget, run.K
        self.names = [*run.llm_names, run.human]
        self.codes = fixed.codes.astype(np.int64)
        self.coding = output_coding(run, fixed)
        sets = self.coding.sets == 1
        self.price_u = fixed.price_units
        self.order, self.n_out, self.asked = _answers_so_far(run, self.names, items)
        self.post_objs = [arms.post[a] for a in run.llm_names] + [arms.post_h]
        objs = self.post_objs
        self.post = (
            np.stack([p.cov_ for p in objs]),
            np.stack([p.mean_ for p in objs]),
            np.stack([p.precision_ for p in objs]),
            np.stack([p.eta_ for p in objs]),
            np.array([p.n_updates_ for p in objs], dtype=np.int64),
            np.array([p.noise_var for p in objs]),
        )
        every = {p.refresh_every for p in objs}
        if len(every) != 1:
            raise ValueError("the compiled loops need one refresh_every for every posterior")
        self.seen = np.array(arms.agreed_seen, dtype=np.int64)
        self.money = np.array(budget.units_state(), dtype=np.int64)
        limit = budget.limit if budget.limit_units else 0.0
        c_min = run.spend.c_min
        self.cfg = LoopSettings(
            float(cfg.w_human), float(cfg.w_llm), float(cfg.consensus_threshold),
            float(cfg.epsilon0), float(cfg.gamma), float(limit), float(c_min),
        )  # fmt: skip
        self.ints = LoopCounts(
            K=int(K),
            T=int(run.T),
            max_annotations=int(cfg.max_annotations),
            escalate_disagreement=int(cfg.escalate_disagreement),
            agreement_reward=int(cfg.agreement_reward),
            calibrated=int(cfg.agreement_reward_value == "calibrated" and not sets),
            n_labels=len(run.p.task.labels or []),
            refresh_every=int(every.pop()),
            bias=int(arms.ctx.bias),
            priority_refresh=max(1, int(cfg.priority_refresh)),
            c_min_units=int(to_units(c_min)),
            asked_rows=int(arms.asked.rows),
        )

    def write_back(self, run: QuorumRun) -> None:
        """The posteriors and the consensus counts, as the Python steps leave them."""
        run.arms.agreed_seen = (int(self.seen[0]), int(self.seen[1]))
        for j, p in enumerate(self.post_objs):
            p.cov_, p.mean_ = self.post[0][j].copy(), self.post[1][j].copy()
            p.precision_, p.eta_ = self.post[2][j].copy(), self.post[3][j].copy()
            p.n_updates_ = int(self.post[4][j])

    def ans(self, n_asked: np.ndarray) -> tuple:
        """The answers' tuple of the compiled steps
        (:mod:`~quorum.routing.quorum.compiled.coded_answers`), the outputs' coding last."""
        return (self.codes, self.order, self.n_out, self.asked, n_asked, self.coding)


def output_coding(run: QuorumRun, fixed: AnswerCodes) -> OutputCoding:
    """What the codes of ``fixed`` stand for: labels, or label sets (``fixed.bits``) voted
    with the parameters of the run's aggregator
    (:class:`~quorum.tasks.multilabel.LabelSetVote`)."""
    none = np.zeros(0, dtype=np.int64)
    if fixed.bits is None:
        return OutputCoding(0, none, none, len(run.p.task.labels or []), 0.5, 0.0, 0, -1)
    agg = run.answers.agg
    max_labels = -1 if agg.max_labels is None else int(agg.max_labels)
    return OutputCoding(
        1, fixed.bits, fixed.text_rank, len(run.kind.labels), float(agg.support),
        float(agg.tolerance), int(agg.min_labels), max_labels,
    )  # fmt: skip


def _ctx(run: QuorumRun) -> tuple:
    """The contexts' tuple of the compiled steps: AskedContexts' arrays, phi, m_t."""
    asked = run.arms.asked
    return (asked.row_of, asked.buffer, asked.rewarded_mask, run.arms.ctx.phi, run.arms.mask)


def compiled_settle(run: QuorumRun, fixed: AnswerCodes, items: list[int]) -> None:
    """:func:`~quorum.routing.quorum.rewards.settle` of ``items`` in turn (nothing is bought
    meanwhile, so b_t is the same for all), by
    :func:`~quorum.routing.quorum.compiled.coded_rewards.settle_items`."""
    from quorum.routing.quorum.compiled.coded_rewards import settle_items

    items = np.asarray(items, dtype=np.int64)
    st = LoopState(run, fixed, items)
    ans = st.ans(np.zeros(0, dtype=np.int64))
    rf = run.budget.remaining_fraction
    settle_items(items, ans, _ctx(run), st.post, st.seen, run.arms.settled, st.cfg, st.ints, rf)
    st.write_back(run)


def compiled_refine(run: QuorumRun, fixed: AnswerCodes, n_asked: np.ndarray) -> None:
    """Phase 3 by :func:`~quorum.routing.quorum.compiled.phase3_kernel.refine_loop`, from the items
    not
    settled with fewer than ``max_annotations`` calls; ``n_asked`` is updated in place."""
    from quorum.routing.quorum.compiled.phase3_kernel import MODES, refine_loop

    arms, K, T = run.arms, run.K, run.T
    open_ = (~arms.settled) & (n_asked < run.cfg.max_annotations)
    st = LoopState(run, fixed, np.flatnonzero(open_))
    n_max = int(np.maximum(run.cfg.max_annotations - n_asked[open_], 0).sum())
    arms.asked.reserve(n_max)  # room for every context a pick can store
    out = (
        np.empty(n_max, dtype=np.int64),
        np.empty(n_max, dtype=np.int64),
        np.empty(n_max, dtype=np.int64),
        np.empty((n_max, 6)),
        np.empty((n_max, K)),
    )
    items = (np.empty(T), open_, np.zeros(T), np.zeros(T), np.zeros(T, dtype=np.bool_))
    t_explore, cnt = refine_loop(
        st.ans(n_asked), _ctx(run), st.post, st.seen, arms.settled, items, st.money,
        st.price_u, fixed.prices, st.cfg, st.ints, run.rng, out,
    )  # fmt: skip
    # the state the Python loop would have left
    arms.asked.rows = int(cnt[4])
    st.write_back(run)
    if t_explore >= 0:
        arms.t_explore = int(t_explore)
    n = int(cnt[3])
    t_of, arm_of, f = out[0][:n], out[1][:n], out[3][:n]
    ids = [run.ids[t] for t in t_of.tolist()]
    arm_names = [st.names[a] for a in arm_of.tolist()]
    run.trace.extend(
        ["extra"] * n, ids, arm_names, [MODES[m] for m in out[2][:n].tolist()], f[:, 3],
        f[:, 5], epsilon=f[:, 0], b_t=f[:, 1], p_t=f[:, 2], budget_left=f[:, 4], q=out[4][:n],
    )  # fmt: skip
    with gc_paused():
        run.rec.record_known(fixed.outcomes(ids, t_of, arm_of, arm_names), phase="extra")


def _answers_so_far(run: QuorumRun, names: list[str], items: np.ndarray):
    """Each of ``items``' usable answers (arm codes, in the order given), their count and
    the arms asked (the recorder's ``by_item``); other items' rows stay empty (the
    compiled steps touch only ``items``)."""
    T, A = run.T, len(names)
    col = {a: j for j, a in enumerate(names)}
    order = np.full((T, A), -1, dtype=np.int64)
    n_out = np.zeros(T, dtype=np.int64)
    asked = np.zeros((T, A), dtype=np.bool_)
    by_item, usable = run.rec.by_item, run.rec.usable_by_item
    ids = run.ids
    for t in items.tolist():
        i = ids[t]
        got = by_item.get(i)
        if not got:
            continue
        for a in got:
            asked[t, col[a]] = True
        outs = usable.get(i)
        if outs:
            for j, a in enumerate(outs):
                order[t, j] = col[a]
            n_out[t] = len(outs)
    return order, n_out, asked
