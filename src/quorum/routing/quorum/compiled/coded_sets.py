"""Label-set answers as int64 bitmasks, compiled (numba): the per-label weighted vote, its
agreement, Delta_t and the Jaccard similarity of :class:`~quorum.tasks.multilabel.
LabelSetVote`, as the Python steps compute them from the answers' canonical strings.

An answer of code c is the set ``coding.bits[c]`` (bit j: the task's label j, at most 63
labels); equal sets are equal bitmasks, so the loops' equality of answers holds as for
labels. The choices are the kind's (docs/router.md, "Multi-label"); this module only
repeats its arithmetic, in its order, so that a compiled run is the Python run bit for bit
(tests/test_phase3_loop.py):

- a label is kept when its weighted support, the weight of the answers holding it over the
  weight of all answers, is above ``support`` (+ the tie tolerance); within the tolerance of
  ``support`` it goes the way of the most trusted answer (lowest rank); ``min_labels`` /
  ``max_labels`` then add / drop labels by support, ties to the label order;
- the vote's agreement is the weighted mean Jaccard of the answers with the kept set. Where
  no label ties, :class:`~quorum.tasks.multilabel.LabelSetVote` sums over the answers
  sorted by (weight, canonical string), the order of its cache key, so the sums here run
  in that order too (``coding.text_rank``); with a tie, in the answers' order;
- Delta_t is 1 - the mean Jaccard of the answers with their unweighted aggregate (ties to
  the first answer), the mean summed as numpy's pairwise sum;
- the Jaccard of two sets is |a & b| / |a | b| by popcount, 1 for equal sets.

``coding`` is an :class:`OutputCoding`; ``sw`` the scratch arrays of :func:`scratch`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

__all__ = [
    "MAX_ANSWERS",
    "OutputCoding",
    "agreement",
    "delta",
    "jaccard",
    "majority",
    "scratch",
    "vote",
]

#: the most answers an item may have here (numpy sums up to 128 values in one block)
MAX_ANSWERS = 128


class OutputCoding(NamedTuple):
    """How the compiled steps read an answer code: as a label (``sets`` 0) or as a label
    set (``sets`` 1, with the vote's parameters)."""

    sets: int  # 1: the codes are label sets (``bits``), 0: labels
    bits: np.ndarray  # int64: the bitmask of each code (empty for labels)
    text_rank: np.ndarray  # int64: each code's place among the outputs' strings, sorted
    n_labels: int
    support: float
    tolerance: float
    min_labels: int
    max_labels: int  # -1: no bound


@njit(cache=True, inline="always")
def popcount(x):  # pragma: no cover - compiled
    """The number of bits set in x >= 0."""
    c = 0
    while x != 0:
        x &= x - 1
        c += 1
    return c


@njit(cache=True)
def jaccard(a, b):  # pragma: no cover - compiled
    """|a & b| / |a | b| of two bitmasks; 1.0 for equal sets (two empty sets included)."""
    if a == b:
        return 1.0
    return popcount(a & b) / popcount(a | b)


@njit(cache=True)
def scratch(n_answers, n_labels):  # pragma: no cover - compiled
    """The scratch arrays for up to ``n_answers`` answers: their sets, weights and ranks in
    the answers' order, the same sorted, each label's share, the Jaccards."""
    return (
        np.empty(n_answers, dtype=np.int64),
        np.empty(n_answers),
        np.empty(n_answers, dtype=np.int64),
        np.empty(n_answers, dtype=np.int64),
        np.empty(n_answers),
        np.empty(n_answers, dtype=np.int64),
        np.empty(max(n_labels, 1)),
        np.empty(n_answers),
    )


@njit(cache=True)
def _most_supported(candidates, share, n_labels):  # pragma: no cover - compiled
    """The label of ``candidates`` (a bitmask) of highest share, ties to the lowest index;
    -1 when there is none."""
    best = -1
    for j in range(n_labels):
        if (candidates >> j) & 1 and (best < 0 or share[j] > share[best]):
            best = j
    return best


@njit(cache=True)
def _keep(vals, ws, ranks, n, coding, share):  # pragma: no cover - compiled
    """LabelSetVote._keep of the sets ``vals[:n]`` weighted ``ws[:n]``, summed in that
    order; a tied label goes the way of the answer of lowest ``ranks[i]``."""
    total = 0.0
    present = 0
    for i in range(n):
        total += ws[i]
        present |= vals[i]
    keep, tied = 0, 0
    above = coding.support + coding.tolerance
    for j in range(coding.n_labels):
        if not (present >> j) & 1:
            continue
        s = 0.0
        for i in range(n):
            if (vals[i] >> j) & 1:
                s += ws[i]
        share[j] = s / total
        if share[j] > above:
            keep |= 1 << j
        if abs(share[j] - coding.support) <= coding.tolerance:
            tied |= 1 << j
    if tied != 0:
        top = 0
        for i in range(1, n):
            if ranks[i] < ranks[top]:
                top = i
        keep |= tied & vals[top]
    need = coding.min_labels - popcount(keep)
    for _ in range(need):  # add labels by support
        j = _most_supported(present & ~keep, share, coding.n_labels)
        if j < 0:
            break
        keep |= 1 << j
    if coding.max_labels >= 0 and popcount(keep) > coding.max_labels:
        kept = 0
        for _ in range(coding.max_labels):  # keep the best supported
            kept |= 1 << _most_supported(keep & ~kept, share, coding.n_labels)
        keep = kept
    return keep


@njit(cache=True)
def _tied(vals, ws, n, coding, share):  # pragma: no cover - compiled
    """LabelSetVote._tied: whether a label's share of ``vals[:n]`` (summed in that order)
    is within the tolerance of ``support``."""
    total = 0.0
    present = 0
    for i in range(n):
        total += ws[i]
        present |= vals[i]
    for j in range(coding.n_labels):
        if not (present >> j) & 1:
            continue
        s = 0.0
        for i in range(n):
            if (vals[i] >> j) & 1:
                s += ws[i]
        if abs(s / total - coding.support) <= coding.tolerance:
            return True
    return False


@njit(cache=True)
def _agreement_with(keep, vals, ws, n):  # pragma: no cover - compiled
    """sum_i ws[i] J(vals[i], keep) / sum_i ws[i], summed in order."""
    total, acc = 0.0, 0.0
    for i in range(n):
        total += ws[i]
    for i in range(n):
        acc += ws[i] * jaccard(vals[i], keep)
    return acc / total


@njit(cache=True)
def _weighted_vote(codes_t, arms, n, K, w_h, w_llm, coding, sw):  # pragma: no cover
    """LabelSetVote.vote of ``arms[:n]``' answers, the ranks of the answers (the trust
    order) already in ``sw[2]``: (kept set, agreement)."""
    vals, ws, ranks, kv, kw, kr, share = sw[0], sw[1], sw[2], sw[3], sw[4], sw[5], sw[6]
    same = True
    for i in range(n):
        a = arms[i]
        vals[i] = coding.bits[codes_t[a]]
        ws[i] = w_h if a == K else w_llm
        same = same and vals[i] == vals[0]
    if same:  # one set: itself, unless it breaks min / max
        c = popcount(vals[0])
        if coding.min_labels <= c and (coding.max_labels < 0 or c <= coding.max_labels):
            return vals[0], 1.0
    # the answers sorted by (weight, canonical string): the order of the vote's cache key
    for i in range(n):
        v, w, r = vals[i], ws[i], coding.text_rank[codes_t[arms[i]]]
        j = i
        while j > 0 and (kw[j - 1] > w or (kw[j - 1] == w and kr[j - 1] > r)):
            kv[j], kw[j], kr[j] = kv[j - 1], kw[j - 1], kr[j - 1]
            j -= 1
        kv[j], kw[j], kr[j] = v, w, r
    if not _tied(kv, kw, n, coding, share):
        keep = _keep(kv, kw, kr, n, coding, share)
        return keep, _agreement_with(keep, kv, kw, n)
    keep = _keep(vals, ws, ranks, n, coding, share)
    return keep, _agreement_with(keep, vals, ws, n)


@njit(cache=True)
def vote(codes_t, arms, n, K, w_h, w_llm, rank, coding, sw):  # pragma: no cover
    """(kept set, agreement) of the weighted vote of ``arms[:n]``' answers; a tied label
    goes the way of the answer whose annotator has the lowest ``rank[a]``."""
    for i in range(n):
        sw[2][i] = rank[arms[i]]
    return _weighted_vote(codes_t, arms, n, K, w_h, w_llm, coding, sw)


@njit(cache=True)
def agreement(codes_t, arms, n, K, w_h, w_llm, coding, sw):  # pragma: no cover
    """The agreement of the weighted vote, a tie to the first answer
    (LabelSetVote.agreement_item)."""
    for i in range(n):
        sw[2][i] = i
    return _weighted_vote(codes_t, arms, n, K, w_h, w_llm, coding, sw)[1]


@njit(cache=True)
def majority(codes_t, arms, n, rank, coding, sw):  # pragma: no cover - compiled
    """The set of ``arms[:n]``' answers each counted alike, a tie to the lowest
    ``rank[a]`` (LabelSetVote.majority)."""
    vals, ws, ranks = sw[0], sw[1], sw[2]
    for i in range(n):
        vals[i] = coding.bits[codes_t[arms[i]]]
        ws[i] = 1.0
        ranks[i] = rank[arms[i]]
    return _keep(vals, ws, ranks, n, coding, sw[6])


@njit(cache=True)
def _pairwise_sum(a, n):  # pragma: no cover - compiled
    """numpy's pairwise sum of a[:n] for n <= 128 (its add.reduce of float64)."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[i]
        return res
    r0, r1, r2, r3, r4, r5, r6, r7 = a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]
    i = 8
    while i < n - (n % 8):
        r0, r1, r2, r3 = r0 + a[i], r1 + a[i + 1], r2 + a[i + 2], r3 + a[i + 3]
        r4, r5, r6, r7 = r4 + a[i + 4], r5 + a[i + 5], r6 + a[i + 6], r7 + a[i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[i]
        i += 1
    return res


@njit(cache=True)
def delta(codes_t, arms, n, coding, sw):  # pragma: no cover - compiled
    """Delta_t = 1 - mean J(answer, unweighted aggregate) of ``arms[:n]``' answers, a tie
    to the first answer (0 below two answers)."""
    if n < 2:
        return 0.0
    vals, ws, ranks, jac = sw[0], sw[1], sw[2], sw[7]
    for i in range(n):
        vals[i] = coding.bits[codes_t[arms[i]]]
        ws[i] = 1.0
        ranks[i] = i
    keep = _keep(vals, ws, ranks, n, coding, sw[6])
    for i in range(n):
        jac[i] = jaccard(vals[i], keep)
    return 1.0 - _pairwise_sum(jac, n) / n
