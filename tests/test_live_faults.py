"""Fault injection: 429s, 500s, timeouts, garbage and slow answers, dead endpoints, secrets."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from live_servers.fixtures import (
    SST2_TASK,
    FakeServer,
    free_port,
    quorum,
    sst2_items,
    write_project,
)

pytestmark = pytest.mark.slow


def _llm(name: str, api_base: str, **kw) -> dict:
    d = {"name": name, "model": f"openai/{name}", "api_base": api_base, "timeout": 1.0,
         "max_retries": 3, "backoff_base": 0.02, "backoff_max": 0.2, "concurrency": 6}  # fmt: skip
    d.update(kw)
    return d


def _rows(db: Path, sql: str) -> list[sqlite3.Row]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_faults_every_call_accounted_and_budget_respected(tmp_path, shared_data_dir) -> None:
    budget = 0.12
    faults = ["--rate-429", "0.15", "--rate-500", "0.1", "--rate-timeout", "0.05",
              "--hang", "2.5", "--rate-garbage", "0.1", "--rate-slow", "0.1",
              "--slow", "0.3", "--seed", "7"]  # fmt: skip
    with (
        FakeServer(tmp_path, *faults, name="flaky") as srv,
        FakeServer(tmp_path, "--dead", name="dead") as dead,
    ):
        gone = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
        proj = write_project(
            tmp_path,
            {
                "name": "faults",
                "method": "live_servers.routers:CascadeRouter",
                "features": "light",
                "concurrency": 12,
                "items": sst2_items(shared_data_dir, 30),
                "task": SST2_TASK,
                "budget": {"limit": budget},
                "human_price": 0.01,
                "annotators": [
                    _llm("fake-b", srv.api_base, input_cost_per_token=1e-6,
                         output_cost_per_token=2e-6),
                    _llm("fake-a", srv.api_base, price=0.002),
                    _llm("fake-dead", dead.api_base, price=0.003, dead_after=2),
                    _llm("fake-gone", gone, price=0.004, dead_after=2),
                ],
            },
        )  # fmt: skip
        res = quorum("annotate", str(proj), "--quiet", timeout=240)
        assert res.returncode == 0, res.stderr[-3000:]
        assert "finished" in res.stdout
        log = res.stdout + res.stderr
        assert "fake-dead" in log and "fake-gone" in log and "dead endpoint" in log
        served = srv.requests()
        served_dead = dead.requests()
    db = tmp_path / ".quorum" / "ledger.sqlite"
    calls = _rows(db, "SELECT * FROM calls")
    # nothing is left in flight; every call has a final status
    assert {c["status"] for c in calls} <= {"ok", "unparseable", "failed"}
    # every request the servers saw is one recorded try of one recorded call
    tries = {a: sum(c["attempts"] for c in calls if c["annotator"] == a) for a in
             ("fake-a", "fake-b", "fake-dead")}  # fmt: skip
    assert len(served) == tries["fake-a"] + tries["fake-b"]
    assert len(served_dead) == tries["fake-dead"]
    failed_tries = _rows(db, "SELECT outcome, count(*) AS n FROM attempts GROUP BY outcome")
    outcomes = {r["outcome"]: r["n"] for r in failed_tries}
    assert outcomes.get("429", 0) > 0 and outcomes.get("timeout", 0) > 0
    assert outcomes.get("500", 0) > 0 and outcomes.get("connection", 0) > 0
    n_fail_tries = sum(r["n"] for r in failed_tries)
    n_ok = sum(1 for c in calls if c["status"] in ("ok", "unparseable") and c["attempts"])
    assert n_fail_tries + n_ok == sum(c["attempts"] for c in calls)
    # garbage answers are recorded as unparseable and paid, never turned into labels
    garbage = sum(1 for r in served if r["plan"] == "garbage")
    unp = [c for c in calls if c["status"] == "unparseable"]
    assert garbage > 0 and len(unp) == garbage
    assert all(c["output"] is None and c["cost"] > 0 for c in unp)
    # failed calls cost nothing; dead endpoints stop being called
    assert all(c["cost"] == 0 for c in calls if c["status"] == "failed")
    refused = [c for c in calls if c["status"] == "failed" and c["attempts"] == 0]
    assert all("dead" in c["error"] for c in refused)
    assert len(served_dead) <= 2 * 4  # dead_after=2 calls x (1 + 3 retries)
    # the hard budget holds
    spent = sum(c["cost"] for c in calls)
    assert spent <= budget + 1e-12
    st = quorum("status", str(proj), "--json")
    assert st.returncode == 0, st.stderr
    assert '"spent": ' in st.stdout


def test_secrets_never_reach_ledger_logs_or_exports(tmp_path, shared_data_dir) -> None:
    secret = "sk-test-QUORUM-SECRET-4242424242"
    with FakeServer(tmp_path, "--rate-echo-key", "0.5", "--seed", "3", name="echo") as srv:
        proj = write_project(
            tmp_path,
            {
                "name": "secrets",
                "method": "live_servers.routers:CascadeRouter",
                "features": "light",
                "items": sst2_items(shared_data_dir, 6),
                "task": SST2_TASK,
                "budget": {"limit": 1.0},
                "human_price": 0.01,
                "annotators": [
                    _llm("fake-a", srv.api_base, price=0.001, api_key_env="QUORUM_FAKE_KEY",
                         max_retries=1, dead_after=100),
                ],
            },
        )  # fmt: skip
        env = {"QUORUM_FAKE_KEY": secret}
        outs = [quorum("annotate", str(proj), extra_env=env, timeout=180)]
        assert outs[0].returncode == 0, outs[0].stderr[-2000:]
        assert any(r["plan"] == "echo_key" for r in srv.requests())
    for fmt in ("csv", "jsonl", "parquet"):
        outs.append(quorum("export", str(proj), "-f", fmt, extra_env=env))
        assert outs[-1].returncode == 0, outs[-1].stderr
    outs.append(quorum("status", str(proj), extra_env=env))
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".parquet" for p in files)
    for p in files:
        assert secret.encode() not in p.read_bytes(), f"secret leaked into {p}"
    for o in outs:
        assert secret not in o.stdout and secret not in o.stderr
    errs = _rows(tmp_path / ".quorum" / "ledger.sqlite", "SELECT error FROM attempts")
    assert any("***" in (r["error"] or "") for r in errs)  # the echoed key was redacted
