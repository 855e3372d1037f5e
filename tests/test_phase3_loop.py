"""The compiled steps of the dollars setting (phase 3's loop, calibration's rewards)
against the Python loops they replace in replay: the same labels, calls, money, trace and
posteriors, run for run."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from quorum.errors import BudgetExceededError
from quorum.routing.core.base import Outcome
from quorum.routing.core.budget import Budget
from quorum.routing.core.recorder import CallRecorder
from quorum.routing.quorum.compiled.fixed_answers import NO_OUTPUT, answer_codes
from quorum.routing.quorum.router import QuorumRouter

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))


class UnparseableSource:
    """The scale benchmark's array source with some answers unusable: a paid call with
    status "unparseable", as a recorded unparseable prediction replays."""

    def __init__(self, base, share: float, seed: int) -> None:
        self.base = base
        rng = np.random.default_rng(seed)
        for a, outs in base.answers.items():
            if a != base.human:
                for t in np.flatnonzero(rng.random(len(outs)) < share):
                    outs[t] = None

    def __getattr__(self, name):
        return getattr(self.base, name)

    def annotate(self, item_id: str, annotator: str) -> Outcome:
        out = self.base.annotate(item_id, annotator)
        if out.output is None:
            return Outcome(item_id, annotator, None, out.cost, "unparseable")
        return out

    def annotate_many(self, requests):
        return [self.annotate(i, a) for i, a in requests]


class LiveLike:
    """The same answers without ``fixed_outputs`` (as a live source): the Python loops."""

    def __init__(self, base) -> None:
        self.base = base

    def __getattr__(self, name):
        if name == "fixed_outputs":
            raise AttributeError(name)
        return getattr(self.base, name)


def _route(n, fraction, backend, seed=0, wrap=None, **params):
    from bench_routing_scale import synthetic

    problem, source, budget = synthetic(n, "dollars", fraction, seed=seed)
    if wrap is not None:
        source = wrap(source)
    router = QuorumRouter(loop_backend=backend, **params)
    return router.route(problem, source, budget, seed=0), budget


def _assert_same_run(fast, ref):
    pd.testing.assert_frame_equal(fast.labels, ref.labels)
    pd.testing.assert_frame_equal(fast.annotations, ref.annotations)
    pd.testing.assert_frame_equal(fast.trace, ref.trace)
    assert fast.cost == ref.cost
    assert fast.info["posterior_means"] == ref.info["posterior_means"]


@pytest.mark.parametrize("fraction", [0.1, 0.3, 0.7])
def test_compiled_dollars_run_is_the_python_run(fraction):
    """The default router in replay (compiled phase 3 and calibration rewards) gives the
    Python loops' run: labels, calls, cost, trace and the posteriors' means."""
    fast, budget = _route(3000, fraction, "numba")
    ref, _ = _route(3000, fraction, "python")
    if fraction > 0.1:  # at 10% the panel check audits these 3,000 items instead
        assert (fast.trace["phase"] == "extra").sum() > 100  # phase 3 ran
        assert (fast.trace["phase"] == "calibration").sum() > 100
    _assert_same_run(fast, ref)
    assert fast.cost <= budget.limit + 1e-9


@pytest.mark.parametrize(
    "params",
    [
        {"escalate_disagreement": False},
        {"agreement_reward_value": "one"},
        {"agreement_reward": False, "max_annotations": 4},
        {"w_llm": 0.3, "consensus_threshold": 0.8, "priority_refresh": 7},
        {"spend_leftover": False, "epsilon0": 0.5},
    ],
)
def test_compiled_run_follows_the_parameters(params):
    fast, _ = _route(2000, 0.5, "numba", **params)
    ref, _ = _route(2000, 0.5, "python", **params)
    _assert_same_run(fast, ref)


def test_unusable_answers_are_paid_and_kept_the_same_way():
    """A quarter of the LLM answers unparseable: paid, recorded with their status, no
    reward but 0, in both loops."""

    def wrap(s):
        return UnparseableSource(s, 0.25, seed=1)

    fast, _ = _route(2000, 0.7, "numba", wrap=wrap)
    ref, _ = _route(2000, 0.7, "python", wrap=wrap)
    assert (fast.annotations["status"] == "unparseable").sum() > 100
    _assert_same_run(fast, ref)


def _route_sets(n, fraction, backend, sets, **params):
    from multilabel_scale import varied

    problem, source, budget = varied(n, "dollars", fraction, seed=3, **sets)
    router = QuorumRouter(loop_backend=backend, **params)
    return router.route(problem, source, budget, seed=0), budget


@pytest.mark.parametrize(
    ("fraction", "sets", "params"),
    [
        (0.3, {}, {"dollars_strategy": "bandit"}),
        (0.7, {}, {}),
        (0.7, {"min_labels": 1, "max_labels": 2}, {"w_human": 1.0, "w_llm": 1.0}),
        (0.3, {"n_labels": 8, "min_labels": 2, "max_labels": 3}, {"dollars_strategy": "bandit"}),
        (0.5, {}, {"dollars_strategy": "bandit", "agreement_reward": False, "w_llm": 0.7}),
    ],
)
def test_compiled_multilabel_run_is_the_python_run(fraction, sets, params, monkeypatch):
    """Label sets (bitmasks in the compiled loops, strings in the Python ones): the same
    labels, calls, cost, trace and posteriors, run for run, with ties at one half, empty
    sets and min/max bounds."""
    from quorum.routing.quorum.compiled import phase3_loop

    calls = []
    real = phase3_loop.compiled_refine
    monkeypatch.setattr(
        "quorum.routing.quorum.phase3.compiled_refine",
        lambda *a, **k: calls.append(1) or real(*a, **k),
    )
    fast, budget = _route_sets(2500, fraction, "numba", sets, **params)
    ref, _ = _route_sets(2500, fraction, "python", sets, **params)
    assert calls == [1]  # the compiled phase 3 ran, once
    assert (fast.trace["phase"] == "extra").sum() > 500
    assert fast.labels["output"].str.startswith("[").all()
    _assert_same_run(fast, ref)
    assert fast.cost <= budget.limit + 1e-9


def test_sources_without_fixed_answers_take_the_python_loop(monkeypatch):
    """A live source (no ``fixed_outputs``) and ``loop_backend="python"`` never reach the
    compiled steps; the replay source does."""
    from quorum.routing.quorum.compiled import phase3_loop

    calls = []
    real = phase3_loop.compiled_refine
    monkeypatch.setattr(
        phase3_loop, "compiled_refine", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    monkeypatch.setattr("quorum.routing.quorum.phase3.compiled_refine", phase3_loop.compiled_refine)
    live, _ = _route(1500, 0.7, "numba", wrap=LiveLike)
    assert calls == []
    _route(1500, 0.7, "python")
    assert calls == []
    replay, _ = _route(1500, 0.7, "numba")
    assert calls == [1]
    _assert_same_run(replay, live)


def test_answer_codes_equal_outputs_share_a_code():
    from bench_routing_scale import synthetic

    problem, source, _ = synthetic(300, "dollars", 0.3, seed=1)
    names = ["llm0", "llm2", source.human]
    codes = answer_codes(source, problem.item_ids.tolist(), names)
    for j, a in enumerate(names):
        got = [codes.labels[c] if c != NO_OUTPUT else None for c in codes.codes[:, j]]
        assert got == source.fixed_outputs(a, problem.item_ids.tolist())
    assert codes.prices.tolist() == [source.price(a) for a in names]
    assert answer_codes(LiveLike(source), problem.item_ids.tolist(), names) is None


def test_record_known_leaves_what_annotate_many_leaves():
    from bench_routing_scale import synthetic

    problem, source, _ = synthetic(200, "dollars", 0.3, seed=2)
    reqs = [(i, a) for i in problem.item_ids[:50] for a in ("llm1", source.human)]
    recs = []
    for known in (False, True):
        budget = Budget(limit=6.0, human_limit=60)
        rec = CallRecorder(problem.task, source, budget)
        rec.annotate_many(reqs[:10], phase="route")
        if known:
            rec.record_known([source.annotate(i, a) for i, a in reqs[10:]], phase="extra")
        else:
            rec.annotate_many(reqs[10:], phase="extra")
        recs.append((rec, budget))
    (a, ba), (b, bb) = recs
    pd.testing.assert_frame_equal(a.frame(), b.frame())
    assert (ba.spent, ba.calls, ba.human_used, a.llm_calls) == (
        bb.spent,
        bb.calls,
        bb.human_used,
        b.llm_calls,
    )
    assert {i: dict(v) for i, v in a._usable.items()} == {i: dict(v) for i, v in b._usable.items()}
    # more than the budget: nothing recorded, nothing charged
    budget = Budget(limit=0.15, human_limit=1)
    rec = CallRecorder(problem.task, source, budget)
    with pytest.raises(BudgetExceededError, match="human labels left"):
        rec.record_known([source.annotate(i, source.human) for i in problem.item_ids[:2]])
    assert len(rec.frame()) == 0 and budget.spent == 0.0 and budget.human_used == 0
