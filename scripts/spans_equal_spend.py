"""Span tasks at equal spend: QUORUM vs Random and the baselines on d2t-eval (issue 35).

Usage:
  # run: one row per (label, split, setting, budget, seed) appended to OUT.jsonl (rows
  # already there are skipped, so a run resumes)
  python scripts/spans_equal_spend.py run OUT.jsonl --split dev|heldout|all \
      [--methods quorum,random,...] [--label quorum-x --params '{"k": v}'] [--seeds 3] \
      [--budgets 0.1,0.3,0.5,0.7] [--settings dollars,auditor]
  # report: the equal-spend table (markdown) of OUT.jsonl, QUORUM label(s) against the rest
  python scripts/spans_equal_spend.py report OUT.jsonl [--out benchmarks/spans_d2t_eval.md]

Splits (by the report's domain, fixed before any run): ``dev`` = d2t-football and
d2t-gsmarena (800 items), where any choice for spans was made; ``heldout`` = d2t-openweather
(400 items), never used to choose anything; ``all`` = the 1,200 items.

Panel: o3-mini 0.05, claude-3-7-sonnet 0.03, gemini-2-0-flash-thinking 0.02, llama3-3 0.01
(the issue's price ladder over the README's best to weakest overlap F1), human = gold at
0.10. Quality = ``span_f1`` (mean per-item overlap span F1, docs/router.md "Span tasks").
Equal spend: the bench's rule (``quorum.bench.equal_spend``): levels are the setting's
money at each budget before any method's own uncertainty costs, each method read off its
own mean (spend, quality) curve, a method that never spent as little is not ranked.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

FOLDER = "span_d2t_eval"
PANEL = {
    "o3-mini": 0.05,
    "claude-3-7-sonnet": 0.03,
    "gemini-2-0-flash-thinking": 0.02,
    "llama3-3": 0.01,
}
SPLITS = {
    "dev": ("d2t-football", "d2t-gsmarena"),
    "heldout": ("d2t-openweather",),
    "all": ("d2t-football", "d2t-gsmarena", "d2t-openweather"),
}
BASELINES = [
    "random",
    "random-uniform",
    "coannotating",
    "cdi",
    "hypac",
    "coannotating-ensemble",
    "cdi-ensemble",
    "hypac-ensemble",
    "quorum-paper",
]
TIE = 0.005


def _prepared(split: str):
    """The split's Prepared (features of the whole set computed once, rows sliced)."""
    from quorum.data.io import load_folder
    from quorum.data.paths import data_dir
    from quorum.features.pipeline import extract_dataset_features
    from quorum.simulate import prepare

    ds = load_folder(Path(data_dir()) / FOLDER)
    feats = extract_dataset_features(ds, show_progress=False)
    keep = ds.items["dataset"].isin(SPLITS[split]).to_numpy()
    sub = ds.subset(ds.items.loc[keep, "item_id"])
    sub.task = sub.task.model_copy(update={"name": f"{FOLDER}:{split}"})
    sliced = SimpleNamespace(
        phi=feats.phi[keep],
        embeddings=None if feats.embeddings is None else feats.embeddings[keep],
        names=getattr(feats, "names", None),
        raw=None if getattr(feats, "raw", None) is None else feats.raw[keep],
    )
    return prepare(sub, dict(PANEL), features=sliced)


def run(args: argparse.Namespace) -> None:
    from quorum.simulate import simulate_once

    out = Path(args.out)
    done = set()
    if out.is_file():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            done.add((r["label"], r["split"], r["setting"], r["budget"], r["seed"]))
    if args.z is not None:  # a grid over the kind's audit_value_z (dev split only)
        from quorum.tasks.spans import Spans

        Spans.audit_value_z = args.z
    prep = _prepared(args.split)
    params = json.loads(args.params) if args.params else None
    methods = args.methods.split(",")
    with out.open("a") as fh:
        for method in methods:
            label = args.label if (args.label and method == "quorum") else method
            for setting in args.settings.split(","):
                for b in [float(x) for x in args.budgets.split(",")]:
                    for seed in range(args.seeds):
                        key = (label, args.split, setting, b, seed)
                        if key in done:
                            continue
                        t0 = time.perf_counter()
                        p = params if method == "quorum" else None
                        row, _ = simulate_once(prep, method, setting, b, seed, p)
                        rec = {
                            "label": label,
                            "split": args.split,
                            "method": method,
                            "setting": setting,
                            "budget": b,
                            "seed": seed,
                            "q": row["span_f1"],
                            "cost": row["cost"],
                            "budget_limit": row["budget_limit"],
                            "human_labels": row["human_labels"],
                            "exact_f1": row["exact_f1"],
                            "overlap_f1": row["overlap_f1"],
                            "quality_estimate": row.get("quality_estimate"),
                            "quality_low": row.get("quality_low"),
                            "quality_high": row.get("quality_high"),
                            "params": p,
                            "seconds": round(time.perf_counter() - t0, 2),
                        }
                        fh.write(json.dumps(rec) + "\n")
                        fh.flush()
                        print(
                            label,
                            args.split,
                            setting,
                            b,
                            seed,
                            round(rec["q"], 4),
                            rec["cost"],
                            file=sys.stderr,
                        )


def levels(prep_n: dict[str, int]) -> dict:
    from quorum.routing.core.budget import budget_for_setting

    c_min = min(PANEL.values())
    out = {}
    for split, n in prep_n.items():
        for setting in ("dollars", "auditor"):
            for b in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0):
                money, _ = budget_for_setting(setting, b, n, 0.10, c_min, 0.0)
                out[(split, setting, b)] = float(money.limit)
    return out


def _human_limit_reading(
    stats: pd.DataFrame,
    split: str,
    budgets: list[float],
    quorums: list[str],
    others: list[str],
    money: dict,
) -> list[str]:
    """The auditor cells read at the setting's human limit as well as its money.

    The equal-spend rule reads a method that left money unspent off the line towards its
    next budget: in the auditor setting that line is a mixture with a run at a larger B,
    so the reading uses more human labels, in expectation, than the cell's B (Random at
    30% on the held-out split: about 133 humans against B = 120), while every method's
    own run is held to B. Here each method is read at its own point of the cell's budget
    (at most B humans), ranked when it spent at most the cell's money. Both readings are
    printed; neither replaces the other."""
    sub = stats.loc[
        (stats["dataset"] == split)
        & (stats["setting"] == "auditor")
        & stats["budget"].isin(budgets)
    ]
    if sub.empty:
        return []
    cells = sorted(sub["budget"].unique())
    out = [
        "",
        "Auditor cells at the human limit (each method's own run at the cell's B, ranked when",
        "it spent at most the cell's money; `>` = spent more, not ranked):",
        "",
        "| method | " + " | ".join(f"auditor {b:.0%}" for b in cells) + " |",
        "|---" * (len(cells) + 1) + "|",
    ]
    best = {}
    for b in cells:
        cs = sub.loc[sub["budget"] == b]
        ok = cs["cost"] <= money[(split, "auditor", float(b))] + 1e-9
        best[b] = cs.loc[ok, "q"].max() if ok.any() else np.nan
    verdict = {q: [0, 0] for q in quorums}
    for m in [*quorums, *others]:
        vals = []
        for b in cells:
            r = sub.loc[(sub["budget"] == b) & (sub["method"] == m)]
            if r.empty:
                vals.append("")
                continue
            r = r.iloc[0]
            if r["cost"] > money[(split, "auditor", float(b))] + 1e-9:
                vals.append(f">{r['q']:.3f}")
                continue
            v = f"{r['q']:.3f}"
            v = (
                f"**{v}**"
                if r["q"] >= best[b] - 1e-12
                else (f"={v}" if r["q"] >= best[b] - TIE else v)
            )
            vals.append(v)
            if m in verdict:
                rv = sub.loc[(sub["budget"] == b) & (sub["method"] == "random"), "q"]
                verdict[m][0] += int(len(rv) and r["q"] > rv.iloc[0])
                verdict[m][1] += 1
        out.append(f"| {m} | " + " | ".join(vals) + " |")
    out.append("")
    for q, (win, tot) in verdict.items():
        out.append(f"{q} at the human limit: ahead of Random in {win}/{tot} auditor cells.")
    return out


def report(args: argparse.Namespace) -> str:
    from quorum.bench.equal_spend import equal_spend_frame

    rows = pd.DataFrame([json.loads(x) for x in Path(args.out).read_text().splitlines()])
    stats = (
        rows.groupby(["split", "setting", "budget", "label"], as_index=False)
        .agg(
            q=("q", "mean"),
            cost=("cost", "mean"),
            n=("seed", "count"),
            est=("quality_estimate", "mean"),
            lo=("quality_low", "mean"),
            hi=("quality_high", "mean"),
        )
        .rename(columns={"split": "dataset", "label": "method"})
    )
    n_items = {"dev": 800, "heldout": 400, "all": 1200}
    es = equal_spend_frame(stats, levels(n_items))
    quorums = [
        m for m in es["method"].unique() if str(m).startswith("quorum") and m != "quorum-paper"
    ]
    others = [m for m in es["method"].unique() if m not in quorums]
    budgets = [float(b) for b in args.budgets.split(",")]
    lines = [
        "# Span tasks at equal spend (d2t-eval error spans, issue 35)",
        "",
        "Produced by `scripts/spans_equal_spend.py` (its docstring: splits, panel, rule):",
        "",
        "```",
        *args.commands,
        "```",
        "",
        "Quality = span_f1 (mean per-item overlap span F1 against the first crowd worker).",
        "Each cell: the method's mean over seeds read off its own (spend, quality) curve at",
        "the setting's money for that budget (`quorum.bench.equal_spend`); `n/r` = never spent",
        "that little (not ranked); `<` = a cheaper point. **bold** = best, `=` within 0.005",
        "of the best ranked method.",
        "",
    ]
    for split in ("dev", "heldout", "all"):
        sub = es.loc[(es["dataset"] == split) & es["budget"].isin(budgets)]
        if sub.empty:
            continue
        lines += [f"## {split}", ""]
        cells = sorted({(s, b) for s, b in zip(sub["setting"], sub["budget"], strict=True)})
        head = "| method | " + " | ".join(f"{s} {b:.0%}" for s, b in cells) + " |"
        lines += [head, "|---" * (len(cells) + 1) + "|"]
        best = {}
        for c in cells:
            cs = sub.loc[(sub["setting"] == c[0]) & (sub["budget"] == c[1])]
            ranked = cs.loc[cs["status"].isin(["at", "less"])]
            best[c] = ranked["value"].max() if len(ranked) else np.nan
        for m in [*quorums, *others]:
            vals = []
            for c in cells:
                r = sub.loc[
                    (sub["setting"] == c[0]) & (sub["budget"] == c[1]) & (sub["method"] == m)
                ]
                if r.empty:
                    vals.append("")
                    continue
                r = r.iloc[0]
                if r["status"] == "above":
                    vals.append(f"n/r ({r['value']:.3f} at {r['spend']:.0f})")
                    continue
                v = f"{r['value']:.3f}" + ("<" if r["status"] == "less" else "")
                if r["value"] >= best[c] - 1e-12:
                    v = f"**{v}**"
                elif r["value"] >= best[c] - TIE:
                    v = f"={v}"
                vals.append(v)
            lines.append(f"| {m} | " + " | ".join(vals) + " |")
        lines.append("")
        for q in quorums:
            win_r = tot = best_or_tied = 0
            for c in cells:
                cs = sub.loc[(sub["setting"] == c[0]) & (sub["budget"] == c[1])]
                qv = cs.loc[cs["method"] == q, "value"]
                rv = cs.loc[(cs["method"] == "random") & cs["status"].isin(["at", "less"]), "value"]
                base = cs.loc[
                    cs["method"].isin(others) & cs["status"].isin(["at", "less"]), "value"
                ]
                if qv.empty:
                    continue
                tot += 1
                win_r += int(len(rv) and qv.iloc[0] > rv.iloc[0])
                best_or_tied += int(base.empty or qv.iloc[0] >= base.max() - TIE)
            lines.append(
                f"{q}: ahead of Random in {win_r}/{tot} cells; best or tied (0.005) against "
                f"every ranked baseline in {best_or_tied}/{tot}."
            )
        lines += _human_limit_reading(stats, split, budgets, quorums, others, levels(n_items))
        qrows = stats.loc[
            (stats["dataset"] == split)
            & stats["method"].isin(quorums)
            & stats["est"].notna()
            & stats["budget"].isin(budgets)
        ]
        if len(qrows):
            lines += [
                "",
                "Quality estimate of QUORUM's checks (means over seeds) beside the truth:",
                "",
            ]
            lines += [
                "| label | setting | budget | span_f1 | estimate | low | high |",
                "|---|---|---|---|---|---|---|",
            ]
            for _, r in qrows.iterrows():
                lines.append(
                    f"| {r['method']} | {r['setting']} | {r['budget']:.0%} | {r['q']:.3f} | "
                    f"{r['est']:.3f} | {r['lo']:.3f} | {r['hi']:.3f} |"
                )
        lines.append("")
    for scale in args.scale:
        rows_s = json.loads(Path(scale).read_text())
        lines += [
            f"## Replay speed (`scripts/spans_routing_scale.py`, {Path(scale).name})",
            "",
            "`QuorumRouter().route` alone on synthetic problems (features precomputed), one",
            "process per row, on the shared 2-core machine (load average in the row): CPU",
            "seconds are the comparable figure, wall seconds include other jobs' share.",
            "",
            "| kind | items | setting | wall s | CPU s | CPU us/item | load |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in rows_s:
            lines.append(
                f"| {r['kind']} | {r['items']:,} | {r['setting']} {r['budget']:.0%} | "
                f"{r['seconds']:.1f} | {r['cpu_seconds']:.1f} | "
                f"{1e6 * r['cpu_seconds'] / r['items']:.1f} | {r['load1']:.1f} |"
            )
        lines.append("")
    text = "\n".join(lines) + "\n"
    if args.md:
        Path(args.md).write_text(text)
    return text


def main() -> None:
    warnings.filterwarnings("ignore")
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["run", "report"])
    ap.add_argument("out")
    ap.add_argument("--split", default="dev", choices=list(SPLITS))
    ap.add_argument("--methods", default="quorum," + ",".join(BASELINES))
    ap.add_argument("--label", default=None)
    ap.add_argument("--params", default=None)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--budgets", default="0.1,0.3,0.5,0.7")
    ap.add_argument("--settings", default="dollars,auditor")
    ap.add_argument("--z", type=float, default=None, help="run: Spans.audit_value_z")
    ap.add_argument("--md", default=None, help="report: write the markdown here")
    ap.add_argument("--scale", nargs="*", default=[], help="report: scale JSON files")
    ap.add_argument("--commands", nargs="*", default=[], help="report: commands to show")
    args = ap.parse_args()
    if args.cmd == "run":
        run(args)
    else:
        print(report(args))


if __name__ == "__main__":
    main()
