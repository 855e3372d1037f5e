"""A QUORUM run's label model: P(y | x, answers) from the human labels bought so far.

The rules are pure functions in :mod:`~quorum.routing.core.label_model` (the kNN prior, each
LLM's kNN error rate, the one-coin posterior); this holds what a run fits with them: the
item vectors (computed once), the fitted kNN pseudo-counts ``strength_`` and the
cheapest LLM's commonest answer for "humans-only" (``unasked_label_``).
"""

from __future__ import annotations

import numpy as np

from quorum.routing.core.base import RoutingProblem
from quorum.routing.core.label_model import (
    STRENGTH_GRID,
    fit_knn_strength,
    knn_counts,
    knn_error_rate,
    knn_label_probs,
    knn_neighbours,
    label_indices,
    one_coin_posterior,
)
from quorum.routing.quorum.answers import Answers
from quorum.routing.quorum.params import QuorumParams

#: an LLM's accuracy in the final labels' posterior is at least this over the number of
#: labels: chance, and a hair above it so that its answer still breaks a tie with a flat
#: prior
CHANCE_FLOOR = 1.0 + 1e-6

__all__ = ["LabelModelState"]


class LabelModelState:
    """The label model of one run over the answers ``answers`` of ``problem``'s items."""

    def __init__(
        self, cfg: QuorumParams, problem: RoutingProblem, answers: Answers, llm_names: list[str]
    ) -> None:
        self.cfg = cfg
        self.p = problem
        self.answers = answers
        self.llm_names = llm_names
        self.labels: list[str] = list(problem.task.labels or [])
        self.T = problem.n_items
        #: the label model runs at this size (``label_model_max_items``)
        self.fits = cfg.label_model_max_items >= self.T
        self._space: np.ndarray | None = None
        #: the last fitted kNN pseudo-counts (``label_model_fit``), None before a fit
        self.strength_: float | None = None
        #: "humans-only": the cheapest LLM's commonest answer, the fallback label of the
        #: items nobody was asked on (:meth:`unasked_labels`)
        self.unasked_label_: str | None = None

    def space(self) -> np.ndarray:
        """Unit-norm item vectors: the embeddings, else standardised phi (computed once)."""
        if self._space is None:
            if self.p.embeddings is not None:
                self._space = np.asarray(self.p.embeddings, dtype=np.float64)
            else:
                phi = self.p.phi
                z = (phi - phi.mean(0)) / (phi.std(0) + 1e-9)
                self._space = z / np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-12)
        return self._space

    def human_labelled(self) -> tuple[np.ndarray, np.ndarray]:
        """Items with a usable human label and its label index."""
        return self.answers.human_labelled(self.labels)

    def prior(
        self,
        query: np.ndarray,
        hum: np.ndarray,
        y_h: np.ndarray,
        neighbours: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> np.ndarray:
        """p(y | x) of the label model (``label_model_vote``) for the items ``query``;
        ``neighbours``: their k nearest items among ``hum``, if already searched."""
        cfg, L = self.cfg, len(self.labels)
        if cfg.label_model_vote == "skill+knn":
            space, strength = self.space(), cfg.label_model_strength
            if cfg.label_model_fit:
                strength = fit_knn_strength(space, hum, y_h, L, k=cfg.label_model_k)
                self.strength_ = strength
            return knn_label_probs(
                space,
                hum,
                y_h,
                query,
                L,
                k=cfg.label_model_k,
                strength=strength,
                neighbours=neighbours,
            )
        freq = (np.bincount(y_h, minlength=L) + 1.0) / (len(y_h) + L)
        return np.repeat(freq[None, :], len(query), axis=0)

    def prior_doubt(self, pool: np.ndarray) -> np.ndarray:
        """1 - max_y p(y | x) of the items ``pool`` (1 - 1/L before any human label)."""
        hum, y_h = self.human_labelled()
        if len(hum):
            return 1.0 - self.prior(pool, hum, y_h).max(axis=1)
        return np.full(len(pool), 1.0 - 1.0 / max(len(self.labels), 1))

    def posterior(self, items: np.ndarray, final: bool = False) -> np.ndarray:
        """P(y | answers) for ``items`` (n, L): the label model's prior (``label_model_vote``)
        and each LLM answer as a one-coin annotator, right with 1 - e_a(x), e_a its kNN
        error rate on the human-labelled items it answered
        (:mod:`~quorum.routing.core.label_model`).

        ``final`` (the final labels, issue 38): the human labels were bought where the LLMs
        looked weakest, so neither their error rates nor the human label frequencies are the
        data's. With ``label_model_final_floor = "chance"`` an LLM's accuracy there is at
        least chance (:data:`CHANCE_FLOOR`: where its neighbours' error rate is above chance
        it is ignored, not voted against, the rule of the human vote), and with
        ``label_model_final_prior = "uniform"`` the kNN prior is shrunk towards the uniform
        distribution, not the frequencies (as for the items nobody was asked on,
        :meth:`unasked_labels`), by the one-standard-error rule. Voting against a 76 %-right
        LLM, then a prior of the audit's frequencies, relabelled 15-20 items of a scripted
        team's run 7-20 % right. The audit's ranking (:meth:`wrong_probability`) keeps the
        plain model."""
        cfg, labels = self.cfg, self.labels
        hum, y_h = self.human_labelled()
        space = self.space()
        outputs = self.answers.outputs
        votes = np.column_stack(
            [
                label_indices([outputs(t).get(a) for t in range(self.T)], labels)
                for a in self.llm_names
            ]
        )
        # the k nearest human-labelled items of each of ``items``: searched once, shared
        # by the kNN prior and by the error rate of every LLM that answered them all
        found: list[tuple[np.ndarray, np.ndarray]] = []

        def near() -> tuple[np.ndarray, np.ndarray]:
            if not found:
                found.append(knn_neighbours(space, np.asarray(items), hum, cfg.label_model_k))
            return found[0]

        K = len(self.llm_names)
        acc = np.ones((len(items), K))
        for k in range(K):
            if not (votes[items, k] >= 0).any():
                continue
            judged = votes[hum, k] >= 0
            e = knn_error_rate(
                space,
                hum[judged],
                votes[hum[judged], k] != y_h[judged],
                items,
                k=cfg.label_model_k,
                strength=cfg.label_model_strength,
                neighbours=near() if len(hum) and judged.all() and len(items) else None,
            )
            acc[:, k] = 1.0 - e
            if final and cfg.label_model_final_floor == "chance":
                acc[:, k] = np.maximum(acc[:, k], CHANCE_FLOOR / len(labels))
        if cfg.label_model_vote == "off" or len(hum) == 0:
            prior = np.full((len(items), len(labels)), 1.0 / len(labels))
        elif final and cfg.label_model_final_prior == "uniform":
            prior = self.uniform_prior(items, hum, y_h, near() if len(items) else None)
        else:
            knn = cfg.label_model_vote == "skill+knn" and len(items)
            prior = self.prior(items, hum, y_h, near() if knn else None)
        return one_coin_posterior(prior, votes[items], acc)

    def uniform_prior(
        self,
        query: np.ndarray,
        hum: np.ndarray,
        y_h: np.ndarray,
        neighbours: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> np.ndarray:
        """The kNN vote of the human labels shrunk towards the uniform distribution with
        the pseudo-counts of the one-standard-error rule (``skill+knn``; else uniform):
        the final labels' prior (see :meth:`posterior`)."""
        cfg, L = self.cfg, len(self.labels)
        if cfg.label_model_vote != "skill+knn" or len(query) == 0:
            return np.full((len(query), L), 1.0 / L)
        space, strength = self.space(), cfg.label_model_strength
        if cfg.label_model_fit:
            strength = fit_knn_strength(space, hum, y_h, L, k=cfg.label_model_k, one_se=True)
        c, tot = knn_counts(space, hum, y_h, query, L, cfg.label_model_k, neighbours)
        return (c + strength / L) / (tot + strength)

    def wrong_probability(self, pool: np.ndarray) -> np.ndarray:
        """P(the label an item of ``pool`` would get without a human is wrong)."""
        return 1.0 - self.posterior(pool).max(axis=1)

    def unasked_labels(self, items: np.ndarray) -> tuple[list[str | None], str]:
        """ "humans-only": labels of ``items``, which nobody was asked on, and how.

        The label model's prior is a kNN vote of the human labels shrunk towards their
        frequencies. The frequencies say nothing of an item and, where a dataset is
        balanced by construction, the commonest human label is the one the rest has
        least of (talklife, auditor 70%: right on 28% of these items, against 34% for the
        LLM's constant answer). So these items get the kNN vote shrunk towards the uniform
        distribution instead, and where the fit found the neighbours uninformative (the
        largest pseudo-count, :func:`~quorum.routing.core.label_model.fit_knn_strength`) the
        LLM's commonest answer, what it would have said there."""
        cfg, labels = self.cfg, self.labels
        fixed = STRENGTH_GRID[-1] if cfg.label_model_fit else cfg.label_model_strength
        strength = fixed if self.strength_ is None else self.strength_
        hum, y_h = self.human_labelled()
        answer = self.unasked_label_
        if cfg.label_model_vote != "skill+knn" or strength >= STRENGTH_GRID[-1] or not len(hum):
            return [answer] * len(items), "llm's commonest answer"
        L = len(labels)
        c, tot = knn_counts(self.space(), hum, y_h, items, L, cfg.label_model_k)
        p = (c + strength / L) / (tot + strength)
        return [labels[int(j)] for j in p.argmax(axis=1)], "kNN vote, uniform prior"
