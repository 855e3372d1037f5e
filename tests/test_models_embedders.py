"""The real bundled embedders: unit norm, float32, order kept, similar texts closer."""

from __future__ import annotations

import numpy as np
import pytest

from quorum.models.embedders import (
    E5_NAME,
    MINILM_NAME,
    Embedder,
    embedder_name,
    get_embedder,
    l2_normalise,
)


@pytest.fixture(scope="module")
def minilm():
    return get_embedder("en")


@pytest.fixture(scope="module")
def e5():
    return get_embedder("ja")


def _check(e: np.ndarray, n: int) -> None:
    assert e.shape == (n, 384) and e.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)


def test_choice_and_singletons(minilm, e5):
    assert minilm.name == MINILM_NAME and e5.name == E5_NAME
    assert get_embedder("en-US") is minilm
    assert get_embedder("es") is e5 and get_embedder("ca") is e5
    assert get_embedder(["en", "en"]) is minilm and get_embedder(["en", "es"]) is e5
    assert embedder_name("en") == MINILM_NAME and embedder_name("multi") == E5_NAME
    assert isinstance(minilm, Embedder) and isinstance(e5, Embedder)


def test_minilm_similarity_and_order(minilm):
    texts = [
        "The football team won the championship match.",
        "The soccer club celebrated its victory in the final game.",
        "Mix flour, eggs and sugar, then bake the cake for 30 minutes.",
        "",
    ]
    e = minilm.encode(texts, batch_size=2)
    _check(e, 4)
    sim = e @ e.T
    assert sim[0, 1] > sim[0, 2] + 0.2
    rev = minilm.encode(texts[::-1])
    np.testing.assert_allclose(rev[::-1], e, atol=1e-5)


def test_e5_multilingual(e5):
    texts = [
        "El equipo de fútbol ganó el campeonato.",
        "サッカーチームが優勝した。",
        "Mezcla la harina con los huevos y hornea el pastel.",
        "猫が好きです。",
    ]
    seen = []
    e = e5.encode(texts, batch_size=3, progress=seen.append)
    _check(e, 4)
    assert sum(seen) == 4
    sim = e @ e.T
    assert sim[0, 1] > sim[0, 2]  # same meaning across languages beats same language


def test_empty_input(minilm):
    assert minilm.encode([]).shape == (0, 384)


def test_l2_normalise_keeps_zero_rows():
    out = l2_normalise(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])
    assert out.dtype == np.float32
