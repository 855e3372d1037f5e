"""Run a benchmark plan: skip cached runs, compute the rest on a process pool.

Scheduling: runs are grouped by (dataset, human) and cut into chunks. The first chunk of
a group runs alone (it computes features on a cold cache and the summaries' output
embeddings); the group's other chunks are released once it is done, so two workers never
compute the same cold features. Results are appended to the cache as chunks finish, so an
interrupted bench keeps what it computed. Per-run numbers do not depend on the worker
(every run seeds its own generator).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quorum.bench.cache import JsonlStore, digest, hash_files
from quorum.bench.config import BenchConfig
from quorum.bench.plan import Plan, RunSpec, build_plan
from quorum.bench.worker import (
    THREAD_VARS,
    group_key,
    init_worker,
    prepare_only,
    run_chunk,
    time_features,
)
from quorum.progress import ProgressBar


@dataclass
class Task:
    kind: str  # runs | info | features
    label: str
    units: int
    args: tuple
    group: tuple[str, str] | None = None


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


def timing_key(dataset: str, sample: int) -> str:
    from quorum.bench.cache import _PKG, _files, dataset_fingerprint

    code = hash_files(_files(["features/*.py"]), _PKG)
    return digest(["features-cold", dataset, dataset_fingerprint(dataset), sample, code])


def _size_hint(dataset: str, infos: JsonlStore, human: str) -> float:
    """Rough cost of one run: items (or data-file kB), x5 for summaries."""
    from quorum.bench.cache import is_summarization

    factor = 5.0 if is_summarization(dataset) else 1.0
    info = infos.get(group_key(dataset, human))
    if info:
        return info["n_items"] * factor
    from quorum.data.loaders import resolve
    from quorum.data.paths import data_dir

    hit = resolve(dataset)
    root = data_dir(required=False)
    if hit is None or root is None:
        return 1000.0 * factor
    p = root / hit[0].file
    subs = hit[0].sub_names(root) if hit[1] is not None else None
    size = p.stat().st_size if p.is_file() else 1e6
    return size / 1000.0 / max(1, len(subs or [1])) * factor


def _label(specs: list[RunSpec]) -> str:
    s = specs[0]
    meths = sorted({x.method for x in specs})
    sets = sorted({x.setting for x in specs})
    extra = f" human={s.human}" if s.human != "gold" else ""
    return f"{s.dataset}{extra}: {'/'.join(meths)} {'/'.join(sets)}"


def plan_tasks(
    plan: Plan,
    runs: JsonlStore,
    infos: JsonlStore,
    timings: JsonlStore,
    cache_dir: Path,
    chunk_size: int,
) -> tuple[OrderedDict[tuple[str, str], deque[Task]], list[Task], int]:
    """Chunks of runs still to compute (by group, heaviest group first), other tasks."""
    from quorum.bench.cache import Artifacts

    arts = Artifacts(cache_dir)
    todo: dict[tuple[str, str], list[RunSpec]] = {}
    groups_seen: dict[tuple[str, str], None] = {}
    n_runs = 0
    for s in plan.all_runs():
        groups_seen.setdefault(s.group)
        cached = s.key in runs and (not s.keep_trace or arts.has(s.key))
        if not cached:
            todo.setdefault(s.group, []).append(s)
            n_runs += 1
    order = sorted(todo, key=lambda g: -_size_hint(g[0], infos, g[1]) * len(todo[g]))
    queues: OrderedDict[tuple[str, str], deque[Task]] = OrderedDict()
    for g in order:
        specs = sorted(todo[g], key=lambda s: (s.method, s.setting, s.variant, s.budget, s.seed))
        q: deque[Task] = deque()
        for i in range(0, len(specs), chunk_size):
            part = specs[i : i + chunk_size]
            q.append(Task("runs", _label(part), len(part), (part, str(cache_dir)), g))
        queues[g] = q
    tail: list[Task] = []
    for g in groups_seen:
        if g not in todo and group_key(*g) not in infos:
            tail.append(Task("info", f"{g[0]}: dataset info", 0, g, g))
    for d in plan.overhead_datasets:
        if timing_key(d, plan.feature_sample) not in timings:
            tail.append(Task("features", f"{d}: cold features", 1, (d, plan.feature_sample)))
    return queues, tail, n_runs


_FUNCS: dict[str, Callable[..., dict[str, Any]]] = {
    "runs": run_chunk,
    "info": prepare_only,
    "features": time_features,
}


def _running(labels: Iterable[str]) -> str:
    """The text after the progress bar: the tasks running now."""
    return " | ".join(labels)[:160]


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


def _sigterm_to_interrupt() -> Callable[[], None]:
    """Turn SIGTERM into KeyboardInterrupt (so workers are stopped); returns the undo."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, handler)
    return lambda: signal.signal(signal.SIGTERM, old)


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
        log(
            f"{len(plan.all_runs())} runs in the plan, {n_runs} to compute "
            f"({len(plan.all_runs()) - n_runs} cached); {len(tail)} other tasks; "
            f"{n_workers} worker(s)"
        )
    errors: list[str] = []
    if n_runs and n_workers > 1:
        warm_features(list(dict.fromkeys(g[0] for g in queues)), n_workers, progress, log)

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

    state: dict[tuple[str, str], str] = dict.fromkeys(queues, "new")

    def next_task(idle: bool) -> Task | None:
        for g, q in queues.items():
            if q and state[g] in ("new", "open"):
                if state[g] == "new":
                    state[g] = "opening"
                return q.popleft()
        if tail and (idle or not any(queues.values())):
            return tail.pop(0)
        return None

    with ProgressBar(total_units, "bench", enabled=progress and n_tasks > 0) as bar:
        if n_workers == 1 or n_tasks <= 1:
            init_env = {v: os.environ.get(v) for v in THREAD_VARS}
            try:
                while (task := next_task(True)) is not None:
                    bar.update(_running([task.label]))
                    collect(task, _FUNCS[task.kind](*task.args))
                    if task.group is not None:
                        state[task.group] = "open"
                    bar.update(_running([]), task.units)
            finally:
                for k, v in init_env.items():  # inline runs leave the caller's env alone
                    if v is not None:
                        os.environ[k] = v
        elif n_tasks:
            for v in THREAD_VARS:  # inherited by the spawned workers before torch loads
                os.environ.setdefault(v, "1")
            ctx = mp.get_context("spawn")
            undo = _sigterm_to_interrupt()
            with ProcessPoolExecutor(n_workers, mp_context=ctx, initializer=init_worker) as pool:
                running: dict[Future, Task] = {}
                try:
                    while True:
                        while len(running) < n_workers:
                            task = next_task(idle=not running)
                            if task is None:
                                break
                            running[pool.submit(_FUNCS[task.kind], *task.args)] = task
                        if not running:
                            break
                        bar.update(_running(t.label for t in running.values()))
                        done, _ = wait(running, return_when=FIRST_COMPLETED)
                        for fut in done:
                            task = running.pop(fut)
                            collect(task, fut.result())
                            if task.group is not None and state.get(task.group) == "opening":
                                state[task.group] = "open"
                            bar.update(_running(t.label for t in running.values()), task.units)
                except BaseException:
                    procs = list(getattr(pool, "_processes", {}).values())
                    pool.shutdown(wait=False, cancel_futures=True)
                    for p in procs:  # do not leave workers computing for nobody
                        p.terminate()
                    raise
                finally:
                    undo()
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
