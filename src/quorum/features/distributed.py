"""Linguistic features and embeddings computed by an engine's tasks (Ray), chunk by chunk.

Every piece is cut so that it computes exactly what the local pipeline computes:

- linguistic features (default profile): contiguous chunks whose size is a multiple of the
  spaCy batch size, so spaCy sees the same batches; per text, the result does not depend
  on the other texts;
- ``fast`` profile: tasks count tokens; the driver draws the same sample, tags it with the
  full pipeline and trains the same tagger; tasks then compute their chunks with it (and
  the sample's tags);
- embeddings: the texts are sorted by length exactly as :func:`~quorum.models.embedders.
  _encode_sorted` does and cut into its chunks (MiniLM: ``4 x batch_size``, e5:
  ``batch_size``), so every model call sees the same padded batch; a task encodes whole
  chunks.

The kNN search runs on the driver (one exact faiss search over all embeddings).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def _ling_task(texts: list[str], langs: list[str], batch_size: int) -> np.ndarray:
    from quorum.features.linguistic import linguistic_features

    return linguistic_features(texts, langs, batch_size)


def _count_task(texts: list[str], langs: list[str], batch_size: int) -> np.ndarray:
    from quorum.features.fast_linguistic import token_counts

    return token_counts(texts, langs, batch_size)


def _light_task(
    texts: list[str],
    langs: list[str],
    taggers: dict[str, Any],
    known: dict[int, np.ndarray],
    batch_size: int,
) -> np.ndarray:
    from quorum.features.fast_linguistic import LightLinguistic

    light = LightLinguistic()
    light.taggers_ = dict(taggers)
    return light.features(texts, langs, known, batch_size)


def _embed_task(
    profile: str, language: str | list[str], groups: list[list[str]], batch_size: int
) -> list[np.ndarray]:
    from quorum.features.profiles import profile_embedder, resolve_profile

    embedder = profile_embedder(resolve_profile(profile), language)
    return [embedder.encode(g, batch_size=batch_size) for g in groups]


def _spans(n: int, parts: int, multiple: int) -> list[tuple[int, int]]:
    """About ``parts`` contiguous [start, end) spans of ``range(n)``, sizes a multiple of
    ``multiple`` (but the last)."""
    size = max(multiple, -(-n // max(1, parts)))
    size = -(-size // multiple) * multiple
    return [(s, min(n, s + size)) for s in range(0, n, size)]


def sort_chunk(embedder: Any, batch_size: int) -> int:
    """How many length-sorted texts the local embedder encodes per model call."""
    from quorum.models.embedders import E5Embedder, MiniLMEmbedder

    if isinstance(embedder, MiniLMEmbedder):
        return 4 * batch_size
    if isinstance(embedder, E5Embedder):
        return batch_size
    return max(1024, batch_size)


def engine_linguistic(
    engine: Any,
    texts: list[str],
    langs: list[str],
    ling_fn: Any,
    batch_size: int,
    parts: int,
) -> np.ndarray:
    """(n, 6) linguistic features, chunks computed by ``engine``'s tasks."""
    from quorum.features.fast_linguistic import LightLinguistic

    spans = _spans(len(texts), parts, batch_size)
    if not isinstance(ling_fn, LightLinguistic):
        outs = engine.map(_ling_task, [(texts[a:b], langs[a:b], batch_size) for a, b in spans])
        return np.vstack(outs) if outs else np.zeros((0, 6))
    counts = engine.map(_count_task, [(texts[a:b], langs[a:b], batch_size) for a, b in spans])
    lengths = np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64)
    known = ling_fn.fit_lengths(texts, langs, lengths, batch_size)
    taggers = engine.put(dict(ling_fn.taggers_))
    calls = []
    for a, b in spans:
        part = {i - a: p for i, p in known.items() if a <= i < b}
        calls.append((texts[a:b], langs[a:b], taggers, part, batch_size))
    outs = engine.map(_light_task, calls)
    return np.vstack(outs) if outs else np.zeros((0, 6))


def engine_embeddings(
    engine: Any,
    texts: list[str],
    language: str | Sequence[str],
    profile: str,
    embedder: Any,
    batch_size: int,
    parts: int,
) -> np.ndarray:
    """Unit-norm embeddings of ``texts`` (rows in input order), by ``engine``'s tasks."""
    n = len(texts)
    out = np.zeros((n, embedder.dim), dtype=np.float32)
    if n == 0:
        return out
    order = np.argsort([-len(t) for t in texts], kind="stable")
    chunk = sort_chunk(embedder, batch_size)
    groups = [order[s : s + chunk] for s in range(0, n, chunk)]
    per = max(1, -(-len(groups) // max(1, parts)))
    lang = language if isinstance(language, str) else list(language)
    calls, owners = [], []
    for s in range(0, len(groups), per):
        mine = groups[s : s + per]
        calls.append((profile, lang, [[texts[i] for i in g] for g in mine], batch_size))
        owners.append(mine)
    for mine, encoded in zip(owners, engine.map(_embed_task, calls), strict=True):
        for g, e in zip(mine, encoded, strict=True):
            out[g] = e
    return out
