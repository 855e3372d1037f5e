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

import pandas as pd

from quorum.bench.tables import (
    is_quorum,
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
def _standing_cell(
    sub: pd.DataFrame, method: str, d: str, st: str, b: float
) -> dict[str, Any] | None:
    """``method``'s standing in one (dataset, setting, budget) cell; ``sub`` has one row per
    method, indexed by method. None when no baseline is in the cell."""
    me = sub.loc[method]
    base = sub[[not is_quorum(m) for m in sub.index]]
    if base.empty:
        return None
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
    return cell


def _standing_counts(df: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per ``all`` and per setting: the cells of each standing, mean gaps, the worst loss."""
    counts: dict[str, dict[str, Any]] = {}
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
    return counts


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
        cell = _standing_cell(sub, method, d, st, b)
        if cell is not None:
            cells.append(cell)
    df = pd.DataFrame(cells)
    counts = {} if df.empty else _standing_counts(df)
    return {"method": method, "cells": cells, "counts": counts}
