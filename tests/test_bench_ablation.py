"""Feature ablation variants: shapes, seeding, uncertainty signals, QUORUM still routes."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from baselines_fakes import make_dataset
from quorum.bench.ablation import random_features, uncertainty_features, with_variant
from quorum.simulate import prepare, simulate_once


def _prep(n: int = 60):
    rng = np.random.default_rng(1)
    gold = list(rng.choice(["a", "b", "c"], n))
    flip = lambda p: [g if rng.random() > p else str(rng.choice(["a", "b", "c"])) for g in gold]  # noqa: E731
    answers = {"cheap": flip(0.4), "mid": flip(0.2), "dear": flip(0.1)}
    answers["cheap"][0] = None
    conf = {"mid": list(rng.random(n))}
    ds = make_dataset(gold, answers, {"cheap": 0.01, "mid": 0.03, "dear": 0.05}, confidence=conf)
    emb = rng.standard_normal((n, 16)).astype(np.float32)
    feats = SimpleNamespace(
        phi=rng.random((n, 11)), embeddings=emb / np.linalg.norm(emb, axis=1)[:, None]
    )
    return prepare(ds, features=feats)


def test_random_features_are_seeded_and_shaped() -> None:
    prep = _prep()
    a, ea = random_features(prep, 3)
    b, eb = random_features(prep, 3)
    c, _ = random_features(prep, 4)
    assert a.shape == prep.phi.shape and ea.shape == prep.embeddings.shape
    assert np.array_equal(a, b) and np.array_equal(ea, eb) and not np.array_equal(a, c)
    assert np.allclose(np.linalg.norm(ea, axis=1), 1.0, atol=1e-5)
    assert a.min() >= 0.0 and a.max() <= 1.0


def test_uncertainty_features_follow_disagreement() -> None:
    prep = _prep()
    phi, emb, names = uncertainty_features(prep)
    assert names[:2] == ["panel_entropy", "panel_disagreement"]
    assert "1-conf:mid" in names and len(names) == 3
    assert phi.shape == (prep.dataset.n_items, 3) and emb.shape == phi.shape
    assert phi.min() >= 0.0 and phi.max() <= 1.0
    ds = prep.dataset
    wide = ds.annotations.pivot(index="item_id", columns="annotator", values="output")
    wide = wide.reindex(ds.items["item_id"])
    agree = (wide.nunique(axis=1) == 1).to_numpy()
    assert phi[agree, 0].max() == 0.0  # unanimous answers: zero entropy
    assert phi[~agree, 0].min() > 0.0
    # a missing answer counts as disagreement
    assert phi[0, 1] > 0.0 and agree[0]


@pytest.mark.parametrize("variant", ["ours", "random", "uncertainty"])
@pytest.mark.parametrize("setting", ["auditor", "dollars"])
def test_quorum_runs_on_each_variant(variant: str, setting: str) -> None:
    prep = _prep()
    p = with_variant(prep, variant, seed=0, cache={})
    if variant == "ours":
        assert p is prep
    else:
        assert p.phi is not prep.phi and p.dataset is prep.dataset
    row, _ = simulate_once(p, "quorum", setting, 0.3, 0)
    assert 0.0 <= row["accuracy"] <= 1.0
    assert row["cost"] <= row["budget_limit"] + 1e-9


def test_unknown_variant() -> None:
    with pytest.raises(ValueError, match="unknown feature variant"):
        with_variant(_prep(), "bogus", 0)


@pytest.mark.parametrize("variant", ["random", "uncertainty"])
@pytest.mark.parametrize("method", ["quorum", "quorum-paper"])
def test_variants_replace_the_raw_features_too(variant: str, method: str) -> None:
    """A prepared dataset with unscaled features (``raw``) of another width than the variant's:
    the variant's own features become the raw ones, so every router still gets a valid
    problem (it used to fail with 'raw_features must have the shape of phi')."""
    prep = _prep()
    prep = dataclasses.replace(prep, raw_features=prep.phi * 10.0)
    p = with_variant(prep, variant, seed=0, cache={})
    assert p.raw_features is not None and p.raw_features.shape == p.phi.shape
    assert p.phi.shape[1] != prep.phi.shape[1] or variant == "random"
    row, _ = simulate_once(p, method, "dollars", 0.3, 0)
    assert 0.0 <= row["accuracy"] <= 1.0
