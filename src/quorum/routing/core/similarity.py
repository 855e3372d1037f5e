"""How close an annotation is to a reference: exact match for labels, the clipped cosine of
the output embeddings for summaries (one cache of those embeddings per run).

Shared by QUORUM (:mod:`~quorum.routing.quorum.answers`) and the paper preset
(:mod:`~quorum.routing.paper.router`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["OutputEmbeddings", "similarity"]


class OutputEmbeddings:
    """Unit-norm embeddings of annotation texts, each text embedded once a run.

    ``embed`` is the source's ``embed_outputs`` (a batch of texts -> one row each).
    """

    def __init__(self, embed: Callable[[list[str]], np.ndarray]) -> None:
        self.embed = embed
        self._emb: dict[str, np.ndarray] = {}

    def __call__(self, texts: list[str]) -> np.ndarray:
        """The rows of ``texts`` (missing ones embedded together, in first-seen order)."""
        missing = [s for s in dict.fromkeys(texts) if s not in self._emb]
        if missing:
            vecs = np.asarray(self.embed(missing), dtype=np.float64)
            for s, v in zip(missing, vecs, strict=True):
                n = np.linalg.norm(v)
                self._emb[s] = v / n if n > 0 else v
        return np.stack([self._emb[s] for s in texts])


def similarity(out: str | None, ref: str, embed: OutputEmbeddings | None) -> float:
    """1(out == ref) for labels (``embed`` None); clip(cos, 0, 1) of the embeddings for
    summaries; 0 without an output.

    >>> similarity("pos", "pos", None), similarity(None, "pos", None)
    (1.0, 0.0)
    """
    if out is None:
        return 0.0
    if embed is None:
        return float(out == ref)
    e = embed([out, ref])
    return float(np.clip(e[0] @ e[1], 0.0, 1.0))
