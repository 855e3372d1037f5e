"""The bundled zero-shot classifier's mechanics (a fake embedding, no model loaded)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from quorum.models import classifiers


def _fake_embed(texts):
    """Unit vectors along an axis named by the text's first letter (a, b, c)."""
    out = np.zeros((len(texts), 3), dtype=np.float32)
    for i, t in enumerate(texts):
        out[i, "abc".index(t[0])] = 1.0
    return out


def test_zero_shot_picks_the_closest_label_with_softmax_confidence(monkeypatch):
    monkeypatch.setattr(classifiers, "embed", _fake_embed)
    clf = classifiers.ZeroShotClassifier(
        ["x", "y"], names={"x": "a-label", "y": "b-label"}, temperature=0.5
    )
    got = clf.predict_texts(["apple", "banana", "cherry"])
    assert [g["output"] for g in got] == ["x", "y", "x"]  # cherry: a tie, the first label
    p = np.exp(1 / 0.5) / (np.exp(1 / 0.5) + 1)
    assert np.isclose(got[0]["confidence"], p) and np.isclose(got[2]["confidence"], 0.5)
    items = [SimpleNamespace(item_id=str(i), text=t) for i, t in enumerate(["banana", "apple"])]
    assert clf.predict_many(items) == clf.predict_texts(["banana", "apple"])


def test_label_strings_join_names_and_descriptions():
    clf = classifiers.ZeroShotClassifier(
        ["0", "1"], names={"0": "no"}, descriptions={"0": "negative", "1": "positive"}
    )
    assert clf.label_texts == ["no: negative", "1: positive"]
    assert isinstance(clf, classifiers.LocalModel) and clf.ident.startswith("zero-shot/")
