"""Throughput of live annotation against a local server with a fixed latency.

Starts the fake OpenAI-compatible server (tests/live_servers/fake_openai.py) with a fixed
latency L, then sends N distinct requests through LiveSource.annotate_many (litellm, the
ledger, rate limits and all) with C calls in flight, and reports the calls per second as a
ratio of the concurrency-bound limit C / L. A raw aiohttp client on the same server gives
the machine's own ceiling for comparison (server and client share the CPU). Each row also
gives the CPU seconds per call of this process (client) and of the server, which do not
depend on how busy the machine is, and one row per HTTP client (``client: http``, the lean
one, and ``client: litellm``) so that both are measured in the same run.

    .venv/bin/python scripts/bench_throughput.py --latency 0.2 --concurrency 8 32 64

Each row sends ``waves x C`` requests (a whole number of waves, so the limit is reachable),
after one warm-up wave of other requests (steady state: connections open, code warm).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
FAKE = ROOT / "tests" / "live_servers" / "fake_openai.py"


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, str(FAKE), "--port", "0", "--latency", str(latency)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("PORT "):
        proc.kill()
        raise RuntimeError(f"server did not start: {line!r}")
    return proc, f"http://127.0.0.1:{int(line.split()[1])}/v1"


def server_cpu(proc: subprocess.Popen) -> float:
    """CPU seconds (user + system) the server process has used so far (Linux)."""
    try:
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def write_project(
    folder: Path, api_base: str, n: int, conc: int, sync: str, client: str = "auto"
) -> Path:
    import yaml

    items = folder / "items.csv"
    items.write_text("item_id,text\n" + "".join(f"{i},benchmark sentence {i}\n" for i in range(n)))
    proj = {
        "name": "bench",
        "method": "random",
        "features": "light",
        "concurrency": conc,
        "ledger_sync": sync,
        "items": {"path": str(items)},
        "task": {"type": "classification", "labels": ["0", "1"]},
        "budget": {"limit": 1e6},
        "human": None,
        "annotators": [
            {"name": "fake", "model": "openai/fake", "api_base": api_base, "price": 0.001,
             "concurrency": conc, "timeout": 30, "client": client},
            {"name": "people", "kind": "human", "price": 1.0},
        ],
    }  # fmt: skip
    p = folder / "project.yaml"
    p.write_text(yaml.safe_dump(proj))
    return p


def bench_live(
    api_base: str, n: int, conc: int, sync: str, client: str = "auto", server=None
) -> tuple[float, float, float]:
    """(calls/s, client CPU s per call, server CPU s per call) of ``n`` calls."""
    from quorum.live.ledger.store import Ledger
    from quorum.live.machines.calls import Redactor
    from quorum.live.project.config import load_project
    from quorum.live.project.items import item_views, load_items
    from quorum.live.run.problem import build_arms, make_parser
    from quorum.live.run.source import LiveSource

    with tempfile.TemporaryDirectory() as tmp:
        cfg = load_project(write_project(Path(tmp), api_base, n + conc, conc, sync, client))
        items = load_items(cfg)
        views = item_views(items)
        arms, human = build_arms(cfg, items, views, Redactor())
        ledger = Ledger(cfg.ledger_path, sync=cfg.ledger_sync)
        run_id = ledger.start_run("bench", "x", "{}", "bench", 0, cfg.budget.limit)
        src = LiveSource(
            task_type=cfg.task.type, items=views, annotators=arms, ledger=ledger,
            run_id=run_id, budget_limit=cfg.budget.limit, parser=make_parser(cfg),
            human=human, concurrency=conc,
        )  # fmt: skip
        try:
            # warm-up, one wave of other items: imports, clients, C open connections
            src.annotate_many([(str(n + i), "fake") for i in range(conc)])
            s0 = server_cpu(server) if server is not None else float("nan")
            c0 = time.process_time()
            t = time.perf_counter()
            outs = src.annotate_many([(str(i), "fake") for i in range(n)])
            dt = time.perf_counter() - t
            c1 = time.process_time()
            s1 = server_cpu(server) if server is not None else float("nan")
            bad = [o for o in outs if o.status != "ok"]
            if bad:
                raise RuntimeError(f"{len(bad)} calls failed, e.g. {bad[0]}")
        finally:
            src.close()
            ledger.close()
    return n / dt, (c1 - c0) / n, (s1 - s0) / n


async def _raw(api_base: str, n: int, conc: int) -> float:
    import aiohttp

    sem = asyncio.Semaphore(conc)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=conc)) as s:

        async def one(i: int) -> None:
            async with sem:
                body = {"model": "fake", "messages": [{"role": "user", "content": f"raw {i}"}]}
                async with s.post(f"{api_base}/chat/completions", json=body) as r:
                    await r.json()

        await asyncio.gather(*(one(-1 - i) for i in range(conc)))  # warm-up wave
        t = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        return n / (time.perf_counter() - t)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--latency", type=float, default=0.2, help="server latency L in seconds")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[8, 32, 64])
    ap.add_argument("--waves", type=int, default=10, help="requests per row = waves x C")
    ap.add_argument("--sync", choices=["normal", "full"], default="normal")
    ap.add_argument("--no-raw", action="store_true", help="skip the raw aiohttp baseline")
    ap.add_argument(
        "--clients", nargs="+", default=["http", "litellm"], help="annotator clients to measure"
    )
    ap.add_argument("--json", type=Path, default=None, help="also write results here")
    args = ap.parse_args(argv)

    proc, api_base = start_server(args.latency)
    rows = []
    try:
        for c in args.concurrency:
            limit = c / args.latency
            n = args.waves * c
            raw = None if args.no_raw else asyncio.run(_raw(api_base, n, c))
            for client in args.clients:
                live, cpu, srv = bench_live(api_base, n, c, args.sync, client, proc)
                rows.append(
                    {"concurrency": c, "client": client, "n": n, "latency_s": args.latency,
                     "limit_per_s": limit, "quorum_per_s": live, "ratio": live / limit,
                     "raw_client_per_s": raw, "raw_ratio": None if raw is None else raw / limit,
                     "client_cpu_ms_per_call": 1e3 * cpu, "server_cpu_ms_per_call": 1e3 * srv,
                     "loadavg_1min": os.getloadavg()[0]}
                )  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(timeout=10)

    print(
        f"# live throughput, {args.waves} x C calls per row, server latency {args.latency}s, "
        f"ledger sync={args.sync}, {os.cpu_count()} CPU(s), Python {platform.python_version()}"
    )
    print(
        "| concurrency C | client | limit C/L (calls/s) | QUORUM (calls/s) | ratio | "
        "raw aiohttp ratio | client CPU ms/call | server CPU ms/call | load |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        raw = "-" if r["raw_ratio"] is None else f"{r['raw_ratio']:.2f}"
        print(
            f"| {r['concurrency']} | {r['client']} | {r['limit_per_s']:.0f} | "
            f"{r['quorum_per_s']:.1f} | {r['ratio']:.2f} | {raw} | "
            f"{r['client_cpu_ms_per_call']:.2f} | {r['server_cpu_ms_per_call']:.2f} | "
            f"{r['loadavg_1min']:.1f} |"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
