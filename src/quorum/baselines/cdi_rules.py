"""CDI's rules (Gligoric et al., 2025), each a pure function: the error model on the
confidence, the sampling probabilities (the authors' budget-summing form and the
notebooks' stream form) and the error of a summary. The router is
:mod:`quorum.baselines.cdi`."""

from __future__ import annotations

from typing import Literal

import numpy as np

from quorum.baselines._signals import embed_texts, paired_cosine
from quorum.routing.core.base import AnnotationSource

__all__ = [
    "ErrorModel",
    "budget_probabilities",
    "fit_error_model",
    "sampling_probability",
    "summary_errors",
]

ErrorModel = Literal["gbr", "isotonic", "logistic"]


def fit_error_model(kind: ErrorModel, conf: np.ndarray, err: np.ndarray):
    """A callable confidence -> expected error, fitted on (conf, err); constant if degenerate."""
    conf = np.asarray(conf, dtype=np.float64)
    err = np.asarray(err, dtype=np.float64)
    if len(err) == 0:
        return lambda c: np.ones(len(c))
    mean = float(err.mean())
    if len(err) < 2 or np.ptp(err) == 0 or np.ptp(conf) == 0:
        return lambda c: np.full(len(c), mean)
    if kind == "isotonic":
        from sklearn.isotonic import IsotonicRegression

        m = IsotonicRegression(increasing=False, out_of_bounds="clip", y_min=0.0, y_max=1.0)
        m.fit(conf, err)
        return lambda c: m.predict(np.asarray(c, dtype=np.float64))
    if kind == "logistic":
        from sklearn.linear_model import LogisticRegression

        if not np.isin(err, (0.0, 1.0)).all():  # continuous errors (summaries): bin at 0.5
            err = (err >= 0.5).astype(float)
            if np.ptp(err) == 0:
                return lambda c: np.full(len(c), mean)
        m = LogisticRegression().fit(conf[:, None], err.astype(int))
        return lambda c: m.predict_proba(np.asarray(c, dtype=np.float64)[:, None])[:, 1]
    if kind == "gbr":
        from sklearn.ensemble import GradientBoostingRegressor

        x, y, w = _histogram(conf, err)
        m = GradientBoostingRegressor(n_estimators=20, learning_rate=0.1, max_depth=3)
        m.fit(x[:, None], y, sample_weight=w)
        return lambda c: m.predict(np.asarray(c, dtype=np.float64)[:, None])
    raise ValueError(f"error_model must be 'gbr', 'isotonic' or 'logistic', got {kind!r}")


def _histogram(
    conf: np.ndarray, err: np.ndarray, bins: int = 256
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Quantile bins of the confidence (as XGBoost's ``hist`` method): mean confidence,
    mean error and count per bin. Squared-error boosting on these weighted points equals
    boosting on the binned raw points, at a fraction of the cost."""
    edges = np.unique(np.quantile(conf, np.linspace(0.0, 1.0, bins + 1)[1:-1]))
    b = np.searchsorted(edges, conf)
    cnt = np.bincount(b, minlength=len(edges) + 1).astype(np.float64)
    keep = cnt > 0
    xs = np.bincount(b, weights=conf, minlength=len(edges) + 1)[keep] / cnt[keep]
    ys = np.bincount(b, weights=err, minlength=len(edges) + 1)[keep] / cnt[keep]
    return xs, ys, cnt[keep]


def budget_probabilities(scale: np.ndarray, n_human: float) -> np.ndarray:
    """``min(1, c * scale)`` with ``c`` bisected so that the sum is ``n_human`` (the
    authors' ``compute_sampling_probs``); clipped to ``[1e-8, 1]``."""
    scale = np.asarray(scale, dtype=np.float64)
    if len(scale) == 0:
        return np.empty(0)
    if n_human <= 0:
        return np.zeros(len(scale))
    if n_human >= len(scale):
        return np.ones(len(scale))
    lo, hi = 0.0, 1e6
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        if np.minimum(1.0, mid * scale).sum() > n_human:
            hi = mid
        else:
            lo = mid
    return np.clip(np.minimum(1.0, 0.5 * (lo + hi) * scale), 1e-8, 1.0)


def sampling_probability(u_t: float, mean_u: float, frac: float, tau: float) -> float:
    """CDI's pi_t: proportional to uncertainty, mixed with uniform by ``tau``, clipped."""
    p = u_t / mean_u * frac if mean_u > 0 else frac
    return float(np.clip((1.0 - tau) * p + tau * frac, 0.0, 1.0))


def summary_errors(
    source: AnnotationSource, pairs: list[tuple[int, str]], llm_out: np.ndarray
) -> list[float]:
    """``1 - cos(human summary, LLM summary)`` per (item, human text); 1 if no LLM text."""
    err = [1.0] * len(pairs)
    ok = [(j, h, llm_out[t]) for j, (t, h) in enumerate(pairs) if llm_out[t] is not None]
    if ok:
        emb, _ = embed_texts(source, [h for _, h, _ in ok] + [m for _, _, m in ok])
        n = len(ok)
        cos = np.clip(paired_cosine(emb[:n], emb[n:]), 0.0, 1.0)
        for (j, _, _), c in zip(ok, cos, strict=True):
            err[j] = float(1.0 - c)
    return err
