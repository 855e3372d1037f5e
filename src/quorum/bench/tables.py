"""Tables of the paper's kind from the bench rows: Markdown (and HTML for the report).

Marks follow the paper: per dataset and budget column, the best mean is **bold** and the
second best <u>underlined</u>; means are compared at the precision shown (3 decimals), so
tied methods share a mark.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from quorum.methods import method_trait
from quorum.pages.tables import Cell, Table  # noqa: F401  (imported from here by the bench)

NAMES = {
    "random": "Random",
    "araida": "ARAIDA",
    "cdi": "CDI",
    "coannotating": "CoAnnotating",
    "hypac": "HyPAC",
    "sant": "SANT",
    "coannotating-ensemble": "CoAnnotating (ensemble)",
    "cdi-ensemble": "CDI (ensemble)",
    "hypac-ensemble": "HyPAC (ensemble)",
    "random-uniform": "Random (uniform LLM)",
    "quorum": "QUORUM",
    "quorum-paper": "QUORUM (paper preset)",
    "quorum-paper-authors-accounting": "QUORUM (paper preset, authors' accounting)",
}
SETTINGS = {"auditor": "Auditor style", "dollars": "Dollars"}
VARIANT_NAMES = {
    "uncertainty": "LLM-uncertainty features",
    "random": "Random features",
    "ours": "Ours (QUORUM features)",
}


def method_name(m: str) -> str:
    return NAMES.get(m, m)


def is_quorum(m: str) -> bool:
    """QUORUM rows (ours and the paper preset): compared with the baselines, not each other
    (the router class's ``is_quorum``)."""
    return method_trait(m, "is_quorum")


def pct(b: float) -> str:
    return f"{round(b * 100):d}%"


# ----------------------------------------------------------------- structure
@dataclass
class TableFile:
    """One Markdown file: a title, an introduction and its tables."""

    name: str
    title: str
    intro: str = ""
    tables: list[Table] = field(default_factory=list)

    def to_markdown(self) -> str:
        parts = [f"# {self.title}", ""]
        if self.intro:
            parts += [self.intro.strip(), ""]
        parts += [t.to_markdown() for t in self.tables]
        return "\n".join(parts).rstrip() + "\n"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "intro": self.intro,
            "tables": [t.to_json() for t in self.tables],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TableFile:
        return cls(
            d["name"], d["title"], d.get("intro", ""), [Table.from_json(t) for t in d["tables"]]
        )


# ----------------------------------------------------------------- statistics
def _vals(x: Iterable[Any]) -> np.ndarray:
    a = np.array([np.nan if v is None else float(v) for v in x], dtype=float)
    return a[~np.isnan(a)]


def mean_sd(x: Iterable[Any]) -> tuple[float, float, int]:
    a = _vals(x)
    if len(a) == 0:
        return math.nan, math.nan, 0
    return float(a.mean()), float(a.std(ddof=1)) if len(a) > 1 else 0.0, len(a)


def ci95(x: Iterable[Any]) -> tuple[float, float, int]:
    """Mean and half-width of the 95% t-interval."""
    m, sd, n = mean_sd(x)
    if n < 2:
        return m, 0.0, n
    from scipy.stats import t

    return m, float(t.ppf(0.975, n - 1) * sd / math.sqrt(n)), n


def fmt_pm(m: float, s: float, digits: int = 3) -> str:
    if math.isnan(m):
        return "-"
    return f"{m:.{digits}f} ± {s:.{digits}f}"


def fmt_num(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    if abs(x) >= 0.01 or x == 0:
        return f"{x:.2f}"
    return f"{x:.2g}"


def rank_marks(values: Sequence[float], higher: bool = True, digits: int = 3) -> list[str]:
    """'best' / 'second' / '' per value, comparing the rounded values (ties share)."""
    r = [None if (v is None or math.isnan(v)) else round(v, digits) for v in values]
    uniq = sorted({v for v in r if v is not None}, reverse=higher)
    if len([v for v in r if v is not None]) < 2:
        return [""] * len(r)
    best = uniq[0]
    second = uniq[1] if len(uniq) > 1 else None
    return ["best" if v == best else "second" if v is not None and v == second else "" for v in r]


def frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    if len(df) and "status" in df:
        df = df[df["status"] == "ok"]
    return df


def metric_col(df: pd.DataFrame) -> pd.Series:
    """Accuracy, or ROUGE-1 for summaries, or the row's ``score`` (its kind's headline
    metric, e.g. span F1)."""
    acc = df["accuracy"] if "accuracy" in df else pd.Series(np.nan, index=df.index)
    if "rouge1" in df:
        acc = acc.where(acc.notna(), df["rouge1"])
    if "score" in df:
        acc = acc.where(acc.notna(), pd.to_numeric(df["score"], errors="coerce"))
    return acc.astype(float)
