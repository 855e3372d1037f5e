"""The quorum-paper preset: the rules of the authors' code on hand-made cases.

Each expected value below is worked out by hand from what amazon-science/QUORUM does
(routers/QUORUM_router.py, main.py); the synthetic data only exercise the mechanics.
The last tests replay real recorded answers (llms-for-css/flute).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from baselines_fakes import auditor_budget, make_dataset, make_problem, source_of
from quorum.features.linguistic import LINGUISTIC_FEATURES
from quorum.methods import make_router
from quorum.routing.core.budget import Budget
from quorum.routing.paper.router import AuthorsAccountingPaperQuorumRouter, PaperQuorumRouter
from quorum.routing.paper.rules import (
    auditor_calibration_size,
    paper_base_features,
    paper_calibration_size,
    paper_select,
    paper_uncertainty,
    per_step_arms,
    refinement_order,
)
from quorum.routing.paper.run import PaperRun

PRICES = {"cheap": 0.01, "mid": 0.03, "dear": 0.05}


def toy(n: int = 100, seed: int = 0, acc=(0.6, 0.7, 0.9)):
    """n items, labels A-D, three LLMs right with probabilities ``acc``."""
    rng = np.random.default_rng(seed)
    gold = list(rng.choice(list("ABCD"), size=n))
    answers = {}
    for (name, _), a in zip(PRICES.items(), acc, strict=True):
        answers[name] = [
            g if rng.random() < a else rng.choice([y for y in "ABCD" if y != g]) for g in gold
        ]
    return make_dataset(gold, answers, PRICES, labels=list("ABCD"))


def dollars(ds, frac: float, router, seed: int = 0, **kw):
    prob = make_problem(ds, "dollars", **kw)  # the same features for every seed
    budget = Budget(frac * ds.n_items * 0.1)
    return router.route(prob, source_of(ds), budget, seed=seed), budget, prob


# ------------------------------------------------------------------ features
def test_pipeline_features_become_seven_columns_from_the_raw_values():
    ds = toy(60)
    rng = np.random.default_rng(5)
    raw = np.hstack([rng.normal(size=(60, 6)) + 3, rng.uniform(0.1, 0.9, (60, 5))])
    raw[0, 2] = 400.0  # an outlier the percentile scaling of phi would clip
    names = [*LINGUISTIC_FEATURES, *(f"knn_dist_{j}" for j in range(1, 6))]
    phi = np.clip((raw - raw.min(0)) / np.ptp(raw, axis=0), 0, 1)
    with_raw = make_problem(ds, "dollars", phi=phi)
    with_raw.feature_names, with_raw.raw_features = names, raw
    res = PaperQuorumRouter().route(with_raw, source_of(ds), Budget(1.0), seed=0)
    assert res.info["feature_source"] == "raw linguistic + kNN distances"
    assert len(res.info["posterior_means"]["cheap"]) == 7 + 2 + 3  # no bias term
    no_raw = make_problem(ds, "dollars", phi=phi)
    no_raw.feature_names = names
    res = PaperQuorumRouter().route(no_raw, source_of(ds), Budget(1.0), seed=0)
    assert res.info["feature_source"].startswith("phi")


def test_features_scale_linguistic_globally_then_zscore_and_density_is_one_column():
    rng = np.random.default_rng(3)
    ling = rng.normal(size=(40, 6)) * np.array([1, 0.1, 10, 0.2, 0.3, 0.05]) + 5
    dist = rng.uniform(0.1, 0.9, size=(40, 5))
    X = paper_base_features(np.hstack([ling, dist]))
    assert X.shape == (40, 7)  # 6 linguistic + 1 density, not 5 distances

    def z(a):
        return (a - a.mean(0)) / a.std(0)

    # one min and max for the whole block is an affine map: the z-score undoes it, up to
    # the 1e-8 added to each (now small) std
    np.testing.assert_allclose(X[:, :6], z(ling), rtol=1e-4)
    density = 1.0 / (dist.mean(axis=1) + 1e-6)
    d_emb = 1.0 - (density - density.min()) / (density.max() - density.min())
    np.testing.assert_allclose(X[:, 6], z(d_emb), rtol=1e-4)
    # isolated items (large distances) score high on the density feature
    assert np.corrcoef(X[:, 6], dist.mean(axis=1))[0, 1] > 0.9


def test_features_constant_column_and_nan_are_zero():
    raw = np.array([[1.0, np.nan, 0.2], [2.0, np.nan, 0.4], [3.0, np.nan, 0.6]])
    X = paper_base_features(raw, n_linguistic=2)
    assert np.isfinite(X).all()
    np.testing.assert_allclose(X[:, 1], 0.0)


def test_uncertainty_is_mahalanobis_with_a_ridge():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    X[:, 2] = X[:, 0] * 2.0  # singular covariance: the 1e-6 ridge keeps it invertible
    u = paper_uncertainty(X)
    assert np.isfinite(u).all()
    Y = rng.normal(size=(50, 2))
    cov = np.cov(Y, rowvar=False) + 1e-6 * np.eye(2)
    d = Y - Y.mean(0)
    expected = np.sqrt(np.einsum("ij,jk,ik->i", d, np.linalg.inv(cov), d))
    np.testing.assert_allclose(paper_uncertainty(Y), expected)


# --------------------------------------------------------------- calibration
def test_calibration_size_per_setting():
    # dollars, the code: max(1, int(0.8 * int(B / c_H))) human labels
    assert paper_calibration_size(45.0, 0.1) == 360  # MMLU-Redux, 4,500 items, 10%
    assert paper_calibration_size(135.0, 0.1) == 1080  # 30%
    assert paper_calibration_size(0.15, 0.1) == 1  # int(0.8 * 1) = 0, at least 1
    # paid: the same 80% of the money, each item costing c_H + every LLM
    assert paper_calibration_size(45.0, 0.1, per_item_cost=0.19) == 189
    assert paper_calibration_size(0.15, 0.1, per_item_cost=0.19) == 0  # unaffordable
    assert paper_calibration_size(1e6, 0.1, n_items=500) == 500
    # auditor: max(5, int(0.15 B)) random items, at most B
    assert auditor_calibration_size(300) == 45  # the paper's MMLU-Redux (3,000) at 10%
    assert auditor_calibration_size(20) == 5
    assert auditor_calibration_size(3) == 3


@pytest.mark.parametrize("accounting", [False, True])
def test_dollars_calibrates_the_most_uncertain_items(accounting):
    ds = toy(100)
    router = PaperQuorumRouter(authors_accounting=accounting)
    res, _, prob = dollars(ds, 0.1, router)
    # B = 1.0: the code calibrates int(0.8 * 10) = 8 items; paid, int(0.8 / 0.19) = 4
    n_cal = 8 if accounting else 4
    assert res.info["n_calibration"] == n_cal
    base = paper_base_features(prob.phi, prob.phi.shape[1])
    top = set(prob.item_ids[np.argsort(-paper_uncertainty(base), kind="stable")[:n_cal]])
    ann = res.annotations
    cal = ann[ann["phase"] == "calibration"]
    assert set(cal["item_id"]) == top
    llm_phase = "unpaid-calibration" if accounting else "calibration"
    llm_cal = ann[(ann["phase"] == llm_phase) & (ann["kind"] == "llm")]
    assert len(llm_cal) == 3 * n_cal  # every LLM answers every calibration item
    # the calibration items' output is the human label
    lab = res.labels.set_index("item_id")
    gold = ds.items.set_index("item_id")["gold"]
    assert all(lab.loc[i, "output"] == gold[i] and lab.loc[i, "human"] for i in top)


def test_posteriors_learn_from_calibration_only():
    ds = toy(120)
    a, _, _ = dollars(ds, 0.3, PaperQuorumRouter(epsilon0=1.0), seed=0)
    b, _, _ = dollars(ds, 0.3, PaperQuorumRouter(epsilon0=1.0), seed=1)
    # seeds change every phase-2 exploration draw but not the (deterministic) calibration
    assert (a.trace["mode"] == "explore").any()
    for name in PRICES:
        np.testing.assert_allclose(a.info["posterior_means"][name], b.info["posterior_means"][name])
    # context = 7 base features (or m columns here) + b_t + p_t + K mask bits, no bias
    m = make_problem(ds, "dollars").phi.shape[1]
    assert len(a.info["posterior_means"]["cheap"]) == m + 2 + 3


# ------------------------------------------------------------ phase 2 pacing
def test_per_step_rule():
    prices = np.array([0.01, 0.03, 0.05, 0.1])
    assert per_step_arms(3.0, 100, prices, 0) == [0, 1]  # 0.03 per item
    assert per_step_arms(10.0, 100, prices, 0) == [0, 1, 2, 3]
    assert per_step_arms(0.5, 100, prices, 0) == [0]  # 0.005 per item: cheapest only
    assert per_step_arms(0.01, 100, prices, 0) == [0]
    assert per_step_arms(0.0099, 100, prices, 0) is None  # stop routing


@pytest.mark.parametrize("accounting", [False, True])
def test_phase2_spends_the_rest_in_item_order_and_stops(accounting):
    ds = toy(100)
    res, budget, _ = dollars(ds, 0.1, PaperQuorumRouter(authors_accounting=accounting))
    # B = 1.0. Paid: 4 x 0.19 = 0.76 calibration, 0.24 left = 24 cheapest answers.
    # The code: 8 x 0.10 = 0.80, 0.20 left = 20 cheapest answers.
    routed = 20 if accounting else 24
    assert res.info["routed"] == routed
    assert res.info["not_reached"] == 100 - res.info["n_calibration"] - routed
    route = res.annotations[res.annotations["phase"] == "route"]
    assert set(route["annotator"]) == {"cheap"}
    cal = set(res.annotations.loc[res.annotations["phase"] == "calibration", "item_id"])
    first = [i for i in ds.items["item_id"] if i not in cal][:routed]
    assert route["item_id"].tolist() == first  # item order, not a random one
    assert res.info.get("refinement_picks", 0) == 0  # nothing left for refinement
    assert budget.remaining < 0.01 + 1e-9
    assert res.cost <= budget.limit + 1e-9


# ------------------------------------------------------------------ choosing
def test_selection_escalates_before_exploring_and_ties_go_first():
    rng = np.random.default_rng(0)
    kw = dict(tau_h=0.5, rng=rng)
    assert paper_select(np.array([0.49, 0.2]), human_ok=True, epsilon=1.0, **kw) == (
        None,
        "escalate",
    )
    picks = {
        paper_select(np.array([0.4, 0.2]), human_ok=False, epsilon=1.0, **kw) for _ in range(50)
    }
    assert picks == {(0, "explore"), (1, "explore")}
    assert paper_select(np.array([0.7, 0.9, 0.9]), human_ok=True, epsilon=0.0, **kw) == (
        1,
        "exploit",
    )
    assert paper_select(np.array([]), human_ok=True, epsilon=0.0, **kw) == (None, "escalate")
    assert paper_select(np.array([]), human_ok=False, epsilon=0.0, **kw) == (None, "none")


def test_equal_clipped_qualities_pick_the_dearest_llm():
    ds = toy(30)
    prob = make_problem(ds, "dollars")
    run = PaperRun(PaperQuorumRouter(epsilon0=0.0), prob, source_of(ds), Budget(10.0), 0)
    b_index = run.base.shape[1]  # x_t = [base, b_t, p_t, m_t]; b_t = 1 here
    for post in run.post:  # every q = mu^T x clips to 1
        post.mean_ = np.zeros(run.dim)
        post.mean_[b_index] = 10.0
    arm, mode, _ = run._choose(5, [0, 1, 2], human_ok=True)
    assert (arm, mode) == ("dear", "exploit")  # the code's arms: claude, nova_pro, qwen
    for post in run.post:  # every q is 0: escalate
        post.mean_ = np.zeros(run.dim)
    assert run._choose(5, [0, 1, 2], human_ok=True)[:2] == (run.human, "escalate")


# ---------------------------------------------------------------- refinement
def test_refinement_priority_order_and_weights():
    d0 = np.ones(6)
    unc = np.array([0.2, 0.1, 0.0, 0.3, 0.0, 0.0])
    dis = np.array([0.0, 0.5, 0.0, 0.0, 0.0, 0.0])
    has_h = np.array([True, False, False, True, False, False])
    n_valid = np.array([1, 2, 1, 1, 0, 3])
    consensus = np.array([True, False, True, True, False, False])
    order = refinement_order(d0, unc, dis, has_h, n_valid, consensus)
    # scores: 1.2, 1 + 0.1 + 2 * 0.5 + 0.5 = 2.6, 1.5, 1.3, +inf (no annotation); item 5 is full
    assert order.tolist() == [4, 1, 2, 3, 0]
    # consensus with two annotations settles an item; one answer never does
    settled = refinement_order(
        d0, unc, dis, has_h, np.array([2, 2, 1, 1, 1, 1]), np.ones(6, dtype=bool)
    )
    assert settled.tolist() == [2, 4, 5, 3]


def test_refinement_weights_are_the_codes_not_the_papers():
    # X: two LLMs disagree; Y: one LLM answer, more posterior uncertainty; Z: human only
    d0, unc = np.zeros(3), np.array([0.0, 0.6, 0.0])
    dis, has_h = np.array([0.5, 0.0, 0.0]), np.array([False, False, True])
    n_valid, consensus = np.array([2, 1, 1]), np.array([False, True, True])
    code = refinement_order(d0, unc, dis, has_h, n_valid, consensus)
    assert code.tolist() == [0, 1, 2]  # 2 * 0.5 + 0.5 = 1.5 > 0.6 + 0.5 = 1.1 > 0
    paper = refinement_order(
        d0, unc, dis, has_h, n_valid, consensus, disagreement_weight=1.0, no_human_bonus=1.0
    )
    assert paper.tolist() == [1, 0, 2]  # P_t = D + Delta + 1(no human): 1.6 > 1.5


def test_consensus_is_weighted_agreement_at_060():
    ds = toy(10)
    prob = make_problem(ds, "dollars")
    run = PaperRun(PaperQuorumRouter(), prob, source_of(ds), Budget(10.0), 0)
    run.votes.add(0, "cheap", "A")
    assert not (run.votes.consensus[0] and run.votes.n_valid[0] >= 2)  # one answer: still open
    run.votes.add(0, "mid", "B")
    assert not run.votes.consensus[0] and run.votes.dis[0] == 0.5  # 1 of 2
    run.votes.add(0, "dear", "A")
    assert run.votes.consensus[0] and math.isclose(run.votes.dis[0], 1 / 3)  # 2 of 3 >= 0.6
    run.votes.add(1, "cheap", "A")
    run.votes.add(1, run.human, "B")
    assert run.votes.consensus[1]  # 10 / 11
    assert run.votes.final(1)[0] == "B"
    run.votes.add(2, "cheap", "C")
    run.votes.add(2, "mid", "D")
    assert run.votes.final(2)[0] == "C"  # a tie goes to the label given first


def test_summary_consensus_reads_the_output_embeddings():
    gold = ["the cat sat", "a dog ran", "rain today", "sun tomorrow"]
    answers = {"cheap": ["the cat sat", "a dog ran", "rain today", "sun tomorrow"]}
    answers["mid"] = ["the cat sat down", "zzz qqq", "rain today", "sun tomorrow"]
    ds = make_dataset(gold, answers, {"cheap": 0.01, "mid": 0.03}, summarization=True)
    src = source_of(ds, summaries=True)
    prob = make_problem(ds, "dollars")
    run = PaperRun(PaperQuorumRouter(), prob, src, Budget(10.0), 0)
    e = src.embed_outputs(["the cat sat", "the cat sat down", "a dog ran", "zzz qqq"])
    cos_close, cos_far = float(e[0] @ e[1]), float(e[2] @ e[3])
    assert cos_close >= 0.6 > cos_far
    run.votes.add(0, "cheap", "the cat sat")
    run.votes.add(0, "mid", "the cat sat down")
    run.votes.add(1, "cheap", "a dog ran")
    run.votes.add(1, "mid", "zzz qqq")
    # the code's rule: mean pairwise cosine >= 0.6 (not the paper's 2 cos - 1)
    assert run.votes.consensus[0] and not run.votes.consensus[1]
    assert run.votes.dis[0] == 0.0  # Delta_t is computed for labels only
    # output: the summary nearest the unweighted centroid
    run.votes.add(0, run.human, "the cat sat")
    assert run.votes.final(0)[0] == "the cat sat"


@pytest.mark.parametrize("accounting", [False, True])
def test_refinement_runs_when_money_is_left_and_never_rebuys_a_human(accounting):
    ds = toy(150, seed=4, acc=(0.5, 0.6, 0.7))
    res, budget, _ = dollars(ds, 0.8, PaperQuorumRouter(authors_accounting=accounting))
    assert res.info["refinement_picks"] > 0
    ann = res.annotations
    paid = ann[~ann["phase"].str.startswith("unpaid")]
    assert not paid.duplicated(["item_id", "annotator"]).any()
    assert res.labels["n_annotations"].max() <= 3
    assert res.cost <= budget.limit + 1e-9
    extra = res.trace[res.trace["phase"] == "extra"]
    assert extra["priority"].notna().all() and len(extra) == res.info["refinement_picks"]
    # paid: a calibration item's LLM answers were bought once; refinement reuses them
    held = int((extra["mode"] == "held").sum())
    assert held + int((paid["phase"] == "extra").sum()) == len(extra)
    assert (held > 0) != accounting


# ------------------------------------------------------------------- auditor
@pytest.mark.parametrize("accounting", [False, True])
def test_auditor_sends_humans_to_the_error_centroid(accounting):
    n = 200
    rng = np.random.default_rng(1)
    phi = rng.random((n, 3))
    gold = list(rng.choice(list("AB"), size=n))
    # the cheapest LLM errs on the items with a large first feature
    cheap = [("B" if g == "A" else "A") if phi[i, 0] > 0.7 else g for i, g in enumerate(gold)]
    ds = make_dataset(gold, {"cheap": cheap, "dear": gold}, {"cheap": 0.01, "dear": 0.05})
    B = 40
    prob = make_problem(ds, "auditor", human_budget=B, phi=phi)
    router = PaperQuorumRouter(authors_accounting=accounting)
    src = source_of(ds)
    budget = auditor_budget(prob, router, src, B)
    res = router.route(prob, src, budget, seed=2)
    ann = res.annotations
    cal = ann.loc[(ann["phase"] == "calibration") & (ann["kind"] == "human"), "item_id"]
    assert len(cal) == auditor_calibration_size(B) == 6
    # by hand: one min-max over the block, z-score per column, Euclidean centroid
    scaled = (phi - phi.min()) / (phi.max() - phi.min())
    base = (scaled - scaled.mean(0)) / (scaled.std(0) + 1e-8)
    idx = {i: j for j, i in enumerate(prob.item_ids)}
    cal_j = [idx[i] for i in cal]
    errs = [j for j in cal_j if cheap[j] != gold[j]]
    assert res.info["calibration_errors"] == len(errs)
    rest = [j for j in range(n) if j not in set(cal_j)]
    if len(errs) >= 2:
        dist = np.linalg.norm(base[rest] - base[errs].mean(0), axis=1)
        expected = {prob.item_ids[rest[k]] for k in np.argsort(dist, kind="stable")[: B - 6]}
    else:
        expected = {prob.item_ids[j] for j in rest[: B - 6]}
    humans = set(ann.loc[(ann["phase"] == "route") & (ann["kind"] == "human"), "item_id"])
    assert humans == expected
    assert res.human_labels == B
    # cost: B humans and T - B cheapest answers, plus the calibration answers when paid
    code_cost = B * 0.1 + (n - B) * 0.01
    assert math.isclose(res.cost, code_cost + (0 if accounting else 6 * 0.01), abs_tol=1e-9)
    assert math.isclose(res.info["unpaid_cost"], 6 * 0.01 if accounting else 0.0, abs_tol=1e-9)
    assert res.cost <= budget.limit + 1e-9


# ---------------------------------------------------------------- accounting
def test_paid_preset_leaves_unreached_items_unlabelled():
    ds = toy(100)
    res, budget, _ = dollars(ds, 0.1, make_router("quorum-paper"))
    assert res.method == "quorum-paper" and res.info["accounting"] == "paid"
    empty = res.labels["output"].isna()
    assert empty.sum() == res.info["not_reached"] == res.info["unlabelled_items"] == 72
    assert res.info["unpaid_cost"] == 0.0
    assert math.isclose(res.annotations["cost"].sum(), res.cost, abs_tol=1e-9)
    assert res.cost <= budget.limit + 1e-9


def test_authors_accounting_gives_free_labels_and_says_so():
    ds = toy(100)
    router = make_router("quorum-paper-authors-accounting")
    assert isinstance(router, AuthorsAccountingPaperQuorumRouter) and router.authors_accounting
    res, budget, _ = dollars(ds, 0.1, router)
    assert res.method == "quorum-paper-authors-accounting"
    assert res.info["accounting"] == "authors"
    assert res.labels["output"].notna().all()
    backup = res.annotations[res.annotations["phase"] == "unpaid-backup"]
    assert len(backup) == res.info["unpaid_backup_labels"] == 72
    assert set(backup["annotator"]) == {"cheap"}
    # 8 calibration items x (0.01 + 0.03 + 0.05) + 72 x 0.01, none of it in cost
    assert math.isclose(res.info["unpaid_cost"], 8 * 0.09 + 72 * 0.01, abs_tol=1e-9)
    assert math.isclose(res.annotations["cost"].sum(), res.cost + res.info["unpaid_cost"])
    assert res.cost <= budget.limit + 1e-9
    assert make_router("quorum-paper", authors_accounting=True).method_name == res.method


# ----------------------------------------------------------------- real data
@pytest.mark.realdata
@pytest.mark.parametrize("setting", ["dollars", "auditor"])
def test_flute_at_30_percent_stays_within_budget(shared_data_dir, setting):
    from quorum.simulate import prepare, simulate_once

    prep = prepare("llms-for-css/flute")
    assert prep.raw_features is not None
    rows = {}
    for method in ("quorum-paper", "quorum-paper-authors-accounting"):
        row, res = simulate_once(prep, method, setting, 0.3, seed=0)
        assert row["cost"] <= row["budget_limit"] + 1e-9
        assert res.info["feature_source"] == "raw linguistic + kNN distances"
        assert row["accounting"] == res.info["accounting"]
        rows[method] = row
    assert rows["quorum-paper"]["unpaid_cost"] == 0.0
    assert rows["quorum-paper-authors-accounting"]["unpaid_cost"] > 0.0
    if setting == "auditor":
        assert rows["quorum-paper"]["human_labels"] == rows["quorum-paper"]["human_budget"]
    for row in rows.values():
        assert 0.0 < row["accuracy"] <= 1.0


@pytest.mark.realdata
def test_cli_flags_the_authors_accounting(shared_data_dir):
    from typer.testing import CliRunner

    from quorum.cli.main import app

    args = ["simulate", "-d", "llms-for-css/flute", "--budget", "0.3", "--method"]
    res = CliRunner().invoke(app, [*args, "quorum-paper-authors-accounting"])
    assert res.exit_code == 0, res.output
    assert "authors' accounting" in res.output and "free LLM answers" in res.output
    res = CliRunner().invoke(app, [*args, "quorum-paper"])
    assert res.exit_code == 0, res.output
    assert "authors' accounting" not in res.output


def test_per_step_rule_stops_at_an_exact_budget_edge(shared_data_dir):
    """A budget whose float limit lands a nano-unit under the last price (persuasion,
    dollars 70%: 0.7 x 434 x 0.1) used to raise BudgetExceededError: the per-step rule
    compares with a tolerance, the budget exactly. The run now stops there."""
    from quorum.simulate import prepare, simulate_once

    prep = prepare("llms-for-css/persuasion")
    row, result = simulate_once(prep, "quorum-paper", "dollars", 0.7, 0)
    assert result.cost <= result.budget_limit
    assert row["accuracy"] > 0
