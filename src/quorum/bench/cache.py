"""Run cache: one JSON line per run, keyed by everything its numbers depend on.

A run's key hashes its spec (dataset, method, setting, budget, seed, non-default
parameters, feature variant, human), the *dataset fingerprint* (content hash of the
dataset's files, without loading it) and the *code version* of the method (hash of the
files of the router's import closure, plus the simulator, loaders, features and metrics).
Editing ``routing/quorum/calibration.py`` therefore recomputes QUORUM's runs only.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import os
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from quorum.tasks.base import TaskKind, TaskType

_PKG = Path(__file__).resolve().parents[1]  # src/quorum

#: files every run depends on besides its router's imports (relative to src/quorum):
#: the simulator that prepares and scores a run, and the named dataset loaders
COMMON_CODE = (
    "simulate.py",
    "quality/*.py",
    "methods.py",
    "routing/core/replay.py",
    "metrics.py",
    "languages.py",
    "models/*.py",
    "data/loaders/*.py",
    "features/*.py",
)
ABLATION_CODE = ("bench/ablation.py",)
#: bump when the bench changes what a row holds
ROW_VERSION = "bench-row/1"


def _files(patterns: Iterable[str]) -> list[Path]:
    out: list[Path] = []
    for pat in patterns:
        out += sorted(_PKG.glob(pat))
    return [p for p in out if p.name != "cli.py"]


@cache
def _file_hash(path: Path, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_hash(path: Path) -> str:
    st = path.stat()
    return _file_hash(path, st.st_size, st.st_mtime_ns)


def hash_files(paths: Iterable[Path], root: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(str(p.relative_to(root)).encode())
        h.update(file_hash(p).encode())
    return h.hexdigest()[:16]


def _module_file(name: str) -> Path | None:
    """src/quorum file of a ``quorum.*`` module name (package -> its __init__.py)."""
    rel = Path(*name.split(".")[1:])
    for p in (_PKG / rel.with_suffix(".py"), _PKG / rel / "__init__.py"):
        if p.is_file():
            return p
    return None


def _quorum_imports(path: Path) -> set[str]:
    """Every ``quorum.*`` module ``path`` imports, anywhere in it (lazy imports too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.split(".")[0] == "quorum"}
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").split(".")[0] == "quorum"
        ):
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def import_closure(module: str) -> list[Path]:
    """Files of ``module`` and of every quorum module it imports, transitively.

    Parent packages' ``__init__.py`` count, since importing a module runs them.
    """
    seen: set[Path] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for i in range(2, len(parts) + 1):  # the module and its parent packages
            f = _module_file(".".join(parts[:i]))
            if f is not None and f not in seen:
                seen.add(f)
                todo += _quorum_imports(f)
    return sorted(seen)


@cache
def code_version(method: str, variant: str = "ours") -> str:
    """Hash of the source files a method's results depend on ("" = the common code only).

    The router's files are its module's import closure, found from the registry, so a
    new helper module of a router is covered without a list to keep up to date.
    """
    files = set(_files(COMMON_CODE))
    if method:
        from quorum.methods import METHODS

        files |= set(import_closure(METHODS[method].split(":")[0]))
    if variant != "ours":
        files |= set(_files(ABLATION_CODE))
    return hash_files(sorted(files), _PKG)


@cache
def dataset_fingerprint(name: str) -> str:
    """Content hash of the files behind a named dataset (or a dataset folder)."""
    from quorum.data.loaders import resolve
    from quorum.data.paths import data_dir

    hit = resolve(name)
    if hit is None:
        folder = Path(name).expanduser()
        prefix = "folder"
    else:
        entry, _sub = hit
        root = data_dir()
        assert root is not None
        folder = (root / entry.file).parent
        prefix = entry.prefix
    if not folder.is_dir():
        return f"{prefix}:missing"
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))
    return f"{prefix}:{hash_files(files, folder)}"


@cache
def dataset_kind(name: str) -> type[TaskKind]:
    """The kind of a named dataset's task (its loader entry says it) or of a folder (its
    task.toml, else its columns), without loading its items; classification otherwise."""
    from quorum.data.loaders import resolve
    from quorum.tasks.registry import KINDS

    hit = resolve(name)
    if hit is not None:
        return KINDS[hit[0].kind]
    folder = Path(name).expanduser()
    if folder.is_dir():
        from quorum.data.io import load_folder

        try:
            return type(load_folder(folder).task.kind)
        except Exception:  # the run itself reports a folder it cannot read
            pass
    return KINDS[TaskType.classification]


def digest(payload: Any) -> str:
    blob = json.dumps(payload, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _clean(v: Any) -> Any:
    """JSON-safe values: numpy scalars to Python, NaN to None."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    return v


class JsonlStore:
    """Records keyed by ``key``, appended to one JSON-lines file (last write wins)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.records: dict[str, dict[str, Any]] = {}
        if self.path.is_file():
            with open(self.path, encoding="utf-8") as f:
                for line in f:
                    line = line.strip()
                    if not line:
                        continue
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError:  # a line cut short by an interrupted run
                        continue
                    if isinstance(rec, dict) and "key" in rec:
                        self.records[rec["key"]] = rec

    def __contains__(self, key: str) -> bool:
        return key in self.records

    def __len__(self) -> int:
        return len(self.records)

    def get(self, key: str) -> dict[str, Any] | None:
        return self.records.get(key)

    def add(self, records: Iterable[dict[str, Any]]) -> None:
        recs = [_clean(r) for r in records]
        if not recs:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            for r in recs:
                f.write(json.dumps(r, sort_keys=True) + "\n")
                self.records[r["key"]] = r
            f.flush()


class Artifacts:
    """Files next to the run cache: traces of dashboard runs."""

    def __init__(self, cache_dir: Path) -> None:
        self.dir = Path(cache_dir) / "traces"

    def trace_path(self, key: str) -> Path:
        return self.dir / f"{key}.parquet"

    def info_path(self, key: str) -> Path:
        return self.dir / f"{key}.json"

    def has(self, key: str) -> bool:
        return self.trace_path(key).is_file() and self.info_path(key).is_file()

    def save(self, key: str, trace: Any, info: dict[str, Any]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.trace_path(key).with_suffix(".tmp")
        trace.to_parquet(tmp, index=False)
        os.replace(tmp, self.trace_path(key))
        self.info_path(key).write_text(json.dumps(_clean(info), sort_keys=True), "utf-8")

    def load(self, key: str) -> tuple[Any, dict[str, Any]]:
        import pandas as pd

        trace = pd.read_parquet(self.trace_path(key))
        info = json.loads(self.info_path(key).read_text("utf-8"))
        return trace, info


class TextEmbeddingCache:
    """Disk cache of output-text embeddings (summaries), shared by every bench folder.

    ``<quorum cache dir>/bench-embeddings/<model>-<dataset fingerprint>.npz`` holds text
    hashes and float32 vectors; lookups by sha1 of the text.
    """

    def __init__(self, model: str, fingerprint: str, directory: Path | None = None) -> None:
        from quorum.cache import FileCache

        self.files = FileCache.under("bench-embeddings", ".npz", directory, "text embedding")
        self.tag = digest([model, fingerprint])[:16]
        self.path = self.files.path(self.tag)
        self.vectors: dict[str, np.ndarray] = self.files.read(self.tag, _read_vectors) or {}

    @staticmethod
    def text_key(text: str) -> str:
        return hashlib.sha1(str(text).encode("utf-8")).hexdigest()

    def missing(self, texts: Iterable[str]) -> list[str]:
        return [t for t in dict.fromkeys(texts) if self.text_key(t) not in self.vectors]

    def put(self, texts: list[str], vectors: np.ndarray) -> None:
        for t, v in zip(texts, np.asarray(vectors, dtype=np.float32), strict=True):
            self.vectors[self.text_key(t)] = v

    def get(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.vectors[self.text_key(t)] for t in texts])

    def save(self) -> None:
        keys = np.array(list(self.vectors), dtype="U40")
        vecs = np.stack(list(self.vectors.values())) if self.vectors else np.zeros((0, 0))
        self.files.write(self.tag, lambda f: np.savez(f, keys=keys, vectors=vecs))


def _read_vectors(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {str(k): v for k, v in zip(z["keys"].tolist(), z["vectors"], strict=True)}
