"""Item features phi(d_t) (paper, sec. 3.1): linguistic + kNN embedding distances.

Names are imported lazily so that ``import quorum.features`` (and the CLI) stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "FeatureExtractor": "pipeline",
    "FeatureSet": "pipeline",
    "extract_dataset_features": "pipeline",
    "feature_names": "pipeline",
    "linguistic_features": "linguistic",
    "LINGUISTIC_FEATURES": "linguistic",
    "detect_language": "linguistic",
    "Embedder": "quorum.models.embedders",
    "get_embedder": "quorum.models.embedders",
    "knn_search": "neighbours",
    "knn_distances": "neighbours",
    "knn_indices": "neighbours",
    "knn_query": "neighbours",
    "FeatureScaler": "context",
    "context_vector": "context",
    "context_matrix": "context",
    "context_names": "context",
    "FeatureCache": "cache",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'quorum.features' has no attribute {name!r}")
    module = mod if "." in mod else f"quorum.features.{mod}"
    return getattr(importlib.import_module(module), name)
