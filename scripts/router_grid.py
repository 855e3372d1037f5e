"""QUORUM minus Random, mean accuracy (or ROUGE-1) over seeds, for a few router settings.

Usage:
  python scripts/router_grid.py DATASETS PARAMS_JSON [--budgets 0.3,0.5,0.7] [--seeds 4]
                                [--setting dollars]
  DATASETS: comma-separated names (e.g. llms-for-css/flute,mmlu-redux)
  PARAMS_JSON: a JSON list of QuorumRouter parameter dicts, one column each
               (e.g. '[{"dollars_strategy": "bandit"}, {}]')

Prints one row per (dataset, budget), one column per parameter set, then the mean and the
worst difference of each column. This is how the defaults in docs/router.md were chosen.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd

from quorum.simulate import prepare, simulate_once


def quality(row: dict) -> float:
    return row["accuracy"] if row.get("accuracy") is not None else row["rouge1"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("datasets")
    ap.add_argument("params")
    ap.add_argument("--budgets", default="0.3,0.5,0.7")
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--setting", default="dollars", choices=["dollars", "auditor"])
    args = ap.parse_args()
    grid = json.loads(args.params)
    budgets = [float(b) for b in args.budgets.split(",")]
    seeds = range(args.seeds)
    rows = []
    for name in args.datasets.split(","):
        prep = prepare(name)
        for frac in budgets:
            base = np.mean(
                [quality(simulate_once(prep, "random", args.setting, frac, s)[0]) for s in seeds]
            )
            for i, params in enumerate(grid):
                q = np.mean(
                    [
                        quality(
                            simulate_once(
                                prep, "quorum", args.setting, frac, s, {**params, "quality": False}
                            )[0]
                        )
                        for s in seeds
                    ]
                )
                rows.append({"dataset": name, "budget": frac, "params": i, "diff": q - base})
    df = pd.DataFrame(rows)
    print(df.pivot_table(index=["dataset", "budget"], columns="params", values="diff").round(4))
    print(df.groupby("params")["diff"].agg(["mean", "min"]).round(4))
    for i, params in enumerate(grid):
        print(i, params)


if __name__ == "__main__":
    main()
