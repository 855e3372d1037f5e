"""Phase 3 in one compiled call: when it applies, the arrays it needs, and what it hands
back to the run (the recorder, the posteriors, the contexts asked, the trace).

It applies in replay (a source with fixed answers, :mod:`~quorum.routing.fixed_answers`)
for labels with :class:`~quorum.routing.phase3.ValueRule`, the numba posteriors and
``loop_backend="numba"``; everywhere else :func:`~quorum.routing.phase3.refine` runs its
Python loop, the reference this one is tested against (tests/test_phase3_loop.py).

The compiled loop reads each answer when it buys it; afterwards the recorder records the
same calls in the same order (:meth:`~quorum.routing.recorder.CallRecorder.record_known`:
the outcomes the source gives for them, charged at their price, which the loop's money
checks guarantee fits), so the log, the budget and the human count end as the Python
loop leaves them.
"""

from __future__ import annotations

import numpy as np

from quorum.routing.base import Outcome
from quorum.routing.budget import to_units
from quorum.routing.fixed_answers import AnswerCodes
from quorum.routing.run import QuorumRun

__all__ = ["LoopState", "applies", "compiled_refine", "compiled_settle"]


def applies(run: QuorumRun) -> AnswerCodes | None:
    """The fixed answers when the compiled steps apply to ``run``, else None."""
    cfg, posts = run.cfg, list(run.arms.post.values())
    if (
        cfg.loop_backend != "numba"
        or run.summ
        or run.spend._is_available is not None
        or run.rec._prior
        or any(p._k is None for p in [*posts, run.arms.post_h])
    ):
        return None
    return run.fixed_answers()


class LoopState:
    """The run's state as the compiled steps read it: each item's usable answers (arm
    codes in the order given) and the arms asked, the posteriors stacked (LLMs, then the
    human), the money, the parameters. Built from the run before a step; :meth:`write_back`
    hands the posteriors and the consensus counts back after it."""

    def __init__(self, run: QuorumRun, fixed: AnswerCodes, items: np.ndarray) -> None:
        cfg, arms, budget, K = run.cfg, run.arms, run.budget, run.K
        self.names = [*run.llm_names, run.human]
        self.codes = fixed.codes.astype(np.int64)
        self.price_u = np.array([to_units(p) for p in fixed.prices], dtype=np.int64)
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
        left = budget.humans_left
        self.money = np.array(
            [
                budget._limit_u - budget._spent_u - budget._reserved_u,
                0 if left is None else left,
                0 if left is None else 1,
            ],
            dtype=np.int64,
        )
        limit = budget.limit if budget._limit_u else 0.0
        c_min = run.spend.c_min
        self.cfg = np.array(
            [cfg.w_human, cfg.w_llm, cfg.consensus_threshold, cfg.epsilon0, cfg.gamma, limit, c_min]
        )
        calibrated = cfg.agreement_reward_value == "calibrated"
        self.ints = np.array(
            [
                K,
                run.T,
                cfg.max_annotations,
                int(cfg.escalate_disagreement),
                int(cfg.agreement_reward),
                int(calibrated),
                len(run.p.task.labels or []),
                every.pop(),
                int(arms.ctx.bias),
                max(1, cfg.priority_refresh),
                to_units(c_min),
            ],
            dtype=np.int64,
        )

    def write_back(self, run: QuorumRun) -> None:
        """The posteriors and the consensus counts, as the Python steps leave them."""
        run.arms.agreed_seen = (int(self.seen[0]), int(self.seen[1]))
        for j, p in enumerate(self.post_objs):
            p.cov_, p.mean_ = self.post[0][j].copy(), self.post[1][j].copy()
            p.precision_, p.eta_ = self.post[2][j].copy(), self.post[3][j].copy()
            p.n_updates_ = int(self.post[4][j])


def compiled_settle(run: QuorumRun, fixed: AnswerCodes, items: list[int]) -> None:
    """:func:`~quorum.routing.rewards.settle` of ``items`` in turn (nothing is bought
    meanwhile, so b_t is the same for all), by
    :func:`~quorum.routing.phase3_kernel.settle_items`."""
    from quorum.routing.phase3_kernel import settle_items

    items = np.asarray(items, dtype=np.int64)
    st, arms = LoopState(run, fixed, items), run.arms
    ctx = arms.asked
    settle_items(
        items, st.codes, st.order, st.n_out, st.asked, ctx._row,
        ctx._buf, ctx._rewarded, arms.settled, st.seen, st.post, st.cfg, st.ints,
        arms.ctx.phi, arms.mask, run.budget.remaining_fraction,
    )  # fmt: skip
    st.write_back(run)


def compiled_refine(run: QuorumRun, fixed: AnswerCodes, items, n_asked: np.ndarray) -> None:
    """Phase 3 by :func:`~quorum.routing.phase3_kernel.refine_loop` from the open items
    ``items`` (:class:`~quorum.routing.phase3._Open`); ``n_asked`` is updated in place."""
    from quorum.routing.phase3_kernel import MODES, refine_loop

    st, arms, K = LoopState(run, fixed, np.flatnonzero(items.open)), run.arms, run.K
    ctx = arms.asked
    n_max = int(np.maximum(run.cfg.max_annotations - n_asked[items.open], 0).sum())
    pick_t = np.empty(n_max, dtype=np.int64)
    pick_arm = np.empty(n_max, dtype=np.int64)
    pick_mode = np.empty(n_max, dtype=np.int64)
    pick_f = np.empty((n_max, 6))
    pick_q = np.empty((n_max, K))
    _picks, t_explore, n_rows, n_buf, buf = refine_loop(
        st.codes, st.price_u, fixed.prices, st.order, st.n_out, st.asked, n_asked,
        arms.mask, arms.ctx.phi, st.post, ctx._row, ctx._buf, ctx._n, ctx._rewarded,
        arms.settled, st.seen, items.prio, items.open, items.delta, items.has_h,
        items.no_answer, st.money, st.cfg, st.ints, run.rng,
        pick_t, pick_arm, pick_mode, pick_f, pick_q,
    )  # fmt: skip
    # the state the Python loop would have left
    ctx._buf, ctx._n = buf, int(n_buf)
    st.write_back(run)
    if t_explore >= 0:
        arms.t_explore = int(t_explore)
    n = int(n_rows)
    t_of, arm_of = pick_t[:n], pick_arm[:n]
    ids = [run.ids[t] for t in t_of.tolist()]
    arm_names = [st.names[a] for a in arm_of.tolist()]
    f = pick_f[:n]
    run.trace.extend(
        ["extra"] * n, ids, arm_names, [MODES[m] for m in pick_mode[:n].tolist()], f[:, 3],
        f[:, 5], epsilon=f[:, 0], b_t=f[:, 1], p_t=f[:, 2], budget_left=f[:, 4], q=pick_q[:n],
    )  # fmt: skip
    run.rec.record_known(_outcomes(fixed, ids, t_of, arm_of, arm_names), phase="extra")


def _outcomes(fixed: AnswerCodes, ids: list[str], t_of, arm_of, arm_names) -> list[Outcome]:
    """The outcomes the source gives for the calls (item t_of[i], arm arm_of[i])."""
    codes = fixed.codes[t_of, arm_of].tolist()
    cost = fixed.prices[arm_of].tolist()
    labels = fixed.labels
    return [
        Outcome(i, a, labels[y], c, "ok") if y >= 0 else Outcome(i, a, None, c, "unparseable")
        for i, a, y, c in zip(ids, arm_names, codes, cost, strict=True)
    ]


def _answers_so_far(run: QuorumRun, names: list[str], items: np.ndarray):
    """Each of ``items``' usable answers (arm codes, in the order given), their count and
    the arms asked (the recorder's ``by_item``); other items' rows stay empty (the
    compiled steps touch only ``items``)."""
    T, A = run.T, len(names)
    col = {a: j for j, a in enumerate(names)}
    order = np.full((T, A), -1, dtype=np.int64)
    n_out = np.zeros(T, dtype=np.int64)
    asked = np.zeros((T, A), dtype=np.bool_)
    by_item, usable = run.rec.by_item, run.rec._usable
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
