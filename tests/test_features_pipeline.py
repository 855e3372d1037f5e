"""End to end with the real models: FeatureExtractor, datasets, the CLI command."""

from __future__ import annotations

import json
import sys
import types

import numpy as np
import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from quorum.cli.features import register
from quorum.data.schema import Dataset, TaskSpec
from quorum.features.neighbours import knn_search
from quorum.features.pipeline import (
    FeatureExtractor,
    FeatureSet,
    extract_dataset_features,
    feature_names,
)

EN = [
    "The football team won the championship match.",
    "The soccer club celebrated its victory in the final game.",
    "Mix flour, eggs and sugar, then bake the cake for 30 minutes.",
    "Preheat the oven and bake the bread until golden.",
    "The central bank raised interest rates again this quarter.",
    "Inflation worries pushed stock markets lower on Monday.",
    "The central bank raised interest rates again this quarter.",  # exact duplicate of 4
]


@pytest.fixture(scope="module")
def en_features(tmp_path_factory) -> FeatureSet:
    fx = FeatureExtractor(cache_dir=str(tmp_path_factory.mktemp("cache")), show_progress=False)
    return fx.fit_transform(EN, language="en")


def test_shapes_names_ranges(en_features):
    fs = en_features
    n, m = len(EN), 6 + 5
    assert fs.raw.shape == fs.phi.shape == (n, m)
    assert fs.embeddings.shape == (n, 384) and fs.embeddings.dtype == np.float32
    assert fs.neighbours.shape == (n, 5) and fs.k == 5
    assert fs.names == feature_names(5) and fs.names[6] == "knn_dist_1"
    assert fs.language == "en" and fs.model.endswith("all-MiniLM-L6-v2")
    assert np.isfinite(fs.phi).all() and fs.phi.min() >= 0 and fs.phi.max() <= 1
    assert set(fs.timings) >= {"linguistic", "embedding", "knn", "total", "cached"}
    assert list(fs.to_frame().columns) == fs.names
    assert list(fs.summary().index) == fs.names


def test_raw_distances_are_the_knn_of_the_embeddings(en_features):
    d, _ = knn_search(en_features.embeddings, 5)
    np.testing.assert_allclose(en_features.raw[:, 6:], d, atol=1e-6)
    assert en_features.raw[4, 6] == pytest.approx(0.0, abs=1e-5)  # duplicate text
    assert en_features.neighbours[4, 0] == 6 and en_features.neighbours[6, 0] == 4
    # the football pair are each other's nearest neighbours
    assert en_features.neighbours[0, 0] == 1 and en_features.neighbours[1, 0] == 0


def test_transform_new_items(tmp_path):
    fx = FeatureExtractor(cache_dir=str(tmp_path), show_progress=False)
    fx.fit(EN, language="en")
    new = fx.transform(
        [
            "The rugby team won the cup final.",
            "The central bank raised interest rates again this quarter.",
        ],
        language="en",
    )
    assert new.phi.shape == (2, 11) and np.isfinite(new.phi).all()
    assert new.neighbours[0, 0] in (0, 1)
    assert new.raw[1, 6] == pytest.approx(0.0, abs=1e-5)  # identical to a fitted item


def test_multilingual_dataset_uses_e5_and_nan_becomes_half(tmp_path):
    task = TaskSpec(name="t", type="classification", labels=["a", "b"], language="es")
    items = pd.DataFrame(
        {
            "item_id": ["1", "2", "3", "4"],
            "text": [
                "El niño lee un libro.",
                "Els gossos corren pel parc.",
                "猫が魚を食べた。",
                "La niña escribe una carta.",
            ],
            "language": ["es", "ca", "ja", "es"],
        }
    )
    ds = Dataset(task, items, pd.DataFrame(columns=["item_id", "annotator", "output"]))
    fs = extract_dataset_features(ds, cache_dir=str(tmp_path), show_progress=False)
    assert fs.language == "ca+es+ja" and fs.languages == ["es", "ca", "ja", "es"]
    assert fs.model.startswith("intfloat/multilingual-e5-small")
    assert np.isnan(fs.raw[2, [0, 3]]).all()
    np.testing.assert_allclose(fs.phi[2, [0, 3]], 0.5)
    # 4 items: 3 real neighbours each, the last 2 of k=5 are padded with 1.0
    assert (fs.raw[:, 6:9] < 1.0).all() and (fs.raw[:, 9:] == 1.0).all()


def test_dataset_language_falls_back_to_task(tmp_path):
    task = TaskSpec(name="t", type="classification", labels=["a"], language="ja")
    items = pd.DataFrame({"item_id": ["1", "2"], "text": ["猫が好き。", "犬が好き。"]})
    ds = Dataset(task, items, pd.DataFrame(columns=["item_id", "annotator", "output"]))
    fs = extract_dataset_features(ds, cache_dir=str(tmp_path), show_progress=False, k=1)
    assert fs.languages == ["ja", "ja"] and fs.phi.shape == (2, 7)


def test_auto_language(tmp_path):
    fs = FeatureExtractor(cache_dir=str(tmp_path), show_progress=False, k=1).fit_transform(
        ["The cat sat on the mat and it was good.", "猫が好きです。"]
    )
    assert fs.languages == ["en", "ja"]


def test_empty_input_and_bad_k(tmp_path):
    fs = FeatureExtractor(cache=False, show_progress=False).fit_transform([], language="en")
    assert fs.raw.shape == (0, 11) and fs.embeddings.shape[0] == 0
    with pytest.raises(ValueError, match="k must be"):
        FeatureExtractor(k=0, cache=False).fit_transform(["a"], language="en")
    with pytest.raises(RuntimeError, match="fit"):
        FeatureExtractor().transform(["a"])


def test_cli_json(monkeypatch, tmp_path):
    task = TaskSpec(name="toy", type="classification", labels=["a"], language="en")
    items = pd.DataFrame({"item_id": [str(i) for i in range(len(EN))], "text": EN})
    ds = Dataset(task, items, pd.DataFrame(columns=["item_id", "annotator", "output"]))
    fake = types.ModuleType("quorum.data.loaders")
    fake.load_dataset = lambda name: ds
    monkeypatch.setitem(sys.modules, "quorum.data.loaders", fake)
    monkeypatch.setenv("QUORUM_CACHE_DIR", str(tmp_path))

    app = typer.Typer()

    @app.callback()
    def main() -> None:
        pass

    register(app)
    runner = CliRunner()
    res = runner.invoke(app, ["features", "toy", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["n_items"] == len(EN) and out["timings"]["cached"] is False
    assert set(out["features"]) == set(feature_names(5))
    assert out["features"]["avg_word_length"]["mean"] > 3
    res = runner.invoke(app, ["features", "toy", "--json"])
    assert json.loads(res.output)["timings"]["cached"] is True
    res = runner.invoke(app, ["features", "toy", "--no-cache"])
    assert res.exit_code == 0, res.output
    assert "computed in" in res.output and "knn_dist_5" in res.output
