"""Run a benchmark plan: skip cached runs, compute the rest on a process pool.

Scheduling (:mod:`quorum.bench.schedule`): runs are grouped by (dataset, human) and cut into
chunks; the first chunk of a group runs alone, so two workers never compute the same cold
features. Results are appended to the cache as chunks finish, so an interrupted bench keeps
what it computed. Per-run numbers do not depend on the worker (every run seeds its own
generator).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quorum.bench.cache import JsonlStore
from quorum.bench.config import BenchConfig
from quorum.bench.plan import Plan, build_plan
from quorum.bench.schedule import Schedule, Task, plan_tasks, run_inline, run_pool, timing_key
from quorum.bench.worker import group_key
from quorum.progress import ProgressBar


@dataclass
class BenchRun:
    """What a bench invocation produced (rows come from the cache)."""

    config: BenchConfig
    outdir: Path
    plan: Plan
    runs: JsonlStore
    infos: JsonlStore
    timings: JsonlStore
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def cache_dir(self) -> Path:
        return self.outdir / "cache"

    def rows(self, experiment: str) -> list[dict[str, Any]]:
        out = []
        for s in self.plan.runs.get(experiment, []):
            r = self.runs.get(s.key)
            if r is not None:
                out.append(r)
        return out

    def info(self, dataset: str, human: str = "gold") -> dict[str, Any] | None:
        return self.infos.get(group_key(dataset, human))

    def feature_timing(self, dataset: str) -> dict[str, Any] | None:
        return self.timings.get(timing_key(dataset, self.plan.feature_sample))


def _machine() -> dict[str, Any]:
    import platform

    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": mem,
        "os": platform.platform(),
        "python": platform.python_version(),
    }


def _git() -> dict[str, Any]:
    """HEAD, and whether the code (``src/``, ``pyproject.toml``) differs from it. Taken when
    the bench starts: docs edited while it runs do not make its results "uncommitted"."""
    import subprocess

    root = Path(__file__).resolve().parents[3]
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "src", "pyproject.toml"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        return {"commit": head or None, "dirty": bool(dirty)}
    except Exception:
        return {"commit": None, "dirty": None}


def warm_features(
    datasets: list[str], n_process: int, progress: bool, log: Callable[[str], None] | None
) -> dict[str, float]:
    """Compute the features of ``datasets`` missing from the disk cache, in this process.

    Bench workers run one thread each, so a cold dataset featurised inside a worker uses one
    core while the other worker runs out of work; here the embedder uses every torch thread
    and spaCy ``n_process`` processes. Returns the seconds spent per dataset. A dataset that
    fails is left to its worker, which reports the error with its runs.
    """
    from quorum.data.loaders import load_dataset
    from quorum.features.pipeline import extract_dataset_features

    spent: dict[str, float] = {}
    for name in datasets:
        t0 = time.perf_counter()
        try:
            ds = load_dataset(name)
            fs = extract_dataset_features(ds, show_progress=progress, n_process=n_process)
        except Exception as exc:  # the worker reports it with its runs
            if log:
                log(f"features of {name} left to the workers: {exc}")
            continue
        spent[name] = time.perf_counter() - t0
        if log and "load" not in fs.timings:
            log(f"features of {name} computed in {spent[name]:.0f} s")
    return spent


def _collector(
    runs: JsonlStore, infos: JsonlStore, timings: JsonlStore, errors: list[str]
) -> Callable[[Task, dict[str, Any]], None]:
    """What to do with a finished task's result: append it to its cache, note its error."""

    def collect(task: Task, res: dict[str, Any]) -> None:
        if task.kind == "features":
            rec = dict(res)
            rec["key"] = timing_key(*task.args)
            timings.add([rec])
            if res.get("status") != "ok":
                errors.append(f"cold features {task.args[0]}: {res.get('error')}")
            return
        runs.add(res.get("rows", []))
        infos.add([i for i in res.get("infos", []) if i["key"] not in infos])
        if res.get("error"):
            errors.append(res["error"])

    return collect


def _plan_line(n_total: int, n_runs: int, n_tail: int, n_workers: int) -> str:
    return (
        f"{n_total} runs in the plan, {n_runs} to compute ({n_total - n_runs} cached); "
        f"{n_tail} other tasks; {n_workers} worker(s)"
    )


def run_bench(
    cfg: BenchConfig,
    outdir: str | Path,
    workers: int | None = None,
    progress: bool = True,
    command: str | None = None,
    log: Callable[[str], None] | None = None,
) -> BenchRun:
    """Compute every run of ``cfg`` that is not cached under ``outdir/cache``."""
    t_start = time.perf_counter()
    git = _git()
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime())
    out = Path(outdir).expanduser()
    cache_dir = out / "cache"
    cache_dir.mkdir(parents=True, exist_ok=True)
    plan = build_plan(cfg)
    runs = JsonlStore(cache_dir / "runs.jsonl")
    infos = JsonlStore(cache_dir / "datasets.jsonl")
    timings = JsonlStore(cache_dir / "overhead.jsonl")
    t_plan = time.perf_counter()
    queues, tail, n_runs = plan_tasks(plan, runs, infos, timings, cache_dir, cfg.run.chunk_size)
    t_planned = time.perf_counter()
    n_workers = max(1, workers if workers is not None else cfg.run.workers)
    load0 = os.getloadavg() if hasattr(os, "getloadavg") else None
    total_units = n_runs + sum(t.units for t in tail)
    n_tasks = sum(len(q) for q in queues.values()) + len(tail)
    if log:
        log(_plan_line(len(plan.all_runs()), n_runs, len(tail), n_workers))
    errors: list[str] = []
    if n_runs and n_workers > 1:
        warm_features(list(dict.fromkeys(g[0] for g in queues)), n_workers, progress, log)
    collect = _collector(runs, infos, timings, errors)
    schedule = Schedule(queues, tail)
    with ProgressBar(total_units, "bench", enabled=progress and n_tasks > 0) as bar:
        if n_workers == 1 or n_tasks <= 1:
            run_inline(schedule, collect, bar)
        elif n_tasks:
            run_pool(schedule, collect, bar, n_workers)
    t_end = time.perf_counter()
    n_err = sum(1 for s in plan.all_runs() if (runs.get(s.key) or {}).get("status") == "error")
    stats = {
        "command": command,
        "config": cfg.name,
        "config_digest": cfg.digest(),
        "started": started,
        "wall_seconds": round(t_end - t_start, 2),
        "plan_seconds": round(t_planned - t_plan, 2),
        "runs_total": len(plan.all_runs()),
        "runs_computed": n_runs,
        "runs_cached": len(plan.all_runs()) - n_runs,
        "runs_failed": n_err,
        "workers": n_workers,
        "load_before": list(load0) if load0 else None,
        "load_after": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "machine": _machine(),
        "git": git,
        "errors": errors[:20],
    }
    return BenchRun(cfg, out, plan, runs, infos, timings, stats)
