"""Rewards over integer-coded answers, compiled (numba): :func:`~quorum.routing.quorum.rewards.
settle` for labels and label sets, and the posterior update it makes.

When item t settles, each LLM asked on it learns once, with the context it was asked
with: its reward is 1(answer = the human label), or without one (``agreement_reward``)
1(answer = the vote), paid as :func:`~quorum.routing.quorum.calibration.agreement_reward` when
``calibrated``; an unusable answer earns 0. With a human label and at least two LLM
answers, the LLMs' own vote counts towards P(LLM consensus is right) and the human learns
from its agreement with that vote (ties to the trust order). Label sets (``coding.sets``)
are paid their similarity, the Jaccard of the two sets, instead of equality; there is no
consensus count, and the human learns from its similarity to the LLMs' unweighted
majority set (:func:`~quorum.routing.quorum.compiled.coded_sets.majority`). The update is
:func:`~quorum.routing.quorum.compiled.kernels.sherman_morrison`; every ``refresh_every`` updates
Sigma
and mu are derived again from the exact statistics by the posterior's own code (SciPy's
Cholesky, called back from the compiled code).

The state tuples (``ans``, ``ctx``, ``post``, ``work``) are those of
:mod:`~quorum.routing.quorum.compiled.coded_answers`; ``post = (cov, mean, precision, eta,
n_updates,
noise)`` stacks the K LLMs' posteriors and the human's (row K); ``cfg`` and ``ints`` are
the parameters :class:`~quorum.routing.quorum.compiled.phase3_loop.LoopState` lays out.
"""

from __future__ import annotations

import numpy as np
from numba import njit, objmode

from quorum.routing.quorum.compiled.coded_answers import (
    scratch,
    similarity,
    trust_rank,
    value,
    vote,
)
from quorum.routing.quorum.compiled.coded_sets import majority
from quorum.routing.quorum.compiled.kernels import sherman_morrison

__all__ = ["refresh_posterior", "settle", "settle_items"]


def refresh_posterior(precision: np.ndarray, eta: np.ndarray, cov: np.ndarray, mean: np.ndarray):
    """Sigma and mu from the exact statistics, in place: the arithmetic of
    :meth:`~quorum.routing.quorum.posterior.BayesianLinearPosterior._refresh`."""
    from scipy.linalg import cho_factor, cho_solve

    c = cho_factor(precision, lower=True, check_finite=False)
    new = cho_solve(c, np.eye(precision.shape[0]), check_finite=False)
    cov[:] = (new + new.T) / 2.0
    mean[:] = cho_solve(c, eta, check_finite=False)


@njit(cache=True)
def _refresh(precision, eta, cov, mean):  # pragma: no cover - compiled
    with objmode():
        refresh_posterior(precision, eta, cov, mean)


@njit(cache=True)
def update(post, every, a, x, r):  # pragma: no cover - compiled
    """BayesianLinearPosterior.update of arm a with (x, r) (the numba backend's steps)."""
    cov, mean, precision, eta, n_upd, s2 = post
    n_upd[a] += 1
    refresh = every > 0 and n_upd[a] % every == 0
    sherman_morrison(cov[a], mean[a], precision[a], eta[a], x, r, s2[a], not refresh)
    if refresh:
        _refresh(precision[a], eta[a], cov[a], mean[a])


@njit(cache=True)
def _reference(t, ans, ctx, post, seen, cfg, ints, rf, work):  # pragma: no cover
    """(the value the LLMs are judged against or -1: none, reward if right, if wrong;
    label sets are paid their similarity instead)."""
    codes, order, n_out, asked = ans[0], ans[1], ans[2], ans[3]
    K = ints.K
    if asked[t, K] and codes[t, K] >= 0:
        return value(ans[5], codes[t, K]), 1.0, 0.0
    n = n_out[t]
    if not (ints.agreement_reward == 1 and n >= 2):  # agreement_reward
        return -1, 1.0, 0.0
    trust_rank(t, ctx[3], ctx[4], rf, ints.bias == 1, post[1], K, work)
    ref, _ = vote(codes[t], order[t], n, K, cfg.w_human, cfg.w_llm, work[2], ans[5], work)
    if ints.calibrated == 1:  # calibrated: pi = P(LLM consensus is right), Beta(1, 1)-smoothed
        pi = (seen[1] + 1.0) / (seen[0] + 2.0)
        return ref, pi, (1.0 - pi) / max(ints.n_labels - 1, 1)
    return ref, 1.0, 0.0


@njit(cache=True)
def settle(t, ans, ctx, post, seen, settled, cfg, ints, rf, work):  # pragma: no cover
    """rewards.settle of item t at b_t = rf: every arm asked learns once (labels: paid
    for equality, the LLMs' consensus counted; label sets: paid their similarity)."""
    if settled[t]:
        return
    settled[t] = True
    codes, order, n_out, asked, coding = ans[0], ans[1], ans[2], ans[3], ans[5]
    row, buf, rewarded = ctx[0], ctx[1], ctx[2]
    K, every = ints.K, ints.refresh_every
    ref, pay_right, pay_wrong = _reference(t, ans, ctx, post, seen, cfg, ints, rf, work)
    if ref < 0:
        return
    for a in range(K):
        if asked[t, a] and not rewarded[t, a] and row[t, a] >= 0:
            if coding.sets == 1:
                r = similarity(coding, value(coding, codes[t, a]), ref)
            else:
                right = codes[t, a] >= 0 and codes[t, a] == ref
                r = pay_right if right else pay_wrong
            update(post, every, a, buf[row[t, a]], r)
            rewarded[t, a] = True
    human = value(coding, codes[t, K]) if asked[t, K] else -1
    others, rank = work[5], work[2]
    n_others = 0
    for i in range(n_out[t]):
        if order[t, i] != K:
            others[n_others] = order[t, i]
            n_others += 1
    if human < 0 or n_others < 2:
        return
    if coding.sets == 0:  # labels: how often the LLMs' consensus is right
        for i in range(n_others):  # the LLMs' own vote: ties to the answers' order
            rank[others[i]] = i
        y_o, agr_o = vote(codes[t], others, n_others, K, cfg.w_human, cfg.w_llm, rank, coding, work)
        if agr_o >= cfg.threshold:
            seen[0] += 1
            seen[1] += 1 if y_o == human else 0
    if row[t, K] >= 0:  # the human: its agreement with the LLMs' majority (trust ties)
        trust_rank(t, ctx[3], ctx[4], rf, ints.bias == 1, post[1], K, work)
        if coding.sets == 1:
            ref_o = majority(codes[t], others, n_others, work[2], coding, work[7])
        else:
            ref_o, _ = vote(
                codes[t], others, n_others, K, cfg.w_human, cfg.w_llm, work[2], coding, work
            )
        update(post, every, K, buf[row[t, K]], similarity(coding, human, ref_o))
        rewarded[t, K] = True


@njit(cache=True)
def settle_items(items, ans, ctx, post, seen, settled, cfg, ints, rf):  # pragma: no cover
    """:func:`settle` of ``items`` in turn, at b_t = rf (nothing bought meanwhile)."""
    K = ints.K
    d = ctx[3].shape[1] + 2 + K + (1 if ints.bias == 1 else 0)
    work = scratch(K, d, ans[5].n_labels)
    for t in items:
        settle(t, ans, ctx, post, seen, settled, cfg, ints, rf, work)
