"""Named feature profiles: which embedder and which linguistic pipeline compute phi(d_t).

=========  ==========================================  ========================================
profile    embeddings (English)                        linguistic features
=========  ==========================================  ========================================
default    all-MiniLM-L6-v2 (sentence-transformers)    spaCy tokeniser + tagger on every text
static     static model distilled from that MiniLM     as default
fast       static model distilled from that MiniLM     spaCy tokeniser + distilled tagger
onnx       that MiniLM on ONNX Runtime (fp32)          as default
=========  ==========================================  ========================================

Non-English texts keep multilingual-e5-small in every profile (the static model is
distilled from the English MiniLM). The profile is a name: ``FeatureExtractor(profile=...)``,
``quorum features DATASET --profile fast``, or ``$QUORUM_FEATURE_PROFILE`` for code that does
not pass one (the bench, live projects). Speed and agreement with ``default``:
docs/performance.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from quorum.models.embedders import Embedder, embedder_name, get_embedder

ENV_VAR = "QUORUM_FEATURE_PROFILE"
PROFILES: tuple[str, ...] = ("default", "static", "fast", "onnx")


@dataclass(frozen=True)
class Profile:
    """A feature profile: ``static`` embeddings for English? ``light`` linguistic pipeline?
    ``onnx``: MiniLM on ONNX Runtime for English?"""

    name: str
    static: bool
    light: bool
    onnx: bool = False


_SPECS = {
    "default": Profile("default", static=False, light=False),
    "static": Profile("static", static=True, light=False),
    "fast": Profile("fast", static=True, light=True),
    "onnx": Profile("onnx", static=False, light=False, onnx=True),
}


def resolve_profile(profile: str | None = None) -> Profile:
    """The named profile; ``None`` reads ``$QUORUM_FEATURE_PROFILE`` (default ``default``)."""
    name = (profile or os.environ.get(ENV_VAR) or "default").strip().lower()
    if name not in _SPECS:
        raise ValueError(f"unknown feature profile {name!r}; choose one of {', '.join(PROFILES)}")
    return _SPECS[name]


def profile_embedder_name(profile: Profile, language: str | Iterable[str]) -> str:
    """Name of the embedder ``profile`` uses for ``language``, without loading it."""
    base = embedder_name(language)
    if profile.static and base == embedder_name("en"):
        from quorum.features.static import static_name

        return static_name()
    if profile.onnx and base == embedder_name("en"):
        from quorum.features.onnx_embedder import onnx_name

        return onnx_name()
    return base


def profile_embedder(profile: Profile, language: str | Iterable[str]) -> Embedder:
    """The embedder ``profile`` uses for ``language`` (loaded lazily, once per process)."""
    if profile.static and embedder_name(language) == embedder_name("en"):
        return _static()
    if profile.onnx and embedder_name(language) == embedder_name("en"):
        return _onnx()
    return get_embedder(language)


_STATIC: list[Embedder] = []
_ONNX: list[Embedder] = []


def _onnx() -> Embedder:
    if not _ONNX:
        from quorum.features.onnx_embedder import OnnxMiniLMEmbedder

        _ONNX.append(OnnxMiniLMEmbedder())
    return _ONNX[0]


def _static() -> Embedder:
    if not _STATIC:
        from quorum.features.static import StaticEmbedder

        _STATIC.append(StaticEmbedder())
    return _STATIC[0]
