"""The data structures behind routing at scale give what the plain ones gave (no timings)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quorum.routing.core.base import Outcome
from quorum.routing.core.recorder import CallLog
from quorum.routing.core.trace import DecisionTrace
from quorum.routing.quorum.asked import AskedContexts
from quorum.routing.quorum.refinement import PriorityQueue


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 40))
def test_priority_queue_picks_what_argmax_picks(seed, n):
    """Random closes, new priorities (ties included) and rebuilds: top() == argmax."""
    rng = np.random.default_rng(seed)
    prio = rng.integers(0, 5, size=n).astype(float)  # few values: many ties
    open_ = rng.random(n) < 0.8
    prio[~open_] = -np.inf
    queue = PriorityQueue(prio, open_)
    for _ in range(3 * n):
        if not open_.any():
            assert len(queue) == 0
            with pytest.raises(IndexError):
                queue.top()
            break
        want = int(np.argmax(np.where(open_, prio, -np.inf)))
        assert queue.top() == want
        assert len(queue) == int(open_.sum())
        move = rng.random()
        if move < 0.3:
            queue.close(want)
            prio[want] = -np.inf
        elif move < 0.8:
            t = int(rng.choice(np.flatnonzero(open_)))
            prio[t] = float(rng.integers(0, 5))
            queue.push(t)
        else:
            prio[open_] = rng.integers(0, 5, size=int(open_.sum())).astype(float)
            queue.rebuild()


def test_asked_contexts_match_a_dict():
    rng = np.random.default_rng(0)
    arms = ["a", "b", "human"]
    store = AskedContexts(5, arms, dim=3)
    ref: dict[tuple[int, str], np.ndarray] = {}
    for _ in range(200):  # more puts than the initial buffer: it grows
        t, arm = int(rng.integers(5)), str(rng.choice(arms))
        x = rng.random(3)
        store.put(t, arm, x)
        ref[(t, arm)] = x
    for t in range(5):
        for arm in [*arms, "unknown"]:
            assert store.has(t, arm) == ((t, arm) in ref)
            if (t, arm) in ref:
                assert np.array_equal(store.get(t, arm), ref[(t, arm)])
    # unrewarded = has and not rewarded, then get (what settle reads in one call)
    for t in range(5):
        for arm in arms[::2]:
            if store.has(t, arm):
                store.mark_rewarded(t, arm)
    for t in range(5):
        for arm in [*arms, "unknown"]:
            x = store.unrewarded(t, arm)
            if store.has(t, arm) and not store.rewarded(t, arm):
                assert np.array_equal(x, store.get(t, arm))
            else:
                assert x is None
    big = AskedContexts(2, ["a"], dim=2)
    for t in range(2):
        big.put(t, "a", np.array([t, t + 0.5]))
    for i in range(40):
        big.put(i % 2, "a", np.array([i, i + 0.5]))  # replacing keeps one row per pair
    assert big._n == 2
    assert not big.rewarded(0, "a")
    big.mark_rewarded(0, "a")
    assert big.rewarded(0, "a") and not big.rewarded(1, "a") and not big.rewarded(0, "x")


def _trace_rows(rng, llms, n, with_priority, with_q):
    rows = []
    for i in range(n):
        x = rng.random() < 0.7
        row = {
            "step": i + 1,
            "phase": str(rng.choice(["calibration", "route", "extra"])),
            "item_id": f"i{rng.integers(5)}",
            "arm": str(rng.choice([*llms, "gold"])),
            "mode": "explore",
            "epsilon": float(rng.random()),
            "b_t": float(rng.random()) if x else np.nan,
            "p_t": float(rng.random()) if x else np.nan,
            "price": float(rng.random()),
            "budget_left": float(rng.random()),
            "priority": float(rng.random()) if with_priority and rng.random() < 0.5 else None,
        }
        q = rng.random(len(llms)) if with_q and rng.random() < 0.6 else None
        if q is not None:
            for a, v in zip(llms, q, strict=True):
                row[f"q:{a}"] = float(v)
        rows.append((row, q))
    return rows


@pytest.mark.parametrize("with_priority", [True, False])
@pytest.mark.parametrize("with_q", [True, False])
@pytest.mark.parametrize("n", [0, 1, 30])
def test_decision_trace_frame_equals_list_of_dicts(with_priority, with_q, n):
    rng = np.random.default_rng(n)
    llms = ["small", "large"]
    rows = _trace_rows(rng, llms, n, with_priority, with_q)
    trace = DecisionTrace(llms)
    for row, q in rows:
        vals = [row[k] for k in list(row)[1:11]]  # the step is the row's number
        trace.append(*vals, q)
    want = pd.DataFrame([r for r, _ in rows])
    pd.testing.assert_frame_equal(trace.frame(), want)
    assert len(trace) == n


@pytest.mark.parametrize("with_priority", [True, False])
def test_decision_trace_extend_equals_appending_row_by_row(with_priority):
    """A baseline's rows in one ``extend`` (after two appended rows): the frame of the
    same rows appended one by one; a score column only where some row has it, NaN in the
    rows without it."""
    rng = np.random.default_rng(7)
    n = 25
    cols = {
        "phase": [str(p) for p in rng.choice(["route", "calibration"], n)],
        "item_id": [f"i{j}" for j in range(n)],
        "arm": [str(a) for a in rng.choice(["small", "gold", "-"], n)],
        "mode": [str(m) for m in rng.choice(["keep", "escalate"], n)],
        "price": rng.random(n),
    }
    prio = rng.random(n) if with_priority else None
    scores = {"uncertainty": rng.random(n), "p_human": rng.random(n)}
    one, many = DecisionTrace(["small"]), DecisionTrace(["small"])
    for tr in (one, many):
        tr.append("route", "q0", "small", "explore", 0.1, 0.2, 0.3, 0.01, 5.0, None, [0.9])
        tr.append("route", "q1", "gold", "escalate", 0.1, 0.2, 0.3, 0.1, 4.9, None, None)
    many.extend(*cols.values(), prio, **scores)
    nan = float("nan")
    for j in range(n):
        one.append(
            *(cols[k][j] for k in ("phase", "item_id", "arm", "mode")),
            nan,
            nan,
            nan,
            float(cols["price"][j]),
            nan,
            None if prio is None else float(prio[j]),
            **{k: float(v[j]) for k, v in scores.items()},
        )
    got = many.frame()
    pd.testing.assert_frame_equal(got, one.frame())
    assert list(got.columns) == [*got.columns[:11], "uncertainty", "p_human", "q:small"]
    assert got["uncertainty"].iloc[:2].isna().all() and got["step"].tolist() == list(
        range(1, n + 3)
    )
    with pytest.raises(ValueError, match="unknown score"):
        many.extend(["route"], ["x"], ["gold"], ["keep"], np.zeros(1), score=np.zeros(1))


def test_decision_trace_extend_with_contexts_equals_appending():
    """QUORUM's own rows in one ``extend`` (epsilon, b_t, p_t, money left, q given): the
    frame of the same rows appended one by one (the compiled loops log this way)."""
    rng = np.random.default_rng(3)
    n, llms = 30, ["a", "b"]
    cols = {k: rng.random(n) for k in ("epsilon", "b_t", "p_t", "price", "budget_left")}
    prio, q = rng.random(n), rng.random((n, 2))
    ids = [f"i{j}" for j in range(n)]
    one, many = DecisionTrace(llms), DecisionTrace(llms)
    for tr in (one, many):
        tr.append("route", "q0", "a", "explore", 0.1, 0.2, 0.3, 0.01, 5.0, None, None)
    many.extend(
        ["extra"] * n,
        ids,
        ["b"] * n,
        ["value"] * n,
        cols["price"],
        prio,
        q=q,
        epsilon=cols["epsilon"],
        b_t=cols["b_t"],
        p_t=cols["p_t"],
        budget_left=cols["budget_left"],
    )
    for j in range(n):
        one.append(
            "extra",
            ids[j],
            "b",
            "value",
            *(float(cols[k][j]) for k in ("epsilon", "b_t", "p_t", "price", "budget_left")),
            float(prio[j]),
            q[j],
        )
    pd.testing.assert_frame_equal(many.frame(), one.frame())
    with pytest.raises(ValueError, match="shape"):
        many.extend(["x"], ["i"], ["a"], ["m"], np.zeros(1), q=np.zeros((1, 3)))


def test_call_log_frame_and_rows_equal_list_of_dicts():
    cols = ["item_id", "annotator", "output", "status", "cost", "phase", "step", "kind"]
    rows = [
        dict(zip(cols, ["i1", "a", "X", "ok", 0.01, "route", 1, "llm"], strict=True)),
        dict(zip(cols, ["i2", "gold", None, "failed", 0.1, "extra", 2, "human"], strict=True)),
    ]
    log = CallLog()
    pd.testing.assert_frame_equal(log.frame(), pd.DataFrame([], columns=cols))
    for r in rows:
        log.append(*r.values())
    assert log.rows() == rows
    pd.testing.assert_frame_equal(log.frame(), pd.DataFrame(rows, columns=cols))


def test_recorder_usable_outputs_follow_by_item():
    """outputs() equals the old comprehension over by_item, also when a call is repeated."""
    from quorum.data.schema import AnnotatorSpec, TaskSpec
    from quorum.routing.core.budget import Budget
    from quorum.routing.core.recorder import CallRecorder

    answers = {("i1", "a"): Outcome("i1", "a", None, 0.01, "pending")}

    class Source:
        def price(self, annotator):
            return 0.01

        def annotate(self, item_id, annotator):
            return answers.get((item_id, annotator), Outcome(item_id, annotator, "Y", 0.01, "ok"))

        def annotate_many(self, requests):
            return [self.annotate(i, a) for i, a in requests]

    task = TaskSpec(
        name="t",
        type="classification",
        labels=["Y", "N"],
        annotators=[AnnotatorSpec(name=n, price=0.01) for n in ("a", "b")],
    )
    rec = CallRecorder(task, Source(), Budget(1.0))
    rec.annotate("i1", "a")
    rec.annotate("i1", "b")
    answers[("i1", "a")] = Outcome("i1", "a", "N", 0.01, "ok")
    rec.annotate("i1", "a")  # answered now: keeps its place before "b", as in by_item
    want = {a: o.output for a, o in rec.by_item["i1"].items() if o.ok}
    assert list(rec.outputs("i1").items()) == list(want.items()) == [("a", "N"), ("b", "Y")]
    assert dict(rec.usable("i1")) == want and rec.outputs("nope") == {}
    assert [r["step"] for r in rec.rows] == [1, 2, 3]


@pytest.mark.parametrize("cosine", [True, False])
def test_error_order_in_blocks_orders_as_at_once(monkeypatch, cosine):
    from quorum.routing.quorum.audit import auditing

    rng = np.random.default_rng(3)
    space = rng.normal(size=(300, 6))
    space /= np.linalg.norm(space, axis=1, keepdims=True)
    judged = np.arange(60)
    is_err = rng.random(60) < 0.3
    rest = np.arange(60, 300)
    want, how = auditing.error_order(rest, judged, is_err, space, k=5, cosine=cosine)
    monkeypatch.setattr(auditing, "FULL_MATRIX_ENTRIES", 100)
    monkeypatch.setattr(auditing, "BLOCK_ENTRIES", 700)  # blocks of a few rows
    got, how2 = auditing.error_order(rest, judged, is_err, space, k=5, cosine=cosine)
    assert got.tolist() == want.tolist() and how == how2 == "knn-error-rate"


def test_error_order_samples_calibration_items_above_max_pairs():
    from quorum.routing.quorum.audit.auditing import error_order

    rng = np.random.default_rng(4)
    space = rng.random((500, 4))
    judged, rest = np.arange(100), np.arange(100, 500)
    is_err = rng.random(100) < 0.4
    full, _ = error_order(rest, judged, is_err, space, k=5, max_pairs=400 * 100)
    assert sorted(full.tolist()) == rest.tolist()
    order, how = error_order(rest, judged, is_err, space, k=5, max_pairs=400 * 30)
    assert sorted(order.tolist()) == rest.tolist()
    assert how == "knn-error-rate (a sample of 30 calibration items)"
    again, _ = error_order(rest, judged, is_err, space, k=5, max_pairs=400 * 30)
    assert again.tolist() == order.tolist()  # the sample is fixed


@pytest.mark.parametrize("n", [1, 63, 64, 65, 500, 4097, 9000])
@pytest.mark.parametrize("d", [5, 17, 22])
def test_quadratic_form_is_einsum_bit_for_bit(n, d):
    from quorum.routing.quorum.posterior import quadratic_form

    rng = np.random.default_rng(n * 100 + d)
    X = rng.normal(size=(n, d)) * rng.random(d)
    X[:, -1] = 1.0
    A = rng.normal(size=(d, d))
    S = A @ A.T / d
    assert np.array_equal(quadratic_form(X, S), np.einsum("ij,jk,ik->i", X, S, X))


def test_posterior_update_unchanged_by_outer_spelling():
    """update() spells np.outer as a broadcast product: same statistics, bit for bit."""
    from quorum.routing.quorum.posterior import BayesianLinearPosterior

    rng = np.random.default_rng(5)
    post = BayesianLinearPosterior(6, 0.0, 1.0, 1.0, refresh_every=50)
    prec, eta = np.eye(6), np.zeros(6)
    for _ in range(120):
        x, r = rng.random(6), float(rng.random() < 0.5)
        post.update(x, r)
        prec = prec + np.outer(x, x) / 1.0
        eta = eta + (r / 1.0) * x
    assert np.array_equal(post.precision_, prec)
    assert np.array_equal(post.eta_, eta)
