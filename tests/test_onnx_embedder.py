"""MiniLM on ONNX Runtime against the sentence-transformers MiniLM (the ``onnx`` profile).

Skipped only where onnxruntime is not installed (``make test`` installs it from
requirements-test.lock).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from quorum.features import onnx_embedder as ox
from quorum.features.profiles import profile_embedder_name, resolve_profile
from quorum.models.embedders import MINILM_NAME, get_embedder

EDGE = [
    "",
    "   leading and trailing white space   ",
    "UPPER case and émojis 🙂, accents: café naïve",
    "word " * 400,  # cut at 256 word pieces
    "!!!",
]


@pytest.fixture(scope="module")
def real_texts(shared_data_dir) -> list[str]:
    """24 ag-news items and 24 imdb-mlapi reviews (long: many are cut at 256 word pieces)."""
    from quorum.data.loaders import load_dataset

    ag = load_dataset("ag-news").items["text"].tolist()[:24]
    imdb = load_dataset("imdb-mlapi").items["text"].tolist()[:24]
    return [*ag, *imdb, *EDGE]


@pytest.mark.slow
@pytest.mark.realdata
def test_onnx_embeddings_match_sentence_transformers(real_texts):
    """Same tokens as sentence-transformers, and per-item cosine >= 0.9999 to its
    embeddings; same order whatever order the texts come in."""
    torch_emb = get_embedder("en")
    onnx_emb = ox.OnnxMiniLMEmbedder(n_threads=2)

    st_ids = torch_emb.model.tokenize(real_texts)["input_ids"].numpy()
    ours = onnx_emb.tokenize(real_texts)["input_ids"]
    np.testing.assert_array_equal(ours, st_ids)
    assert ours.shape[1] == 256  # the long texts are cut at max_seq_length

    ref = torch_emb.encode(real_texts, batch_size=16)
    got = onnx_emb.encode(real_texts, batch_size=16)
    assert got.shape == ref.shape == (len(real_texts), 384) and got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cos = (ref.astype(np.float64) * got).sum(1)
    assert cos.min() >= 0.9999, (cos.min(), real_texts[int(cos.argmin())][:80])
    # not the same vector for everything: distinct texts stay apart
    assert (ref @ ref.T)[np.triu_indices(len(ref), 1)].min() < 0.9
    rev = onnx_emb.encode(real_texts[::-1], batch_size=16)[::-1]
    np.testing.assert_allclose(rev, got, atol=1e-5)


@pytest.mark.slow
@pytest.mark.realdata
def test_onnx_profile_features(real_texts, tmp_path):
    """``FeatureExtractor(profile="onnx")``: its own model name and cache entry, the same
    neighbours as the default profile on real texts, the linguistic columns unchanged."""
    from quorum.features.pipeline import FeatureExtractor

    texts = real_texts[:48]
    kw = {"cache_dir": str(tmp_path), "show_progress": False, "language": "en"}
    base = FeatureExtractor(**kw).fit_transform(texts)
    fx = FeatureExtractor(profile="onnx", **kw)
    fs = fx.fit_transform(texts)
    assert fs.model == ox.onnx_name() and fs.profile == "onnx" and not fs.timings["cached"]
    np.testing.assert_array_equal(fs.raw[:, :6], base.raw[:, :6])
    assert (fs.neighbours == base.neighbours).all(axis=1).mean() >= 0.9
    np.testing.assert_allclose(fs.raw[:, 6:], base.raw[:, 6:], atol=1e-3)
    hit = FeatureExtractor(profile="onnx", **kw).fit_transform(texts)
    assert hit.timings["cached"] and np.array_equal(hit.phi, fs.phi)
    new = fx.transform(texts[:3])
    assert new.model == ox.onnx_name() and new.neighbours[:, 0].tolist() == [0, 1, 2]


def test_export_is_made_once_per_key(tmp_path, monkeypatch):
    """The export runs once per key (the cache is read after), under the key's file lock;
    another recipe is another file."""
    calls: list[Path] = []

    def fake_export(path: Path, target: Path) -> None:
        calls.append(target)
        target.write_bytes(b"onnx bytes")

    monkeypatch.setattr(ox, "export_onnx", fake_export)
    first = ox.onnx_model_file(tmp_path)
    again = ox.onnx_model_file(tmp_path)
    assert first == again and first.read_bytes() == b"onnx bytes" and len(calls) == 1
    assert first.parent == tmp_path / "models" / "minilm-onnx"
    assert (first.parent / f".{first.stem}.lock").exists()
    monkeypatch.setattr(ox, "EXPORT_RECIPE", "another recipe")
    other = ox.onnx_model_file(tmp_path)
    assert other != first and len(calls) == 2


def test_onnx_profile_has_its_own_embedder_name(monkeypatch):
    prof = resolve_profile("onnx")
    assert prof.onnx and not prof.static and not prof.light
    assert profile_embedder_name(prof, "en") == ox.onnx_name() != MINILM_NAME
    assert ox.onnx_name().startswith(MINILM_NAME + "@onnxruntime-")
    # non-English texts keep multilingual-e5, as in every profile
    assert profile_embedder_name(prof, "es") == profile_embedder_name(resolve_profile(), "es")


def test_a_wrong_export_is_refused(tmp_path, monkeypatch):
    """An export whose numbers differ from torch is not kept in the cache."""

    def bad_export(path: Path, target: Path) -> None:
        raise RuntimeError("the ONNX export of MiniLM differs from torch by 0.4")

    monkeypatch.setattr(ox, "export_onnx", bad_export)
    with pytest.raises(RuntimeError, match="differs from torch"):
        ox.onnx_model_file(tmp_path)
    assert not list((tmp_path / "models" / "minilm-onnx").glob("*.onnx"))
