"""Issue 37, finding 1: five ``kill -9`` during a run never let the provider's bill pass the
budget. A real llama.cpp endpoint (llama-cpp-python's server with SmolLM2) sits behind a
counting proxy; ``quorum annotate`` runs as a subprocess, is killed five times while
requests are in flight and resumed to the end. Every request the endpoint received is a
call the ledger charged (an answer, or a call cut off after its request left, charged at
its reservation), and what was charged stays within the budget."""

from __future__ import annotations

import http.server
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from live_servers.fixtures import (
    ROOT,
    SST2_TASK,
    env,
    quorum_here,
    sst2_items,
    write_project,
)

pytestmark = [pytest.mark.slow, pytest.mark.realdata]

PRICE = 0.01
LIMIT = 0.25
N_ITEMS = 20
KILLS = 5


class CountingProxy:
    """A tiny HTTP proxy in front of ``upstream``: counts the chat completions it received
    (each one the provider would bill) and those it is forwarding right now."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.received = 0
        self.inflight = 0
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _forward(self, body: bytes | None) -> None:
                req = urllib.request.Request(
                    proxy.upstream + self.path.removeprefix("/v1"),
                    data=body,
                    method=self.command,
                    headers={"Content-Type": "application/json"},
                )
                try:
                    with urllib.request.urlopen(req, timeout=300) as r:
                        status, data = r.status, r.read()
                except urllib.error.HTTPError as exc:
                    status, data = exc.code, exc.read()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client was killed

            def do_GET(self) -> None:
                self._forward(None)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with proxy.lock:
                    proxy.received += 1
                    proxy.inflight += 1
                try:
                    self._forward(body)
                finally:
                    with proxy.lock:
                        proxy.inflight -= 1

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.api_base = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _project(folder: Path, data_dir: Path, api_base: str) -> Path:
    return write_project(
        folder,
        {
            "name": "kill-bill",
            "method": "live_servers.routers:CascadeRouter",
            "method_params": {"batch": 4, "confidence_every": 0, "human_every": 3},
            "seed": 3,
            "features": "light",
            "concurrency": 4,
            "items": sst2_items(data_dir, N_ITEMS),
            "task": SST2_TASK,
            "budget": {"limit": LIMIT, "quality_checks": 0},
            "human_price": 0.05,
            "annotators": [
                # token prices given (0: each call costs its fixed price, as without
                # them), so no run looks them up in litellm's cost map: its import is
                # ~5.6 s of CPU in each of the five killed subprocesses
                {"name": "smol", "model": "openai/smollm2", "api_base": api_base,
                 "price": PRICE, "input_cost_per_token": 0.0, "output_cost_per_token": 0.0,
                 "output": "grammar", "logprobs": False, "max_tokens": 4,
                 "temperature": 0, "seed": 0, "timeout": 300, "concurrency": 2},
            ],
        },
    )  # fmt: skip


def _annotate(proj: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "quorum.cli.main", "annotate", str(proj), "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
        cwd=str(ROOT),
    )


def _ledger(folder: Path) -> dict:
    con = sqlite3.connect(folder / ".quorum" / "ledger.sqlite")
    try:
        q = lambda sql: con.execute(sql).fetchone()[0]  # noqa: E731
        return {
            "charged": q("SELECT count(*) FROM calls WHERE annotator='smol' AND cost > 0"),
            "interrupted": q("SELECT count(*) FROM calls WHERE status='interrupted'"),
            "written_off": q("SELECT count(*) FROM calls WHERE status='interrupted' AND cost > 0"),
            "never_sent": q("SELECT count(*) FROM calls WHERE status='interrupted' AND cost = 0"),
            "spent": q("SELECT coalesce(sum(cost), 0) FROM calls"),
            "human": q("SELECT coalesce(sum(cost), 0) FROM calls WHERE annotator='gold'"),
        }
    finally:
        con.close()


def kill_and_resume(folder: Path, data_dir: Path, api_base: str, kills: int) -> dict:
    """Run the project behind a counting proxy, kill -9 it ``kills`` times while requests
    are in flight, resume to the end; the proxy's and the ledger's counts."""
    proxy = CountingProxy(api_base)
    try:
        proj = _project(folder, data_dir, api_base=proxy.api_base)
        done = 0
        for _ in range(kills):
            start = proxy.received
            proc = _annotate(proj)
            end = time.monotonic() + 240
            while proc.poll() is None and time.monotonic() < end:
                with proxy.lock:
                    ready = proxy.received >= start + 2 and proxy.inflight > 0
                if ready:
                    os.kill(proc.pid, signal.SIGKILL)
                    done += 1
                    break
                time.sleep(0.02)
            proc.wait(timeout=60)
            proc.stdout.close()
            proc.stderr.close()
        last = quorum_here("annotate", str(proj), "--quiet")  # the resume, to the end
        assert last.returncode == 0, last.stderr[-3000:]
        time.sleep(0.5)  # the proxy has counted every request it received
        return {"kills": done, "received": proxy.received, **_ledger(folder), "proj": proj}
    finally:
        proxy.close()


def test_five_kills_never_let_the_bill_pass_the_budget(
    tmp_path, shared_data_dir, smollm2_served
) -> None:
    api_base, _log = smollm2_served  # the process's server (live_servers.sessions)
    got = kill_and_resume(tmp_path / "p", shared_data_dir, api_base, KILLS)
    print({k: v for k, v in got.items() if k != "proj"})
    assert got["kills"] == KILLS
    assert got["interrupted"] >= 1  # the kills did cut calls off
    # every request the endpoint received is charged in the ledger, and no more
    assert got["received"] == got["charged"], got
    bill = got["received"] * PRICE + got["human"]
    assert bill <= LIMIT + 1e-9, got
    assert got["spent"] <= LIMIT + 1e-9, got
