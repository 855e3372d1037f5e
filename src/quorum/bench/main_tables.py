"""The main experiment's tables: one per setting, methods x budgets, mean ± std per cell;
and the equal-spend file built from the same cell statistics."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from quorum.bench.captions import dataset_label, error_note, n_seeds, seed_ids
from quorum.bench.runner import BenchRun
from quorum.bench.tables import (
    SETTINGS,
    Cell,
    Table,
    TableFile,
    fmt_num,
    fmt_pm,
    frame,
    mean_sd,
    method_name,
    metric_col,
    pct,
    rank_marks,
)


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


def _budget_cells(
    st: pd.DataFrame, methods: list[str], failed: set[str], b: float, auditor: bool
) -> list[list[Cell]]:
    """Per method, its cells at budget ``b``: quality, MCA and (auditor) cost, ranked."""
    cell = {m: st[(st["method"] == m) & np.isclose(st["budget"], b)] for m in methods}
    get = {m: (c.iloc[0].to_dict() if len(c) else None) for m, c in cell.items()}
    qv = [get[m]["q"] if get[m] else math.nan for m in methods]
    mv = [get[m]["mca"] if get[m] else math.nan for m in methods]
    cv = [get[m]["cost"] if get[m] else math.nan for m in methods]
    qm, mm = rank_marks(qv), rank_marks(mv)
    cm = rank_marks(cv, higher=False, digits=2)
    out: list[list[Cell]] = []
    for i, m in enumerate(methods):
        g = get[m]
        if g is None:
            out.append(
                [Cell("error" if m in failed else "-"), Cell("-")]
                + ([Cell("-")] if auditor else [])
            )
            continue
        cells = [Cell(fmt_pm(g["q"], g["qs"]), qm[i]), Cell(fmt_pm(g["mca"], g["mcas"]), mm[i])]
        if auditor:
            txt = fmt_num(g["cost"])
            if g["conf"] and g["conf"] > 1e-9:
                txt += f" ({fmt_num(g['conf'])} conf.)"
            cells.append(Cell(txt, cm[i]))
        out.append(cells)
    return out


def _dataset_rows(
    run: BenchRun,
    sec: Any,
    stats: pd.DataFrame,
    rows_all: list[dict[str, Any]],
    d: str,
    setting: str,
) -> list[list[Cell | str]]:
    """One dataset's rows of a main table (a row per method that ran or failed)."""
    st = stats[(stats["dataset"] == d) & (stats["setting"] == setting)] if len(stats) else stats
    methods = [m for m in sec.methods if len(st) and (st["method"] == m).any()]
    failed = {
        r["method"]
        for r in rows_all
        if r["dataset"] == d and r["setting"] == setting and r.get("status") == "error"
    }
    methods += [m for m in sec.methods if m in failed and m not in methods]
    if not methods:
        return []
    cols: list[list[Cell]] = [[] for _ in methods]
    for b in sec.budgets:
        for i, cells in enumerate(_budget_cells(st, methods, failed, b, setting == "auditor")):
            cols[i] += cells
    return [
        [dataset_label(run, d, setting) if i == 0 else "", method_name(m), *cols[i]]
        for i, m in enumerate(methods)
    ]


def _main_caption(sec: Any, auditor: bool) -> str:
    seeds = n_seeds(sec.seeds)
    sseeds = len(seed_ids(sec.summarization_seeds))
    if auditor:
        return (
            "Mean ± std in the auditor-style setting: budget = share of items that may get a "
            "human label. Accuracy (ROUGE-1 for summaries, ↑), Machine Cumulative Accuracy "
            "(↑; against the panel's MCA reference LLM) and total cost (↓; in parentheses the "
            "part spent on uncertainty estimation: confidence calls or the other models' "
            "answers). In parentheses under the dataset: mean accuracy/ROUGE-1 of the LLM "
            "panel. "
            f"{seeds} ({sseeds} for summarization). **Bold**: best, <u>underlined</u>: second "
            "(per dataset and column, at 3 decimals)."
        )
    return (
        "Mean ± std in the dollars setting: budget = share of the cost of labelling every "
        "item by a human (shown under the dataset). Accuracy (ROUGE-1 for summaries, ↑) "
        f"and MCA (↑). {seeds} ({sseeds} for summarization). **Bold**: best, "
        "<u>underlined</u>: second."
    )


def main_tables(run: BenchRun) -> list[TableFile]:
    """``main_auditor`` / ``main_dollars``: a row per (dataset, method), columns per budget."""
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
            rows += _dataset_rows(run, sec, stats, rows_all, d, setting)
        t = Table(
            f"{SETTINGS[setting]}",
            header,
            rows,
            _main_caption(sec, auditor)
            + error_note([r for r in rows_all if r["setting"] == setting]),
        )
        files.append(
            TableFile(f"main_{setting}", f"Main results: {SETTINGS[setting].lower()}", tables=[t])
        )
    return files


def spend_levels(run: BenchRun, stats: pd.DataFrame) -> dict[tuple[str, str, float], float]:
    """Per (dataset, setting, budget) of the main experiment, the money the setting offers
    before any method's uncertainty costs (needs the dataset's prices; cells without them
    fall back to ``equal_spend.default_levels``)."""
    from quorum.routing.core.budget import budget_for_setting

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
    from quorum.bench.equal_spend_tables import equal_spend_file

    sec = run.config.section("main")
    if sec is None:
        return []
    stats = main_stats(run)
    f = equal_spend_file(stats, spend_levels(run, stats), list(sec.methods), list(sec.settings))
    return [] if f is None else [f]
