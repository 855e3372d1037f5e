"""The live target mode's parts: `[budget] target_quality` validated, the checks' fixed
draw order, the ladder's state in the ledger, and `quorum plan` for a target."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from typer.testing import CliRunner

from live_servers.fixtures import SST2_TASK, sst2_items, write_project
from quorum.cli.main import app
from quorum.errors import ConfigError
from quorum.live.ledger.store import Ledger
from quorum.live.project.config import load_project
from quorum.live.run.plan_target import plan_target
from quorum.live.run.target import LiveChecks, LiveTarget
from quorum.quality.estimators import QualityEstimate
from quorum.routing.core.base import RoutingResult

pytestmark = pytest.mark.realdata


def _project(data_dir, n=60, limit=6.0, method="quorum", **budget) -> dict:
    return {
        "name": "target",
        "method": method,
        "features": "light",
        "items": sst2_items(data_dir, n),
        "task": SST2_TASK,
        "budget": {"limit": limit, **budget},
        "annotators": [
            {"name": "kw", "kind": "model", "model": "live_servers.models:keyword_sentiment",
             "price": 0.001},
            {"name": "team", "kind": "human", "price": 0.05},
        ],
    }  # fmt: skip


@pytest.mark.parametrize(
    ("budget", "words"),
    [
        ({"target_quality": 1.0}, "target_quality"),
        ({"target_quality": 0.0}, "target_quality"),
        ({"target_quality": 0.9, "confidence": 1.0}, "confidence"),
        ({"quality_checks": -0.1}, "quality_checks"),
        ({"quality_checks": "most"}, "quality_checks"),
        ({"quality_width": 0.0}, "quality_width"),
    ],
)
def test_target_fields_are_validated(tmp_path, shared_data_dir, budget, words) -> None:
    path = write_project(tmp_path, _project(shared_data_dir, **budget))
    with pytest.raises(ConfigError, match=words):
        load_project(path)


def test_checks_are_on_by_default_and_can_be_turned_off(tmp_path, shared_data_dir) -> None:
    on = load_project(write_project(tmp_path / "a", _project(shared_data_dir))).budget
    assert on.quality_checks == "auto" and on.checks_on and on.level == 0.95
    assert (on.quality_width, on.quality_max_share) == (0.45, 0.5)
    off = load_project(
        write_project(tmp_path / "b", _project(shared_data_dir, quality_checks=0))
    ).budget
    assert not off.checks_on
    tq = load_project(
        write_project(tmp_path / "c", _project(shared_data_dir, target_quality=0.9))
    ).budget
    assert tq.checks_on and tq.level == 0.9  # a target's confidence defaults to 0.9


def test_fixed_order_keeps_the_checks_when_the_machine_set_changes() -> None:
    checks = LiveChecks(share=0.1)
    items = [f"i{k}" for k in range(200)]
    first = [items[p] for p in checks.draw_order(items, seed=3)[:10]]
    # a later pass: 20 other items went to humans, the rest are machine-labelled again
    gone = set(items[::10])
    rest = [i for i in items if i not in gone]
    again = [rest[p] for p in checks.draw_order(rest, seed=3)[:10]]
    assert [i for i in first if i not in gone] == again[: len([i for i in first if i not in gone])]
    # the order is a random one (not the items' order), and another seed gives another
    assert first != items[:10]
    assert first != [items[p] for p in checks.draw_order(items, seed=4)[:10]]
    # each item is equally likely to be drawn first: a uniform order over seeds
    firsts = [checks.draw_order(items[:4], seed=s)[0] for s in range(4000)]
    assert np.bincount(firsts, minlength=4).min() > 850


def _result(low: float, est: float = 0.9) -> RoutingResult:
    q = QualityEstimate(est, low, min(1.0, est + 0.05), 0.95, 100, 10, 20, 90, "clt").row()
    return RoutingResult("quorum", "dollars", 0, None, None, 4.0, 0.0, 0, 0, info={"quality": q})


@contextmanager
def _target_project(tmp_path, data_dir, target_quality: float) -> Iterator[tuple]:
    """A live project with a quality target (limit 4.0) and its open ledger."""
    cfg = load_project(
        write_project(tmp_path, _project(data_dir, target_quality=target_quality, limit=4.0))
    )
    led = Ledger(cfg.ledger_path)
    try:
        yield cfg, led
    finally:
        led.close()


def test_ladder_climbs_stops_and_is_kept_in_the_ledger(tmp_path, shared_data_dir) -> None:
    with _target_project(tmp_path, shared_data_dir, 0.8) as (cfg, led):
        t = LiveTarget.of(cfg, led)
        assert t is not None and t.share == 0.25 and t.step == 0
        assert t.rule.look_confidence() == pytest.approx(1 - 2 * 0.1 / 4)
        assert t.look(_result(0.70), spent=1.0)  # below: climb
        assert t.step == 1 and t.state == "climbing"
        t.save(led)
        again = LiveTarget.of(cfg, led)  # a resumed run goes on at the rung it reached
        assert again.step == 1 and len(again.looks) == 1
        assert not again.look(_result(0.82), spent=1.9)  # reached: stop
        assert again.state == "reached" and again.row()["saved"] == pytest.approx(2.1)
        assert "reached" in again.message and "look 2 of 4" in again.message
        # a different target starts a new ladder
        other = cfg.model_copy(deep=True)
        other.budget.target_quality = 0.85
        assert LiveTarget.of(other, led).step == 0


def test_not_reached_says_what_more_it_would_take(tmp_path, shared_data_dir) -> None:
    with _target_project(tmp_path, shared_data_dir, 0.95) as (cfg, led):
        t = LiveTarget.of(cfg, led)
        for k, low in enumerate((0.60, 0.70, 0.75)):
            assert t.look(_result(low), spent=1.0 * (k + 1))
        assert not t.look(_result(0.80), spent=4.0)
    assert t.state == "not_reached" and not t.row()["reached"]
    # the lower bound rose 0.05 for 1.0 over the last look: 0.15 more needs about 3.0
    assert t.more_money == pytest.approx(3.0)
    assert "not reached" in t.message and "about 3 more money" in t.message


def test_plan_for_a_target(tmp_path, shared_data_dir) -> None:
    path = write_project(tmp_path, _project(shared_data_dir, n=80, limit=8.0))
    cfg = load_project(path)
    easy = plan_target(cfg, target=0.6, runs=2, llm_accuracy=0.85)
    small = cfg.model_copy(deep=True)
    small.budget.limit = 1.5
    hard = plan_target(small, target=0.97, runs=2, llm_accuracy=0.6)
    assert easy.reached == 2 and max(easy.spent) < 8.0  # stopped early
    assert hard.reached == 0 and hard.looks == [4, 4]  # climbed the whole ladder
    assert all(s <= 8.0 + 1e-9 for s in easy.spent) and all(s <= 1.5 + 1e-9 for s in hard.spent)
    assert "did not reach it" in "\n".join(hard.lines())
    assert any("assumed right 0.85" in b for b in easy.based_on)
    assert "no recorded answers" in " ".join(easy.based_on)
    res = CliRunner().invoke(
        app, ["plan", str(path), "--target-quality", "0.6", "--runs", "2", "--json"]
    )
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)["target"]
    assert got["target"] == 0.6 and got["runs"] == 2 and len(got["spent"]) == 2
    res = CliRunner().invoke(app, ["plan", str(path), "--target-quality", "1.0"])
    assert res.exit_code == 2 and "target quality" in res.output


def _gold_project(data_dir, limit: float, target: float | None, gold: bool = True) -> dict:
    """The keyword models with the gold column as the human (answering at once)."""
    items = sst2_items(data_dir, 100)
    if not gold:
        items["gold_column"] = None
    budget = {"limit": limit} | ({"target_quality": target} if target is not None else {})
    return {
        "name": "gold-target", "method": "quorum", "features": "light", "items": items,
        "task": SST2_TASK, "budget": budget, "human_price": 0.05,
        "annotators": [
            {"name": "kw", "kind": "model", "price": 0.001,
             "model": "live_servers.models:keyword_sentiment"},
            {"name": "kw2", "kind": "model", "price": 0.002,
             "model": "live_servers.models:named_sentiment"},
        ],
    }  # fmt: skip


def test_target_stops_early_and_a_rerun_spends_nothing(tmp_path, shared_data_dir) -> None:
    from quorum.live.outputs.status import status
    from quorum.live.run.runner import annotate

    cfg = load_project(write_project(tmp_path, _gold_project(shared_data_dir, 4.0, 0.7)))
    s = annotate(cfg, quiet=True)
    t = s.target
    assert s.status == "finished" and t["state"] == "reached" and t["lower_bound"] >= 0.7
    assert t["looks"] == len(t["steps"]) and t["steps"][-1]["low"] >= 0.7
    assert all(x["low"] < 0.7 for x in t["steps"][:-1])  # it climbed while below
    assert s.quality["quality_low"] == t["lower_bound"] and s.spent <= 4.0
    st = status(cfg)
    assert st["target"]["state"] == "reached" and st["target"]["steps"] == t["steps"]
    calls = len(_calls(cfg))
    again = annotate(cfg, quiet=True)  # a stopped run stays stopped: nothing new is paid
    assert again.target["steps"] == t["steps"] and len(_calls(cfg)) == calls
    assert again.quality == s.quality


def test_checks_off_and_a_target_without_people(tmp_path, shared_data_dir) -> None:
    from quorum.live.run.runner import annotate

    data = _gold_project(shared_data_dir, 4.0, None)
    data["budget"]["quality_checks"] = 0
    s = annotate(load_project(write_project(tmp_path / "off", data)), quiet=True)
    assert s.status == "finished" and s.quality is None and s.target is None
    on = annotate(
        load_project(write_project(tmp_path / "on", _gold_project(shared_data_dir, 4.0, None))),
        quiet=True,
    )
    assert on.quality is not None and on.quality["quality_n_checks"] >= 1  # on by default
    # a project always has people to check (a human annotator, or the gold column)
    path = write_project(tmp_path / "none", _gold_project(shared_data_dir, 4.0, 0.8, gold=False))
    res = CliRunner().invoke(app, ["annotate", str(path), "-q"])
    assert res.exit_code == 2 and "kind = 'human'" in res.output


def _calls(cfg):
    import sqlite3

    con = sqlite3.connect(cfg.ledger_path)
    try:
        return con.execute("SELECT call_id FROM calls").fetchall()
    finally:
        con.close()
