"""Routing methods by name (`quorum simulate --method NAME`), imported lazily."""

from __future__ import annotations

import importlib

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
}


def method_names() -> list[str]:
    return list(METHODS)


def get_router_class(name: str) -> type[Router]:
    key = name.lower()
    if key not in METHODS:
        raise ValueError(f"unknown method {name!r}; choose one of {method_names()}")
    mod, cls = METHODS[key].split(":")
    return getattr(importlib.import_module(mod), cls)


def make_router(name: str, **params) -> Router:
    return get_router_class(name)(**params)
