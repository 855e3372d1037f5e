"""Compare two bench runs cell by cell: what a feature profile (or any other change) moves.

Usage::

    python scripts/compare_bench_cells.py BASE_OUT OTHER_OUT [--methods quorum,random]
        [--tolerance 0.005] [--markdown]

``BASE_OUT`` and ``OTHER_OUT`` are ``quorum bench --out`` folders (their ``runs.csv`` is
read). A cell is (dataset, method, setting, budget) with the default parameters and the
``ours`` variant; its value is the mean accuracy (ROUGE-1 for summaries) over the seeds
both runs have, with the mean cost beside it. Printed per method: cells compared, cells
that lose more than ``--tolerance``, the mean and the worst change, and (``--markdown``) a
table of the cells that lose more than the tolerance. Unlike ``compare_bench_runs.py``
this does not expect identical runs: it measures by how much they differ.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

CELL = ["dataset", "method", "setting", "budget"]


def cells(out: str) -> pd.DataFrame:
    runs = pd.read_csv(Path(out) / "runs.csv")
    runs = runs[(runs["status"] == "ok") & (runs["variant"] == "ours")]
    runs = runs[runs["params"].fillna("{}") == "{}"]
    # the kind's headline score; older runs.csv files have accuracy / rouge1 columns only
    if "score" in runs:
        value = runs["score"]
    else:
        value = runs.get("accuracy", pd.Series(float("nan"), index=runs.index))
        value = value.fillna(runs.get("rouge1", pd.Series(float("nan"), index=runs.index)))
    runs = runs.assign(value=value)
    return runs[[*CELL, "seed", "value", "cost"]].drop_duplicates([*CELL, "seed"])


def compare(base: pd.DataFrame, other: pd.DataFrame) -> pd.DataFrame:
    both = base.merge(other, on=[*CELL, "seed"], suffixes=("_base", "_other"))
    agg = both.groupby(CELL).agg(
        seeds=("seed", "nunique"),
        base=("value_base", "mean"),
        other=("value_other", "mean"),
        cost_base=("cost_base", "mean"),
        cost_other=("cost_other", "mean"),
    )
    agg["change"] = agg["other"] - agg["base"]
    return agg.reset_index()


def markdown(df: pd.DataFrame) -> str:
    """A pipe table (pandas' ``to_markdown`` needs tabulate, which QUORUM does not use)."""
    cols = list(df.columns)
    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in df.itertuples(False)]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base")
    ap.add_argument("other")
    ap.add_argument("--methods", default="", help="comma-separated (default: all)")
    ap.add_argument("--tolerance", type=float, default=0.005)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    cmp = compare(cells(args.base), cells(args.other))
    if args.methods:
        cmp = cmp[cmp["method"].isin(args.methods.split(","))]
    tol = args.tolerance
    summary = cmp.groupby("method").agg(
        cells=("change", "size"),
        lose=("change", lambda c: int((c < -tol).sum())),
        gain=("change", lambda c: int((c > tol).sum())),
        mean_change=("change", "mean"),
        worst=("change", "min"),
    )
    summary = summary.round(4).reset_index()
    print(markdown(summary) if args.markdown else summary.to_string(index=False))
    if args.markdown:
        bad = cmp[cmp["change"] < -tol].sort_values("change")
        print()
        print(f"Cells losing more than {tol}:")
        print(markdown(bad.round(4)))


if __name__ == "__main__":
    main()
