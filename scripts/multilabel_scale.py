"""Replay speed of the multi-label kind per item beside classification's, in the same run.

Synthetic problems, mechanics only (``scripts/bench_routing_scale.py``'s set-up: T items with
11 precomputed uniform features, 3 LLMs whose accuracy depends on them, a perfect human at
0.1): a classification task over 4 labels, and the same items as a multi-label task over the
same 4 labels (gold: the item's label plus, one time in four, a second one; an LLM that is
right gives the gold set, else a one-label set). Each (kind, size, setting) runs
``QuorumRouter().route`` in a fresh process, after a warm-up route on 2,000 items (the
compiled loops' compilation is not counted); the time is the route's alone.

  PYTHONPATH=src python scripts/multilabel_scale.py --sizes 10000 100000 1000000
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_routing_scale import N_FEATURES, PRICES, ArraySource

LABELS = ("a", "b", "c", "d")


def synthetic(n: int, kind: str, setting: str, fraction: float, seed: int = 0):
    from quorum.data.schema import AnnotatorSpec, TaskSpec
    from quorum.routing.core.base import RoutingProblem
    from quorum.routing.core.budget import budget_for_setting
    from quorum.tasks.multilabel import encode

    rng = np.random.default_rng(seed)
    phi = rng.random((n, N_FEATURES))
    gold_i = rng.integers(len(LABELS), size=n)
    extra = np.where(rng.random(n) < 0.25, (gold_i + 1) % len(LABELS), -1)
    names = [f"llm{k}" for k in range(len(PRICES))]
    if kind == "multilabel":
        sets = [encode([LABELS[g]] + ([LABELS[e]] if e >= 0 else []), LABELS)
                for g, e in zip(gold_i, extra, strict=True)]  # fmt: skip
        singles = [encode([lab], LABELS) for lab in LABELS]
        gold = np.array(sets, dtype=object)
        one = np.array(singles, dtype=object)
    else:
        gold = np.array(LABELS, dtype=object)[gold_i]
        one = np.array(LABELS, dtype=object)
    outputs = {}
    for k, name in enumerate(names):
        acc = 0.55 + 0.1 * k + 0.2 * phi[:, k] * (1 if k % 2 else -1) + 0.2 * (k % 2 == 0)
        right = rng.random(n) < np.clip(acc, 0.05, 0.95)
        wrong = (gold_i + rng.integers(1, len(LABELS), size=n)) % len(LABELS)
        outputs[name] = np.where(right, gold, one[wrong])
    task = TaskSpec(
        name="synthetic",
        type=kind,
        labels=list(LABELS),
        annotators=[AnnotatorSpec(name=a, price=p) for a, p in zip(names, PRICES, strict=True)],
    )
    ids = np.array([f"i{t}" for t in range(n)], dtype=object)
    problem = RoutingProblem(task=task, item_ids=ids, phi=phi, setting=setting)
    budget, n_h = budget_for_setting(setting, fraction, n, 0.1, min(PRICES))
    problem.human_budget = n_h
    return problem, ArraySource(ids, gold, outputs), budget


def varied(
    n: int,
    setting: str,
    fraction: float,
    seed: int = 0,
    n_labels: int = 5,
    min_labels: int = 0,
    max_labels: int | None = None,
):
    """(problem, source, budget): label sets of every size from ``min_labels`` to
    ``max_labels`` (empty sets too), for comparing loops (mechanics only): gold a random
    set, an LLM's answer the gold set where it is right, else the gold set with one label
    added or removed (a random set where that breaks the bounds)."""
    from quorum.data.schema import AnnotatorSpec, TaskSpec
    from quorum.routing.core.base import RoutingProblem
    from quorum.routing.core.budget import budget_for_setting
    from quorum.tasks.multilabel import encode

    labels = [f"l{j}" for j in range(n_labels)]
    top = n_labels if max_labels is None else max_labels
    sizes = np.array([bin(m).count("1") for m in range(1 << n_labels)])
    valid = np.flatnonzero((sizes >= min_labels) & (sizes <= top))
    text = np.array(
        [
            encode([lab for j, lab in enumerate(labels) if m >> j & 1], labels)
            for m in range(1 << n_labels)
        ],
        dtype=object,
    )
    rng = np.random.default_rng(seed)
    phi = rng.random((n, N_FEATURES))
    small = valid[sizes[valid] <= max(min_labels, 3)]
    gold = rng.choice(small, size=n)
    names = [f"llm{k}" for k in range(len(PRICES))]
    outputs = {}
    for k, name in enumerate(names):
        acc = 0.45 + 0.1 * k + 0.2 * phi[:, k] * (1 if k % 2 else -1) + 0.2 * (k % 2 == 0)
        right = rng.random(n) < np.clip(acc, 0.05, 0.95)
        near = gold ^ (1 << rng.integers(n_labels, size=n))
        ok = (sizes[near] >= min_labels) & (sizes[near] <= top)
        wrong = np.where(ok, near, rng.choice(valid, size=n))
        outputs[name] = text[np.where(right, gold, wrong)]
    task = TaskSpec(
        name="varied",
        type="multilabel",
        labels=labels,
        min_labels=min_labels or None,
        max_labels=max_labels,
        annotators=[AnnotatorSpec(name=a, price=p) for a, p in zip(names, PRICES, strict=True)],
    )
    ids = np.array([f"i{t}" for t in range(n)], dtype=object)
    problem = RoutingProblem(task=task, item_ids=ids, phi=phi, setting=setting)
    budget, n_h = budget_for_setting(setting, fraction, n, 0.1, min(PRICES))
    problem.human_budget = n_h
    return problem, ArraySource(ids, text[gold], outputs), budget


def worker(spec: str) -> dict:
    from quorum.routing.quorum.router import QuorumRouter

    kind, n, setting, fraction = spec.split(":")
    warm = synthetic(2000, kind, setting, float(fraction), seed=1)  # compiles (numba) apart
    QuorumRouter().route(*warm, seed=0)
    problem, source, budget = synthetic(int(n), kind, setting, float(fraction))
    t0, c0 = time.perf_counter(), time.process_time()
    res = QuorumRouter().route(problem, source, budget, seed=0)
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert res.cost <= budget.limit + 1e-9 and res.labels["output"].notna().all()
    import resource

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": secs, "cpu_seconds": cpu, "calls": len(res.annotations), "rss_mb": rss}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--cells", nargs="+", default=["dollars:0.3", "auditor:0.3"])
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(worker(a.worker)))
        return
    print(
        "| kind | items | cell | route s | CPU s | us/item (CPU) | multilabel / classification "
        "(CPU) | calls | peak RSS MB | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in a.sizes:
        for cell in a.cells:
            base = None  # classification's CPU seconds in this cell
            for kind in ("classification", "multilabel"):
                cmd = [sys.executable, __file__, "--worker", f"{kind}:{n}:{cell}"]
                try:
                    out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                                         timeout=a.timeout, env=dict(os.environ))  # fmt: skip
                    r = json.loads(out.stdout.strip().splitlines()[-1])
                except subprocess.TimeoutExpired:
                    r = {"seconds": float("nan"), "cpu_seconds": float("nan"), "calls": 0}
                except subprocess.CalledProcessError as exc:
                    print(exc.stderr[-2000:], file=sys.stderr)
                    raise
                cpu = r["cpu_seconds"]
                ratio = "" if base is None else f"{cpu / base:.2f}"
                base = cpu if base is None else base
                print(
                    f"| {kind} | {n} | {cell} | {r['seconds']:.2f} | {cpu:.2f} | "
                    f"{1e6 * cpu / n:.1f} | {ratio} | {r['calls']} | {r.get('rss_mb', 0):.0f} | "
                    f"{os.getloadavg()[0]:.1f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
