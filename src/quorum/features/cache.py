"""On-disk cache of computed features, keyed by content (a :class:`quorum.cache.FileCache`).

Key: sha256 over (feature-pipeline version, embedding model name, language(s), k, the texts
in order). Files are ``<dir>/features/<key>.npz`` with float32 ``embeddings``, float64
``linguistic``, float32 ``distances``, int64 ``neighbours`` and a JSON ``meta`` string,
written atomically. The folder is ``$QUORUM_CACHE_DIR`` if set, else ``~/.cache/quorum``. A
file that cannot be read is reported with a warning and treated as a miss. Missing features
are computed once across processes (:meth:`FeatureCache.load_or_compute`): a second process
asking for the same key waits for the first one's file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import numpy as np

from quorum.cache import FileCache, content_key

#: bump when anything changes the cached numbers (feature definitions, models, kNN)
PIPELINE_VERSION = "quorum-features/1"
REQUIRED_KEYS = ("embeddings", "linguistic", "distances", "neighbours", "meta")


def cache_key(
    texts: Iterable[str],
    *,
    model: str,
    language: str | Iterable[str],
    k: int,
    version: str = PIPELINE_VERSION,
) -> str:
    """Hex sha256 of the pipeline version, model, language(s), k and the texts, in order."""
    langs = [language] if isinstance(language, str) else list(language)
    texts = [str(t) for t in texts]
    return content_key(
        [
            version,
            model,
            f"k={int(k)}",
            f"languages={len(langs)}",
            *langs,
            *texts,
            f"n={len(texts)}",
        ]
    )


class FeatureCache:
    """Reads and writes feature arrays under ``directory / "features"``."""

    def __init__(self, directory: str | os.PathLike | None = None) -> None:
        self.files = FileCache.under("features", ".npz", directory, what="feature")

    @property
    def directory(self) -> Path:
        return self.files.folder.parent

    @property
    def folder(self) -> Path:
        return self.files.folder

    def path(self, key: str) -> Path:
        return self.files.path(key)

    def load(self, key: str, n: int | None = None) -> dict[str, np.ndarray] | None:
        """The arrays stored under ``key`` (with ``meta`` decoded to a dict), or None on a miss.

        ``n`` is the expected number of rows; a file with another count is treated as corrupt.
        """
        return self.files.read(key, self._reader(n))

    @staticmethod
    def _reader(n: int | None) -> Callable[[Path], dict]:
        def read(p: Path) -> dict:
            with np.load(p, allow_pickle=False) as z:
                missing = [x for x in REQUIRED_KEYS if x not in z.files]
                if missing:
                    raise ValueError(f"missing arrays {missing}")
                out: dict = {x: z[x] for x in z.files}
            out["meta"] = json.loads(str(out["meta"]))
            rows = {len(out[x]) for x in ("embeddings", "linguistic", "distances", "neighbours")}
            if len(rows) != 1 or (n is not None and rows != {n}):
                raise ValueError(f"inconsistent row counts {sorted(rows)} (expected {n})")
            return out

        return read

    def save(self, key: str, arrays: Mapping[str, np.ndarray], meta: Mapping) -> Path:
        """Write ``arrays`` and ``meta`` (JSON-able) atomically; return the file path."""
        path = self.files.write(key, lambda f: _dump(f, {**arrays, "meta": meta}))
        assert path is not None  # errors="raise"
        return path

    def load_or_compute(
        self,
        key: str,
        n: int,
        compute: Callable[[], Mapping[str, np.ndarray]],
        meta: Mapping,
    ) -> tuple[dict, bool]:
        """``(arrays, True)`` from the cache, else ``(compute(), False)`` after saving them
        with ``meta``; computed once across processes (:meth:`FileCache.read_or_make
        <quorum.cache.FileCache.read_or_make>`)."""
        return self.files.read_or_make(
            key,
            self._reader(n),
            lambda: {**compute(), "meta": dict(meta)},
            _dump,
        )


def _dump(f, entry: Mapping) -> None:
    """``entry``: the arrays and ``meta`` (a JSON-able mapping) as one ``.npz``."""
    arrays = {k: v for k, v in entry.items() if k != "meta"}
    np.savez(f, meta=np.array(json.dumps(dict(entry["meta"]))), **arrays)
