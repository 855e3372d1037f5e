"""Replay speed of the pairwise kind per item, beside classification's, in the same run.

Usage:
  PYTHONPATH=src python scripts/bench_pairwise_scale.py [--sizes 10000 100000 1000000]
      [--cells dollars:0.3 auditor:0.3] [--kinds classification pairwise]

Synthetic problems, mechanics only, built like ``scripts/bench_routing_scale.py``'s (its
``synthetic``: precomputed features, 3 LLMs at 0.001/0.004/0.02 whose accuracy depends on
the features, a perfect human at 0.1, answers from arrays), for two kinds:

- ``classification``: that script's problem as it is (3 labels);
- ``pairwise``: the labels "1"/"2" and swap judges: each LLM is a judge asked in both
  orders, whose verdict is no answer (a paid call without a vote, status "unparseable") on
  a share of the items that grows as the judge gets weaker (25% / 15% / 7%, the LLMBar
  judges' inconsistency), the verdict itself right with the same feature-dependent accuracy.

Every cell runs in a fresh process (its peak RSS its own); the time is that of
``QuorumRouter().route`` alone. Printed: seconds, us/item, CPU seconds, pairwise / classification.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
#: share of items where each LLM's two orders disagree (cheapest first)
INCONSISTENT = (0.25, 0.15, 0.07)


def _scale_module():
    spec = importlib.util.spec_from_file_location(
        "bench_routing_scale", HERE / "bench_routing_scale.py"
    )
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def pairwise_problem(n: int, setting: str, fraction: float, seed: int = 0):
    """(problem, source, budget): the classification problem's design with labels "1"/"2"
    and swap judges that give no answer on inconsistent pairs."""
    from quorum.data.schema import AnnotatorSpec, TaskSpec
    from quorum.routing.core.base import Outcome, RoutingProblem
    from quorum.routing.core.budget import budget_for_setting

    scale = _scale_module()
    rng = np.random.default_rng(seed)
    phi = rng.random((n, scale.N_FEATURES))
    labels = np.array(["1", "2"], dtype=object)
    gold_i = rng.integers(2, size=n)
    names = [f"judge{k}" for k in range(len(scale.PRICES))]
    outputs = {}
    for k, name in enumerate(names):
        acc = 0.55 + 0.1 * k + 0.2 * phi[:, k] * (1 if k % 2 else -1) + 0.2 * (k % 2 == 0)
        right = rng.random(n) < np.clip(acc, 0.05, 0.95)
        out = labels[np.where(right, gold_i, 1 - gold_i)].astype(object)
        out[rng.random(n) < INCONSISTENT[k]] = None
        outputs[name] = out
    task = TaskSpec(
        name="synthetic-pairwise",
        type="pairwise",
        labels=["1", "2"],
        annotators=[
            AnnotatorSpec(name=a, price=p) for a, p in zip(names, scale.PRICES, strict=True)
        ],
    )
    ids = np.array([f"i{t}" for t in range(n)], dtype=object)
    problem = RoutingProblem(task=task, item_ids=ids, phi=phi, setting=setting)
    budget, n_h = budget_for_setting(setting, fraction, n, 0.1, min(scale.PRICES))
    problem.human_budget = n_h

    class SwapSource(scale.ArraySource):
        def annotate(self, item_id: str, annotator: str):
            out = self.answers[annotator][self.index[item_id]]
            status = "ok" if out is not None else "unparseable"
            return Outcome(item_id, annotator, out, self.prices[annotator], status)

    return problem, SwapSource(ids, labels[gold_i], outputs), budget


def worker(kind: str, n: int, setting: str, fraction: float) -> dict:
    from quorum.routing.quorum.router import QuorumRouter

    t0 = time.perf_counter()
    if kind == "pairwise":
        problem, source, budget = pairwise_problem(n, setting, fraction)
    else:
        problem, source, budget = _scale_module().synthetic(n, setting, fraction)
    build = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    res = QuorumRouter().route(problem, source, budget, seed=0)
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {
        "seconds": secs,
        "cpu_seconds": cpu,
        "build_seconds": build,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "annotations": len(res.annotations),
        "human_labels": res.human_labels,
        "strategy": res.info.get("dollars_strategy", "auditor"),
        "cost": res.cost,
        "limit": res.budget_limit,
    }


def run_cell(kind: str, n: int, setting: str, fraction: float, timeout: float) -> dict:
    cmd = [sys.executable, __file__, "--worker", f"{kind}:{n}:{setting}:{fraction}"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return {"seconds": float("nan"), "error": f"timeout after {timeout:.0f} s"}
    except subprocess.CalledProcessError as exc:
        return {"seconds": float("nan"), "error": exc.stderr.strip().splitlines()[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--cells", nargs="+", default=["dollars:0.3", "auditor:0.3"])
    ap.add_argument("--kinds", nargs="+", default=["classification", "pairwise"])
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        kind, n, setting, frac = args.worker.split(":")
        print(json.dumps(worker(kind, int(n), setting, float(frac))))
        return
    print(f"cores {os.cpu_count()}, load {os.getloadavg()[0]:.1f}")
    print(
        "| cell | items | kind | seconds | us/item | CPU s | CPU us/item | peak RSS MB | "
        "strategy | pairwise / classification (CPU) | load |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|")
    for cell in args.cells:
        setting, frac = cell.split(":")
        for n in args.sizes:
            cpu = {}
            for kind in args.kinds:
                r = run_cell(kind, n, setting, float(frac), args.timeout)
                if "error" in r:
                    print(f"| {cell} | {n:,} | {kind} | {r['error']} |")
                    continue
                cpu[kind] = r["cpu_seconds"]
                ratio = ""
                if kind == "pairwise" and "classification" in cpu:
                    ratio = f"{cpu['pairwise'] / cpu['classification']:.2f}"
                print(
                    f"| {cell} | {n:,} | {kind} | {r['seconds']:.2f} | "
                    f"{1e6 * r['seconds'] / n:.1f} | {r['cpu_seconds']:.2f} | "
                    f"{1e6 * r['cpu_seconds'] / n:.1f} | {r['peak_rss_mb']:.0f} | "
                    f"{r['strategy']} | {ratio} | {os.getloadavg()[0]:.1f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
