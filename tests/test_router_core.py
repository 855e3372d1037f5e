"""Posterior, policy, aggregation, budget: checked against hand-computed answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quorum.errors import BudgetExceededError
from quorum.routing.core.budget import Budget
from quorum.routing.quorum.policy import EpsilonGreedyPolicy
from quorum.routing.quorum.posterior import BayesianLinearPosterior
from quorum.tasks.classification import WeightedMajorityVote, disagreement
from quorum.tasks.summarization import CentroidSummary


def closed_form(X, r, mu0, var0, s2):
    d = X.shape[1]
    P0 = np.eye(d) / var0
    P = P0 + X.T @ X / s2
    cov = np.linalg.inv(P)
    mean = cov @ (P0 @ mu0 + X.T @ r / s2)
    return mean, cov


def test_posterior_matches_closed_form():
    rng = np.random.default_rng(0)
    d = 6
    X = rng.normal(size=(200, d))
    theta = rng.normal(size=d)
    r = X @ theta + rng.normal(scale=0.3, size=200)
    post = BayesianLinearPosterior(d, prior_mean=0.3, prior_var=0.5, noise_var=0.09)
    for x, y in zip(X, r, strict=True):
        post.update(x, y)
    mean, cov = closed_form(X, r, np.full(d, 0.3), 0.5, 0.09)
    np.testing.assert_allclose(post.mean_, mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(post.cov_, cov, rtol=1e-7, atol=1e-12)
    # the posterior has learnt theta
    assert np.abs(post.mean_ - theta).max() < 0.15


def test_single_update_by_hand():
    # d = 1, prior N(0, 1), sigma^2 = 1, x = 2, r = 1:
    # Sigma' = 1 / (1 + 4) = 0.2, mu' = 0.2 * (0 + 2) = 0.4
    post = BayesianLinearPosterior(1, 0.0, 1.0, 1.0)
    post.update(np.array([2.0]), 1.0)
    assert post.cov_[0, 0] == pytest.approx(0.2)
    assert post.mean_[0] == pytest.approx(0.4)
    assert post.pull(np.array([1.0])) == pytest.approx(0.4)
    assert post.variance(np.array([1.0])) == pytest.approx(0.2)


def test_batch_update_equals_sequential():
    rng = np.random.default_rng(1)
    X, r = rng.normal(size=(50, 4)), rng.random(50)
    a = BayesianLinearPosterior(4)
    b = BayesianLinearPosterior(4)
    for x, y in zip(X, r, strict=True):
        a.update(x, y)
    b.update_many(X, r)
    np.testing.assert_allclose(a.mean_, b.mean_, atol=1e-10)


def test_posterior_stable_over_a_million_updates():
    rng = np.random.default_rng(2)
    d = 8
    n = 1_000_000
    theta = rng.normal(size=d) * 0.2
    post = BayesianLinearPosterior(d, 0.0, 1.0, 0.25, refresh_every=1000)
    X = rng.random((n, d))
    r = (rng.random(n) < np.clip(X @ theta + 0.5, 0, 1)).astype(float)
    for x, y in zip(X, r, strict=True):  # 10^6 sequential Sherman-Morrison updates
        post.update(x, y)
    assert post.n_updates_ == n
    mean, _ = closed_form(X, r, np.zeros(d), 1.0, 0.25)
    np.testing.assert_allclose(post.mean_, mean, atol=1e-8)
    assert np.all(np.linalg.eigvalsh(post.cov_) > 0)
    assert np.allclose(post.cov_, post.cov_.T)


def test_many_rank_one_updates_do_not_drift():
    """10^5 pure Sherman-Morrison steps between refreshes stay close to the exact answer."""
    rng = np.random.default_rng(3)
    d = 5
    X = rng.random((100_000, d))
    r = rng.random(100_000)
    post = BayesianLinearPosterior(d, refresh_every=0)  # never refresh: worst case
    for x, y in zip(X, r, strict=True):
        post.update(x, y)
    mean, _ = closed_form(X, r, np.zeros(d), 1.0, 0.25)
    np.testing.assert_allclose(post.mean_, mean, atol=1e-6)


def test_policy_epsilon_decay_and_escalation():
    pol = EpsilonGreedyPolicy(epsilon0=0.3, gamma=0.005, tau_h=0.5)
    assert pol.epsilon(0) == pytest.approx(0.3)
    assert pol.epsilon(200) == pytest.approx(0.15)
    greedy = EpsilonGreedyPolicy(epsilon0=0.0, tau_h=0.5)
    rng = np.random.default_rng(0)
    assert greedy.select(np.array([0.2, 0.7]), 0, rng, human_allowed=True) == (1, "exploit")
    assert greedy.select(np.array([0.2, 0.4]), 0, rng, human_allowed=True) == (None, "escalate")
    # no human affordable: keep the best LLM even below tau_H
    assert greedy.select(np.array([0.2, 0.4]), 0, rng, human_allowed=False) == (1, "exploit")
    # scores can differ from q (cost penalty), escalation still looks at q
    k, mode = greedy.select(
        np.array([0.6, 0.9]), 0, rng, human_allowed=True, scores=np.array([0.5, 0.4])
    )
    assert (k, mode) == (0, "exploit")
    with pytest.raises(ValueError):
        EpsilonGreedyPolicy(epsilon0=1.5)


def test_policy_explores_uniformly():
    pol = EpsilonGreedyPolicy(epsilon0=1.0, gamma=0.0)
    rng = np.random.default_rng(0)
    picks = [
        pol.select(np.array([0.9, 0.1, 0.1]), 0, rng, human_allowed=True)[0] for _ in range(3000)
    ]
    counts = np.bincount(picks, minlength=3)
    assert counts.min() > 900


def test_weighted_majority_vote_by_hand():
    wmv = WeightedMajorityVote(w_human=10, w_llm=1, threshold=0.66)
    is_h = lambda a: a == "H"  # noqa: E731
    # two LLMs say A, one says B: A wins with 2/3 = 0.667 >= 0.66 -> consensus
    y, agr = wmv.vote({"l1": "A", "l2": "A", "l3": "B"}, is_h)
    assert (y, round(agr, 3)) == ("A", 0.667)
    assert wmv.consensus(agr, 3)
    # a human outweighs three LLMs: 10 vs 3
    y, agr = wmv.vote({"l1": "A", "l2": "A", "l3": "A", "H": "B"}, is_h)
    assert y == "B" and agr == pytest.approx(10 / 13)
    # a tie between two LLMs goes to the first in the priority order; no consensus
    y, agr = wmv.vote({"cheap": "A", "dear": "B"}, is_h, priority=["H", "dear", "cheap"])
    assert y == "B" and agr == 0.5 and not wmv.consensus(agr, 2)
    assert wmv.vote({}, is_h) == (None, 0.0)
    assert not wmv.consensus(1.0, 1)  # one answer is never a consensus


def test_aggregate_long_frame():
    df = pd.DataFrame(
        {
            "item_id": ["1", "1", "1", "2", "2"],
            "annotator": ["a", "b", "H", "a", "b"],
            "output": ["x", "x", "y", "z", "z"],
        }
    )
    out = WeightedMajorityVote().aggregate(df, humans={"H"}).set_index("item_id")
    assert out.loc["1", "output"] == "y"
    assert out.loc["2", "output"] == "z" and out.loc["2", "agreement"] == 1.0


def test_disagreement():
    assert disagreement(["A", "A", "B"]) == pytest.approx(1 / 3)
    assert disagreement(["A"]) == 0.0
    assert disagreement(["A", "B"]) == 0.5


def test_centroid_summary_by_hand():
    cs = CentroidSummary(w_human=10, w_llm=1, threshold=0.5)
    e = np.array([[1.0, 0.0], [0.0, 1.0], [np.sqrt(0.5), np.sqrt(0.5)]])
    # mean pairwise cosine = (0 + .7071 + .7071) / 3 = .4714 -> r = 2 * .4714 - 1 = -.0572
    assert cs.agreement(e) == pytest.approx(2 * (2 * np.sqrt(0.5) / 3) - 1)
    # equal weights: the diagonal one is closest to the centroid
    assert cs.choose(e, np.ones(3)) == 2
    # a heavy human vote on the first pulls the centroid to it
    assert cs.choose(e, np.array([10.0, 1.0, 1.0])) == 0
    assert cs.agreement(e[:1]) == 1.0


def test_budget_reserve_settle_and_limit():
    b = Budget(limit=1.0, human_limit=2)
    r = b.reserve(0.4)
    assert b.remaining == pytest.approx(0.6)
    r.settle(0.3)
    assert b.spent == pytest.approx(0.3) and b.remaining == pytest.approx(0.7)
    b.charge(0.2, human=True)
    b.charge(0.2, human=True)
    assert b.human_used == 2 and b.humans_left == 0
    with pytest.raises(BudgetExceededError):
        b.reserve(0.1, human=True)
    with pytest.raises(BudgetExceededError):
        b.reserve(0.31)
    res = b.reserve(0.3)
    res.release()
    assert b.remaining == pytest.approx(0.3)


@settings(max_examples=200, deadline=None)
@given(
    limit=st.floats(0, 10),
    costs=st.lists(st.floats(0, 1), max_size=60),
)
def test_budget_never_exceeded_by_reservations(limit, costs):
    b = Budget(limit=limit)
    open_res = []
    for i, c in enumerate(costs):
        if b.can_afford(c):
            open_res.append((b.reserve(c), c))
        if i % 3 == 2 and open_res:
            res, c0 = open_res.pop(0)
            res.settle(c0 * 0.5)
        assert b.spent + b.reserved <= limit + 1e-6
    for res, c0 in open_res:
        res.settle(c0)
    assert b.spent <= limit + 1e-6


def test_weighted_agreement_is_the_votes_agreement_without_the_tie_break():
    """Answers.consensus reads weighted_agreement (no trust order asked); it must be the
    number vote gives, ties included."""
    rng = np.random.default_rng(5)
    agg = WeightedMajorityVote(w_human=10.0, w_llm=1.0, threshold=0.66)
    names = ["h", "a", "b", "c", "d"]

    for _ in range(300):
        n = int(rng.integers(0, 6))
        outs = {a: str(rng.choice(["x", "y", "z"])) for a in rng.permutation(names)[:n]}
        _, agr = agg.vote(outs, lambda a: a == "h", list(outs))
        assert agg.weighted_agreement(outs, lambda a: a == "h") == agr


def test_to_units_memo_gives_the_rounded_units():
    """budget.to_units is memoised: repeated and numpy amounts, and after the memo is
    cleared at its size limit, it still gives round(x * 1e9)."""
    from quorum.routing.core import budget as budget_mod

    rng = np.random.default_rng(0)
    values = np.concatenate([rng.random(70_000) * 3, [0.0, -0.0, 1e-9, 0.1, 0.1 + 0.2]])
    for v in [*values.tolist(), *values[:50].tolist(), *values[:50]]:
        assert budget_mod.to_units(v) == round(float(v) * 1_000_000_000)
    assert len(budget_mod._UNITS) <= 65_536
