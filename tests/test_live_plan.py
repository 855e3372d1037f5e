"""`quorum plan`: the project's router on its real items against a simulated source."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from live_servers.fixtures import SST2_TASK, sst2_items, write_project
from quorum.cli.main import app
from quorum.live.project.config import load_project
from quorum.live.run.plan import plan

pytestmark = pytest.mark.realdata

N, EVERY = 30, 3


def _project(tmp_path, data_dir, method="live_servers.routers:CascadeRouter", limit=5.0):
    dead = {"api_base": "http://127.0.0.1:9/v1", "api_key_env": "QUORUM_PLAN_TEST_KEY"}
    return write_project(
        tmp_path,
        {
            "name": "plan",
            "method": method,
            "method_params": {"human_every": EVERY, "confidence_every": 0, "second": 1.0}
            if method.endswith("CascadeRouter")
            else {},
            "features": "light",
            "items": sst2_items(data_dir, N),
            "task": SST2_TASK,
            "budget": {"limit": limit},
            "annotators": [
                {"name": "a", "model": "openai/a", "price": 0.002, **dead},
                {"name": "b", "model": "openai/b", **dead,
                 "input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6},
                {"name": "team", "kind": "human", "price": 0.05},
            ],
            "humans": {"backend": "labelstudio", "seconds_per_label": 45,
                       "labels_per_item": 2},
        },
    )  # fmt: skip


def test_plan_counts_follow_the_router(tmp_path, shared_data_dir, monkeypatch) -> None:
    monkeypatch.delenv("QUORUM_PLAN_TEST_KEY", raising=False)  # no key, no request needed
    cfg = load_project(_project(tmp_path, shared_data_dir))
    sure = plan(cfg, llm_accuracy=1.0)
    # LLMs always agree: the test router asks humans only every EVERY-th item
    assert sure.human_tasks == math.ceil(N / EVERY)
    assert sure.human_labels == 2 * sure.human_tasks  # two labels per item
    assert sure.human_hours == pytest.approx(sure.human_labels * 45 / 3600)
    assert sure.llm_calls == {"a": N, "b": N}  # first pass + a second opinion on every item
    unsure = plan(cfg, llm_accuracy=0.5)
    assert unsure.human_tasks > sure.human_tasks  # disagreements go to humans
    assert unsure.expected_spend > sure.expected_spend
    for p in (sure, unsure):
        assert p.expected_spend == pytest.approx(
            N * (p.prices["a"] + p.prices["b"]) + p.human_labels * 0.05
        )  # each human label is paid
        assert p.prices["team"] == pytest.approx(2 * 0.05)  # a task: its two labels
        assert p.max_spend == min(5.0, p.ask_everything) <= p.budget
    assert not (tmp_path / ".quorum" / "ledger.sqlite").exists()  # nothing run, nothing paid


def test_plan_respects_the_budget_and_cli(tmp_path, shared_data_dir) -> None:
    proj = _project(tmp_path, shared_data_dir, limit=0.3)
    p = plan(load_project(proj), llm_accuracy=0.5)
    assert p.expected_spend <= 0.3 + 1e-12 and p.max_spend == 0.3
    res = CliRunner().invoke(app, ["plan", str(proj), "--llm-accuracy", "0.5", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["human_tasks"] == p.human_tasks
    res = CliRunner().invoke(app, ["plan", str(proj)])
    assert res.exit_code == 0 and "human time:" in res.output and "max spend: $0.3" in res.output


def test_plan_says_the_checks_and_the_width_to_expect(tmp_path, shared_data_dir) -> None:
    """Issue 38: `quorum plan` says how many random checks the run buys, what they cost and
    the width of the interval to expect, and, where the budget buys fewer than an interval
    of budget.quality_width needs, so, with the money it would take."""
    roomy = plan(load_project(_project(tmp_path / "a", shared_data_dir, limit=40.0)))
    assert roomy.checks and not roomy.checks_short
    n = int(roomy.checks.split("quality checks: ")[1].split()[0])
    assert n >= 8 and "expected to be about" in roomy.checks
    assert "at about 0.125 each" in roomy.checks  # two labels and half a third at 0.05
    tight = plan(load_project(_project(tmp_path / "b", shared_data_dir, limit=1.0)))
    assert tight.checks_short and "needs" in tight.checks and "raise budget.limit" in tight.checks
    width = float(tight.checks.split("expected to be about ")[1].split()[0])
    assert width > 0.45
    res = CliRunner().invoke(app, ["plan", str(tmp_path / "b" / "project.yaml")])
    assert res.exit_code == 0 and "quality checks:" in res.output
    res = CliRunner().invoke(app, ["plan", str(tmp_path / "b" / "project.yaml"), "--json"])
    assert json.loads(res.output)["checks_short"] is True
