"""The compiled posterior kernels (numba) against the numpy reference path."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from quorum.routing.quorum.arms import ArmModels
from quorum.routing.quorum.compiled import kernels
from quorum.routing.quorum.params import QuorumParams
from quorum.routing.quorum.posterior import BayesianLinearPosterior, quadratic_form
from quorum.routing.quorum.router import QuorumRouter

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))


@pytest.mark.parametrize(("n", "d"), [(1, 1), (3, 5), (63, 17), (64, 17), (5000, 17), (70, 40)])
def test_quad_rows_is_einsum_bit_for_bit(n, d):
    rng = np.random.default_rng(n * 100 + d)
    X = rng.standard_normal((n, d))
    A = rng.standard_normal((d, d))
    S = A @ A.T / d
    want = np.einsum("ij,jk,ik->i", X, S, X)
    assert np.array_equal(kernels.quad_rows(X, S), want)
    assert np.array_equal(kernels.quad_rows(X, S), quadratic_form(X, S))


@pytest.mark.parametrize(
    ("n", "d", "k"), [(1, 17, 3), (127, 17, 3), (129, 17, 3), (700, 5, 1), (300, 17, 4)]
)
def test_mean_quad_rows_is_numpy_mean_bit_for_bit(n, d, k):
    """D_t in one call: the mean over arms that ArmModels.difficulty takes on the numpy
    path (np.mean of the arms' einsum rows), bit for bit, across block boundaries."""
    rng = np.random.default_rng(n + 7 * d + k)
    X = rng.standard_normal((n, d))
    covs = []
    for _ in range(k):
        A = rng.standard_normal((d, d))
        covs.append(A @ A.T / d)
    want = np.mean([np.einsum("ij,jk,ik->i", X, S, X) for S in covs], axis=0)
    assert np.array_equal(kernels.mean_quad_rows(X, np.stack(covs)), want)


def test_difficulty_backends_agree_bit_for_bit():
    """ArmModels.difficulty with the kernels equals the numpy path's (after updates)."""
    from bench_routing_scale import synthetic

    out = []
    for backend in ("numba", "numpy"):
        problem, _, _ = synthetic(400, "dollars", 0.3, seed=3)
        cfg = QuorumParams(posterior_backend=backend)
        arms = ArmModels(cfg, problem, ["llm0", "llm1", "llm2"], problem.task.human)
        X = arms.contexts(np.arange(400), 0.6, 0.3)
        rng = np.random.default_rng(0)
        for a in ("llm0", "llm1", "llm2"):
            for t in rng.integers(0, 400, 50):
                arms.post[a].update(X[t], float(rng.random()))
        out.append(arms.difficulty(X))
    assert np.array_equal(out[0], out[1])


def _pair(d: int, refresh_every: int) -> tuple[BayesianLinearPosterior, BayesianLinearPosterior]:
    pv = np.full(d, 1.0)
    pv[-2:] = 1e-3
    return tuple(
        BayesianLinearPosterior(d, 0.2, pv, 0.5, refresh_every=refresh_every, backend=b)
        for b in ("numba", "numpy")
    )


@pytest.mark.parametrize("refresh_every", [0, 7, 1000])
def test_updates_match_the_numpy_path(refresh_every):
    d = 17
    fast, ref = _pair(d, refresh_every)
    rng = np.random.default_rng(refresh_every)
    X = rng.random((400, d))
    r = (rng.random(400) < 0.7).astype(float)
    for i in range(len(X)):
        x = X[i] if i % 3 else np.asfortranarray(X[i : i + 1]).reshape(-1)  # any layout
        fast.update(x, r[i])
        ref.update(x, r[i])
        if i % 50 == 0:  # the state the router reads, along the way
            np.testing.assert_allclose(fast.mean_, ref.mean_, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(fast.cov_, ref.cov_, rtol=1e-12, atol=1e-14)
    # the exact statistics are element-wise: the same bits on any BLAS
    assert np.array_equal(fast.precision_, ref.precision_)
    assert np.array_equal(fast.eta_, ref.eta_)
    assert fast.n_updates_ == ref.n_updates_ == len(X)
    np.testing.assert_allclose(fast.mean_, ref.mean_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(fast.cov_, ref.cov_, rtol=1e-12, atol=1e-14)
    Z = rng.random((300, d))
    assert np.array_equal(fast.variance(Z[:1]), quadratic_form(Z[:1], fast.cov_))
    np.testing.assert_allclose(fast.variance(Z), ref.variance(Z), rtol=1e-12)
    assert fast.variance(Z[0]) == pytest.approx(ref.variance(Z[0]), rel=1e-12)
    assert np.array_equal(fast.pull(Z), Z @ fast.mean_)


def test_a_wrong_context_or_backend_fails_clearly():
    post = BayesianLinearPosterior(4, backend="numba")
    with pytest.raises(ValueError, match="dim 3"):
        post.update(np.ones(3), 1.0)
    with pytest.raises(ValueError, match="backend"):
        BayesianLinearPosterior(4, backend="cuda")
    with pytest.raises(ValueError, match="posterior_backend"):
        QuorumParams(posterior_backend="torch")
    # a wrong width never reaches the compiled loop (it does not check bounds)
    with pytest.raises(ValueError):
        post.variance(np.ones((5, 3)))


@pytest.mark.parametrize(("setting", "fraction"), [("dollars", 0.7), ("auditor", 0.3)])
def test_router_decisions_match_the_numpy_path(setting, fraction):
    """Whole runs: the decisions of the two backends agree (on the machines measured, all)."""
    from bench_routing_scale import synthetic

    runs = {}
    for backend in ("numba", "numpy"):
        problem, source, budget = synthetic(3000, setting, fraction, seed=3)
        res = QuorumRouter(posterior_backend=backend).route(problem, source, budget, seed=0)
        runs[backend] = res
    fast, ref = runs["numba"], runs["numpy"]
    a, b = fast.trace, ref.trace
    assert len(a) > 3000 and abs(len(a) - len(b)) <= len(b) // 1000
    n = min(len(a), len(b))
    same = (a["item_id"].to_numpy()[:n] == b["item_id"].to_numpy()[:n]) & (
        a["arm"].to_numpy()[:n] == b["arm"].to_numpy()[:n]
    )
    assert same.mean() >= 0.999
    agree = (fast.labels["output"].to_numpy() == ref.labels["output"].to_numpy()).mean()
    assert agree >= 0.999
    assert fast.cost <= budget.limit + 1e-9
