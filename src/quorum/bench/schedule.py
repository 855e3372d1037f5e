"""The bench's tasks and their schedule: chunks of runs grouped by (dataset, human), the
dataset-info and cold-feature tasks, and the two ways to execute them (inline, or on a
process pool).

Scheduling: the first chunk of a group runs alone (it computes features on a cold cache and
the summaries' output embeddings); the group's other chunks are released once it is done,
so two workers never compute the same cold features. The tail tasks (dataset info, cold
feature timings) run when a worker would otherwise idle, or after the runs.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quorum.bench.cache import JsonlStore, digest, hash_files
from quorum.bench.plan import Plan, RunSpec
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


def timing_key(dataset: str, sample: int) -> str:
    from quorum.bench.cache import _PKG, _files, dataset_fingerprint

    code = hash_files(_files(["features/*.py"]), _PKG)
    return digest(["features-cold", dataset, dataset_fingerprint(dataset), sample, code])


def _size_hint(dataset: str, infos: JsonlStore, human: str) -> float:
    """Rough cost of one run: items (or data-file kB), x5 for summaries."""
    from quorum.bench.cache import dataset_kind

    factor = 5.0 if dataset_kind(dataset).bench_few_seeds else 1.0
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


class Schedule:
    """The tasks still to hand out: ``queues`` per group, the ``tail``, and each group's state
    (``new`` until its first chunk is handed out, ``opening`` while it runs, then ``open``)."""

    def __init__(self, queues: OrderedDict[tuple[str, str], deque[Task]], tail: list[Task]):
        self.queues = queues
        self.tail = tail
        self.state: dict[tuple[str, str], str] = dict.fromkeys(queues, "new")

    def next_task(self, idle: bool) -> Task | None:
        """The next task to start: a released chunk, else (when ``idle`` or no chunk is left)
        a tail task; None when nothing can start now."""
        for g, q in self.queues.items():
            if q and self.state[g] in ("new", "open"):
                if self.state[g] == "new":
                    self.state[g] = "opening"
                return q.popleft()
        if self.tail and (idle or not any(self.queues.values())):
            return self.tail.pop(0)
        return None


Collect = Callable[[Task, dict[str, Any]], None]


def run_inline(schedule: Schedule, collect: Collect, bar: ProgressBar) -> None:
    """Every task in this process, one after the other (the caller's env is restored)."""
    init_env = {v: os.environ.get(v) for v in THREAD_VARS}
    try:
        while (task := schedule.next_task(True)) is not None:
            bar.update(_running([task.label]))
            collect(task, _FUNCS[task.kind](*task.args))
            if task.group is not None:
                schedule.state[task.group] = "open"
            bar.update(_running([]), task.units)
    finally:
        for k, v in init_env.items():  # inline runs leave the caller's env alone
            if v is not None:
                os.environ[k] = v


def run_pool(schedule: Schedule, collect: Collect, bar: ProgressBar, n_workers: int) -> None:
    """Every task on ``n_workers`` spawned processes; an interrupt stops the workers."""
    for v in THREAD_VARS:  # inherited by the spawned workers before torch loads
        os.environ.setdefault(v, "1")
    ctx = mp.get_context("spawn")
    undo = _sigterm_to_interrupt()
    with ProcessPoolExecutor(n_workers, mp_context=ctx, initializer=init_worker) as pool:
        running: dict[Future, Task] = {}
        try:
            while True:
                while len(running) < n_workers:
                    task = schedule.next_task(idle=not running)
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
                    if task.group is not None and schedule.state.get(task.group) == "opening":
                        schedule.state[task.group] = "open"
                    bar.update(_running(t.label for t in running.values()), task.units)
        except BaseException:
            procs = list(getattr(pool, "_processes", {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for p in procs:  # do not leave workers computing for nobody
                p.terminate()
            raise
        finally:
            undo()
