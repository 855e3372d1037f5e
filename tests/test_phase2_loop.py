"""Phase 2 compiled (quorum.routing.quorum.compiled.phase2_loop) against the Python loop, the
reference."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from quorum.routing.core.budget import Budget
from quorum.routing.core.recorder import CallRecorder
from quorum.routing.quorum.asked import AskedContexts
from quorum.routing.quorum.compiled import phase2_loop
from quorum.routing.quorum.router import QuorumRouter

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from bench_routing_scale import ArraySource, synthetic


@pytest.fixture
def compiled_calls(monkeypatch):
    """How many times the compiled phase 2 ran."""
    calls = []
    real = phase2_loop.compiled_route

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(phase2_loop, "compiled_route", spy)
    return calls


def _route(backend: str, n: int, fraction: float, source_cls=None, human_limit=None, **params):
    problem, source, budget = synthetic(n, "dollars", fraction, seed=1)
    if source_cls is not None:  # the same answers, another kind of source
        source.__class__ = source_cls
    if human_limit is not None:
        budget = Budget(budget.limit, human_limit=human_limit)
    router = QuorumRouter(loop_backend=backend, **params)
    return router.route(problem, source, budget, seed=0)


def _assert_same(fast, ref) -> None:
    """The same RoutingResult: labels, calls, money and the trace, bit for bit."""
    pd.testing.assert_frame_equal(fast.labels, ref.labels, check_exact=True)
    pd.testing.assert_frame_equal(fast.annotations, ref.annotations, check_exact=True)
    pd.testing.assert_frame_equal(fast.trace, ref.trace, check_exact=True)
    assert fast.cost == ref.cost
    assert (fast.human_labels, fast.llm_calls) == (ref.human_labels, ref.llm_calls)
    assert fast.info == ref.info


CASES = {
    "10%": (0.1, {}, {}),
    "30%": (0.3, {}, {}),
    "70%": (0.7, {}, {}),
    "small batches": (0.3, {"batch_size": 7}, {}),
    "no pacing": (0.3, {"pacing": False, "epsilon0": 0.6}, {}),
    "tiny budget": (0.006, {}, {}),
    "human limit": (0.5, {}, {"human_limit": 400}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_compiled_phase2_gives_the_python_loops_results(case, compiled_calls, monkeypatch):
    fraction, params, extra = CASES[case]
    params = {"dollars_strategy": "bandit", **params}
    bought = []  # phase-2 batches bought call by call (those the Budget cut short)
    real = CallRecorder.annotate_many

    def spy(self, requests, phase=""):
        bought.extend([phase] if phase == "route" else [])
        return real(self, requests, phase)

    monkeypatch.setattr(CallRecorder, "annotate_many", spy)
    fast = _route("numba", 3000, fraction, **extra, **params)
    assert len(compiled_calls) == 1
    # only where the Budget refuses a call of a batch (the human limit) is it bought
    assert bool(bought) == (case == "human limit")
    ref = _route("python", 3000, fraction, **extra, **params)
    assert len(compiled_calls) == 1
    _assert_same(fast, ref)
    route = fast.trace[fast.trace["phase"] == "route"]
    modes = set(route["mode"])
    assert {"exploit", "explore"} <= modes
    if case == "tiny budget":  # items no arm fits are logged, arm "-", price 0
        gone = route[route["mode"] == "unaffordable"]
        assert len(gone) > 100 and (gone["arm"] == "-").all() and (gone["price"] == 0).all()
    if case == "70%":
        assert "shadow-price" in modes
    if case == "human limit":  # the limit binds in phase 2: humans refused in batches
        assert fast.human_labels == 400
    assert fast.cost <= fast.budget_limit


def test_compiled_phase2_of_label_sets_gives_the_python_loops_results(compiled_calls):
    """A multi-label run: phase 2 compiled, its human-labelled items settled by the
    compiled rewards over bitmasks; the Python loops' result."""
    from multilabel_scale import varied

    runs = []
    for backend in ("numba", "python"):
        problem, source, budget = varied(2500, "dollars", 0.5, seed=4, min_labels=1)
        router = QuorumRouter(loop_backend=backend, dollars_strategy="bandit")
        runs.append(router.route(problem, source, budget, seed=0))
    assert len(compiled_calls) == 1
    _assert_same(*runs)
    assert (runs[0].trace["phase"] == "route").sum() > 1000


class _LiveLikeSource(ArraySource):
    """The same answers, without fixed_outputs (as a live source)."""

    fixed_outputs = None


class _CheckedSource(ArraySource):
    """Fixed answers, but arms that may die (a liveness check)."""

    def is_available(self, annotator: str) -> bool:
        return True


@pytest.mark.parametrize(
    ("source_cls", "params"),
    [
        (_LiveLikeSource, {}),
        (_CheckedSource, {}),
        (None, {"pessimism": 0.5}),
        (None, {"phase2_rule": "paper"}),
        (None, {"posterior_backend": "numpy"}),
        (None, {"loop_backend": "python"}),
    ],
)
def test_other_runs_take_the_python_loop(source_cls, params, compiled_calls):
    params = {"dollars_strategy": "bandit", **params}
    backend = params.pop("loop_backend", "numba")
    res = _route(backend, 600, 0.3, source_cls=source_cls, **params)
    assert compiled_calls == []
    assert (res.trace["phase"] == "route").sum() > 300


def test_put_many_is_put_in_turn():
    """New pairs in order; a pair twice in one call, or asked before, replaces its context."""
    rng = np.random.default_rng(0)
    arms = ["a", "b", "human"]
    batches = {
        "new pairs": [(rng.choice(40, 30, replace=False), rng.integers(0, 3, 30))],
        "a pair twice": [(np.array([3, 5, 3, 7]), np.array([1, 0, 1, 2]))],
        "asked before": [(np.arange(10), rng.integers(0, 3, 10)), (np.arange(5, 15), np.ones(10))],
    }
    for case, calls in batches.items():
        one, many = AskedContexts(40, arms, dim=3), AskedContexts(40, arms, dim=3)
        for t, j in calls:
            X = rng.random((len(t), 3))
            many.put_many(t, j, X)
            for i in range(len(t)):
                one.put(int(t[i]), arms[int(j[i])], X[i])
        assert np.array_equal(one._row, many._row), case
        assert one._n == many._n, case
        assert np.array_equal(one._buf[: one._n], many._buf[: many._n]), case


def test_the_garbage_collector_is_left_as_it_was(monkeypatch):
    """The compiled phase 2 pauses the cyclic collector and leaves it as it found it."""
    import gc

    states = []
    real = phase2_loop._compiled_route

    def spy(*args, **kwargs):
        states.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(phase2_loop, "_compiled_route", spy)
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            _route("numba", 600, 0.3, dollars_strategy="bandit")
            assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
    assert states == [False, False]
