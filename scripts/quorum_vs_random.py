"""QUORUM vs Random on the main benchmark runs (issue 3's comparison), as a Markdown table.

Usage: python scripts/quorum_vs_random.py BENCH_OUT/runs.csv
Reads the runs of `quorum bench` (main experiment, default parameters) and prints, per
dataset, setting and budget, the mean quality over seeds of QUORUM and Random, the
difference, and their mean costs.
"""

from __future__ import annotations

import sys

import pandas as pd


def main(path: str) -> None:
    r = pd.read_csv(path)
    r = r[r["experiments"].str.contains("main") & r["method"].isin(["quorum", "random"])]
    r = r[r["params"].fillna("{}").isin(["{}", ""]) & (r["status"] == "ok")]
    r["quality"] = r["accuracy"].fillna(r["rouge1"])
    g = r.groupby(["dataset", "setting", "budget", "method"]).agg(
        q=("quality", "mean"), cost=("cost", "mean"), n=("seed", "nunique")
    )
    w = g.unstack("method")
    out = pd.DataFrame(
        {
            "seeds": w[("n", "quorum")],
            "quorum": w[("q", "quorum")].round(4),
            "random": w[("q", "random")].round(4),
            "diff": (w[("q", "quorum")] - w[("q", "random")]).round(4),
            "cost_quorum": w[("cost", "quorum")].round(2),
            "cost_random": w[("cost", "random")].round(2),
        }
    ).reset_index()
    out["budget"] = (out["budget"] * 100).round().astype(int).astype(str) + "%"
    cols = list(out.columns)
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for row in out.itertuples(index=False):
        print("| " + " | ".join(str(v) for v in row) + " |")
    ahead = (out["diff"] > 0).sum()
    tie = (out["diff"] == 0).sum()
    cheaper = (out["cost_quorum"] <= out["cost_random"] + 1e-9).sum()
    print(
        f"\nQUORUM ahead in {ahead}, tied in {tie}, behind in {len(out) - ahead - tie} "
        f"of {len(out)} cells; cost <= Random's in {cheaper} of {len(out)}."
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "bench-out/runs.csv")
