"""Normalisation of phi(d_t) and the router context x_t (paper, sec. 3.1).

``x_t = [phi(d_t), b_t, p_t, m_t, 1]`` where phi(d_t) are the normalised features, b_t the
remaining budget fraction, p_t = t / T the progress, m_t the binary mask of the K LLMs
already asked about d_t, and the trailing 1 a bias term (ours, not in the paper; drop it
with ``bias=False``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted


class FeatureScaler(TransformerMixin, BaseEstimator):
    """Per-feature robust min-max scaling of phi to [0, 1].

    ``fit`` stores the ``lower``-th and ``upper``-th percentiles of each column (NaN and inf
    ignored). ``transform`` clips to them and maps linearly to [0, 1]. Constant columns
    (upper == lower, or no finite value at fit time) become 0; NaN inputs become
    ``nan_value`` (0.5: "unknown", the middle of the range; e.g. Japanese word length).
    """

    def __init__(self, lower: float = 1.0, upper: float = 99.0, nan_value: float = 0.5) -> None:
        self.lower = lower
        self.upper = upper
        self.nan_value = nan_value

    def _check(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"expected a 2-d (n, m) array, got shape {X.shape}")
        return X

    def fit(self, X: np.ndarray, y: object = None) -> FeatureScaler:
        if not 0.0 <= self.lower < self.upper <= 100.0:
            raise ValueError(f"need 0 <= lower < upper <= 100, got {self.lower}, {self.upper}")
        X = self._check(X)
        Xf = np.where(np.isfinite(X), X, np.nan)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
            if len(Xf):
                self.lower_ = np.nanpercentile(Xf, self.lower, axis=0)
                self.upper_ = np.nanpercentile(Xf, self.upper, axis=0)
            else:
                self.lower_ = self.upper_ = np.full(X.shape[1], np.nan)
        span = self.upper_ - self.lower_
        self.constant_ = ~(span > 0)
        self.scale_ = np.where(self.constant_, 1.0, span)
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        check_is_fitted(self, "scale_")
        X = self._check(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, the scaler was fit on {self.n_features_in_}"
            )
        lo = np.where(self.constant_, 0.0, self.lower_)
        hi = np.where(self.constant_, 0.0, self.upper_)
        with np.errstate(invalid="ignore"):
            out = (np.clip(X, lo, hi) - lo) / self.scale_
        out[:, self.constant_] = 0.0
        out[np.isnan(X)] = self.nan_value
        return out


def _fraction(x: float | np.ndarray, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if not np.isfinite(a).all() or (a < 0).any() or (a > 1).any():
        raise ValueError(f"{name} must be in [0, 1], got {x!r}")
    return a


def _mask(m: np.ndarray | Sequence[int], ndim: int) -> np.ndarray:
    a = np.asarray(m, dtype=np.float64)
    if a.ndim != ndim:
        raise ValueError(f"m must be a {ndim}-d binary mask, got shape {a.shape}")
    if not np.isin(a, (0.0, 1.0)).all():
        raise ValueError("m must be binary (0/1 or bool)")
    return a


def context_vector(
    phi_t: np.ndarray,
    b_t: float,
    p_t: float,
    m_t: np.ndarray | Sequence[int],
    bias: bool = True,
) -> np.ndarray:
    """x_t = [phi(d_t), b_t, p_t, m_t, 1], a 1-d float64 array of length m + 2 + K (+1)."""
    phi_t = np.asarray(phi_t, dtype=np.float64)
    if phi_t.ndim != 1:
        raise ValueError(f"phi_t must be 1-d (m,), got shape {phi_t.shape}")
    if not np.isfinite(phi_t).all():
        raise ValueError("phi_t contains NaN or inf: normalise it with FeatureScaler first")
    b = _fraction(b_t, "b_t (remaining budget fraction)")
    p = _fraction(p_t, "p_t (progress t/T)")
    if b.ndim or p.ndim:
        raise ValueError("b_t and p_t must be scalars")
    parts = [phi_t, [float(b)], [float(p)], _mask(m_t, 1)]
    if bias:
        parts.append([1.0])
    return np.concatenate(parts)


def context_matrix(
    phi: np.ndarray,
    b: float | np.ndarray,
    p: float | np.ndarray,
    m: np.ndarray,
    bias: bool = True,
) -> np.ndarray:
    """Rows x_t for many items: phi (n, m), b and p scalars or (n,), m (n, K) -> (n, m+2+K(+1))."""
    phi = np.asarray(phi, dtype=np.float64)
    if phi.ndim != 2:
        raise ValueError(f"phi must be 2-d (n, m), got shape {phi.shape}")
    if not np.isfinite(phi).all():
        raise ValueError("phi contains NaN or inf: normalise it with FeatureScaler first")
    n = len(phi)
    cols = []
    for val, name in ((b, "b (remaining budget fraction)"), (p, "p (progress t/T)")):
        a = _fraction(val, name)
        if a.ndim > 1 or (a.ndim == 1 and len(a) != n):
            raise ValueError(f"{name} must be a scalar or have shape ({n},), got {a.shape}")
        cols.append(np.broadcast_to(a, (n,))[:, None])
    mm = _mask(m, 2)
    if len(mm) != n:
        raise ValueError(f"m must have shape ({n}, K), got {mm.shape}")
    parts = [phi, *cols, mm]
    if bias:
        parts.append(np.ones((n, 1)))
    return np.hstack(parts)


def context_names(
    feature_names: Sequence[str], llm_names: Sequence[str], bias: bool = True
) -> list[str]:
    """Column names of :func:`context_vector`: features, ``b``, ``p``, ``m[<llm>]``, ``bias``."""
    names = [*feature_names, "b", "p", *(f"m[{a}]" for a in llm_names)]
    return [*names, "bias"] if bias else names


class ContextBuilder:
    """Builds the router context x_t = [phi(d_t), b_t, p_t, m_t, 1] for one run's items.

    ``phi`` (T, m) is validated once; :meth:`row` and :meth:`rows` then assemble contexts
    without per-call checks (the router calls them for every decision). ``names_`` are
    the column names (feature names, ``b``, ``p``, ``m[<llm>]``, ``bias``), carried so that
    posterior weights can be read by name.

    Examples
    --------
    >>> import numpy as np
    >>> ctx = ContextBuilder(np.array([[0.2, 0.4]]), ["len", "knn1"], ["gpt", "claude"])
    >>> ctx.row(0, b=0.5, p=0.0, mask=np.array([1.0, 0.0])).tolist()
    [0.2, 0.4, 0.5, 0.0, 1.0, 0.0, 1.0]
    >>> ctx.names_
    ['len', 'knn1', 'b', 'p', 'm[gpt]', 'm[claude]', 'bias']
    """

    def __init__(
        self,
        phi: np.ndarray,
        feature_names: Sequence[str] | None,
        llm_names: Sequence[str],
        bias: bool = True,
    ) -> None:
        phi = np.asarray(phi, dtype=np.float64)
        if phi.ndim != 2:
            raise ValueError(f"phi must be 2-d (n, m), got shape {phi.shape}")
        if not np.isfinite(phi).all():
            raise ValueError("phi contains NaN or inf: normalise it with FeatureScaler first")
        m = phi.shape[1]
        if feature_names is None:
            feature_names = [f"phi{i}" for i in range(m)]
        if len(feature_names) != m:
            raise ValueError(f"{len(feature_names)} feature names for {m} feature columns")
        self.phi = phi
        self.bias = bias
        self.n_features = m
        self.n_llms = len(llm_names)
        self.names_ = context_names(feature_names, llm_names, bias)
        #: column of b_t and of p_t in x_t
        self.b_index = m
        self.p_index = m + 1

    @property
    def dim(self) -> int:
        return len(self.names_)

    def row(self, t: int, b: float, p: float, mask: np.ndarray) -> np.ndarray:
        """x_t for item ``t`` with remaining budget fraction ``b``, progress ``p``, mask m_t."""
        # the values np.concatenate([phi_t, [b, p], mask, [1.0]]) gives, written in place
        m = self.n_features
        mask = np.asarray(mask)
        out = np.empty(m + 2 + mask.shape[0] + (1 if self.bias else 0))
        out[:m] = self.phi[t]
        out[m] = b
        out[m + 1] = p
        out[m + 2 : m + 2 + mask.shape[0]] = mask
        if self.bias:
            out[-1] = 1.0
        return out

    def rows(
        self, idx: Sequence[int] | np.ndarray, b: float, p: float, mask: np.ndarray
    ) -> np.ndarray:
        """x_t for the items ``idx`` at once, ``mask`` (len(idx), K)."""
        idx = np.asarray(idx, dtype=int)
        n = len(idx)
        parts = [self.phi[idx], np.full((n, 1), b), np.full((n, 1), p), mask]
        if self.bias:
            parts.append(np.ones((n, 1)))
        return np.hstack(parts)
