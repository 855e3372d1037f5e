"""Phase 2 compiled against the Python loop: the same results, and the CPU seconds of each.

Usage:
  python scripts/compare_phase2_loop.py [--n 100000] [--cells dollars:0.1 dollars:0.7]
      [--repeats 1] [--backends numba python]

For each cell, the scale benchmark's synthetic problem (scripts/bench_routing_scale.py) is
routed by ``QuorumRouter(loop_backend=...)`` with "numba" and "python" in turn, in this
process (the compiled loop is compiled or loaded from numba's cache before the timers).
Printed per run: the CPU seconds (``time.process_time``) of the whole route and of phase 2
alone (``route_rest``), the path the dollars run took, and a hash of (labels,
annotations, cost) and of the trace, which must be equal for both backends.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_routing_scale import synthetic  # the scale benchmark's problem
from route_hashes import _frame_digest, result_hash

from quorum.routing.quorum import flow, phase2
from quorum.routing.quorum.router import QuorumRouter


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--cells", nargs="+", default=["dollars:0.1", "dollars:0.7"])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--backends", nargs="+", default=["numba", "python"])
    args = ap.parse_args()
    phase2_cpu = [0.0]
    real = phase2.route_rest

    def timed(*a, **k):
        c0 = time.process_time()
        try:
            return real(*a, **k)
        finally:
            phase2_cpu[0] += time.process_time() - c0

    flow.route_rest = timed  # flow calls it by the name it imported
    # compile (or load from the cache) outside the timers
    QuorumRouter().route(*synthetic(2000, "dollars", 0.7), seed=0)
    for cell in args.cells:
        setting, fraction = cell.split(":")
        hashes = {}
        for _ in range(args.repeats):
            for backend in args.backends:
                problem, source, budget = synthetic(args.n, setting, float(fraction))
                phase2_cpu[0] = 0.0
                c0 = time.process_time()
                res = QuorumRouter(loop_backend=backend).route(problem, source, budget, seed=0)
                cpu = time.process_time() - c0
                h = (result_hash(res), _frame_digest(res.trace)[:16])
                hashes.setdefault(backend, h)
                print(
                    f"{cell} n={args.n} {backend:6s} route {cpu:6.2f} CPU s, "
                    f"phase 2 {phase2_cpu[0]:6.2f} CPU s, "
                    f"path {res.info.get('dollars_strategy', '-')}, result {h[0]} trace {h[1]}",
                    flush=True,
                )
        if len(hashes) > 1:
            same = len(set(hashes.values())) == 1
            print(f"{cell}: results and traces {'identical' if same else 'DIFFER'}", flush=True)


if __name__ == "__main__":
    main()
