"""Where QUORUM stands in the main tables: best, second or behind per cell, on the Pareto
frontier or not; the ``summary`` table file and the README's sentences."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from quorum.bench.main_tables import main_stats
from quorum.bench.runner import BenchRun
from quorum.bench.tables import SETTINGS, Table, TableFile, is_quorum, method_name, pct, rank_marks


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


def quorum_standing(run: BenchRun) -> dict[str, Any]:
    """Per (dataset, setting, budget) cell of the main tables: is QUORUM best, second, behind?"""
    return standing_from_stats(main_stats(run))


def _standing_cell(stats: pd.DataFrame, d: str, st: str, b: float, sub: pd.DataFrame) -> dict:
    """QUORUM's standing in one (dataset, setting, budget) cell of ``stats``."""
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
    return {
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


def _standing_counts(df: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per ``all`` and per setting: cells, best/second/behind (with mean gaps), Pareto."""
    counts = {}
    for key, sub in [("all", df), *((s, df[df["setting"] == s]) for s in df["setting"].unique())]:
        c = {"cells": len(sub)}
        for k in ("best", "second", "behind"):
            part = sub[sub["standing"] == k]
            c[k] = len(part)
            c[f"{k}_mean_gap"] = float(part["gap"].mean()) if len(part) else None
        c["pareto"] = int(sub["pareto"].fillna(False).astype(bool).sum())
        counts[key] = c
    return counts


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
        cells.append(_standing_cell(stats, d, st, b, sub))
    if not cells:  # QUORUM alone in every cell (a bench of one method): nothing to rank
        return {"cells": [], "counts": {}}
    return {"cells": cells, "counts": _standing_counts(pd.DataFrame(cells))}


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


def _counts_table(counts: dict[str, dict[str, Any]]) -> Table:
    rows = []
    for key, x in counts.items():
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
    return Table(
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


def _not_best_rows(cells: pd.DataFrame) -> list[list[str]]:
    not_best = cells[cells["standing"] != "best"].sort_values("gap")
    return [
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


def standing_tables(run: BenchRun) -> list[TableFile]:
    """``summary``: the counts table, then the cells where QUORUM is not best."""
    st = quorum_standing(run)
    if not st["cells"]:
        return []
    t1 = _counts_table(st["counts"])
    rows2 = _not_best_rows(pd.DataFrame(st["cells"]))
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
