"""Pairwise judgements on LLMBar at equal spend: QUORUM vs Random and the baselines.

Writes ``benchmarks/pairwise.md`` (the command is in its header)::

    PYTHONPATH=src nice python scripts/bench_pairwise.py --seeds 5 --out benchmarks/pairwise.md

The data (``../shared/data/pairwise_llmbar``, its README) is a folder with no task file: the
pairwise kind recognises it, and each judge's two answer orders form one swap annotator
(``quorum.tasks.pairwise``). The panel is the four swap judges, priced per pair as two calls
(:data:`CALL_PRICES`, ours: the cost ladder of the data's README; a person costs 0.10).

Splits: ``all`` (419 pairs) and a held-out check, ``adversarial-rest`` (GPTInst, GPTOut and
Manual: 185 pairs), never used to choose anything (the router runs with its defaults and
nothing here was tuned on it); ``dev`` (Natural and Neighbor, 234 pairs) is where the
pairwise choices (swap rule, prices) were looked at.

Equal spend is ``quorum.bench.equal_spend`` (each method read off its own cost-quality
curve over the budgets run, at the money the setting offers at each budget).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import pandas as pd

from quorum.bench.equal_spend import equal_spend_frame
from quorum.data.io import load_folder
from quorum.data.paths import data_dir
from quorum.data.schema import Dataset
from quorum.features.pipeline import extract_dataset_features
from quorum.routing.core.budget import budget_for_setting
from quorum.simulate import prepare, simulate_once
from quorum.tasks.pairwise import DEFAULT_SWAP_RULE, SWAP_RULES, swap_annotators

#: price of ONE call of each judge (ours); a swap annotator pays two
CALL_PRICES = {"LLaMA2": 0.002, "Falcon": 0.004, "ChatGPT": 0.004, "GPT-4": 0.02}
METHODS = ["quorum", "random", "araida", "cdi", "coannotating", "hypac", "sant"]
PANEL_NAMES = {"True": "swap judges (both orders)", "False": "first order only"}
SPLITS = {
    "all": None,
    "dev": ["Natural", "Adversarial/Neighbor"],
    "adversarial-rest (held out)": [
        "Adversarial/GPTInst",
        "Adversarial/GPTOut",
        "Adversarial/Manual",
    ],
}


def panel(swap: bool = True) -> dict[str, float]:
    """Annotator -> price: the swap judges (two calls) or the first order alone (one)."""
    if swap:
        return {j: round(2 * p, 6) for j, p in CALL_PRICES.items()}
    return {f"{j}/Vanilla/orig": p for j, p in CALL_PRICES.items()}


def subset(ds: Dataset, subsets: list[str] | None, name: str) -> Dataset:
    if subsets is None:
        return ds
    raw = pd.read_parquet(Path(ds.source) / "items.parquet")
    keep = set(raw.loc[raw["subset"].isin(subsets), "item_id"].astype(str))
    items = ds.items.loc[ds.items["item_id"].isin(keep)].reset_index(drop=True)
    ann = ds.annotations.loc[ds.annotations["item_id"].isin(keep)].reset_index(drop=True)
    task = ds.task.model_copy(update={"name": f"{ds.task.name}:{name}"})
    return Dataset(task, items, ann, ds.source, dict(ds.meta))


def with_swap_rule(ds: Dataset, folder: Path, rule: str) -> Dataset:
    """The dataset with its swap judges' answers made by ``rule`` (``combine_swap``)."""
    if rule == DEFAULT_SWAP_RULE:
        return ds
    swapped, _ = swap_annotators(pd.read_parquet(folder / "answers.parquet"), rule)
    judges = set(swapped["annotator"])
    ann = ds.annotations.loc[~ds.annotations["annotator"].isin(judges)]
    ann = pd.concat([ann, swapped.dropna(subset=["output"])], ignore_index=True)
    return Dataset(ds.task, ds.items, ann, ds.source, dict(ds.meta))


def run(args: argparse.Namespace) -> pd.DataFrame:
    folder = Path(args.data or data_dir() / "pairwise_llmbar")
    full = with_swap_rule(load_folder(folder), folder, args.swap_rule)
    rows = []
    for split, subs in SPLITS.items():
        if args.splits and split.split(" ")[0] not in args.splits:
            continue
        ds = subset(full, subs, split.split(" ")[0])
        feats = extract_dataset_features(ds, show_progress=False)
        for swap in (True, False) if args.orders else (True,):
            prep = prepare(ds, panel(swap), features=feats)
            for method in args.methods:
                for setting in args.settings:
                    for b in args.budgets:
                        for seed in range(args.seeds):
                            t0 = time.perf_counter()
                            row, _ = simulate_once(prep, method, setting, b, seed)
                            row.update(split=split, swap=swap, secs=time.perf_counter() - t0)
                            rows.append(row)
                print(f"{split} swap={swap} {method}: done", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def levels(df: pd.DataFrame, n_items: dict[str, int]) -> dict:
    """The money each setting offers at each budget (no method's own extra cost)."""
    c_h = 0.10
    out = {}
    for (split, swap, setting, b), _ in df.groupby(["split", "swap", "setting", "budget"]):
        c_min = min(panel(swap).values())
        lim, _ = budget_for_setting(setting, float(b), n_items[split], c_h, c_min, 0.0)
        out[(f"{split}|{swap}", setting, float(b))] = float(lim.limit)
    return out


def tables(df: pd.DataFrame, report_budgets: list[float]) -> str:
    df = df.assign(dataset=df["split"] + "|" + df["swap"].astype(str))
    stats = (
        df.groupby(["dataset", "setting", "budget", "method"], sort=False)
        .agg(q=("accuracy", "mean"), sd=("accuracy", "std"), spend=("cost", "mean"))
        .reset_index()
    )
    n_items = df.groupby("split")["n_items"].first().to_dict()
    es = equal_spend_frame(stats, levels(df, n_items))
    es = es.loc[es["budget"].isin(report_budgets)]
    out = []
    for ds_key, g in es.groupby("dataset", sort=False):
        split, swap = ds_key.split("|")
        out.append(f"\n### {split}, {PANEL_NAMES[swap]} ({n_items[split]} pairs)\n")
        methods = list(dict.fromkeys(g["method"]))
        out.append(
            "| setting | budget | level ($) | " + " | ".join(methods) + " | QUORUM vs best other |"
        )
        out.append("|---|---|---|" + "---|" * len(methods) + "---|")
        for (setting, b), c in g.groupby(["setting", "budget"], sort=False):
            vals = c.set_index("method")
            cells, others = [], []
            for m in methods:
                r = vals.loc[m]
                if r["status"] not in ("at", "less"):
                    cells.append(f"({r['value']:.3f} at {r['spend']:.2f})")
                    continue
                mark = "" if r["status"] == "at" else f" ({r['spend']:.2f})"
                cells.append(f"{r['value']:.3f}{mark}")
                if m != "quorum":
                    others.append((r["value"], m))
            q = vals.loc["quorum"]["value"] if "quorum" in vals.index else float("nan")
            best = max(others) if others else (float("nan"), "-")
            out.append(
                f"| {setting} | {b:.0%} | {c['level'].iloc[0]:.2f} | "
                + " | ".join(cells)
                + f" | {q - best[0]:+.3f} vs {best[1]} |"
            )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--settings", default="auditor,dollars")
    ap.add_argument("--budgets", default="0.1,0.3,0.5,0.7")
    ap.add_argument("--report", default="0.3,0.5", help="budgets shown in the tables")
    ap.add_argument("--splits", default="", help="comma list of all,dev,adversarial-rest")
    ap.add_argument("--orders", action="store_true", help="also the first-order-only panel")
    ap.add_argument("--swap-rule", default=DEFAULT_SWAP_RULE, choices=SWAP_RULES)
    ap.add_argument("--out", default="benchmarks/pairwise.md")
    ap.add_argument("--rows", default="", help="also write every run's row here (JSONL)")
    args = ap.parse_args()
    args.methods = args.methods.split(",")
    args.settings = args.settings.split(",")
    args.budgets = [float(x) for x in args.budgets.split(",")]
    args.splits = [s for s in args.splits.split(",") if s]
    t0 = time.perf_counter()
    df = run(args)
    if args.rows:
        df.to_json(args.rows, orient="records", lines=True)
    cmd = "PYTHONPATH=src nice python scripts/bench_pairwise.py " + " ".join(sys.argv[1:])
    per = df.groupby("method")["secs"].mean()
    head = [
        "# Pairwise judgements (LLMBar): quality at equal spend",
        "",
        "Generated by `scripts/bench_pairwise.py`; do not edit by hand. Command:",
        "",
        f"```\n{cmd}\n```",
        "",
        f"- {args.seeds} seeds (0..{args.seeds - 1}), budgets {args.budgets} run, "
        f"{[float(x) for x in args.report.split(',')]} shown; "
        f"{len(df)} runs in {time.perf_counter() - t0:.0f} s on {os.cpu_count()} cores",
        f"- panel (price per pair; a swap judge pays two calls): {json.dumps(panel(True))}; "
        "first-order panel: " + json.dumps(panel(False)) + "; a person (gold) 0.10",
        "- cells: mean accuracy (agreement with gold) over seeds at the level's money "
        "(equal spend, `quorum.bench.equal_spend`); `x (s)` = a cheaper point that spent s; "
        "`(x at s)` = the method's cheapest point costs s, above the level: not ranked",
        f"- swap rule (what a swap judge's answer is): {args.swap_rule}",
        "- QUORUM runs with its defaults and its random quality checks (paid from its budget)",
        "- mean routing seconds per run: " + ", ".join(f"{m} {s:.2f}" for m, s in per.items()),
    ]
    body = tables(df, [float(x) for x in args.report.split(",")])
    Path(args.out).write_text("\n".join(head) + "\n" + body + "\n")
    print(Path(args.out).read_text())


if __name__ == "__main__":
    main()
