"""Compiled kernels (numba) of the Bayesian linear posterior's per-decision arithmetic.

One routing decision of :class:`~quorum.routing.quorum.posterior.BayesianLinearPosterior` is a
few operations on d-vectors (d = 17 for the bench's contexts): pulls mu^T x, the
difficulty term x^T Sigma x and the Sherman-Morrison update. In numpy each is a call of a
few microseconds, mostly the interpreter's and numpy's per-call cost. These kernels do the
same arithmetic in one compiled call each.

What stays the same (docs/performance.md, "Routing at scale"):

- :func:`quad_rows` adds the d^2 products (x_j S_jk) x_k in the order np.einsum does
  (j, then k), so x^T Sigma x is bit for bit the numpy path's
  (:func:`~quorum.routing.quorum.posterior.quadratic_form`).
- :func:`sherman_morrison` does the element-wise steps in numpy's order and leaves the
  three dot products (Sigma x, x^T Sigma x, Sigma eta) to BLAS through ``np.dot``, as
  numpy does. numba's BLAS is SciPy's and numpy's is its own; both are OpenBLAS builds, so
  on the machines measured the two paths give the same bits. Where the two libraries
  differ (another build, another kernel for the CPU), results move only by the order of
  a float summation. ``tests/test_routing_kernels.py`` compares every kernel with the
  numpy path, and ``scripts/compare_posterior_backends.py`` the decisions of whole runs.

The numpy path stays selectable: ``QuorumRouter(posterior_backend="numpy")``.
Compiled functions are cached on disk (numba's ``cache=True``, next to this module or in
numba's user cache), so only the first process on a machine pays the compilation
(about 1-3 s).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["mean_quad_rows", "quad_rows", "sherman_morrison"]

#: rows per block of :func:`quad_rows` (its transposed copy stays in L1)
_QUAD_BLOCK = 128


@njit(cache=True, nogil=True)
def quad_rows(X: np.ndarray, S: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """x_i^T S x_i for every row of X as np.einsum("ij,jk,ik->i") adds it: the products
    (x_ij S_jk) x_ik one after the other, j then k."""
    n, d = X.shape
    out = np.empty(n)
    # Rows in blocks, X transposed: each row keeps its own accumulator and adds its
    # products in the same order (j, then k), so the inner loop over rows vectorises
    # (SIMD lanes are rows) without reordering any row's sum.
    xt = np.empty((d, _QUAD_BLOCK))
    acc = np.empty(_QUAD_BLOCK)
    for start in range(0, n, _QUAD_BLOCK):
        m = min(_QUAD_BLOCK, n - start)
        for j in range(d):
            for i in range(m):
                xt[j, i] = X[start + i, j]
        for i in range(m):
            acc[i] = 0.0
        for j in range(d):
            xj = xt[j]
            for k in range(d):
                s = S[j, k]
                xk = xt[k]
                for i in range(m):
                    acc[i] += (xj[i] * s) * xk[i]
        for i in range(m):
            out[start + i] = acc[i]
    return out


@njit(cache=True, nogil=True)
def mean_quad_rows(X: np.ndarray, covs: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """D_t = (1/K) sum_a x^T Sigma_a x for every row of X, as
    ``np.mean([quad_rows(X, covs[a]) for a in range(K)], axis=0)`` adds it: the K terms
    one after the other (a = 0, 1, ...), then one division by K."""
    K = covs.shape[0]
    tot = quad_rows(X, covs[0])
    for a in range(1, K):
        q = quad_rows(X, covs[a])
        for i in range(tot.shape[0]):
            tot[i] += q[i]
    for i in range(tot.shape[0]):
        tot[i] /= K
    return tot


@njit(cache=True, nogil=True)
def sherman_morrison(
    cov: np.ndarray,
    mean: np.ndarray,
    precision: np.ndarray,
    eta: np.ndarray,
    x: np.ndarray,
    r: float,
    s2: float,
    rank_one: bool,
) -> None:  # pragma: no cover - compiled
    """One observation (x, r) with noise s2, in place.

    Always: precision += x x^T / s2 and eta += (r / s2) x (the exact statistics). With
    ``rank_one``: Sigma -= (Sigma x)(Sigma x)^T / (s2 + x^T Sigma x) and mu = Sigma eta
    (the caller re-derives Sigma from the precision instead when it is time to refresh).
    Element by element the same operations as the numpy path, and the same BLAS calls
    for the three dot products (x must be C-contiguous).
    """
    d = x.shape[0]
    for i in range(d):
        xi = x[i]
        for j in range(d):
            precision[i, j] += xi * x[j] / s2
    c = r / s2
    for i in range(d):
        eta[i] += c * x[i]
    if not rank_one:
        return
    sx = np.dot(cov, x)
    denom = s2 + np.dot(x, sx)
    for i in range(d):
        si = sx[i]
        for j in range(d):
            cov[i, j] -= si * sx[j] / denom
    mean[:] = np.dot(cov, eta)
