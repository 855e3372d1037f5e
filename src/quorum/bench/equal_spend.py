"""Every method's quality at the same total spend (the table a reader should read first).

The main tables compare methods at the same *budget*, but a budget is not a price: in the
auditor setting a method that buys uncertainty estimates (confidence calls, other models'
answers) spends more than one that does not, and in the dollars setting a method may leave
money unspent. Here each method is read off its own cost-quality curve at common spend
levels.

- **Levels**: per (dataset, setting, budget) the money the setting offers at that budget
  before any method's own uncertainty costs (``budget_for_setting`` with no extra): dollars
  ``b * T * c_H``; auditor ``round(b * T) * c_H + T * c_min``. They do not depend on which
  methods run.
- **A method's curve**: its mean total spend and mean quality at each budget of the
  experiment (unpaid money of the authors' accounting counted as spent), joined by straight
  lines in spend order.
- **Its quality at level S**: the best of (a) its curve at S, between its two measured
  points on either side of S, and (b) a measured point that cost less than S (then it is
  shown with what it did not spend). A method whose cheapest point costs more than S is
  *not reached*: it is shown with its cheapest point and the extra money, and never ranked.
  No curve is extended beyond its points.

A point on the straight line is what the method gives, in expectation, when one of the two
budgets is drawn at random with the odds that make the expected spend S; so no method is
credited with anything it was not measured to deliver, and the same rule applies to all.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

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

#: a spend within this relative distance of the level counts as the level (float noise)
RTOL = 1e-6


@dataclass(frozen=True)
class AtSpend:
    """One method at one spend level."""

    value: float  #: quality (for ``above``: at its cheapest point)
    spend: float  #: the spend behind ``value`` (the level itself when on the curve at S)
    status: str  #: "at" (on its curve at S), "less" (a cheaper point), "above", "missing"
    budgets: tuple[float, ...] = ()  #: the budgets ``value`` comes from

    @property
    def ranked(self) -> bool:
        return self.status in ("at", "less")


def quality_at(points: list[tuple[float, float, float]], level: float) -> AtSpend:
    """A method's quality at total spend ``level`` from its ``(spend, quality, budget)``
    points (see the module docstring)."""
    pts = sorted(
        (float(c), float(q), float(b))
        for c, q, b in points
        if c is not None and q is not None and not (math.isnan(c) or math.isnan(q))
    )
    if not pts:
        return AtSpend(math.nan, math.nan, "missing")
    eps = RTOL * max(abs(level), 1.0)
    if pts[0][0] > level + eps:
        c, q, b = pts[0]
        return AtSpend(q, c, "above", (b,))
    # (quality, preference, candidate): on-curve candidates win ties against cheaper points
    cands: list[tuple[float, int, AtSpend]] = []
    for c, q, b in pts:
        if c <= level + eps:
            status = "at" if abs(c - level) <= eps else "less"
            cands.append((q, int(status == "at"), AtSpend(q, c, status, (b,))))
    for (c0, q0, b0), (c1, q1, b1) in itertools.pairwise(pts):
        if c0 < level - eps and c1 > level + eps:
            q = q0 + (q1 - q0) * (level - c0) / (c1 - c0)
            cands.append((q, 1, AtSpend(q, level, "at", (b0, b1))))
    return max(cands, key=lambda x: (x[0], x[1]))[2]


def _spend_col(stats: pd.DataFrame) -> pd.Series:
    return (stats["spend"] if "spend" in stats else stats["cost"]).astype(float)


def default_levels(stats: pd.DataFrame) -> dict[tuple[str, str, float], float]:
    """Fallback levels when the dataset's prices are unknown: the median of the methods'
    mean spends at each (dataset, setting, budget)."""
    s = stats.assign(_spend=_spend_col(stats))
    return {
        (d, st, float(b)): float(sub["_spend"].median())
        for (d, st, b), sub in s.groupby(["dataset", "setting", "budget"], sort=False)
    }


def equal_spend_frame(
    stats: pd.DataFrame, levels: dict[tuple[str, str, float], float] | None = None
) -> pd.DataFrame:
    """One row per (dataset, setting, budget, method): the level, the method's quality there,
    the spend behind it, ``delta`` = spend - level, ``status`` and the budgets used.

    ``stats`` has ``dataset, setting, budget, method, q`` and ``spend`` (or ``cost``): the
    means per cell of the main experiment (``results.main_stats``). ``levels`` maps
    (dataset, setting, budget) to money; missing cells fall back to :func:`default_levels`.
    """
    cols = ["dataset", "setting", "budget", "level", "method", "value", "spend", "delta"]
    if stats.empty:
        return pd.DataFrame(columns=[*cols, "status", "budgets"])
    stats = stats.assign(_spend=_spend_col(stats))
    fallback = default_levels(stats)
    levels = levels or {}
    recs = []
    for (d, st), sub in stats.groupby(["dataset", "setting"], sort=False):
        curves = {
            m: list(zip(g["_spend"], g["q"], g["budget"], strict=True))
            for m, g in sub.groupby("method", sort=False)
        }
        for b in sorted(sub["budget"].unique()):
            key = (d, st, float(b))
            level = levels.get(key, fallback[key])
            for m, pts in curves.items():
                a = quality_at(pts, level)
                recs.append(
                    {
                        "dataset": d,
                        "setting": st,
                        "budget": float(b),
                        "level": level,
                        "method": m,
                        "value": a.value,
                        "spend": a.spend,
                        "delta": a.spend - level,
                        "status": a.status,
                        "budgets": a.budgets,
                    }
                )
    return pd.DataFrame(recs)


# ----------------------------------------------------------------- standing
def equal_spend_standing(es: pd.DataFrame, method: str = "quorum") -> dict[str, Any]:
    """Where one QUORUM row stands against the baselines (other QUORUM rows excluded) at
    equal spend: ``cells`` (one dict per dataset/setting/budget) and ``counts``
    (``all`` and per setting).

    Standing per cell: ``best`` / ``second`` / ``behind`` among the ranked methods (at 3
    decimals, ties share), ``alone`` when no baseline can run at that spend, ``not reached``
    when ``method`` itself cannot, ``no result`` when it has no quality to read. ``gap`` =
    its quality minus the best ranked baseline's.
    """
    cells: list[dict[str, Any]] = []
    if es.empty or method not in set(es["method"]):
        return {"method": method, "cells": [], "counts": {}}
    for (d, st, b), sub in es.groupby(["dataset", "setting", "budget"], sort=False):
        sub = sub.set_index("method")
        if method not in sub.index:
            continue
        me = sub.loc[method]
        base = sub[[not is_quorum(m) for m in sub.index]]
        if base.empty:
            continue
        ranked = base[base["status"].isin(["at", "less"])]
        unreached = base[base["status"] == "above"]
        cell: dict[str, Any] = {
            "dataset": d,
            "setting": st,
            "budget": float(b),
            "level": float(me["level"]),
            "method": method,
            "value": float(me["value"]),
            "spend": float(me["spend"]),
            "status": me["status"],
            "n_ranked": len(ranked),
            "unreached": {m: float(r["delta"]) for m, r in unreached.iterrows()},
            "best_other": None,
            "best_other_value": math.nan,
            "best_other_spend": math.nan,
            "gap": math.nan,
            "rank": None,
        }
        if me["status"] == "missing":
            cell["standing"] = "no result"
        elif me["status"] == "above":
            cell["standing"] = "not reached"
        elif ranked.empty:
            cell["standing"] = "alone"
        else:
            vals = [float(me["value"]), *ranked["value"].astype(float)]
            mark = rank_marks(vals)[0]
            top = ranked["value"].astype(float).idxmax()
            q = round(float(me["value"]), 3)
            cell.update(
                standing={"best": "best", "second": "second"}.get(mark, "behind"),
                best_other=top,
                best_other_value=float(ranked.loc[top, "value"]),
                best_other_spend=float(ranked.loc[top, "spend"]),
                gap=float(me["value"]) - float(ranked.loc[top, "value"]),
                rank=1 + sum(1 for v in ranked["value"] if round(float(v), 3) > q),
            )
        cells.append(cell)
    df = pd.DataFrame(cells)
    counts: dict[str, dict[str, Any]] = {}
    if df.empty:
        return {"method": method, "cells": cells, "counts": counts}
    groups = [("all", df), *((s, df[df["setting"] == s]) for s in df["setting"].unique())]
    for key, sub in groups:
        c: dict[str, Any] = {"cells": len(sub)}
        for k in ("best", "second", "behind", "alone", "not reached", "no result"):
            part = sub[sub["standing"] == k]
            c[k] = len(part)
            if k in ("best", "second", "behind"):
                c[f"{k}_mean_gap"] = float(part["gap"].mean()) if len(part) else None
        losing = sub[sub["standing"].isin(["second", "behind"])].sort_values("gap")
        c["worst"] = losing.iloc[0].to_dict() if len(losing) else None
        c["unreached"] = int(sum(len(u) for u in sub["unreached"]))
        counts[key] = c
    return {"method": method, "cells": cells, "counts": counts}


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
