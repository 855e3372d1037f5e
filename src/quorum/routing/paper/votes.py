"""The paper preset's votes: the authors' code's per-item annotation list, in order, and
what it keeps up to date from it (usable count, human label, consensus, Delta_t), then the
final output of an item (weighted vote; summaries: nearest the unweighted centroid)."""

from __future__ import annotations

import numpy as np

from quorum.tasks.classification import WeightedMajorityVote, disagreement
from quorum.tasks.summarization import CentroidSummary, OutputEmbeddings

__all__ = ["PaperVotes"]


def _mean_pairwise(emb: np.ndarray) -> float:
    """Mean cosine over the distinct pairs of unit rows (at least two rows)."""
    n = len(emb)
    sims = emb @ emb.T
    return (sims.sum() - np.trace(sims)) / (n * (n - 1))


class PaperVotes:
    """(annotator, output or None) per item for ``n_items`` items; ``embed`` for
    summaries (None: labels)."""

    def __init__(
        self,
        n_items: int,
        human: str,
        agg: WeightedMajorityVote | CentroidSummary,
        threshold: float,
        embed: OutputEmbeddings | None,
    ) -> None:
        self.human, self.agg, self.threshold, self.embed = human, agg, threshold, embed
        #: the code's per-item annotation list, in order
        self.lists: list[list[tuple[str, str | None]]] = [[] for _ in range(n_items)]
        self.n_valid = np.zeros(n_items, dtype=int)
        self.has_human = np.zeros(n_items, dtype=bool)
        self.consensus = np.zeros(n_items, dtype=bool)
        self.dis = np.zeros(n_items)

    def _is_human(self, a: str) -> bool:
        return a == self.human

    def add(self, t: int, arm: str, out: str | None) -> None:
        """Append an annotation to item t and refresh its consensus and disagreement."""
        self.lists[t].append((arm, out))
        if arm == self.human:
            self.has_human[t] = True
        valid = [(a, o) for a, o in self.lists[t] if o is not None]
        self.n_valid[t] = len(valid)
        if len(valid) < 2:
            self.consensus[t] = len(valid) == 1
            self.dis[t] = 0.0
            return
        if self.embed is not None:
            avg = _mean_pairwise(self.embed([o for _, o in valid]))
            self.consensus[t] = bool(avg >= self.threshold)
            self.dis[t] = 0.0  # the code computes Delta_t for labels only
        else:
            _y, agr = self.agg.vote(dict(valid), self._is_human)
            self.consensus[t] = bool(agr >= self.threshold)
            self.dis[t] = disagreement([o for _, o in valid])

    def final(self, t: int) -> tuple[str | None, float]:
        """Item t's output and agreement (None, 0 without a usable annotation)."""
        valid = [(a, o) for a, o in self.lists[t] if o is not None]
        if not valid:
            return None, 0.0
        if self.embed is None:
            return self.agg.vote(dict(valid), self._is_human)
        names = [o for _, o in valid]
        emb = self.embed(names)
        pick = self.agg.choose(emb, np.ones(len(names)))  # the code's unweighted centroid
        agr = 1.0 if len(names) < 2 else float(_mean_pairwise(emb))
        return names[pick], agr
