"""Methods at equal spend on the tune and confirm halves (issue 14's protocol).

Usage:
  # run: append one row per (label, dataset, setting, budget, seed) to OUT.jsonl (rows
  # already there are skipped, so a run can be resumed or extended)
  python scripts/router_equal_spend.py run OUT.jsonl --half tune|confirm|all \
      [--methods random,araida,sant,coannotating,quorum] [--label quorum-new] \
      [--params '{"label_model": "off"}'] [--seeds 3] [--budgets 0.1,0.3,0.5,0.7] \
      [--settings auditor,dollars] [--datasets a,b]
  # report: equal-spend standing of each QUORUM label against the baselines, per half
  python scripts/router_equal_spend.py report OUT.jsonl [--quorum quorum-new,quorum-old]
  # from-bench: append the rows of a `quorum bench` run (its runs.csv) to OUT.jsonl, the
  # QUORUM rows labelled LABEL (so two bench runs of two versions compare by half)
  python scripts/router_equal_spend.py from-bench RUNS.csv OUT.jsonl --label quorum-new

``--label`` names the rows of a quorum run (a baseline's label is its method name), so
several QUORUM variants, or QUORUM from another checkout (PYTHONPATH), share one file.
The report reads each label's mean (spend, quality) curve with the bench's equal-spend rule
(``quorum.bench.equal_spend``: levels from the dataset's prices, interpolation on the
method's own curve, a method that spent more than the level is never compared) and counts,
per half and setting, the cells where the QUORUM label is best or tied-best (within 0.005)
among the baselines, with its mean gap to the best baseline.

Halves (by parity in default.toml's [main] list, summaries left out):
  tune    = mmlu-redux and the odd llms-for-css tasks of the list, coannotating-stance/es
  confirm = imdb-mlapi and the other llms-for-css tasks, coannotating-stance/cat
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

TUNE = [
    "mmlu-redux",
    "llms-for-css/conv_go_awry",
    "llms-for-css/flute",
    "llms-for-css/implicit_hate",
    "llms-for-css/persuasion",
    "llms-for-css/reddit_humor",
    "llms-for-css/tempowic",
    "coannotating-stance/es",
]
CONFIRM = [
    "imdb-mlapi",
    "llms-for-css/discourse",
    "llms-for-css/ibc",
    "llms-for-css/indian_english_dialect",
    "llms-for-css/raop",
    "llms-for-css/talklife",
    "llms-for-css/wiki_corpus",
    "coannotating-stance/cat",
]
BASELINES = ["random", "araida", "sant", "coannotating"]
TIE = 0.005


def half_of(dataset: str) -> str:
    return "tune" if dataset in TUNE else "confirm" if dataset in CONFIRM else "other"


def run(args: argparse.Namespace) -> None:
    from quorum.routing.core.budget import budget_for_setting
    from quorum.simulate import prepare, simulate_once

    out = Path(args.out)
    done = set()
    if out.exists():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            done.add((r["label"], r["dataset"], r["setting"], r["budget"], r["seed"]))
    names = (
        args.datasets.split(",")
        if args.datasets
        else {"tune": TUNE, "confirm": CONFIRM, "all": TUNE + CONFIRM}[args.half]
    )
    params = json.loads(args.params) if args.params else {}
    budgets = [float(b) for b in args.budgets.split(",")]
    for name in names:
        prep = prepare(name)
        c_min = min(a.price for a in prep.task.llms)
        for method in args.methods.split(","):
            label = args.label if method == "quorum" and args.label else method
            for setting in args.settings.split(","):
                for frac in budgets:
                    budget, _ = budget_for_setting(
                        setting, frac, prep.dataset.n_items, prep.task.human_price, c_min
                    )
                    for seed in range(args.seeds):
                        key = (label, name, setting, frac, seed)
                        if key in done:
                            continue
                        try:
                            row, res = simulate_once(
                                prep,
                                method,
                                setting,
                                frac,
                                seed,
                                params if method == "quorum" else {},
                            )
                        except Exception as exc:  # reported, the cell is left out
                            print("failed:", key, type(exc).__name__, exc, flush=True)
                            continue
                        q = row.get("accuracy")
                        rec = {
                            "label": label,
                            "dataset": name,
                            "setting": setting,
                            "budget": frac,
                            "seed": seed,
                            "q": q if q is not None else row.get("rouge1"),
                            "cost": row["cost"] + float(row.get("unpaid_cost") or 0.0),
                            "level": float(budget.limit),
                            "human_labels": row["human_labels"],
                            "strategy": res.info.get("dollars_strategy"),
                        }
                        with out.open("a") as f:
                            f.write(json.dumps(rec) + "\n")
                        done.add(key)
        print(name, "done", flush=True)


def report(args: argparse.Namespace) -> None:
    from quorum.bench.equal_spend import equal_spend_frame

    rows = pd.DataFrame([json.loads(x) for x in Path(args.out).read_text().splitlines()])
    quorums = args.quorum.split(",")
    rows = rows[rows["label"].isin([*BASELINES, *quorums, args.versus])]
    if args.seeds:
        rows = rows[rows["seed"] < args.seeds]
    stats = (
        rows.groupby(["dataset", "setting", "budget", "label"])
        .agg(q=("q", "mean"), cost=("cost", "mean"), n=("seed", "nunique"))
        .reset_index()
        .rename(columns={"label": "method"})
    )
    levels = {
        (d, s, float(b)): float(v)
        for (d, s, b), v in rows.groupby(["dataset", "setting", "budget"])["level"].first().items()
    }
    out = []
    for qname in quorums:
        sub = stats[stats["method"].isin([*BASELINES, qname])]
        es = equal_spend_frame(sub, levels)
        for (d, s, b), cell in es.groupby(["dataset", "setting", "budget"]):
            cell = cell.set_index("method")
            if qname not in cell.index:
                continue
            me = cell.loc[qname]
            base = cell.loc[[m for m in BASELINES if m in cell.index]]
            ranked = base[base["status"].isin(["at", "less"])]
            best = float(ranked["value"].max()) if len(ranked) else np.nan
            top = ranked["value"].astype(float).idxmax() if len(ranked) else None
            ok = me["status"] in ("at", "less")
            out.append(
                {
                    "half": half_of(d),
                    "dataset": d,
                    "setting": s,
                    "budget": b,
                    "quorum": qname,
                    "value": float(me["value"]) if ok else np.nan,
                    "best_base": best,
                    "best_name": top,
                    "gap": float(me["value"]) - best if ok else np.nan,
                }
            )
    df = pd.DataFrame(out)
    if args.versus:  # each QUORUM label against one other method (e.g. quorum-paper)
        vs = []
        allm = stats[stats["method"].isin([*quorums, args.versus])]
        es = equal_spend_frame(allm, levels).set_index(["dataset", "setting", "budget", "method"])
        es = es[es["status"].isin(["at", "less"])]["value"]
        for (d, s_, b, m), v in es.items():
            if m in quorums and (d, s_, b, args.versus) in es.index:
                w = float(es.loc[(d, s_, b, args.versus)])
                vs.append({"half": half_of(d), "setting": s_, "quorum": m, "diff": v - w})
        v = pd.DataFrame(vs)
        v["ahead_or_tied"] = v["diff"] >= -TIE
        agg = v.groupby(["half", "setting", "quorum"]).agg(
            cells=("diff", "size"),
            ahead_or_tied=("ahead_or_tied", "sum"),
            mean_diff=("diff", "mean"),
        )
        print(f"versus {args.versus}:")
        print(_markdown(agg.round(4).reset_index()))
        print()
    df["win"] = df["gap"] >= -TIE
    summ = (
        df.groupby(["half", "setting", "quorum"])
        .agg(
            cells=("gap", "size"),
            best_or_tied=("win", "sum"),
            mean_gap=("gap", "mean"),
            worst_gap=("gap", "min"),
            mean_q=("value", "mean"),
        )
        .round(4)
    )
    print(_markdown(summ.reset_index()))
    print()
    if args.cells:
        wide = df.pivot_table(
            index=["half", "dataset", "setting", "budget"], columns="quorum", values="gap"
        ).round(4)
        best = df.groupby(["half", "dataset", "setting", "budget"])[
            ["best_base", "best_name"]
        ].first()
        print(wide.join(best).to_string())


def _markdown(df: pd.DataFrame) -> str:
    lines = ["| " + " | ".join(map(str, df.columns)) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(map(str, r)) + " |" for r in df.itertuples(index=False)]
    return "\n".join(lines)


def from_bench(args: argparse.Namespace) -> None:
    runs = pd.read_csv(args.runs)
    runs = runs[(runs["status"] == "ok") & (runs["variant"] == "ours")]
    runs = runs[runs["params"].fillna("{}") == "{}"]  # the defaults, not the sensitivity rows
    runs = runs.drop_duplicates(["dataset", "method", "setting", "budget", "seed"])
    with Path(args.out).open("a") as f:
        for r in runs.itertuples():
            q = r.accuracy if pd.notna(r.accuracy) else r.rouge1
            label = args.label if r.method == "quorum" else r.method
            if r.method == "quorum-paper":
                label = "quorum-paper"
            rec = {
                "label": label,
                "dataset": r.dataset,
                "setting": r.setting,
                "budget": float(r.budget),
                "seed": int(r.seed),
                "q": float(q),
                "cost": float(r.cost) + float(r.unpaid_cost if pd.notna(r.unpaid_cost) else 0),
                "level": float(r.budget_limit),
                "human_labels": int(r.human_labels),
                "strategy": None,
            }
            f.write(json.dumps(rec) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sp = ap.add_subparsers(dest="cmd", required=True)
    r = sp.add_parser("run")
    r.add_argument("out")
    r.add_argument("--half", default="tune", choices=["tune", "confirm", "all"])
    r.add_argument("--datasets", default="")
    r.add_argument("--methods", default=",".join([*BASELINES, "quorum"]))
    r.add_argument("--label", default="quorum")
    r.add_argument("--params", default="")
    r.add_argument("--seeds", type=int, default=3)
    r.add_argument("--budgets", default="0.1,0.3,0.5,0.7")
    r.add_argument("--settings", default="auditor,dollars")
    p = sp.add_parser("report")
    p.add_argument("out")
    p.add_argument("--quorum", default="quorum")
    p.add_argument("--cells", action="store_true")
    p.add_argument("--versus", default="", help="also compare with this method")
    p.add_argument("--seeds", type=int, default=0, help="only seeds below this (0: all)")
    b = sp.add_parser("from-bench")
    b.add_argument("runs")
    b.add_argument("out")
    b.add_argument("--label", default="quorum")
    args = ap.parse_args()
    {"run": run, "report": report, "from-bench": from_bench}[args.cmd](args)


if __name__ == "__main__":
    main()
