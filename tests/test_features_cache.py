"""The content-keyed feature cache: keys, atomic files, corrupt files, cache hits."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from quorum.cache import ENV_VAR, user_cache_dir
from quorum.features import pipeline as pl
from quorum.features import profiles
from quorum.features.cache import FeatureCache, cache_key
from quorum.features.pipeline import FeatureExtractor

TEXTS = ["The cat sat. The dog ran.", "Stocks fell sharply today.", "A new phone was released."]


class FakeEmbedder:
    """Deterministic unit vectors from a hash of the text; counts its calls."""

    name = "sentence-transformers/all-MiniLM-L6-v2"
    dim = 8

    def __init__(self) -> None:
        self.calls = 0

    def encode(self, texts, batch_size=64, progress=None):
        self.calls += 1
        out = np.array(
            [np.random.default_rng(zlib.crc32(t.encode())).normal(size=self.dim) for t in texts],
            dtype=np.float32,
        ).reshape(len(texts), self.dim)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture
def fake(monkeypatch):
    emb = FakeEmbedder()
    monkeypatch.setattr(profiles, "get_embedder", lambda language="en": emb)
    return emb


def _forbid_compute(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("computed although the cache should have been hit")

    monkeypatch.setattr(profiles, "get_embedder", boom)
    monkeypatch.setattr(pl, "linguistic_features", boom)
    monkeypatch.setattr(pl, "knn_search", boom)


def test_key_depends_on_everything():
    base = cache_key(TEXTS, model="m", language="en", k=5)
    assert base == cache_key(list(TEXTS), model="m", language="en", k=5)
    assert len(base) == 64
    others = {
        cache_key(TEXTS[::-1], model="m", language="en", k=5),
        cache_key(TEXTS, model="m2", language="en", k=5),
        cache_key(TEXTS, model="m", language="es", k=5),
        cache_key(TEXTS, model="m", language="en", k=4),
        cache_key(TEXTS, model="m", language="en", k=5, version="other"),
        cache_key(["ab", "c"], model="m", language="en", k=5),
    }
    assert base not in others and len(others) == 6
    assert cache_key(["ab", "c"], model="m", language="en", k=5) != cache_key(
        ["a", "bc"], model="m", language="en", k=5
    )


def test_cache_dir_from_env(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert user_cache_dir() == tmp_path
    assert FeatureCache().folder == tmp_path / "features"
    monkeypatch.delenv(ENV_VAR)
    assert user_cache_dir().parts[-2:] == (".cache", "quorum")


def test_save_load_roundtrip(tmp_path):
    c = FeatureCache(tmp_path)
    arrays = {
        "embeddings": np.ones((2, 3), np.float32),
        "linguistic": np.array([[1.0, np.nan]] * 2),
        "distances": np.zeros((2, 5), np.float32),
        "neighbours": np.full((2, 5), -1, np.int64),
    }
    p = c.save("abc", arrays, {"model": "m"})
    assert p.exists() and not list(c.folder.glob("*.tmp"))
    got = c.load("abc", n=2)
    assert got["meta"] == {"model": "m"}
    for k, v in arrays.items():
        np.testing.assert_array_equal(got[k], v)
        assert got[k].dtype == v.dtype
    assert c.load("missing") is None
    with pytest.warns(RuntimeWarning, match="unreadable"):
        assert c.load("abc", n=3) is None  # wrong row count counts as corrupt


def test_second_run_is_a_cache_hit(fake, monkeypatch, tmp_path):
    first = FeatureExtractor(cache_dir=str(tmp_path), show_progress=False).fit_transform(
        TEXTS, language="en"
    )
    assert first.timings["cached"] is False and fake.calls == 1
    assert len(list((tmp_path / "features").glob("*.npz"))) == 1
    _forbid_compute(monkeypatch)
    second = FeatureExtractor(cache_dir=str(tmp_path), show_progress=False).fit_transform(
        TEXTS, language="en"
    )
    assert second.timings["cached"] is True
    for a in ("raw", "phi", "embeddings", "neighbours"):
        np.testing.assert_array_equal(getattr(first, a), getattr(second, a))
    assert second.names == first.names and second.model == first.model


def test_cache_hit_loads_no_model(monkeypatch, tmp_path):
    """A warm run must not touch spaCy or the sentence-transformers model at all."""
    from quorum.features import linguistic
    from quorum.models import embedders as embeddings

    emb = FakeEmbedder()
    monkeypatch.setattr(profiles, "get_embedder", lambda language="en": emb)
    FeatureExtractor(cache_dir=str(tmp_path), show_progress=False).fit_transform(TEXTS, "en")
    monkeypatch.undo()

    def boom(*a, **k):
        raise AssertionError("model loaded on a cache hit")

    monkeypatch.setattr(linguistic, "spacy_pipeline", boom)
    monkeypatch.setattr(embeddings, "_embedder_by_name", boom)
    fs = FeatureExtractor(cache_dir=str(tmp_path), show_progress=False).fit_transform(TEXTS, "en")
    assert fs.timings["cached"] is True


def test_changed_texts_or_k_miss(fake, tmp_path):
    kw = {"cache_dir": str(tmp_path), "show_progress": False}
    FeatureExtractor(**kw).fit_transform(TEXTS, "en")
    FeatureExtractor(**kw).fit_transform([*TEXTS, "One more."], "en")
    FeatureExtractor(k=2, **kw).fit_transform(TEXTS, "en")
    assert fake.calls == 3


def test_corrupt_file_recomputes_with_warning(fake, tmp_path):
    kw = {"cache_dir": str(tmp_path), "show_progress": False}
    first = FeatureExtractor(**kw).fit_transform(TEXTS, "en")
    (path,) = (tmp_path / "features").glob("*.npz")
    path.write_bytes(b"not a zip file")
    with pytest.warns(RuntimeWarning, match="unreadable feature cache"):
        again = FeatureExtractor(**kw).fit_transform(TEXTS, "en")
    assert again.timings["cached"] is False and fake.calls == 2
    np.testing.assert_array_equal(first.raw, again.raw)
    assert FeatureExtractor(**kw).fit_transform(TEXTS, "en").timings["cached"] is True


def test_no_cache_writes_nothing(fake, tmp_path):
    FeatureExtractor(cache=False, cache_dir=str(tmp_path), show_progress=False).fit_transform(
        TEXTS, "en"
    )
    assert not (tmp_path / "features").exists()
