"""A QUORUM run's answers and votes: what each item got, its aggregate and disagreement.

The recorder (:class:`~quorum.routing.core.recorder.CallRecorder`) holds every call; this
reads it by item index: usable outputs, their aggregate by the task kind's aggregator (the
weighted vote, or the summary nearest the weighted centroid; kept until the item's outputs
change), the disagreement Delta_t and the similarity of an output to a reference
(:mod:`quorum.tasks`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from quorum.routing.core.label_model import label_indices
from quorum.routing.core.recorder import _NONE, CallRecorder
from quorum.tasks.base import Aggregator
from quorum.tasks.summarization import OutputEmbeddings

__all__ = ["Answers"]

Vote = tuple[str | None, float, int]


class Answers:
    """The answers of the items ``ids`` as the recorder ``rec`` holds them.

    ``trust(t)`` gives the tie-break order of item t (the human, then the LLMs by
    estimated quality): asked only when a vote ties.
    """

    def __init__(
        self,
        rec: CallRecorder,
        ids: list[str],
        human: str,
        agg: Aggregator,
        weights: tuple[float, float],
        trust: Callable[[int], list[str]],
    ) -> None:
        self.rec, self.ids, self.human = rec, ids, human
        self.agg, self.trust = agg, trust
        self.w_human, self.w_llm = weights
        self.embed = OutputEmbeddings(rec.source.embed_outputs)
        # hot look-ups, bound once (the recorder's mapping of usable outputs is never
        # replaced, only updated)
        self._usable_get = rec.usable_by_item.get
        self._humans = frozenset(rec.human_names())
        #: vote of each item that needed no tie-break: (its outputs, the result)
        self._votes: list[tuple[Mapping[str, str], int, Vote] | None] = [None] * len(ids)

    def outputs(self, t: int) -> Mapping[str, str]:
        """Usable outputs of item t by annotator (the recorder's own: read, never change)."""
        return self._usable_get(self.ids[t], _NONE)

    def is_h(self, a: str) -> bool:
        return a in self._humans

    def aggregate(self, t: int) -> Vote:
        """(output, agreement, number of outputs) of item t."""
        outs = self.outputs(t)
        n = len(outs)
        if n == 0:
            return None, 0.0, 0
        return self._vote(t, outs, n)

    def _vote(self, t: int, outs: Mapping[str, str], n: int) -> Vote:
        """The aggregate of item t, kept until its outputs change.

        The trust order (which moves with the posteriors) is only asked for to break a
        tie, and a vote that needed it is not kept.
        """
        kept = self._votes[t]
        if kept is not None and kept[0] is outs and kept[1] == n:
            return kept[2]
        tied = False

        def priority() -> list[str]:
            nonlocal tied
            tied = True
            return self.trust(t)

        y, agr = self.agg.vote_item(outs, self.is_h, priority, self.embed)
        # outputs only grow in place; a repeated call gives the item a new mapping
        self._votes[t] = None if tied else (outs, n, (y, agr, n))
        return y, agr, n

    def consensus(self, t: int) -> tuple[int, bool]:
        """(outputs of item t, whether at least two of them reach the consensus threshold).

        The agreement does not depend on how a tie is broken, so it is computed without the
        vote's tie-break (the trust order), the same number.
        """
        outs = self.outputs(t)
        n = len(outs)
        if n < 2:
            return n, False
        kept = self._votes[t]
        if kept is not None and kept[0] is outs and kept[1] == n:
            agr = kept[2][1]
        else:
            agr = self.agg.agreement_item(outs, self.is_h, self.embed)
        return n, self.agg.consensus(agr, n)

    def delta(self, t: int) -> float:
        """Disagreement Delta_t of item t's outputs (0 below two)."""
        outs = list(self.outputs(t).values())
        if len(outs) < 2:
            return 0.0
        return self.agg.delta(outs, self.embed)

    def similarity(self, out: str | None, ref: str) -> float:
        return self.agg.similarity(out, ref, self.embed)

    def majority(self, outs: Mapping[str, str], t: int) -> str | None:
        """The aggregate of ``outs`` each counted alike (ties by the trust order of item t)."""
        return self.agg.majority(outs, self.is_h, lambda: self.trust(t), self.embed)

    def asked(self, items: np.ndarray, arm: str) -> np.ndarray:
        """Whether ``arm`` has been asked on each of ``items`` (a boolean array)."""
        by_item = self.rec.by_item
        return np.array([arm in by_item.get(self.ids[t], ()) for t in items], dtype=bool)

    def not_asked(self, items: np.ndarray, arm: str) -> int:
        """How many of ``items`` ``arm`` has not been asked on."""
        return int((~self.asked(items, arm)).sum())

    def human_labelled(self, labels: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Items with a usable human label and its label index."""
        idx = [t for t in range(len(self.ids)) if self.outputs(t).get(self.human) is not None]
        y = label_indices([self.outputs(t)[self.human] for t in idx], labels)
        return np.array(idx, dtype=int)[y >= 0], y[y >= 0]
