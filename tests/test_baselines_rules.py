"""Each baseline's routing rule on a tiny hand-made case where the right allocation is known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from baselines_fakes import auditor_budget, make_dataset, make_problem, source_of
from quorum.baselines.araida import ARAIDARouter, araida_scores, pace_quota
from quorum.baselines.cdi import CDIEnsembleRouter, CDIRouter
from quorum.baselines.cdi_rules import fit_error_model, sampling_probability
from quorum.baselines.coannotating import CoAnnotatingEnsembleRouter, CoAnnotatingRouter
from quorum.baselines.hypac_ensemble import HyPACEnsembleRouter
from quorum.baselines.pac_rules import pac_threshold, ucb
from quorum.baselines.random import RandomRouter
from quorum.baselines.sant import SANTRouter
from quorum.data.schema import GOLD_HUMAN
from quorum.errors import UnsupportedTaskError
from quorum.methods import get_router_class
from quorum.routing.core.budget import Budget

PRICES = {"cheap": 0.01, "mid": 0.03, "strong": 0.05}


def humans(res) -> set[str]:
    a = res.annotations
    return set(a.loc[a["kind"] == "human", "item_id"])


def item(j: int) -> str:
    return f"i{j:03d}"


# ---------------------------------------------------------------- registry
#: every baseline the registry must offer (the paper's six and the named variants)
BASELINES = [
    "random",
    "coannotating",
    "cdi",
    "hypac",
    "araida",
    "sant",
    "coannotating-ensemble",
    "cdi-ensemble",
    "hypac-ensemble",
    "random-uniform",
]


@pytest.mark.parametrize("name", BASELINES)
def test_registry_resolves_baselines(name):
    cls = get_router_class(name)
    assert cls.name == name
    r = cls()
    assert "confidence_source" not in r.get_params()  # params are hyper-parameters only


# ---------------------------------------------------------------- Random
def test_random_auditor_sends_exactly_b_items_to_humans():
    gold = ["a"] * 30
    ds = make_dataset(gold, {a: ["a"] * 30 for a in PRICES}, PRICES)
    src = source_of(ds)
    p = make_problem(ds, "auditor", human_budget=7)
    r = RandomRouter()
    res = r.route(p, src, auditor_budget(p, r, src, 7), seed=3)
    assert res.human_labels == 7 and len(humans(res)) == 7
    assert res.info["confidence_source"] == "none"
    llm = res.annotations.loc[res.annotations["kind"] == "llm"]
    assert set(llm["annotator"]) == {"cheap"} and len(llm) == 23


# ---------------------------------------------------------------- CoAnnotating
def entropy_case():
    """10 items: 0-5 unanimous (H=0), 6-7 split 2-1 (H=0.918), 8-9 all differ (H=1.585)."""
    gold = ["a"] * 10
    cheap = ["a"] * 6 + ["b", "a", "a", "b"]
    mid = ["a"] * 6 + ["a", "b", "b", "c"]
    strong = ["a"] * 6 + ["a", "a", "c", "a"]
    return make_dataset(
        gold, {"cheap": cheap, "mid": mid, "strong": strong}, PRICES, labels=["a", "b", "c"]
    )


@pytest.mark.parametrize(("b", "expected"), [(2, {8, 9}), (4, {6, 7, 8, 9})])
def test_coannotating_sends_top_entropy_items_to_humans(b, expected):
    ds = entropy_case()
    src = source_of(ds)
    p = make_problem(ds, "auditor", human_budget=b)
    r = CoAnnotatingEnsembleRouter()
    res = r.route(p, src, auditor_budget(p, r, src, b), seed=0)
    assert humans(res) == {item(j) for j in expected}
    assert res.info["confidence_source"] == "entropy-over-models:cheap,mid,strong"
    assert res.info["substitute"] is True
    # every item pays the two extra models: 10 * (0.03 + 0.05)
    assert math.isclose(res.confidence_cost, 0.8)
    assert math.isclose(r.extra_cost_estimate(p, src), 0.8)
    assert math.isclose(res.cost_without_confidence, 10 * 0.01 + b * 0.10)
    out = res.labels.set_index("item_id")["output"]
    # LLM label = majority over models: item 6 (b, a, a) -> a, item 7 (a, b, a) -> a
    if b == 2:
        assert out[item(6)] == "a" and out[item(7)] == "a"
    trace = res.trace.set_index("item_id")
    assert trace.loc[item(9), "uncertainty"] == pytest.approx(math.log2(3))
    assert trace.loc[item(6), "uncertainty"] == pytest.approx(0.9182958)


def test_coannotating_recorded_confidence_sends_least_confident():
    n = 8
    conf = [0.9, 0.2, 0.8, 0.1, 0.95, 0.7, 0.3, 0.99]
    ds = make_dataset(
        ["a"] * n,
        {"cheap": ["a"] * n, "strong": ["a"] * n},
        {"cheap": 0.01, "strong": 0.05},
        labels=["a", "b"],
        confidence={"cheap": conf},
    )
    src = source_of(ds)
    p = make_problem(ds, "auditor", human_budget=3)
    r = CoAnnotatingRouter()
    res = r.route(p, src, auditor_budget(p, r, src, 3), seed=1)
    assert humans(res) == {item(3), item(1), item(6)}
    assert res.info["confidence_source"] == "recorded" and res.info["substitute"] is False
    assert res.confidence_calls == n and math.isclose(res.confidence_cost, n * 0.01)


def test_coannotating_entropy_over_prompts_is_not_a_substitute():
    prompts = {"m/p1": 0.01, "m/p2": 0.01, "m/p3": 0.01}
    ds = make_dataset(
        ["a"] * 4,
        {"m/p1": ["a", "a", "b", "a"], "m/p2": ["a", "b", "c", "a"], "m/p3": ["a", "a", "a", "a"]},
        prompts,
        labels=["a", "b", "c"],
    )
    src = source_of(ds)
    p = make_problem(ds, "auditor", human_budget=1)
    r = CoAnnotatingEnsembleRouter()
    res = r.route(p, src, auditor_budget(p, r, src, 1), seed=0)
    assert res.info["confidence_source"].startswith("entropy-over-prompts:")
    assert res.info["substitute"] is False
    assert humans(res) == {item(2)}


def test_coannotating_dollars_spends_rest_on_top_entropy_and_degrades_when_short():
    ds = entropy_case()
    src = source_of(ds)
    p = make_problem(ds, "dollars")
    r = CoAnnotatingEnsembleRouter()
    full = 10 * (0.01 + 0.03 + 0.05)
    res = r.route(p, src, Budget(full + 2 * 0.10), seed=0)
    assert humans(res) == {item(8), item(9)}
    assert res.info["degraded"] is False
    # not enough for the estimate on every item: estimate half, no humans, no overspend
    short = Budget(10 * 0.01 + 5 * 0.08)
    res = r.route(p, src, short, seed=0)
    assert res.info["n_estimated"] == 5 and res.info["degraded"] is True
    assert res.human_labels == 0 and res.cost <= short.limit + 1e-12
    assert res.labels["output"].notna().all()  # every item still has the cheap LLM label


# ---------------------------------------------------------------- CDI
def test_cdi_sampling_probability_by_hand():
    assert sampling_probability(0.5, 0.25, 0.2, 0.1) == pytest.approx(0.9 * 0.4 + 0.1 * 0.2)
    assert sampling_probability(5.0, 0.25, 0.2, 0.0) == 1.0  # clipped
    assert sampling_probability(0.3, 0.0, 0.2, 0.1) == pytest.approx(0.2)  # no signal


def cdi_case(n=60):
    """Even items: confidence 1 and the LLM right; odd items: confidence 0 and wrong."""
    gold = ["a"] * n
    cheap = ["a" if j % 2 == 0 else "b" for j in range(n)]
    conf = [1.0 if j % 2 == 0 else 0.0 for j in range(n)]
    return make_dataset(
        gold,
        {"cheap": cheap, "strong": gold},
        {"cheap": 0.01, "strong": 0.05},
        labels=["a", "b"],
        confidence={"cheap": conf},
    )


@pytest.mark.parametrize("model", ["gbr", "isotonic", "logistic"])
def test_cdi_error_model_learns_confidence_to_error(model):
    conf = np.array([1.0, 0.0] * 20)
    err = np.array([0.0, 1.0] * 20)
    f = fit_error_model(model, conf, err)
    pred = f(np.array([0.0, 1.0]))
    assert pred[0] > 0.8 and pred[1] < 0.2


def test_cdi_burnin_items_always_get_humans_and_confident_items_never_after():
    ds = cdi_case()
    src = source_of(ds)
    b = 20
    p = make_problem(ds, "auditor", human_budget=b)
    r = CDIRouter(burnin=10, refit_every=5, tau=0.0, error_model="isotonic", sampling="stream")
    res = r.route(p, src, auditor_budget(p, r, src, b), seed=0)
    tr = res.trace.sort_values("step")
    burn = tr.iloc[:10]
    assert (burn["arm"] == GOLD_HUMAN).all() and (burn["phase"] == "burnin").all()
    odd = burn["item_id"].str[1:].astype(int) % 2 == 1
    assert odd.any() and (~odd).any()  # both kinds seen: the error model is identified
    after = tr.iloc[10:]
    confident = after["confidence"] == 1.0
    assert (after.loc[confident, "arm"] == "cheap").all()  # predicted error 0 -> pi = 0
    assert (after.loc[confident, "mode"] == "keep").all()
    assert after.loc[confident, "p_human"].eq(0.0).all()
    assert res.human_labels <= b
    assert res.info["confidence_source"] == "recorded"


def test_cdi_never_exceeds_human_budget_even_when_pi_is_one():
    ds = cdi_case(40)
    src = source_of(ds)
    p = make_problem(ds, "auditor", human_budget=25)
    r = CDIRouter(burnin=2, refit_every=1, tau=0.0, sampling="stream")
    for seed in range(5):
        res = r.route(p, src, auditor_budget(p, r, src, 25), seed=seed)
        assert res.human_labels <= 25


# ---------------------------------------------------------------- HyPAC
def test_hypac_ucb_and_threshold_by_hand():
    assert ucb(np.array([0.0, 1.0]), 0.05) == pytest.approx(0.5 + 1.6448536 * 0.5 / math.sqrt(2))
    cands = np.array([0.1, 0.2, 0.3, 0.4, np.inf])
    u_draw = np.array([0.1, 0.2, 0.3, 0.4])
    z_draw = np.array([0.0, 0.0, 0.0, 5.0])  # the draw at u = 0.4 was wrong (weight 1/0.2)
    # lambda = 0.4 keeps the draws below 0.4 (no error): bound 0 <= epsilon = 0
    assert pac_threshold(cands, u_draw, z_draw, 0.0, 0.05) == 0.4
    # every draw may be auto-labelled once epsilon exceeds the bound with the error
    big = ucb(z_draw, 0.05)
    assert pac_threshold(cands, u_draw, z_draw, big + 1e-9, 0.05) == np.inf
    # nothing passes: everything goes to the human
    assert pac_threshold(cands, u_draw, np.full(4, 5.0), 0.0, 0.05) == 0.1


def test_hypac_routes_calibration_then_most_uncertain_within_budget():
    n = 200
    rng = np.random.default_rng(0)
    conf = rng.random(n)
    gold = ["a"] * n
    cheap = ["a" if c > 0.3 else "b" for c in conf]  # wrong exactly when unconfident
    ds = make_dataset(
        gold,
        {"cheap": cheap, "strong": gold},
        {"cheap": 0.01, "strong": 0.05},
        labels=["a", "b"],
        confidence={"cheap": list(conf)},
    )
    src = source_of(ds)
    b = 80
    p = make_problem(ds, "auditor", human_budget=b)
    r = HyPACEnsembleRouter(num_draws=200, sampling_prob=0.2)
    res = r.route(p, src, auditor_budget(p, r, src, b), seed=0)
    assert res.human_labels <= b
    tr = res.trace.set_index("item_id")
    routed = tr.loc[tr["mode"] == "escalate", "uncertainty"]
    machine = tr.loc[tr["mode"] == "keep", "uncertainty"]
    assert (tr.loc[tr["mode"] == "escalate", "arm"] == GOLD_HUMAN).all()
    assert len(routed) > 0 and routed.min() >= machine.max()  # a threshold on uncertainty
    assert res.info["calibration_labels"] <= b // 2
    assert res.info["epsilon_choice"] == "smallest epsilon that fits"
    # the threshold lies at or below the LLM's error region (u >= 0.7): errors caught
    out = res.labels.set_index("item_id")["output"]
    assert (out == "a").mean() > 0.95


# ---------------------------------------------------------------- ARAIDA
def test_araida_scores_by_hand():
    p = araida_scores(
        llm=np.array([0]),
        n_labels=2,
        sims=np.array([[0.9, 0.9]]),
        nb_y=np.array([[1, 1]]),
        nb_err=np.array([[1.0, 1.0]]),
        global_err=0.5,
        temperature=0.1,
        prior_strength=2.0,
    )
    # e = (2 * 1 + 2 * 0.5) / 4 = 0.75; lam = 1 - 0.9 * 0.75 = 0.325
    # p = 0.325 * [0.25, 0.75] + 0.675 * [0, 1]
    assert p[0] == pytest.approx([0.08125, 0.91875])
    agree = araida_scores(
        llm=np.array([0]),
        n_labels=2,
        sims=np.array([[0.9, 0.9]]),
        nb_y=np.array([[0, 0]]),
        nb_err=np.array([[0.0, 0.0]]),
        global_err=0.5,
        temperature=0.1,
        prior_strength=2.0,
    )
    # e = (0 + 2 * 0.5) / 4 = 0.25; lam = 0.775; p = 0.775 * [0.75, 0.25] + 0.225 * [1, 0]
    assert agree[0] == pytest.approx([0.80625, 0.19375])
    # the router escalates on p[LLM label]: 0.081 (neighbours contradict) < 0.806
    assert pace_quota(10, 100, 1000, np.random.default_rng(0)) == 1
    assert pace_quota(0, 100, 1000, np.random.default_rng(0)) == 0


def two_clusters(n=200, dim=8, seed=0):
    """Half the items in cluster A (LLM right), half in cluster B (LLM wrong)."""
    rng = np.random.default_rng(seed)
    centre = np.eye(dim)[:2]
    which = np.arange(n) % 2  # odd items: cluster B
    e = centre[which] + 0.05 * rng.normal(size=(n, dim))
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    gold = ["a" if w == 0 else "b" for w in which]
    cheap = ["a"] * n  # right on A, wrong on B
    ds = make_dataset(
        gold, {"cheap": cheap, "strong": gold}, {"cheap": 0.01, "strong": 0.05}, labels=["a", "b"]
    )
    phi = np.c_[which, rng.random(n)].astype(float)
    return ds, e, phi, which


def test_araida_escalates_where_the_llm_is_wrong_nearby():
    ds, e, phi, which = two_clusters()
    src = source_of(ds)
    b = 60
    p = make_problem(ds, "auditor", human_budget=b, embeddings=e, phi=phi)
    r = ARAIDARouter(batch_size=20)
    res = r.route(p, src, auditor_budget(p, r, src, b), seed=0)
    h = [int(i[1:]) for i in humans(res)]
    assert len(h) == b
    assert np.mean(which[h]) > 0.8  # after the first batch, humans go to cluster B
    mix = ARAIDARouter(batch_size=20, machine_output="mixture").route(
        p, src, auditor_budget(p, r, src, b), seed=0
    )
    acc = (mix.labels["output"].to_numpy() == ds.items["gold"].to_numpy()).mean()
    assert acc > 0.95  # kNN-corrected suggestions fix cluster B


# ---------------------------------------------------------------- SANT
def test_sant_round_sizes():
    assert SANTRouter().round_sizes(100) == [20, 20, 20, 20, 20]
    assert SANTRouter(n_rounds=3, init_share=0.5).round_sizes(9) == [4, 3, 2]
    assert sum(SANTRouter().round_sizes(7)) == 7


def test_sant_error_triage_sends_error_prone_items():
    ds, e, phi, which = two_clusters()
    src = source_of(ds)
    b = 60
    p = make_problem(ds, "auditor", human_budget=b, embeddings=e, phi=phi)
    r = SANTRouter(weight=0.0, n_components=4)
    res = r.route(p, src, auditor_budget(p, r, src, b), seed=0)
    tr = res.trace.set_index("item_id")
    later = [int(i[1:]) for i in tr.index[tr["phase"].str.match(r"round[1-9]")]]
    assert (tr.loc[tr["phase"] == "round0", "mode"] == "random").all()
    assert len(later) == b - 12
    assert np.mean(which[later]) == 1.0  # pure error triage: all later humans in cluster B


# ---------------------------------------------------------------- summaries
def summary_case():
    refs = [f"reference summary number {j}" for j in range(6)]
    same = "the cat sat on the mat"
    a = [same, same, same, same, "zzzz qqqq", same]
    b = [same, same, same, same, "xx yy 11 22 !!", same]
    c = [same, same, same, same, "completely different words", same]
    return make_dataset(refs, {"cheap": a, "mid": b, "strong": c}, PRICES, summarization=True)


@pytest.mark.parametrize("cls", [ARAIDARouter, SANTRouter])
def test_label_based_baselines_refuse_summaries(cls):
    ds = summary_case()
    src = source_of(ds, summaries=True)
    p = make_problem(ds, "auditor", human_budget=1)
    with pytest.raises(UnsupportedTaskError, match="summarization"):
        cls().route(p, src, Budget(10.0, human_limit=1))
    with pytest.raises(UnsupportedTaskError):
        cls().extra_cost_estimate(p, src)
    assert cls.supports_summarization is False


@pytest.mark.parametrize(
    "cls", [RandomRouter, CoAnnotatingEnsembleRouter, CDIEnsembleRouter, HyPACEnsembleRouter]
)
@pytest.mark.parametrize("setting", ["auditor", "dollars"])
def test_summary_capable_baselines_run_on_summaries(cls, setting):
    ds = summary_case()
    src = source_of(ds, summaries=True)
    p = make_problem(ds, setting, human_budget=1 if setting == "auditor" else None)
    r = cls()
    bud = auditor_budget(p, r, src, 1) if setting == "auditor" else Budget(6 * 0.1 * 0.5)
    res = r.route(p, src, bud, seed=0)
    assert res.cost <= bud.limit + 1e-12
    assert res.labels["output"].notna().all()
    if cls is not RandomRouter:
        assert res.info["confidence_source"].startswith("similarity-over-models")
        assert res.info["substitute"] is True
    if cls is CoAnnotatingEnsembleRouter and setting == "auditor":
        assert humans(res) == {item(4)}  # the only item where the summaries disagree


def test_baseline_names_lists_every_registered_baseline():
    """The other baseline test files take their method lists from baseline_names()."""
    from quorum.methods import baseline_names

    assert baseline_names() == BASELINES
