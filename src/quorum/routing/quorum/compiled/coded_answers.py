"""An item's answers as integer codes, compiled (numba): the weighted vote, its agreement,
Delta_t and the contexts x_t, as the Python steps compute them from the answers' strings.

The state of the compiled steps (:mod:`~quorum.routing.quorum.compiled.phase3_kernel`,
:mod:`~quorum.routing.quorum.compiled.coded_rewards`) travels in tuples of arrays:

- ``ans = (codes, order, n_out, asked, n_asked, coding)``: ``codes[t, a]`` the code of arm a's
  answer on item t (:mod:`~quorum.routing.quorum.compiled.fixed_answers`; arms are the K LLMs, then
  the
  human, column K), ``order[t, :n_out[t]]`` the arms of t's usable answers in the order
  given (the recorder's), ``asked[t, a]`` whether arm a was asked, ``n_asked[t]`` calls,
  ``coding`` what a code stands for (below);
- ``ctx = (row, buf, rewarded, phi, mask)``: :class:`~quorum.routing.quorum.asked.AskedContexts`'
  arrays (``buf[row[t, a]]`` the x_t arm a was asked with), phi and m_t;
- ``work``: scratch arrays (:func:`scratch`).

Every sum is the Python code's, in its order: :class:`~quorum.tasks.classification.
WeightedMajorityVote` adds each label's weights in the order the answers came and the
labels' totals in the order the labels came; ties go to the label whose best-ranked
annotator ranks first (the trust order: the human, then the LLMs by q_a(x_t), stable).

What a code stands for is the task kind's (``TaskKind.compiled_outputs``), given by the
``coding`` (:class:`~quorum.routing.quorum.compiled.coded_sets.OutputCoding`) that
:func:`vote`, :func:`agreement`, :func:`delta` and :func:`similarity` take: a label (this
module's vote), or a label set as a bitmask (the per-label vote of
:mod:`~quorum.routing.quorum.compiled.coded_sets`). A vote returns a *value*
(:func:`value`): the code of a label, the bitmask of a set; equal values are equal outputs.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from quorum.routing.quorum.compiled import coded_sets

__all__ = [
    "agreement",
    "context",
    "delta",
    "scratch",
    "similarity",
    "trust_rank",
    "value",
    "vote",
]


@njit(cache=True, inline="always")
def _slot(labels, m, y):  # pragma: no cover - compiled
    """Label y's place among ``labels[:m]`` (first-seen order), appended when new:
    (its place, the new count)."""
    j = 0
    while j < m and labels[j] != y:
        j += 1
    if j == m:
        labels[m] = y
        m += 1
    return j, m


@njit(cache=True)
def _totals(codes_t, arms, n, K, w_h, w_llm, labels, weights):  # pragma: no cover
    """Each label's weight, labels in first-seen order; returns how many labels."""
    m = 0
    for i in range(n):
        j, m_new = _slot(labels, m, codes_t[arms[i]])
        if m_new > m:
            weights[j], m = 0.0, m_new
        weights[j] = weights[j] + (w_h if arms[i] == K else w_llm)
    return m


@njit(cache=True)
def _best_share(weights, m):  # pragma: no cover - compiled
    """(the largest total, the sum of the totals), summed in order as Python's sum()."""
    total = 0.0
    best = weights[0]
    for j in range(m):
        total += weights[j]
        if weights[j] > best:
            best = weights[j]
    return best, total


@njit(cache=True, inline="always")
def value(coding, code):  # pragma: no cover - compiled
    """The value of an answer code: the code of a label, the bitmask of a label set; -1
    for no usable output."""
    if code < 0:
        return -1
    if coding.sets == 1:
        return coding.bits[code]
    return code


@njit(cache=True)
def similarity(coding, v, ref):  # pragma: no cover - compiled
    """The similarity of the value ``v`` (-1: no output) to the value ``ref``: 1(equal)
    for labels, the Jaccard of the two sets for label sets; 0 without an output."""
    if v < 0:
        return 0.0
    if coding.sets == 1:
        return coded_sets.jaccard(v, ref)
    return 1.0 if v == ref else 0.0


@njit(cache=True)
def agreement(codes_t, arms, n, K, w_h, w_llm, coding, work):  # pragma: no cover - compiled
    """The weighted agreement of the answers of ``arms[:n]``: the winner's share."""
    if coding.sets == 1:
        return coded_sets.agreement(codes_t, arms, n, K, w_h, w_llm, coding, work[7])
    labels, weights = work[0], work[1]
    m = _totals(codes_t, arms, n, K, w_h, w_llm, labels, weights)
    best, total = _best_share(weights, m)
    return best / total


@njit(cache=True)
def vote(codes_t, arms, n, K, w_h, w_llm, rank, coding, work):  # pragma: no cover - compiled
    """(value, agreement) of the weighted vote of ``arms[:n]``' answers; a tie goes to
    the label given by the annotator of lowest ``rank[a]``."""
    if coding.sets == 1:
        return coded_sets.vote(codes_t, arms, n, K, w_h, w_llm, rank, coding, work[7])
    labels, weights = work[0], work[1]
    m = _totals(codes_t, arms, n, K, w_h, w_llm, labels, weights)
    best, total = _best_share(weights, m)
    label, label_rank, n_tied = -1, 1 << 30, 0
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
                if codes_t[arms[i]] == labels[j] and rank[arms[i]] < r:
                    r = rank[arms[i]]
            if r < label_rank:
                label, label_rank = labels[j], r
    return label, best / total


@njit(cache=True)
def delta(codes_t, arms, n, coding, work):  # pragma: no cover - compiled
    """Delta_t = 1 - max_y count(y) / n of ``arms[:n]``' answers (0 below two)."""
    if n < 2:
        return 0.0
    if coding.sets == 1:
        return coded_sets.delta(codes_t, arms, n, coding, work[7])
    labels, counts = work[0], work[6]
    m = 0
    for i in range(n):
        j, m_new = _slot(labels, m, codes_t[arms[i]])
        if m_new > m:
            counts[j], m = 0, m_new
        counts[j] += 1
    top = 0
    for j in range(m):
        top = max(top, counts[j])
    return 1.0 - top / n


@njit(cache=True)
def context(x, phi, t, b, p, mask_t, bias):  # pragma: no cover - compiled
    """x_t = [phi_t, b_t, p_t, m_t, 1] written into x (ContextBuilder.row)."""
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
def trust_rank(t, phi, mask, rf, bias, mean, K, work):  # pragma: no cover - compiled
    """work[2][a]: arm a's place in item t's trust order at b_t = rf (ArmModels.trust_order:
    the human 0, then the LLMs by q_a(x_t) at p_t = 1, descending, stable)."""
    rank, x, q = work[2], work[3], work[4]
    context(x, phi, t, rf, 1.0, mask[t], bias)
    for k in range(K):
        q[k] = np.dot(x, mean[k])
    rank[K] = 0
    for k in range(K):
        r = 1
        for j in range(K):
            if -q[j] < -q[k] or (-q[j] == -q[k] and j < k):
                r += 1
        rank[k] = r


@njit(cache=True)
def scratch(K, d, n_labels):  # pragma: no cover - compiled
    """The ``work`` arrays for K LLMs, contexts of dimension d and ``n_labels`` labels:
    labels, weights, ranks, a context, q values, arms, counts, and the label sets'
    scratch (:func:`~quorum.routing.quorum.compiled.coded_sets.scratch`)."""
    A = K + 1
    return (
        np.empty(A, dtype=np.int64),
        np.empty(A),
        np.empty(A, dtype=np.int64),
        np.empty(d),
        np.empty(K),
        np.empty(A, dtype=np.int64),
        np.empty(A, dtype=np.int64),
        coded_sets.scratch(A, n_labels),
    )
