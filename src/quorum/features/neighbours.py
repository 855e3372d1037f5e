"""Cosine distances of each item to its k nearest neighbours (paper, sec. 3.1).

Exact search with faiss ``IndexFlatIP`` on L2-normalised vectors, so inner product = cosine
similarity and distance = ``1 - cos`` (clipped to [0, 2]). Each item is searched among the
*other* items of the same dataset: the item itself is removed by index, so an exact
duplicate of it still counts, at distance 0. With n <= k there are fewer than k other items:
the missing distances are padded with 1.0 (the distance of an orthogonal vector) and the
missing indices with -1.
"""

from __future__ import annotations

import numpy as np

#: distance used where fewer than k neighbours exist
PAD_DISTANCE = 1.0


def _prepare(x: np.ndarray, what: str) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"{what} must be a 2-d (n, d) array, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"{what} contain NaN or inf")
    x = np.array(x, dtype=np.float32, order="C", copy=True)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    np.divide(x, norms, out=x, where=norms > 0)
    return x


def _index(base: np.ndarray, n_threads: int):
    import faiss

    faiss.omp_set_num_threads(n_threads)
    index = faiss.IndexFlatIP(base.shape[1])
    index.add(base)
    return index


def _finish(sim: np.ndarray, idx: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    n, have = idx.shape
    dist = np.full((n, k), PAD_DISTANCE, dtype=np.float32)
    ind = np.full((n, k), -1, dtype=np.int64)
    have = min(have, k)
    valid = idx[:, :have] >= 0
    dist[:, :have] = np.where(valid, np.clip(1.0 - sim[:, :have], 0.0, 2.0), PAD_DISTANCE)
    ind[:, :have] = np.where(valid, idx[:, :have], -1)
    return dist, ind


def knn_search(
    embeddings: np.ndarray, k: int = 5, n_threads: int = 2
) -> tuple[np.ndarray, np.ndarray]:
    """Distances (n, k) float32 and indices (n, k) int64 of each row's k nearest *other* rows.

    Columns are sorted nearest first. Rows are L2-normalised here, so any non-zero
    vectors work.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    x = _prepare(embeddings, "embeddings")
    n = len(x)
    if n == 0:
        return np.zeros((0, k), np.float32), np.zeros((0, k), np.int64)
    kk = min(k + 1, n)
    sim, idx = _index(x, n_threads).search(x, kk)
    is_self = idx == np.arange(n)[:, None]
    # with many exact duplicates the item itself may be tied out of the top k+1:
    # then drop the last (an equally near duplicate) instead
    is_self[~is_self.any(axis=1), -1] = True
    keep = ~is_self
    sim = sim[keep].reshape(n, kk - 1)
    idx = idx[keep].reshape(n, kk - 1)
    return _finish(sim, idx, k)


def knn_distances(embeddings: np.ndarray, k: int = 5, n_threads: int = 2) -> np.ndarray:
    """Cosine distances (n, k) to the k nearest other items, nearest first."""
    return knn_search(embeddings, k, n_threads)[0]


def knn_indices(embeddings: np.ndarray, k: int = 5, n_threads: int = 2) -> np.ndarray:
    """Row indices (n, k) of the k nearest other items, nearest first (-1 = none)."""
    return knn_search(embeddings, k, n_threads)[1]


def knn_query(
    base: np.ndarray, queries: np.ndarray, k: int = 5, n_threads: int = 2
) -> tuple[np.ndarray, np.ndarray]:
    """Distances and indices of the k nearest rows of ``base`` for new ``queries``.

    Nothing is excluded (the queries are not part of ``base``).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    b = _prepare(base, "base embeddings")
    q = _prepare(queries, "query embeddings")
    if len(b) and q.shape[1] != b.shape[1]:
        raise ValueError(f"queries have dimension {q.shape[1]}, base has {b.shape[1]}")
    if len(q) == 0 or len(b) == 0:
        return _finish(np.zeros((len(q), 0), np.float32), np.zeros((len(q), 0), np.int64), k)
    sim, idx = _index(b, n_threads).search(q, min(k, len(b)))
    return _finish(sim, idx, k)
