"""Light features: text statistics and hashed words, no model (fast; for tests and demos).

These are *not* the paper's phi(d_t) (:mod:`quorum.features.pipeline` computes those);
they give the router a deterministic context when loading a model is not wanted.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

#: names of the columns of :func:`light_features`' phi
LIGHT_FEATURE_NAMES = [
    "log_chars",
    "log_words",
    "digit_share",
    "upper_share",
    "punct_share",
    "mean_word_length",
]


def light_features(texts: list[str], dim: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """(phi, embeddings): six min-max scaled text statistics and a hashed bag of words.

    >>> phi, emb = light_features(["A short text.", "Another, longer text with 42."])
    >>> phi.shape, emb.shape
    ((2, 6), (2, 64))
    """
    rows, emb = [], np.zeros((len(texts), dim))
    for i, t in enumerate(texts):
        words = re.findall(r"\w+", t.lower())
        n = max(1, len(t))
        rows.append(
            [
                np.log1p(len(t)),
                np.log1p(len(words)),
                sum(c.isdigit() for c in t) / n,
                sum(c.isupper() for c in t) / n,
                sum(not c.isalnum() and not c.isspace() for c in t) / n,
                np.mean([len(w) for w in words]) if words else 0.0,
            ]
        )
        for w in words:
            h = int(hashlib.md5(w.encode()).hexdigest()[:8], 16)
            emb[i, h % dim] += 1.0 if (h >> 16) & 1 else -1.0
    phi = np.asarray(rows, dtype=np.float64).reshape(len(texts), len(LIGHT_FEATURE_NAMES))
    lo, hi = phi.min(axis=0), phi.max(axis=0)
    phi = (phi - lo) / np.where(hi > lo, hi - lo, 1.0)
    norm = np.linalg.norm(emb, axis=1, keepdims=True)
    return phi, emb / np.where(norm > 0, norm, 1.0)
