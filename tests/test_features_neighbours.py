"""kNN cosine distances on hand-made vectors whose neighbours are known."""

from __future__ import annotations

import numpy as np
import pytest

from quorum.features.neighbours import (
    PAD_DISTANCE,
    knn_distances,
    knn_indices,
    knn_query,
    knn_search,
)


def unit(deg: float) -> list[float]:
    r = np.deg2rad(deg)
    return [np.cos(r), np.sin(r)]


ANGLES = np.array([unit(0), unit(60), unit(90), unit(180)], dtype=np.float32)


def test_known_angles():
    d, i = knn_search(ANGLES, k=2)
    # from 0 deg: 60 -> 1 - cos 60 = 0.5, 90 -> 1.0
    np.testing.assert_allclose(d[0], [0.5, 1.0], atol=1e-6)
    np.testing.assert_array_equal(i[0], [1, 2])
    # from 60 deg: 90 -> 1 - cos 30, 0 -> 0.5
    np.testing.assert_allclose(d[1], [1 - np.cos(np.pi / 6), 0.5], atol=1e-6)
    np.testing.assert_array_equal(i[1], [2, 0])
    # from 180 deg: 90 -> 1.0, 60 -> 1.5
    np.testing.assert_allclose(d[3], [1.0, 1.5], atol=1e-6)
    np.testing.assert_array_equal(i[3], [2, 1])
    assert d.dtype == np.float32 and i.dtype == np.int64
    assert (np.diff(d, axis=1) >= 0).all()


def test_self_is_never_a_neighbour():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 8))
    i = knn_indices(x, k=5)
    assert not (i == np.arange(50)[:, None]).any()


def test_unnormalised_input_is_cosine():
    d1 = knn_distances(ANGLES * np.array([[3.0], [0.5], [10.0], [2.0]]), k=3)
    d2 = knn_distances(ANGLES, k=3)
    np.testing.assert_allclose(d1, d2, atol=1e-6)


def test_exact_duplicates_give_zero_but_not_self():
    x = np.array([unit(0), unit(0), unit(0), unit(90)], dtype=np.float32)
    d, i = knn_search(x, k=2)
    np.testing.assert_allclose(d[:3], 0.0, atol=1e-6)
    for row in range(3):
        assert row not in i[row]
        assert set(i[row]) <= {0, 1, 2}
    np.testing.assert_allclose(d[3], [1.0, 1.0], atol=1e-6)


def test_many_duplicates_tie_out_self():
    x = np.tile(np.array([[1.0, 0.0]], dtype=np.float32), (20, 1))
    d, i = knn_search(x, k=3)
    np.testing.assert_allclose(d, 0.0, atol=1e-6)
    assert not (i == np.arange(20)[:, None]).any()
    assert (i >= 0).all()


def test_fewer_items_than_k_are_padded():
    d, i = knn_search(ANGLES[:3], k=5)
    assert d.shape == (3, 5) and i.shape == (3, 5)
    np.testing.assert_allclose(d[0, :2], [0.5, 1.0], atol=1e-6)
    assert (d[:, 2:] == PAD_DISTANCE).all() and (i[:, 2:] == -1).all()
    d, i = knn_search(ANGLES[:1], k=5)
    assert (d == PAD_DISTANCE).all() and (i == -1).all()
    d, i = knn_search(np.zeros((0, 2), np.float32), k=5)
    assert d.shape == (0, 5) and i.shape == (0, 5)


def test_query_against_base():
    d, i = knn_query(ANGLES, np.array([unit(0)], np.float32), k=2)
    np.testing.assert_allclose(d[0], [0.0, 0.5], atol=1e-6)  # the base item itself counts
    np.testing.assert_array_equal(i[0], [0, 1])
    d, i = knn_query(ANGLES[:1], np.array([unit(90)], np.float32), k=3)
    np.testing.assert_allclose(d[0], [1.0, PAD_DISTANCE, PAD_DISTANCE], atol=1e-6)
    np.testing.assert_array_equal(i[0], [0, -1, -1])


def test_bad_input():
    with pytest.raises(ValueError, match="k must be"):
        knn_search(ANGLES, k=0)
    with pytest.raises(ValueError, match="2-d"):
        knn_search(np.ones(3), k=1)
    with pytest.raises(ValueError, match="NaN"):
        knn_search(np.array([[np.nan, 1.0], [1.0, 0.0]]), k=1)
    with pytest.raises(ValueError, match="dimension"):
        knn_query(ANGLES, np.ones((1, 3)), k=1)
