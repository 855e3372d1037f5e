"""The routing methods by name (``quorum simulate --method NAME``, ``[bench] methods``).

The registry sits above the routers (``quorum.routing``, ``quorum.baselines``): it knows
them all, they know nothing of it. Classes are imported on first use so that the CLI and
``import quorum`` stay light.

The plain baseline names are the forms the QUORUM paper ran (one labelling LLM, its own
answer and confidence); ``*-ensemble`` are the project's earlier forms, which buy several
models' answers per item for uncertainty (CoAnnotating: and take their majority), and
``random-uniform`` draws each item's LLM uniformly in the dollars setting.

>>> method_names()
['quorum', 'quorum-paper', 'quorum-paper-authors-accounting',
 'random', 'coannotating', 'cdi', 'hypac', 'araida', 'sant',
 'coannotating-ensemble', 'cdi-ensemble', 'hypac-ensemble', 'random-uniform']
>>> get_router_class("Random").__name__
'RandomRouter'
"""

from __future__ import annotations

import importlib
from typing import Any

from quorum.routing.base import Router

METHODS: dict[str, str] = {
    "quorum": "quorum.routing.quorum:QuorumRouter",
    "quorum-paper": "quorum.routing.paper:PaperQuorumRouter",
    "quorum-paper-authors-accounting": "quorum.routing.paper:AuthorsAccountingPaperQuorumRouter",
    "random": "quorum.baselines.random:RandomRouter",
    "coannotating": "quorum.baselines.coannotating:CoAnnotatingRouter",
    "cdi": "quorum.baselines.cdi:CDIRouter",
    "hypac": "quorum.baselines.hypac:HyPACRouter",
    "araida": "quorum.baselines.araida:ARAIDARouter",
    "sant": "quorum.baselines.sant:SANTRouter",
    "coannotating-ensemble": "quorum.baselines.coannotating:CoAnnotatingEnsembleRouter",
    "cdi-ensemble": "quorum.baselines.cdi:CDIEnsembleRouter",
    "hypac-ensemble": "quorum.baselines.hypac_ensemble:HyPACEnsembleRouter",
    "random-uniform": "quorum.baselines.random:RandomUniformRouter",
}


def method_names() -> list[str]:
    """The registered names, QUORUM first."""
    return list(METHODS)


def baseline_names() -> list[str]:
    """The registered baselines (routers of ``quorum.baselines``), in registry order."""
    return [n for n, target in METHODS.items() if target.startswith("quorum.baselines.")]


def get_router_class(name: str) -> type[Router]:
    """The router class registered as ``name`` (case-insensitive)."""
    key = name.lower()
    if key not in METHODS:
        raise ValueError(f"unknown method {name!r}; choose one of {method_names()}")
    mod, cls = METHODS[key].split(":")
    return getattr(importlib.import_module(mod), cls)


def make_router(name: str, **params: Any) -> Router:
    """An instance of the router registered as ``name``, built with ``params``."""
    return get_router_class(name)(**params)
