"""The quality estimate (docs/quality.md): the estimators on a synthetic population with
known truth, the random checks wrapped around a router, the simulate flags and row fields,
and the target mode's stop."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import quorum.simulate as sim
from quorum.data.schema import AnnotatorSpec, Dataset, TaskSpec
from quorum.methods import make_router
from quorum.quality.checks import QualityChecks
from quorum.quality.estimators import (
    betting_mean_interval,
    clt_mean_interval,
    estimate_from,
    ppi_estimate,
)
from quorum.quality.target import TargetQuality
from quorum.routing.core.replay import RecordedSource


# --------------------------------------------------------------------- estimators
def _population(N: int = 3000, seed: int = 0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.4, 1.0, N)
    c = (rng.random(N) < p).astype(float)
    f = np.clip(p + 0.15, 0, 1)  # biased predictions: PPI must correct them
    return c, f


@pytest.mark.parametrize("interval, reps, floor", [("clt", 600, 0.92), ("betting", 200, 0.95)])
def test_ppi_is_unbiased_and_covers_on_known_truth(interval, reps, floor):
    c, f = _population()
    N, T, known = len(c), len(c) + 500, 400.0  # 500 known items, 400 of them right
    n = 60
    rng = np.random.default_rng(1)
    ests, cover = [], 0
    for _ in range(reps):
        s = rng.permutation(N)[:n]
        e = ppi_estimate(known, T, f, s, c[s], confidence=0.95, interval=interval)
        truth = (known + n + c.sum() - c[s].sum()) / T  # checked items become right
        ests.append(e.estimate - truth)
        cover += e.low <= truth <= e.high
    assert abs(np.mean(ests)) < 0.003  # unbiased (the truth moves with the sample)
    assert cover / reps >= floor
    # the predictions alone are biased by +0.15 on the machine-labelled share
    assert (known + f.sum()) / T - (known + c.sum()) / T > 0.1


def test_small_samples_and_censuses():
    lo, hi = clt_mean_interval(np.array([0.2, 0.2, 0.2]), 1000, 0.95)
    assert hi - lo > 0.3  # no zero-width interval from three equal values
    assert clt_mean_interval(np.array([0.0, 1.0]), 2, 0.95) == (0.5, 0.5)
    lo, hi = betting_mean_interval(np.ones(5), 10, 0.95)
    assert lo >= 0.5 - 1e-9 and hi == 1.0  # half the population seen: the mean is >= 0.5
    e = ppi_estimate(3.0, 10, np.full(7, 0.5), np.arange(0), np.zeros(0))
    assert (e.low, e.high) == (0.3, 1.0)  # no check: every score M could have


# ------------------------------------------------------------------ replay checks
def prepared(n: int = 300, seed: int = 0) -> sim.Prepared:
    """Two LLMs (90 % and 60 % right) on n two-label items, gold humans."""
    rng = np.random.default_rng(seed)
    task = TaskSpec(
        name="synthetic",
        type="classification",
        labels=["a", "b"],
        annotators=[AnnotatorSpec(name="good", price=0.02), AnnotatorSpec(name="weak", price=0.01)],
        human_price=0.1,
    )
    ids = [f"i{k}" for k in range(n)]
    gold = rng.choice(["a", "b"], n)
    flip = {"a": "b", "b": "a"}
    rows = []
    for llm, acc in (("good", 0.9), ("weak", 0.6)):
        for i, g in zip(ids, gold, strict=True):
            rows.append((i, llm, g if rng.random() < acc else flip[g]))
    ann = pd.DataFrame(rows, columns=["item_id", "annotator", "output"])
    items = pd.DataFrame({"item_id": ids, "text": ids, "gold": gold})
    ds = Dataset(task, items, ann)
    phi = rng.normal(size=(n, 4))
    return sim.Prepared(ds, task, phi, None, RecordedSource(ds))


def test_checks_come_from_the_money_above_a_first_label_for_every_item():
    prep = prepared(300)  # c_H = 0.1, cheapest LLM 0.01: the floor is 3.0
    checks = QualityChecks(share=0.1, min_checks=10, max_share=0.2)
    problem, budget = sim.make_problem(prep, "dollars", 0.1, None)  # 3.0: the floor itself
    assert checks.n_checks(problem, budget, 0.1) == 0
    problem, budget = sim.make_problem(prep, "dollars", 0.5, None)  # 15: 120 labels above
    assert checks.n_checks(problem, budget, 0.1) == 12
    problem, budget = sim.make_problem(prep, "auditor", 0.3, None)  # B = 90
    assert checks.n_checks(problem, budget, 0.1) == 10  # min_checks (under 20 % of 90)


def test_checks_stay_in_budget_and_label_what_they_check():
    prep = prepared()
    router = make_router("random")
    problem, budget = sim.make_problem(prep, "dollars", 0.4, router)
    res, est = QualityChecks(share=0.2, max_share=0.2).route(
        router, problem, prep.source, budget, seed=3
    )
    assert res.cost <= budget.limit + 1e-9
    assert est.n_checks >= 0.2 * 40 * 0.8 and est.low <= est.estimate <= est.high
    checked = res.info["quality_checks"]["item_id"]
    gold = prep.dataset.items.set_index("item_id")["gold"]
    final = res.labels.set_index("item_id")["output"]
    assert all(final[i] == gold[i] for i in checked)  # a checked item takes its human label
    calls = res.annotations.loc[res.annotations["phase"] == "quality_check"]
    assert len(calls) == est.n_checks and set(calls["item_id"]) == set(checked)
    # the same checks at another level: a wider 99 % interval around the same estimate
    wide = estimate_from(res.info["quality_inputs"], 0.99)
    assert wide.estimate == est.estimate and wide.high - wide.low > est.high - est.low


def test_checking_every_machine_label_gives_the_exact_quality():
    prep = prepared(120)
    router = make_router("random")
    problem, budget = sim.make_problem(prep, "dollars", 1.2, router)
    res, est = QualityChecks(share=1.0, max_share=1.0).route(
        router, problem, prep.source, budget, seed=0
    )
    truth = sim.score(prep, res)["accuracy"]
    assert est.n_checks == est.n_sampled_from > 0
    assert est.low == pytest.approx(truth) and est.high == pytest.approx(truth)


def test_interval_covers_gold_over_seeds():
    """Mechanics end to end: QUORUM with checks on the synthetic set, 95 % intervals."""
    prep = prepared(300, seed=5)
    hits, n = 0, 25
    for seed in range(n):
        row, _ = sim.simulate_once(
            prep, "quorum", "auditor", 0.3, seed, {"quality_share": 0.2, "quality_max_share": 0.2}
        )
        hits += row["quality_low"] - 1e-9 <= row["accuracy"] <= row["quality_high"] + 1e-9
    assert hits >= n - 3


def test_rows_carry_the_quality_fields_only_values_when_asked():
    prep = prepared()
    row, _ = sim.simulate_once(prep, "random", "dollars", 0.3, 0)
    assert row["quality_estimate"] is None and row["quality_low"] is None
    row, _ = sim.simulate_once(prep, "random", "dollars", 0.3, 0, {"quality_share": 0.1})
    assert 0 <= row["quality_low"] <= row["quality_estimate"] <= row["quality_high"] <= 1
    assert row["quality_n_checks"] > 0 and row["quality_confidence"] == 0.95
    with pytest.raises(ValueError, match="unknown quality check parameter"):
        sim.simulate_once(prep, "random", "dollars", 0.3, 0, {"quality_nonsense": 1})


# ------------------------------------------------------------------- target mode
def test_target_stops_at_the_first_look_that_reaches_it():
    prep = prepared()
    checks = {"quality_share": 0.3, "quality_max_share": 0.3}
    row, _res = sim.simulate_once(
        prep, "quorum", "dollars", 1.0, 0, checks, target=TargetQuality(0.2)
    )
    assert row["target_reached"] and row["target_looks"] == 1 and row["target_stopped_early"]
    assert row["target_spent"] <= 0.25 * row["target_ceiling"] + 1e-9
    assert row["target_saved"] >= 0.75 * row["target_ceiling"] - 1e-9
    assert row["quality_low"] >= 0.2


def test_target_out_of_reach_spends_at_most_the_ceiling_and_says_so():
    prep = prepared()
    target = TargetQuality(0.999, confidence=0.9, ladder=(0.3, 0.6, 1.0))
    row, res = sim.simulate_once(prep, "quorum", "dollars", 0.5, 1, target=target)
    assert not row["target_reached"] and row["target_looks"] == 3
    assert row["target_spent"] <= row["target_ceiling"] + 1e-9
    assert "not reached" in row["target_message"]
    steps = res.info["target_steps"]
    assert [s["share"] for s in steps] == [0.3, 0.6, 1.0]
    assert all(a["spent"] <= b["spent"] for a, b in itertools.pairwise(steps))
    # a look's lower bound is one-sided at 1 - 0.1 / 3
    assert target.look_confidence() == pytest.approx(1 - 2 * 0.1 / 3)
    # calls paid at a step are handed to the next, never paid twice
    ann = res.annotations
    assert not ann.duplicated(["item_id", "annotator"]).any()


@pytest.mark.parametrize(
    "kwargs",
    [{"target": 1.5}, {"target": 0.9, "confidence": 1.0}, {"target": 0.9, "ladder": (0.5, 0.9)}],
)
def test_bad_targets_are_refused(kwargs):
    with pytest.raises(ValueError):
        TargetQuality(**kwargs)


# -------------------------------------------------------------------------- CLI
def test_simulate_flags(shared_data_dir):
    from quorum.cli.main import app

    base = ["simulate", "-d", "llms-for-css/flute", "--setting", "auditor", "--budget", "0.5"]
    res = CliRunner().invoke(app, [*base, "--json", "--quality", "--confidence", "0.9"])
    assert res.exit_code == 0, res.output
    row = json.loads(res.output.strip().splitlines()[-1])
    assert row["quality_confidence"] == 0.9 and row["quality_n_checks"] > 0
    assert row["quality_low"] <= row["quality_estimate"] <= row["quality_high"]
    res = CliRunner().invoke(app, [*base, "--json", "--target-quality", "0.2"])
    assert res.exit_code == 0, res.output
    row = json.loads(res.output.strip().splitlines()[-1])
    assert row["target_quality"] == 0.2 and row["target_confidence"] == 0.9
    assert 1 <= row["target_looks"] <= 4 and row["target_spent"] <= row["target_ceiling"] + 1e-9
    assert row["target_reached"] == (row["quality_low"] >= 0.2)
    res = CliRunner().invoke(app, [*base, "--target-quality", "0.5", "--confidence", "2"])
    assert res.exit_code == 1 and "--confidence must be in (0, 1)" in res.output


# ------------------------------------------------------------------ library face
def test_library_replay_carries_the_estimate():
    import quorum

    prep = prepared(200, seed=2)
    ann = prep.dataset.annotations
    items = prep.dataset.items[["item_id", "text", "gold"]]
    kw = {"prices": {"good": 0.02, "weak": 0.01, "gold": 0.1}, "human": "gold", "items": items}
    res = quorum.replay(ann, budget=0.4, features="light", router="random", quality=True, **kw)
    q = res.info["quality"]
    assert q["quality_low"] <= q["quality_estimate"] <= q["quality_high"]
    assert res.cost <= 0.4 * 200 * 0.1 + 1e-9
    res = quorum.replay(ann, budget=0.4, features="light", target_quality=0.2, **kw)
    assert res.info["target"]["target_quality"] == 0.2
    assert res.info["target"]["target_spent"] <= 0.4 * 200 * 0.1 + 1e-9


# ------------------------------------------------------------------------- bench
def test_bench_params_turn_the_checks_on(shared_data_dir):
    from quorum.bench.cache import COMMON_CODE
    from quorum.bench.config import parse_config
    from quorum.bench.plan import build_plan
    from quorum.errors import QuorumError

    base = {
        "main": {
            "datasets": ["llms-for-css/flute"],
            "methods": ["quorum"],
            "seeds": 1,
            "budgets": [0.5],
            "settings": ["auditor"],
        }
    }
    k0 = build_plan(parse_config(base)).runs["main"][0]
    on = parse_config({**base, "params": {"quorum": {"quality_share": 0.05}}})
    k1 = build_plan(on).runs["main"][0]
    assert k1.params == (("quality_share", 0.05),) and k1.key != k0.key
    with pytest.raises((QuorumError, ValueError), match="unknown parameter"):
        parse_config({**base, "params": {"quorum": {"nonsense": 1}}})
    assert "quality/*.py" in COMMON_CODE  # a change of quality/ reruns the bench's runs
    from quorum.bench.worker import run_one

    row = run_one(k1, None)
    assert row["status"] == "ok", row.get("error")
    assert row["quality_n_checks"] > 0 and row["quality_low"] <= row["quality_high"]


def test_variance_floor_keeps_a_lucky_sample_from_a_narrow_interval():
    """Issue 38: 16 of 17 live checks right, on labels right 76 % of the time, gave the t
    interval [0.84, 1.0] and missed; with the variance at least the mean f (1 - f) of the
    checks (LiveChecks' variance_floor) the interval covers 0.76. Replay keeps the rule."""
    from quorum.live.run.target import LiveChecks
    from quorum.quality.checks import QualityChecks
    from quorum.quality.estimators import ppi_estimate

    f = np.full(174, 0.6)
    sample = np.arange(17)
    c = np.r_[np.ones(16), 0.0]
    plain = ppi_estimate(0.0, 174, f, sample, c)
    floored = ppi_estimate(0.0, 174, f, sample, c, var_floor=float(np.mean(f * (1 - f))))
    truth = (17 + 157 * 0.76) / 174  # the checked items are relabelled by people
    assert plain.low > truth > floored.low
    assert floored.high >= plain.high and floored.estimate == plain.estimate
    assert not QualityChecks().variance_floor and LiveChecks().variance_floor
