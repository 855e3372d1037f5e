"""Phase 2 in one compiled call: every routing decision of
:func:`~quorum.routing.quorum.phase2.route_rest` under
:class:`~quorum.routing.quorum.phase2.LagrangianRule`,
then what the Python loop would have written (contexts asked, m_t, trace, calls).

For item j of the shuffled ``rest`` (item t, n_cal calibration items before it, T items):

- x_t = [phi(d_t), b_t, p_t, m_t = 0, 1] with b_t = max(0, left / B) (the plan's money
  left over the limit) and p_t = (n_cal + j) / T;
- q_a = mu_a^T x_t for every LLM (``np.dot``: the posteriors do not move in phase 2, no
  item settles before the loop ends);
- the LLMs that fit the :class:`~quorum.routing.core.budget.SpendingPlan` (allowance
  ``pool (j + 1) / n - extra_spent``, the floor ``(n - j - 1) c_min``), else the
  cheapest while the floor is covered; the human when it fits the plan and the
  :class:`~quorum.routing.core.budget.Budget` can reserve it;
- :func:`~quorum.routing.quorum.policy.lagrangian_choice` with epsilon_t = epsilon_0 / (1 + gamma
  (n_cal + j)) and the shadow price lambda; no arm at all: logged as arm ``"-"``.

Why the results are the Python loop's, bit for bit: each float is computed by the same
IEEE operations in the same order as :class:`SpendingPlan` and the rule; q_a by the same
BLAS dot product (``x @ mean_`` in numpy, ``np.dot`` here; the tests compare whole runs);
the random draws come from the run's own ``Generator`` (numba draws ``random()`` and
``integers(0, n)`` with numpy's algorithms, on the same state). The Budget only changes
when a batch of ``batch_size`` routed items is bought; in replay a call costs its price,
so the loop keeps the Budget's money in the same integer nano-units and reserves each
call of a batch in turn, as :meth:`~quorum.routing.core.recorder.CallRecorder.annotate_many`
does. Afterwards the recorder records the same calls in the same order: the batches whose
calls were all bought from the fixed answers
(:meth:`~quorum.routing.core.recorder.CallRecorder.record_known`), a batch the Budget cut short
(a human limit) by ``annotate_many`` itself; the Budget is then checked against the
loop's account. The items routed to the human settle as the Python loop settles them
(:func:`~quorum.routing.quorum.rewards.settle_many`).

Where it applies is decided with the run's other loops, in one place
(:mod:`~quorum.routing.quorum.loops`); the Python loop is the reference path
(tests/test_phase2_loop.py compares them).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from quorum.routing.core.budget import SpendingPlan
from quorum.routing.quorum.compiled.fixed_answers import gc_paused
from quorum.routing.quorum.policy import ESCALATE, SHADOW_PRICE, lagrangian_pick
from quorum.routing.quorum.run import QuorumRun

__all__ = ["MODES", "RouteCounts", "RouteSettings", "compiled_route", "route_loop"]

#: the trace's mode strings of the rule's mode codes (:data:`~quorum.routing.quorum.policy.
#: MODE_NAMES`; the Python loop logs "none" as "unaffordable" too)
MODES = ("explore", "exploit", "shadow-price", "escalate", "unaffordable")


class RouteSettings(NamedTuple):
    """The floats :func:`route_loop` reads, by name."""

    limit: float  # B, the Budget's limit
    left: float  # the SpendingPlan's money left
    working: float  # the working pool
    lam: float  # lambda, the shadow price
    human_quality: float
    tau_h: float
    epsilon0: float
    gamma: float


class RouteCounts(NamedTuple):
    """The integers :func:`route_loop` reads, by name."""

    n_cal: int
    T: int
    batch_size: int
    pacing: int


#: SpendingPlan's tolerance (budget._PLAN_EPS)
_EPS = 1e-9


@njit(cache=True, nogil=True)
def _plan_fits(c, c_h, c_min, cheapest, allow, keep, left, fits):  # pragma: no cover
    """SpendingPlan.fits of each LLM (into ``fits``; else the cheapest while the floor
    is covered) and of the human: (how many LLMs, whether the human fits the plan)."""
    nf = 0
    for k in range(c.shape[0]):
        if c[k] - c_min <= allow + _EPS and left - c[k] >= keep - _EPS:
            fits[nf] = k
            nf += 1
    if nf == 0 and left - c_min >= keep - _EPS:
        fits[0] = cheapest
        nf = 1
    return nf, c_h - c_min <= allow + _EPS and left - c_h >= keep - _EPS


@njit(cache=True, nogil=True)
def route_loop(rest, phi, bias, means, c, c_h, c_min, cheapest, units, money, s, counts, rng):
    """Every phase-2 decision of the items ``rest`` (in order).

    ``means`` (K, d): mu_a of the LLMs; ``c`` (K,), ``c_h``, ``c_min``: prices;
    ``cheapest``: the first cheapest LLM; ``units`` (K + 1,): the prices in nano-units,
    the human last. ``money``: [Budget units left, human labels left, 1 if there is a
    human limit]. ``s``: the :class:`RouteSettings`; ``counts``: the :class:`RouteCounts`.

    Returns (arm (-1 none, k an LLM, K the human), mode code, X (n, d), Q (n, K),
    epsilon_t, Budget units left at each decision, routed items at each batch's end,
    whether each routed call was bought, [units left, human labels left] at the end).
    """  # pragma: no cover - compiled
    n, (K, d), m = rest.shape[0], means.shape, phi.shape[1]
    limit, left, working = s.limit, s.left, s.working
    n_cal, T, batch, pacing = counts.n_cal, counts.T, counts.batch_size, counts.pacing != 0
    rem, humans_left, h_limited = money[0], money[1], money[2] != 0
    arm, mode = np.empty(n, np.int64), np.empty(n, np.int8)
    X, Q, eps = np.zeros((n, d)), np.empty((n, K)), np.empty(n)
    units_left = np.empty(n, np.int64)
    ends, n_ends = np.empty(n // batch + 2, np.int64), 0
    pending, n_pend = np.empty(batch, np.int64), 0
    made = np.ones(n, np.bool_)  # per routed call: bought (else the Budget refused it)
    routed, extra, fits = 0, 0.0, np.empty(K, np.int64)
    for j in range(n):
        # x_t = [phi, b, p, m = 0, 1] and q_a = mu_a^T x_t
        v, x, q = left / limit, X[j], Q[j]
        x[:m] = phi[rest[j]]
        x[m], x[m + 1] = (v if v > 0.0 else 0.0), (n_cal + j) / T
        if bias:
            x[d - 1] = 1.0
        for k in range(K):
            q[k] = np.dot(x, means[k])
        eps[j] = s.epsilon0 / (1.0 + s.gamma * (n_cal + j))
        units_left[j] = rem
        # SpendingPlan.allowance and .keep, then the arms that fit
        allow = (working * (j + 1) / n if pacing else working) - extra
        nf, plan_h = _plan_fits(c, c_h, c_min, cheapest, allow, (n - j - 1) * c_min, left, fits)
        human_ok = plan_h and not (h_limited and humans_left < 1) and units[K] <= rem
        pick, mode[j] = lagrangian_pick(
            q, c, c_h, fits, nf, human_ok, s.lam, s.human_quality, s.tau_h, eps[j], rng
        )
        human = mode[j] == SHADOW_PRICE or mode[j] == ESCALATE
        arm[j] = fits[pick] if pick >= 0 else (K if human else -1)
        if arm[j] < 0:
            continue
        price = c_h if arm[j] == K else c[arm[j]]
        left -= price
        extra += price - c_min
        pending[n_pend] = arm[j]
        n_pend, routed = n_pend + 1, routed + 1
        if n_pend >= batch or j == n - 1:  # run.flush: the batch is bought
            rem, humans_left = _buy(
                pending, n_pend, made[routed - n_pend :], units, K, rem, humans_left, h_limited
            )
            n_pend, ends[n_ends], n_ends = 0, routed, n_ends + 1
    if n_pend > 0:  # the last item was not routed
        rem, humans_left = _buy(
            pending, n_pend, made[routed - n_pend :], units, K, rem, humans_left, h_limited
        )
        ends[n_ends], n_ends = routed, n_ends + 1
    end = np.array([rem, humans_left])
    return arm, mode, X, Q, eps, units_left, ends[:n_ends].copy(), made[:routed].copy(), end


@njit(cache=True, nogil=True)
def _buy(pending, n_pend, made, units, K, rem, humans_left, h_limited):  # pragma: no cover
    """A batch as CallRecorder.annotate_many buys it from a replay source: each call
    reserved in turn if it fits (else not made: ``made[i]`` False), then paid at its
    price."""
    for i in range(n_pend):
        a = pending[i]
        if (a == K and h_limited and humans_left < 1) or units[a] > rem:
            made[i] = False
            continue
        rem -= units[a]
        if a == K:
            humans_left -= 1
    return rem, humans_left


def compiled_route(
    run: QuorumRun, n_cal: int, rest: list[int], plan: SpendingPlan, working: float, lam: float
) -> list[int]:
    """Phase 2 of ``rest`` by :func:`route_loop`, then the contexts asked, m_t, the trace
    and the calls bought, as the Python loop leaves them. Returns the items routed to the
    human (the only ones of ``rest`` that can have a human label).

    Python's cyclic garbage collector is paused meanwhile: recording a million calls makes
    millions of objects (outcomes, the recorder's entries), none in a reference cycle, and
    the collections they set off walked every live object again and again (4 of the 10.7
    CPU s of phase 2 at a million items; with the pause 6.5 s in all)."""
    with gc_paused():
        return _compiled_route(run, n_cal, rest, plan, working, lam)


def _compiled_route(
    run: QuorumRun, n_cal: int, rest: list[int], plan: SpendingPlan, working: float, lam: float
) -> list[int]:
    """:func:`compiled_route` itself."""
    arms, budget, K = run.arms, run.budget, run.K
    if not rest:
        return []
    rest_a = np.asarray(rest, dtype=np.int64)
    humans_left = budget.humans_left
    arm, mode, X, Q, eps, units_left, ends, made, end = _decide(
        run, n_cal, rest_a, plan, working, lam
    )
    arms.t_explore = n_cal + len(rest) - 1
    # the contexts asked and m_t, in the order of the Python loop's mark_asked
    took = np.flatnonzero(arm >= 0)
    t_took, a_took = rest_a[took], arm[took]
    names = [*run.llm_names, run.human]
    cols = np.array([arms.asked.col[a] for a in names], dtype=np.int64)
    arms.asked.put_many(t_took, cols[a_took], X[took])
    llm = a_took < K
    arms.mask[t_took[llm], a_took[llm]] = 1.0
    # the trace: one row per item of rest
    item_ids = _take(run.ids, rest_a)
    arm_col = _take([*names, "-"], arm)  # code -1 reads the last
    prices = np.array([run.rec.price(a) for a in names], dtype=np.float64)
    ctx = arms.ctx
    run.trace.extend(
        ["route"] * len(rest), item_ids, arm_col, _take(list(MODES), mode),
        np.append(prices, 0.0)[arm], epsilon=eps, b_t=X[:, ctx.b_index],
        p_t=X[:, ctx.p_index], budget_left=units_left / 1_000_000_000, q=Q,
    )  # fmt: skip
    reqs = [(item_ids[j], arm_col[j]) for j in took.tolist()]
    _record(run, reqs, t_took, a_took, ends, made)
    got = [budget.remaining_units, budget.humans_left]
    want = [int(end[0]), None if humans_left is None else int(end[1])]
    if got != want:
        raise RuntimeError(f"compiled phase 2 and the budget disagree: {want} vs {got}")
    return t_took[a_took == K].tolist()


def _decide(
    run: QuorumRun, n_cal: int, rest: np.ndarray, plan: SpendingPlan, working: float, lam: float
) -> tuple:
    """:func:`route_loop` on the run's prices, money, posterior means and parameters."""
    cfg, sp, budget = run.cfg, run.spend, run.budget
    money = np.array(budget.units_state(), dtype=np.int64)
    units = run.loops.fixed.price_units
    s = RouteSettings(
        float(budget.limit), float(plan.left), float(working), float(lam),
        float(cfg.human_quality), float(cfg.tau_h), float(cfg.epsilon0), float(cfg.gamma),
    )  # fmt: skip
    counts = RouteCounts(int(n_cal), int(run.T), int(cfg.batch_size), int(cfg.pacing))
    means = np.ascontiguousarray(np.stack([run.arms.post[a].mean_ for a in run.llm_names]))
    cheapest = int(np.argsort(sp.c, kind="stable")[0])
    c = np.asarray(sp.c, dtype=np.float64)
    return route_loop(
        rest, run.arms.ctx.phi, run.arms.ctx.bias, means, c, float(sp.c_h), float(sp.c_min),
        cheapest, units, money, s, counts, run.rng,
    )  # fmt: skip


def _record(run: QuorumRun, reqs: list, t_took, a_took, ends, made) -> None:
    """The calls, batch by batch as run.flush buys them: a batch whose calls were all
    bought is recorded from the fixed answers, one the Budget cut short is bought."""
    known = run.loops.fixed.outcomes([i for i, _ in reqs], t_took, a_took, [a for _, a in reqs])
    start, todo = 0, 0  # batches [todo, start) are known and not recorded yet
    for stop in [*ends.tolist(), None]:
        if stop is None or not made[start:stop].all():
            if todo < start:
                run.rec.record_known(known[todo:start], phase="route")
            if stop is None:
                break
            run.rec.annotate_many(reqs[start:stop], phase="route")
            todo = stop
        start = stop


def _take(values: list, idx: np.ndarray) -> list:
    """``[values[i] for i in idx]`` (the same objects), by numpy's indexing."""
    table = np.empty(len(values), dtype=object)
    table[:] = values
    return table[idx].tolist()
