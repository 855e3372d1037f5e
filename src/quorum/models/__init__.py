"""Bundled models, the ground floor every layer may use: sentence embedders
(:mod:`quorum.models.embedders`) and local classifiers (:mod:`quorum.models.classifiers`).

Names are imported lazily: ``import quorum.models`` loads neither torch nor a model.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Embedder": "embedders",
    "get_embedder": "embedders",
    "embedder_name": "embedders",
    "embed": "embedders",
    "LocalModel": "classifiers",
    "Prediction": "classifiers",
    "ZeroShotClassifier": "classifiers",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'quorum.models' has no attribute {name!r}")
    return getattr(importlib.import_module(f"quorum.models.{mod}"), name)
