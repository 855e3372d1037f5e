"""On-disk cache of computed features, keyed by content.

Key: sha256 over (feature-pipeline version, embedding model name, language(s), k, the texts
in order). Files are ``<dir>/features/<key>.npz`` with float32 ``embeddings``, float64
``linguistic``, float32 ``distances``, int64 ``neighbours`` and a JSON ``meta`` string,
written atomically (temporary file in the same folder, then ``os.replace``). The folder is
``$QUORUM_CACHE_DIR`` if set, else ``~/.cache/quorum``. A file that cannot be read is
reported with a warning and treated as a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

#: bump when anything changes the cached numbers (feature definitions, models, kNN)
PIPELINE_VERSION = "quorum-features/1"
ENV_VAR = "QUORUM_CACHE_DIR"
REQUIRED_KEYS = ("embeddings", "linguistic", "distances", "neighbours", "meta")


def default_cache_dir() -> Path:
    """``$QUORUM_CACHE_DIR`` or ``~/.cache/quorum``."""
    env = os.environ.get(ENV_VAR)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "quorum"


def _update(h: hashlib._Hash, s: str) -> None:
    b = s.encode("utf-8")
    h.update(len(b).to_bytes(8, "little"))
    h.update(b)


def cache_key(
    texts: Iterable[str],
    *,
    model: str,
    language: str | Iterable[str],
    k: int,
    version: str = PIPELINE_VERSION,
) -> str:
    """Hex sha256 of the pipeline version, model, language(s), k and the texts, in order."""
    h = hashlib.sha256()
    for part in (version, model, f"k={int(k)}"):
        _update(h, part)
    langs = [language] if isinstance(language, str) else list(language)
    _update(h, f"languages={len(langs)}")
    for lang in langs:
        _update(h, lang)
    n = 0
    for t in texts:
        _update(h, str(t))
        n += 1
    _update(h, f"n={n}")
    return h.hexdigest()


class FeatureCache:
    """Reads and writes feature arrays under ``directory / "features"``."""

    def __init__(self, directory: str | os.PathLike | None = None) -> None:
        self.directory = Path(directory).expanduser() if directory else default_cache_dir()

    @property
    def folder(self) -> Path:
        return self.directory / "features"

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.npz"

    def load(self, key: str, n: int | None = None) -> dict[str, np.ndarray] | None:
        """The arrays stored under ``key`` (with ``meta`` decoded to a dict), or None on a miss.

        ``n`` is the expected number of rows; a file with another count is treated as corrupt.
        """
        p = self.path(key)
        if not p.exists():
            return None
        try:
            with np.load(p, allow_pickle=False) as z:
                missing = [x for x in REQUIRED_KEYS if x not in z.files]
                if missing:
                    raise ValueError(f"missing arrays {missing}")
                out: dict = {x: z[x] for x in z.files}
            out["meta"] = json.loads(str(out["meta"]))
            rows = {len(out[x]) for x in ("embeddings", "linguistic", "distances", "neighbours")}
            if len(rows) != 1 or (n is not None and rows != {n}):
                raise ValueError(f"inconsistent row counts {sorted(rows)} (expected {n})")
        except Exception as exc:  # corrupt, truncated, or from an incompatible writer
            warnings.warn(
                f"ignoring unreadable feature cache file {p} ({type(exc).__name__}: {exc}); "
                "recomputing",
                RuntimeWarning,
                stacklevel=2,
            )
            return None
        return out

    def save(self, key: str, arrays: Mapping[str, np.ndarray], meta: Mapping) -> Path:
        """Write ``arrays`` and ``meta`` (JSON-able) atomically; return the file path."""
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.path(key)
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=f".{key[:16]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, meta=np.array(json.dumps(dict(meta))), **dict(arrays))
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644)  # mkstemp makes 0600; a cache file is not secret
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target
