"""Decisions of the compiled posterior (numba) against the numpy path, run by run.

Usage::

    python scripts/compare_posterior_backends.py [--datasets ...] [--methods quorum,quorum-paper]
        [--settings dollars,auditor] [--budgets 0.1,0.3,0.5,0.7] [--seeds 0,1,2]
        [--synthetic 10000,100000] [--out FILE.json]

Every run is routed twice, once with ``posterior_backend="numba"`` (the default) and once
with ``"numpy"`` (the reference path; for ``quorum-paper``, which has no such parameter,
:data:`quorum.routing.quorum.posterior.DEFAULT_BACKEND` is switched). Printed per run: the share
of decisions (trace rows: item and arm, in order) that agree, whether the results
(labels, annotations, cost) are identical, and the quality of each. At the end: the share
of agreeing decisions over all runs, and per cell (dataset, method, setting, budget) the
mean quality difference against the seed-to-seed standard error of the numpy path.

``--synthetic`` adds the synthetic problems of ``scripts/bench_routing_scale.py`` (all four
cells, dollars and auditor at 10% and 70%) at those sizes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

from quorum.routing.quorum import posterior

sys.path.insert(0, str(Path(__file__).resolve().parent))
from route_hashes import DATASETS, result_hash

BACKENDS = ("numba", "numpy")
SYNTHETIC_CELLS = [("dollars", 0.1), ("dollars", 0.7), ("auditor", 0.1), ("auditor", 0.7)]


def decisions(trace: pd.DataFrame | list | None) -> list[tuple[str, str]]:
    """(item, arm) of every trace row, in order."""
    if trace is None:
        return []
    if isinstance(trace, list):  # the paper preset keeps a list of dicts
        trace = pd.DataFrame(trace)
    if len(trace) == 0:
        return []
    return list(zip(trace["item_id"].astype(str), trace["arm"].astype(str), strict=True))


def agreement(a: list, b: list) -> tuple[int, int]:
    """(decisions that agree position by position, decisions in all): the longer run counts."""
    n = max(len(a), len(b))
    same = sum(x == y for x, y in zip(a, b, strict=False))
    return same, n


@contextmanager
def backend(method: str, name: str):
    """The router parameters that select posterior backend ``name`` for ``method``."""
    old = posterior.DEFAULT_BACKEND
    posterior.DEFAULT_BACKEND = name
    try:
        yield {"posterior_backend": name} if method == "quorum" else {}
    finally:
        posterior.DEFAULT_BACKEND = old


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--methods", default="quorum,quorum-paper")
    ap.add_argument("--settings", default="dollars,auditor")
    ap.add_argument("--budgets", default="0.1,0.3,0.5,0.7")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--synthetic", default="", help="sizes of synthetic problems, e.g. 10000")
    ap.add_argument("--out", help="write every run's figures to this JSON file")
    args = ap.parse_args()
    from quorum.errors import UnsupportedTaskError
    from quorum.simulate import prepare, simulate_once

    rows = []
    for name in [d for d in args.datasets.split(",") if d]:
        t0 = time.perf_counter()
        prep = prepare(name)
        print(f"{name}: prepared in {time.perf_counter() - t0:.1f} s", flush=True)
        for method in args.methods.split(","):
            for setting in args.settings.split(","):
                for frac in (float(b) for b in args.budgets.split(",")):
                    for seed in (int(s) for s in args.seeds.split(",")):
                        res, quality = {}, {}
                        try:
                            for be in BACKENDS:
                                with backend(method, be) as params:
                                    row, res[be] = simulate_once(
                                        prep,
                                        method,
                                        setting,
                                        frac,
                                        seed,
                                        {**params, "quality": False},
                                    )
                                quality[be] = row.get("accuracy", row.get("rouge1"))
                        except UnsupportedTaskError:
                            continue
                        rows.append(_row(name, method, setting, frac, seed, res, quality))
    if args.synthetic:
        from bench_routing_scale import synthetic

        from quorum.routing.quorum.router import QuorumRouter

        for n in (int(s) for s in args.synthetic.split(",")):
            for setting, frac in SYNTHETIC_CELLS:
                res, quality = {}, {}
                for be in BACKENDS:
                    problem, source, budget = synthetic(n, setting, frac)
                    router = QuorumRouter(posterior_backend=be)
                    res[be] = router.route(problem, source, budget, seed=0)
                    gold = pd.Series(source.answers[source.human], index=problem.item_ids)
                    out = res[be].labels.set_index("item_id")["output"]
                    quality[be] = float((out.reindex(gold.index) == gold).mean())
                rows.append(_row(f"synthetic-{n}", "quorum", setting, frac, 0, res, quality))
    return report(rows, args.out)


def _row(dataset, method, setting, frac, seed, res, quality) -> dict:
    a, b = (decisions(res[be].trace) for be in BACKENDS)
    same, n = agreement(a, b)
    row = {
        "dataset": dataset,
        "method": method,
        "setting": setting,
        "budget": frac,
        "seed": seed,
        "decisions": n,
        "agree": same,
        "identical": result_hash(res["numba"]) == result_hash(res["numpy"]),
    }
    for be in BACKENDS:
        row[f"quality_{be}"] = np.nan if quality[be] is None else float(quality[be])
    print(
        f"{dataset}|{method}|{setting}|{frac}|{seed}: {same}/{n} decisions agree, "
        f"results {'identical' if row['identical'] else 'DIFFER'}",
        flush=True,
    )
    return row


def _standard_error(v: pd.Series) -> float:
    return float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else np.nan


def report(rows: list[dict], out: str | None) -> int:
    df = pd.DataFrame(rows)
    if df.empty:
        print("no runs")
        return 1
    share = df["agree"].sum() / max(df["decisions"].sum(), 1)
    print(
        f"\n{len(df)} runs: {df['agree'].sum():,} of {df['decisions'].sum():,} decisions agree "
        f"({share:.6f}); results identical in {int(df['identical'].sum())} of {len(df)} runs"
    )
    cell = ["dataset", "method", "setting", "budget"]
    df = df.assign(diff=df["quality_numba"] - df["quality_numpy"])
    per = df.groupby(cell).agg(
        seeds=("seed", "nunique"),
        numpy=("quality_numpy", "mean"),
        numba=("quality_numba", "mean"),
        mean_diff=("diff", "mean"),
        se_numpy=(
            "quality_numpy",
            lambda v: v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else np.nan,
        ),
    )
    moved = per[per["mean_diff"].abs() > 0]
    print(f"cells: {len(per)}; cells whose mean quality moved: {len(moved)}")
    if len(moved):
        worst = moved.assign(ratio=moved["mean_diff"].abs() / moved["se_numpy"])
        print(worst.sort_values("ratio", ascending=False).head(20).to_string())
    print(f"largest |mean difference| of a cell: {per['mean_diff'].abs().max():.6f}")
    if out:
        Path(out).write_text(json.dumps(rows, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
