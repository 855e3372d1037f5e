"""The paper's tables, built from a :class:`BenchRun` (one builder per experiment)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from quorum.bench.runner import BenchRun
from quorum.bench.tables import (
    SETTINGS,
    VARIANT_NAMES,
    Cell,
    Table,
    TableFile,
    ci95,
    fmt_num,
    fmt_pm,
    frame,
    is_quorum,
    mean_sd,
    method_name,
    metric_col,
    pct,
    rank_marks,
)
from quorum.methods import method_trait


def _metric_label(info: dict[str, Any] | None) -> str:
    return "ROUGE-1" if info and info.get("type") == "summarization" else "Acc."


def _dataset_label(run: BenchRun, d: str, setting: str) -> str:
    info = run.info(d)
    if not info:
        return d
    llm = "" if info.get("llm_mean") is None else f"<br>(LLM: {info['llm_mean']:.3f})"
    if setting == "dollars":
        return f"{d}{llm}<br>Human cost: {info['all_human_cost']:,.0f}"
    return f"{d}{llm}<br>{info['n_items']:,} items"


def _errors(rows: list[dict[str, Any]]) -> list[str]:
    errs = sorted({str(r.get("error")) for r in rows if r.get("status") == "error"})
    return errs


def _error_note(rows: list[dict[str, Any]]) -> str:
    errs = _errors(rows)
    if not errs:
        return ""
    n = sum(1 for r in rows if r.get("status") == "error")
    shown = "; ".join(e[:160] for e in errs[:5])
    return f"\n\n**{n} run(s) failed** and are shown as `error`: {shown}"


# ----------------------------------------------------------------- main tables
def _cell_stats(sub: pd.DataFrame) -> dict[str, Any]:
    q, qs, n = mean_sd(sub["q"])
    mca, mcas, _ = mean_sd(sub["mca"]) if "mca" in sub else (math.nan, math.nan, 0)
    cost, _, _ = mean_sd(sub["cost"])
    conf, _, _ = mean_sd(sub["confidence_cost"]) if "confidence_cost" in sub else (0.0, 0, 0)
    # what was used: the authors' accounting leaves some of it unpaid (``unpaid_cost``)
    unpaid = sub["unpaid_cost"].fillna(0.0) if "unpaid_cost" in sub else 0.0
    spend, _, _ = mean_sd(sub["cost"] + unpaid)
    return {
        "q": q,
        "qs": qs,
        "n": n,
        "mca": mca,
        "mcas": mcas,
        "cost": cost,
        "conf": conf,
        "spend": spend,
    }


def main_stats(run: BenchRun) -> pd.DataFrame:
    """Mean/std per (dataset, setting, budget, method) of the main experiment."""
    df = frame(run.rows("main"))
    if df.empty:
        return pd.DataFrame()
    df = df.assign(q=metric_col(df))
    recs = []
    for (d, st, b, m), sub in df.groupby(["dataset", "setting", "budget", "method"], sort=False):
        recs.append({"dataset": d, "setting": st, "budget": b, "method": m, **_cell_stats(sub)})
    return pd.DataFrame(recs)


def main_tables(run: BenchRun) -> list[TableFile]:
    sec = run.config.section("main")
    if sec is None:
        return []
    stats = main_stats(run)
    rows_all = run.rows("main")
    files = []
    for setting in sec.settings:
        auditor = setting == "auditor"
        header = ["Dataset", "Method"]
        for b in sec.budgets:
            header += [f"{pct(b)} Acc/R-1", f"{pct(b)} MCA"] + (
                [f"{pct(b)} Cost"] if auditor else []
            )
        rows: list[list[Cell | str]] = []
        for d in sec.datasets:
            st = (
                stats[(stats["dataset"] == d) & (stats["setting"] == setting)]
                if len(stats)
                else stats
            )
            methods = [m for m in sec.methods if len(st) and (st["method"] == m).any()]
            failed = {
                r["method"]
                for r in rows_all
                if r["dataset"] == d and r["setting"] == setting and r.get("status") == "error"
            }
            methods += [m for m in sec.methods if m in failed and m not in methods]
            if not methods:
                continue
            cols: list[list[Cell]] = [[] for _ in methods]
            for b in sec.budgets:
                cell = {m: st[(st["method"] == m) & np.isclose(st["budget"], b)] for m in methods}
                get = {m: (c.iloc[0].to_dict() if len(c) else None) for m, c in cell.items()}
                qv = [get[m]["q"] if get[m] else math.nan for m in methods]
                mv = [get[m]["mca"] if get[m] else math.nan for m in methods]
                cv = [get[m]["cost"] if get[m] else math.nan for m in methods]
                qm, mm = rank_marks(qv), rank_marks(mv)
                cm = rank_marks(cv, higher=False, digits=2)
                for i, m in enumerate(methods):
                    g = get[m]
                    if g is None:
                        cols[i] += [Cell("error" if m in failed else "-"), Cell("-")]
                        cols[i] += [Cell("-")] if auditor else []
                        continue
                    cols[i].append(Cell(fmt_pm(g["q"], g["qs"]), qm[i]))
                    cols[i].append(Cell(fmt_pm(g["mca"], g["mcas"]), mm[i]))
                    if auditor:
                        txt = fmt_num(g["cost"])
                        if g["conf"] and g["conf"] > 1e-9:
                            txt += f" ({fmt_num(g['conf'])} conf.)"
                        cols[i].append(Cell(txt, cm[i]))
            for i, m in enumerate(methods):
                label = _dataset_label(run, d, setting) if i == 0 else ""
                rows.append([label, method_name(m), *cols[i]])
        seeds = _n_seeds(sec.seeds)
        sseeds = len(seed_ids(sec.summarization_seeds))
        if auditor:
            cap = (
                "Mean ± std in the auditor-style setting: budget = share of items that may get a "
                "human label. Accuracy (ROUGE-1 for summaries, ↑), Machine Cumulative Accuracy "
                "(↑; against the panel's MCA reference LLM) and total cost (↓; in parentheses the "
                "part spent on uncertainty estimation: confidence calls or the other models' "
                "answers). In parentheses under the dataset: mean accuracy/ROUGE-1 of the LLM "
                "panel. "
                f"{seeds} ({sseeds} for summarization). **Bold**: best, <u>underlined</u>: second "
                "(per dataset and column, at 3 decimals)."
            )
        else:
            cap = (
                "Mean ± std in the dollars setting: budget = share of the cost of labelling every "
                "item by a human (shown under the dataset). Accuracy (ROUGE-1 for summaries, ↑) "
                f"and MCA (↑). {seeds} ({sseeds} for summarization). **Bold**: best, "
                "<u>underlined</u>: second."
            )
        t = Table(
            f"{SETTINGS[setting]}",
            header,
            rows,
            cap + _error_note([r for r in rows_all if r["setting"] == setting]),
        )
        files.append(
            TableFile(f"main_{setting}", f"Main results: {SETTINGS[setting].lower()}", tables=[t])
        )
    return files


# ----------------------------------------------------------------- equal spend
def spend_levels(run: BenchRun, stats: pd.DataFrame) -> dict[tuple[str, str, float], float]:
    """Per (dataset, setting, budget) of the main experiment, the money the setting offers
    before any method's uncertainty costs (needs the dataset's prices; cells without them
    fall back to ``equal_spend.default_levels``)."""
    from quorum.routing.budget import budget_for_setting

    out: dict[tuple[str, str, float], float] = {}
    if stats.empty:
        return out
    for d, st, b in (
        stats[["dataset", "setting", "budget"]].drop_duplicates().itertuples(index=False)
    ):
        info = run.info(d) or {}
        if info.get("human_price") is None or not info.get("n_items"):
            continue
        c_min = min((info.get("prices") or {}).values(), default=0.0)
        budget, _ = budget_for_setting(st, b, info["n_items"], info["human_price"], c_min)
        out[(d, st, float(b))] = float(budget.limit)
    return out


def equal_spend_tables(run: BenchRun) -> list[TableFile]:
    from quorum.bench.equal_spend import equal_spend_file

    sec = run.config.section("main")
    if sec is None:
        return []
    stats = main_stats(run)
    f = equal_spend_file(stats, spend_levels(run, stats), list(sec.methods), list(sec.settings))
    return [] if f is None else [f]


def readme_standing(files: list[TableFile], standing: dict[str, Any]) -> str:
    """The README's results: QUORUM at equal spend (from the ``equal_spend`` file), then in
    the paper-style tables."""
    eq = next((f for f in files if f.name == "equal_spend"), None)
    bullets = [ln for ln in (eq.intro if eq else "").splitlines() if ln.startswith("- **")]
    return standing_block("\n".join(bullets), standing_text(standing))


def standing_block(equal_spend: str, paper_style: str) -> str:
    parts = []
    if equal_spend.strip():
        parts += [
            "At equal spend (`tables/equal_spend.md`):",
            "",
            equal_spend,
        ]
    parts += ["", "In the paper-style tables (same budget, spend differs):", "", paper_style]
    return "\n".join(parts).strip()


# ----------------------------------------------------------------- QUORUM summary
def quorum_standing(run: BenchRun) -> dict[str, Any]:
    """Per (dataset, setting, budget) cell of the main tables: is QUORUM best, second, behind?"""
    return standing_from_stats(main_stats(run))


def standing_from_stats(stats: pd.DataFrame) -> dict[str, Any]:
    """``cells`` (one dict per dataset/setting/budget) and ``counts`` (overall, per setting).

    QUORUM (ours) against the baselines: other QUORUM rows (the paper preset) are left out.
    """
    cells = []
    if stats.empty or "quorum" not in set(stats["method"]):
        return {"cells": [], "counts": {}}
    stats = stats[[m == "quorum" or not is_quorum(m) for m in stats["method"]]]
    for (d, st, b), sub in stats.groupby(["dataset", "setting", "budget"], sort=False):
        if "quorum" not in set(sub["method"]) or len(sub) < 2:
            continue
        vals = sub.set_index("method")["q"]
        marks = dict(zip(vals.index, rank_marks(list(vals.values)), strict=True))
        others = vals.drop("quorum")
        best_other = others.idxmax()
        q = float(vals["quorum"])
        rank = {"best": "best", "second": "second"}.get(marks["quorum"], "behind")
        ranked = sorted(vals.values, reverse=True)
        pareto = None
        if "cost" in stats:
            qrow = sub[sub["method"] == "quorum"].iloc[0]
            pool = stats[
                (stats["dataset"] == d) & (stats["setting"] == st) & (stats["method"] != "quorum")
            ]
            pareto = not any(
                dominates(c, v, float(qrow["cost"]), q)
                for c, v in zip(pool["cost"], pool["q"], strict=True)
            )
        cells.append(
            {
                "dataset": d,
                "setting": st,
                "budget": b,
                "standing": rank,
                "quorum": q,
                "best_other": best_other,
                "best_other_value": float(others.max()),
                "gap": q - float(others.max()),
                "rank": 1 + sum(1 for v in ranked if round(v, 3) > round(q, 3)),
                "n_methods": len(vals),
                "pareto": pareto,
            }
        )
    df = pd.DataFrame(cells)
    counts = {}
    for key, sub in [("all", df), *((s, df[df["setting"] == s]) for s in df["setting"].unique())]:
        c = {"cells": len(sub)}
        for k in ("best", "second", "behind"):
            part = sub[sub["standing"] == k]
            c[k] = len(part)
            c[f"{k}_mean_gap"] = float(part["gap"].mean()) if len(part) else None
        c["pareto"] = int(sub["pareto"].fillna(False).astype(bool).sum())
        counts[key] = c
    return {"cells": cells, "counts": counts}


def dominates(cost: float, q: float, cost0: float, q0: float) -> bool:
    """Whether point (cost, q) beats (cost0, q0): no dearer and better beyond rounding, or
    >= 1% cheaper and as good (3 decimals)."""
    if any(math.isnan(x) for x in (cost, q, cost0, q0)):
        return False
    same_cost = cost <= cost0 * (1 + 1e-6) + 1e-9
    cheaper = cost < cost0 * (1 - 0.01)
    return (same_cost and q > q0 + 5e-4) or (cheaper and q >= q0 - 5e-4)


def _gap(x: float | None) -> str:
    return "-" if x is None else f"{x:+.3f}"


def standing_text(standing: dict[str, Any]) -> str:
    """Markdown sentences on where QUORUM stands (for the README)."""
    c = standing.get("counts", {})
    if not c:
        return "No main-table cells with QUORUM and another method yet."
    lines = []
    for key in ["all", *[k for k in c if k != "all"]]:
        x = c[key]
        what = "All cells" if key == "all" else SETTINGS.get(key, key)
        lines.append(
            f"- **{what}**: QUORUM is best in {x['best']} of {x['cells']} "
            f"(dataset, budget, setting) cells (mean margin over the best other method "
            f"{_gap(x['best_mean_gap'])}), second in {x['second']} (mean gap to the best "
            f"{_gap(x['second_mean_gap'])}), behind in {x['behind']} (mean gap "
            f"{_gap(x['behind_mean_gap'])}); on the cost-quality Pareto frontier in "
            f"{x['pareto']} of {x['cells']}."
        )
    cells = pd.DataFrame(standing["cells"])
    behind = cells[cells["standing"] != "best"].sort_values("gap")
    if len(behind):
        worst = behind.iloc[0]
        lines.append(
            f"- Largest shortfall: {worst['dataset']}, {worst['setting']}, {pct(worst['budget'])}: "
            f"QUORUM {worst['quorum']:.3f} vs {method_name(worst['best_other'])} "
            f"{worst['best_other_value']:.3f} ({worst['gap']:+.3f})."
        )
    return "\n".join(lines)


def standing_tables(run: BenchRun) -> list[TableFile]:
    st = quorum_standing(run)
    if not st["cells"]:
        return []
    cells = pd.DataFrame(st["cells"])
    rows = []
    for key, x in st["counts"].items():
        rows.append(
            [
                "all" if key == "all" else SETTINGS.get(key, key),
                str(x["cells"]),
                f"{x['best']} ({_gap(x['best_mean_gap'])})",
                f"{x['second']} ({_gap(x['second_mean_gap'])})",
                f"{x['behind']} ({_gap(x['behind_mean_gap'])})",
                str(x["pareto"]),
            ]
        )
    t1 = Table(
        "QUORUM's standing in the main tables",
        [
            "Setting",
            "Cells",
            "Best (mean margin)",
            "Second (mean gap)",
            "Behind (mean gap)",
            "On Pareto frontier",
        ],
        rows,
        "A cell is one (dataset, setting, budget); methods are compared on mean accuracy "
        "(ROUGE-1 for summaries) at 3 decimals, ties share the rank. Margin/gap: QUORUM minus "
        "the best other method (baselines only: the paper preset's row is not a competitor; "
        "at equal spend, both QUORUM rows: tables/equal_spend.md). Pareto: no other method's "
        "(cost, quality) point on that dataset and setting, at any budget, is as cheap and "
        "better (beyond rounding), or at least 1% cheaper and as good; cost is the total "
        "spent, uncertainty calls included.",
    )
    not_best = cells[cells["standing"] != "best"].sort_values("gap")
    rows2 = [
        [
            r["dataset"],
            r["setting"],
            pct(r["budget"]),
            f"{r['quorum']:.3f}",
            f"{method_name(r['best_other'])} {r['best_other_value']:.3f}",
            f"{r['gap']:+.3f}",
            f"{r['rank']} of {r['n_methods']}",
            {True: "yes", False: "no"}.get(r["pareto"], "-"),
        ]
        for _, r in not_best.iterrows()
    ]
    t2 = Table(
        "Cells where QUORUM is not best",
        ["Dataset", "Setting", "Budget", "QUORUM", "Best other", "Gap", "Rank", "Pareto"],
        rows2,
        "Sorted by gap, largest shortfall first.",
    )
    return [
        TableFile(
            "summary",
            "Where QUORUM stands",
            standing_text(st),
            [t1, t2] if rows2 else [t1],
        )
    ]


# ----------------------------------------------------------------- RQ2 features
def features_tables(run: BenchRun) -> list[TableFile]:
    sec = run.config.section("features")
    if sec is None:
        return []
    rows_all = run.rows("features")
    df = frame(rows_all)
    if df.empty:
        return []
    df = df.assign(q=metric_col(df))
    tables = []
    for setting in sec.settings:
        rows = []
        for b in sec.budgets:
            for i, d in enumerate(sec.datasets):
                sub = df[
                    (df["dataset"] == d) & (df["setting"] == setting) & np.isclose(df["budget"], b)
                ]
                vals = [ci95(sub.loc[sub["variant"] == v, "q"]) for v in sec.variants]
                marks = rank_marks([v[0] for v in vals])
                marks = ["best" if m == "best" else "" for m in marks]
                rows.append(
                    [pct(b) if i == 0 else "", d]
                    + [Cell(fmt_pm(m, h), mk) for (m, h, _), mk in zip(vals, marks, strict=True)]
                )
        tables.append(
            Table(
                SETTINGS[setting],
                ["Budget", "Dataset", *[VARIANT_NAMES[v] for v in sec.variants]],
                rows,
                "Mean ± 95% confidence interval (t) of QUORUM's accuracy (ROUGE-1 for summaries) "
                "with its item features replaced. *LLM-uncertainty features* are read from the "
                "panel's recorded answers and confidences **for free** (entropy and disagreement "
                "of the answers, 1 - recorded confidence); the paper's point is about the signal, "
                "and paying for it would cost one extra call per item and model. *Random*: i.i.d. "
                "U(0,1) features of the same shape (and random unit embeddings). "
                f"{_n_seeds(sec.seeds)}. **Bold**: best."
                + _error_note([r for r in rows_all if r["setting"] == setting]),
            )
        )
    return [TableFile("features", "RQ2: features vs uncertainty vs random features", tables=tables)]


def seed_ids(seeds: Any) -> list[int]:
    return list(range(seeds)) if isinstance(seeds, int) else list(seeds)


def _n_seeds(seeds: Any) -> str:
    n = len(seed_ids(seeds))
    return f"{n} seed" + ("" if n == 1 else "s")


# ----------------------------------------------------------------- RQ3 annotations
def annotations_tables(run: BenchRun) -> list[TableFile]:
    sec = run.config.section("annotations")
    if sec is None:
        return []
    rows_all = run.rows("annotations")
    df = frame(rows_all)
    if df.empty:
        return []
    df = df.assign(q=metric_col(df))
    df["max_annotations"] = [
        json.loads(p).get("max_annotations", _default("max_annotations")) for p in df["params"]
    ]
    header = ["#Annotations"]
    cols = []
    for d in sec.datasets:
        for b in sec.budgets:
            header.append(f"{d} ({pct(b)})" if len(sec.budgets) > 1 else d)
            cols.append((d, b))
    per_col = []
    for d, b in cols:
        sub = df[(df["dataset"] == d) & np.isclose(df["budget"], b)]
        vals = [mean_sd(sub.loc[sub["max_annotations"] == k, "q"]) for k in sec.max_annotations]
        marks = ["best" if m == "best" else "" for m in rank_marks([v[0] for v in vals])]
        per_col.append([Cell(fmt_pm(m, s), mk) for (m, s, _), mk in zip(vals, marks, strict=True)])
    rows = [
        [str(k), *[per_col[j][i] for j in range(len(cols))]]
        for i, k in enumerate(sec.max_annotations)
    ]
    cap = (
        f"QUORUM's accuracy (ROUGE-1 for summaries), mean ± std, with at most 1, 2, 3 "
        f"annotations per item, {SETTINGS[sec.setting].lower()} setting"
        + (f", budget {pct(sec.budgets[0])}" if len(sec.budgets) == 1 else "")
        + ". **Bold**: best."
        + _error_note(rows_all)
    )
    t = Table("Annotations per item", header, rows, cap)
    return [TableFile("annotations", "RQ3: number of annotations per item", tables=[t])]


def _default(name: str) -> Any:
    from quorum.bench.config import router_defaults

    return router_defaults("quorum").get(name)


# ----------------------------------------------------------------- sensitivity
PARAM_LABELS = {
    "tau_h": "τ_H (escalation threshold)",
    "w_human": "w_H (human vote weight)",
    "epsilon0": "ε_0 (initial exploration)",
    "gamma": "γ (exploration decay)",
    "calibration_share": "Calibration share",
}


def sensitivity_tables(run: BenchRun) -> list[TableFile]:
    sec = run.config.section("sensitivity")
    if sec is None:
        return []
    rows_all = run.rows("sensitivity")
    df = frame(rows_all)
    if df.empty:
        return []
    df = df.assign(q=metric_col(df))
    defaults = {k: _default(k) for k in sec.grids}
    tables = []
    for name, values in sec.grids.items():
        base = dict(run.config.params.get("quorum", {}))
        got = []
        for v in values:
            p = {**base, name: v}
            sub = df[[_params_match(x, p, defaults) for x in df["params"]]]
            got.append((*mean_sd(sub["q"]), mean_sd(sub["cost"])[0]))
        marks = ["best" if m == "best" else "" for m in rank_marks([g[0] for g in got])]
        rows = [
            [
                f"{v:g}" + (" (default)" if _same(v, defaults.get(name)) else ""),
                Cell(fmt_pm(g[0], g[1]), mk),
                fmt_num(g[3]),
            ]
            for v, g, mk in zip(values, got, marks, strict=True)
        ]
        tables.append(Table(PARAM_LABELS.get(name, name), ["Value", "Accuracy", "Cost"], rows))
    intro = (
        f"QUORUM on {sec.dataset}, {SETTINGS[sec.setting].lower()} setting, budget "
        f"{pct(sec.budget)}, one parameter varied at a time (the others at their defaults), "
        f"mean ± std over {_n_seeds(sec.seeds)}. **Bold**: best value."
    )
    if sec.note:
        intro += f"\n\n{sec.note}"
    intro += _error_note(rows_all)
    return [TableFile("sensitivity", "Sensitivity of QUORUM's hyper-parameters", intro, tables)]


def _same(a: Any, b: Any) -> bool:
    try:
        return b is not None and math.isclose(float(a), float(b))
    except (TypeError, ValueError):
        return a == b


def _params_match(params_json: str, want: dict[str, Any], defaults: dict[str, Any]) -> bool:
    """Whether a row's (non-default) parameters are exactly ``want`` (defaults filled in)."""
    got = json.loads(params_json)
    for k, v in want.items():
        if not _same(got.get(k, defaults.get(k, _default(k))), v):
            return False
    return not set(got) - set(want)


# ----------------------------------------------------------------- noisy humans
def noisy_tables(run: BenchRun) -> list[TableFile]:
    sec = run.config.section("noisy")
    if sec is None:
        return []
    rows_all = run.rows("noisy")
    df = frame(rows_all)
    info0 = run.info(sec.dataset, sec.humans[0])
    title = "RQ3: noisy humans (SentiMP-En)"
    if info0 is not None and not info0.get("panel"):
        return [
            TableFile(
                "noisy",
                title,
                f"**Skipped**: {sec.dataset} has no machine annotator in its panel, so no "
                "method can route (the routers need at least one LLM or model).",
            )
        ]
    if df.empty:
        return [TableFile("noisy", title, "No successful runs." + _error_note(rows_all))]
    df = df.assign(q=metric_col(df))
    rows = []
    for h in sec.humans:
        info = run.info(sec.dataset, h) or {}
        noise = (info.get("human_noise") or {}).get(h)
        label = f"{h} ({noise:.0%} noise)" if noise is not None else h
        vals = [mean_sd(df.loc[(df["human"] == h) & (df["method"] == m), "q"]) for m in sec.methods]
        marks = ["best" if m == "best" else "" for m in rank_marks([v[0] for v in vals], digits=4)]
        rows.append(
            [label] + [Cell(fmt_pm(m, s, 4), mk) for (m, s, _), mk in zip(vals, marks, strict=True)]
        )
    panel = ", ".join(info0.get("panel", [])) if info0 else "?"
    llm = info0.get("llm_mean") if info0 else None
    cap = (
        f"Accuracy (mean ± std, {_n_seeds(sec.seeds)}) on {sec.dataset}, "
        f"{SETTINGS[sec.setting].lower()} setting, {sec.human_labels} human labels; each recorded "
        "labeller in turn is the human arm, gold (the majority label) is used only to score. "
        "Noise = the labeller's disagreement with gold. Machine annotator: "
        f"{panel}"
        + (f" (accuracy {llm:.3f})" if llm is not None else "")
        + ". **Bold**: best."
        + _error_note(rows_all)
    )
    t = Table(
        "Noisy humans", ["Labeller (noise)", *[method_name(m) for m in sec.methods]], rows, cap
    )
    return [TableFile("noisy", title, tables=[t])]


# ----------------------------------------------------------------- overhead
def overhead_tables(run: BenchRun) -> list[TableFile]:
    sec = run.config.section("overhead")
    if sec is None:
        return []
    main = run.config.section("main")
    df = frame(run.rows("main"))
    datasets = run.plan.overhead_datasets
    methods = list(main.methods) if main else []
    rows = []
    for d in datasets:
        et = _et(run, d)
        cells = [d]
        sub = df[df["dataset"] == d] if len(df) else df
        for m in methods:
            r = sub[sub["method"] == m] if len(sub) else sub
            if not len(r):
                cells.append("-")
                continue
            rt = float(r["routing_seconds"].mean())
            txt = f"{rt:.3f}"
            if method_trait(m, "uses_item_features"):
                txt += f" + {et:.1f} ET" if et is not None else " + ET"
            if method_trait(m, "pays_for_confidence"):
                calls = float(r["confidence_calls"].max()) if "confidence_calls" in r else 0
                txt += f" + CT ({calls:,.0f} calls)" if calls else ""
            cells.append(txt)
        rows.append(cells)
    t1 = Table(
        "Time before routing decisions (seconds)",
        ["Dataset", *[method_name(m) for m in methods]],
        rows,
        "Routing time = mean `routing_seconds` of the method's main-table runs on this machine "
        "(both settings, every budget; it includes ARAIDA's and SANT's model training, which the "
        "paper lists as TT). ET = cold feature extraction (linguistic features, sentence "
        "embeddings, kNN) for the whole dataset, needed by QUORUM and by ARAIDA/SANT (which use "
        "the item embeddings). CT = confidence estimation by extra LLM calls (the most such calls "
        "in any run; replay reads them from the recorded data, so their time cannot be measured "
        "here: live, each is one more LLM request).",
    )
    rows2 = []
    for d in datasets:
        full = _full_cold(run, d)
        if full is not None:
            tm, n = full
            rows2.append(
                [
                    d,
                    f"{n:,}",
                    f"{n:,} (first bench run)",
                    f"{tm.get('linguistic', 0):.1f}",
                    f"{tm.get('embedding', 0):.1f}",
                    f"{tm.get('knn', 0):.2f}",
                    f"{_cold_total(tm):.1f}",
                    "-",
                ]
            )
            continue
        ft = run.feature_timing(d) or {}
        if ft.get("status") != "ok":
            rows2.append([d, "-", "-", "-", "-", "-", "-", ft.get("error", "not measured")])
            continue
        tm = ft["timings"]
        rows2.append(
            [
                d,
                f"{ft['n_items']:,}",
                f"{ft['sample']:,}",
                f"{tm.get('linguistic', 0):.1f}",
                f"{tm.get('embedding', 0):.1f}",
                f"{tm.get('knn', 0):.2f}",
                f"{ft['estimated_full_seconds']:.1f}" + (" (scaled)" if ft.get("scaled") else ""),
                f"{ft.get('model_load_seconds', 0):.1f}",
            ]
        )
    t2 = Table(
        "Cold feature extraction",
        [
            "Dataset",
            "Items",
            "Timed on",
            "Linguistic s",
            "Embedding s",
            "kNN s",
            "ET (all items) s",
            "Model load s",
        ],
        rows2,
        f"Measured without the feature cache on a random sample of at most {sec.feature_sample} "
        "items, one thread, while the other worker was busy; 'scaled' = extrapolated to all "
        "items (linguistic features and embeddings linearly, the exact kNN search "
        "quadratically); 'first bench run' = the bench itself computed the features of every "
        "item (empty feature cache), and that full measurement is used. Model load (spaCy and "
        "the sentence-embedding model, once per process) is listed apart and not included in "
        "ET. With the disk cache, a second extraction only "
        "reads the file (well under a second).",
    )
    return [TableFile("overhead", "Overhead: time needed before routing", tables=[t1, t2])]


def _cold_total(tm: dict[str, Any]) -> float:
    return sum(float(tm.get(k, 0.0)) for k in ("linguistic", "embedding", "knn", "scaling"))


def _full_cold(run: BenchRun, d: str) -> tuple[dict[str, Any], int] | None:
    """The feature timings of the bench's own preparation, when it found no cache."""
    info = run.info(d) or {}
    tm = info.get("feature_timings") or {}
    if tm and tm.get("cached") is False:
        return tm, int(info["n_items"])
    return None


def _et(run: BenchRun, d: str) -> float | None:
    """Cold feature time of the whole dataset: measured in full if the bench had to, else
    the sampled, scaled measurement."""
    full = _full_cold(run, d)
    if full is not None:
        return _cold_total(full[0])
    ft = run.feature_timing(d) or {}
    return ft.get("estimated_full_seconds") if ft.get("status") == "ok" else None


def all_tables(run: BenchRun) -> list[TableFile]:
    out: list[TableFile] = []
    for fn in (
        equal_spend_tables,
        standing_tables,
        main_tables,
        features_tables,
        annotations_tables,
        sensitivity_tables,
        noisy_tables,
        overhead_tables,
    ):
        out += fn(run)
    return out


def rows_frame(run: BenchRun) -> pd.DataFrame:
    """Every run of the plan (one row each) with the experiments that use it."""
    uses: dict[str, list[str]] = {}
    for exp, specs in run.plan.runs.items():
        for s in specs:
            uses.setdefault(s.key, [])
            if exp not in uses[s.key]:
                uses[s.key].append(exp)
    recs = []
    for key, exps in uses.items():
        r = run.runs.get(key)
        if r is None:
            continue
        r = dict(r)
        r.pop("traceback", None)
        r["experiments"] = ";".join(exps)
        if isinstance(r.get("annotators"), list):
            r["annotators"] = ";".join(r["annotators"])
        recs.append(r)
    df = pd.DataFrame(recs)
    first = [
        "experiments",
        "dataset",
        "method",
        "setting",
        "budget",
        "seed",
        "variant",
        "params",
        "human",
        "status",
        "accuracy",
        "rouge1",
        "mca",
        "cost",
    ]
    cols = [c for c in first if c in df] + [c for c in df if c not in first]
    return df[cols] if len(df) else df
