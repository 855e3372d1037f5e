"""FeatureScaler and the layout of the context x_t = [phi, b, p, m, 1]."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from quorum.features.context import (
    ContextBuilder,
    FeatureScaler,
    context_matrix,
    context_names,
    context_vector,
)


def test_scaler_percentile_clip_then_minmax():
    x = np.arange(101, dtype=float)[:, None]  # 1st percentile = 1, 99th = 99
    s = FeatureScaler().fit(x)
    assert s.lower_[0] == pytest.approx(1.0) and s.upper_[0] == pytest.approx(99.0)
    out = s.transform(np.array([[0.0], [1.0], [50.0], [99.0], [1000.0], [-5.0]]))
    np.testing.assert_allclose(out[:, 0], [0, 0, 49 / 98, 1, 1, 0])


def test_scaler_constant_nan_and_inf():
    x = np.array([[1.0, 7.0, np.nan, 0.0], [2.0, 7.0, np.nan, np.inf], [3.0, 7.0, np.nan, 1.0]])
    s = FeatureScaler(lower=0, upper=100).fit(x)
    out = s.transform(x)
    np.testing.assert_allclose(out[:, 0], [0.0, 0.5, 1.0])
    np.testing.assert_allclose(out[:, 1], 0.0)  # constant column
    np.testing.assert_allclose(out[:, 2], 0.5)  # NaN -> 0.5
    np.testing.assert_allclose(out[:, 3], [0.0, 1.0, 1.0])  # inf ignored at fit, clipped
    assert np.isfinite(out).all() and out.min() >= 0 and out.max() <= 1
    out = s.transform(np.array([[np.nan, 9.0, 4.0, 0.5]]))
    np.testing.assert_allclose(out[0], [0.5, 0.0, 0.0, 0.5])


def test_scaler_sklearn_conventions():
    s = FeatureScaler(lower=5, upper=95)
    assert clone(s).get_params() == {"lower": 5, "upper": 95, "nan_value": 0.5}
    with pytest.raises(NotFittedError):
        s.transform(np.ones((2, 2)))
    s.fit(np.random.default_rng(0).normal(size=(20, 3)))
    assert s.n_features_in_ == 3
    with pytest.raises(ValueError, match="3"):
        s.transform(np.ones((2, 2)))
    with pytest.raises(ValueError, match="lower < upper"):
        FeatureScaler(lower=50, upper=10).fit(np.ones((3, 1)))
    assert FeatureScaler().fit(np.zeros((0, 2))).transform(np.ones((1, 2))).tolist() == [[0, 0]]


def test_context_vector_layout():
    x = context_vector(np.array([0.1, 0.2]), 0.5, 0.25, [1, 0, 1])
    np.testing.assert_allclose(x, [0.1, 0.2, 0.5, 0.25, 1, 0, 1, 1])
    x = context_vector(np.array([0.1, 0.2]), 0.5, 0.25, np.array([True, False]), bias=False)
    np.testing.assert_allclose(x, [0.1, 0.2, 0.5, 0.25, 1, 0])
    assert context_names(["f1", "f2"], ["gpt", "llama"]) == [
        "f1",
        "f2",
        "b",
        "p",
        "m[gpt]",
        "m[llama]",
        "bias",
    ]


@pytest.mark.parametrize(
    ("phi", "b", "p", "m", "msg"),
    [
        (np.ones((2, 2)), 0.5, 0.5, [0], "1-d"),
        (np.array([np.nan]), 0.5, 0.5, [0], "NaN"),
        (np.ones(2), 1.5, 0.5, [0], "b_t"),
        (np.ones(2), 0.5, -0.1, [0], "p_t"),
        (np.ones(2), 0.5, 0.5, [0, 2], "binary"),
        (np.ones(2), 0.5, 0.5, [[0, 1]], "1-d binary"),
    ],
)
def test_context_vector_validation(phi, b, p, m, msg):
    with pytest.raises(ValueError, match=msg):
        context_vector(phi, b, p, m)


def test_context_matrix_matches_rows():
    rng = np.random.default_rng(1)
    phi, b, p = rng.random((4, 3)), rng.random(4), np.arange(4) / 4
    m = rng.integers(0, 2, size=(4, 2))
    x = context_matrix(phi, b, p, m)
    assert x.shape == (4, 3 + 2 + 2 + 1)
    for t in range(4):
        np.testing.assert_allclose(x[t], context_vector(phi[t], b[t], p[t], m[t]))
    x = context_matrix(phi, 0.3, 0.1, m, bias=False)
    np.testing.assert_allclose(x[:, 3], 0.3)
    assert x.shape == (4, 7)


@pytest.mark.parametrize("bias", [True, False])
def test_builder_row_is_the_concatenation_and_the_rows(bias):
    """ContextBuilder.row writes x_t in place: the same numbers as np.concatenate of its
    parts and as the vectorised rows (float or numpy b and p, 0/1 or float masks)."""
    rng = np.random.default_rng(2)
    phi = rng.random((6, 4))
    ctx = ContextBuilder(phi, None, ["a", "b", "c"], bias)
    for t in range(6):
        b, p = rng.random(), np.float64(rng.random())
        mask = rng.integers(0, 2, size=3).astype(float)
        want = np.concatenate([phi[t], [b, p], mask, [1.0]] if bias else [phi[t], [b, p], mask])
        got = ctx.row(t, b, p, mask)
        assert got.dtype == np.float64
        assert np.array_equal(got, want)
        assert np.array_equal(got, ctx.rows([t], b, p, mask[None, :])[0])


def test_context_matrix_validation():
    phi, m = np.ones((3, 2)), np.zeros((3, 2))
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        context_matrix(phi, np.ones(2) * 0.5, 0.5, m)
    with pytest.raises(ValueError, match=r"\(3, K\)"):
        context_matrix(phi, 0.5, 0.5, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="2-d"):
        context_matrix(np.ones(3), 0.5, 0.5, m)
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        context_matrix(phi, np.array([0.1, 2.0, 0.1]), 0.5, m)
