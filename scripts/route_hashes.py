"""Fingerprints of routing results, to check that a speed-up changes no result.

Routes a fixed grid of (method, dataset, setting, budget, seed) cells through
:func:`quorum.simulate.simulate_once` and prints, per run, a hash of its labels, its
annotations and its cost (and, apart, of its trace). Run it before and after a change and
compare:

  python scripts/route_hashes.py --out before.json
  python scripts/route_hashes.py --check before.json       # exit 1 if any run differs

Run both on the same machine: the hashes depend on the numeric libraries' kernels (BLAS
builds and the CPU they pick, e.g. OPENBLAS_CORETYPE), so ``route_hashes_reference.json``
(taken on an earlier session's machine) can differ everywhere on another machine while
the code is the same; there, take the "before" hashes from the old commit first.

Defaults: datasets llms-for-css/discourse, llms-for-css/flute, coannotating-stance/es,
mmlu-redux, summ-goyal22/cnn; both settings; budgets 0.1/0.3/0.5/0.7; seeds 0, 1;
methods quorum, quorum-paper, random, cdi (a method that cannot run on a task, e.g. cdi on
summaries, is skipped). A dataset whose features cannot be prepared is reported and skipped.
The routers are hashed without QUORUM's default quality checks (``quality=False``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time

import pandas as pd

from quorum.errors import UnsupportedTaskError
from quorum.routing.core.base import RoutingResult
from quorum.simulate import prepare, simulate_once

DATASETS = [
    "llms-for-css/discourse",
    "llms-for-css/flute",
    "coannotating-stance/es",
    "mmlu-redux",
    "summ-goyal22/cnn",
]
METHODS = ["quorum", "quorum-paper", "random", "cdi"]
SETTINGS = ["dollars", "auditor"]
BUDGETS = [0.1, 0.3, 0.5, 0.7]
SEEDS = [0, 1]
#: the routers alone: QUORUM's default random quality checks (docs/quality.md) are off
NO_CHECKS = {"quality": False}


def _frame_digest(df: pd.DataFrame) -> str:
    """sha256 of a frame's CSV (floats written with repr precision)."""
    text = df.reset_index(drop=True).to_csv(index=False, float_format="%.17g")
    return hashlib.sha256(text.encode()).hexdigest()


def result_hash(result: RoutingResult) -> str:
    """Hash of (labels, annotations, cost): what must not change."""
    h = hashlib.sha256()
    h.update(_frame_digest(result.labels).encode())
    h.update(_frame_digest(result.annotations).encode())
    h.update(repr(float(result.cost)).encode())
    return h.hexdigest()[:16]


def trace_hash(result: RoutingResult) -> str:
    """Hash of the routing trace (the decisions log), reported apart ("-" without one)."""
    return "-" if result.trace is None else _frame_digest(result.trace)[:16]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--settings", default=",".join(SETTINGS))
    ap.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    ap.add_argument("--seeds", default=",".join(map(str, SEEDS)))
    ap.add_argument("--out", help="write the hashes to this JSON file")
    ap.add_argument("--check", help="compare with the hashes in this JSON file")
    args = ap.parse_args()
    hashes: dict[str, dict[str, str]] = {}
    for name in args.datasets.split(","):
        t0 = time.perf_counter()
        try:
            prep = prepare(name)
        except Exception as exc:  # report it and go on with the other datasets
            print(f"{name}: skipped ({type(exc).__name__}: {exc})", flush=True)
            continue
        print(f"{name}: prepared in {time.perf_counter() - t0:.1f} s", flush=True)
        for method in args.methods.split(","):
            for setting in args.settings.split(","):
                for frac in (float(b) for b in args.budgets.split(",")):
                    for seed in (int(s) for s in args.seeds.split(",")):
                        key = f"{method}|{name}|{setting}|{frac}|{seed}"
                        try:
                            _, res = simulate_once(prep, method, setting, frac, seed, NO_CHECKS)
                        except UnsupportedTaskError:
                            continue
                        hashes[key] = {"result": result_hash(res), "trace": trace_hash(res)}
                        print(key, hashes[key]["result"], hashes[key]["trace"], flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(hashes, f, indent=1, sort_keys=True)
    if not args.check:
        return 0
    with open(args.check) as f:
        ref = json.load(f)
    common = sorted(set(ref) & set(hashes))
    diff = [k for k in common if ref[k]["result"] != hashes[k]["result"]]
    tdiff = [k for k in common if ref[k]["trace"] != hashes[k]["trace"]]
    print(f"results identical: {len(common) - len(diff)}/{len(common)} runs")
    print(f"traces identical: {len(common) - len(tdiff)}/{len(common)} runs")
    for k in diff:
        print("DIFFERS:", k)
    for k in tdiff:
        print("trace differs:", k)
    missing = sorted(set(ref) - set(hashes))
    if missing:
        print(f"{len(missing)} reference runs not run now, e.g. {missing[:3]}")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
