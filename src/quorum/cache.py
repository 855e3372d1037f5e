"""One file cache for computed things, keyed by content, under the user cache folder.

The folder is ``$QUORUM_CACHE_DIR`` if set, else ``~/.cache/quorum``; each kind of cached
thing has a sub-folder (``features``, ``annotators``, ``bench-embeddings``). A file is named
by :func:`content_key` of everything its content depends on, written atomically (temporary
file in the same folder, then ``os.replace``), and a file that cannot be read is reported
with a warning and treated as a miss. :meth:`FileCache.read_or_make` computes a missing
entry once across processes: the first takes an OS file lock on the key, the others wait
for it and then read its file (two bench workers, or a bench and ``quorum features``, no
longer compute the same 25,000 embeddings twice).

Examples
--------
>>> import tempfile
>>> cache = FileCache(Path(tempfile.mkdtemp()) / "notes", suffix=".txt")
>>> key = content_key(["notes/1", "hello"])
>>> cache.read(key, lambda p: p.read_text()) is None
True
>>> _ = cache.write(key, lambda f: f.write(b"hi"))
>>> cache.read(key, lambda p: p.read_text())
'hi'
>>> cache.read_or_make(content_key(["x"]), lambda p: p.read_text(), lambda: "made",
...                    lambda f, v: f.write(v.encode()))
('made', False)
>>> cache.read_or_make(content_key(["x"]), lambda p: p.read_text(), lambda: "again",
...                    lambda f, v: f.write(v.encode()))
('made', True)
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Literal, TypeVar

from filelock import FileLock, Timeout

ENV_VAR = "QUORUM_CACHE_DIR"
T = TypeVar("T")
log = logging.getLogger("quorum.cache")


def user_cache_dir() -> Path:
    """``$QUORUM_CACHE_DIR`` or ``~/.cache/quorum``."""
    env = os.environ.get(ENV_VAR)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "quorum"


def content_key(parts: Iterable[str]) -> str:
    """Hex sha256 of the strings in order, each prefixed by its length (no ambiguity
    between ``["ab", "c"]`` and ``["a", "bc"]``)."""
    h = hashlib.sha256()
    for part in parts:
        b = str(part).encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


class FileCache:
    """Files ``<folder>/<key><suffix>``; ``what`` names them in warnings."""

    def __init__(self, folder: str | os.PathLike, suffix: str, what: str = "cache") -> None:
        self.folder = Path(folder).expanduser()
        self.suffix = suffix
        self.what = what

    @classmethod
    def under(
        cls, kind: str, suffix: str, directory: str | os.PathLike | None = None, what: str = ""
    ) -> FileCache:
        """The ``kind`` sub-folder of ``directory`` (default :func:`user_cache_dir`)."""
        base = Path(directory).expanduser() if directory else user_cache_dir()
        return cls(base / kind, suffix, what or kind)

    def path(self, key: str) -> Path:
        return self.folder / f"{key}{self.suffix}"

    def read(self, key: str, load: Callable[[Path], T]) -> T | None:
        """``load(path)``, or None on a miss or when ``load`` raises (then with a warning)."""
        p = self.path(key)
        if not p.is_file():
            return None
        try:
            return load(p)
        except Exception as exc:  # corrupt, truncated, or from an incompatible writer
            warnings.warn(
                f"ignoring unreadable {self.what} cache file {p} ({type(exc).__name__}: "
                f"{exc}); recomputing",
                RuntimeWarning,
                stacklevel=3,
            )
            return None

    def write(
        self,
        key: str,
        dump: Callable[[IO[bytes]], object],
        errors: Literal["raise", "warn"] = "raise",
    ) -> Path | None:
        """Write through ``dump(binary file)`` atomically; return the path.

        With ``errors="warn"`` a folder that cannot be written is reported and the write
        skipped (returns None).
        """
        target = self.path(key)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=f".{key[:16]}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    dump(f)
                    f.flush()
                    os.fsync(f.fileno())
                os.chmod(tmp, 0o644)  # mkstemp makes 0600; a cache file is not secret
                os.replace(tmp, target)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            if errors == "raise":
                raise
            warnings.warn(
                f"could not write {self.what} cache {target} ({exc}); not cached",
                RuntimeWarning,
                stacklevel=3,
            )
            return None
        return target

    @contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """Hold the key's lock (``<folder>/.<key>.lock``, an OS lock the system releases if
        the process dies) while making its entry; a process that finds it held says so and
        waits. Where the folder cannot be written, go on unlocked (with a warning)."""
        path = self.folder / f".{key}.lock"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            lock = FileLock(path)
            try:
                lock.acquire(timeout=0)
            except Timeout:
                log.warning(
                    "another process is computing this %s cache entry (lock %s): waiting for it",
                    self.what,
                    path,
                )
                lock.acquire()
        except OSError as exc:
            warnings.warn(
                f"could not lock {self.what} cache {path} ({exc}); computing unlocked",
                RuntimeWarning,
                stacklevel=4,
            )
            yield
            return
        try:
            yield
        finally:
            lock.release()

    def read_or_make(
        self,
        key: str,
        load: Callable[[Path], T],
        make: Callable[[], T],
        dump: Callable[[IO[bytes], T], object],
        errors: Literal["raise", "warn"] = "raise",
    ) -> tuple[T, bool]:
        """``(entry, True)`` when cached, else ``(make(), False)`` after writing it with
        ``dump(file, entry)``. Made once across processes: under :meth:`lock`, the cache is
        read again first, so a process that waited reads what the other one made."""
        got = self.read(key, load)
        if got is not None:
            return got, True
        with self.lock(key):
            got = self.read(key, load)
            if got is not None:
                return got, True
            value = make()
            self.write(key, lambda f: dump(f, value), errors=errors)
            return value, False
