"""MiniLM on ONNX Runtime (fp32) against today's sentence-transformers MiniLM, in one run.

    PYTHONPATH=src nice -n 10 .venv/bin/python scripts/compare_onnx_embedder.py \
        [--datasets ag-news imdb-mlapi:3000] [--threads 2] [--batch-size 64] [--json OUT]

``NAME:N`` takes the first N items of a dataset. Both embedders get the same texts, the same
batch size and the same number of threads (torch's intra-op threads, onnxruntime's
intra-op threads). The texts are sorted by length and cut into the chunks the features
code encodes (4 x batch size); chunk by chunk, one embedder then the other encodes it (who
goes first alternates), so both see the same load on a shared machine and each gets the
padding a whole-dataset call would give. ``--shuffle SEED`` visits the chunks of all datasets
in a random order and ``--json`` is rewritten as it goes (figures over the items done so far:
a fair sample if the run must be stopped). Model loading and the one-off ONNX export are
timed apart. Printed per dataset: per-item cosine between the two embeddings (min, mean,
share >= 0.9999), 5-NN agreement (share of items whose 5 nearest other items, exact faiss
search, are the same set; and the mean overlap / 5), wall and CPU seconds of each
embedder and their ratios (torch / onnx: above 1 means ONNX is faster).
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

COS_TARGET = 0.9999
KNN_TARGET = 0.99


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-row cosine of two (n, d) arrays (float64)."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    return (a * b).sum(1) / np.maximum(na * nb, 1e-30)


def knn_same_sets(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(share of rows whose neighbour sets are equal, mean |A ∩ B| / k)."""
    k = a.shape[1]
    same = [set(x) == set(y) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    hits = [len(set(x) & set(y)) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    return float(np.mean(same)), float(np.mean(hits)) / k


def timed(fn, *args):
    w, c = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - w, time.process_time() - c


class Side:
    """One dataset's texts, both embeddings so far, and each embedder's seconds."""

    def __init__(self, texts: list[str], chunk: int) -> None:
        self.texts = texts
        order = np.argsort([-len(t) for t in texts], kind="stable")
        self.chunks = [order[s : s + chunk] for s in range(0, len(texts), chunk)]
        self.ref = np.zeros((len(texts), 384), dtype=np.float32)
        self.new = np.zeros((len(texts), 384), dtype=np.float32)
        self.done = np.zeros(len(texts), dtype=bool)
        self.secs = {"torch": [0.0, 0.0], "onnx": [0.0, 0.0]}

    def run(self, j: int, torch_emb, onnx_emb, batch_size: int) -> None:
        idx = self.chunks[j]
        part = [self.texts[i] for i in idx]
        runs = [("torch", torch_emb, self.ref), ("onnx", onnx_emb, self.new)]
        for name, emb, out in runs if j % 2 == 0 else runs[::-1]:
            e, w, c = timed(emb.encode, part, batch_size)
            out[idx] = e
            self.secs[name][0] += w
            self.secs[name][1] += c
        self.done[idx] = True

    def figures(self, threads: int) -> dict:
        from quorum.features.neighbours import knn_search

        ref, new = self.ref[self.done], self.new[self.done]
        cos = cosine_rows(ref, new)
        _, nb_ref = knn_search(ref, 5, threads)
        _, nb_new = knn_search(new, 5, threads)
        same, overlap = knn_same_sets(nb_ref, nb_new)
        (tw, tc), (ow, oc) = self.secs["torch"], self.secs["onnx"]
        return {
            "n": len(self.texts),
            "n_done": int(self.done.sum()),
            "cos_min": float(cos.min()),
            "cos_mean": float(cos.mean()),
            "cos_share_ge_target": float(np.mean(cos >= COS_TARGET)),
            "knn5_same_set": same,
            "knn5_mean_overlap": overlap,
            "torch_wall_s": tw,
            "torch_cpu_s": tc,
            "onnx_wall_s": ow,
            "onnx_cpu_s": oc,
            "wall_ratio_torch_over_onnx": tw / ow,
            "cpu_ratio_torch_over_onnx": tc / oc,
            "max_abs_diff": float(np.abs(ref - new).max()),
        }


def line(spec: str, r: dict) -> str:
    ok = (
        r["n_done"] == r["n"]
        and r["cos_min"] >= COS_TARGET
        and r["knn5_same_set"] >= KNN_TARGET
        and r["wall_ratio_torch_over_onnx"] > 1
    )
    return (
        f"{spec}: {r['n_done']}/{r['n']} items | cos min {r['cos_min']:.7f} mean "
        f"{r['cos_mean']:.8f} share>={COS_TARGET} {r['cos_share_ge_target']:.4f} | 5-NN same "
        f"set {r['knn5_same_set']:.4f} overlap {r['knn5_mean_overlap']:.4f} | torch "
        f"{r['torch_wall_s']:.1f} s wall {r['torch_cpu_s']:.1f} s CPU, onnx "
        f"{r['onnx_wall_s']:.1f} s wall {r['onnx_cpu_s']:.1f} s CPU | torch/onnx wall "
        f"{r['wall_ratio_torch_over_onnx']:.3f} CPU {r['cpu_ratio_torch_over_onnx']:.3f} | "
        f"targets met: {ok}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["ag-news", "imdb-mlapi:3000"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--spin", action="store_true", help="let onnxruntime's threads spin")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--shuffle",
        type=int,
        default=None,
        metavar="SEED",
        help="visit the chunks of all datasets in a random order (figures so far are a fair "
        "sample when the run is stopped early)",
    )
    ap.add_argument("--every", type=int, default=1, help="write --json every N chunks")
    args = ap.parse_args()

    import torch

    from quorum.features.onnx_embedder import OnnxMiniLMEmbedder, onnx_model_file
    from quorum.models.embedders import MiniLMEmbedder

    torch.set_num_threads(args.threads)
    torch_emb = MiniLMEmbedder()
    onnx_emb = OnnxMiniLMEmbedder(n_threads=args.threads, spin=args.spin)
    _, w_export, c_export = timed(onnx_model_file)
    _, w_tload, _ = timed(lambda: torch_emb.encode(["warm up"]))
    _, w_oload, _ = timed(lambda: onnx_emb.encode(["warm up"]))
    import onnxruntime

    info = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "onnxruntime": onnxruntime.__version__,
        "threads": args.threads,
        "batch_size": args.batch_size,
        "spin": args.spin,
        "cpus": os.cpu_count(),
        "export_or_find_wall_s": w_export,
        "export_or_find_cpu_s": c_export,
        "torch_load_s": w_tload,
        "onnx_load_s": w_oload,
    }
    print(json.dumps(info))
    results: dict = {"info": info, "datasets": {}}
    sides: dict[str, Side] = {}
    for spec in args.datasets:
        name, _, lim = spec.partition(":")
        texts, _lang = load_texts(name)
        texts = [str(t) for t in (texts[: int(lim)] if lim else texts)]
        sides[spec] = Side(texts, 4 * args.batch_size)
    tasks = [(spec, j) for spec, side in sides.items() for j in range(len(side.chunks))]
    if args.shuffle is not None:  # a stopped run still gives an unbiased part of each set
        tasks = [tasks[i] for i in np.random.default_rng(args.shuffle).permutation(len(tasks))]
    load0 = os.getloadavg()[0]
    for done, (spec, j) in enumerate(tasks, 1):
        sides[spec].run(j, torch_emb, onnx_emb, args.batch_size)
        if args.json and (done % args.every == 0 or done == len(tasks)):
            results["load_avg_1min"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
            results["datasets"] = {
                s: side.figures(args.threads) for s, side in sides.items() if side.done.any()
            }
            args.json.write_text(json.dumps(results, indent=1))
            for s, r in results["datasets"].items():
                print(f"[{done}/{len(tasks)} chunks] " + line(s, r), file=sys.stderr, flush=True)
    results["load_avg_1min"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
    for spec, side in sides.items():
        r = side.figures(args.threads)
        results["datasets"][spec] = r
        print(line(spec, r), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
