"""No baseline ever exceeds its money budget or its human cap (random prices, budgets, data)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from baselines_fakes import auditor_budget, make_dataset, make_problem, source_of
from quorum.methods import baseline_names, make_router
from quorum.routing.core.budget import Budget

METHODS = baseline_names()
#: Budget keeps integer micro-units and rounds the float limit to the nearest one
TOL = 1e-6


@st.composite
def cases(draw):
    n = draw(st.integers(3, 40))
    n_llm = draw(st.integers(1, 3))
    k = draw(st.integers(2, 4))
    labels = [str(j) for j in range(k)]
    seed = draw(st.integers(0, 10_000))
    rng = np.random.default_rng(seed)
    prices = {
        f"m{j}": draw(st.sampled_from([0.0, 0.001, 0.01, 0.03, 0.05, 0.2])) for j in range(n_llm)
    }
    gold = [labels[i] for i in rng.integers(0, k, n)]
    answers = {
        a: [None if rng.random() < 0.05 else labels[i] for i in rng.integers(0, k, n)]
        for a in prices
    }
    with_conf = draw(st.booleans())
    conf = {a: list(rng.random(n)) for a in prices} if with_conf else None
    ds = make_dataset(
        gold,
        answers,
        prices,
        labels=labels,
        confidence=conf,
        human_price=draw(st.sampled_from([0.0, 0.05, 0.1, 1.0])),
    )
    return {
        "ds": ds,
        "method": draw(st.sampled_from(METHODS)),
        "setting": draw(st.sampled_from(["auditor", "dollars"])),
        "fraction": draw(st.floats(0.0, 1.0)),
        "slack": draw(st.floats(0.0, 1.5)),
        "seed": seed,
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_no_baseline_exceeds_budget_or_human_cap(case):
    ds = case["ds"]
    src = source_of(ds)
    T = ds.n_items
    router = make_router(case["method"])
    if case["setting"] == "auditor":
        b = round(case["fraction"] * T)
        p = make_problem(ds, "auditor", human_budget=b, seed=case["seed"])
        full = auditor_budget(p, router, src, b)
        # also a money limit below what the method asked for (``slack`` < 1)
        budget = Budget(full.limit * min(1.0, case["slack"]), human_limit=b)
        cap = b
    else:
        p = make_problem(ds, "dollars", seed=case["seed"])
        budget = Budget(case["fraction"] * T * p.human.price * case["slack"])
        cap = T
    res = router.route(p, src, budget, seed=case["seed"])
    assert budget.spent <= budget.limit + TOL
    assert res.cost <= res.budget_limit + TOL
    assert res.human_labels <= cap
    assert (res.annotations["kind"] == "human").sum() <= cap
    assert 0.0 <= res.confidence_cost <= res.cost + 1e-9
    assert res.cost_without_confidence >= -1e-9
    assert len(res.labels) == T
    assert "confidence_source" in res.info and "substitute" in res.info
    # dollars: every item is covered when the budget pays the cheapest LLM everywhere
    c_min = min(a.price for a in p.llms)
    if case["setting"] == "dollars" and budget.limit >= T * c_min + 1e-9:
        n_llm_answers = res.annotations.loc[res.annotations["kind"] != "confidence"]
        assert n_llm_answers["item_id"].nunique() == T


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(2, 15),
    n_llm=st.integers(1, 3),
    method=st.sampled_from(
        ["random", "coannotating", "cdi", "hypac", "coannotating-ensemble", "hypac-ensemble"]
    ),
    setting=st.sampled_from(["auditor", "dollars"]),
    fraction=st.floats(0.0, 1.0),
    seed=st.integers(0, 1000),
)
def test_summary_baselines_stay_within_budget(n, n_llm, method, setting, fraction, seed):
    rng = np.random.default_rng(seed)
    words = ["cat", "dog", "sun", "rain", "city", "law", "vote", "film"]
    summary = lambda: " ".join(rng.choice(words, size=4))  # noqa: E731
    prices = {f"s{j}": float(rng.choice([0.001, 0.01, 0.05])) for j in range(n_llm)}
    ds = make_dataset(
        [summary() for _ in range(n)],
        {a: [summary() for _ in range(n)] for a in prices},
        prices,
        summarization=True,
    )
    src = source_of(ds, summaries=bool(seed % 2))  # odd seeds: no embedder (bag-of-words)
    router = make_router(method)
    if setting == "auditor":
        b = round(fraction * n)
        p = make_problem(ds, "auditor", human_budget=b, seed=seed)
        budget = auditor_budget(p, router, src, b)
    else:
        b = n
        p = make_problem(ds, "dollars", seed=seed)
        budget = Budget(fraction * n * p.human.price)
    res = router.route(p, src, budget, seed=seed)
    assert budget.spent <= budget.limit + TOL
    assert res.human_labels <= b
