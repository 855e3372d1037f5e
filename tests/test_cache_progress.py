"""The shared file cache (quorum.cache) and progress bar (quorum.progress)."""

from __future__ import annotations

import hashlib
import os

import pytest

from quorum.cache import ENV_VAR, FileCache, content_key, user_cache_dir
from quorum.progress import ProgressBar


def _reference_key(parts: list[str]) -> str:
    """The key format the caches on disk were written with (length-prefixed UTF-8)."""
    h = hashlib.sha256()
    for p in parts:
        b = p.encode("utf-8")
        h.update(len(b).to_bytes(8, "little") + b)
    return h.hexdigest()


def test_content_key_is_the_length_prefixed_sha256():
    parts = ["quorum-features/1", "m", "k=5", "ünï ☃", ""]
    assert content_key(parts) == _reference_key(parts)
    assert content_key(iter(parts)) == content_key(parts)
    assert content_key(["ab", "c"]) != content_key(["a", "bc"])
    assert content_key([]) != content_key([""])


def test_feature_and_annotator_keys_keep_their_format():
    from quorum.data.loaders import zeroshot as zs
    from quorum.features.cache import cache_key

    texts = ["a", "bc"]
    assert cache_key(texts, model="m", language=["en", "es"], k=3) == _reference_key(
        ["quorum-features/1", "m", "k=3", "languages=2", "en", "es", "a", "bc", "n=2"]
    )
    assert zs.cache_key(texts, ["0", "1"], {"0": "no", "1": "yes"}) == _reference_key(
        [
            zs.CACHE_VERSION,
            zs.MODEL,
            "temperature=0.05",
            "labels=2",
            "0",
            "no",
            "1",
            "yes",
            "n=2",
            "a",
            "bc",
        ]
    )


def test_user_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert user_cache_dir() == tmp_path
    assert FileCache.under("things", ".bin").folder == tmp_path / "things"
    monkeypatch.delenv(ENV_VAR)
    assert user_cache_dir().parts[-2:] == (".cache", "quorum")


def test_write_is_atomic_and_read_back(tmp_path):
    cache = FileCache(tmp_path / "c", ".bin", what="test")
    key = content_key(["x"])
    assert cache.read(key, lambda p: p.read_bytes()) is None
    path = cache.write(key, lambda f: f.write(b"data"))
    assert path == tmp_path / "c" / f"{key}.bin" and path.read_bytes() == b"data"
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)
    assert cache.read(key, lambda p: p.read_bytes()) == b"data"
    assert [p.name for p in (tmp_path / "c").iterdir()] == [path.name]  # no temporary left


def test_a_failed_dump_leaves_no_file(tmp_path):
    cache = FileCache(tmp_path, ".bin")

    def dump(f):
        f.write(b"half")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        cache.write("k", dump)
    assert list(tmp_path.iterdir()) == []


def test_unreadable_file_is_a_miss_with_a_warning(tmp_path):
    cache = FileCache(tmp_path, ".bin", what="test")
    cache.write("k", lambda f: f.write(b"garbage"))

    def load(p):
        raise ValueError("not mine")

    with pytest.warns(RuntimeWarning, match="unreadable test cache file .*not mine"):
        assert cache.read("k", load) is None


def test_unwritable_folder_raises_or_warns(tmp_path):
    (tmp_path / "file").write_text("a file, not a folder")
    cache = FileCache(tmp_path / "file" / "sub", ".bin", what="test")
    with pytest.raises(OSError):
        cache.write("k", lambda f: f.write(b"x"))
    with pytest.warns(RuntimeWarning, match="could not write test cache"):
        assert cache.write("k", lambda f: f.write(b"x"), errors="warn") is None


def test_text_embedding_cache_round_trip(tmp_path):
    import numpy as np

    from quorum.bench.cache import TextEmbeddingCache

    store = TextEmbeddingCache("m", "fp", directory=tmp_path)
    assert store.missing(["a", "b", "a"]) == ["a", "b"]
    store.put(["a", "b"], np.array([[1, 0], [0, 1]]))
    store.save()
    again = TextEmbeddingCache("m", "fp", directory=tmp_path)
    assert again.path.parent == tmp_path / "bench-embeddings" and again.missing(["a", "b"]) == []
    np.testing.assert_array_equal(again.get(["b", "a"]), [[0, 1], [1, 0]])
    assert TextEmbeddingCache("m", "other", directory=tmp_path).missing(["a"]) == ["a"]
    again.path.write_bytes(b"broken")
    with pytest.warns(RuntimeWarning, match="unreadable text embedding cache"):
        assert TextEmbeddingCache("m", "fp", directory=tmp_path).vectors == {}


def test_progress_bar_is_silent_off_a_terminal(capsys):
    with ProgressBar(5, "x") as bar:  # pytest captures stderr: not a terminal
        bar.advance(2)
        bar.update("running", advance=3)
    assert not bar.shown
    assert capsys.readouterr().err == ""
    assert not ProgressBar(0, "x").shown and not ProgressBar(5, "x", enabled=False).shown


def test_progress_bar_counts_on_a_terminal(monkeypatch):
    import io

    from rich.console import Console

    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    bar = ProgressBar(5, "work")
    assert bar.shown
    buf = io.StringIO()
    bar._prog.live.console = Console(file=buf, force_terminal=False, width=100)
    with bar:
        bar.advance(2)
        bar.update("step b", advance=1)
    task = bar._prog.tasks[0]
    assert (task.completed, task.total, task.description) == (3, 5, "step b")


def test_progress_bar_sets_completed_on_a_terminal(monkeypatch):
    """The live runner sets the count of labelled items (it can go down between passes)."""
    import io

    from rich.console import Console

    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    bar = ProgressBar(10, "annotate")
    bar._prog.live.console = Console(file=io.StringIO(), force_terminal=False, width=100)
    with bar:
        bar.update("labelled 7/10", completed=7)
        bar.update("labelled 2/10", completed=2)
    task = bar._prog.tasks[0]
    assert (task.completed, task.description) == (2, "labelled 2/10")


def test_live_progress_uses_the_shared_bar_and_logs_off_a_terminal(capsys):
    from quorum.live.machines.money_guard import LiveStats
    from quorum.live.run.progress import Progress

    p = Progress(3, every=0.0)
    stats = LiveStats(3, 1.0, committed=0.25)
    stats.items_ok = {"a"}
    p.update(None, stats)
    p.stop()
    p.stop()  # idempotent: the runner stops it on success and on error
    err = capsys.readouterr().err
    assert "1/3" in err


def _make_slowly(folder: str, start, log: str) -> tuple[str, bool]:
    """One process asking for the same entry: ``make`` writes to ``log`` and is slow."""
    import time
    from pathlib import Path

    start.wait()

    def make() -> str:
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
        time.sleep(1.0)
        return f"made by {os.getpid()}"

    return FileCache(folder, ".txt").read_or_make(
        content_key(["slow"]), lambda p: Path(p).read_text(), make, lambda f, v: f.write(v.encode())
    )


def test_read_or_make_computes_a_missing_entry_once_across_processes(tmp_path):
    """Two processes miss the same key at once: one makes it, the other waits and reads it."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    log = tmp_path / "made.log"
    with ctx.Manager() as manager:
        start = manager.Event()
        with ctx.Pool(2) as pool:
            jobs = [
                pool.apply_async(_make_slowly, (str(tmp_path / "c"), start, str(log)))
                for _ in range(2)
            ]
            start.set()
            got = [j.get(timeout=60) for j in jobs]
    assert len(log.read_text().split()) == 1  # made once
    assert got[0][0] == got[1][0]  # both have the entry of the process that made it
    assert sorted(cached for _, cached in got) == [False, True]
    assert not list((tmp_path / "c").glob(".*.tmp"))


def test_read_or_make_computes_unlocked_where_the_lock_cannot_be_taken(tmp_path, monkeypatch):
    import quorum.cache as qc

    def refuse(*_a, **_k):
        raise PermissionError("read-only")

    monkeypatch.setattr(qc, "FileLock", refuse)
    cache = FileCache(tmp_path, ".txt")
    with pytest.warns(RuntimeWarning, match="computing unlocked"):
        got = cache.read_or_make(
            "k", lambda p: p.read_text(), lambda: "v", lambda f, v: f.write(b"v")
        )
    assert got == ("v", False) and cache.read("k", lambda p: p.read_text()) == "v"
