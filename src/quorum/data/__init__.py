"""Canonical data model, dataset folders and named loaders.

``from quorum.data import load_dataset, list_datasets, load_folder, save_folder``
(resolved lazily so that importing the schema stays cheap).
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "load_dataset": "quorum.data.loaders",
    "list_datasets": "quorum.data.loaders",
    "load_folder": "quorum.data.io",
    "save_folder": "quorum.data.writer",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'quorum.data' has no attribute {name!r}")
