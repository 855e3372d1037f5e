"""The paper preset's rules (``--method quorum-paper``), each a pure function: the
authors' code (amazon-science/QUORUM) read rule by rule; no text of that code is used.
The run that applies them is :mod:`~quorum.routing.paper.run`; the estimator and the
list of where the code and the paper differ, :mod:`~quorum.routing.paper.router`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from quorum.features.linguistic import LINGUISTIC_FEATURES
from quorum.routing.core.base import RoutingProblem

__all__ = [
    "auditor_calibration_size",
    "base_from_problem",
    "paper_base_features",
    "paper_calibration_size",
    "paper_select",
    "paper_uncertainty",
    "per_step_arms",
    "refinement_order",
]

#: tolerance of money comparisons (the code compares floats directly)
_TOL = 1e-9


def _global_minmax(a: np.ndarray) -> np.ndarray:
    """(a - min) / (max - min) with ONE min and max over the whole array (0 if constant)."""
    lo, hi = float(np.min(a)), float(np.max(a))
    if not hi > lo:
        return np.zeros_like(a, dtype=np.float64)
    return (a - lo) / (hi - lo)


def paper_base_features(raw: np.ndarray, n_linguistic: int = 6) -> np.ndarray:
    """The code's item features: (T, n_linguistic + 1), every column z-scored.

    ``raw`` holds the linguistic features (first ``n_linguistic`` columns, NaN read as 0)
    and the cosine distances to the k nearest other items (the other columns). The
    linguistic block is min-max scaled with one min and max over the whole block; the
    distances become one density feature 1 - minmax(1 / (mean distance + 1e-6)); then
    each column is z-scored with std + 1e-8.

    Examples
    --------
    >>> import numpy as np
    >>> raw = np.array([[4.0, 0.5, 0.1, 0.2], [5.0, 0.7, 0.1, 0.3], [6.0, 0.6, 0.9, 0.8]])
    >>> X = paper_base_features(raw, n_linguistic=2)
    >>> X.shape, np.allclose(X.mean(axis=0), 0.0)
    ((3, 3), True)
    >>> int(np.argmax(X[:, 2]))  # the most isolated item has the highest density feature
    2
    """
    raw = np.asarray(raw, dtype=np.float64)
    if raw.ndim != 2 or raw.shape[1] < n_linguistic:
        raise ValueError(f"raw must be (T, >= {n_linguistic}), got {raw.shape}")
    ling = np.nan_to_num(raw[:, :n_linguistic], nan=0.0, posinf=0.0, neginf=0.0)
    cols = [_global_minmax(ling)] if n_linguistic else []
    dist = raw[:, n_linguistic:]
    if dist.shape[1]:
        mean_d = np.nan_to_num(dist, nan=1.0).mean(axis=1)
        density = 1.0 / (mean_d + 1e-6)
        cols.append((1.0 - _global_minmax(density))[:, None])
    X = np.hstack(cols) if cols else np.zeros((len(raw), 0))
    return (X - X.mean(axis=0)) / (X.std(axis=0) + 1e-8)


def paper_uncertainty(base: np.ndarray) -> np.ndarray:
    """Mahalanobis distance to the mean, covariance + 1e-6 I inverted (the code's u_t).

    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [1.0, 0.1], [2.0, 0.2], [3.0, 0.3], [1.0, 2.0]])
    >>> int(np.argmax(paper_uncertainty(X)))
    4
    """
    X = np.asarray(base, dtype=np.float64)
    if len(X) < 2 or X.shape[1] == 0:
        return np.zeros(len(X))
    cov = np.atleast_2d(np.cov(X, rowvar=False))
    inv = np.linalg.inv(cov + 1e-6 * np.eye(cov.shape[0]))
    d = X - X.mean(axis=0)
    return np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", d, inv, d), 0.0))


def paper_calibration_size(
    money: float,
    c_h: float,
    share: float = 0.8,
    per_item_cost: float | None = None,
    n_items: int | None = None,
) -> int:
    """Dollars calibration size.

    The code: max(1, int(share * int(B / c_H))) human labels, the LLM answers free
    (``per_item_cost=None``). Paid (``per_item_cost = c_H + sum c_a``): the same share of
    the money, max(1, int(share * B / per_item_cost)) items, never more than B affords.
    At most ``n_items``.

    >>> paper_calibration_size(45.0, 0.1)  # int(0.8 * 450)
    360
    >>> paper_calibration_size(45.0, 0.1, per_item_cost=0.19)  # int(0.8 * 45 / 0.19)
    189
    """
    if per_item_cost is None:
        n = max(1, int(share * int(money / c_h + _TOL)))
    else:
        if per_item_cost > money + _TOL:
            return 0
        n = max(1, int(share * money / per_item_cost + _TOL))
        n = min(n, int(money / per_item_cost + _TOL))
    return n if n_items is None else min(n, n_items)


def auditor_calibration_size(human_budget: int, share: float = 0.15, minimum: int = 5) -> int:
    """Auditor calibration slice: max(minimum, int(share * B)), at most B.

    (The code does not cap it; with B < 5 its slice of the remaining items goes negative.)

    >>> auditor_calibration_size(450), auditor_calibration_size(20), auditor_calibration_size(3)
    (67, 5, 3)
    """
    return max(0, min(max(minimum, int(share * human_budget)), human_budget))


def per_step_arms(
    remaining: float, steps_left: int, prices: np.ndarray, cheapest: int
) -> list[int] | None:
    """Arms phase 2 may use for one item (the code's per-step spending rule).

    ``prices`` lists every arm (the human included); arms priced at most
    remaining / steps_left qualify; if none does, the ``cheapest`` LLM alone while it is
    affordable; None (stop routing) when even that is not.

    >>> import numpy as np
    >>> prices = np.array([0.01, 0.03, 0.05, 0.1])  # three LLMs and the human
    >>> per_step_arms(5.0, 50, prices, 0), per_step_arms(1.0, 50, prices, 0)
    ([0, 1, 2, 3], [0])
    >>> per_step_arms(0.3, 50, prices, 0), per_step_arms(0.005, 50, prices, 0)
    ([0], None)
    """
    per_step = remaining / max(int(steps_left), 1)
    avail = [a for a, c in enumerate(np.asarray(prices)) if c <= per_step + _TOL]
    if avail:
        return avail
    if remaining + _TOL < float(prices[cheapest]):
        return None
    return [int(cheapest)]


def paper_select(
    q: np.ndarray,
    *,
    human_ok: bool,
    epsilon: float,
    tau_h: float,
    rng: np.random.Generator,
) -> tuple[int | None, str]:
    """The code's arm choice among available LLMs (``q`` clipped to [0, 1], in arm order).

    Escalation comes first: the human when it is available and the best q is below
    tau_H; then exploration with probability ``epsilon``; else the best LLM (ties: the
    first in arm order). No LLM available: the human if available, else nobody.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> paper_select(np.array([0.4, 0.3]), human_ok=True, epsilon=1.0, tau_h=0.5, rng=rng)
    (None, 'escalate')
    >>> paper_select(np.array([1.0, 1.0]), human_ok=True, epsilon=0.0, tau_h=0.5, rng=rng)
    (0, 'exploit')
    """
    q = np.asarray(q, dtype=np.float64)
    if len(q) == 0:
        return (None, "escalate") if human_ok else (None, "none")
    best = int(np.argmax(q))
    if human_ok and float(q[best]) < tau_h:
        return None, "escalate"
    if rng.random() < epsilon:
        return int(rng.integers(len(q))), "explore"
    return best, "exploit"


def refinement_order(
    d0: np.ndarray,
    uncertainty: np.ndarray,
    disagreement: np.ndarray,
    has_human: ArrayLike,
    n_valid: ArrayLike,
    consensus: ArrayLike,
    *,
    max_annotations: int = 3,
    disagreement_weight: float = 2.0,
    no_human_bonus: float = 0.5,
) -> np.ndarray:
    """Items in the code's refinement priority order (highest first, ties by index).

    Eligible: fewer than ``max_annotations`` usable annotations and not (consensus with
    at least 2). Score D0_t + U_t + 2 Delta_t + 0.5 1(no human); items with no usable
    annotation come first (score +inf).

    >>> import numpy as np
    >>> refinement_order(np.zeros(4), np.array([0.1, 0.2, 0.3, 0.0]), np.array([0, 0, 0, .5]),
    ...                  np.array([True, False, True, False]), np.array([1, 1, 3, 2]),
    ...                  np.array([True, True, False, False])).tolist()
    [3, 1, 0]
    """
    n_valid = np.asarray(n_valid)
    has_human = np.asarray(has_human, dtype=bool)
    eligible = (n_valid < max_annotations) & ~(np.asarray(consensus, dtype=bool) & (n_valid >= 2))
    score = (
        np.asarray(d0, dtype=np.float64)
        + np.asarray(uncertainty, dtype=np.float64)
        + disagreement_weight * np.asarray(disagreement, dtype=np.float64)
        + no_human_bonus * (~has_human)
    )
    score = np.where(n_valid == 0, np.inf, score)
    idx = np.flatnonzero(eligible)
    return idx[np.argsort(-score[idx], kind="stable")]


def base_from_problem(problem: RoutingProblem) -> tuple[np.ndarray, str]:
    """The code's base features for ``problem`` and where they came from."""
    names = list(problem.feature_names or [])
    n_ling = len(LINGUISTIC_FEATURES)
    standard = tuple(names[:n_ling]) == LINGUISTIC_FEATURES and all(
        n.startswith("knn_dist") for n in names[n_ling:]
    )
    raw = problem.raw_features
    if raw is not None and standard:
        return paper_base_features(raw, n_ling), "raw linguistic + kNN distances"
    if standard:
        return (
            paper_base_features(problem.phi, n_ling),
            "phi (percentile-scaled: no raw features given)",
        )
    src = problem.phi if raw is None else raw
    return paper_base_features(src, src.shape[1]), "other features: all columns as one block"
