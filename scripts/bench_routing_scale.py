"""Routing at scale: items/s, us/item and peak RSS of the QUORUM router on synthetic problems.

Usage:
  python scripts/bench_routing_scale.py [--sizes 10000 30000 100000 1000000]
      [--cells dollars:0.1 dollars:0.7 auditor:0.1 auditor:0.7] [--compare-rev REV]
      [--compare-max 30000] [--mabwiser-decisions 2000] [--compare-backend numpy]
      [--compare-loop python]

Synthetic problems, mechanics only: T items with precomputed features (phi: 11 uniform
columns; no item embeddings, so the auditor orders items in feature space), 3 LLMs whose
accuracy depends on the features, 3 labels, a perfect human (price 0.1). Answers come
from arrays (a source that costs next to nothing), so the time is the router's own.

Every cell (size, setting, budget) runs in a fresh process, so that its peak RSS
(``ru_maxrss``) is its own; the time is that of ``QuorumRouter().route`` alone (building
the problem is excluded and printed apart). In the same run the script measures:
- the floor: one decision of the bare posterior (K pulls of mu_a^T x + one update), and
  MABWiser's LinTS for the same decision (predict + partial_fit of one context) when
  mabwiser is installed (a benchmark-only dependency, not one of QUORUM's);
- with ``--compare-rev REV``: the router as it was at git revision REV (extracted with
  ``git archive``) on the sizes up to ``--compare-max``, for a ratio old / new;
- with ``--compare-backend numpy``: the same router with the numpy posterior
  (``posterior_backend="numpy"``, the reference path) instead of the compiled kernels, on
  the sizes up to ``--compare-max``; "old" then means that path;
- with ``--compare-loop python``: the same router with the Python loops
  (``loop_backend="python"``, the reference path) instead of the compiled loops; "old"
  then means that path, and "same result" whether both gave the same labels, calls and
  cost (a hash of each);
- the growth exponent: the slope of log(seconds) against log(items) per cell.
The 1-minute load average is printed with every row: the machine may be shared. The CPU
seconds of the routing process (``time.process_time``) are printed too: on a loaded
machine the process gets a share of a core, so wall seconds exceed CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

N_FEATURES = 11
PRICES = (0.001, 0.004, 0.02)
LABELS = ("A", "B", "C")


# ---------------------------------------------------------------- synthetic problem
class ArraySource:
    """Answers from arrays: ``outputs[k][t]`` is LLM k's answer on item t (replay, fast)."""

    def __init__(self, ids: np.ndarray, gold: np.ndarray, outputs: dict[str, np.ndarray]):
        from quorum.data.schema import GOLD_HUMAN

        self.index = {item: t for t, item in enumerate(ids.tolist())}
        self.human = GOLD_HUMAN
        self.answers = {GOLD_HUMAN: gold.tolist(), **{a: o.tolist() for a, o in outputs.items()}}
        self.prices = dict(zip(outputs, PRICES, strict=True))
        self.prices[GOLD_HUMAN] = 0.1

    def price(self, annotator: str) -> float:
        return self.prices[annotator]

    def annotate(self, item_id: str, annotator: str):
        from quorum.routing.core.base import Outcome

        out = self.answers[annotator][self.index[item_id]]
        return Outcome(item_id, annotator, out, self.prices[annotator], "ok")

    def annotate_many(self, requests: list[tuple[str, str]]) -> list:
        return [self.annotate(i, a) for i, a in requests]

    def fixed_outputs(self, annotator: str, item_ids: list[str]) -> list[str]:
        """The answers ``annotate`` gives (replay: the compiled loops read them here)."""
        index, answers = self.index, self.answers[annotator]
        return [answers[index[i]] for i in item_ids]

    def confidence(self, item_id: str, annotator: str):  # pragma: no cover - unused
        raise NotImplementedError

    def confidence_price(self, annotator: str) -> float:
        return 0.0

    def embed_outputs(self, texts: list[str]) -> np.ndarray:  # pragma: no cover - unused
        raise NotImplementedError


def synthetic(n: int, setting: str, fraction: float, seed: int = 0):
    """(problem, source, budget) for ``n`` items; accuracies 0.55-0.95 depending on phi."""
    from quorum.data.schema import AnnotatorSpec, TaskSpec
    from quorum.routing.core.base import RoutingProblem
    from quorum.routing.core.budget import budget_for_setting

    rng = np.random.default_rng(seed)
    phi = rng.random((n, N_FEATURES))
    gold_i = rng.integers(len(LABELS), size=n)
    names = [f"llm{k}" for k in range(len(PRICES))]
    labels = np.array(LABELS, dtype=object)
    outputs = {}
    for k, name in enumerate(names):
        acc = 0.55 + 0.1 * k + 0.2 * phi[:, k] * (1 if k % 2 else -1) + 0.2 * (k % 2 == 0)
        right = rng.random(n) < np.clip(acc, 0.05, 0.95)
        wrong = (gold_i + rng.integers(1, len(LABELS), size=n)) % len(LABELS)
        outputs[name] = labels[np.where(right, gold_i, wrong)]
    task = TaskSpec(
        name="synthetic",
        type="classification",
        labels=list(LABELS),
        annotators=[AnnotatorSpec(name=a, price=p) for a, p in zip(names, PRICES, strict=True)],
    )
    ids = np.array([f"i{t}" for t in range(n)], dtype=object)
    problem = RoutingProblem(task=task, item_ids=ids, phi=phi, setting=setting)
    budget, n_h = budget_for_setting(setting, fraction, n, 0.1, min(PRICES))
    problem.human_budget = n_h
    return problem, ArraySource(problem.item_ids, labels[gold_i], outputs), budget


# ---------------------------------------------------------------- one cell (worker)
def worker(n: int, setting: str, fraction: float, spec: str = "") -> dict:
    """One cell; ``spec``: "" (the defaults) or "name=value" (a QuorumRouter parameter)."""
    import hashlib

    from quorum.routing.quorum.router import QuorumRouter

    t0 = time.perf_counter()
    problem, source, budget = synthetic(n, setting, fraction)
    build = time.perf_counter() - t0
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    params = dict([spec.split("=", 1)]) if spec else {}
    t0, c0 = time.perf_counter(), time.process_time()
    router = QuorumRouter(**params)
    res = router.route(problem, source, budget, seed=0)
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    digest = hashlib.sha256()
    for part in (res.labels.to_csv(), res.annotations.to_csv(), repr(res.cost)):
        digest.update(part.encode())
    return {
        "result_hash": digest.hexdigest()[:16],
        "seconds": secs,
        "cpu_seconds": cpu,
        "build_seconds": build,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rss_before_route_mb": rss_before,
        "annotations": len(res.annotations),
        "human_labels": res.human_labels,
        "strategy": res.info.get("dollars_strategy", "auditor"),
        "cost": res.cost,
        "limit": res.budget_limit,
    }


def run_cell(
    src: Path, n: int, setting: str, fraction: float, timeout: float, spec: str = ""
) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    cmd = [sys.executable, __file__, "--worker", f"{n}:{setting}:{fraction}:{spec}"]
    try:
        out = subprocess.run(
            cmd, env=env, capture_output=True, text=True, timeout=timeout, check=True
        )
    except subprocess.TimeoutExpired:
        return {"seconds": float("nan"), "error": f"timeout after {timeout:.0f} s"}
    except subprocess.CalledProcessError as exc:
        return {"seconds": float("nan"), "error": exc.stderr.strip().splitlines()[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- floors
def posterior_floor(decisions: int, dim: int, k: int = 3, backend: str = "numba") -> float:
    """Seconds per decision of the bare posterior: K pulls and one update."""
    from quorum.routing.quorum.posterior import BayesianLinearPosterior

    rng = np.random.default_rng(1)
    X = rng.random((decisions, dim))
    r = rng.random(decisions) < 0.7
    posts = [BayesianLinearPosterior(dim, 0.0, 1.0, 1.0, backend=backend) for _ in range(k)]
    posts[0].update(X[0], 1.0)  # compile (or load) the kernels outside the timer
    t0 = time.perf_counter()
    for i in range(decisions):
        x = X[i]
        q = [p.pull(x) for p in posts]
        posts[int(np.argmax(q))].update(x, float(r[i]))
    return (time.perf_counter() - t0) / decisions


def mabwiser_floor(decisions: int, dim: int, k: int = 3) -> float | None:
    """Seconds per decision of MABWiser's LinTS (predict + partial_fit of one context)."""
    # mabwiser is the comparison of this benchmark only: the `perf` extra of pyproject.toml
    # (`pip install "quorum-router[perf]"`); without it the script says so
    try:
        from mabwiser.mab import MAB, LearningPolicy
    except ImportError:
        return None
    rng = np.random.default_rng(1)
    X = rng.random((decisions + 50, dim))
    r = (rng.random(decisions + 50) < 0.7).astype(float)
    arms = list(range(k))
    mab = MAB(arms, LearningPolicy.LinTS(alpha=1.0), seed=0)
    mab.fit([a % k for a in range(50)], r[:50], X[:50])
    t0 = time.perf_counter()
    for i in range(50, 50 + decisions):
        arm = mab.predict(X[i : i + 1])
        mab.partial_fit([arm], r[i : i + 1], X[i : i + 1])
    return (time.perf_counter() - t0) / decisions


# ---------------------------------------------------------------- main
def old_source(rev: str) -> Path:
    repo = Path(__file__).resolve().parents[1]
    out = Path(tempfile.mkdtemp(prefix="quorum-old-"))
    tar = subprocess.run(
        ["git", "-C", str(repo), "archive", rev, "src"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=tar, check=True)
    return out / "src"


def growth_exponent(sizes: list[int], secs: list[float]) -> float:
    ok = [(n, s) for n, s in zip(sizes, secs, strict=True) if s == s and s > 0]
    if len(ok) < 2:
        return float("nan")
    x, y = np.log([n for n, _ in ok]), np.log([s for _, s in ok])
    return float(np.polyfit(x, y, 1)[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 30_000, 100_000, 1_000_000])
    ap.add_argument(
        "--cells", nargs="+", default=["dollars:0.1", "dollars:0.7", "auditor:0.1", "auditor:0.7"]
    )
    ap.add_argument("--compare-rev", help="also run the router at this git revision")
    ap.add_argument("--compare-max", type=int, default=30_000)
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--floor-decisions", type=int, default=20_000)
    ap.add_argument("--mabwiser-decisions", type=int, default=2_000)
    ap.add_argument(
        "--compare-backend",
        choices=["numpy", "numba"],
        help="also run each cell with this posterior_backend (up to --compare-max items)",
    )
    ap.add_argument(
        "--compare-loop",
        choices=["python"],
        help="also run each cell with this loop_backend (the Python loops, the reference "
        "path; up to --compare-max items)",
    )
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        n, setting, frac, spec = args.worker.split(":", 3)
        print(json.dumps(worker(int(n), setting, float(frac), spec)))
        return

    src = Path(__file__).resolve().parents[1] / "src"
    old = old_source(args.compare_rev) if args.compare_rev else None
    dim = N_FEATURES + 2 + len(PRICES) + 1
    floor = posterior_floor(args.floor_decisions, dim)
    floor_np = posterior_floor(args.floor_decisions, dim, backend="numpy")
    mab = mabwiser_floor(args.mabwiser_decisions, dim)
    print(f"load average: {os.getloadavg()[0]:.1f}, cores: {os.cpu_count()}")
    print(
        f"posterior floor: {floor * 1e6:.1f} us/decision (3 pulls + 1 update, d = {dim}; "
        f"numpy path {floor_np * 1e6:.1f} us)"
    )
    if mab is None:
        print("MABWiser: not installed (pip install 'quorum-router[perf]'; make test installs it)")
    else:
        print(
            f"MABWiser LinTS: {mab * 1e6:.1f} us/decision (predict + partial_fit); "
            f"posterior lead {mab / floor:.1f}x (numpy path {mab / floor_np:.1f}x)"
        )
    print()
    head = (
        f"{'cell':<13} {'items':>9} {'seconds':>8} {'items/s':>9} {'us/item':>8} "
        f"{'x floor':>7} {'CPU s':>7} {'CPU us/item':>11} {'RSS MB':>7} {'old s':>8} "
        f"{'old/new':>7} {'strategy':>8} {'load':>5}"
    )
    print(head)
    for cell in args.cells:
        setting, frac = cell.split(":")
        secs, cpus = [], []
        for n in args.sizes:
            r = run_cell(src, n, setting, float(frac), args.timeout)
            o = None
            if old is not None and n <= args.compare_max:
                o = run_cell(old, n, setting, float(frac), args.timeout)
            elif args.compare_backend and n <= args.compare_max:
                spec = f"posterior_backend={args.compare_backend}"
                o = run_cell(src, n, setting, float(frac), args.timeout, spec)
            elif args.compare_loop and n <= args.compare_max:
                spec = f"loop_backend={args.compare_loop}"
                o = run_cell(src, n, setting, float(frac), args.timeout, spec)
            s, cpu = r["seconds"], r.get("cpu_seconds", float("nan"))
            secs.append(s)
            cpus.append(cpu)
            us = s / n * 1e6
            old_s = o["seconds"] if o else float("nan")
            old_cpu = o.get("cpu_seconds", float("nan")) if o else float("nan")
            print(
                f"{cell:<13} {n:>9,} {s:>8.2f} {n / s:>9,.0f} {us:>8.1f} "
                f"{us / (floor * 1e6):>7.1f} {cpu:>7.2f} {cpu / n * 1e6:>11.1f} "
                f"{r.get('peak_rss_mb', float('nan')):>7.0f} {old_s:>8.2f} {old_s / s:>7.1f} "
                f"{r.get('strategy', '-'):>8} {os.getloadavg()[0]:>5.1f}"
                + (f"  old CPU s {old_cpu:.2f} ({old_cpu / cpu:.1f}x)" if o else "")
                + (f"  same result: {o.get('result_hash') == r.get('result_hash')}" if o else "")
                + (f"  {r['error']}" if "error" in r else "")
                + (f"  old: {o['error']}" if o and "error" in o else ""),
                flush=True,
            )
        slope, slope_cpu = growth_exponent(args.sizes, secs), growth_exponent(args.sizes, cpus)
        print(
            f"{cell:<13} growth exponent (log s / log items): {slope:.2f} wall, {slope_cpu:.2f} CPU"
        )


if __name__ == "__main__":
    main()
