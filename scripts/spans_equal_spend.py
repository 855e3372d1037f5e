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
own mean (spend, quality) curve, a method that never spent as little is not ranked. In the
auditor setting a cell has two limits, the money B c_H + T c_min and B human labels, and
every run obeys both; the verdict reads every method alike at both (:func:`at_both_limits`:
a run or a mixture of two runs within both in expectation). The money limit alone (the
bench's rule, printed beside) credits a method that leaves money unspent with a mixture
that takes its run at a larger B: Random leaves B c_min unspent (no LLM answer under a
human), and at auditor 30 % on the held-out split it was read at 0.416 with about 133
human labels in expectation against B = 120 (its own run: 0.386, 120 humans).
"""

from __future__ import annotations

import argparse
import itertools
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


def at_both_limits(
    points: list[tuple[float, float, float, float]], money: float, humans: float
) -> tuple[float, float, float, str]:
    """A method's quality in an auditor cell read at the cell's money *and* its human limit.

    ``points``: the method's (mean spend, mean quality, mean human labels, budget) at each
    budget. A reading is one of its runs, or a mixture of two runs next to each other in
    spend order (the bench's line; one budget drawn at random with odds w), whose
    expected spend is at most ``money`` and whose expected human labels are at most
    ``humans`` (B): the two limits every run of the cell obeys.
    Quality, spend and human labels are linear in w, so the best mixture of a pair is at an
    end of the w-interval that keeps both limits. Returns (quality, spend, human labels,
    status): "at" (spent the money), "less" (spent less), "above" (no run or mixture keeps
    both limits: not ranked; the cheapest run is shown). The bench's rule
    (``quorum.bench.equal_spend``) keeps only the money limit: in the auditor setting a
    method that leaves money unspent is then read off a mixture with its run at a larger
    B, i.e. with more human labels than the cell allows."""
    eps = 1e-6 * max(money, 1.0)
    best: tuple[float, float, float] | None = None
    pts = sorted(points)
    for p0, p1 in [*((p, p) for p in pts), *itertools.pairwise(pts)]:  # the bench's line
        lo, hi = 0.0, 1.0  # the weight w on p1
        for a0, a1, lim, tol in ((p0[0], p1[0], money, eps), (p0[2], p1[2], humans, 1e-9)):
            if min(a0, a1) > lim + tol:
                lo, hi = 1.0, 0.0
            elif a1 > a0:  # float noise at the limit keeps the end point, never more
                hi = min(hi, max(0.0, (lim - a0) / (a1 - a0)))
            elif a1 < a0:
                lo = max(lo, min(1.0, (lim - a0) / (a1 - a0)))
        for w in (lo, hi) if lo <= hi else ():
            c, q, h = (x0 + w * (x1 - x0) for x0, x1 in zip(p0[:3], p1[:3], strict=True))
            if best is None or q > best[0] + 1e-12:
                best = (q, c, h)
    if best is None:
        c, q, h, _ = pts[0]
        return q, c, h, "above"
    q, c, h = best
    return q, c, h, ("at" if abs(c - money) <= eps else "less")


def _both_limits_frame(stats: pd.DataFrame, money: dict, n_items: dict) -> pd.DataFrame:
    """The auditor rows of the equal-spend frame read at both limits (:func:`at_both_limits`),
    in the frame's columns."""
    recs = []
    aud = stats.loc[stats["setting"] == "auditor"]
    for (d, m), g in aud.groupby(["dataset", "method"], sort=False):
        pts = list(zip(g["cost"], g["q"], g["humans"], g["budget"], strict=True))
        for b in sorted(g["budget"].unique()):
            level = money[(d, "auditor", float(b))]
            q, c, h, status = at_both_limits(pts, level, round(float(b) * n_items[d]))
            recs.append(
                {
                    "dataset": d,
                    "setting": "auditor",
                    "budget": float(b),
                    "level": level,
                    "method": m,
                    "value": q,
                    "spend": c,
                    "delta": c - level,
                    "status": status,
                    "humans": h,
                }
            )
    return pd.DataFrame(recs)


def _money_only_reading(
    es_money: pd.DataFrame, split: str, budgets: list[float], quorums: list[str], others: list[str]
) -> list[str]:
    """The auditor cells under the bench's money-only rule, printed beside the verdict."""
    sub = es_money.loc[
        (es_money["dataset"] == split)
        & (es_money["setting"] == "auditor")
        & es_money["budget"].isin(budgets)
    ]
    if sub.empty:
        return []
    cells = sorted(sub["budget"].unique())
    out = [
        "",
        "Auditor cells under the money limit alone (the bench's rule, `quorum.bench.equal_spend`;",
        "not the verdict: a method that left money unspent is read off a mixture with its run at",
        "a larger B, so with more human labels than the cell allows):",
        "",
        "| method | " + " | ".join(f"auditor {b:.0%}" for b in cells) + " |",
        "|---" * (len(cells) + 1) + "|",
    ]
    for m in [*quorums, *others]:
        vals = []
        for b in cells:
            r = sub.loc[(sub["budget"] == b) & (sub["method"] == m)]
            if r.empty:
                vals.append("")
                continue
            r = r.iloc[0]
            if r["status"] == "above":
                vals.append(f"n/r ({r['value']:.3f} at {r['spend']:.0f})")
            else:
                vals.append(f"{r['value']:.3f}" + ("<" if r["status"] == "less" else ""))
        out.append(f"| {m} | " + " | ".join(vals) + " |")
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
            humans=("human_labels", "mean"),
        )
        .rename(columns={"split": "dataset", "label": "method"})
    )
    n_items = {"dev": 800, "heldout": 400, "all": 1200}
    money = levels(n_items)
    es_money = equal_spend_frame(stats, money)
    # the verdict: dollars cells at the money; auditor cells at the money and B (module doc)
    es = pd.concat(
        [es_money.loc[es_money["setting"] != "auditor"], _both_limits_frame(stats, money, n_items)],
        ignore_index=True,
    )
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
        "the setting's money for that budget (`quorum.bench.equal_spend`); in the auditor",
        "setting also at its human limit B (a run, or a mixture of two runs, whose expected",
        "spend is at most the money and expected human labels at most B: the two limits",
        "every auditor run obeys; `at_both_limits`). `n/r` = never spent that little (not",
        "ranked); `<` = spent less than the cell's money. **bold** = best, `=` within 0.005",
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
        lines += _money_only_reading(es_money, split, budgets, quorums, others)
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
