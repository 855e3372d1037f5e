"""A QUORUM run's arm models: the contexts x_t, every arm's posterior, the exploration
schedule and which items have given their rewards.

x_t = [phi(d_t), b_t, p_t, m_t, 1] (:class:`~quorum.features.context.ContextBuilder`);
q_a(x) = mu_a^T x is an LLM's estimated quality
(:class:`~quorum.routing.quorum.posterior.BayesianLinearPosterior`); the human arm has its own
posterior. An arm is rewarded once per item, with the context it was asked with
(:class:`~quorum.routing.quorum.asked.AskedContexts`).
"""

from __future__ import annotations

import numpy as np

from quorum.features.context import ContextBuilder
from quorum.routing.core.base import RoutingProblem
from quorum.routing.quorum.asked import AskedContexts
from quorum.routing.quorum.params import QuorumParams
from quorum.routing.quorum.policy import EpsilonGreedyPolicy
from quorum.routing.quorum.posterior import BayesianLinearPosterior

__all__ = ["ArmModels"]


class ArmModels:
    """Posteriors and contexts of the LLMs ``llm_names`` and the human ``human``."""

    def __init__(
        self, cfg: QuorumParams, problem: RoutingProblem, llm_names: list[str], human: str
    ) -> None:
        self.llm_names = llm_names
        self.K = len(llm_names)
        self.human = human
        T = problem.n_items
        self.policy = EpsilonGreedyPolicy(cfg.epsilon0, cfg.gamma, cfg.tau_h)
        self.ctx = ContextBuilder(problem.phi, problem.feature_names, llm_names, cfg.include_bias)
        self.dim = self.ctx.dim
        bp = slice(self.ctx.b_index, self.ctx.p_index + 1)  # b_t, p_t
        pv_llm = np.full(self.dim, float(cfg.prior_var_llm))
        pv_llm[bp] = cfg.budget_prior_var
        pv_h = np.full(self.dim, float(cfg.prior_var_human))
        pv_h[bp] = cfg.budget_prior_var
        backend = cfg.posterior_backend
        self.post = {
            a: BayesianLinearPosterior(self.dim, 0.0, pv_llm, cfg.reward_noise, backend=backend)
            for a in llm_names
        }
        self.post_h = BayesianLinearPosterior(
            self.dim, cfg.prior_mean_human, pv_h, cfg.reward_noise, backend=backend
        )
        self.pessimism = cfg.pessimism
        #: m_t: which LLMs answered item t
        self.mask = np.zeros((T, self.K))
        #: x_t each arm was asked with, and which arms had their reward
        self.asked = AskedContexts(T, [*llm_names, human], self.dim)
        #: items whose arms have had their rewards
        self.settled = np.zeros(T, dtype=bool)
        #: exploration time: decisions so far (items in phases 1-2, picks in phase 3)
        self.t_explore = 0
        #: (items with a human label where the LLMs reached consensus, consensus right)
        self.agreed_seen = (0, 0)

    def epsilon(self) -> float:
        """epsilon_t at the current exploration time."""
        return self.policy.epsilon(self.t_explore)

    def context(self, t: int, b: float, p: float, mask: np.ndarray | None = None) -> np.ndarray:
        """x_t = [phi(d_t), b_t, p_t, m_t, 1]; ``mask`` defaults to m_t."""
        return self.ctx.row(t, b, p, self.mask[t] if mask is None else mask)

    def contexts(self, idx, b: float, p: float, mask: np.ndarray | None = None) -> np.ndarray:
        """x_t for many items at once (rows of ``idx``); ``mask`` defaults to m_t."""
        idx = np.asarray(idx, dtype=int)
        return self.ctx.rows(idx, b, p, self.mask[idx] if mask is None else mask)

    def unasked_contexts(self, idx, b: float, p: float) -> np.ndarray:
        """x_t of the rows of ``idx`` with no LLM answer in m_t."""
        return self.contexts(idx, b, p, np.zeros((len(idx), self.K)))

    def difficulty(self, X: np.ndarray) -> np.ndarray:
        """D_t = (1/K) sum_a x_t^T Sigma_a x_t for the rows of X."""
        posts = [self.post[a] for a in self.llm_names]
        k = posts[0]._k if posts else None
        if k is not None and np.ndim(X) == 2 and all(p._k is not None for p in posts):
            # one compiled call, the same sums in the same order as np.mean below
            X = np.ascontiguousarray(X, dtype=np.float64)
            if X.shape[1] == posts[0].dim:
                return k.mean_quad_rows(X, np.stack([p.cov_ for p in posts]))
        return np.mean([p.variance(X) for p in posts], axis=0)

    def q_values(self, x: np.ndarray) -> np.ndarray:
        """q_a(x) = mu_a^T x of every LLM (a posterior draw where the posterior pulls one)."""
        # BayesianLinearPosterior.pull (x @ mean_), inlined: the same products
        post = self.post
        return np.array([x @ post[a].mean_ for a in self.llm_names])

    def q_means(self, X: np.ndarray) -> np.ndarray:
        """mu_a^T x_t of every LLM for the rows of X (n, K)."""
        return np.column_stack([X @ self.post[a].mean_ for a in self.llm_names])

    def q_lower(self, X: np.ndarray) -> np.ndarray:
        """mu_a^T x - kappa sqrt(x^T Sigma_a x) for one context (K,) or many (n, K)."""
        kappa = self.pessimism
        cols = []
        for a in self.llm_names:
            post = self.post[a]
            q = post.pull(X)
            if kappa > 0:
                q = q - kappa * np.sqrt(np.maximum(post.variance(X), 0.0))
            cols.append(q)
        return np.array(cols) if np.ndim(X) == 1 else np.column_stack(cols)

    def trust_order(self, t: int, b: float) -> list[str]:
        """Trust order for tie-breaks: the human, then LLMs by estimated quality q_a(x_t)."""
        q = self.q_values(self.context(t, b, 1.0))
        order = np.argsort(-q, kind="stable")
        return [self.human, *(self.llm_names[k] for k in order)]

    def mark_asked(self, t: int, arm: str, x: np.ndarray) -> None:
        """Arm ``arm`` was asked on item t with context x (an LLM enters m_t)."""
        self.asked.put(t, arm, x)
        if arm != self.human:
            self.mask[t, self.llm_names.index(arm)] = 1.0

    def posterior_means(self) -> dict[str, list[float]]:
        out = {a: p.mean_.tolist() for a, p in self.post.items()}
        out[self.human] = self.post_h.mean_.tolist()
        return out
