"""Phase 3's refinement loop, compiled (numba): :func:`~quorum.routing.quorum.phase3.refine`
with :class:`~quorum.routing.quorum.phase3.ValueRule`, over integer-coded answers, for a
source with fixed answers. Read :func:`refine_loop` top to bottom; each step is the
Python loop's, in its order, with the same float operations:

- the pick: the open item of highest P_t = D_t + Delta_t + 1(no human label), ties to the
  lowest index (a heap with stale entries skipped, as
  :class:`~quorum.routing.quorum.refinement.PriorityQueue`); every open item's P_t again each
  max(``priority_refresh``, open/50 + 1) picks;
- the money: the :class:`~quorum.routing.core.budget.Budget`'s integer nano-units, a first
  answer kept for every other unanswered item, the human limit;
- the arm: the human on disagreement (``escalate_disagreement``), else the value rule
  (:func:`~quorum.routing.quorum.policy.value_choice`; its draws come from the run's numpy
  Generator, which numba advances with numpy's bits);
- the answer: read from the codes when bought; the item settles
  (:mod:`~quorum.routing.quorum.compiled.coded_rewards`) and closes on consensus, a human label or
  ``max_annotations``, else gets its new P_t.

State tuples as in :mod:`~quorum.routing.quorum.compiled.coded_answers`, and ``items = (prio, open,
delta, has_h, no_answer)``, ``heap = (-P_t, t)`` arrays, ``cnt = [open items, open items
without an answer, heap size, picks written, contexts stored]``, ``out = (item, arm,
mode, [epsilon_t, b_t, p_t, price, money left, P_t], q)`` per pick.
:mod:`~quorum.routing.quorum.compiled.phase3_loop` lays the arrays out and writes the outcome back.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from quorum.routing.quorum.compiled.coded_answers import (
    agreement,
    context,
    delta,
    scratch,
    trust_rank,
    value,
    vote,
)
from quorum.routing.quorum.compiled.coded_rewards import settle
from quorum.routing.quorum.compiled.kernels import mean_quad_rows
from quorum.routing.quorum.policy import EXPLORE, NONE, value_pick

__all__ = ["MODES", "refine_loop"]

#: mode codes of the picks; NONE: nothing to gain, the item closes
MODES = ("disagreement", "value", "explore")
_DISAGREEMENT, _VALUE, _EXPLORE, _NONE = 0, 1, 2, -1
_N_OPEN, _N_UNANSWERED, _SIZE, _N_ROWS, _N_BUF = 0, 1, 2, 3, 4


# ------------------------------------------------------------------ the heap of picks
@njit(cache=True, inline="always")
def _less(na, ta, nb, tb):  # pragma: no cover - compiled
    return na < nb or (na == nb and ta < tb)


@njit(cache=True)
def _sift_down(hn, ht, size, i):  # pragma: no cover - compiled
    while True:
        best, left = i, 2 * i + 1
        for c in (left, left + 1):
            if c < size and _less(hn[c], ht[c], hn[best], ht[best]):
                best = c
        if best == i:
            return
        hn[i], hn[best] = hn[best], hn[i]
        ht[i], ht[best] = ht[best], ht[i]
        i = best


@njit(cache=True)
def _push(heap, cnt, neg, t):  # pragma: no cover - compiled
    hn, ht = heap
    i = cnt[_SIZE]
    cnt[_SIZE] += 1
    hn[i], ht[i] = neg, t
    while i > 0 and _less(hn[i], ht[i], hn[(i - 1) // 2], ht[(i - 1) // 2]):
        p = (i - 1) // 2
        hn[i], hn[p] = hn[p], hn[i]
        ht[i], ht[p] = ht[p], ht[i]
        i = p


@njit(cache=True)
def _build(heap, cnt, items):  # pragma: no cover - compiled
    """Every open item's (-P_t, t), heapified bottom-up in O(n)."""
    hn, ht = heap
    prio, open_ = items[0], items[1]
    size = 0
    for t in range(prio.shape[0]):
        if open_[t]:
            hn[size], ht[size] = -prio[t], t
            size += 1
    for i in range(size // 2 - 1, -1, -1):
        _sift_down(hn, ht, size, i)
    cnt[_SIZE] = size


@njit(cache=True)
def _top(heap, cnt, items):  # pragma: no cover - compiled
    """The open item of highest P_t (lowest index among ties): stale heads dropped."""
    hn, ht = heap
    prio, open_ = items[0], items[1]
    while not (open_[ht[0]] and -hn[0] == prio[ht[0]]):
        cnt[_SIZE] -= 1
        hn[0], ht[0] = hn[cnt[_SIZE]], ht[cnt[_SIZE]]
        _sift_down(hn, ht, cnt[_SIZE], 0)
    return ht[0]


# ------------------------------------------------------------------ open items
@njit(cache=True)
def _priorities(ctx, cov_llm, items, rf, p, bias):  # pragma: no cover - compiled
    """Every open item's P_t at b_t = rf, p_t = p (blocks of rows; a row's D_t does not
    depend on the others)."""
    phi, mask = ctx[3], ctx[4]
    prio, open_, delt, has_h = items[0], items[1], items[2], items[3]
    idx = np.flatnonzero(open_)
    block = 4096
    X = np.empty((block, phi.shape[1] + 2 + mask.shape[1] + (1 if bias else 0)))
    for start in range(0, idx.shape[0], block):
        m = min(block, idx.shape[0] - start)
        for i in range(m):
            context(X[i], phi, idx[start + i], rf, p, mask[idx[start + i]], bias)
        D = mean_quad_rows(X[:m], cov_llm)
        for i in range(m):
            t = idx[start + i]
            prio[t] = D[i] + delt[t] + (1.0 - has_h[t])


@njit(cache=True)
def _open_items(ans, ctx, post, seen, settled, items, cnt, cfg, ints, rf, work):
    """phase3._Open: open items whose answers agree settle and close; the others get
    Delta_t, 1(human), whether they have an answer, and P_t."""
    codes, order, n_out, asked = ans[0], ans[1], ans[2], ans[3]
    prio, open_, delt, has_h, no_answer = items
    K, T = ints.K, ints.T
    for t in range(T):
        n = n_out[t]
        if (
            open_[t]
            and n >= 2
            and agreement(codes[t], order[t], n, K, cfg.w_human, cfg.w_llm, ans[5], work)
            >= cfg.threshold
        ):
            settle(t, ans, ctx, post, seen, settled, cfg, ints, rf, work)
            open_[t] = False
    cnt[_N_OPEN], cnt[_N_UNANSWERED] = 0, 0
    for t in range(T):
        prio[t] = -np.inf
        if open_[t]:
            cnt[_N_OPEN] += 1
            no_answer[t] = n_out[t] == 0
            cnt[_N_UNANSWERED] += 1 if no_answer[t] else 0
            delt[t] = delta(codes[t], order[t], n_out[t], ans[5], work)
            has_h[t] = 1.0 if asked[t, K] and codes[t, K] >= 0 else 0.0
    progress = 1.0 - cnt[_N_OPEN] / max(T, 1)
    _priorities(ctx, post[0][:K], items, rf, progress, ints.bias == 1)


@njit(cache=True)
def _close(t, items, cnt):  # pragma: no cover - compiled
    """_Open.close: item t leaves the open items."""
    if items[4][t]:
        cnt[_N_UNANSWERED] -= 1
    items[1][t] = False
    cnt[_N_OPEN] -= 1
    items[0][t] = -np.inf


# ------------------------------------------------------------------ one pick
@njit(cache=True)
def _value_arm(t, q, fits, n_fits, human_ok, ans, ctx, post, cfg, ints, rf, eps, prices, rng, work):
    """ValueRule: p, the q of the best LLM agreeing with t's current label, then
    value_choice (explore with epsilon_t; else the most errors fixed per unit of money)."""
    codes, order, n_out, asked = ans[0], ans[1], ans[2], ans[3]
    K = ints.K
    p = 0.0
    if n_out[t] > 0:
        trust_rank(t, ctx[3], ctx[4], rf, ints.bias == 1, post[1], K, work)
        y, _ = vote(codes[t], order[t], n_out[t], K, cfg.w_human, cfg.w_llm, work[2], ans[5], work)
        for k in range(K):
            if asked[t, k] and codes[t, k] >= 0 and value(ans[5], codes[t, k]) == y:
                p = max(p, min(max(q[k], 0.0), 1.0))
    j, mode = value_pick(q, prices, prices[K], p, fits, n_fits, human_ok, eps, rng)
    if mode == NONE:
        return -1, _NONE
    arm = fits[j] if j >= 0 else K
    return arm, (_EXPLORE if mode == EXPLORE else _VALUE)


@njit(cache=True)
def _buy(t, arm, mode, x, q, eps, rem_u, ans, ctx, items, money, price_u, prices, cnt, out):
    """mark_asked, the trace row and the call: the answer joins t's answers."""
    codes, order, n_out, asked, n_asked = ans[0], ans[1], ans[2], ans[3], ans[4]
    row, buf, K = ctx[0], ctx[1], q.shape[0]
    if row[t, arm] < 0:
        row[t, arm] = cnt[_N_BUF]
        cnt[_N_BUF] += 1
    buf[row[t, arm], :] = x
    if arm < K:
        ctx[4][t, arm] = 1.0
    i = cnt[_N_ROWS]
    cnt[_N_ROWS] += 1
    out[0][i], out[1][i], out[2][i] = t, arm, mode
    m = ctx[3].shape[1]
    f = out[3][i]
    f[0], f[1], f[2], f[3], f[4], f[5] = eps, x[m], x[m + 1], prices[arm], rem_u / 1e9, items[0][t]
    out[4][i, :] = q
    money[0] -= price_u[arm]
    if arm == K:
        money[1] -= 1
    asked[t, arm] = True
    if codes[t, arm] >= 0:
        order[t, n_out[t]] = arm
        n_out[t] += 1
    n_asked[t] += 1
    was = items[4][t]
    items[4][t] = n_out[t] == 0
    cnt[_N_UNANSWERED] += (1 if items[4][t] else 0) - (1 if was else 0)


@njit(cache=True)
def _b_t(money, limit):  # pragma: no cover - compiled
    """Budget.remaining_fraction from the money left in nano-units."""
    return 0.0 if limit == 0.0 else max(0.0, (money[0] / 1e9) / limit)


@njit(cache=True)
def _arms_that_fit(t, fits, ans, money, price_u, keep_u):  # pragma: no cover - compiled
    """The LLMs not asked on t that the money allows while keeping ``keep_u`` (into
    ``fits``; returns how many) and whether the human is free and affordable."""
    asked, K = ans[3], fits.shape[0]
    n_fits = 0
    for k in range(K):
        if not asked[t, k] and price_u[k] + keep_u <= money[0]:
            fits[n_fits] = k
            n_fits += 1
    human_ok = not asked[t, K] and price_u[K] + keep_u <= money[0]
    return n_fits, human_ok and not (money[2] == 1 and money[1] < 1)


@njit(cache=True)
def _after_answer(t, ans, ctx, post, seen, settled, items, cnt, heap, cfg, ints, rf, work):
    """Item t got its answer: it settles and closes on a human label, consensus or
    ``max_annotations``; else it gets its new Delta_t, 1(human) and P_t (_Open.update)."""
    codes, order, n_out, asked, n_asked = ans[0], ans[1], ans[2], ans[3], ans[4]
    K, T, n = ints.K, ints.T, n_out[t]
    agreed = (
        n >= 2
        and agreement(codes[t], order[t], n, K, cfg.w_human, cfg.w_llm, ans[5], work)
        >= cfg.threshold
    )
    human_in = asked[t, K] and codes[t, K] >= 0
    if human_in or agreed or n_asked[t] >= ints.max_annotations:
        settle(t, ans, ctx, post, seen, settled, cfg, ints, rf, work)
        _close(t, items, cnt)
        return
    items[2][t] = delta(codes[t], order[t], n, ans[5], work)
    items[3][t] = 1.0 if human_in else 0.0
    one = work[3].reshape((1, work[3].shape[0]))  # the scratch context as one row
    context(one[0], ctx[3], t, rf, 1.0 - cnt[_N_OPEN] / max(T, 1), ctx[4][t], ints.bias == 1)
    items[0][t] = mean_quad_rows(one, post[0][:K])[0] + items[2][t] + (1.0 - items[3][t])
    if cnt[_SIZE] == heap[0].shape[0]:  # the heap holds stale entries only: start again
        _build(heap, cnt, items)
    else:
        _push(heap, cnt, -items[0][t], t)


# ------------------------------------------------------------------ the loop
@njit(cache=True)
def refine_loop(ans, ctx, post, seen, settled, items, money, price_u, prices, cfg, ints, rng, out):
    """Phase 3 until no open item is left or money runs out; returns the last exploration
    time (-1: no pick) and ``cnt`` (rows written in ``out``, contexts in ``ctx``'s buffer).

    ``money`` (int64, in place): [nano-units left, human labels left, 1 if there is a
    human limit]; ``cfg``: [w_H, w_LLM, threshold, epsilon_0, gamma, budget limit, c_min];
    ``ints``: [K, T, max_annotations, escalate_disagreement, agreement_reward, calibrated,
    labels, refresh_every, bias, priority_refresh, c_min units, contexts stored].
    """
    codes, order, n_out = ans[0], ans[1], ans[2]
    K, T, bias, refresh = ints.K, ints.T, ints.bias == 1, ints.priority_refresh
    d = ctx[3].shape[1] + 2 + K + (1 if bias else 0)
    work, x, q = scratch(K, d, ans[5].n_labels), np.empty(d), np.empty(K)
    fits = np.empty(K, dtype=np.int64)
    cnt = np.zeros(5, dtype=np.int64)
    cnt[_N_BUF] = ints.asked_rows
    _open_items(ans, ctx, post, seen, settled, items, cnt, cfg, ints, _b_t(money, cfg.limit), work)
    cap = T + 2 * (refresh + T // 50 + 2)
    heap = (np.empty(cap), np.empty(cap, dtype=np.int64))
    _build(heap, cnt, items)
    picks, t_explore = 0, -1
    while cnt[_N_OPEN] > 0:
        t_explore = T + picks
        t = _top(heap, cnt, items)
        keep = float(cnt[_N_UNANSWERED] - (1 if items[4][t] else 0)) * cfg.c_min  # c_min each
        keep_u = np.int64(np.rint(keep * 1e9)) if keep != 0.0 else np.int64(0)
        rem_u, rf = money[0], _b_t(money, cfg.limit)
        context(x, ctx[3], t, rf, 1.0 - cnt[_N_OPEN] / max(T, 1), ctx[4][t], bias)
        n_fits, human_ok = _arms_that_fit(t, fits, ans, money, price_u, keep_u)
        if n_fits == 0 and not human_ok:
            _close(t, items, cnt)
            if rem_u < ints.c_min_units:  # not even the cheapest LLM: phase 3 ends
                break
            continue
        for k in range(K):
            q[k] = np.dot(x, post[1][k])
        n = n_out[t]
        agreed = (
            n >= 2
            and agreement(codes[t], order[t], n, K, cfg.w_human, cfg.w_llm, ans[5], work)
            >= cfg.threshold
        )
        eps = cfg.epsilon0 / (1.0 + cfg.gamma * t_explore)
        if ints.escalate_disagreement == 1 and human_ok and n >= 2 and not agreed:
            arm, mode = K, _DISAGREEMENT
        else:
            arm, mode = _value_arm(
                t, q, fits, n_fits, human_ok, ans, ctx, post, cfg, ints, rf, eps, prices, rng, work
            )
            if mode == _NONE:  # nothing to gain on t: it settles and closes, nothing bought
                settle(t, ans, ctx, post, seen, settled, cfg, ints, rf, work)
                _close(t, items, cnt)
                continue
        _buy(t, arm, mode, x, q, eps, rem_u, ans, ctx, items, money, price_u, prices, cnt, out)
        rf = _b_t(money, cfg.limit)
        _after_answer(t, ans, ctx, post, seen, settled, items, cnt, heap, cfg, ints, rf, work)
        picks += 1
        if picks % max(refresh, cnt[_N_OPEN] // 50 + 1) == 0:
            _priorities(ctx, post[0][:K], items, rf, 1.0 - cnt[_N_OPEN] / max(T, 1), bias)
            _build(heap, cnt, items)
    return t_explore, cnt
