"""Embeddings of a summary dataset's recorded outputs and references, built once.

Replay compares summaries by their embeddings (the embedding-centroid vote, Section 3);
:class:`SummaryEmbeddings` embeds every recorded text once, in a fixed order, cached on
disk by content, so every process and every order of runs gives the same numbers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from quorum.cache import FileCache, content_key
from quorum.data.schema import Dataset

#: bump when the cached summary embeddings would change (model, order, dtype)
SUMMARY_CACHE_VERSION = "quorum-summary-embeddings/1"


class SummaryEmbeddings:
    """Embed every recorded output and reference once, in one fixed order (sorted).

    A text's embedding then does not depend on which other texts shared its batch, so
    summary runs give the same numbers in any process and in any order of runs. The
    table is cached on disk by content (``<cache dir>/summary-embeddings/<sha256>.npy``,
    the hash of the model name and the sorted texts), so only the first process pays for
    it, and it is built on first use (a caller that never asks, e.g. a bench worker with
    its own store, never pays); :func:`simulate_once` builds it before its timer.
    """

    def __init__(self, ds: Dataset) -> None:
        from quorum.models.embedders import embedder_name

        self.language = ds.task.language
        texts = set(ds.annotations["output"].dropna().astype(str))
        if "reference" in ds.items.columns:
            texts |= set(ds.items["reference"].dropna().astype(str))
        self.ordered = sorted(texts)
        self.model = embedder_name(self.language)
        self.table: dict[str, np.ndarray] | None = None

    def _key(self) -> str:
        return content_key(
            [SUMMARY_CACHE_VERSION, self.model, str(len(self.ordered)), *self.ordered]
        )

    def cache_path(self) -> Path:
        return _SUMMARY_CACHE().path(self._key())

    def load(self) -> None:
        """Build the table: read it from the disk cache, else encode and write it."""
        if self.table is not None:
            return

        def encode() -> np.ndarray:
            from quorum.models.embedders import get_embedder

            return np.asarray(get_embedder(self.language).encode(self.ordered))

        vecs, _ = _SUMMARY_CACHE().read_or_make(  # encoded once across processes
            self._key(),
            self._read,
            encode,
            lambda f, v: np.save(f, v, allow_pickle=False),
            errors="warn",
        )
        self.table = dict(zip(self.ordered, vecs, strict=True))

    def _read(self, path: Path) -> np.ndarray:
        vecs = np.load(path, allow_pickle=False)
        if vecs.ndim != 2 or len(vecs) != len(self.ordered):
            raise ValueError(f"shape {vecs.shape} for {len(self.ordered)} texts")
        return vecs

    def __call__(self, batch: list[str]) -> np.ndarray:
        self.load()
        assert self.table is not None
        missing = [t for t in batch if t not in self.table]
        if missing:  # texts not recorded (should not happen in replay): embed one by one
            from quorum.models.embedders import get_embedder

            embedder = get_embedder(self.language)
            for t in missing:
                self.table[t] = np.asarray(embedder.encode([t]))[0]
        return np.stack([self.table[t] for t in batch])


def _SUMMARY_CACHE() -> FileCache:
    return FileCache.under("summary-embeddings", ".npy", what="summary embedding")
