"""Calibration: which items, how many, and what the calibration answers say about the panel.

Pure functions (arrays in, decision out); the run object makes the calls.

- :func:`mahalanobis_uncertainty` and :func:`calibration_order`: Algorithm 1 calibrates
  the items with the highest u_t first.
- :func:`calibration_size`: N_cal in the dollars setting (``calibration_budget``).
- :func:`panel_check`: whether any dearer LLM is worth its price against a human label
  (ours; ``dollars_strategy="auto"``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

_EPS = 1e-9


def mahalanobis_uncertainty(phi: np.ndarray) -> np.ndarray:
    """u_t = sqrt((phi_t - mu)^T Sigma^-1 (phi_t - mu)), with a pseudo-inverse for rank loss.

    Examples
    --------
    >>> import numpy as np
    >>> u = mahalanobis_uncertainty(np.array([[0.0, 0.0], [1.0, 1.0], [0.5, 0.5], [0.5, 0.4]]))
    >>> int(np.argmin(u))  # the item nearest the mean is the least uncertain
    2
    """
    phi = np.asarray(phi, dtype=np.float64)
    if len(phi) < 2:
        return np.zeros(len(phi))
    mu = phi.mean(axis=0)
    cov = np.atleast_2d(np.cov(phi, rowvar=False))
    inv = np.linalg.pinv(cov)
    d = phi - mu
    return np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", d, inv, d), 0.0))


def calibration_order(phi: np.ndarray) -> np.ndarray:
    """Item indices by decreasing Mahalanobis uncertainty (ties keep item order)."""
    return np.argsort(-mahalanobis_uncertainty(phi), kind="stable")


def calibration_size(
    money: float,
    n_items: int,
    llm_prices: np.ndarray,
    c_h: float,
    share: float,
    rule: str = "money",
) -> int:
    """N_cal for the dollars setting.

    ``rule="money"`` (ours, default): calibration may spend ``share * money``, each item
    costing c_H plus every LLM. ``rule="items"``: Algorithm 1's
    N_cal = floor(share * floor(B / c_H)). Either way calibration leaves enough money to
    give every other item the cheapest LLM.

    Examples
    --------
    >>> import numpy as np
    >>> calibration_size(100.0, 1000, np.array([0.01, 0.03, 0.05]), 0.1, share=0.2)
    105
    >>> calibration_size(100.0, 1000, np.array([0.01, 0.03, 0.05]), 0.1, 0.2, rule="items")
    200
    """
    c = np.asarray(llm_prices, dtype=np.float64)
    c_min = float(c.min())
    per_cal = c_h + c.sum()
    if rule == "money":
        n_cal = math.floor(share * money / per_cal + _EPS)
    elif rule == "items":
        n_cal = math.floor(share * math.floor(money / c_h + _EPS))
    else:
        raise ValueError(f"calibration rule must be 'money' or 'items', got {rule!r}")
    if per_cal > c_min:
        n_cal = min(n_cal, int((money - n_items * c_min) // (per_cal - c_min + _EPS)))
    return max(0, min(n_cal, n_items))


def probe_size(n_cal: int, probe_share: float) -> int:
    """Calibration items answered before the panel check: ceil(probe_share * N_cal)."""
    return math.ceil(probe_share * n_cal - _EPS)


@dataclass(frozen=True)
class PanelCheck:
    """Outcome of :func:`panel_check`."""

    #: index of the cheapest LLM to audit with (the most accurate among the cheapest)
    cheap: int
    #: True when no dearer LLM buys accuracy more cheaply than a human label
    dominated: bool
    #: Beta(1, 1)-smoothed calibration accuracy per LLM
    accuracy: np.ndarray


def panel_check(
    right: np.ndarray,
    prices: np.ndarray,
    c_h: float,
    alive: np.ndarray | None = None,
    *,
    human_quality: float = 1.0,
    dominance_z: float = 2.0,
) -> PanelCheck:
    """Is the panel dominated? (ours; ``dollars_strategy="auto"``).

    ``right`` (n, K) holds each LLM's reward (1 = agrees with the human label, or the
    similarity for summaries) on n human-labelled calibration items; ``prices`` (K,) the
    LLMs' prices. An LLM a "pays" when even a pessimistic estimate of its gain over the
    cheapest LLM, the mean paired difference minus ``dominance_z`` standard errors, buys
    more accuracy per unit of money than a human label:
    gain_a / (c_a - c_min) > (q_H - acc_min) / (c_H - c_min). Dominated = no LLM pays.
    If every cheapest LLM is dead (``alive`` False, live runs), the panel is reported
    not dominated so that the bandit routes around it.

    Examples
    --------
    >>> import numpy as np
    >>> right = np.array([[1, 1], [0, 1]] * 20, dtype=float)  # 50% and 100% right
    >>> panel_check(right, np.array([0.01, 0.02]), c_h=0.1).dominated  # +50% for 0.01
    False
    >>> panel_check(right[:, [0, 0]], np.array([0.01, 0.02]), c_h=0.1).dominated
    True
    """
    right = np.asarray(right, dtype=np.float64)
    c = np.asarray(prices, dtype=np.float64)
    K = len(c)
    alive = np.ones(K, dtype=bool) if alive is None else np.asarray(alive, dtype=bool)
    n = len(right)
    acc = (right.sum(axis=0) + 1.0) / (n + 2.0)
    c_min = float(c.min())
    cheapest = [k for k in range(K) if c[k] <= c_min and alive[k]]
    if not cheapest:
        return PanelCheck(0, False, acc)
    j = max(cheapest, key=lambda k: acc[k])
    if n < 2 or c_h <= c_min:
        return PanelCheck(j, False, acc)
    slope_h = (human_quality - acc[j]) / (c_h - c_min)
    for k in range(K):
        if c[k] <= c_min:
            continue
        d = right[:, k] - right[:, j]
        gain = acc[k] - acc[j] - dominance_z * d.std(ddof=1) / math.sqrt(n)
        if gain / (c[k] - c_min) > slope_h:
            return PanelCheck(j, False, acc)
    return PanelCheck(j, True, acc)


def agreement_reward(n_agreed: int, n_right: int, n_labels: int) -> tuple[float, float]:
    """Rewards for an LLM on an item settled without a human label (ours;
    ``agreement_reward_value="calibrated"``): (if it agrees with the majority, if not).

    Rewarding agreement with 1 teaches the posteriors that shared errors are right, and
    agreement rewards arrive only where the LLMs agreed. Instead the reward is its expected
    value: the majority is right with pi = P(LLM consensus is right), measured on the
    ``n_agreed`` human-labelled items where the LLMs reached consensus (``n_right`` of them
    right; Beta(1, 1)-smoothed), and a dissenting answer is right with
    (1 - pi) / (n_labels - 1) (errors spread evenly over the other labels).

    Examples
    --------
    >>> agreement_reward(0, 0, 2)  # nothing measured yet
    (0.5, 0.5)
    >>> a, d = agreement_reward(98, 88, 4); round(a, 3), round(d, 3)
    (0.89, 0.037)
    """
    pi = (n_right + 1.0) / (n_agreed + 2.0)
    return pi, (1.0 - pi) / max(n_labels - 1, 1)
