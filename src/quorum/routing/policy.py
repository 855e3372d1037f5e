"""Decaying epsilon-greedy selection with escalation to the human (paper, sec. 3.2).

epsilon_t = epsilon_0 / (1 + gamma t). With probability epsilon_t an LLM is drawn
uniformly (explore); otherwise the LLM with the highest q_a = mu_a^T x_t is taken
(exploit), and if that best q is below tau_H the item is escalated to the human.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EpsilonGreedyPolicy:
    """Validated config object for the routing rule (MABWiser-style)."""

    epsilon0: float = 0.3
    gamma: float = 0.005
    tau_h: float = 0.5

    def __post_init__(self) -> None:
        if not 0.0 <= self.epsilon0 <= 1.0:
            raise ValueError(f"epsilon0 must be in [0, 1], got {self.epsilon0}")
        if self.gamma < 0:
            raise ValueError(f"gamma must be >= 0, got {self.gamma}")

    def epsilon(self, t: int) -> float:
        return self.epsilon0 / (1.0 + self.gamma * t)

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
        mode in {"explore", "exploit", "escalate"}. Ties go to the lowest index (the
        cheaper arm, as candidates are sorted cheapest first).
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
