"""Replay speed of the span kind beside classification's, in the same run (issue 35).

Usage:
  python scripts/spans_routing_scale.py [--sizes 10000 100000 1000000]
      [--cells dollars:0.3 auditor:0.3] [--out benchmarks/spans/routing_scale.json]

Synthetic problems, mechanics only, laid out as ``scripts/bench_routing_scale.py``'s (its
``ArraySource``: answers from arrays, so the time is the router's own; features
precomputed: 11 uniform columns). Classification: 3 labels. Spans: each item's gold is one
or two typed spans (canonical strings, about a third empty), an LLM's answer is the gold, a
shifted copy (still overlapping) or another span, with the same accuracies as the
classification problem. Every (kind, size, cell) runs in a fresh process, one after the
other, and prints seconds and us/item of ``QuorumRouter().route`` alone.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_routing_scale import LABELS, N_FEATURES, PRICES, ArraySource  # noqa: E402

SPAN_TYPES = ("Contradictory", "Misleading")


def _span_strings(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(gold span strings, the (start, kind) of each) for ``n`` items."""
    from quorum.tasks.spans import encode_spans

    start = rng.integers(0, 200, size=n)
    kind = rng.integers(0, 3, size=n)  # 0: no span, 1: one, 2: two
    lab = rng.integers(0, 2, size=n)
    gold = np.empty(n, dtype=object)
    for t in range(n):
        s, k, la = int(start[t]), int(kind[t]), SPAN_TYPES[int(lab[t])]
        spans = [] if k == 0 else [(s, s + 12, la)] + ([(s + 40, s + 55, la)] if k == 2 else [])
        gold[t] = encode_spans(spans)
    return gold, start


def synthetic(kind: str, n: int, setting: str, fraction: float, seed: int = 0):
    from quorum.data.schema import AnnotatorSpec, TaskSpec
    from quorum.routing.core.base import RoutingProblem
    from quorum.routing.core.budget import budget_for_setting

    rng = np.random.default_rng(seed)
    phi = rng.random((n, N_FEATURES))
    names = [f"llm{k}" for k in range(len(PRICES))]
    if kind == "classification":
        gold_i = rng.integers(len(LABELS), size=n)
        labels = np.array(LABELS, dtype=object)
        gold = labels[gold_i]
    else:
        gold, start = _span_strings(rng, n)
    outputs = {}
    for k, name in enumerate(names):
        acc = 0.55 + 0.1 * k + 0.2 * phi[:, k] * (1 if k % 2 else -1) + 0.2 * (k % 2 == 0)
        right = rng.random(n) < np.clip(acc, 0.05, 0.95)
        if kind == "classification":
            wrong = labels[(gold_i + rng.integers(1, len(LABELS), size=n)) % len(LABELS)]
        else:
            shift = rng.integers(1, 6, size=n)
            wrong = np.array(
                [
                    f'[[{int(s) + int(d)},{int(s) + int(d) + 10},"{SPAN_TYPES[int(d) % 2]}"]]'
                    for s, d in zip(start, shift, strict=True)
                ],
                dtype=object,
            )
        outputs[name] = np.where(right, gold, wrong)
    task = TaskSpec(
        name="synthetic",
        type=kind,
        labels=list(LABELS) if kind == "classification" else list(SPAN_TYPES),
        annotators=[AnnotatorSpec(name=a, price=p) for a, p in zip(names, PRICES, strict=True)],
    )
    ids = np.array([f"i{t}" for t in range(n)], dtype=object)
    problem = RoutingProblem(task=task, item_ids=ids, phi=phi, setting=setting)
    budget, n_h = budget_for_setting(setting, fraction, n, 0.1, min(PRICES))
    problem.human_budget = n_h
    return problem, ArraySource(problem.item_ids, gold, outputs), budget


def worker(kind: str, n: int, setting: str, fraction: float) -> dict:
    from quorum.routing.quorum.router import QuorumRouter

    problem, source, budget = synthetic(kind, n, setting, fraction)
    t0, c0 = time.perf_counter(), time.process_time()
    res = QuorumRouter().route(problem, source, budget, seed=0)
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {
        "kind": kind,
        "items": n,
        "setting": setting,
        "budget": fraction,
        "seconds": round(secs, 3),
        "cpu_seconds": round(cpu, 3),
        "us_per_item": round(1e6 * secs / n, 2),
        "human_labels": res.human_labels,
        "cost": round(res.cost, 4),
        "limit": round(budget.limit, 4),
        "load1": os.getloadavg()[0],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--cells", nargs="+", default=["dollars:0.3", "auditor:0.3"])
    ap.add_argument("--kinds", nargs="+", default=["classification", "spans"])
    ap.add_argument("--out", default=None)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        kind, n, setting, b = args.worker.split(":")
        print(json.dumps(worker(kind, int(n), setting, float(b))))
        return
    rows = []
    for n in args.sizes:
        for cell in args.cells:
            setting, b = cell.split(":")
            for kind in args.kinds:
                cmd = [sys.executable, __file__, "--worker", f"{kind}:{n}:{setting}:{b}"]
                out = subprocess.run(cmd, capture_output=True, text=True, check=True)
                row = json.loads(out.stdout.strip().splitlines()[-1])
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
