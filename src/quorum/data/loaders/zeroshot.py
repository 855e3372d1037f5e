"""A real local machine annotator for label datasets that record none: zero-shot MiniLM.

:func:`zero_shot_annotations` runs :class:`quorum.models.classifiers.ZeroShotClassifier` (cosine
similarity between the MiniLM embedding of each text and of one description string per
label; confidence = softmax over the similarities) and returns its answers as long
annotations (``item_id, annotator, output, confidence``).

The answers are *computed*, not recorded, so they are cached on disk keyed by content:
``<cache>/annotators/<sha256>.json`` (a :class:`quorum.cache.FileCache`) where ``<cache>``
is ``$QUORUM_CACHE_DIR`` or ``~/.cache/quorum``, and the key hashes the cache
format version, the model, the softmax temperature, the labels with their descriptions and
the texts in order. A warm cache needs no model: torch and sentence-transformers are only
imported on a miss. An unreadable cache file is reported with a warning and recomputed; a
cache folder that cannot be written is reported and skipped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from quorum.cache import FileCache, content_key

#: bump when anything changes the cached answers (classifier, label strings, format)
CACHE_VERSION = "quorum-zeroshot/1"
#: ``ZeroShotClassifier.ident`` (kept here so a cache hit imports no model code)
MODEL = "zero-shot/all-MiniLM-L6-v2"
#: sub-folder of the user cache folder (:func:`quorum.cache.user_cache_dir`)
CACHE_KIND = "annotators"
DEFAULT_TEMPERATURE = 0.05


def cache_key(
    texts: Sequence[str],
    labels: Sequence[str],
    descriptions: Mapping[str, str],
    *,
    model: str = MODEL,
    temperature: float = DEFAULT_TEMPERATURE,
    version: str = CACHE_VERSION,
) -> str:
    """Hex sha256 of version, model, temperature, (label, description) pairs and texts."""
    parts = [version, model, f"temperature={float(temperature)!r}", f"labels={len(labels)}"]
    for lab in labels:
        parts += [str(lab), str(descriptions[lab])]
    parts.append(f"n={len(texts)}")
    parts += [str(t) for t in texts]
    return content_key(parts)


def _predict(
    texts: list[str], labels: list[str], descriptions: Mapping[str, str], temperature: float
) -> tuple[list[str], list[float]]:
    """Run the MiniLM zero-shot classifier (imports torch; the cache-miss path only)."""
    from quorum.models.classifiers import ZeroShotClassifier

    # names=descriptions: each label's string is exactly its description
    clf = ZeroShotClassifier(labels, names=dict(descriptions), temperature=temperature)
    preds = clf.predict_texts(texts)
    outputs = [str(p["output"]) for p in preds]  # type: ignore[index]
    conf = [float(p["confidence"]) for p in preds]  # type: ignore[index]
    return outputs, conf


def _reader(n: int, labels: Sequence[str]):
    def read(path: Path) -> tuple[list[str], list[float]]:
        d = json.loads(path.read_text(encoding="utf-8"))
        outputs = [str(x) for x in d["outputs"]]
        conf = [float(x) for x in d["confidence"]]
        if len(outputs) != n or len(conf) != n:
            raise ValueError(f"{len(outputs)} answers for {n} texts")
        if not set(outputs) <= set(labels) or not all(0.0 <= c <= 1.0 for c in conf):
            raise ValueError("answers outside the label set or confidences outside [0, 1]")
        return outputs, conf

    return read


def zero_shot_annotations(
    items: pd.DataFrame,
    labels: Sequence[str],
    descriptions: Mapping[str, str],
    name: str,
    *,
    temperature: float = DEFAULT_TEMPERATURE,
    cache_dir: str | os.PathLike | None = None,
    use_cache: bool = True,
) -> pd.DataFrame:
    """Zero-shot MiniLM answers for ``items`` (``item_id``, ``text``) as long annotations.

    ``descriptions`` maps every label to the string its embedding is compared with (choose
    them a priori, not by accuracy on gold). Returns one row per item with columns
    ``item_id, annotator, output, confidence``; ``annotator`` is ``name``.
    """
    labels = [str(lab) for lab in labels]
    descs = {str(k): str(v) for k, v in descriptions.items()}
    missing = [lab for lab in labels if not descs.get(lab)]
    if missing:
        raise ValueError(f"zero-shot annotator {name!r}: no description for labels {missing}")
    texts = items["text"].astype("str").tolist()
    ids = items["item_id"].astype("str").to_numpy()

    def predict() -> tuple[list, list]:
        return _predict(texts, labels, descs, temperature) if texts else ([], [])

    def dump(f, got: tuple[list, list]) -> None:
        payload = {
            "version": CACHE_VERSION,
            "model": MODEL,
            "temperature": temperature,
            "labels": labels,
            "descriptions": [descs[lab] for lab in labels],
            "n": len(texts),
            "outputs": got[0],
            "confidence": got[1],
        }
        f.write(json.dumps(payload).encode())

    if use_cache and texts:
        key = cache_key(texts, labels, descs, temperature=temperature)
        if cache_dir is not None:
            store = FileCache(cache_dir, ".json", what="annotator")
        else:
            store = FileCache.under(CACHE_KIND, ".json", what="annotator")
        # predicted once across processes (a second one waits for the first one's file)
        got, _ = store.read_or_make(key, _reader(len(texts), labels), predict, dump, errors="warn")
    else:
        got = predict()
    outputs, conf = got
    return pd.DataFrame(
        {
            "item_id": ids,
            "annotator": name,
            "output": pd.Series(outputs, dtype="object"),
            "confidence": pd.Series(conf, dtype="float64"),
        }
    )
