"""phi(d_t) for a whole dataset: linguistic features + kNN cosine distances, normalised.

``phi(d_t) = scale([linguistic(d_t) (6), distances to the k nearest other items (k)])``
(paper, sec. 3.1), with a content-keyed disk cache so a second run on the same texts loads
the numbers without loading spaCy or the embedding model.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from quorum.engine import resolve_engine
from quorum.errors import DataValidationError
from quorum.features.cache import PIPELINE_VERSION, FeatureCache, cache_key
from quorum.features.context import FeatureScaler
from quorum.features.linguistic import (
    LINGUISTIC_FEATURES,
    detect_language,
    linguistic_features,
    normalise_language,
)
from quorum.features.neighbours import knn_query, knn_search
from quorum.features.profiles import profile_embedder, profile_embedder_name, resolve_profile
from quorum.progress import ProgressBar

if TYPE_CHECKING:
    from quorum.data.schema import Dataset


def feature_names(k: int = 5) -> list[str]:
    """``avg_word_length, ..., verb_ratio, knn_dist_1, ..., knn_dist_k``."""
    return [*LINGUISTIC_FEATURES, *(f"knn_dist_{j + 1}" for j in range(k))]


@dataclass
class FeatureSet:
    """Features of n items. ``raw`` and ``phi`` are (n, 6 + k), ``embeddings`` (n, d).

    ``raw`` is unnormalised (NaN where a feature is undefined, e.g. Japanese word length);
    ``phi`` is ``raw`` through the fitted :class:`FeatureScaler`, in [0, 1] without NaN.
    ``neighbours`` (n, k) are the row indices behind the distances (-1 = none).
    ``timings`` holds seconds for ``linguistic``, ``embedding``, ``knn``, ``scaling``,
    ``total`` and ``cached`` (True when read from the disk cache).
    """

    raw: np.ndarray
    phi: np.ndarray
    embeddings: np.ndarray
    names: list[str]
    language: str
    neighbours: np.ndarray
    model: str
    languages: list[str] = field(default_factory=list)
    scaler: FeatureScaler | None = None
    timings: dict[str, Any] = field(default_factory=dict)
    profile: str = "default"

    @property
    def n_items(self) -> int:
        return len(self.raw)

    @property
    def k(self) -> int:
        return self.neighbours.shape[1]

    def to_frame(self, normalised: bool = True, index: Sequence | None = None) -> pd.DataFrame:
        """``phi`` (or ``raw``) as a DataFrame with the feature names as columns."""
        return pd.DataFrame(self.phi if normalised else self.raw, columns=self.names, index=index)

    def summary(self) -> pd.DataFrame:
        """Per-feature mean, std, min, max of ``raw`` and mean of ``phi`` (NaN ignored)."""
        raw = self.to_frame(normalised=False)
        out = pd.DataFrame(
            {"mean": raw.mean(), "std": raw.std(ddof=0), "min": raw.min(), "max": raw.max()}
        )
        out["phi_mean"] = self.phi.mean(axis=0) if self.n_items else np.nan
        return out


def _callback(bar: ProgressBar) -> Callable[[int], None] | None:
    return bar.advance if bar.shown else None


class FeatureExtractor:
    """Computes phi(d_t) for a dataset of texts.

    Parameters: ``k`` neighbours; ``language`` ("auto", a code such as "en", "es", "ca",
    "ja", or one code per text); ``cache`` on/off and ``cache_dir`` (default
    ``$QUORUM_CACHE_DIR`` or ``~/.cache/quorum``); ``show_progress``; ``batch_size`` for
    spaCy and the embedder; ``lower``/``upper`` percentiles of the scaler; ``n_threads``
    for faiss; ``n_process`` spaCy processes for the linguistic features of large inputs;
    ``profile``: ``"default"``, ``"static"`` or ``"fast"`` (:mod:`quorum.features.profiles`;
    None reads ``$QUORUM_FEATURE_PROFILE``); ``tag_sample_tokens``: tokens tagged by the full
    spaCy pipeline to train the ``fast`` profile's tagger; ``engine``: ``"local"`` or
    ``"ray"`` (None reads ``$QUORUM_ENGINE``; :mod:`quorum.engine`), same numbers either way;
    ``ray_address`` of a Ray cluster (None: ``$RAY_ADDRESS``, else a local instance).

    After ``fit``/``fit_transform``: ``feature_set_``, ``scaler_``, ``embeddings_``,
    ``language_``, ``model_``.
    """

    def __init__(
        self,
        k: int = 5,
        language: str | Sequence[str] = "auto",
        cache: bool = True,
        cache_dir: str | None = None,
        show_progress: bool = True,
        batch_size: int = 64,
        lower: float = 1.0,
        upper: float = 99.0,
        n_threads: int = 2,
        n_process: int = 1,
        profile: str | None = None,
        tag_sample_tokens: int = 50_000,
        engine: str | None = None,
        ray_address: str | None = None,
    ) -> None:
        self.k = k
        self.language = language
        self.cache = cache
        self.cache_dir = cache_dir
        self.show_progress = show_progress
        self.batch_size = batch_size
        self.lower = lower
        self.upper = upper
        self.n_threads = n_threads
        self.n_process = n_process
        self.profile = profile
        self.tag_sample_tokens = tag_sample_tokens
        self.engine = engine
        self.ray_address = ray_address

    def _embedder(self, prof: Any, language: Any) -> Any:
        return profile_embedder(prof, language)

    def _on_ray(
        self,
        texts: list[str],
        langs: list[str],
        lang_arg: Any,
        prof: Any,
        ling_fn: Any,
        timings: dict[str, Any],
    ) -> tuple[np.ndarray, np.ndarray]:
        """Linguistic features and embeddings by Ray tasks (same numbers as here)."""
        from quorum.engine import get_engine
        from quorum.features.distributed import engine_embeddings, engine_linguistic

        engine = get_engine("ray", address=self.ray_address)
        parts = 2 * engine.workers()
        t = time.perf_counter()
        ling = engine_linguistic(engine, texts, langs, ling_fn, self.batch_size, parts)
        timings["linguistic"] = time.perf_counter() - t
        t = time.perf_counter()
        embedder = self._embedder(prof, lang_arg)
        emb = engine_embeddings(
            engine, texts, lang_arg, prof.name, embedder, self.batch_size, parts
        )
        timings["embedding"] = time.perf_counter() - t
        return ling, emb

    def _linguistic(self, light: bool) -> Any:
        if not light:
            return linguistic_features
        from quorum.features.fast_linguistic import LightLinguistic

        return LightLinguistic(self.tag_sample_tokens)

    # -- language -----------------------------------------------------------
    def _languages(self, texts: list[str], language: str | Sequence[str] | None) -> list[str]:
        lang = self.language if language is None else language
        if isinstance(lang, str):
            if lang.strip().lower() == "auto":
                return detect_language(texts)
            return [normalise_language(lang)] * len(texts)
        langs = [normalise_language(x) for x in lang]
        if len(langs) != len(texts):
            raise ValueError(f"got {len(langs)} languages for {len(texts)} texts")
        return langs

    def _compute(
        self,
        texts: list[str],
        langs: list[str],
        prof: Any,
        ling_fn: Any,
        timings: dict[str, Any],
    ) -> dict[str, np.ndarray]:
        """Linguistic features, embeddings and the kNN search (seconds into ``timings``)."""
        lang_arg = langs if langs else "en"
        if resolve_engine(self.engine) == "ray":
            ling, emb = self._on_ray(texts, langs, lang_arg, prof, ling_fn, timings)
        else:
            show = {"enabled": self.show_progress, "transient": True}
            t = time.perf_counter()
            with ProgressBar(len(texts), "linguistic features", **show) as bar:
                ling = ling_fn(texts, langs, self.batch_size, _callback(bar), self.n_process)
            timings["linguistic"] = time.perf_counter() - t
            t = time.perf_counter()
            embedder = self._embedder(prof, lang_arg)
            with ProgressBar(len(texts), f"embedding ({embedder.name})", **show) as bar:
                emb = embedder.encode(texts, batch_size=self.batch_size, progress=_callback(bar))
            timings["embedding"] = time.perf_counter() - t
        t = time.perf_counter()
        dist, nbr = knn_search(emb, self.k, self.n_threads)
        timings["knn"] = time.perf_counter() - t
        return {"embeddings": emb, "linguistic": ling, "distances": dist, "neighbours": nbr}

    def _load_or_compute(
        self,
        texts: list[str],
        langs: list[str],
        prof: Any,
        model: str,
        ling_fn: Any,
        lang_label: str,
        compute: Callable[[], dict[str, np.ndarray]],
    ) -> tuple[dict[str, np.ndarray], bool]:
        """The disk cache's arrays for these texts, or ``compute``'s (then stored)."""
        # the default profile keeps its historical key (model name only)
        key_model = model if not prof.light else f"{model}|{ling_fn.spec()}"
        meta = {
            "version": PIPELINE_VERSION,
            "model": model,
            "profile": prof.name,
            "k": self.k,
            "language": lang_label,
            "n": len(texts),
        }
        key = cache_key(texts, model=key_model, language=langs, k=self.k)
        # computed once across processes: a second one waits for the first one's file
        return FeatureCache(self.cache_dir).load_or_compute(key, len(texts), compute, meta)

    # -- main entry points ---------------------------------------------------
    def fit_transform(
        self, texts: Sequence[str], language: str | Sequence[str] | None = None
    ) -> FeatureSet:
        """Features of ``texts``; kNN among these texts; the scaler is fit on them."""
        if self.k < 1:
            raise ValueError(f"k must be >= 1, got {self.k}")
        t0 = time.perf_counter()
        texts = ["" if t is None else str(t) for t in texts]
        langs = self._languages(texts, language)
        uniq = sorted(set(langs))
        lang_label = "+".join(uniq) if uniq else "en"
        prof = resolve_profile(self.profile)
        model = profile_embedder_name(prof, langs if langs else "en")
        ling_fn = self._linguistic(prof.light)
        timings: dict[str, Any] = dict.fromkeys(("linguistic", "embedding", "knn"), 0.0)

        def compute() -> dict[str, np.ndarray]:
            return self._compute(texts, langs, prof, ling_fn, timings)

        if self.cache:
            got, cached = self._load_or_compute(
                texts, langs, prof, model, ling_fn, lang_label, compute
            )
        else:
            got, cached = compute(), False
        if cached:
            timings["load"] = time.perf_counter() - t0
        ling, emb = got["linguistic"], got["embeddings"]
        dist, nbr = got["distances"], got["neighbours"]

        t = time.perf_counter()
        raw = np.hstack([ling, dist.astype(np.float64)])
        self.scaler_ = FeatureScaler(self.lower, self.upper).fit(raw)
        phi = self.scaler_.transform(raw)
        timings["scaling"] = time.perf_counter() - t
        timings["total"] = time.perf_counter() - t0
        timings["cached"] = cached

        self.embeddings_ = emb
        self.language_ = langs
        self.model_ = model
        self.profile_ = prof
        self.linguistic_ = ling_fn
        self.texts_ = texts
        self.feature_set_ = FeatureSet(
            raw=raw,
            phi=phi,
            embeddings=emb,
            names=feature_names(self.k),
            language=lang_label,
            neighbours=nbr,
            model=model,
            languages=langs,
            scaler=self.scaler_,
            timings=timings,
            profile=prof.name,
        )
        return self.feature_set_

    def fit(
        self, texts: Sequence[str], language: str | Sequence[str] | None = None
    ) -> FeatureExtractor:
        self.fit_transform(texts, language)
        return self

    def transform(
        self, texts: Sequence[str], language: str | Sequence[str] | None = None
    ) -> FeatureSet:
        """Features of *new* texts: kNN against the fitted items, the fitted scaler. No cache."""
        if not hasattr(self, "scaler_"):
            raise RuntimeError("call fit or fit_transform before transform")
        t0 = time.perf_counter()
        texts = ["" if t is None else str(t) for t in texts]
        if language is None and not isinstance(self.language, str):
            language = "auto"  # a per-item list belongs to the fitted texts
        langs = self._languages(texts, language)
        timings: dict[str, Any] = {}
        t = time.perf_counter()
        ling_fn = self.linguistic_
        if self.profile_.light and not getattr(ling_fn, "taggers_", None):
            ling_fn(self.texts_, self.language_, self.batch_size)  # fit the tagger (cache hit)
        ling = ling_fn(texts, langs, self.batch_size)
        timings["linguistic"] = time.perf_counter() - t
        t = time.perf_counter()
        # same space as the fitted items
        lang_arg = self.language_ or "en"
        prof = self.profile_
        embedder = profile_embedder(prof, lang_arg)
        emb = embedder.encode(texts, batch_size=self.batch_size)
        timings["embedding"] = time.perf_counter() - t
        t = time.perf_counter()
        dist, nbr = knn_query(self.embeddings_, emb, self.k, self.n_threads)
        timings["knn"] = time.perf_counter() - t
        raw = np.hstack([ling, dist.astype(np.float64)])
        phi = self.scaler_.transform(raw)
        timings["total"] = time.perf_counter() - t0
        timings["cached"] = False
        uniq = sorted(set(langs))
        return FeatureSet(
            raw=raw,
            phi=phi,
            embeddings=emb,
            names=feature_names(self.k),
            language="+".join(uniq) if uniq else "en",
            neighbours=nbr,
            model=embedder.name,
            languages=langs,
            scaler=self.scaler_,
            timings=timings,
            profile=self.profile_.name,
        )


def dataset_languages(dataset: Dataset) -> str | list[str]:
    """Per-item ``items.language`` when every item has one, else ``task.language``."""
    items = dataset.items
    if "language" in items.columns and items["language"].notna().all() and len(items):
        return [str(x) for x in items["language"]]
    return dataset.task.language


#: the longest text spaCy's tagger takes for the linguistic features (its ``nlp.max_length``);
#: past it tagging needs gigabytes (about 5 GB for 1.2 million characters, measured)
MAX_TAGGED_CHARS = 1_000_000


def check_text_lengths(dataset: Dataset, language: Any, profile: str | None = None) -> None:
    """A text too long for the linguistic features' tagger (spaCy; not Japanese, whose
    tagger has no such limit, nor a light profile) is a one-line error naming the items,
    instead of spaCy's E088 advice to raise ``nlp.max_length``."""
    if resolve_profile(profile).light:
        return
    items = dataset.items
    langs = language if isinstance(language, list) else [language] * len(items)
    over = [
        (item, len(text))
        for item, text, lang in zip(items["item_id"], items["text"].astype(str), langs, strict=True)
        if len(text) > MAX_TAGGED_CHARS and str(lang).strip().lower()[:2] != "ja"
    ]
    if over:
        raise DataValidationError(
            f"items: {len(over)} text(s) longer than {MAX_TAGGED_CHARS:,} characters, the most "
            f"the linguistic features' tagger (spaCy) reads, e.g. item_id "
            f"{[i for i, _ in over[:5]]} ({max(n for _, n in over):,} characters); shorten or "
            "split them"
        )


def extract_dataset_features(dataset: Dataset, **kwargs: Any) -> FeatureSet:
    """phi for ``dataset.items["text"]`` (row order kept) in the dataset's language.

    ``kwargs`` go to :class:`FeatureExtractor` (e.g. ``k``, ``cache``, ``show_progress``).
    A text longer than :data:`MAX_TAGGED_CHARS` is refused (:func:`check_text_lengths`).
    """
    kwargs.setdefault("language", dataset_languages(dataset))
    check_text_lengths(dataset, kwargs["language"], kwargs.get("profile"))
    return FeatureExtractor(**kwargs).fit_transform(dataset.items["text"].tolist())
