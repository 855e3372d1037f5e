"""Kill -9 at random points, several times: no lost or repeated paid call, same labels."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from live_servers.fixtures import (
    ROOT,
    SST2_TASK,
    FakeServer,
    env,
    quorum_here,
    sst2_items,
    write_project,
)

pytestmark = pytest.mark.slow

KILLS = 4


def _project(folder: Path, data_dir: Path, api_base: str, method: str) -> Path:
    llm = {"api_base": api_base, "timeout": 10, "max_retries": 2, "backoff_base": 0.02}
    return write_project(
        folder,
        {
            "name": "resume",
            "method": method,
            "seed": 11,
            "features": "light",
            "concurrency": 4,
            "items": sst2_items(data_dir, 24),
            "task": SST2_TASK,
            # binds: not every item the router wants gets a human; calls cut off by a kill
            # not charged, so that the resumed run routes exactly like the uninterrupted one
            # (the default charges them: tests/test_hard_to_break_kill.py)
            "budget": {"limit": 0.08, "charge_interrupted": False},
            "human_price": 0.01,
            "annotators": [
                {"name": "fake-b", "model": "openai/fake-b", **llm,
                 "input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6},
                {"name": "fake-a", "model": "openai/fake-a", **llm, "price": 0.002},
                {"name": "fake-c", "model": "openai/fake-c", **llm, "price": 0.003},
            ],
        },
    )  # fmt: skip


def _server_key(model: str, prompt: str) -> str:
    msgs = [{"role": "user", "content": prompt}]
    body = json.dumps({"model": model.split("/", 1)[1], "messages": msgs}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def _calls(folder: Path) -> pd.DataFrame:
    con = sqlite3.connect(folder / ".quorum" / "ledger.sqlite")
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return pd.read_sql_query("SELECT * FROM calls", con)
    finally:
        con.close()


def _inflight(folder: Path) -> int:
    """Calls a killed run left in flight (the next run marks them interrupted)."""
    con = sqlite3.connect(folder / ".quorum" / "ledger.sqlite")
    try:
        return con.execute("SELECT count(*) FROM calls WHERE status='inflight'").fetchone()[0]
    finally:
        con.close()


def _labels(folder: Path, proj: Path) -> pd.DataFrame:
    out = folder / "labels.jsonl"
    res = quorum_here("export", str(proj), "-f", "jsonl", "-o", str(out))
    assert res.returncode == 0, res.stderr
    df = pd.read_json(out, lines=True, dtype=False)
    return df.sort_values("item_id").reset_index(drop=True)


def test_kill_and_resume(tmp_path, shared_data_dir) -> None:
    _kill_and_resume(tmp_path, shared_data_dir, "live_servers.routers:CascadeRouter", KILLS)


def test_kill_and_resume_quorum_router(tmp_path, shared_data_dir) -> None:
    """The same guarantee with the real QUORUM router (fewer kills, to keep tests short)."""
    try:
        from quorum.routing.quorum.router import QuorumRouter  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"QuorumRouter not available: {exc}")
    _kill_and_resume(tmp_path, shared_data_dir, "quorum", 2)


def _kill_and_resume(tmp_path: Path, shared_data_dir: Path, method: str, n_kills: int) -> None:
    rng = random.Random(2024)
    args = ["--latency", "0.06", "--jitter", "0.04", "--labels", "2"]
    with FakeServer(tmp_path, *args, name="a") as sa, FakeServer(tmp_path, *args, name="b") as sb:
        # reference: one uninterrupted run
        proj_a = _project(tmp_path / "a", shared_data_dir, sa.api_base, method)
        res = quorum_here("annotate", str(proj_a), "--quiet")
        assert res.returncode == 0, res.stderr[-3000:]
        # the same project, killed with SIGKILL at random moments while calls are in flight
        proj_b = _project(tmp_path / "b", shared_data_dir, sb.api_base, method)
        kills = 0
        for _ in range(n_kills):
            seen = len(sb.requests())
            proc = subprocess.Popen(
                [sys.executable, "-m", "quorum.cli.main", "annotate", str(proj_b), "--quiet"],
                env=env(), cwd=str(ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            end = time.monotonic() + 90
            while time.monotonic() < end and proc.poll() is None and len(sb.requests()) <= seen:
                time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 1.0))
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                kills += 1
            proc.wait(timeout=30)
            if proc.returncode == 0:
                break
            # only calls that had a concurrency slot can be cut off
            assert _inflight(tmp_path / "b") <= 4
        assert kills >= min(2, n_kills), "the run finished before it could be killed"
        res = quorum_here("annotate", str(proj_b), "--quiet")
        assert res.returncode == 0, res.stderr[-3000:]
        served_a, served_b = sa.counts(), sb.counts()

    a, b = _calls(tmp_path / "a"), _calls(tmp_path / "b")
    done = ["ok", "unparseable"]
    done_a = a[a["status"].isin(done)]
    done_b = b[b["status"].isin(done)]
    # the same paid calls, each exactly once, at the same cost
    assert not done_b["request_key"].duplicated().any()
    ident = ["item_id", "annotator", "kind", "prompt"]  # request keys differ: api_base does
    assert set(map(tuple, done_a[ident].to_numpy())) == set(map(tuple, done_b[ident].to_numpy()))
    assert done_b["cost"].sum() == pytest.approx(done_a["cost"].sum())
    assert set(b["status"]) <= {"ok", "unparseable", "interrupted"}
    # the server saw each completed call once, plus at most one try per interrupted row
    llm_b = b[b["annotator"] != "gold"]
    interrupted = Counter(
        _server_key(m, p)
        for m, p, s in zip(llm_b["model"], llm_b["prompt"], llm_b["status"], strict=True)
        if s == "interrupted"
    )
    keys_b = {_server_key(m, p) for m, p in zip(llm_b["model"], llm_b["prompt"], strict=True)}
    assert set(served_b) == keys_b
    for k, n in served_b.items():
        assert n <= 1 + interrupted[k], f"request {k} served {n} times"
    assert sum(served_a.values()) == len(a[a["annotator"] != "gold"])
    # identical final labels, and the budget held in both
    la, lb = _labels(tmp_path / "a", proj_a), _labels(tmp_path / "b", proj_b)
    assert la[["item_id", "label"]].equals(lb[["item_id", "label"]])
    assert la["cost"].sum() == pytest.approx(lb["cost"].sum())
    assert done_b["cost"].sum() + b.loc[b["status"] == "pending", "cost"].sum() <= 0.08 + 1e-12
    print(f"kills {kills}, interrupted calls {sum(interrupted.values())}, "
          f"repeated server requests {sum(n - 1 for n in served_b.values())}")  # fmt: skip


def test_kill_cuts_off_at_most_concurrency_calls(tmp_path, shared_data_dir) -> None:
    """kill -9 while QUORUM's batches wait for slots: each kill leaves at most
    ``concurrency`` interrupted calls, and the counting server saw no more requests than
    the ledger accounts for."""
    conc, kills = 3, 3
    rng = random.Random(7)
    with FakeServer(tmp_path, "--latency", "0.15", "--jitter", "0.05", name="count") as srv:
        # token prices given (0: each call costs its fixed price, as without them), so no
        # run looks them up in litellm's cost map (its import: ~5.6 s of CPU a subprocess)
        llm = {"api_base": srv.api_base, "timeout": 10, "max_retries": 1, "backoff_base": 0.02,
               "input_cost_per_token": 0.0, "output_cost_per_token": 0.0}  # fmt: skip
        proj = write_project(
            tmp_path,
            {"name": "count", "seed": 2, "features": "light", "concurrency": conc,
             "items": sst2_items(shared_data_dir, 80), "task": SST2_TASK,
             "budget": {"limit": 0.5}, "human_price": 0.01,
             "annotators": [{"name": "fake-a", "model": "openai/fake-a", **llm, "price": 0.001},
                            {"name": "fake-b", "model": "openai/fake-b", **llm,
                             "price": 0.002}]},
        )  # fmt: skip
        per_kill = []
        for _ in range(kills):
            seen = len(srv.requests())
            proc = subprocess.Popen(
                [sys.executable, "-m", "quorum.cli.main", "annotate", str(proj), "--quiet"],
                env=env(), cwd=str(ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            end = time.monotonic() + 90
            while time.monotonic() < end and proc.poll() is None and len(srv.requests()) < seen + 4:
                time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 0.5))
            assert proc.poll() is None, "the run finished before it could be killed"
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            per_kill.append(_inflight(tmp_path))
        res = quorum_here("annotate", str(proj), "--quiet")
        assert res.returncode == 0, res.stderr[-3000:]
        served = srv.counts()
    print(f"interrupted calls per kill: {per_kill} (concurrency {conc})")
    assert all(n <= conc for n in per_kill) and sum(per_kill) >= 1
    st = quorum_here("status", str(proj), "--json")
    assert st.returncode == 0, st.stderr
    assert json.loads(st.stdout)["interrupted_calls"] == sum(per_kill)
    calls = _calls(tmp_path)
    llm_calls = calls[calls["annotator"] != "gold"]
    interrupted = Counter(
        _server_key(m, p)
        for m, p, s in zip(llm_calls["model"], llm_calls["prompt"], llm_calls["status"],
                           strict=True) if s == "interrupted"
    )  # fmt: skip
    for k, n in served.items():
        assert n <= 1 + interrupted[k], f"request {k} served {n} times"
    done = llm_calls[llm_calls["status"].isin(["ok", "unparseable"])]
    assert sum(served.values()) <= len(done) + sum(per_kill)
