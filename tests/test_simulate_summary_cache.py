"""Summary runs: the embeddings of recorded summaries are cached on disk across processes,
and methods that cannot run on summaries are refused before any preparation."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import quorum.models.embedders as emb
import quorum.simulate as sim
from quorum.cli.main import app
from quorum.data.schema import AnnotatorSpec, Dataset, TaskSpec
from quorum.data.writer import save_folder
from quorum.errors import UnsupportedTaskError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "datasets" / "summarization"


class CountingEmbedder:
    """Deterministic vectors; records every batch it is asked to encode."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def encode(self, texts, batch_size=64, progress=None):
        self.batches.append(list(texts))
        return np.array([[len(t), t.count("a"), 1.0] for t in texts], dtype=np.float32)


def summaries(ref: str = "the reference") -> Dataset:
    task = TaskSpec(
        name="s",
        type="summarization",
        annotators=[AnnotatorSpec(name="m1", price=0.01), AnnotatorSpec(name="m2", price=0.02)],
    )
    items = pd.DataFrame(
        {"item_id": ["1", "2"], "text": ["doc a", "doc b"], "reference": [ref, "r2"]}
    )
    ann = pd.DataFrame(
        {"item_id": ["1", "1", "2"], "annotator": ["m1", "m2", "m1"], "output": ["b", "a", "c"]}
    )
    return Dataset(task, items, ann)


@pytest.fixture
def fake(monkeypatch, tmp_path):
    monkeypatch.setenv("QUORUM_CACHE_DIR", str(tmp_path / "cache"))
    e = CountingEmbedder()
    monkeypatch.setattr(emb, "get_embedder", lambda language: e)
    return e


def test_embeddings_are_computed_once_in_sorted_order_then_read_from_disk(fake):
    ds = summaries()
    first = sim.SummaryEmbeddings(ds)
    assert fake.batches == []  # nothing is embedded before it is needed
    v1 = first(["a", "the reference"])
    assert fake.batches == [["a", "b", "c", "r2", "the reference"]]
    assert first.cache_path().is_file()
    second = sim.SummaryEmbeddings(ds)  # as a new process would: only the disk is shared
    v2 = second(["a", "the reference"])
    assert len(fake.batches) == 1 and np.array_equal(v1, v2) and v2.dtype == np.float32
    # other texts, other file
    third = sim.SummaryEmbeddings(summaries(ref="another reference"))
    third.load()
    assert len(fake.batches) == 2 and third.cache_path() != first.cache_path()


def test_a_corrupt_cache_file_is_recomputed(fake):
    e = sim.SummaryEmbeddings(summaries())
    e.cache_path().parent.mkdir(parents=True)
    e.cache_path().write_bytes(b"not a numpy file")
    with pytest.warns(RuntimeWarning, match="ignoring unreadable summary embedding cache"):
        e.load()
    assert len(fake.batches) == 1
    assert np.load(e.cache_path()).shape == (5, 3)


def test_another_process_reads_the_cache_without_loading_a_model(fake, tmp_path):
    ds = summaries()
    sim.SummaryEmbeddings(ds).load()
    save_folder(ds, tmp_path / "d")
    code = (
        "import sys, quorum.models.embedders as e, quorum.simulate as s\n"
        "from quorum.data.io import load_folder\n"
        "def no_model(language): raise SystemExit('model loaded')\n"
        "e.get_embedder = no_model\n"
        "x = s.SummaryEmbeddings(load_folder(sys.argv[1]))\n"
        "print(x(['a', 'b']).tolist(), 'torch' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "d")], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[[1.0, 1.0, 1.0], [1.0, 0.0, 1.0]] False"


@pytest.mark.slow
def test_cached_vectors_are_exactly_what_the_model_gives(monkeypatch, tmp_path):
    """Routing results cannot change: a cache hit returns the bytes the encoder returned."""
    monkeypatch.setenv("QUORUM_CACHE_DIR", str(tmp_path))
    from quorum.data.loaders import load_dataset

    ds = load_dataset(EXAMPLE)
    ds = ds.subset(ds.items["item_id"][:5])
    cold = sim.SummaryEmbeddings(ds)
    cold.load()
    warm = sim.SummaryEmbeddings(ds)
    warm.load()
    direct = np.asarray(emb.get_embedder("en").encode(warm.ordered))
    stacked = np.stack([warm.table[t] for t in warm.ordered])
    assert stacked.dtype == direct.dtype and np.array_equal(stacked, direct)


@pytest.mark.parametrize("method", ["araida", "sant"])
def test_label_only_methods_are_refused_before_preparation(monkeypatch, method):
    def no_prepare(*args, **kwargs):
        raise AssertionError("prepare() ran")

    monkeypatch.setattr(sim, "prepare", no_prepare)
    res = CliRunner().invoke(app, ["simulate", "-d", str(EXAMPLE), "--method", method])
    assert res.exit_code == 1
    assert f"{method} needs label-based confidence and cannot run on summarization" in res.output
    with pytest.raises(UnsupportedTaskError):
        sim.run_simulation(str(EXAMPLE), method=method, seeds=1)
