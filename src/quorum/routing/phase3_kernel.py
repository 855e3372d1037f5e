"""Phase 3's refinement loop, compiled (numba): the arithmetic of
:func:`~quorum.routing.phase3.refine` with :class:`~quorum.routing.phase3.ValueRule`,
over integer-coded labels, for a source with fixed answers.

Every step is the Python loop's, in its order, with the same float operations:

- the pick: the open item of highest P_t = D_t + Delta_t + 1(no human label), ties to the
  lowest index (a binary heap with stale entries skipped, as
  :class:`~quorum.routing.refinement.PriorityQueue`); all open items' P_t again every
  max(``priority_refresh``, open/50 + 1) picks;
- the money: the :class:`~quorum.routing.budget.Budget`'s integer nano-units, the first
  answers kept for the other unanswered items, the human limit;
- the arm: the human on disagreement (``escalate_disagreement``), else the value rule
  (:func:`~quorum.routing.policy.value_choice`; its draws from the run's numpy Generator,
  which numba advances with numpy's bits);
- the votes: weighted majority (w_H, w_LLM), ties to the trust order (the human, then
  the LLMs by q_a(x_t) at p_t = 1), consensus at the threshold, Delta_t unweighted;
- the rewards when an item settles (:func:`~quorum.routing.rewards.settle`): each LLM
  asked, against the human label or (``agreement_reward``) the vote, paid as
  :func:`~quorum.routing.calibration.agreement_reward` when ``calibrated``; the human
  against the other annotators' vote; the Sherman-Morrison update of
  :mod:`~quorum.routing.kernels`, with the exact refresh every ``refresh_every`` updates
  done by the posterior's own code (SciPy's Cholesky, called from the compiled loop).

:mod:`~quorum.routing.phase3_loop` prepares the arrays and writes the outcome back.
"""

from __future__ import annotations

import numpy as np
from numba import njit, objmode

from quorum.routing.kernels import mean_quad_rows, sherman_morrison

__all__ = ["MODES", "refine_loop"]

#: mode codes of the picks
MODES = ("disagreement", "value", "explore")
_DISAGREEMENT, _VALUE, _EXPLORE = 0, 1, 2


def refresh_posterior(precision: np.ndarray, eta: np.ndarray, cov: np.ndarray, mean: np.ndarray):
    """Sigma and mu from the exact statistics, in place: the code of
    :meth:`~quorum.routing.posterior.BayesianLinearPosterior._refresh`."""
    from scipy.linalg import cho_factor, cho_solve

    c = cho_factor(precision, lower=True, check_finite=False)
    new = cho_solve(c, np.eye(precision.shape[0]), check_finite=False)
    cov[:] = (new + new.T) / 2.0
    mean[:] = cho_solve(c, eta, check_finite=False)


@njit(cache=True)
def _refresh(precision, eta, cov, mean):  # pragma: no cover - compiled
    with objmode():
        refresh_posterior(precision, eta, cov, mean)


# ------------------------------------------------------------------ the heap of picks
@njit(cache=True, inline="always")
def _less(na, ta, nb, tb):  # pragma: no cover - compiled
    return na < nb or (na == nb and ta < tb)


@njit(cache=True)
def _heap_push(hn, ht, size, neg, t):  # pragma: no cover - compiled
    i = size
    hn[i] = neg
    ht[i] = t
    while i > 0:
        parent = (i - 1) // 2
        if _less(hn[i], ht[i], hn[parent], ht[parent]):
            hn[i], hn[parent] = hn[parent], hn[i]
            ht[i], ht[parent] = ht[parent], ht[i]
            i = parent
        else:
            break
    return size + 1


@njit(cache=True)
def _heap_pop(hn, ht, size):  # pragma: no cover - compiled
    size -= 1
    hn[0] = hn[size]
    ht[0] = ht[size]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        best = left
        right = left + 1
        if right < size and _less(hn[right], ht[right], hn[left], ht[left]):
            best = right
        if _less(hn[best], ht[best], hn[i], ht[i]):
            hn[i], hn[best] = hn[best], hn[i]
            ht[i], ht[best] = ht[best], ht[i]
            i = best
        else:
            break
    return size


@njit(cache=True)
def _heap_build(hn, ht, prio, open_):  # pragma: no cover - compiled
    size = 0
    for t in range(prio.shape[0]):
        if open_[t]:
            size = _heap_push(hn, ht, size, -prio[t], t)
    return size


# ------------------------------------------------------------------ votes
@njit(cache=True)
def _totals(codes_t, order, n, K, w_h, w_llm, labels, weights):  # pragma: no cover
    """Weight of each label in first-seen order (WeightedMajorityVote._totals)."""
    m = 0
    for i in range(n):
        a = order[i]
        y = codes_t[a]
        w = w_h if a == K else w_llm
        j = 0
        while j < m and labels[j] != y:
            j += 1
        if j == m:
            labels[m] = y
            weights[m] = 0.0
            m += 1
        weights[j] = weights[j] + w
    return m


@njit(cache=True)
def _agreement(codes_t, order, n, K, w_h, w_llm, labels, weights):  # pragma: no cover
    """The weighted agreement: the winning label's share of the weight."""
    m = _totals(codes_t, order, n, K, w_h, w_llm, labels, weights)
    total = 0.0
    best = weights[0]
    for j in range(m):
        total += weights[j]
        if weights[j] > best:
            best = weights[j]
    return best / total


@njit(cache=True)
def _vote(codes_t, order, n, K, w_h, w_llm, labels, weights, rank):  # pragma: no cover
    """(label, agreement) of the weighted vote; ties to the lowest ``rank[a]`` of an
    annotator giving the label (``rank``: the trust order, or the answers' order)."""
    m = _totals(codes_t, order, n, K, w_h, w_llm, labels, weights)
    total = 0.0
    best = weights[0]
    for j in range(m):
        total += weights[j]
        if weights[j] > best:
            best = weights[j]
    label = -1
    label_rank = 1 << 30
    n_tied = 0
    for j in range(m):
        if weights[j] == best:
            n_tied += 1
            if label < 0:
                label = labels[j]
    if n_tied > 1:
        label = -1
        for j in range(m):
            if weights[j] != best:
                continue
            r = 1 << 30
            for i in range(n):
                a = order[i]
                if codes_t[a] == labels[j] and rank[a] < r:
                    r = rank[a]
            if r < label_rank:
                label, label_rank = labels[j], r
    return label, best / total


@njit(cache=True)
def _delta(codes_t, order, n, labels, counts):  # pragma: no cover - compiled
    """Delta_t = 1 - max_y count(y) / n (0 below two answers)."""
    if n < 2:
        return 0.0
    m = 0
    for i in range(n):
        y = codes_t[order[i]]
        j = 0
        while j < m and labels[j] != y:
            j += 1
        if j == m:
            labels[m] = y
            counts[m] = 0
            m += 1
        counts[j] += 1
    top = 0
    for j in range(m):
        if counts[j] > top:
            top = counts[j]
    return 1.0 - top / n


@njit(cache=True)
def _context(x, phi, t, b, p, mask_t, bias):  # pragma: no cover - compiled
    """x_t = [phi_t, b_t, p_t, m_t, 1] written into x."""
    m = phi.shape[1]
    for i in range(m):
        x[i] = phi[t, i]
    x[m] = b
    x[m + 1] = p
    for k in range(mask_t.shape[0]):
        x[m + 2 + k] = mask_t[k]
    if bias:
        x[x.shape[0] - 1] = 1.0


@njit(cache=True)
def _trust_rank(q, K, rank):  # pragma: no cover - compiled
    """rank[a]: the human 0, the LLMs 1.. by q descending (stable), as trust_order."""
    rank[K] = 0
    for k in range(K):
        r = 1
        for j in range(K):
            if -q[j] < -q[k] or (-q[j] == -q[k] and j < k):
                r += 1
        rank[k] = r


# ------------------------------------------------------------------ the loop's state
@njit(cache=True)
def _put(row, buf, n_buf, t, a, x):  # pragma: no cover - compiled
    """AskedContexts.put: x as arm a's context on item t (the buffer grows by doubling)."""
    r = row[t, a]
    if r < 0:
        if n_buf == buf.shape[0]:
            grown = np.empty((2 * buf.shape[0], buf.shape[1]))
            grown[:n_buf] = buf[:n_buf]
            buf = grown
        r = n_buf
        n_buf += 1
        row[t, a] = r
    buf[r, :] = x
    return buf, n_buf


@njit(cache=True)
def _update(cov, mean, precision, eta, n_upd, s2, every, a, x, r):  # pragma: no cover
    """BayesianLinearPosterior.update of arm a (numba backend)."""
    n_upd[a] += 1
    refresh = every > 0 and n_upd[a] % every == 0
    sherman_morrison(cov[a], mean[a], precision[a], eta[a], x, r, s2[a], not refresh)
    if refresh:
        _refresh(precision[a], eta[a], cov[a], mean[a])


@njit(cache=True)
def _settle(
    t,
    codes,
    order,
    n_out,
    asked,
    row,
    buf,
    rewarded,
    settled,
    seen,
    post,
    cfg,
    ints,
    phi,
    mask,
    rf,
    work,
):  # pragma: no cover - compiled
    """rewards.settle for labels: every arm asked on t learns once."""
    if settled[t]:
        return
    settled[t] = True
    cov, mean, precision, eta, n_upd, s2 = post
    w_h, w_llm, thr = cfg[0], cfg[1], cfg[2]
    K, every, agree_reward, calibrated, n_labels = ints[0], ints[7], ints[4], ints[5], ints[6]
    labels, weights, rank, x, q, others = work
    codes_t = codes[t]
    n = n_out[t]
    human_out = codes_t[K] if asked[t, K] and codes_t[K] >= 0 else -1
    paid = False
    pay_agree, pay_dissent = 0.0, 0.0
    if human_out >= 0:
        ref = human_out
    elif agree_reward and n >= 2:
        _context(x, phi, t, rf, 1.0, mask[t], ints[8] == 1)
        for k in range(K):
            q[k] = np.dot(x, mean[k])
        _trust_rank(q, K, rank)
        ref, _ = _vote(codes_t, order[t], n, K, w_h, w_llm, labels, weights, rank)
        if calibrated:
            pi = (seen[1] + 1.0) / (seen[0] + 2.0)
            pay_agree, pay_dissent = pi, (1.0 - pi) / max(n_labels - 1, 1)
            paid = True
    else:
        return
    for a in range(K):
        if not asked[t, a] or rewarded[t, a] or row[t, a] < 0:
            continue
        r = 1.0 if codes_t[a] >= 0 and codes_t[a] == ref else 0.0
        if paid:
            r = pay_agree if r >= 1.0 else pay_dissent
        _update(cov, mean, precision, eta, n_upd, s2, every, a, buf[row[t, a]], r)
        rewarded[t, a] = True
    n_others = 0
    for i in range(n):
        if order[t, i] != K:
            others[n_others] = order[t, i]
            n_others += 1
    if human_out >= 0 and n_others >= 2:
        for i in range(n_others):  # no priority: ties to the answers' order
            rank[others[i]] = i
        y_o, agr_o = _vote(codes_t, others, n_others, K, w_h, w_llm, labels, weights, rank)
        if n_others >= 2 and agr_o >= thr:
            seen[0] += 1
            seen[1] += 1 if y_o == human_out else 0
        if row[t, K] >= 0:
            _context(x, phi, t, rf, 1.0, mask[t], ints[8] == 1)
            for k in range(K):
                q[k] = np.dot(x, mean[k])
            _trust_rank(q, K, rank)
            ref_o, _ = _vote(codes_t, others, n_others, K, w_h, w_llm, labels, weights, rank)
            r = 1.0 if human_out == ref_o else 0.0
            _update(cov, mean, precision, eta, n_upd, s2, every, K, buf[row[t, K]], r)
            rewarded[t, K] = True


@njit(cache=True)
def _priorities(idx, n_idx, phi, mask, rf, p, bias, cov_llm, delta, has_h, prio, d):
    """P_t of the items idx[:n_idx] at b_t = rf, p_t = p (blocks of rows: D_t of a row
    does not depend on the others)."""  # pragma: no cover - compiled
    block = 4096
    X = np.empty((block, d))
    for start in range(0, n_idx, block):
        m = min(block, n_idx - start)
        for i in range(m):
            _context(X[i], phi, idx[start + i], rf, p, mask[idx[start + i]], bias)
        D = mean_quad_rows(X[:m], cov_llm)
        for i in range(m):
            t = idx[start + i]
            prio[t] = D[i] + delta[t] + (1.0 - has_h[t])


@njit(cache=True)
def refine_loop(
    codes,
    price_u,
    prices,
    order,
    n_out,
    asked,
    n_asked,
    mask,
    phi,
    post,
    row,
    buf,
    n_buf,
    rewarded,
    settled,
    seen,
    prio,
    open_,
    delta,
    has_h,
    no_answer,
    money,
    cfg,
    ints,
    rng,
    pick_t,
    pick_arm,
    pick_mode,
    pick_f,
    pick_q,
):  # pragma: no cover - compiled
    """Phase 3 until no open item is left or money runs out; returns
    (picks, last exploration time, rows of ``buf`` used, ``buf``).

    ``money`` (int64, in place): [nano-units left, human labels left, 1 if there is a
    human limit]; ``cfg``: [w_H, w_LLM, threshold, epsilon_0, gamma, budget limit, c_min];
    ``ints``: [K, T, max_annotations, escalate_disagreement, agreement_reward,
    calibrated, labels, refresh_every, bias, priority_refresh, c_min units]. A pick's
    row of ``pick_f``: epsilon_t, b_t, p_t, price, money left, P_t.
    """
    cov, mean = post[0], post[1]
    K, T, max_ann = ints[0], ints[1], ints[2]
    escalate, bias, refresh, c_min_u = ints[3] == 1, ints[8] == 1, ints[9], ints[10]
    w_h, w_llm, thr, eps0, gamma, limit, c_min = (
        cfg[0],
        cfg[1],
        cfg[2],
        cfg[3],
        cfg[4],
        cfg[5],
        cfg[6],
    )
    d = phi.shape[1] + 2 + K + (1 if bias else 0)
    A = K + 1
    labels = np.empty(A, dtype=np.int64)
    weights = np.empty(A)
    counts = np.empty(A, dtype=np.int64)
    rank = np.empty(A, dtype=np.int64)
    others = np.empty(A, dtype=np.int64)
    x = np.empty(d)
    xs = np.empty(d)
    q = np.empty(K)
    qt = np.empty(K)
    work = (labels, weights, rank, xs, qt, others)
    cov_llm = cov[:K]
    fits = np.empty(K, dtype=np.int64)
    one = np.empty((1, d))
    # the heap of (-P_t, t) and the open count
    cap = T + 2 * (refresh + T // 50 + 2)
    hn = np.empty(cap)
    ht = np.empty(cap, dtype=np.int64)
    n_open = 0
    n_unanswered = 0
    for t in range(T):
        if open_[t]:
            n_open += 1
            if no_answer[t]:
                n_unanswered += 1
    size = _heap_build(hn, ht, prio, open_)
    picks = 0
    n_rows = 0
    t_explore = -1
    while n_open > 0:
        t_explore = T + picks
        # top(): the live head of the heap
        while not (open_[ht[0]] and -hn[0] == prio[ht[0]]):
            size = _heap_pop(hn, ht, size)
        t = ht[0]
        keep = float(n_unanswered - (1 if no_answer[t] else 0)) * c_min
        keep_u = np.int64(np.rint(keep * 1e9)) if keep != 0.0 else np.int64(0)
        rem_u = money[0]
        rf = 0.0 if limit == 0.0 else max(0.0, (rem_u / 1e9) / limit)
        progress = 1.0 - n_open / max(T, 1)
        _context(x, phi, t, rf, progress, mask[t], bias)
        n_fits = 0
        for k in range(K):
            if not asked[t, k] and price_u[k] + keep_u <= rem_u:
                fits[n_fits] = k
                n_fits += 1
        human_ok = not asked[t, K] and price_u[K] + keep_u <= rem_u
        if human_ok and money[2] == 1 and money[1] < 1:
            human_ok = False
        if n_fits == 0 and not human_ok:
            if no_answer[t]:
                n_unanswered -= 1
            open_[t] = False
            n_open -= 1
            prio[t] = -np.inf
            if not c_min_u <= rem_u:
                break
            continue
        for k in range(K):
            q[k] = np.dot(x, mean[k])
        n = n_out[t]
        agreed = n >= 2 and _agreement(codes[t], order[t], n, K, w_h, w_llm, labels, weights) >= thr
        eps = eps0 / (1.0 + gamma * t_explore)
        arm = -1
        mode = _VALUE
        if escalate and human_ok and n >= 2 and not agreed:
            arm, mode = K, _DISAGREEMENT
        else:
            # ValueRule: p = the q of the best LLM agreeing with the current label
            p = 0.0
            if n > 0:
                _context(xs, phi, t, rf, 1.0, mask[t], bias)
                for k in range(K):
                    qt[k] = np.dot(xs, mean[k])
                _trust_rank(qt, K, rank)
                y, _ = _vote(codes[t], order[t], n, K, w_h, w_llm, labels, weights, rank)
                found = False
                for k in range(K):
                    if codes[t, k] == y and asked[t, k] and codes[t, k] >= 0:
                        qc = min(max(q[k], 0.0), 1.0)
                        if not found or qc > p:
                            p = qc
                        found = True
            # value_choice
            none = False
            if p >= 1.0:
                none = True
            elif n_fits > 0 and rng.random() < eps:
                arm, mode = fits[rng.integers(0, n_fits)], _EXPLORE
            else:
                best_k = -1
                best_v = -np.inf
                if human_ok:
                    best_v = (1.0 - p) / prices[K]
                for j in range(n_fits):
                    k = fits[j]
                    qb = min(max(q[k], 0.0), 1.0)
                    p_dis = (1.0 - p) * qb + p * (1.0 - qb)
                    v = (1.0 - p) * qb / (prices[k] + p_dis * prices[K])
                    if v > best_v:
                        best_k, best_v = j, v
                if best_k < 0 and not human_ok:
                    top_q = -np.inf
                    for j in range(n_fits):
                        qb = min(max(q[fits[j]], 0.0), 1.0)
                        if qb > top_q:
                            top_q = qb
                    if n_fits > 0 and top_q > 0.0:
                        arm = fits[0]
                    else:
                        none = True
                else:
                    arm = K if best_k < 0 else fits[best_k]
            if none:  # nothing to gain on t: it settles and closes, nothing is bought
                _settle(
                    t,
                    codes,
                    order,
                    n_out,
                    asked,
                    row,
                    buf,
                    rewarded,
                    settled,
                    seen,
                    post,
                    cfg,
                    ints,
                    phi,
                    mask,
                    rf,
                    work,
                )
                if no_answer[t]:
                    n_unanswered -= 1
                open_[t] = False
                n_open -= 1
                prio[t] = -np.inf
                continue
        # mark_asked, the trace row, the call
        buf, n_buf = _put(row, buf, n_buf, t, arm, x)
        if arm < K:
            mask[t, arm] = 1.0
        pick_t[n_rows] = t
        pick_arm[n_rows] = arm
        pick_mode[n_rows] = mode
        pick_f[n_rows, 0] = eps
        pick_f[n_rows, 1] = x[phi.shape[1]]
        pick_f[n_rows, 2] = x[phi.shape[1] + 1]
        pick_f[n_rows, 3] = prices[arm]
        pick_f[n_rows, 4] = rem_u / 1e9
        pick_f[n_rows, 5] = prio[t]
        for k in range(K):
            pick_q[n_rows, k] = q[k]
        n_rows += 1
        money[0] -= price_u[arm]
        if arm == K:
            money[1] -= 1
        asked[t, arm] = True
        if codes[t, arm] >= 0:
            order[t, n_out[t]] = arm
            n_out[t] += 1
        n_asked[t] += 1
        was = no_answer[t]
        no_answer[t] = n_out[t] == 0
        n_unanswered += (1 if no_answer[t] else 0) - (1 if was else 0)
        n = n_out[t]
        agreed = n >= 2 and _agreement(codes[t], order[t], n, K, w_h, w_llm, labels, weights) >= thr
        human_in = asked[t, K] and codes[t, K] >= 0
        rf = 0.0 if limit == 0.0 else max(0.0, (money[0] / 1e9) / limit)
        if human_in or agreed or n_asked[t] >= max_ann:
            _settle(
                t,
                codes,
                order,
                n_out,
                asked,
                row,
                buf,
                rewarded,
                settled,
                seen,
                post,
                cfg,
                ints,
                phi,
                mask,
                rf,
                work,
            )
            if no_answer[t]:
                n_unanswered -= 1
            open_[t] = False
            n_open -= 1
            prio[t] = -np.inf
        else:
            delta[t] = _delta(codes[t], order[t], n, labels, counts)
            has_h[t] = 1.0 if human_in else 0.0
            _context(one[0], phi, t, rf, 1.0 - n_open / max(T, 1), mask[t], bias)
            D = mean_quad_rows(one, cov_llm)
            prio[t] = D[0] + delta[t] + (1.0 - has_h[t])
            if size == cap:  # stale entries only: start the heap again
                size = _heap_build(hn, ht, prio, open_)
            else:
                size = _heap_push(hn, ht, size, -prio[t], t)
        picks += 1
        if picks % max(refresh, n_open // 50 + 1) == 0:
            idx = np.flatnonzero(open_)
            if idx.shape[0] > 0:
                _priorities(
                    idx,
                    idx.shape[0],
                    phi,
                    mask,
                    rf,
                    1.0 - n_open / max(T, 1),
                    bias,
                    cov_llm,
                    delta,
                    has_h,
                    prio,
                    d,
                )
            size = _heap_build(hn, ht, prio, open_)
    return picks, t_explore, n_rows, n_buf, buf


@njit(cache=True)
def settle_items(
    items,
    codes,
    order,
    n_out,
    asked,
    row,
    buf,
    rewarded,
    settled,
    seen,
    post,
    cfg,
    ints,
    phi,
    mask,
    rf,
):  # pragma: no cover - compiled
    """rewards.settle of ``items`` in turn, at b_t = rf (nothing bought meanwhile)."""
    K = ints[0]
    A = K + 1
    d = phi.shape[1] + 2 + K + (1 if ints[8] == 1 else 0)
    work = (
        np.empty(A, dtype=np.int64),
        np.empty(A),
        np.empty(A, dtype=np.int64),
        np.empty(d),
        np.empty(K),
        np.empty(A, dtype=np.int64),
    )
    for t in items:
        _settle(
            t,
            codes,
            order,
            n_out,
            asked,
            row,
            buf,
            rewarded,
            settled,
            seen,
            post,
            cfg,
            ints,
            phi,
            mask,
            rf,
            work,
        )
