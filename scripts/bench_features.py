"""Time the feature pipeline (phi of paper sec. 3.1) cold and warm on real datasets.

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .venv/bin/python scripts/bench_features.py \
        [--datasets ag-news imdb-mlapi] [--limit N] [--json out.json]

Cold = empty temporary cache dir (models already loaded: their load time is reported
once, separately); warm = the same call again, answered from the disk cache.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import pandas as pd

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def load_texts(name: str) -> tuple[list[str], str | list[str]]:
    """Texts and language of a dataset, via quorum's loaders or straight from the files."""
    try:
        from quorum.data.loaders import load_dataset
        from quorum.features.pipeline import dataset_languages

        ds = load_dataset(name)
        lang = dataset_languages(ds)
        # the per-item list as it is: "auto" would re-detect, and two ag-news texts detected
        # as Catalan switch the whole dataset to the multilingual embedder
        return ds.items["text"].tolist(), lang
    except ImportError:
        pass
    if name == "ag-news":
        df = pd.read_csv(SHARED / "ag_news_test" / "ag_news_test.csv")
        return (df["title"].str.strip() + "\n" + df["description"].str.strip()).tolist(), "en"
    if name == "imdb-mlapi":
        df = pd.read_parquet(SHARED / "imdb_mlapi" / "imdb_test_mlapi_predictions.parquet")
        return df["text"].tolist(), "en"
    raise SystemExit(f"unknown dataset {name!r} (loaders not available)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["ag-news", "imdb-mlapi"])
    ap.add_argument("--limit", type=int, default=None, help="first N items only")
    ap.add_argument("--json", type=Path, default=None, help="also write results here")
    args = ap.parse_args()

    from quorum.features.linguistic import linguistic_features
    from quorum.features.pipeline import FeatureExtractor
    from quorum.models.embedders import get_embedder

    t = time.perf_counter()
    linguistic_features(["Warm up."], "en")
    get_embedder("en").encode(["Warm up."])
    load_s = time.perf_counter() - t
    print(f"model load (spaCy en + MiniLM): {load_s:.1f} s")

    results = []
    for name in args.datasets:
        texts, lang = load_texts(name)
        if args.limit:
            texts = texts[: args.limit]
            if not isinstance(lang, str):  # one language per item: cut it too
                lang = lang[: args.limit]
        n = len(texts)
        words = float(np.mean([len(x.split()) for x in texts])) if n else 0.0
        load_before = os.getloadavg()[0]
        cpu0 = time.process_time()
        with tempfile.TemporaryDirectory(prefix="quorum-bench-") as tmp:
            cold = FeatureExtractor(cache_dir=tmp).fit_transform(texts, language=lang)
            cold_cpu = time.process_time() - cpu0
            warm = FeatureExtractor(cache_dir=tmp).fit_transform(texts, language=lang)
        load_after = os.getloadavg()[0]
        assert warm.timings["cached"] and np.array_equal(cold.raw, warm.raw, equal_nan=True)
        c, w = cold.timings, warm.timings
        row = {
            "dataset": name,
            "n": n,
            "mean_words": round(words, 1),
            "cold_s": round(c["total"], 2),
            "linguistic_s": round(c["linguistic"], 2),
            "embedding_s": round(c["embedding"], 2),
            "knn_s": round(c["knn"], 3),
            "cold_items_per_s": round(n / c["total"], 1),
            "warm_s": round(w["total"], 3),
            "warm_items_per_s": round(n / w["total"], 1),
            "warm_over_cold": round(w["total"] / c["total"], 5),
            "cold_cpu_s": round(cold_cpu, 1),
            "loadavg_1min_before_after": [round(load_before, 2), round(load_after, 2)],
        }
        results.append(row)
        print(
            f"{name}: n={n} ({words:.0f} words/item) cold {c['total']:.1f} s "
            f"[linguistic {c['linguistic']:.1f} s ({n / c['linguistic']:.0f}/s), "
            f"embedding {c['embedding']:.1f} s ({n / c['embedding']:.0f}/s), "
            f"kNN {c['knn']:.2f} s] = {n / c['total']:.0f} items/s; "
            f"warm {w['total']:.3f} s = {n / w['total']:.0f} items/s; "
            f"warm/cold {w['total'] / c['total']:.4f}; process CPU {cold_cpu:.0f} s; "
            f"load average {load_before:.1f} -> {load_after:.1f} ({os.cpu_count()} cores)",
            flush=True,
        )
    env = {"cpus": os.cpu_count(), "python": platform.python_version(), "model_load_s": load_s}
    if args.json:
        args.json.write_text(json.dumps({"env": env, "results": results}, indent=2))


if __name__ == "__main__":
    main()
