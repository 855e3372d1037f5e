"""The baselines in the form the QUORUM paper ran them (the plain method names) on hand-made
cases: the label is the labelling LLM's own answer, the uncertainty its own confidence (or
a named substitute), every call is charged, the budget holds; HyPAC routes one source per
item by confidence tier. The ``*-ensemble`` names reproduce the earlier behaviour exactly
(route hashes taken before the change on real cells)."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest

from baselines_fakes import auditor_budget, make_dataset, make_problem, source_of
from quorum.baselines.cdi_rules import budget_probabilities
from quorum.baselines.hypac import HyPACRouter, best_thresholds, tier_of
from quorum.data.schema import GOLD_HUMAN
from quorum.methods import baseline_names, make_router
from quorum.routing.core.budget import Budget
from quorum.routing.core.trace import SCORES

PRICES = {"cheap": 0.01, "mid": 0.03, "strong": 0.05}
PAPER = ["coannotating", "cdi", "hypac"]
N = 12
#: the labeller's confidence; items 3, 7, 10 are the least confident
CONF = [0.9, 0.8, 0.95, 0.1, 0.85, 0.7, 0.9, 0.2, 0.99, 0.75, 0.3, 0.88]


def item(j: int) -> str:
    return f"i{j:03d}"


def humans(res) -> set[str]:
    a = res.annotations
    return set(a.loc[a["kind"] == "human", "item_id"])


def case(confidence: bool = True):
    """cheap (the labeller) says 'b' on every item; mid and strong say 'a' (gold) and
    disagree with each other on the confident items 0, 1, 2, where an ensemble's entropy
    would be highest."""
    gold = ["a"] * N
    cheap = ["b"] * N
    mid = ["c", "c", "c"] + ["a"] * (N - 3)
    strong = ["a"] * N
    return make_dataset(
        gold,
        {"cheap": cheap, "mid": mid, "strong": strong},
        PRICES,
        labels=["a", "b", "c"],
        confidence={"cheap": CONF} if confidence else None,
    )


def route(method: str, ds, setting: str = "auditor", b: int = 3, money: float = 0.0, **kw):
    src = source_of(ds)
    r = make_router(method, **kw)
    if setting == "auditor":
        p = make_problem(ds, "auditor", human_budget=b)
        budget = auditor_budget(p, r, src, b)
    else:
        p = make_problem(ds, "dollars")
        budget = Budget(money)
    return r.route(p, src, budget, seed=0), budget


# ---------------------------------------------------------------- the label
@pytest.mark.parametrize("method", PAPER)
@pytest.mark.parametrize("setting", ["auditor", "dollars"])
def test_label_is_the_labellers_answer_where_no_human(method, setting):
    kw = {"tiers": ["cheap"]} if method == "hypac" else {}  # one LLM tier: the labeller
    res, _ = route(method, case(), setting, money=N * 0.02 + 3 * 0.10, **kw)
    lab = res.labels.set_index("item_id")
    machine = lab.loc[~lab["human"], "output"]
    assert len(machine) > 0 and (machine == "b").all()  # never the others' majority 'a'
    assert (lab.loc[lab["human"], "output"] == "a").all()
    assert res.info["labeller"] == "cheap"
    assert res.info["confidence_source"] == "recorded" and res.info["substitute"] is False


def test_ensemble_coannotating_takes_the_majority_instead():
    res, _ = route("coannotating-ensemble", case(confidence=False))
    lab = res.labels.set_index("item_id")
    assert (lab.loc[~lab["human"], "output"] == "a").all()


# ---------------------------------------------------------------- the uncertainty
def test_coannotating_sends_the_labellers_least_confident_items():
    res, _ = route("coannotating", case(), b=3)
    assert humans(res) == {item(3), item(7), item(10)}
    tr = res.trace.set_index("item_id")
    assert tr.loc[item(3), "uncertainty"] == pytest.approx(0.9)
    # the ensemble ranks by the models' disagreement instead (items 0-2)
    ens, _ = route("coannotating-ensemble", case(confidence=False), b=3)
    assert humans(ens) == {item(0), item(1), item(2)}


def test_cdi_uses_the_labellers_confidence():
    res, _ = route("cdi", case(), b=6)
    tr = res.trace.set_index("item_id")
    assert np.allclose(tr.loc[[item(j) for j in range(N)], "confidence"], CONF)
    assert res.human_labels <= 6
    assert res.info["sampling"] == "authors"


def test_cdi_budget_probabilities_by_hand():
    # min(1, c * s) summing to 2: c = 2 / (0.1 + 0.2 + 0.3 + 0.4) = 2
    pi = budget_probabilities(np.array([0.1, 0.2, 0.3, 0.4]), 2)
    assert np.allclose(pi, [0.2, 0.4, 0.6, 0.8], atol=1e-6)
    # a capped item frees the rest: c * 0.9 >= 1, then 0.05 c + 0.05 c = 0.5
    pi = budget_probabilities(np.array([0.05, 0.05, 0.9]), 1.5)
    assert np.allclose(pi, [0.25, 0.25, 1.0], atol=1e-6)
    assert budget_probabilities(np.ones(3), 0).tolist() == [0, 0, 0]
    assert budget_probabilities(np.ones(3), 5).tolist() == [1, 1, 1]


def test_cdi_authors_warmup_then_errors_only():
    """Even items: the labeller is right with confidence 1; odd: wrong with confidence 0.
    After the warm-up (both kinds seen), the error model predicts 0 on the even items:
    their pi is next to nothing and only odd items are asked."""
    n = 60
    conf = [1.0 if j % 2 == 0 else 0.0 for j in range(n)]
    ds = make_dataset(
        ["a"] * n,
        {"cheap": ["a" if j % 2 == 0 else "b" for j in range(n)], "strong": ["a"] * n},
        {"cheap": 0.01, "strong": 0.05},
        labels=["a", "b"],
        confidence={"cheap": conf},
    )
    res, _ = route("cdi", ds, b=12, warmup=8, error_model="isotonic")
    tr = res.trace.sort_values("step")
    warm = tr.iloc[:8]
    assert (warm["arm"] == GOLD_HUMAN).all() and (warm["p_human"] == 1.0).all()
    assert (warm["phase"] == "burnin").all()
    odd = warm["item_id"].str[1:].astype(int) % 2 == 1
    assert odd.any() and (~odd).any()
    after = tr.iloc[8:]
    even = after["confidence"] == 1.0
    assert (after.loc[even, "arm"] == "cheap").all()
    assert after.loc[even, "p_human"].max() < 1e-6  # sqrt of the 1e-12 error floor, scaled
    assert after["p_human"].sum() == pytest.approx(12 - 8, abs=1e-3)
    assert res.human_labels <= 12 and res.info["warmup_used"] == 8
    # 20 % of the items when the human budget exceeds that share
    res, _ = route("cdi", ds, b=30)
    assert res.info["warmup_used"] == 12


def test_hypac_sends_higher_uncertainty_to_dearer_tiers():
    res, _ = route("hypac", case(), b=6)
    tr = res.trace.set_index("item_id")
    assert np.allclose(tr.loc[[item(j) for j in range(N)], "uncertainty"], 1 - np.array(CONF))
    order = {"cheap": 0, "mid": 1, "strong": 2, GOLD_HUMAN: 3}
    routed = tr.loc[tr["phase"] != "calibration"]
    rank = routed["arm"].map(order)
    # monotone: a more uncertain item never goes to a cheaper tier
    by_u = rank.loc[routed["uncertainty"].sort_values().index].to_numpy()
    assert (np.diff(by_u) >= 0).all()
    assert res.info["tiers"] == ["cheap", "mid", "strong"]


# ---------------------------------------------------------------- what is charged
def test_recorded_confidence_is_one_paid_call_per_item():
    res, budget = route("coannotating", case(), b=3)
    assert res.confidence_calls == N and math.isclose(res.confidence_cost, N * 0.01)
    assert math.isclose(res.cost_without_confidence, N * 0.01 + 3 * 0.10)
    assert math.isclose(budget.limit, 3 * 0.10 + N * 0.01 + N * 0.01)
    asked = set(res.annotations.loc[res.annotations["kind"] == "llm", "annotator"])
    assert asked == {"cheap"}  # no other model is bought


@pytest.mark.parametrize("method", PAPER)
def test_substitute_is_one_other_model_named_and_charged(method):
    res, _ = route(method, case(confidence=False), b=3)
    assert res.info["confidence_source"] == "agreement-with:mid"
    assert res.info["substitute"] is True
    assert math.isclose(res.confidence_cost, N * 0.03)  # mid's answer on every item
    unc = res.annotations.loc[res.annotations["phase"] == "uncertainty"]
    assert set(unc["annotator"]) == {"mid"} and len(unc) == N


def test_substitute_knob_and_a_lone_llm():
    ds = case(confidence=False)
    res, _ = route("coannotating", ds, substitute="entropy")
    assert res.info["confidence_source"] == "entropy-over-models:cheap,mid,strong"
    assert res.info["llm_label"] == "labeller"
    res, _ = route("coannotating", ds, substitute="none")
    assert res.info["confidence_source"] == "none" and res.confidence_cost == 0.0
    alone = make_dataset(["a"] * 4, {"cheap": ["a", "b", "a", "b"]}, {"cheap": 0.01})
    res, _ = route("cdi", alone, b=1)
    assert res.info["confidence_source"] == "none" and res.info["substitute"] is True
    with pytest.raises(ValueError, match="substitute"):
        make_router("cdi", substitute="oracle")


def test_summaries_use_one_other_models_similarity():
    refs = ["the cat sat on the mat"] * 4
    a = ["the cat sat", "a dog ran", "the cat sat", "rain fell"]
    b = ["the cat sat", "the cat sat", "the cat sat", "the cat sat"]
    ds = make_dataset(
        refs, {"cheap": a, "mid": b}, {"cheap": 0.01, "mid": 0.03}, summarization=True
    )
    src = source_of(ds, summaries=True)
    p = make_problem(ds, "auditor", human_budget=1)
    r = make_router("coannotating")
    res = r.route(p, src, auditor_budget(p, r, src, 1), seed=0)
    assert res.info["confidence_source"] == "similarity-with:mid"
    out = res.labels.set_index("item_id")
    assert (
        out.loc[~out["human"], "output"] == [a[j] for j in range(4) if not out["human"].iloc[j]]
    ).all()


# ---------------------------------------------------------------- the budget
@pytest.mark.parametrize("method", [*PAPER, "random"])
@pytest.mark.parametrize("confidence", [True, False])
def test_budget_is_never_exceeded(method, confidence):
    ds = case(confidence)
    for setting in ("auditor", "dollars"):
        for frac in (0.0, 0.1, 0.3, 0.7, 1.0):
            for seed in range(3):
                src = source_of(ds)
                r = make_router(method)
                if setting == "auditor":
                    b = round(frac * N)
                    p = make_problem(ds, "auditor", human_budget=b, seed=seed)
                    budget = auditor_budget(p, r, src, b)
                    cap = b
                else:
                    p = make_problem(ds, "dollars", seed=seed)
                    budget = Budget(frac * N * 0.10)
                    cap = N
                res = r.route(p, src, budget, seed=seed)
                assert res.cost <= budget.limit + 1e-9
                assert res.human_labels <= cap
                assert len(res.labels) == N


# ---------------------------------------------------------------- HyPAC's tiers by hand
def test_tier_of_counts_thresholds_strictly_below():
    th = np.array([0.2, 0.3])
    assert tier_of(np.array([0.1, 0.2, 0.25, 0.3, 0.4]), th).tolist() == [0, 0, 1, 1, 2]


def test_best_thresholds_cheapest_tuple_within_epsilon():
    u = np.array([0.1, 0.2, 0.3, 0.4])
    loss = np.array(
        [
            [0.0, 0.0, 1.0, 1.0],  # cheap: wrong from 0.3 up
            [0.0, 0.0, 0.0, 1.0],  # strong: wrong at 0.4
            [0.0, 0.0, 0.0, 0.0],  # human
        ]
    )
    cost = np.array([0.01, 0.05, 0.10])
    th, found = best_thresholds(u, loss, np.ones(4), cost, epsilon=0.0, alpha=0.05)
    assert found and th.tolist() == [0.2, 0.3]
    # nothing passes: thresholds 0, every item above 0 to the human (authors' fallback)
    th, found = best_thresholds(u, np.ones((3, 4)), np.ones(4), cost, 0.0, 0.05)
    assert not found and th.tolist() == [0.0, 0.0]


def _best_thresholds_by_brute_force(u_cal, loss, weights, tier_cost, epsilon, alpha, n_grid=41):
    """best_thresholds as first written: every combination's tiers, loss and bound."""
    from itertools import combinations_with_replacement

    from quorum.baselines.hypac import clt_ucb

    k = loss.shape[0] - 1
    grid = np.unique(u_cal)
    if len(grid) > n_grid:
        grid = np.unique(np.quantile(u_cal, np.linspace(0.0, 1.0, n_grid), method="lower"))
    combos = np.array(list(combinations_with_replacement(range(len(grid)), k)), dtype=np.int64)
    best = None
    cols = np.arange(len(u_cal))
    th = grid[combos].reshape(len(combos), k)
    tiers = (u_cal[None, None, :] > th[:, :, None]).sum(axis=1)
    x = loss[tiers, cols[None, :]] * weights[None, :]
    ok = clt_ucb(x, alpha) <= epsilon
    if ok.any():
        cost = np.where(ok, tier_cost[tiers].sum(axis=1), np.inf)
        j = int(np.argmin(cost))
        best = th[j]
    return (np.zeros(k), False) if best is None else (np.asarray(best, dtype=float), True)


@pytest.mark.parametrize("seed", range(12))
def test_best_thresholds_is_the_brute_force_search(seed):
    """The search by grid rows and cost pruning finds the same tuple as trying them all
    (ties in u and in cost included; small chunks, so pruning across chunks is used)."""
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(5, 60)), int(rng.integers(0, 4))
    u = rng.choice(rng.random(int(rng.integers(2, 30))), n)  # repeated values: ties
    loss = np.vstack([(rng.random((k, n)) < rng.random((k, 1))).astype(float), np.zeros(n)])
    weights = rng.choice([1.0, 2.0], n)
    cost = np.sort(rng.choice([0.01, 0.02, 0.05, 0.1], k + 1))
    eps = float(rng.choice([0.05, 0.2, 0.5]))
    want = _best_thresholds_by_brute_force(u, loss, weights, cost, eps, 0.1, n_grid=9)
    got = best_thresholds(u, loss, weights, cost, eps, 0.1, n_grid=9, chunk=7)
    assert got[1] == want[1]
    np.testing.assert_array_equal(got[0], want[0])


def test_hypac_auditor_falls_back_to_the_strongest_llm_when_humans_run_out():
    # epsilon 0 cannot be met (the labeller is always wrong): every item wants a human
    res, _ = route("hypac", case(), b=4, epsilon=0.0)
    assert res.info["thresholds_found"] is False
    tr = res.trace
    n_cal = res.info["calibration_labels"]
    assert (tr["phase"] == "calibration").sum() == n_cal
    assert (tr["mode"] == "escalate").sum() == 4 - n_cal
    assert (tr["arm"] == "strong").sum() == N - 4
    assert res.human_labels == 4


def test_hypac_dollars_steps_down_to_what_the_money_pays():
    # labels + confidences (0.24) + one calibration item (0.10 + 0.08), then 0.05 left:
    # the human tier is out of reach, the strongest LLM once, then mid or cheap
    money = N * 0.02 + 0.18 + 0.05
    res, budget = route("hypac", case(), "dollars", money=money, epsilon=0.0)
    assert res.cost <= budget.limit + 1e-9
    tr = res.trace
    assert (tr["phase"] == "calibration").sum() == 1
    assert (tr["mode"] == "escalate").sum() == 0
    assert (tr["arm"] == "strong").sum() == 1


def test_hypac_extra_cost_covers_confidence_and_tiers():
    ds = case()
    src = source_of(ds)
    p = make_problem(ds, "auditor", human_budget=2)
    r = HyPACRouter()
    assert math.isclose(r.extra_cost_estimate(p, src), N * (0.01 + 0.03 + 0.05))


# ---------------------------------------------------------------- ensembles = before
#: route hashes of coannotating/cdi/hypac/random taken on commit 090aa38 (before the paper
#: forms), budget 0.3, on the default panels; the *-ensemble / random-uniform names must
#: reproduce them
BEFORE = {
    ("llms-for-css/discourse", "coannotating", "auditor", 0): "0b051d8da8b0db74",
    ("llms-for-css/discourse", "coannotating", "auditor", 1): "aca1529e7d7bf6af",
    ("llms-for-css/discourse", "coannotating", "dollars", 0): "dfdd4e6c5d451e59",
    ("llms-for-css/discourse", "coannotating", "dollars", 1): "1511caf60685ed2e",
    ("llms-for-css/discourse", "cdi", "auditor", 0): "95125520180c91bd",
    ("llms-for-css/discourse", "cdi", "auditor", 1): "126450280835c745",
    ("llms-for-css/discourse", "cdi", "dollars", 0): "3b1580e6872a2380",
    ("llms-for-css/discourse", "cdi", "dollars", 1): "291b0229c190c506",
    ("llms-for-css/discourse", "hypac", "auditor", 0): "888c408117b7ea19",
    ("llms-for-css/discourse", "hypac", "auditor", 1): "d2cf6dd82fd18d8c",
    ("llms-for-css/discourse", "hypac", "dollars", 0): "3b1580e6872a2380",
    ("llms-for-css/discourse", "hypac", "dollars", 1): "291b0229c190c506",
    ("llms-for-css/discourse", "random", "auditor", 0): "26ad9b6bbccd218f",
    ("llms-for-css/discourse", "random", "auditor", 1): "64d20967898b28ad",
    ("llms-for-css/discourse", "random", "dollars", 0): "84c34f684c1685bf",
    ("llms-for-css/discourse", "random", "dollars", 1): "83dd34d2546ec26e",
    ("coannotating-stance/es", "coannotating", "auditor", 0): "45b20fcf410f1dfc",
    ("coannotating-stance/es", "coannotating", "auditor", 1): "c50abbdb45f8cdfc",
    ("coannotating-stance/es", "coannotating", "dollars", 0): "3b82619298b23450",
    ("coannotating-stance/es", "coannotating", "dollars", 1): "94db968f388b190a",
    ("coannotating-stance/es", "cdi", "auditor", 0): "b2a5d3bdc5fb54a9",
    ("coannotating-stance/es", "cdi", "auditor", 1): "7d84c7253289a107",
    ("coannotating-stance/es", "cdi", "dollars", 0): "305d442a3351d218",
    ("coannotating-stance/es", "cdi", "dollars", 1): "09fe4118f90cc071",
    ("coannotating-stance/es", "hypac", "auditor", 0): "119c2ebda79c1fcb",
    ("coannotating-stance/es", "hypac", "auditor", 1): "bfebc8e99b697b4c",
    ("coannotating-stance/es", "hypac", "dollars", 0): "b64e496d78c6857b",
    ("coannotating-stance/es", "hypac", "dollars", 1): "9c5ebd9fa8f1cda1",
    ("coannotating-stance/es", "random", "auditor", 0): "350145fecfacb736",
    ("coannotating-stance/es", "random", "auditor", 1): "42edfb4b7ba43dbc",
    ("coannotating-stance/es", "random", "dollars", 0): "4e605240e3e0898e",
    ("coannotating-stance/es", "random", "dollars", 1): "f8eecac664f305a9",
}
RENAMED = {
    "coannotating": "coannotating-ensemble",
    "cdi": "cdi-ensemble",
    "hypac": "hypac-ensemble",
    "random": "random-uniform",
}


def route_hash(res) -> str:
    """Labels, every call made (who, phase, kind, status) and the money, hashed."""
    lab = res.labels[["item_id", "output", "human"]].astype(str).to_csv(index=False)
    cols = ["item_id", "annotator", "phase", "kind", "status"]
    ann = res.annotations[cols].astype(str).to_csv(index=False)
    blob = f"{lab}|{ann}|{res.cost:.9f}|{res.confidence_cost:.9f}|{res.human_labels}"
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@pytest.mark.realdata
@pytest.mark.parametrize("key", sorted(BEFORE))
def test_ensemble_names_reproduce_the_earlier_routes(key):
    from quorum.data.schema import Dataset
    from quorum.errors import DatasetNotFoundError
    from quorum.routing.core.base import RoutingProblem
    from quorum.routing.core.budget import budget_for_setting
    from quorum.routing.core.replay import RecordedSource

    loaders = pytest.importorskip("quorum.data.loaders")
    name, method, setting, seed = key
    try:
        ds = loaders.load_dataset(name)
    except DatasetNotFoundError as exc:
        pytest.skip(f"data not available: {exc}")
    panel = ds.meta.get("panel") or [a.name for a in ds.task.llms]
    task = ds.task.with_annotators([ds.task.annotator(a) for a in panel])
    ann = ds.annotations.loc[ds.annotations["annotator"].isin(panel)]
    ds = Dataset(task, ds.items, ann.reset_index(drop=True), ds.source, dict(ds.meta))
    T = ds.n_items
    p = RoutingProblem(task, ds.items["item_id"].to_numpy(), np.zeros((T, 1)), None, setting)
    src = RecordedSource(ds)
    r = make_router(RENAMED[method])
    extra = 0.0
    if setting == "auditor":
        p.human_budget = round(0.3 * T)
        extra = r.extra_cost_estimate(p, src)
    c_min = min(a.price for a in task.llms)
    budget, _ = budget_for_setting(setting, 0.3, T, task.human_spec.price, c_min, extra)
    assert route_hash(r.route(p, src, budget, seed=seed)) == BEFORE[key]


# ---------------------------------------------------------------- the trace
@pytest.mark.parametrize("method", baseline_names())
@pytest.mark.parametrize("setting", ["auditor", "dollars"])
def test_every_baseline_writes_the_one_trace_format(method, setting):
    """The QUORUM trace's columns (DecisionTrace), one row per item in the order decided;
    the arm of a row is where the item went: a human row for every item a human labelled."""
    res, _ = route(method, case(), setting, b=4, money=N * 0.2)
    tr = res.trace
    core = ["step", "phase", "item_id", "arm", "mode", "epsilon", "b_t", "p_t", "price"]
    assert list(tr.columns[: len(core)]) == core
    assert set(tr.columns) - set(core) <= {"budget_left", "priority", *SCORES}
    assert tr["step"].tolist() == list(range(1, N + 1))
    assert sorted(tr["item_id"]) == [item(j) for j in range(N)]
    assert set(tr["arm"]) <= {GOLD_HUMAN, "-", *PRICES}
    assert set(tr.loc[tr["arm"] == GOLD_HUMAN, "item_id"]) == humans(res)
    prices = {**PRICES, GOLD_HUMAN: 0.10, "-": 0.0}
    assert np.allclose(tr["price"], tr["arm"].map(prices))
