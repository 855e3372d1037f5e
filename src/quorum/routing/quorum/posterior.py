"""Bayesian linear-regression posterior over an annotator's quality, theta_a ~ N(mu_a, Sigma_a).

Update for one observation (x, r), reward noise variance sigma^2 (paper, sec. 3.2):

    Sigma' = (Sigma^-1 + x x^T / sigma^2)^-1
    mu'    = Sigma' (Sigma^-1 mu + r x / sigma^2)

Sigma is updated with the Sherman-Morrison rank-one formula (O(d^2) per update). For long
runs the precision matrix Sigma^-1 and the vector Sigma^-1 mu are accumulated exactly as
well, and Sigma is re-derived from them by a Cholesky solve every ``refresh_every``
updates, so rounding errors of the rank-one updates cannot build up (stable over 10^6+).

Two backends do the same arithmetic: ``"numba"`` (default) runs the variances x^T Sigma x
and the updates as compiled kernels (:mod:`quorum.routing.quorum.compiled.kernels`), ``"numpy"`` as
numpy
calls (the reference: the router's results before the kernels). On the machines measured
they give the same bits; where numba's BLAS (SciPy's) and numpy's differ, they may differ
in the last bits of a sum (docs/performance.md measures how often a decision changes).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve

BACKENDS = ("numba", "numpy")
#: the backend of a posterior that names none (QuorumRouter passes its ``posterior_backend``)
DEFAULT_BACKEND = "numba"


class BayesianLinearPosterior:
    """Gaussian posterior of one arm. ``pull`` scores contexts, ``update`` learns from rewards.

    Parameters
    ----------
    dim : context dimension d.
    prior_mean : scalar or (d,) prior mean mu_0 (paper: 0 for LLMs, 0.3 for the human).
    prior_var : prior variance, scalar (Sigma_0 = prior_var * I; paper: 1 for LLMs, 0.5 for
        the human) or (d,) for a diagonal Sigma_0.
    noise_var : reward noise sigma^2 (not given in the paper; see docs/router.md).
    refresh_every : re-derive Sigma from the exact precision every this many updates.
    backend : "numba" (compiled kernels, :mod:`quorum.routing.quorum.compiled.kernels`) or "numpy"
    (the
        reference path); default :data:`DEFAULT_BACKEND`. Both keep the same state.
    """

    def __init__(
        self,
        dim: int,
        prior_mean: float | np.ndarray = 0.0,
        prior_var: float | np.ndarray = 1.0,
        noise_var: float = 0.25,
        refresh_every: int = 1000,
        backend: str | None = None,
    ) -> None:
        if dim < 1:
            raise ValueError("dim must be >= 1")
        pv = np.broadcast_to(np.asarray(prior_var, dtype=np.float64), (dim,)).copy()
        if (pv <= 0).any() or noise_var <= 0:
            raise ValueError("prior_var and noise_var must be > 0")
        backend = DEFAULT_BACKEND if backend is None else backend
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.backend = backend
        self._k = _kernels() if backend == "numba" else None
        self.dim = dim
        self.prior_var = pv
        self.noise_var = float(noise_var)
        self.refresh_every = int(refresh_every)
        mu0 = np.broadcast_to(np.asarray(prior_mean, dtype=np.float64), (dim,)).copy()
        self.prior_mean = mu0
        # exact sufficient statistics
        self.precision_ = np.diag(1.0 / pv)
        self.eta_ = mu0 / pv  # Sigma^-1 mu
        # working covariance and mean
        self.cov_ = np.diag(pv)
        self.mean_ = mu0.copy()
        self.n_updates_ = 0

    # -- scoring -----------------------------------------------------------

    @property
    def compiled(self) -> bool:
        """Whether the per-decision arithmetic runs as compiled kernels (``backend="numba"``)."""
        return self._k is not None

    def pull(self, x: np.ndarray) -> np.ndarray | float:
        """Expected quality q = mu^T x for one context (d,) or many (n, d)."""
        return np.asarray(x) @ self.mean_

    def variance(self, x: np.ndarray) -> np.ndarray | float:
        """Posterior predictive variance term x^T Sigma x for one or many contexts."""
        x = np.asarray(x, dtype=np.float64)
        if x.ndim == 1:
            return float(x @ self.cov_ @ x)
        if self._k is not None and x.ndim == 2 and x.shape[1] == self.dim:
            # the same products in the same order as quadratic_form (np.einsum's)
            return self._k.quad_rows(np.ascontiguousarray(x), self.cov_)
        return quadratic_form(x, self.cov_)

    # -- learning ----------------------------------------------------------
    def update(self, x: np.ndarray, r: float) -> None:
        """One Bayesian update with context x and reward r (Sherman-Morrison)."""
        if not (
            type(x) is np.ndarray and x.dtype == np.float64 and x.ndim == 1 and x.flags.c_contiguous
        ):
            x = np.ascontiguousarray(np.asarray(x, dtype=np.float64).reshape(-1))
        if x.shape[0] != self.dim:
            raise ValueError(f"context has dim {x.shape[0]}, posterior has {self.dim}")
        s2 = self.noise_var
        if self._k is not None:
            self.n_updates_ += 1
            every = self.refresh_every
            refresh = bool(every) and self.n_updates_ % every == 0
            self._k.sherman_morrison(
                self.cov_, self.mean_, self.precision_, self.eta_, x, float(r), s2, not refresh
            )
            if refresh:
                self._refresh()
            return
        self.precision_ += x[:, None] * x[None, :] / s2  # np.outer(x, x) / s2
        self.eta_ += (float(r) / s2) * x
        self.n_updates_ += 1
        if self.refresh_every and self.n_updates_ % self.refresh_every == 0:
            self._refresh()
            return
        sx = self.cov_ @ x
        denom = s2 + float(x @ sx)
        self.cov_ -= sx[:, None] * sx[None, :] / denom  # np.outer(sx, sx) / denom
        self.mean_ = self.cov_ @ self.eta_

    def update_many(self, X: np.ndarray, r: np.ndarray) -> None:
        """Batch update (same posterior as sequential updates), then an exact refresh."""
        X = np.asarray(X, dtype=np.float64).reshape(-1, self.dim)
        r = np.asarray(r, dtype=np.float64).reshape(-1)
        if len(X) == 0:
            return
        self.precision_ += X.T @ X / self.noise_var
        self.eta_ += X.T @ r / self.noise_var
        self.n_updates_ += len(X)
        self._refresh()

    def _refresh(self) -> None:
        c = cho_factor(self.precision_, lower=True, check_finite=False)
        self.cov_ = cho_solve(c, np.eye(self.dim), check_finite=False)
        self.cov_ = (self.cov_ + self.cov_.T) / 2.0
        self.mean_ = cho_solve(c, self.eta_, check_finite=False)

    def __repr__(self) -> str:
        return (
            f"BayesianLinearPosterior(dim={self.dim}, "
            f"noise_var={self.noise_var}, n_updates={self.n_updates_}, backend={self.backend!r})"
        )


#: below this many rows :func:`quadratic_form` calls np.einsum itself
_EINSUM_ROWS = 64
_BLOCK_ROWS = 4096


def _kernels():
    """The compiled kernels (imported on first use: numba's import takes ~0.5 s)."""
    from quorum.routing.quorum.compiled import kernels

    return kernels


def quadratic_form(X: np.ndarray, S: np.ndarray) -> np.ndarray:
    """x_i^T S x_i for the rows of X, bit for bit ``np.einsum("ij,jk,ik->i", X, S, X)``.

    np.einsum (no ``optimize``) adds the d^2 products (x_ij S_jk) x_ik one after the
    other, j then k, per row: one row at a time, so ~1 us a row. The same products in the
    same order, vectorised over the rows (blocks of rows, x transposed), give the same
    numbers 1.5-3x faster; tests/test_routing_scale.py checks the equality against
    np.einsum (so a numpy that changes einsum's order is caught).
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    if n < _EINSUM_ROWS:
        return np.einsum("ij,jk,ik->i", X, S, X)
    out = np.empty(n)
    for start in range(0, n, _BLOCK_ROWS):
        xt = np.ascontiguousarray(X[start : start + _BLOCK_ROWS].T)  # (d, rows)
        acc = np.zeros(xt.shape[1])
        for j in range(d):
            terms = (xt[j] * S[j][:, None]) * xt  # row k: (x_ij S_jk) x_ik
            for k in range(d):
                acc += terms[k]
        out[start : start + _BLOCK_ROWS] = acc
    return out
