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
>>> get_router_class("quorum.baselines.random:RandomRouter").__name__
'RandomRouter'
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from typing import Any

from quorum.routing.core.base import Router

METHODS: dict[str, str] = {
    "quorum": "quorum.routing.quorum.router:QuorumRouter",
    "quorum-paper": "quorum.routing.paper.router:PaperQuorumRouter",
    "quorum-paper-authors-accounting": (
        "quorum.routing.paper.router:AuthorsAccountingPaperQuorumRouter"
    ),
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
    """The router class registered as ``name`` (case-insensitive), or ``module:Class``
    (a router of your own, e.g. ``mypkg.routers:MyRouter``)."""
    if ":" in name:
        mod, _, attr = name.partition(":")
        try:
            cls = getattr(importlib.import_module(mod), attr)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"method {name!r}: cannot import ({exc})") from None
        if not (isinstance(cls, type) and issubclass(cls, Router)):
            raise ValueError(f"method {name!r} is not a Router class")
        return cls
    key = name.lower()
    if key not in METHODS:
        raise ValueError(f"unknown method {name!r}; choose one of {method_names()}")
    mod, cls_name = METHODS[key].split(":")
    return getattr(importlib.import_module(mod), cls_name)


def make_router(name: str, **params: Any) -> Router:
    """An instance of the router ``name`` (a registry name or ``module:Class``), built
    with ``params``: the one way to build a router by name (the library's
    :func:`quorum.api.make_router`, the live runner and the bench all come here). A
    parameter the router does not take is a ``ValueError`` naming it
    (:func:`check_params`), not Python's ``TypeError`` from deep in the call."""
    check_params(name, params)
    return get_router_class(name)(**params)


def check_params(name: str, params: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` (one line: the unknown names, then the known ones) where
    ``params`` holds a keyword the ``__init__`` of router ``name`` does not take; a router
    whose ``__init__`` takes ``**kwargs`` takes anything.

    >>> check_params("random", {"seed": 1})
    Traceback (most recent call last):
    ...
    ValueError: random: unknown parameter(s) ['seed']; known: ['llm_choice']
    """
    sig = inspect.signature(get_router_class(name).__init__)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        return
    known = sorted(k for k in sig.parameters if k != "self")
    bad = sorted(set(params) - set(known))
    if bad:
        raise ValueError(f"{name}: unknown parameter(s) {bad}; known: {known}")


def method_trait(name: str, trait: str) -> bool:
    """A trait of the router class ``name`` (a class attribute of
    :class:`~quorum.routing.core.base.Router`: ``uses_item_features``, ``pays_for_confidence``,
    ``is_quorum``); False for a name that is no router.

    >>> method_trait("quorum-paper", "is_quorum"), method_trait("cdi", "pays_for_confidence")
    (True, True)
    """
    try:
        cls = get_router_class(name)
    except ValueError:
        return False
    return bool(getattr(cls, trait))
