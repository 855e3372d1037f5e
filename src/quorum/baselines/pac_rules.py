"""PAC labeling's rules (tijana-zrnic/pac-labels, read, not copied), each a pure function:
the calibration draws, the CLT upper bound, the threshold search and the two-threshold
cascade of :mod:`quorum.baselines.hypac_ensemble`."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import norm

__all__ = ["finite_or_none", "pac_draws", "pac_threshold", "two_thresholds", "ucb"]


def pac_draws(
    rng: np.random.Generator, pool: np.ndarray, num_draws: int, prob: float, cap: int
) -> tuple[list[int], list[int], list[int]]:
    """``num_draws`` items drawn from ``pool`` uniformly with replacement, each kept with
    probability ``prob`` (xi ~ Bernoulli(prob)); drawing stops when a new kept item would
    pass ``cap``. Returns (drawn items, their xi, the kept items in first-kept order).

    >>> import numpy as np
    >>> drawn, xi, kept = pac_draws(np.random.default_rng(0), np.arange(10), 20, 0.5, 3)
    >>> len(set(kept)) == len(kept) <= 3, len(drawn) == len(xi)
    (True, True)
    """
    draws_i: list[int] = []
    draws_xi: list[int] = []
    kept: dict[int, None] = {}
    if len(pool):
        for _ in range(num_draws):
            i = int(pool[rng.integers(len(pool))])
            xi = int(rng.random() < prob)
            if xi and i not in kept and len(kept) >= cap:
                break  # calibration budget spent: stop drawing
            draws_i.append(i)
            draws_xi.append(xi)
            if xi:
                kept[i] = None
    return draws_i, draws_xi, list(kept)


def finite_or_none(x: float) -> float | None:
    """JSON-friendly threshold: None for +inf (no item above it)."""
    return None if not np.isfinite(x) else float(x)


def ucb(z: np.ndarray, alpha: float) -> float:
    """One-sided CLT upper bound of the mean of ``z`` (as ``mean_ci`` in pac-labels)."""
    if len(z) == 0:
        return np.inf
    return float(z.mean() + norm.isf(alpha) * z.std() / np.sqrt(len(z)))


def pac_threshold(
    candidates: np.ndarray,
    u_draw: np.ndarray,
    z_draw: np.ndarray,
    epsilon: float,
    alpha: float,
) -> float:
    """Largest candidate ``lambda`` with ``UCB(z * 1[u < lambda]) <= epsilon``.

    ``candidates`` sorted ascending; ``u_draw``/``z_draw`` the uncertainty and weighted loss
    of each draw. Binary search as in pac-labels; returns ``candidates[0]`` (everything to
    the human) when no candidate passes.
    """
    lo, hi = 0, len(candidates) - 1
    while lo <= hi:
        j = (lo + hi) // 2
        if ucb(z_draw * (u_draw < candidates[j]), alpha) > epsilon:
            hi = j - 1
        else:
            lo = j + 1
    return float(candidates[max(lo - 1, 0)])


def two_thresholds(
    grid: np.ndarray,
    u_open: np.ndarray,
    u_draw: np.ndarray,
    z_cheap: np.ndarray,
    z_strong: np.ndarray,
    alpha: float,
    c_strong: float,
    c_human: float,
) -> pd.DataFrame:
    """Bound and cost of every pair ``lambda_S <= lambda_H`` on ``grid``.

    Items with ``u < lambda_S`` keep the cheap LLM, ``lambda_S <= u < lambda_H`` go to the
    strong LLM, ``u >= lambda_H`` to the human. ``bound`` is the CLT upper bound of the
    cascade's importance-weighted error on the draws; ``cost`` what the open items
    (``u_open``) would cost.
    """
    uo = np.sort(u_open)
    below = np.searchsorted(uo, grid, side="left")
    rows = []
    for j2, lam_h in enumerate(grid):
        lam_s = grid[: j2 + 1]
        strong_part = np.where(u_draw < lam_h, z_strong, 0.0)
        z = np.where(u_draw[None, :] < lam_s[:, None], z_cheap[None, :], strong_part[None, :])
        if z.shape[1]:
            bound = z.mean(axis=1) + norm.isf(alpha) * z.std(axis=1) / np.sqrt(z.shape[1])
        else:
            bound = np.full(len(lam_s), np.inf)
        n_s = below[j2] - below[: j2 + 1]
        n_h = np.full(len(lam_s), len(uo) - below[j2])
        rows.append(
            pd.DataFrame(
                {"lam_s": lam_s, "lam_h": lam_h, "bound": bound, "n_strong": n_s, "n_human": n_h}
            )
        )
    out = pd.concat(rows, ignore_index=True)
    out["cost"] = out["n_strong"] * c_strong + out["n_human"] * c_human
    return out
