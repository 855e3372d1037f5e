"""QUORUM buys its random quality checks by default in replay (simulate, the library face,
the bench); the baselines do not; ``quality = false`` / ``--no-quality`` turn them off, and
the off run is the router alone, bit for bit (docs/quality.md)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

import quorum
import quorum.simulate as sim
from quorum.methods import make_router
from quorum.quality.checks import QualityChecks, checks_by_default
from test_quality import prepared


def _same_result(a, b) -> None:
    pd.testing.assert_frame_equal(a.labels, b.labels)
    pd.testing.assert_frame_equal(a.annotations, b.annotations)
    assert a.cost == b.cost


def test_simulate_once_checks_quorum_by_default_and_not_the_baselines():
    prep = prepared(300, seed=4)
    row, res = sim.simulate_once(prep, "quorum", "auditor", 0.3, 0)
    assert row["quality_n_checks"] > 0
    assert row["quality_low"] <= row["quality_estimate"] <= row["quality_high"]
    assert res.info["quality"]["quality_estimate"] == row["quality_estimate"]
    for method in ("random", "quorum-paper", "cdi"):
        row, res = sim.simulate_once(prep, method, "auditor", 0.3, 0)
        assert row["quality_estimate"] is None and row["quality_high"] is None, method
        assert "quality" not in res.info
    assert checks_by_default("quorum") and not checks_by_default("quorum-paper")


@pytest.mark.parametrize("setting", ["auditor", "dollars"])
def test_quality_false_is_the_router_alone(setting):
    prep = prepared(300, seed=4)
    row, res = sim.simulate_once(prep, "quorum", setting, 0.5, 1, {"quality": False})
    assert row["quality_estimate"] is None and row["quality_low"] is None
    router = make_router("quorum")
    problem, budget = sim.make_problem(prep, setting, 0.5, router)
    _same_result(res, router.route(problem, prep.source, budget, seed=1))
    # and the default is the same router on the budget less the checks' money
    row_on, on = sim.simulate_once(prep, "quorum", setting, 0.5, 1)
    router = make_router("quorum")
    problem, budget = sim.make_problem(prep, setting, 0.5, router)  # a fresh budget
    want, _ = QualityChecks().route(router, problem, prep.source, budget, 1)
    _same_result(on, want)
    assert row_on["cost"] <= row_on["budget_limit"] + 1e-9
    assert on.budget_limit == pytest.approx(row_on["budget_limit"])  # the whole budget


def test_quality_params_are_validated():
    prep = prepared(100)
    with pytest.raises(ValueError, match="quality must be true or false"):
        sim.simulate_once(prep, "quorum", "auditor", 0.3, 0, {"quality": "no"})
    with pytest.raises(ValueError, match="turns the checks off"):
        sim.simulate_once(
            prep, "quorum", "auditor", 0.3, 0, {"quality": False, "quality_share": 0.1}
        )
    row, _ = sim.simulate_once(prep, "random", "auditor", 0.3, 0, {"quality": True})
    assert row["quality_estimate"] is not None  # a baseline's checks: asked for


def test_library_replay_default_and_off():
    prep = prepared(200, seed=2)
    ann = prep.dataset.annotations
    items = prep.dataset.items[["item_id", "text", "gold"]]
    kw = {"prices": {"good": 0.02, "weak": 0.01, "gold": 0.1}, "human": "gold", "items": items}
    kw |= {"budget": 0.4, "features": "light", "seed": 3}
    on = quorum.replay(ann, **kw)
    assert on.info["quality"]["quality_n_checks"] > 0
    off = quorum.replay(ann, quality=False, **kw)
    assert "quality" not in off.info
    base = quorum.replay(ann, router="random", **kw)
    assert "quality" not in base.info
    inst = quorum.replay(ann, router=make_router("quorum"), **kw)  # an instance: QUORUM too
    _same_result(inst, on)
    assert quorum.replay(ann, router="random", confidence=0.8, **kw).info["quality"][
        "quality_confidence"
    ] == pytest.approx(0.8)
    with pytest.raises(ValueError, match="drop quality=False"):
        quorum.replay(ann, quality=False, target_quality=0.5, **kw)


# -------------------------------------------------------------------------- CLI
def test_simulate_no_quality_flag(shared_data_dir):
    from quorum.cli.main import app

    base = ["simulate", "-d", "llms-for-css/flute", "--setting", "auditor", "--budget", "0.3"]

    def row(*extra: str) -> dict:
        res = CliRunner().invoke(app, [*base, "--json", *extra])
        assert res.exit_code == 0, res.output
        return json.loads(res.output.strip().splitlines()[-1])

    assert row()["quality_n_checks"] > 0  # quorum, the default method: checked
    off = row("--no-quality")
    assert {off[k] for k in ("quality_estimate", "quality_low", "quality_high")} == {None}
    assert row("--method", "random")["quality_estimate"] is None
    assert row("--method", "random", "--quality")["quality_estimate"] is not None
    assert row("-p", "quality=false")["quality_estimate"] is None
    res = CliRunner().invoke(app, [*base, "--no-quality", "--target-quality", "0.5"])
    assert res.exit_code == 1 and "--no-quality" in res.output


# ------------------------------------------------------------------------- bench
BENCH = {
    "main": {
        "datasets": ["llms-for-css/flute"],
        "methods": ["quorum", "random"],
        "seeds": 1,
        "budgets": [0.3],
        "settings": ["auditor"],
    }
}


def _runs(params: dict | None = None) -> dict:
    from quorum.bench.config import parse_config
    from quorum.bench.plan import build_plan

    cfg = parse_config({**BENCH, "params": params or {}})
    return {s.method: s for s in build_plan(cfg).runs["main"]}


def test_bench_quorum_runs_are_checked_under_a_new_key(shared_data_dir):
    from quorum.bench.cache import digest

    default, off = _runs(), _runs({"quorum": {"quality": False}})
    q = default["quorum"]
    assert q.quality_checks and q.payload()["quality_checks"] is True
    # the key a run without the checks had before: the same payload without that entry
    old = digest({k: v for k, v in q.payload().items() if k != "quality_checks"})
    assert q.key != old
    assert off["quorum"].params == (("quality", False),) and not off["quorum"].quality_checks
    assert len({q.key, old, off["quorum"].key}) == 3
    # the baselines: unchanged payload, same key with or without QUORUM's switch
    assert not default["random"].quality_checks
    assert "quality_checks" not in default["random"].payload()
    assert default["random"].key == off["random"].key
    # quality = true for quorum is its default: the same run; for a baseline, a new one
    assert _runs({"quorum": {"quality": True}})["quorum"].key == q.key
    on_random = _runs({"random": {"quality": True}})["random"]
    assert on_random.quality_checks and on_random.key != default["random"].key


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"quality": "off"}, "quality must be true or false"),
        ({"quality": False, "quality_share": 0.05}, "turns the checks off"),
        ({"quality_shar": 0.05}, "unknown quality check parameter"),
    ],
)
def test_bench_quality_params_are_validated(shared_data_dir, params, match):
    from quorum.bench.config import parse_config
    from quorum.errors import QuorumError

    with pytest.raises(QuorumError, match=match):
        parse_config({**BENCH, "params": {"quorum": params}})


def test_bench_rows_carry_the_estimate_for_quorum_only(shared_data_dir):
    from quorum.bench.worker import run_one

    default, off = _runs(), _runs({"quorum": {"quality": False}})
    rows = {
        name: run_one(spec, None)
        for name, spec in (
            ("quorum", default["quorum"]),
            ("off", off["quorum"]),
            ("random", default["random"]),
        )
    }
    assert all(r["status"] == "ok" for r in rows.values()), rows
    assert rows["quorum"]["quality_n_checks"] > 0
    assert rows["quorum"]["quality_low"] <= rows["quorum"]["quality_high"]
    for name in ("off", "random"):
        assert "quality_estimate" in rows[name] and rows[name]["quality_estimate"] is None
    assert rows["off"]["human_labels"] != rows["quorum"]["human_labels"] or (
        rows["off"]["accuracy"] != rows["quorum"]["accuracy"]
    )
