"""The equal-spend table file: QUORUM's standing sentences, the summary, every method per
setting at each spend level, and the cells QUORUM loses.

The rules (levels, a method's quality at a level, the standing) are in
:mod:`quorum.bench.equal_spend`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from quorum.bench.equal_spend import RTOL, equal_spend_frame, equal_spend_standing
from quorum.bench.tables import (
    SETTINGS,
    Cell,
    Table,
    TableFile,
    fmt_num,
    is_quorum,
    method_name,
    pct,
    rank_marks,
)


def _gap(x: float | None) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:+.3f}"


def _where(cell: dict[str, Any]) -> str:
    return f"{cell['dataset']}, {cell['setting']}, {pct(cell['budget'])}"


def standing_lines(standing: dict[str, Any]) -> list[str]:
    """Markdown bullets: per setting, best / second / behind at equal spend and by how much."""
    c = standing.get("counts", {})
    name = method_name(standing.get("method", "quorum"))
    if not c:
        return [f"- **{name}**: no (dataset, setting, budget) cell with a baseline yet."]
    lines = []
    for key in [k for k in c if k != "all"] + ["all"]:
        x = c[key]
        what = "all settings" if key == "all" else SETTINGS.get(key, key).lower()
        parts = []
        for k, how in (("best", "mean margin"), ("second", "mean gap"), ("behind", "mean gap")):
            gap = f" ({how} {_gap(x[f'{k}_mean_gap'])})" if x[k] else ""
            parts.append(
                f"{k} in {x[k]}" + (f" of {x['cells']} cells" if k == "best" else "") + gap
            )
        line = f"- **{name}, {what}**, at equal spend: " + ", ".join(parts)
        if x["alone"]:
            line += f"; no baseline can run at its spend in {x['alone']}"
        if x["not reached"]:
            line += f"; it cannot run at the level in {x['not reached']}"
        if x["no result"]:
            line += f"; no successful run in {x['no result']}"
        w = x.get("worst")
        if w:
            line += (
                f". Largest loss: {_where(w)}: {w['value']:.3f} vs "
                f"{method_name(w['best_other'])} {w['best_other_value']:.3f} ({w['gap']:+.3f})"
            )
        if x["unreached"]:
            line += (
                f". {x['unreached']} (baseline, cell) pairs are not compared: the baseline's "
                "cheapest run costs more than the level"
            )
        lines.append(line + ".")
    return lines


# ----------------------------------------------------------------- tables
def _cell_text(r: pd.Series) -> str:
    if r["status"] == "missing":
        return "-"
    if r["status"] == "above":
        return f"needs +{fmt_num(r['delta'])} ({r['value']:.3f} at {fmt_num(r['spend'])})"
    if r["status"] == "less":
        return f"{r['value']:.3f} (spent {fmt_num(-r['delta'])} less)"
    return f"{r['value']:.3f}"


def setting_table(es: pd.DataFrame, setting: str, methods: list[str]) -> Table:
    """Rows (dataset, budget), one column per method, marks among the ranked methods."""
    sub = es[es["setting"] == setting]
    rows: list[list[Cell | str]] = []
    for d in dict.fromkeys(sub["dataset"]):
        part = sub[sub["dataset"] == d]
        for i, b in enumerate(sorted(part["budget"].unique())):
            cell = part[np.isclose(part["budget"], b)].set_index("method")
            got = [cell.loc[m] if m in cell.index else None for m in methods]
            vals = [
                float(g["value"]) if g is not None and g["status"] in ("at", "less") else math.nan
                for g in got
            ]
            marks = rank_marks(vals)
            level = float(cell["level"].iloc[0])
            row: list[Cell | str] = [d if i == 0 else "", pct(b), fmt_num(level)]
            for g, mk in zip(got, marks, strict=True):
                row.append(Cell("-") if g is None else Cell(_cell_text(g), mk))
            rows.append(row)
    cap = (
        "Quality (accuracy, ROUGE-1 for summaries; mean over seeds) of every method at the same "
        "total spend. *Spend level*: the money the setting offers at that budget before any "
        "method's own uncertainty costs ("
        + (
            "budget x the all-human cost"
            if setting == "dollars"
            else "the budget's human labels + the cheapest LLM on every item"
        )
        + "). A plain number is on the method's cost-quality curve at exactly that spend "
        "(measured there, or on the straight line between its two budgets on either side); "
        "*spent X less*: its best measured point costs X less than the level; *needs +X*: its "
        "cheapest run costs X more than the level, so it is not compared (its quality there in "
        "parentheses). **Bold**: best, <u>underlined</u>: second among the compared methods "
        "(3 decimals)."
    )
    return Table(
        f"{SETTINGS[setting]} at equal spend",
        ["Dataset", "Budget", "Spend level", *[method_name(m) for m in methods]],
        rows,
        cap,
    )


def summary_table(standings: list[dict[str, Any]]) -> Table:
    rows: list[list[Cell | str]] = []
    for s in standings:
        for key, x in s["counts"].items():
            w = x.get("worst")
            rows.append(
                [
                    method_name(s["method"]),
                    "all" if key == "all" else SETTINGS.get(key, key),
                    str(x["cells"]),
                    f"{x['best']} ({_gap(x['best_mean_gap'])})",
                    f"{x['second']} ({_gap(x['second_mean_gap'])})",
                    f"{x['behind']} ({_gap(x['behind_mean_gap'])})",
                    f"{w['gap']:+.3f} ({w['dataset']}, {pct(w['budget'])}, vs "
                    f"{method_name(w['best_other'])})"
                    if w
                    else "-",
                    str(x["alone"] + x["not reached"] + x["no result"]),
                    str(x["unreached"]),
                ]
            )
    return Table(
        "QUORUM at equal spend",
        [
            "QUORUM row",
            "Setting",
            "Cells",
            "Best (mean margin)",
            "Second (mean gap)",
            "Behind (mean gap)",
            "Largest loss",
            "No comparison",
            "Baselines not reached",
        ],
        rows,
        "A cell is one (dataset, setting, budget) at its spend level. Each QUORUM row is "
        "compared with the baselines only (not with the other QUORUM row), at 3 decimals, "
        "ties share the rank. Margin/gap: QUORUM minus the best compared baseline. *No "
        "comparison*: no baseline, or not this QUORUM row, can run at the level (or it has no "
        "successful run). *Baselines not reached*: (baseline, cell) pairs left out because "
        "the baseline's cheapest run costs more than the level.",
    )


def losses_table(standings: list[dict[str, Any]]) -> Table | None:
    rows: list[list[Cell | str]] = []
    cells = [c for s in standings for c in s["cells"] if c["standing"] in ("second", "behind")]
    for c in sorted(cells, key=lambda c: c["gap"]):
        rows.append(
            [
                method_name(c["method"]),
                c["dataset"],
                c["setting"],
                pct(c["budget"]),
                fmt_num(c["level"]),
                f"{c['value']:.3f}"
                + (
                    ""
                    if c["status"] == "at"
                    else f" (spent {fmt_num(c['level'] - c['spend'])} less)"
                ),
                f"{method_name(c['best_other'])} {c['best_other_value']:.3f}"
                + (
                    ""
                    if abs(c["best_other_spend"] - c["level"]) <= RTOL * max(c["level"], 1.0)
                    else f" (spent {fmt_num(c['level'] - c['best_other_spend'])} less)"
                ),
                f"{c['gap']:+.3f}",
                f"{c['rank']} of {c['n_ranked'] + 1}",
            ]
        )
    if not rows:
        return None
    return Table(
        "Where QUORUM loses at equal spend",
        [
            "QUORUM row",
            "Dataset",
            "Setting",
            "Budget",
            "Spend level",
            "QUORUM",
            "Best baseline",
            "Gap",
            "Rank",
        ],
        rows,
        "Every cell where a QUORUM row is not best among the compared methods, largest loss "
        "first. Gap: QUORUM minus the best baseline, both at the spend level (or at what they "
        "spent, when less).",
    )


INTRO = (
    "Every method's quality at the **same total spend**. Methods are read off their own "
    "cost-quality curves (mean total spend and mean quality at each budget of the main "
    "experiment, joined by straight lines) at the money each budget offers before any "
    "method's own uncertainty costs. A point between two budgets is what the method gives in "
    "expectation when one of the two is drawn at random with the odds that make the "
    "expected spend equal to the level; no curve is extended beyond its measured points, and "
    "a method whose cheapest run costs more than the level is shown with that difference and "
    "not compared. The paper-style tables (same budget, different spend) are beside this one. "
    "See docs/bench.md."
)


def equal_spend_file(
    stats: pd.DataFrame,
    levels: dict[tuple[str, str, float], float] | None,
    methods: list[str],
    settings: list[str],
) -> TableFile | None:
    """The ``equal_spend`` table file from the main experiment's cell means."""
    es = equal_spend_frame(stats, levels)
    if es.empty:
        return None
    methods = [m for m in methods if m in set(es["method"])]
    standings = [equal_spend_standing(es, m) for m in methods if is_quorum(m)]
    standings = [s for s in standings if s["cells"]]
    lines = [ln for s in standings for ln in standing_lines(s)]
    tables = [summary_table(standings)] if standings else []
    lt = losses_table(standings)
    tables += [setting_table(es, st, methods) for st in settings if (es["setting"] == st).any()]
    if lt is not None:
        tables.append(lt)
    intro = INTRO + ("\n\n" + "\n".join(lines) if lines else "")
    return TableFile("equal_spend", "Equal spend: every method at the same money", intro, tables)
