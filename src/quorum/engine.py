"""Where the embarrassingly parallel work runs: in this process (``local``) or on Ray.

Two parts of QUORUM scale out: featurising (linguistic features and embeddings, item by
item) and live LLM calls (I/O). The router itself stays sequential: each decision updates
the posterior the next one reads (see docs/performance.md).

``--engine ray`` (``quorum features``, ``quorum annotate``), ``engine: ray`` in a live
project, ``FeatureExtractor(engine="ray")`` or ``$QUORUM_ENGINE=ray`` pick Ray. Without an
address a local Ray instance is started; ``$RAY_ADDRESS`` or ``ray_address``
(``ray://head:10001`` or ``auto``) joins a cluster, and QUORUM's own code is then shipped to
the workers (``runtime_env.py_modules``). The results are the same as the local engine's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

ENGINES: tuple[str, ...] = ("local", "ray")
ENV_VAR = "QUORUM_ENGINE"
#: passed to every Ray worker: no downloads, no telemetry
WORKER_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
}


def resolve_engine(engine: str | None = None) -> str:
    """``local`` or ``ray``; None reads ``$QUORUM_ENGINE`` (default ``local``)."""
    name = (engine or os.environ.get(ENV_VAR) or "local").strip().lower()
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")
    return name


def ray_module() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ImportError("the Ray engine needs ray: pip install 'quorum-router[ray]'") from exc
    return ray


def ensure_ray(
    address: str | None = None, num_cpus: int | None = None, worker_niceness: int | None = None
) -> Any:
    """Connect to Ray once per process: ``address`` (or ``$RAY_ADDRESS``), else start a
    local instance with ``num_cpus`` CPUs (default: all). Returns the ``ray`` module.

    ``worker_niceness`` (local instance only): the scheduling priority of its workers.
    None gives them this process's own (``os.nice(0)``), not Ray's default of 15: the
    workers do the run's own work (features, LLM tries) while this process waits, and at
    15 they get almost no CPU beside any other busy process (an actor's ``import litellm``
    took 127 s, against 8 s in a process at 0, on 2 busy cores). A cluster (``address``)
    keeps its own.
    """
    ray = ray_module()
    if ray.is_initialized():
        return ray
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    address = address or os.environ.get("RAY_ADDRESS") or None
    runtime_env: dict[str, Any] = {"env_vars": dict(WORKER_ENV)}
    package = os.path.dirname(os.path.abspath(__file__))  # src/quorum
    system_config: dict[str, Any] = {}
    if address and address != "local":
        runtime_env["py_modules"] = [package]
    else:
        # a local instance: workers import QUORUM from the same place as this process and
        # run at its priority
        src = os.path.dirname(package)
        path = os.environ.get("PYTHONPATH", "")
        runtime_env["env_vars"]["PYTHONPATH"] = os.pathsep.join(p for p in (src, path) if p)
        nice = os.nice(0) if worker_niceness is None else int(worker_niceness)
        system_config["worker_niceness"] = nice
    ray.init(
        address=address if address and address != "local" else None,
        num_cpus=None if address and address != "local" else num_cpus,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        runtime_env=runtime_env,
        _system_config=system_config or None,
    )
    return ray


class LocalEngine:
    """Runs every task here, in order."""

    name = "local"

    def map(self, fn: Callable[..., Any], calls: Sequence[tuple]) -> list[Any]:
        return [fn(*args) for args in calls]

    def put(self, obj: Any) -> Any:
        return obj


class RayEngine:
    """Runs tasks as Ray tasks (``num_cpus`` each), results in submission order.

    Parameters: ``address`` of a cluster (None: ``$RAY_ADDRESS``, else a local instance);
    ``num_cpus`` of a local instance; ``task_cpus`` per task.
    """

    name = "ray"

    def __init__(
        self, address: str | None = None, num_cpus: int | None = None, task_cpus: float = 1
    ) -> None:
        self.address = address
        self.num_cpus = num_cpus
        self.task_cpus = task_cpus
        self.ray = ensure_ray(address, num_cpus)

    def workers(self) -> int:
        """CPUs of the cluster (an upper bound on tasks running at once)."""
        return max(1, int(self.ray.cluster_resources().get("CPU", 1) // self.task_cpus))

    def map(self, fn: Callable[..., Any], calls: Sequence[tuple]) -> list[Any]:
        remote = self.ray.remote(num_cpus=self.task_cpus, max_retries=2)(fn)
        return self.ray.get([remote.remote(*args) for args in calls])

    def put(self, obj: Any) -> Any:
        return self.ray.put(obj)


def get_engine(engine: str | LocalEngine | RayEngine | None = None, **kwargs: Any) -> Any:
    """An engine object by name (``kwargs`` go to :class:`RayEngine`), or the one given."""
    if isinstance(engine, LocalEngine | RayEngine):
        return engine
    return RayEngine(**kwargs) if resolve_engine(engine) == "ray" else LocalEngine()
