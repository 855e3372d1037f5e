"""The quality estimate and the target mode live, end to end: `quorum annotate` with an LLM
served by llama-cpp-python (SmolLM2-135M) on 127.0.0.1, a keyword model and a scripted team
of three answering from the file queue while the run waits (``bad`` always gives the other
label; two labels per item, so the truth of a check is the reliability-weighted vote), on
real SST-2 items, with the QUORUM router.

- a target the ladder reaches at its second look, with the run killed (SIGKILL) after its
  first look and resumed: the look and the checks bought before the kill are kept, the
  run stops early, and status, ``status --json``, the export and the report say so;
- a target the budget cannot reach: the run ends saying so, with about what more it would
  take.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from live_servers.fixtures import (
    ROOT,
    SST2_TASK,
    env,
    quorum_here,
    sst2_items,
    write_project,
)
from quorum.live.project.config import load_project
from test_live_team import Team, _gold

pytestmark = [pytest.mark.slow, pytest.mark.realdata]

N_ITEMS = 40


@pytest.fixture(scope="module")
def smollm2(smollm2_served):
    """The process's llama.cpp server with SmolLM2 (live_servers.sessions): its API base and
    its log."""
    return smollm2_served


def _project(root: Path, data_dir: Path, api_base: str, limit: float, target: float) -> Path:
    (root / "prompts").mkdir(parents=True, exist_ok=True)
    (root / "prompts" / "a.txt").write_text(
        "Is this movie review negative or positive? Review: {text}\n"
        "Answer with one word: negative or positive."
    )
    llm = {"model": "openai/smollm2", "api_base": api_base, "max_tokens": 8,
           "temperature": 0, "seed": 0, "concurrency": 2, "timeout": 60}  # fmt: skip
    return write_project(
        root,
        {
            "name": "sst2-target",
            "method": "quorum",
            "features": "light",
            "items": sst2_items(data_dir, N_ITEMS),
            "task": {**SST2_TASK, "instructions": "Is the review positive?"},
            "budget": {"limit": limit, "target_quality": target, "confidence": 0.9},
            "annotators": [
                {"name": "smol", "prompt": "prompts/a.txt", "price": 0.001, **llm},
                {"name": "kw", "kind": "model", "price": 0.0005,
                 "model": "live_servers.models:keyword_sentiment"},
                {"name": "team", "kind": "human", "price": 0.02},
            ],
            "humans": {"labels_per_item": 2, "min_evidence": 4},
        },
    )  # fmt: skip


def _sql(cfg, q: str) -> pd.DataFrame:
    con = sqlite3.connect(f"file:{cfg.ledger_path}?mode=ro", uri=True)
    try:
        return pd.read_sql_query(q, con)
    finally:
        con.close()


def _target_state(cfg) -> dict | None:
    if not cfg.ledger_path.is_file():
        return None
    try:
        rows = _sql(cfg, "SELECT value FROM meta WHERE key='target'")
    except (sqlite3.Error, pd.errors.DatabaseError):
        return None
    return json.loads(rows["value"].iloc[0]) if len(rows) else None


def _kill_after_first_look(path: Path, cfg) -> dict:
    """`quorum annotate --wait` in a subprocess, killed (SIGKILL) once its first look is in
    the ledger (the ladder then climbs); returns the state it left."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "quorum.cli.main", "annotate", str(path), "--wait", "300", "-q"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env(), cwd=str(ROOT),
    )  # fmt: skip
    try:
        end = time.monotonic() + 400
        while time.monotonic() < end and proc.poll() is None:
            st = _target_state(cfg)
            if st and st["looks"]:
                break
            time.sleep(0.1)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
    return _target_state(cfg)


def test_target_reached_after_a_kill_and_resume(tmp_path, shared_data_dir, smollm2) -> None:
    api_base, _log = smollm2
    path = _project(tmp_path, shared_data_dir, api_base, limit=3.0, target=0.85)
    cfg = load_project(path)
    gold = _gold(shared_data_dir)
    team = Team(cfg.queue_dir, gold)
    try:
        before = _kill_after_first_look(path, cfg)
        assert before["state"] == "climbing" and before["step"] == 1  # climbed to rung 2
        first_look = before["looks"][0]
        assert first_look["low"] < 0.85 and first_look["limit"] == pytest.approx(0.75)
        tasks_then = _sql(cfg, "SELECT request_key, item_id, status, label FROM human_queue")
        paid_then = _sql(cfg, "SELECT call_id FROM calls WHERE annotator='team' AND status='ok'")
        res = quorum_here("annotate", str(path), "--wait", "300")
    finally:
        team.close()
    assert res.returncode == 0, res.stderr[-3000:]
    print(res.stdout, res.stderr[-2000:], sep="\n")
    st = json.loads(quorum_here("status", str(path), "--json").stdout)
    t, q = st["target"], st["quality"]
    # the look made before the kill is kept; the resumed run went on at rung 2 and stopped
    assert t["steps"][0] == first_look and t["state"] == "reached" and t["reached"]
    assert 2 <= t["looks"] < t["planned_looks"] and t["lower_bound"] >= 0.85
    assert t["saved"] > 0 and Decimal(st["spent"]) < Decimal("3")
    assert "reached at 90% confidence" in res.stdout and "stopped early" in res.stdout
    assert t["message"] in res.stdout
    # the estimate and its interval, from the checks (at the look's Bonferroni level)
    assert q["quality_confidence"] == pytest.approx(1 - 2 * 0.1 / 4)
    assert q["quality_low"] <= q["quality_estimate"] <= q["quality_high"]
    assert q["quality_low"] == pytest.approx(t["lower_bound"])
    assert q["quality_n_checks"] >= 1 and q["pending_checks"] == 0
    # the checks bought before the kill are kept: every task is still there with its
    # label, none sent twice, no answer paid twice
    tasks = _sql(cfg, "SELECT request_key, item_id, status, label FROM human_queue")
    done = tasks_then[tasks_then["status"] == "answered"].set_index("request_key")
    assert set(done.index) <= set(tasks["request_key"])
    assert (tasks.set_index("request_key").loc[done.index, "label"] == done["label"]).all()
    assert not tasks["item_id"].duplicated().any()
    paid = _sql(cfg, "SELECT call_id, request_key FROM calls WHERE annotator='team' AND "
                     "status='ok'")  # fmt: skip
    assert set(paid_then["call_id"]) <= set(paid["call_id"])
    assert not paid["request_key"].duplicated().any()
    # the truth of a check is the team's weighted vote: where bad disagreed, the vote is the
    # reliable person's (gold) label, and a checked item's label is that vote
    slots = _sql(cfg, "SELECT item_id, person, label FROM human_labels WHERE status='answered'")
    split = slots.groupby("item_id")["label"].nunique()
    voted = tasks.set_index("item_id")["label"]
    assert len(split[split > 1]) >= 1
    for item in split[split > 1].index:
        assert voted[item] == gold[item], (item, slots[slots["item_id"] == item])
    ex = pd.read_csv(_export(path, tmp_path))
    checked = ex[ex["quality_check"].notna()]
    assert len(checked) == q["quality_n_checks"]
    assert set(checked["quality_check"]) <= {0.0, 1.0} and checked["human"].all()
    assert (
        checked["label"].astype(str).values == voted[checked["item_id"].astype(str)].values
    ).all()
    # one line in `quorum status`, and the report page
    text = quorum_here("status", str(path)).stdout
    assert t["message"] in text and f"from {q['quality_n_checks']} random checks" in text
    page = tmp_path / "report.html"
    assert quorum_here("report", str(path), "-o", str(page)).returncode == 0
    html = page.read_text()
    assert f"{q['quality_estimate']:.3f}" in html and "reached at 90% confidence" in html


def _export(path: Path, tmp: Path) -> Path:
    out = tmp / "labels.csv"
    res = quorum_here("export", str(path), "-f", "csv", "-o", str(out))
    assert res.returncode == 0, res.stderr[-2000:]
    return out


def test_target_the_budget_cannot_reach(tmp_path, shared_data_dir, smollm2) -> None:
    api_base, _log = smollm2
    path = _project(tmp_path, shared_data_dir, api_base, limit=0.8, target=0.97)
    cfg = load_project(path)
    team = Team(cfg.queue_dir, _gold(shared_data_dir))
    try:
        res = quorum_here("annotate", str(path), "--wait", "300")
    finally:
        team.close()
    assert res.returncode == 0, res.stderr[-3000:]
    print(res.stdout)
    t = json.loads(quorum_here("status", str(path), "--json").stdout)["target"]
    assert t["state"] == "not_reached" and not t["reached"] and t["looks"] == 4
    assert t["lower_bound"] < 0.97 and t["saved"] is None
    assert "not reached within the budget 0.8" in res.stdout
    lows = [s["low"] for s in t["steps"]]
    if lows[-1] > lows[-2]:  # the bound rose over the last look: about what more it takes
        assert t["more_money"] > 0 and f"about {t['more_money']:.4g} more money" in res.stdout
    else:
        assert t["more_money"] is None and "more money alone may not reach it" in res.stdout
    assert Decimal(
        json.loads(quorum_here("status", str(path), "--json").stdout)["spent"]
    ) <= Decimal("0.8")
