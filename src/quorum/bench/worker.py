"""What runs inside a bench worker process: prepare a dataset once, route, score.

Each worker keeps the last few prepared datasets, so the chunks of one dataset reuse its
features (read from the features module's disk cache) and, for summaries, the
embeddings of the recorded summaries (read from a disk cache filled in one batch).
"""

from __future__ import annotations

import json
import os
import time
import traceback
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from quorum.bench.cache import (
    Artifacts,
    TextEmbeddingCache,
    code_version,
    dataset_fingerprint,
    digest,
)
from quorum.bench.plan import RunSpec

THREAD_VARS = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)
_KEEP = 3  # prepared datasets kept per worker


def limit_threads() -> None:
    """One BLAS/torch thread per worker: the workers are the parallelism."""
    for v in THREAD_VARS:
        os.environ[v] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import torch

        torch.set_num_threads(1)
    except Exception:  # pragma: no cover - torch is a dependency
        pass


def init_worker() -> None:
    limit_threads()
    import warnings

    warnings.filterwarnings("ignore")


def group_key(dataset: str, human: str) -> str:
    from quorum.features.profiles import resolve_profile

    parts = ["group", dataset, dataset_fingerprint(dataset), human, code_version("")]
    profile = resolve_profile().name  # $QUORUM_FEATURE_PROFILE; default keys unchanged
    return digest(parts if profile == "default" else [*parts, profile])


@dataclass
class _Group:
    prep: Any
    info: dict[str, Any]
    scratch: dict[str, Any] = field(default_factory=dict)


_GROUPS: OrderedDict[tuple[str, str], _Group] = OrderedDict()


def _quality(ds: Any, names: list[str]) -> dict[str, float]:
    """Accuracy (labels) or ROUGE-1 (summaries) of each annotator over all items."""
    items = ds.items.set_index("item_id")
    kind = ds.task.kind
    out: dict[str, float] = {}
    for a in names:
        pred = ds.predictions(a)
        pred.index = ds.items["item_id"]
        if kind.reference_column in items.columns:
            out[a] = kind.metric(pred, items[kind.reference_column], ds.task.language)
    return out


def _cached_embedder(prep: Any, fingerprint: str) -> None:
    """Summaries: embed every recorded output and reference once, batched, cached on disk."""
    src = prep.source
    if src.embed_fn is None:
        return
    from quorum.models.embedders import embedder_name, get_embedder

    lang = prep.task.language
    store = TextEmbeddingCache(embedder_name(lang), f"{prep.task.name}:{fingerprint}")
    ds = prep.dataset
    texts = [t for t in ds.annotations["output"].tolist() if isinstance(t, str) and t]
    if "reference" in ds.items.columns:
        texts += [t for t in ds.items["reference"].tolist() if isinstance(t, str) and t]
    missing = store.missing(texts)
    encoder = get_embedder(lang).encode
    if missing:
        store.put(missing, encoder(missing))
        store.save()

    def embed(batch: list[str]) -> np.ndarray:
        new = store.missing(batch)
        if new:
            store.put(new, encoder(new))
        return store.get(batch)

    src.embed_fn = embed


def prepare_group(dataset: str, human: str) -> _Group:
    """Load, featurise and prepare a dataset for one human (cached per worker)."""
    gk = (dataset, human)
    if gk in _GROUPS:
        _GROUPS.move_to_end(gk)
        return _GROUPS[gk]
    from quorum.data.loaders import load_dataset
    from quorum.features.pipeline import extract_dataset_features
    from quorum.simulate import prepare

    t0 = time.perf_counter()
    ds = load_dataset(dataset)
    load_s = time.perf_counter() - t0
    feats = extract_dataset_features(ds, show_progress=False)
    prep = prepare(ds, human=human, features=feats)
    fp = dataset_fingerprint(dataset)
    t1 = time.perf_counter()
    _cached_embedder(prep, fp)
    emb_s = time.perf_counter() - t1
    panel = [a.name for a in prep.task.llms]
    humans = [a.name for a in ds.task.annotators if a.kind == "human"]
    quality = _quality(ds, panel + humans)
    info = {
        "key": group_key(dataset, human),
        "dataset": dataset,
        "human": human,
        "n_items": int(ds.n_items),
        "type": ds.task.type.value,
        "metric": ds.task.kind.metric_name,
        "language": ds.task.language,
        "panel": panel,
        "prices": {a.name: a.price for a in prep.task.llms},
        "human_price": prep.task.human_spec.price,
        "all_human_cost": float(ds.n_items * prep.task.human_spec.price),
        "mca_reference": prep.task.mca_reference,
        "llm_quality": {a: quality[a] for a in panel if a in quality},
        "llm_mean": float(np.mean([quality[a] for a in panel if a in quality]))
        if any(a in quality for a in panel)
        else None,
        "human_noise": {a: 1.0 - quality[a] for a in humans if a in quality},
        "feature_names": list(feats.names),
        "feature_timings": {k: v for k, v in feats.timings.items()},
        "load_seconds": load_s,
        "output_embedding_seconds": emb_s,
    }
    g = _Group(prep, info)
    _GROUPS[gk] = g
    while len(_GROUPS) > _KEEP:
        _GROUPS.popitem(last=False)
    return g


def _base_row(spec: RunSpec) -> dict[str, Any]:
    return {
        "key": spec.key,
        "dataset": spec.dataset,
        "method": spec.method,
        "setting": spec.setting,
        "budget": spec.budget,
        "seed": spec.seed,
        "variant": spec.variant,
        "params": json.dumps(spec.param_dict, sort_keys=True),
        "human": spec.human,
        "human_labels_budget": spec.human_labels,
    }


def run_one(spec: RunSpec, artifacts: Artifacts | None) -> dict[str, Any]:
    """Route one spec; errors become a row with ``status = "error"``."""
    from quorum.bench.ablation import with_variant
    from quorum.simulate import simulate_once

    t0, c0 = time.perf_counter(), time.process_time()
    base = _base_row(spec)
    try:
        g = prepare_group(spec.dataset, spec.human)
        prep = with_variant(g.prep, spec.variant, spec.seed, g.scratch)
        frac = spec.budget
        if spec.human_labels is not None:
            frac = min(1.0, spec.human_labels / prep.dataset.n_items)
        row, result = simulate_once(
            prep, spec.method, spec.setting, frac, spec.seed, spec.param_dict
        )
        if spec.keep_trace and artifacts is not None and result.trace is not None:
            info = {
                k: result.info[k] for k in ("posterior_means", "context_names") if k in result.info
            }
            info["arms"] = list(result.info.get("posterior_means", {}))
            info["feature_names"] = g.info["feature_names"]
            info["human"] = prep.task.human
            artifacts.save(spec.key, result.trace, info)
        row.update(base)
        row["budget"] = frac if spec.human_labels is not None else spec.budget
        row["status"] = "ok"
    except Exception as exc:
        row = dict(base)
        row["status"] = "error"
        row["error"] = f"{type(exc).__name__}: {exc}"
        row["traceback"] = traceback.format_exc(limit=6)
    row["wall_seconds"] = round(time.perf_counter() - t0, 4)
    row["cpu_seconds"] = round(time.process_time() - c0, 4)
    row["worker"] = os.getpid()
    return row


def run_chunk(specs: list[RunSpec], cache_dir: str) -> dict[str, Any]:
    """Run a chunk of specs (one group); return rows and the group's dataset info."""
    arts = Artifacts(Path(cache_dir))
    rows = [run_one(s, arts) for s in specs]
    infos = []
    for gk in dict.fromkeys(s.group for s in specs):
        if gk in _GROUPS:
            infos.append(_GROUPS[gk].info)
    return {"rows": rows, "infos": infos}


def prepare_only(dataset: str, human: str) -> dict[str, Any]:
    """Dataset info without routing (when every run is cached but the info is not)."""
    try:
        return {"rows": [], "infos": [prepare_group(dataset, human).info]}
    except Exception as exc:
        return {"rows": [], "infos": [], "error": f"{dataset}: {type(exc).__name__}: {exc}"}


def time_features(dataset: str, sample: int) -> dict[str, Any]:
    """Cold feature extraction (no disk cache) on at most ``sample`` items, scaled to all."""
    from quorum.data.loaders import load_dataset
    from quorum.features.pipeline import extract_dataset_features

    try:
        ds = load_dataset(dataset)
        n = ds.n_items
        if n > sample:
            rng = np.random.default_rng(0)
            ids = ds.items["item_id"].to_numpy()[np.sort(rng.choice(n, sample, replace=False))]
            sub = ds.subset(ids)
        else:
            sub = ds
        # a first tiny call loads spaCy and the embedding model (timed apart)
        t0 = time.perf_counter()
        warm = ds.subset(ds.items["item_id"].to_numpy()[:8])
        extract_dataset_features(warm, cache=False, show_progress=False)
        model_load = time.perf_counter() - t0
        fs = extract_dataset_features(sub, cache=False, show_progress=False)
        tm = {k: float(v) for k, v in fs.timings.items() if k != "cached"}
        m = sub.n_items
        scale = n / m if m else 1.0
        # per-item work scales linearly; exact kNN search compares every pair
        est = (tm.get("linguistic", 0.0) + tm.get("embedding", 0.0)) * scale
        est += tm.get("knn", 0.0) * scale**2 + tm.get("scaling", 0.0) * scale
        return {
            "dataset": dataset,
            "n_items": n,
            "sample": m,
            "timings": tm,
            "model_load_seconds": model_load,
            "estimated_full_seconds": est if m < n else tm.get("total", est),
            "scaled": m < n,
            "status": "ok",
        }
    except Exception as exc:
        return {"dataset": dataset, "status": "error", "error": f"{type(exc).__name__}: {exc}"}
