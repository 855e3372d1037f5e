"""How QUORUM picks an arm for one item: the routing rules, as pure functions.

Every rule takes arrays and a random generator and returns a decision ``(choice, mode)``:
``choice`` is an index into the candidate LLMs (cheapest first), or ``None`` for the human
(or for nobody when ``mode == "none"``). The run object (:mod:`quorum.routing.quorum.router`)
keeps the state: posteriors, budget, trace. Rules never touch it.

- :class:`EpsilonGreedyPolicy`: the paper's rule (sec. 3.2): decaying epsilon-greedy on
  q_a = mu_a^T x_t, escalation to the human when the best q is below tau_H.
- :func:`adaptive_tau`: tau_t rising with the money left (ours).
- :func:`shadow_price` and :func:`lagrangian_choice`: phase-2 routing as the Lagrangian
  relaxation of "maximise summed expected quality within the phase-2 money" (ours).
- :func:`value_choice`: phase-3 arm for an extra annotation, by expected errors fixed per
  unit of money (ours).

Costs enter every rule as ``lam * c_a / c_H`` (a human label is the unit of money).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numba.extending import register_jitable

#: decision modes written to the trace
MODES = (
    "explore",
    "exploit",
    "escalate",
    "shadow-price",
    "value",
    "none",
)


def decayed_epsilon(t: int, epsilon0: float, gamma: float) -> float:
    """epsilon_t = epsilon_0 / (1 + gamma t)."""
    return epsilon0 / (1.0 + gamma * t)


@dataclass(frozen=True)
class EpsilonGreedyPolicy:
    """The paper's routing rule as a validated config object (MABWiser-style).

    With probability epsilon_t an LLM is drawn uniformly (explore); otherwise the LLM with
    the highest score is taken (exploit), and if its q is below tau_H the item is escalated
    to the human.

    Examples
    --------
    >>> import numpy as np
    >>> policy = EpsilonGreedyPolicy(epsilon0=0.0, tau_h=0.5)
    >>> policy.select(np.array([0.9, 0.7]), t=0, rng=np.random.default_rng(0),
    ...               human_allowed=True)
    (0, 'exploit')
    >>> policy.select(np.array([0.4, 0.3]), t=0, rng=np.random.default_rng(0),
    ...               human_allowed=True)
    (None, 'escalate')
    """

    epsilon0: float = 0.3
    gamma: float = 0.005
    tau_h: float = 0.5

    def __post_init__(self) -> None:
        if not 0.0 <= self.epsilon0 <= 1.0:
            raise ValueError(f"epsilon0 must be in [0, 1], got {self.epsilon0}")
        if self.gamma < 0:
            raise ValueError(f"gamma must be >= 0, got {self.gamma}")

    def epsilon(self, t: int) -> float:
        return decayed_epsilon(t, self.epsilon0, self.gamma)

    def select(
        self,
        q: np.ndarray,
        t: int,
        rng: np.random.Generator,
        *,
        human_allowed: bool,
        scores: np.ndarray | None = None,
    ) -> tuple[int | None, str]:
        """Pick an index into the LLM candidates, or None for the human.

        ``q`` are the candidates' expected qualities; ``scores`` (default ``q``) is what
        exploitation maximises (e.g. q minus a cost penalty). Returns (choice, mode) with
        mode in {"explore", "exploit", "escalate", "none"}. Ties go to the lowest index
        (the cheaper arm, as candidates are sorted cheapest first).
        """
        n = len(q)
        if n == 0:
            return (None, "escalate") if human_allowed else (None, "none")
        if rng.random() < self.epsilon(t):
            return int(rng.integers(n)), "explore"
        s = q if scores is None else scores
        best = int(np.argmax(s))
        if human_allowed and float(q[best]) < self.tau_h:
            return None, "escalate"
        return best, "exploit"

    def with_tau(self, tau_h: float) -> EpsilonGreedyPolicy:
        """The same schedule with another escalation threshold (see :func:`adaptive_tau`)."""
        return EpsilonGreedyPolicy(self.epsilon0, self.gamma, tau_h)


def adaptive_tau(tau_h: float, ratio: float) -> float:
    """tau_t = tau_H + (1 - tau_H) rho_t (ours; ``adaptive_tau``).

    ``ratio`` (rho_t in [0, 1]) is the share of the remaining items a human could still be
    paid for, so weak LLM answers go to humans when the budget allows it.
    """
    return tau_h + (1.0 - tau_h) * ratio


def route_tau_ratio(spare_left: float, items_left: int, c_h: float, c_min: float) -> float:
    """rho_t in phase 2: the spare money per remaining item over what a human costs above
    the cheapest LLM, at most 1.

    >>> route_tau_ratio(2.0, 10, 0.1, 0.01)  # 0.2 an item: every item could get a human
    1.0
    >>> round(route_tau_ratio(0.45, 10, 0.1, 0.01), 6)
    0.5
    """
    per_item = max(0.0, spare_left) / max(1, items_left)
    return min(1.0, per_item / max(c_h - c_min, 1e-9))


def refine_tau_ratio(money_left: float, n_open: int, c_h: float) -> float:
    """rho_t in phase 3: the money left over a human label for every open item, at most 1.

    >>> refine_tau_ratio(0.5, 10, 0.1), refine_tau_ratio(5.0, 10, 0.1)
    (0.5, 1.0)
    """
    need = max(1.0, float(n_open)) * c_h
    return min(1.0, money_left / need)


def shadow_price(q: np.ndarray, price: np.ndarray, c_h: float, money: float) -> float:
    """The shadow price lambda of money for phase 2 (ours; ``phase2_rule="lagrangian"``).

    ``q`` is (n, K + 1): the expected quality of each arm on each item, the human last;
    ``price`` (K + 1,) each arm's price in human labels (c_a / c_H). Returns the smallest
    lambda (bisection, 50 steps) such that giving each item argmax_a (q_a - lambda price_a)
    costs at most ``money``; 0 when the unconstrained argmax already fits.

    Examples
    --------
    >>> import numpy as np
    >>> q = np.array([[0.6, 0.9, 1.0], [0.7, 0.8, 1.0]])
    >>> price = np.array([0.1, 0.5, 1.0])
    >>> shadow_price(q, price, c_h=1.0, money=10.0)  # everything affordable
    0.0
    >>> lam = shadow_price(q, price, c_h=1.0, money=0.2)  # only the cheapest arm
    >>> bool(np.all(np.argmax(q - lam * price, axis=1) == 0))
    True
    """
    if len(q) == 0:
        return 0.0

    def cost(lam: float) -> float:
        pick = np.argmax(q - lam * price, axis=1)
        return float(price[pick].sum() * c_h)

    lo, hi = 0.0, 1.0
    while cost(hi) > money and hi < 1e6:
        hi *= 2.0
    if cost(lo) <= money:
        return 0.0
    for _ in range(50):
        mid = (lo + hi) / 2.0
        if cost(mid) > money:
            lo = mid
        else:
            hi = mid
    return hi


#: the rules' decisions as codes, shared by the Python loops and their compiled twin
EXPLORE, EXPLOIT, SHADOW_PRICE, ESCALATE, NONE, VALUE = range(6)
MODE_NAMES = ("explore", "exploit", "shadow-price", "escalate", "none", "value")


@register_jitable
def lagrangian_pick(q, c, c_h, fits, nf, human_ok, lam, human_quality, tau_h, epsilon, rng):
    """:func:`lagrangian_choice` on the LLMs ``fits[:nf]`` of ``q`` and ``c``: (position in
    ``fits``, or -1 for the human or nothing; mode code). One rule for both loops: the Python
    loop runs it as Python, the compiled loop compiles it (numba's ``register_jitable``)."""
    if nf == 0:
        return (-1, ESCALATE) if human_ok else (-1, NONE)
    if rng.random() < epsilon:
        return rng.integers(0, nf), EXPLORE
    best = 0
    s_best = q[fits[0]] - lam * c[fits[0]] / c_h
    for i in range(1, nf):  # np.argmax: the first maximum (a NaN wins)
        if s_best != s_best:
            break
        s = q[fits[i]] - lam * c[fits[i]] / c_h
        if s > s_best or s != s:
            best, s_best = i, s
    if human_ok and human_quality - lam > s_best:
        return -1, SHADOW_PRICE
    if human_ok and q[fits[best]] < tau_h:
        return -1, ESCALATE
    return best, EXPLOIT


def lagrangian_choice(
    q: np.ndarray,
    c: np.ndarray,
    c_h: float,
    *,
    human_ok: bool,
    lam: float,
    human_quality: float,
    tau_h: float,
    epsilon: float,
    rng: np.random.Generator,
) -> tuple[int | None, str]:
    """Phase-2 arm under the shadow price ``lam`` (ours; ``phase2_rule="lagrangian"``).

    ``q`` and ``c`` are the affordable LLMs' qualities and prices. With probability
    ``epsilon`` explore an LLM; otherwise take argmax of q_a - lam c_a / c_H, or the human
    when human_quality - lam beats it; an LLM whose q is below tau_H is still escalated.
    """
    q, c = np.asarray(q, dtype=np.float64), np.asarray(c, dtype=np.float64)
    j, mode = lagrangian_pick(
        q, c, c_h, np.arange(len(q)), len(q), human_ok, lam, human_quality, tau_h, epsilon, rng
    )
    return (None if j < 0 else int(j)), MODE_NAMES[mode]


@register_jitable
def value_pick(q, c, c_h, p, fits, nf, human_ok, epsilon, rng):
    """:func:`value_choice` on the LLMs ``fits[:nf]`` of ``q`` (clipped to [0, 1] here)
    and ``c``: (position in ``fits``, or -1 for the human or nothing; mode code). One rule
    for both loops, as :func:`lagrangian_pick`."""
    if p >= 1.0:  # nothing can be gained: no arm is worth its price, explore or not
        return -1, NONE
    if nf > 0 and rng.random() < epsilon:
        return rng.integers(0, nf), EXPLORE
    best_k, best_v, top_q = -1, -np.inf, -np.inf
    if human_ok:
        best_v = (1.0 - p) / c_h
    for j in range(nf):
        qb = min(max(q[fits[j]], 0.0), 1.0)
        top_q = max(top_q, qb)
        p_dis = (1.0 - p) * qb + p * (1.0 - qb)
        den = c[fits[j]] + p_dis * c_h
        if den <= 0.0:  # a free LLM that is never right (q_b = p = 0): 0/0, never taken
            continue
        v = (1.0 - p) * qb / den
        if v > best_v:
            best_k, best_v = j, v
    if best_k >= 0 or human_ok:
        return best_k, VALUE
    if nf > 0 and top_q > 0.0:
        return 0, VALUE
    return -1, NONE


def value_choice(
    q: Sequence[float] | np.ndarray,
    c: Sequence[float] | np.ndarray,
    c_h: float,
    p: float,
    *,
    human_ok: bool,
    epsilon: float,
    rng: np.random.Generator,
) -> tuple[int | None, str]:
    """Phase-3 arm for one more annotation (ours; ``extra_arm_rule="value"``).

    ``q`` (clipped to [0, 1]) and ``c`` are the candidate LLMs' qualities and prices, ``p``
    the estimated chance that the item's current label is right. With probability
    ``epsilon`` explore an LLM; otherwise take the arm with the most expected errors fixed
    per unit of money: the human (1 - p) / c_H; LLM b (1 - p) q_b / (c_b + P_dis c_H), where
    P_dis = (1 - p) q_b + p (1 - q_b) is the chance that b disagrees and so sends the item
    to a human. When ``p`` is 1 every arm's value is 0 and nothing is bought
    ``(None, "none")``: the item is done (before, the tie went to the human, the dearest arm).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> value_choice(np.array([0.9]), np.array([0.01]), 0.1, p=0.5, human_ok=True,
    ...              epsilon=0.0, rng=rng)  # a cheap, good second opinion
    (0, 'value')
    >>> value_choice(np.array([0.3]), np.array([0.05]), 0.1, p=0.5, human_ok=True,
    ...              epsilon=0.0, rng=rng)  # a weak LLM: ask the human
    (None, 'value')
    >>> value_choice(np.array([0.9]), np.array([0.01]), 0.1, p=1.0, human_ok=True,
    ...              epsilon=0.5, rng=rng)  # the label is surely right: buy nothing
    (None, 'none')
    """
    q, c = np.asarray(q, dtype=np.float64), np.asarray(c, dtype=np.float64)
    j, mode = value_pick(q, c, c_h, p, np.arange(len(q)), len(q), human_ok, epsilon, rng)
    return (None if j < 0 else int(j)), MODE_NAMES[mode]
