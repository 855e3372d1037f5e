"""QUORUM router mechanics on small hand-made problems (synthetic: mechanics only)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quorum.data.schema import AnnotatorSpec, Dataset, TaskSpec
from quorum.routing.core.base import RoutingProblem
from quorum.routing.core.budget import Budget
from quorum.routing.core.replay import RecordedSource
from quorum.routing.quorum.router import QuorumRouter, mahalanobis_uncertainty


def make_dataset(n=60, seed=0, acc=(0.6, 0.8, 0.9), prices=(0.01, 0.03, 0.05), labels="AB"):
    rng = np.random.default_rng(seed)
    labels = list(labels)
    gold = rng.choice(labels, size=n)
    items = pd.DataFrame({"item_id": [f"i{t}" for t in range(n)], "text": ["x"] * n})
    items["gold"] = gold
    rows = []
    names = [f"llm{k}" for k in range(len(acc))]
    for name, a in zip(names, acc, strict=True):
        for t in range(n):
            right = rng.random() < a
            out = gold[t] if right else rng.choice([y for y in labels if y != gold[t]])
            rows.append({"item_id": f"i{t}", "annotator": name, "output": out})
    task = TaskSpec(
        name="toy",
        type="classification",
        labels=labels,
        annotators=[AnnotatorSpec(name=nm, price=p) for nm, p in zip(names, prices, strict=True)],
    )
    return Dataset(task, items, pd.DataFrame(rows))


def problem_for(ds, setting="dollars", human_budget=None, seed=0, m=4):
    rng = np.random.default_rng(seed + 100)
    n = ds.n_items
    emb = rng.normal(size=(n, 8))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    return RoutingProblem(
        task=ds.task,
        item_ids=ds.items["item_id"].to_numpy(),
        phi=rng.random((n, m)),
        embeddings=emb,
        setting=setting,
        human_budget=human_budget,
    )


def run(ds, setting="dollars", frac=0.3, seed=0, **params):
    T = ds.n_items
    if setting == "auditor":
        n_h = round(frac * T)
        prob = problem_for(ds, "auditor", n_h)
        budget = Budget(n_h * 0.1 + T * 0.01, human_limit=n_h)
    else:
        prob = problem_for(ds)
        budget = Budget(frac * T * 0.1)
    res = QuorumRouter(**params).route(prob, RecordedSource(ds), budget, seed=seed)
    return res, budget


def test_mahalanobis_picks_the_outlier():
    phi = np.zeros((20, 2))
    phi[:, 0] = np.linspace(0, 1, 20)
    phi[:, 1] = np.linspace(0, 1, 20) ** 2
    phi[7] = [0.9, 0.0]  # far from the curve the others lie on
    u = mahalanobis_uncertainty(phi)
    assert int(np.argmax(u)) == 7


def test_dollars_run_is_deterministic_per_seed():
    ds = make_dataset(80)
    a, _ = run(ds, seed=3)
    b, _ = run(ds, seed=3)
    c, _ = run(ds, seed=4)
    pd.testing.assert_frame_equal(a.labels, b.labels)
    pd.testing.assert_frame_equal(a.annotations, b.annotations)
    assert a.trace["arm"].tolist() == b.trace["arm"].tolist()
    # another seed asks other items (too few items for a panel check: the audit path)
    assert a.info["dollars_strategy"] == "audit"
    asked = {(r.item_id, r.annotator) for r in a.annotations.itertuples()}
    assert asked != {(r.item_id, r.annotator) for r in c.annotations.itertuples()}


def test_dollars_bandit_run_is_deterministic_per_seed():
    ds = make_dataset(80)
    a, _ = run(ds, seed=3, probe_min=0)
    b, _ = run(ds, seed=3, probe_min=0)
    c, _ = run(ds, seed=4, probe_min=0)
    assert a.info["dollars_strategy"] == "bandit"
    pd.testing.assert_frame_equal(a.labels, b.labels)
    assert a.trace["arm"].tolist() == b.trace["arm"].tolist()
    assert a.trace["arm"].tolist() != c.trace["arm"].tolist()


def test_auditor_run_is_deterministic_per_seed():
    ds = make_dataset(80)
    a, _ = run(ds, "auditor", 0.3, seed=1)
    b, _ = run(ds, "auditor", 0.3, seed=1)
    pd.testing.assert_frame_equal(a.labels, b.labels)


def test_every_item_is_labelled_and_calibration_uses_humans():
    ds = make_dataset(100)
    res, budget = run(ds, frac=0.5, probe_min=0)
    assert res.labels["output"].notna().all()
    cal = res.annotations[res.annotations["phase"] == "calibration"]
    # calibration items get the human and every LLM
    per_item = cal.groupby("item_id")["annotator"].nunique()
    assert (per_item == 4).all() and len(per_item) == res.info["n_calibration"] > 0
    # calibration spends about calibration_share of the money (Algorithm 1, money reading)
    assert cal["cost"].sum() <= 0.2 * budget.limit + 1e-9
    assert res.cost <= budget.limit + 1e-9
    assert res.trace is not None and {"q:llm0", "q:llm1", "q:llm2"} <= set(res.trace.columns)


def test_at_most_max_annotations_per_item_outside_calibration():
    ds = make_dataset(120)
    for m in (1, 2, 3):
        res, _ = run(ds, frac=0.7, max_annotations=m, spend_leftover=False)
        ann = res.annotations
        ann = ann[ann["phase"] != "calibration"]
        assert ann.groupby("item_id").size().max() <= m


def test_budget_below_one_annotation_annotates_nothing():
    ds = make_dataset(20)
    prob = problem_for(ds)
    res = QuorumRouter().route(prob, RecordedSource(ds), Budget(0.005), seed=0)
    assert res.cost == 0 and res.labels["output"].isna().all()
    assert "budget below one annotation" in res.info["note"]


def test_disagreement_goes_to_the_human():
    # llm0 and llm1 always disagree, the human settles every item they were both asked on
    n = 40
    items = pd.DataFrame({"item_id": [str(t) for t in range(n)], "text": ["x"] * n})
    items["gold"] = "A"
    ann = pd.DataFrame(
        [{"item_id": str(t), "annotator": "llm0", "output": "A"} for t in range(n)]
        + [{"item_id": str(t), "annotator": "llm1", "output": "B"} for t in range(n)]
    )
    task = TaskSpec(
        name="d",
        type="classification",
        labels=["A", "B"],
        annotators=[AnnotatorSpec(name="llm0", price=0.01), AnnotatorSpec(name="llm1", price=0.01)],
    )
    ds = Dataset(task, items, ann)
    prob = problem_for(ds)
    router = QuorumRouter(
        calibration_share=0.0,
        epsilon0=0.0,
        tau_h=0.0,
        human_quality=0.0,  # phase 2 never picks the human directly
        extra_arm_rule="paper",
        adaptive_tau=False,  # phase 3 asks the other LLM, never the human first
    )
    res = router.route(prob, RecordedSource(ds), Budget(n * 0.2), seed=0)
    lab = res.labels.set_index("item_id")
    both = lab["annotators"].str.contains("llm0") & lab["annotators"].str.contains("llm1")
    assert both.any()
    assert lab.loc[both, "human"].all()
    assert (lab.loc[both, "output"] == "A").all()


def test_auditor_by_hand():
    """T = 10, B = 5, calibration 0.2 * 5 = 1 item; the cheapest LLM is wrong on a cluster.

    Items 0-4 sit at one point of the embedding space, items 5-9 at another; the cheap LLM
    is wrong exactly on items 0-4. Whichever item is drawn for calibration, the human
    labels must go to the cluster that contains the error (if the calibration item is an
    error) and the total cost must be B c_H + (T - B) c_min at most.
    """
    T = 10
    items = pd.DataFrame({"item_id": [str(t) for t in range(T)], "text": ["x"] * T})
    items["gold"] = "A"
    cheap = ["B"] * 5 + ["A"] * 5
    ann = pd.DataFrame(
        [{"item_id": str(t), "annotator": "cheap", "output": cheap[t]} for t in range(T)]
        + [{"item_id": str(t), "annotator": "dear", "output": "A"} for t in range(T)]
    )
    task = TaskSpec(
        name="h",
        type="classification",
        labels=["A", "B"],
        annotators=[
            AnnotatorSpec(name="cheap", price=0.01),
            AnnotatorSpec(name="dear", price=0.05),
        ],
    )
    ds = Dataset(task, items, ann)
    emb = np.array([[1.0, 0.0]] * 5 + [[0.0, 1.0]] * 5)
    for seed in range(10):
        prob = RoutingProblem(
            task=task,
            item_ids=items["item_id"].to_numpy(),
            phi=np.zeros((T, 2)),
            embeddings=emb,
            setting="auditor",
            human_budget=5,
        )
        budget = Budget(5 * 0.1 + T * 0.01, human_limit=5)
        res = QuorumRouter(auditor_cost_match=False, audit_llm_first=False).route(
            prob, RecordedSource(ds), budget, seed=seed
        )
        lab = res.labels.set_index("item_id")
        assert res.human_labels == 5
        assert (lab["output"] == lab.index.map(lambda _: "A")).sum() >= 5
        cal_item = res.annotations.query("phase == 'calibration'")["item_id"].iloc[0]
        if int(cal_item) < 5:  # an error was seen: the whole error cluster gets humans
            assert lab.loc[[str(t) for t in range(5)], "human"].all()
            assert (lab["output"] == "A").all()
        # nobody calls the dearer LLM in the auditor setting
        assert "dear" not in set(res.annotations["annotator"])
        # cost: 5 humans + cheap LLM on the calibration item and the 5 LLM items
        assert res.cost == pytest.approx(5 * 0.1 + 6 * 0.01)
        # audit_llm_first (default): the cheap LLM on every item, all 5 humans, every label
        # right (the human labels and the label model fix the error cluster)
        budget = Budget(5 * 0.1 + T * 0.01, human_limit=5)
        res = QuorumRouter().route(prob, RecordedSource(ds), budget, seed=seed)
        lab = res.labels.set_index("item_id")
        assert res.human_labels == 5 and "dear" not in set(res.annotations["annotator"])
        assert res.cost == pytest.approx(5 * 0.1 + T * 0.01)
        if int(cal_item) < 5:
            assert (lab["output"] == "A").all()


def test_auditor_cost_match_never_costs_more_than_the_plain_allocation():
    ds = make_dataset(200)
    for frac in (0.1, 0.3, 0.5, 0.7):
        res, _ = run(ds, "auditor", frac, audit_llm_first=False, auditor_cost_match=True)
        n_h = round(frac * 200)
        assert res.cost <= n_h * 0.1 + (200 - n_h) * 0.01 + 1e-9
        assert res.human_labels <= n_h
        # audit_llm_first: all B humans and the cheap LLM everywhere, the setting's limit
        res, _ = run(ds, "auditor", frac)
        assert res.human_labels == n_h
        assert res.cost <= n_h * 0.1 + 200 * 0.01 + 1e-9


@settings(max_examples=40, deadline=None)
@given(
    frac=st.floats(0.0, 1.0),
    prices=st.lists(st.floats(0.001, 0.2), min_size=1, max_size=3),
    human_price=st.floats(0.01, 0.5),
    setting=st.sampled_from(["dollars", "auditor"]),
    seed=st.integers(0, 10_000),
    params=st.fixed_dictionaries(
        {
            "calibration_share": st.floats(0, 1),
            "reserve_share": st.floats(0, 1),
            "max_annotations": st.integers(1, 4),
            "tau_h": st.floats(0, 1),
            "phase2_rule": st.sampled_from(["lagrangian", "paper"]),
            "extra_arm_rule": st.sampled_from(["value", "paper"]),
            "dollars_strategy": st.sampled_from(["auto", "bandit", "audit"]),
            "pessimism": st.sampled_from([0.0, 1.0]),
        }
    ),
)
def test_budget_never_exceeded(frac, prices, human_price, setting, seed, params):
    n = 30
    acc = [0.7] * len(prices)
    ds = make_dataset(n, seed=seed % 7, acc=acc, prices=prices)
    task = ds.task.model_copy(update={"human_price": human_price})
    ds = Dataset(task, ds.items, ds.annotations)
    if setting == "auditor":
        n_h = round(frac * n)
        prob = problem_for(ds, "auditor", n_h)
        limit = n_h * human_price + n * min(prices)
        budget = Budget(limit, human_limit=n_h)
    else:
        prob = problem_for(ds)
        limit = frac * n * human_price
        budget = Budget(limit)
    res = QuorumRouter(**params).route(prob, RecordedSource(ds), budget, seed=seed)
    assert res.cost <= limit + 1e-6
    assert math.isclose(res.annotations["cost"].sum(), res.cost, abs_tol=1e-6)
    if setting == "auditor":
        assert res.human_labels <= n_h


def test_dead_arm_is_left_out():
    ds = make_dataset(60)

    class HalfDead(RecordedSource):
        def is_available(self, annotator: str) -> bool:
            return annotator != "llm1"

    prob = problem_for(ds)
    res = QuorumRouter(calibration_share=0.0).route(prob, HalfDead(ds), Budget(60 * 0.05), seed=0)
    assert "llm1" not in set(res.annotations["annotator"])
    assert res.labels["output"].notna().all()


def test_weak_panel_is_audited_and_strong_panel_is_routed():
    # dearer LLMs barely better than the cheapest: a human label buys more accuracy per
    # unit of money, so "auto" audits; clearly better dearer LLMs keep the bandit
    weak, _ = run(
        make_dataset(300, acc=(0.30, 0.34, 0.36)), frac=0.7, audit_llm_first=False, probe_min=0
    )
    strong, _ = run(make_dataset(300, acc=(0.30, 0.97, 0.98)), frac=0.7, probe_min=0)
    assert weak.info["panel_dominated"] and weak.info["dollars_strategy"] == "audit"
    assert not strong.info["panel_dominated"] and strong.info["dollars_strategy"] == "bandit"
    # audit: only the human and the cheapest LLM after calibration, and no extra phase
    after = weak.annotations[weak.annotations["phase"] != "calibration"]
    assert set(after["annotator"]) <= {"gold", "llm0"} and set(after["phase"]) == {"route"}
    assert after.groupby("item_id").size().max() == 1
    # the probe: half the calibration items of the bandit run, all arms on each
    cal_weak = weak.annotations[weak.annotations["phase"] == "calibration"]["item_id"].nunique()
    cal_strong = strong.annotations[strong.annotations["phase"] == "calibration"]
    assert cal_weak == math.ceil(0.5 * cal_strong["item_id"].nunique())
    # audit spends the money: less than one human upgrade is left
    assert weak.cost > 0.7 * 300 * 0.1 - (0.1 - 0.01) - 1e-9


def test_audit_sends_humans_to_the_cheap_llm_error_region():
    n, n_bad = 200, 60
    ds = make_dataset(n, acc=(1.0, 1.0, 1.0))
    bad = np.arange(n_bad)  # the cheapest LLM is wrong on exactly these items
    ann = ds.annotations.copy()
    flip = ann["annotator"].eq("llm0") & ann["item_id"].isin([f"i{t}" for t in bad])
    ann.loc[flip, "output"] = ann.loc[flip, "output"].map({"A": "B", "B": "A"})
    ds = Dataset(ds.task, ds.items, ann)
    prob = problem_for(ds)
    emb = np.zeros((n, 8))
    emb[:n_bad, 0] = 1.0  # the error region: one direction of the embedding space
    emb[n_bad:, 1] = 1.0
    emb += np.random.default_rng(0).normal(scale=0.05, size=emb.shape)
    prob.embeddings = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    budget = Budget(0.2 * n * 0.1)
    res = QuorumRouter(
        dollars_strategy="audit", calibration_share=0.3, audit_llm_first=False
    ).route(prob, RecordedSource(ds), budget, seed=0)
    route = res.annotations[res.annotations["phase"] == "route"]
    humans = route.loc[route["annotator"] == "gold", "item_id"].str[1:].astype(int)
    assert len(humans) > 10 and (humans < n_bad).all()
    assert res.cost <= budget.limit + 1e-9
    assert res.info["auditor_order"] == "knn-error-rate"
    # audit_llm_first (default): the LLM answers everywhere, so the human labels learn its
    # error region, and its labels there are corrected for free (binary labels: flipped)
    new = QuorumRouter(dollars_strategy="audit", calibration_share=0.3).route(
        prob, RecordedSource(ds), Budget(0.2 * n * 0.1), seed=0
    )
    gold = ds.items.set_index("item_id")["gold"]
    acc_new = (new.labels.set_index("item_id")["output"] == gold).mean()
    acc_old = (res.labels.set_index("item_id")["output"] == gold).mean()
    assert acc_new >= acc_old and acc_new > 0.95


def test_pessimism_sends_more_first_answers_to_humans():
    ds = make_dataset(300, acc=(0.55, 0.6, 0.65))
    humans = []
    for kappa in (0.0, 3.0):
        res, _ = run(ds, frac=0.5, dollars_strategy="bandit", pessimism=kappa, reserve_share=0.0)
        route = res.annotations[res.annotations["phase"] == "route"]
        humans.append(int((route["annotator"] == "gold").sum()))
    assert humans[1] > humans[0]


def test_new_parameters_are_validated():
    with pytest.raises(ValueError, match="dollars_strategy"):
        QuorumRouter(dollars_strategy="greedy")
    with pytest.raises(ValueError, match="probe_share"):
        QuorumRouter(probe_share=0.0)
    with pytest.raises(ValueError, match="dominance_z"):
        QuorumRouter(dominance_z=-1)
    with pytest.raises(ValueError, match="pessimism"):
        QuorumRouter(pessimism=-0.5)
    with pytest.raises(ValueError, match="probe_min"):
        QuorumRouter(probe_min=-1)
    with pytest.raises(ValueError, match="summary_audit"):
        QuorumRouter(summary_audit="centroid")


def test_weak_summary_panel_is_audited():
    from baselines_fakes import make_dataset as make_fake
    from baselines_fakes import make_problem as make_fake_problem
    from baselines_fakes import source_of

    n = 120
    rng = np.random.default_rng(0)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"]
    refs = [" ".join(rng.choice(words, 5)) for _ in range(n)]
    # every LLM writes unrelated text: none of them is worth more than a human label
    bad = {a: [" ".join(rng.choice(words, 5)) for _ in range(n)] for a in ("c", "m", "s")}
    ds = make_fake(refs, bad, {"c": 0.01, "m": 0.03, "s": 0.05}, summarization=True)
    budget = Budget(0.5 * n * 0.1)
    res = QuorumRouter().route(make_fake_problem(ds, "dollars"), source_of(ds, True), budget)
    assert res.info["dollars_strategy"] == "audit"
    after = res.annotations[res.annotations["phase"] != "calibration"]
    assert set(after["annotator"]) <= {"gold", "c"}
    assert res.labels["output"].notna().all() and res.cost <= budget.limit + 1e-9


def test_audit_never_picks_a_dead_cheapest_endpoint():
    ds = make_dataset(300, acc=(0.30, 0.34, 0.36))

    class CheapDead(RecordedSource):
        def is_available(self, annotator: str) -> bool:
            return annotator != "llm0"

    res = QuorumRouter().route(problem_for(ds), CheapDead(ds), Budget(0.7 * 300 * 0.1), seed=0)
    after = res.annotations[res.annotations["phase"] != "calibration"]
    assert "llm0" not in set(after["annotator"])
    assert res.info["dollars_strategy"] == "bandit"
    assert res.labels["output"].notna().all()


def test_a_probe_too_small_to_tell_is_skipped_and_its_money_buys_humans():
    ds = make_dataset(300, acc=(0.30, 0.34, 0.36))
    res, budget = run(ds, frac=0.7)  # a probe of ~11 items, below probe_min = 40
    probed, _ = run(ds, frac=0.7, probe_min=0)
    assert res.info["panel_check"].startswith("skipped")
    assert res.info["dollars_strategy"] == "audit" and res.info["n_calibration"] == 0
    assert "panel_check" not in probed.info and probed.info["n_calibration"] > 0
    # no item got every LLM's answer: only the cheapest LLM and the human were asked
    assert set(res.annotations["annotator"]) == {"gold", "llm0"}
    assert (res.annotations["phase"] != "calibration").all()
    assert res.human_labels > probed.human_labels
    assert res.cost <= budget.limit + 1e-9 and res.labels["output"].notna().all()


def _summaries(n: int = 120):
    from baselines_fakes import make_dataset as make_fake

    rng = np.random.default_rng(0)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"]
    refs = [" ".join(rng.choice(words, 5)) for _ in range(n)]
    outs = {a: [" ".join(rng.choice(words, 5)) for _ in range(n)] for a in ("c", "m", "s")}
    return make_fake(refs, outs, {"c": 0.01, "m": 0.03, "s": 0.05}, summarization=True)


@pytest.mark.parametrize("setting", ["auditor", "dollars"])
def test_summaries_audit_a_random_sample_without_asking_the_llm_there(setting):
    from baselines_fakes import auditor_budget, source_of
    from baselines_fakes import make_problem as make_fake_problem

    ds, n_h = _summaries(), 48
    prob = make_fake_problem(ds, setting, human_budget=n_h if setting == "auditor" else None)

    def route(seed: int = 0, **params):
        router, src = QuorumRouter(**params), source_of(ds, True)
        if setting == "auditor":
            budget = auditor_budget(prob, router, src, n_h)
        else:  # money for n_h humans instead of the cheapest LLM, and the LLM on the rest
            budget = Budget(n_h * 0.1 + (ds.n_items - n_h) * 0.01)
        return router.route(prob, src, budget, seed=seed)

    res = route()
    per_item = res.annotations.groupby("item_id")["annotator"].agg(set)
    assert (per_item.map(len) == 1).all() and len(per_item) == ds.n_items
    assert res.human_labels == n_h and res.llm_calls == ds.n_items - n_h
    assert set(res.annotations["annotator"]) == {"gold", "c"}
    assert res.info["auditor_order"] == "random (summary_audit)"
    again = route(seed=1)
    assert again.human_labels == n_h
    humans = set(res.labels.loc[res.labels["human"], "item_id"])
    assert humans != set(again.labels.loc[again.labels["human"], "item_id"])
    cal = route(summary_audit="calibrated", probe_min=0).annotations
    assert (cal["phase"] == "calibration").any()


@pytest.mark.parametrize("setting", ["auditor", "dollars"])
def test_summaries_audit_the_longest_sources_first(setting):
    from baselines_fakes import auditor_budget, source_of
    from baselines_fakes import make_problem as make_fake_problem

    ds, n_h = _summaries(), 30
    prob = make_fake_problem(ds, setting, human_budget=n_h if setting == "auditor" else None)
    lengths = np.random.default_rng(3).permutation(ds.n_items) * 10 + 50
    prob.text_lengths = lengths

    def route(seed: int = 0, **params):
        router, src = QuorumRouter(**params), source_of(ds, True)
        if setting == "auditor":
            budget = auditor_budget(prob, router, src, n_h)
        else:
            budget = Budget(n_h * 0.1 + (ds.n_items - n_h) * 0.01)
        return router.route(prob, src, budget, seed=seed)

    res = route(summary_audit="longest")
    assert res.info["auditor_order"] == "longest sources first (summary_audit)"
    longest = set(prob.item_ids[np.argsort(-lengths)[:n_h]])
    humans = set(res.labels.loc[res.labels["human"], "item_id"])
    assert humans == longest and res.human_labels == n_h
    # "random" (the default) keeps the random sample
    rnd = route()
    assert set(rnd.labels.loc[rnd.labels["human"], "item_id"]) != longest
    # without the texts' lengths (a problem built by hand) the order stays random
    prob.text_lengths = None
    assert route(summary_audit="longest").info["auditor_order"] == "random (summary_audit)"


def _route_summaries(ds, prob, setting: str, n_h: int, seed: int = 0, **params):
    """QUORUM on the planted summaries: the auditor setting at ``n_h`` humans, or dollars
    with the money for ``n_h`` humans (c_H = 0.1) and the LLM (0.01) on the rest."""
    from baselines_fakes import auditor_budget, source_of

    router, src = QuorumRouter(**params), source_of(ds, True)
    if setting == "auditor":
        budget = auditor_budget(prob, router, src, n_h)
    else:
        budget = Budget(n_h * 0.1 + (ds.n_items - n_h) * 0.01)
    return router.route(prob, src, budget, seed=seed), budget


@pytest.mark.parametrize("setting", ["auditor", "dollars"])
def test_summaries_audit_by_the_sources_lead(setting):
    """summary_audit="lead": in the auditor setting the cheapest LLM summarises every item,
    then the humans go to the summaries least like their source's first three sentences;
    in the dollars audit (no summary bought first) to the sources whose lead is least like
    the rest of them (in the auditor setting too, here equal). Planted: ``far`` items,
    whose lead shares no word with the LLM's summary (auditor) or with the rest of the
    source (dollars)."""
    from baselines_fakes import make_problem as make_fake_problem

    ds, n_h = _summaries(), 30
    prob = make_fake_problem(ds, setting, human_budget=n_h if setting == "auditor" else None)
    ann = ds.annotations
    cheap = ann[ann["annotator"] == "c"].set_index("item_id")["output"]
    far = set(np.random.default_rng(5).choice(prob.item_ids, n_h, replace=False).tolist())
    rest = "One two three. Four five six."
    texts = []
    for i in prob.item_ids:
        if setting == "auditor":
            first = "Zulu yankee xray." if i in far else cheap[i].capitalize() + "."
            texts.append(f"{first} Second. Third. {rest}")  # every lead apart from its rest
        else:
            lead = "Zulu yankee. Xray whiskey. Victor tango." if i in far else rest + " One six."
            texts.append(f"{lead} {rest}")
    prob.texts = texts

    def route(seed: int = 0, **params):
        return _route_summaries(ds, prob, setting, n_h, seed, **params)

    res, budget = route(summary_audit="lead")
    humans = set(res.labels.loc[res.labels["human"], "item_id"])
    assert humans == far and res.human_labels == n_h
    assert res.cost <= budget.limit + 1e-9
    human_rows = res.labels[res.labels["human"]]
    refs = ds.items.set_index("item_id")["reference"]
    assert (human_rows["output"].to_numpy() == refs[human_rows["item_id"]].to_numpy()).all()
    if setting == "auditor":  # the LLM on every item first: B c_H + T c_min, the limit
        assert res.info["auditor_order"].startswith("summaries least like the source's lead")
        assert res.llm_calls == ds.n_items
        assert res.cost == pytest.approx(n_h * 0.1 + ds.n_items * 0.01)
    else:  # no LLM answer where a human summarises: Random's spend
        assert res.info["auditor_order"].startswith("sources whose lead stands least")
        assert res.llm_calls == ds.n_items - n_h
    # without the texts (a problem built by hand) the order stays random, the LLM unasked
    prob.texts = None
    plain, _ = route(summary_audit="lead")
    assert plain.info["auditor_order"] == "random (summary_audit)"
    assert plain.llm_calls == ds.n_items - n_h


_FREE_ORDER_REPORT = {
    "central": "sources whose lead stands least",
    "focused": "least focused sources first",
}


@pytest.mark.parametrize("mode", ["central", "focused"])
@pytest.mark.parametrize("setting", ["auditor", "dollars"])
def test_summaries_audit_the_sources_whose_lead_stands_least_for_the_rest(setting, mode):
    """summary_audit="central" / "focused": in both settings the humans go to the sources
    whose first three sentences are least like the rest (for "focused" also: whose lead
    misses the salient words, which are spread over few sentences, repeat little and are
    seldom names), and no LLM is asked where a human summarises (Random's spend: n_h c_H +
    (T - n_h) c_min). Planted: ``far`` items, whose lead shares no word with the rest of
    the source and whose words each occur once."""
    from baselines_fakes import make_problem as make_fake_problem
    from baselines_fakes import source_of

    ds, n_h = _summaries(), 30
    prob = make_fake_problem(ds, setting, human_budget=n_h if setting == "auditor" else None)
    far = set(np.random.default_rng(6).choice(prob.item_ids, n_h, replace=False).tolist())
    rest = "One two three. Four five six."
    prob.texts = [
        ("Zulu yankee. Xray whiskey. Victor tango." if i in far else rest + " One six.")
        + " "
        + rest
        for i in prob.item_ids
    ]

    def route(seed: int = 0, **params):
        return _route_summaries(ds, prob, setting, n_h, seed, **params)

    for seed in (0, 1):
        res, budget = route(seed, summary_audit=mode)
        humans = set(res.labels.loc[res.labels["human"], "item_id"])
        assert humans == far and res.human_labels == n_h
        assert res.info["auditor_order"].startswith(_FREE_ORDER_REPORT[mode])
        assert res.llm_calls == ds.n_items - n_h
        assert res.cost == pytest.approx(n_h * 0.1 + (ds.n_items - n_h) * 0.01)
        assert res.cost <= budget.limit + 1e-9
        humans_rows = res.annotations[res.annotations["annotator"] == "gold"]
        assert set(humans_rows["item_id"]) == far
    if setting == "dollars":  # money for the LLM on half the items: the central ones first
        router, src = QuorumRouter(summary_audit=mode), source_of(ds, True)
        short = router.route(prob, src, Budget(ds.n_items * 0.01 / 2), seed=0)
        assert short.human_labels == 0 and short.llm_calls == ds.n_items // 2
        assert not far & set(short.annotations["item_id"])
    # without the texts (a problem built by hand) the order stays random
    prob.texts = None
    plain, _ = route(summary_audit=mode)
    assert plain.info["auditor_order"] == "random (summary_audit)"
    assert set(plain.labels.loc[plain.labels["human"], "item_id"]) != far


def test_the_probe_is_a_random_sample_unless_asked_for_the_uncertainty_order():
    ds = make_dataset(300, acc=(0.30, 0.34, 0.36))

    def probe(seed, **params):
        res, _ = run(ds, frac=0.7, seed=seed, probe_min=0, **params)
        cal = res.annotations[res.annotations["phase"] == "calibration"]
        assert len(cal) and res.info["n_calibration"] == cal["item_id"].nunique()
        return set(cal["item_id"])

    assert probe(0) != probe(1)  # a fresh random sample per seed
    assert probe(0, probe_order="uncertainty") == probe(1, probe_order="uncertainty")
    with pytest.raises(ValueError, match="probe_order"):
        QuorumRouter(probe_order="first")


@pytest.mark.realdata
def test_summary_lead_audit_on_recorded_summaries(shared_data_dir):
    """``summary_audit="lead"`` as ``quorum simulate`` runs it, on SummEval's recorded
    summaries: the auditor setting buys the cheapest LLM everywhere (B c_H + T c_min) and
    gives the humans summaries further from their source's lead than the rest; the dollars
    audit asks no LLM where a human summarises. Mechanics only, no quality."""
    from quorum.routing.quorum.audit.one_shot import lead_sentences
    from quorum.simulate import prepare, simulate_once
    from quorum.tasks.summarization import rouge1_scorer

    prep = prepare("summ-summeval")
    T, B = prep.dataset.n_items, round(0.3 * prep.dataset.n_items)
    c_min = min(a.price for a in prep.task.llms)
    row, res = simulate_once(prep, "quorum", "auditor", 0.3, 0, {"summary_audit": "lead"})
    assert res.info["auditor_order"].startswith("summaries least like the source's lead")
    assert res.human_labels == B and res.llm_calls == T
    assert res.cost == pytest.approx(B * prep.task.human_price + T * c_min)
    cheap = min(prep.task.llms, key=lambda a: a.price).name
    ann = res.annotations[res.annotations["annotator"] == cheap].set_index("item_id")["output"]
    texts = prep.dataset.items.set_index("item_id")["text"]
    score = rouge1_scorer("en")
    overlap = pd.Series({i: score(s, lead_sentences(texts[i], 3)[0]) for i, s in ann.items()})
    human = res.labels.set_index("item_id")["human"]
    assert overlap[human[human].index].mean() < overlap[human[~human].index].mean()
    # quality checks off: their spot checks add a human on an LLM summary or the reverse
    params = {"summary_audit": "lead", "quality": False}
    row, res = simulate_once(prep, "quorum", "dollars", 0.3, 0, params)
    assert res.info["auditor_order"].startswith("sources whose lead stands least")
    assert res.llm_calls == T - res.human_labels and res.cost <= row["budget_limit"] + 1e-9


@pytest.mark.realdata
@pytest.mark.parametrize("mode", ["central", "focused"])
@pytest.mark.parametrize("setting", ["auditor", "dollars"])
def test_summary_central_audit_on_recorded_summaries(shared_data_dir, setting, mode):
    """``summary_audit="central"`` / ``"focused"`` as ``quorum simulate`` runs it, on
    SummEval's recorded summaries: Random's spend in both settings (no LLM where a human
    summarises) and the humans on the sources whose lead is least like the rest (the
    least focused ones). Mechanics only, no quality."""
    from quorum.routing.quorum.audit.source_focus import lead_sentences, source_focus
    from quorum.simulate import prepare, simulate_once
    from quorum.tasks.summarization import rouge1_scorer

    prep = prepare("summ-summeval")
    T = prep.dataset.n_items
    params = {"summary_audit": mode, "quality": False}
    row, res = simulate_once(prep, "quorum", setting, 0.3, 0, params)
    _, rnd = simulate_once(prep, "random", setting, 0.3, 0, {})
    assert res.info["auditor_order"].startswith(_FREE_ORDER_REPORT[mode])
    assert res.human_labels == rnd.human_labels > 0
    assert res.llm_calls == T - res.human_labels
    assert res.cost == pytest.approx(rnd.cost) and res.cost <= row["budget_limit"] + 1e-9
    texts = prep.dataset.items.set_index("item_id")["text"]
    score = rouge1_scorer("en")
    if mode == "central":
        order = pd.Series({i: score(*lead_sentences(t, 3)) for i, t in texts.items()})
    else:
        order = pd.Series(source_focus(texts.tolist(), 3, score), index=texts.index)
    human = res.labels.set_index("item_id")["human"]
    assert order[human[human].index].max() <= order[human[~human].index].min() + 1e-12
    if mode == "central":  # the default order (issue 39): a router told nothing routes so
        _, default = simulate_once(prep, "quorum", setting, 0.3, 0, {"quality": False})
        assert default.info["auditor_order"] == res.info["auditor_order"]
        assert default.labels.equals(res.labels)


@pytest.mark.realdata
@pytest.mark.parametrize("setting", ["auditor", "dollars"])
def test_summary_checked_audit_on_recorded_summaries(shared_data_dir, setting):
    """``summary_audit="checked"`` as ``quorum simulate`` runs it, on SummEval's recorded
    summaries: the check's slice (10 human summaries, ``summary_check_min``) is bought
    first, on random items (another seed, another slice); the focus is followed only where
    the slice's evidence passes, else the humans are exactly those of
    ``summary_audit="random"`` (Random's plan) at the same seed;
    with the default target no LLM is asked where a human summarises (Random's spend),
    with ``summary_check_target="llm"`` the LLM's summaries on the slice are bought and
    paid. Mechanics only, no quality."""
    from quorum.routing.quorum.audit.source_focus import source_focus
    from quorum.simulate import prepare, simulate_once
    from quorum.tasks.summarization import rouge1_scorer

    prep = prepare("summ-summeval")
    T = prep.dataset.n_items
    cheap = min(prep.task.llms, key=lambda a: a.price)
    texts = prep.dataset.items.set_index("item_id")["text"]
    focus = pd.Series(source_focus(texts.tolist(), 3, rouge1_scorer("en")), index=texts.index)

    def route(seed: int = 0, **params):
        params = {"summary_audit": "checked", "quality": False, **params}
        row, res = simulate_once(prep, "quorum", setting, 0.3, seed, params)
        assert res.cost <= row["budget_limit"] + 1e-9
        trace = res.trace
        humans = trace[trace["arm"] == prep.task.human_spec.name]
        check = trace.loc[trace["mode"] == "check", "item_id"]
        return res, humans, check

    _, rnd = simulate_once(prep, "random", setting, 0.3, 0, {})
    trusted, humans, check = route(summary_check_z=-1e9)  # always follows the focus
    assert trusted.info["auditor_order"].startswith("least focused sources first: rho")
    slice_ = set(check)
    assert len(slice_) == len(check) == 10
    assert set(humans["item_id"].iloc[:10]) == slice_  # bought first
    assert trusted.human_labels == rnd.human_labels and trusted.llm_calls == T - rnd.human_labels
    assert trusted.cost == pytest.approx(rnd.cost)
    human = trusted.labels.set_index("item_id")["human"]
    after = human[human].index.difference(list(slice_))
    others = human[~human].index
    assert focus[after].max() <= focus[others].min() + 1e-12
    _, _, check1 = route(seed=1, summary_check_z=-1e9)
    assert set(check1) != slice_  # a random slice, drawn per run
    # the evidence fails: the slice is the same, the other humans in the random order
    fallback, _, check_f = route(summary_check_z=1e9)
    assert fallback.info["auditor_order"].startswith("random: rho")
    assert set(check_f) == slice_ and fallback.cost == pytest.approx(rnd.cost)
    human_f = fallback.labels.set_index("item_id")["human"]
    after_f = human_f[human_f].index.difference(list(slice_))
    assert len(after_f) == len(after) and set(after_f) != set(after)
    assert focus[after_f].max() > focus[human_f[~human_f].index].min()
    # ... and they are those of summary_audit="random" (Random's plan) at the same seed
    random_audit = {"quality": False, "summary_audit": "random"}
    _, plain = simulate_once(prep, "quorum", setting, 0.3, 0, random_audit)
    human_p = plain.labels.set_index("item_id")["human"]
    assert set(human_f[human_f].index) == set(human_p[human_p].index)
    # the LLM's summaries on the slice as the evidence: bought with the slice, and paid
    llm, _, check_l = route(summary_check_target="llm")
    asked = llm.annotations[llm.annotations["annotator"] == cheap.name]["item_id"]
    assert set(check_l) <= set(asked)
    assert llm.llm_calls == T - llm.human_labels + 10
    if setting == "auditor":  # B humans all the same: 10 c_l more than Random
        assert llm.human_labels == rnd.human_labels
        assert llm.cost == pytest.approx(rnd.cost + 10 * cheap.price)
    else:  # the money is Random's: fewer humans where the slice's LLM calls took theirs
        assert llm.human_labels < rnd.human_labels
