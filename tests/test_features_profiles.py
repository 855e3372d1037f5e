"""Feature profiles: the distilled tagger, the light linguistic pipeline, the static embedder."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from quorum.features import pipeline as pl
from quorum.features import profiles
from quorum.features.cache import cache_key
from quorum.features.fast_linguistic import LightLinguistic, _sample
from quorum.features.hashed_tagger import HashedTagger
from quorum.features.linguistic import linguistic_features
from quorum.features.profiles import ENV_VAR, resolve_profile
from quorum.models.embedders import MINILM_NAME

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Stocks fell sharply on Monday after the bank raised interest rates again.",
    "She walks to school every morning and reads a book on the bus.",
    "Apple unveiled a new phone; analysts expect strong sales in Europe.",
    "I loved this movie! The acting was great, but the ending felt rushed.",
    "They will announce the results of the election tomorrow.",
    "Heavy rain flooded the streets and closed several roads downtown.",
    "He quickly finished his homework and went outside to play football.",
    "",
    "!!! ???",
] * 3


def test_profiles_by_name_and_env(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert resolve_profile().name == "default"
    assert resolve_profile("FAST").light and resolve_profile("fast").static
    st = resolve_profile("static")
    assert st.static and not st.light
    monkeypatch.setenv(ENV_VAR, "fast")
    assert resolve_profile().name == "fast" and resolve_profile("default").name == "default"
    with pytest.raises(ValueError, match="unknown feature profile"):
        resolve_profile("turbo")


def test_hashed_tagger_learns_context():
    """Synthetic mechanics: the tag of token 5 depends on the token before it."""
    rng = np.random.default_rng(0)
    arrays, tags = [], []
    for _ in range(200):
        lower = rng.integers(1, 50, size=12).astype(np.uint64)
        a = np.zeros((12, 6), dtype=np.uint64)
        a[:, 1] = lower
        a[:, 3:] = 7  # same shape/prefix/suffix everywhere: only words and context help
        t = np.where(lower < 25, 92, 100).astype(np.uint64)  # NOUN / VERB ids
        t[np.roll(lower, 1) == 3] = 84  # after word 3: ADJ
        t[0] = 92 if lower[0] < 25 else 100
        arrays.append(a)
        tags.append(t)
    tagger = HashedTagger().fit(arrays[:150], tags[:150])
    held = zip(arrays[150:], tags[150:], strict=True)
    acc = np.mean([(tagger.predict(a) == t).mean() for a, t in held])
    assert acc > 0.95
    again = HashedTagger().fit(arrays[:150], tags[:150])
    np.testing.assert_array_equal(again.weights_, tagger.weights_)
    # one thread or two: the same tagger (the one-vs-rest seeds are drawn before the split)
    for n_jobs in (1, 2):
        other = HashedTagger(n_jobs=n_jobs).fit(arrays[:150], tags[:150])
        np.testing.assert_array_equal(other.weights_, tagger.weights_)
        np.testing.assert_array_equal(other.bias_, tagger.bias_)
    assert tagger.predict(np.zeros((0, 6), dtype=np.uint64)).shape == (0,)


def test_sample_is_fixed_and_bounded():
    lengths = np.full(1000, 10)
    s = _sample(lengths, 200)
    assert 20 <= len(s) <= 21 and np.array_equal(s, _sample(lengths, 200))
    assert np.array_equal(np.sort(s), s)
    np.testing.assert_array_equal(_sample(lengths, 10**6), np.arange(1000))


def test_light_equals_default_when_everything_is_tagged():
    ref = linguistic_features(TEXTS, "en")
    got = LightLinguistic(sample_tokens=10**6)(TEXTS, "en")
    np.testing.assert_array_equal(got, ref)


def test_light_with_a_small_sample():
    """Only the two POS ratios may differ, and only a little; the result is reproducible."""
    ref = linguistic_features(TEXTS, "en")
    light = LightLinguistic(sample_tokens=60)
    got = light(TEXTS, "en")
    np.testing.assert_array_equal(got[:, :4], ref[:, :4])
    assert "en" in light.taggers_ and light.taggers_["en"] is not None
    assert np.abs(got[:, 4:] - ref[:, 4:]).mean() < 0.15
    assert not np.array_equal(got[:, 4:], np.zeros_like(got[:, 4:]))
    np.testing.assert_array_equal(LightLinguistic(sample_tokens=60)(TEXTS, "en"), got)
    # later texts reuse the fitted tagger
    np.testing.assert_array_equal(light(TEXTS[:4], "en"), got[:4])


def test_default_profile_keeps_its_cache_key(monkeypatch, tmp_path):
    """Existing caches stay valid: the default key is the historical one; fast has another."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    seen = []
    real = pl.cache_key

    def spy(texts, **kw):
        seen.append(kw["model"])
        return real(texts, **kw)

    monkeypatch.setattr(pl, "cache_key", spy)
    monkeypatch.setattr(profiles, "get_embedder", lambda language="en": _FakeEmbedder())
    pl.FeatureExtractor(cache_dir=str(tmp_path), show_progress=False).fit_transform(TEXTS, "en")
    assert seen == [MINILM_NAME]
    key = cache_key(TEXTS, model=MINILM_NAME, language=["en"] * len(TEXTS), k=5)
    assert (tmp_path / "features" / f"{key}.npz").exists()


class _FakeEmbedder:
    name = MINILM_NAME
    dim = 4

    def encode(self, texts, batch_size=64, progress=None):
        rng = np.random.default_rng(len(texts))
        x = rng.normal(size=(len(texts), 4)).astype(np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)


needs_model2vec = pytest.mark.skipif(
    importlib.util.find_spec("model2vec") is None, reason="model2vec not installed ([fast])"
)


@pytest.mark.slow
@needs_model2vec
def test_static_embedder_and_fast_profile(tmp_path, monkeypatch):
    """Distilled offline (first use: minutes), then a unit-norm 256-d space where related
    texts are closer; the fast profile caches under its own key."""
    from quorum.features.static import StaticEmbedder, static_name

    emb = StaticEmbedder()
    e = emb.encode(TEXTS[:8])
    assert e.shape == (8, 256) and e.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)
    pair = emb.encode(["The football team won the match.", "The soccer club won the game."])
    cake = emb.encode(["Mix flour and sugar, then bake the cake."])
    assert float(pair[0] @ pair[1]) > float(pair[0] @ cake[0]) + 0.2
    np.testing.assert_allclose(emb.encode(TEXTS[:8][::-1])[::-1], e, atol=1e-6)

    monkeypatch.setenv(ENV_VAR, "fast")
    fx = pl.FeatureExtractor(cache_dir=str(tmp_path), show_progress=False)
    fs = fx.fit_transform(TEXTS, "en")
    assert fs.profile == "fast" and fs.model == static_name() and fs.embeddings.shape[1] == 256
    again = pl.FeatureExtractor(cache_dir=str(tmp_path), show_progress=False)
    hit = again.fit_transform(TEXTS, "en")
    assert hit.timings["cached"] and np.array_equal(hit.phi, fs.phi)
    new = again.transform(TEXTS[:3])
    assert new.phi.shape == (3, fs.phi.shape[1]) and new.model == fs.model


@pytest.mark.slow
@pytest.mark.realdata
@needs_model2vec
def test_static_neighbours_agree_with_minilm(shared_data_dir):
    """Real data: the static model finds many of MiniLM's 5 nearest neighbours (500 texts:
    agreement 0.39 there, 0.37 on 1,500; MiniLM on 1,500 took minutes on 2 busy cores)."""
    from quorum.data.loaders import load_dataset
    from quorum.features.neighbours import knn_search
    from quorum.features.static import StaticEmbedder
    from quorum.models.embedders import get_embedder

    texts = load_dataset("ag-news").items["text"].tolist()[:500]
    _, ref = knn_search(get_embedder("en").encode(texts), 5)
    _, got = knn_search(StaticEmbedder().encode(texts), 5)
    agree = np.mean([len(set(a) & set(b)) / 5 for a, b in zip(got, ref, strict=True)])
    rand = 5 / len(texts)
    assert agree > 0.3 > 20 * rand


@pytest.mark.realdata
def test_fast_flesch_equals_textstat(shared_data_dir):
    """Real English and Spanish texts: the memoised Flesch is textstat's, to the last bit."""
    from quorum.data.loaders import load_dataset
    from quorum.features.fast_linguistic import flesch_difficulty_fast
    from quorum.features.linguistic import flesch_difficulty

    for name, lang in (("ag-news", "en"), ("coannotating-stance/es", "es")):
        texts = [*load_dataset(name).items["text"].tolist()[:400], *TEXTS]
        for t in texts:
            assert flesch_difficulty_fast(t, lang) == flesch_difficulty(t, lang), t


def test_bench_run_keys_follow_the_profile(monkeypatch):
    """A bench run under another feature profile is another run; default keys unchanged."""
    from quorum.bench.plan import RunSpec
    from quorum.bench.worker import group_key

    monkeypatch.delenv(ENV_VAR, raising=False)
    base = RunSpec("ag-news", "random", "dollars", 0.5, 0)
    assert "features_profile" not in base.payload()
    key, group = base.key, group_key("ag-news", "gold")
    monkeypatch.setenv(ENV_VAR, "fast")
    fast = RunSpec("ag-news", "random", "dollars", 0.5, 0)
    assert fast.payload()["features_profile"] == "fast"
    assert fast.key != key and group_key("ag-news", "gold") != group
