"""Named feature profiles: which embedder and which linguistic pipeline compute phi(d_t).

=========  ==========================================  ========================================
profile    embeddings (English)                        linguistic features
=========  ==========================================  ========================================
default    all-MiniLM-L6-v2 (sentence-transformers)    spaCy tokeniser + tagger on every text
static     static model distilled from that MiniLM     as default
fast       static model distilled from that MiniLM     spaCy tokeniser + distilled tagger
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
PROFILES: tuple[str, ...] = ("default", "static", "fast")


@dataclass(frozen=True)
class Profile:
    """A feature profile: ``static`` embeddings for English? ``light`` linguistic pipeline?"""

    name: str
    static: bool
    light: bool


_SPECS = {
    "default": Profile("default", static=False, light=False),
    "static": Profile("static", static=True, light=False),
    "fast": Profile("fast", static=True, light=True),
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
    return base


def profile_embedder(profile: Profile, language: str | Iterable[str]) -> Embedder:
    """The embedder ``profile`` uses for ``language`` (loaded lazily, once per process)."""
    if profile.static and embedder_name(language) == embedder_name("en"):
        return _static()
    return get_embedder(language)


_STATIC: list[Embedder] = []


def _static() -> Embedder:
    if not _STATIC:
        from quorum.features.static import StaticEmbedder

        _STATIC.append(StaticEmbedder())
    return _STATIC[0]
