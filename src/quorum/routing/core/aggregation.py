"""Task-specific aggregation (paper, sec. 3.3).

Labels: weighted majority vote, human weight w_H, LLM weight w_LLM; the weighted agreement
is the winning label's share of the total weight, and consensus is reached when it is at
least the threshold. Summaries: agreement r_t = 2 * mean pairwise cosine - 1 over the
annotations' embeddings; the output is the annotation closest to the (weighted) centroid.

Both work per item on a mapping ``annotator -> output`` and, crowd-kit style, on a long
``task, worker, label`` (here ``item_id, annotator, output``) DataFrame.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class WeightedMajorityVote:
    """Weighted majority vote with a consensus threshold.

    tie_break: "weight" keeps the tied label whose single heaviest vote came from the
    annotator listed first in ``priority`` (callers list the most trusted first, e.g. the
    human, then LLMs from the most to the least expensive); "first" keeps the label that
    was given first. Ties are not covered by the paper; this rule is ours.
    """

    w_human: float = 10.0
    w_llm: float = 1.0
    threshold: float = 0.66

    def weight(self, is_human: bool) -> float:
        return self.w_human if is_human else self.w_llm

    def vote(
        self,
        outputs: Mapping[str, str],
        is_human: Callable[[str], bool],
        priority: list[str] | Callable[[], list[str]] | None = None,
    ) -> tuple[str | None, float]:
        """Return (label, weighted agreement) for one item; (None, 0.0) when empty.

        ``priority`` may be a function giving the trust order: it is then only called
        when there is a tie to break.
        """
        if not outputs:
            return None, 0.0
        totals = self._totals(outputs, is_human)
        total = sum(totals.values())
        best = max(totals.values())
        tied = [y for y, w in totals.items() if w == best]
        if len(tied) == 1:
            label = tied[0]
        else:
            order = (priority() if callable(priority) else priority) or list(outputs)
            rank = {a: i for i, a in enumerate(order)}
            label = min(
                tied,
                key=lambda y: min(rank.get(a, len(rank)) for a, v in outputs.items() if v == y),
            )
        return label, best / total

    def _totals(self, outputs: Mapping[str, str], is_human: Callable[[str], bool]):
        """Weight of each label, added in the order of ``outputs``."""
        w_h, w_llm = self.w_human, self.w_llm
        totals: dict[str, float] = {}
        get = totals.get
        for a, y in outputs.items():
            totals[y] = get(y, 0.0) + (w_h if is_human(a) else w_llm)
        return totals

    def weighted_agreement(
        self, outputs: Mapping[str, str], is_human: Callable[[str], bool]
    ) -> float:
        """The weighted agreement of :meth:`vote` alone (the same number), which needs no
        tie-break; 0.0 when empty."""
        if not outputs:
            return 0.0
        totals = self._totals(outputs, is_human)
        return max(totals.values()) / sum(totals.values())

    def consensus(self, agreement: float, n: int) -> bool:
        """Consensus needs at least two annotations (one answer agrees with itself)."""
        return n >= 2 and agreement >= self.threshold

    def aggregate(
        self, annotations: pd.DataFrame, humans: set[str] | frozenset[str] = frozenset()
    ) -> pd.DataFrame:
        """Long ``item_id, annotator, output`` frame -> ``item_id, output, agreement``."""
        rows = []
        for item, grp in annotations.dropna(subset=["output"]).groupby("item_id", sort=False):
            outs = dict(zip(grp["annotator"], grp["output"], strict=True))
            y, agr = self.vote(outs, lambda a: a in humans)
            rows.append({"item_id": item, "output": y, "agreement": agr})
        return pd.DataFrame(rows, columns=["item_id", "output", "agreement"])


def disagreement(outputs: list[str]) -> float:
    """Delta_t = 1 - max_y count(y) / |Y_t| (unweighted, as in the paper)."""
    if not outputs:
        return 0.0
    return 1.0 - max(Counter(outputs).values()) / len(outputs)


@dataclass(frozen=True)
class CentroidSummary:
    """Embedding-centroid aggregation for summaries.

    r_t = 2 * (sum_{i != j} cos(e_i, e_j)) / (n (n - 1)) - 1, consensus if r_t >= threshold;
    the output is the summary closest to the weighted centroid (human weight w_H).
    """

    w_human: float = 10.0
    w_llm: float = 1.0
    threshold: float = 0.66

    def agreement(self, emb: np.ndarray) -> float:
        n = len(emb)
        if n < 2:
            return 1.0
        sims = emb @ emb.T
        off = (sims.sum() - np.trace(sims)) / (n * (n - 1))
        return float(2.0 * off - 1.0)

    def choose(self, emb: np.ndarray, weights: np.ndarray) -> int:
        w = np.asarray(weights, dtype=np.float64)
        c = (emb * w[:, None]).sum(axis=0) / w.sum()
        norm = np.linalg.norm(c)
        if norm > 0:
            c = c / norm
        return int(np.argmax(emb @ c))

    def consensus(self, agreement: float, n: int) -> bool:
        return n >= 2 and agreement >= self.threshold
