"""Items/s of each feature profile against the default, measured in the same run.

    PYTHONPATH=src .venv/bin/python scripts/bench_feature_profiles.py \
        [--datasets ag-news imdb-mlapi] [--limit 3000] [--profiles default static fast]

For each dataset, every profile computes phi for the same texts with the cache off
(models loaded beforehand; load and one-off distillation times are printed separately), and
the script prints: items/s, the speed-up over ``default`` in this run, the agreement of each
item's 5 nearest neighbours with the default (MiniLM) ones (mean |N5 ∩ N5_default| / 5),
and how the linguistic features compare with the default ones (largest absolute
difference for the four that do not need tags; Pearson r and mean absolute difference for
noun_ratio and verb_ratio).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_features import load_texts


def knn_agreement(a: np.ndarray, b: np.ndarray) -> float:
    """Mean share of each row's neighbours (row indices, -1 = none) found in both."""
    k = a.shape[1]
    hits = [len(set(x[x >= 0]) & set(y[y >= 0])) for x, y in zip(a, b, strict=True)]
    return float(np.mean(hits)) / k if hits else float("nan")


def compare_linguistic(raw: np.ndarray, ref: np.ndarray) -> dict[str, float]:
    same = np.nan_to_num(raw[:, :4], nan=0.0) - np.nan_to_num(ref[:, :4], nan=0.0)
    out = {"first4_max_abs_diff": float(np.abs(same).max()) if len(raw) else 0.0}
    for j, name in ((4, "noun_ratio"), (5, "verb_ratio")):
        x, y = raw[:, j], ref[:, j]
        r = float(np.corrcoef(x, y)[0, 1]) if x.std() > 0 and y.std() > 0 else 1.0
        out[f"{name}_r"] = r if not np.array_equal(x, y) else 1.0
        out[f"{name}_mae"] = float(np.abs(x - y).mean())
    return out


def warm(profiles: list[str]) -> dict[str, float]:
    """Load every model once (timed), so the runs below measure computing only."""
    from quorum.features.linguistic import linguistic_features
    from quorum.models.embedders import get_embedder

    spent = {}
    t = time.perf_counter()
    linguistic_features(["Warm up the tagger."], "en")
    spent["spacy_en_load_s"] = time.perf_counter() - t
    t = time.perf_counter()
    get_embedder("en").encode(["Warm up."])
    spent["minilm_load_s"] = time.perf_counter() - t
    if any(p != "default" for p in profiles):
        from quorum.features.static import distill_static, static_model_dir

        t = time.perf_counter()
        fresh = not (static_model_dir() / "model.safetensors").exists()
        distill_static()
        spent["static_distill_s" if fresh else "static_check_s"] = time.perf_counter() - t
        from quorum.features.profiles import profile_embedder, resolve_profile

        t = time.perf_counter()
        profile_embedder(resolve_profile("fast"), "en").encode(["Warm up."])
        spent["static_load_s"] = time.perf_counter() - t
    return spent


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["ag-news", "imdb-mlapi"])
    ap.add_argument("--limit", type=int, default=3000, help="first N items (0 = all)")
    ap.add_argument("--profiles", nargs="+", default=["default", "static", "fast"])
    ap.add_argument("--json", type=Path, default=None, help="also write results here")
    args = ap.parse_args(argv)
    if args.profiles[0] != "default":
        args.profiles = ["default", *[p for p in args.profiles if p != "default"]]

    from quorum.features.pipeline import FeatureExtractor

    loads = warm(args.profiles)
    print("model load: " + ", ".join(f"{k} {v:.1f}" for k, v in loads.items()), flush=True)
    rows = []
    for name in args.datasets:
        texts, lang = load_texts(name)
        if args.limit:
            texts = texts[: args.limit]
            if not isinstance(lang, str):  # one language per item: cut it too
                lang = lang[: args.limit]
        n = len(texts)
        words = float(np.mean([len(x.split()) for x in texts])) if n else 0.0
        ref = None
        for prof in args.profiles:
            load0 = os.getloadavg()[0]
            fx = FeatureExtractor(profile=prof, cache=False, show_progress=False)
            fs = fx.fit_transform(texts, language=lang)
            t = fs.timings
            row = {
                "dataset": name, "n": n, "mean_words": round(words, 1), "profile": prof,
                "model": fs.model, "total_s": t["total"], "items_per_s": n / t["total"],
                "linguistic_s": t["linguistic"], "embedding_s": t["embedding"],
                "knn_s": t["knn"], "loadavg_1min": [load0, os.getloadavg()[0]],
            }  # fmt: skip
            if ref is None:
                ref, base_rate = fs, row["items_per_s"]
            else:
                row["speedup_vs_default"] = row["items_per_s"] / base_rate
                row["knn5_agreement"] = knn_agreement(fs.neighbours, ref.neighbours)
                row.update(compare_linguistic(fs.raw, ref.raw))
            rows.append(row)
            extra = ""
            if "speedup_vs_default" in row:
                extra = (
                    f" = {row['speedup_vs_default']:.1f}x default; 5-NN agreement "
                    f"{row['knn5_agreement']:.3f}; first 4 linguistic max |diff| "
                    f"{row['first4_max_abs_diff']:.2g}; noun_ratio r {row['noun_ratio_r']:.3f}, "
                    f"verb_ratio r {row['verb_ratio_r']:.3f}"
                )
            print(
                f"{name} n={n} ({words:.0f} words/item) {prof:8s} {t['total']:8.2f} s "
                f"(linguistic {t['linguistic']:.2f}, embedding {t['embedding']:.2f}, "
                f"kNN {t['knn']:.2f}) {n / t['total']:9.1f} items/s{extra}; "
                f"load {load0:.1f}",
                flush=True,
            )
    env = {"cpus": os.cpu_count(), "python": platform.python_version(), **loads}
    if args.json:
        args.json.write_text(json.dumps({"env": env, "results": rows}, indent=2))


if __name__ == "__main__":
    main()
