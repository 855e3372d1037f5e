"""QUORUM: QUality-Optimized Routing Using Multiple annotators.

The library face, loaded lazily so that ``import quorum`` stays fast:

- routers: :class:`QuorumRouter` and the paper's baselines (:class:`RandomRouter`,
  :class:`CoAnnotatingRouter`, :class:`CDIRouter`, :class:`HyPACRouter`,
  :class:`ARAIDARouter`, :class:`SANTRouter`), each with ``route(problem, source, budget)``;
- :func:`replay`: route a DataFrame of recorded answers under a budget (no calls made);
- :func:`annotate`: run a live project (LLM calls, human queue, ledger); :func:`labels`:
  its labels with provenance (a DataFrame or a ``datasets.Dataset``); :func:`report`: its page;
- :func:`make_router`, :func:`load_dataset`, and the data model (:class:`TaskSpec`, ...).

Examples
--------
>>> import quorum
>>> quorum.QuorumRouter(tau_h=0.6).tau_h
0.6
>>> sorted(quorum.method_names())[:3]
['araida', 'cdi', 'cdi-ensemble']
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    # data model
    "AnnotatorSpec": "quorum.data.schema",
    "Dataset": "quorum.data.schema",
    "TaskSpec": "quorum.data.schema",
    "TaskType": "quorum.data.schema",
    "load_dataset": "quorum.data.loaders",
    # routing
    "Budget": "quorum.routing.core.budget",
    "RoutingProblem": "quorum.routing.core.base",
    "RoutingResult": "quorum.routing.core.base",
    "Router": "quorum.routing.core.base",
    "QuorumRouter": "quorum.routing.quorum.router",
    # QuorumRouter's parameter groups (one concept each)
    "Exploration": "quorum.routing.quorum.params",
    "Aggregation": "quorum.routing.quorum.params",
    "Calibration": "quorum.routing.quorum.params",
    "Posterior": "quorum.routing.quorum.params",
    "Spending": "quorum.routing.quorum.params",
    "Refinement": "quorum.routing.quorum.params",
    "Auditing": "quorum.routing.quorum.params",
    "LabelModel": "quorum.routing.quorum.params",
    "Engineering": "quorum.routing.quorum.params",
    "RandomRouter": "quorum.baselines.random",
    "CoAnnotatingRouter": "quorum.baselines.coannotating",
    "CDIRouter": "quorum.baselines.cdi",
    "HyPACRouter": "quorum.baselines.hypac",
    "ARAIDARouter": "quorum.baselines.araida",
    "SANTRouter": "quorum.baselines.sant",
    "method_names": "quorum.methods",
    # the face
    "replay": "quorum.api",
    "annotate": "quorum.api",
    "make_router": "quorum.api",
    "labels": "quorum.api",
    "report": "quorum.api",
    "ProjectConfig": "quorum.live.project.config",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'quorum' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
