"""The figures of a live project's report (:mod:`quorum.live.outputs.report`): matplotlib PNGs,
base64 for the self-contained page."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from quorum.live.outputs.provenance import SOURCES
from quorum.pages import png_base64, pyplot


def plain(x: Any) -> str:
    """A name as matplotlib text: ``$`` escaped, so no name is read as mathtext."""
    return str(x).replace("$", r"\$")


def money_figure(spending: pd.DataFrame, budget: float) -> str:
    """Money committed over time, stacked by annotator, with the budget dashed."""
    plt = pyplot()
    sp = spending.copy()
    sp["t"] = pd.to_datetime(sp["at"], unit="s")
    cum = (
        sp.pivot_table(index="t", columns="annotator", values="units", aggfunc="sum")
        .fillna(0)
        .cumsum()
        / 1e9
    )
    # hold the last totals a little past the last call, so the last step is drawn
    span = (cum.index[-1] - cum.index[0]) if len(cum) > 1 else pd.Timedelta(0)
    end = cum.index[-1] + max(span * 0.03, pd.Timedelta(seconds=1))
    cum = pd.concat([cum, cum.iloc[[-1]].set_axis([end])])
    fig, ax = plt.subplots(figsize=(8, 3.2))
    colors = plt.get_cmap("tab10").colors
    ax.stackplot(
        cum.index,
        *[cum[c].to_numpy() for c in cum.columns],
        labels=[plain(c) for c in cum.columns],
        step="post",
        colors=colors[: len(cum.columns)],
        alpha=0.85,
    )
    ax.axhline(budget, color="#c62828", ls="--", lw=1.2, label=f"budget ${budget:g}")
    ax.set_ylim(0, max(budget, float(cum.sum(axis=1).max())) * 1.08)
    ax.set_ylabel("money committed ($)")
    ax.set_xlabel("time (UTC)")
    ax.legend(loc="upper left", fontsize=7, ncol=min(4, len(cum.columns) + 1))
    ax.grid(alpha=0.3)
    fig.autofmt_xdate()
    return png_base64(fig)


def people_figure(rows: list[list[Any]]) -> str:
    """Each person's reliability and agreement (columns 2, 5, 6 of the people table)."""
    plt = pyplot()
    names = [plain(r[0]) for r in rows]
    series = {"reliability": 2, "agree with others": 5, "agree with the vote": 6}
    fig, ax = plt.subplots(figsize=(max(4, 1.1 * len(names) + 2), 2.6))
    x = np.arange(len(names))
    w = 0.8 / len(series)
    for k, (lab, col) in enumerate(series.items()):
        vals = [np.nan if r[col] is None else float(r[col]) for r in rows]
        ax.bar(x + (k - 1) * w, vals, w, label=lab)
    ax.set_xticks(x, names)
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return png_base64(fig)


def confusion_figure(models: list[dict[str, Any]], names: dict[str, str]) -> dict[str, str]:
    """Each model's confusion with the human vote (counts, shaded by share of the row)."""
    plt = pyplot()
    n = len(models)
    fig, axes = plt.subplots(1, n, figsize=(3.0 * n + 0.5, 2.9), squeeze=False)
    for ax, m in zip(axes.flat, models, strict=False):
        labels = list(m["confusion"])
        mat = np.array([[m["confusion"][t][p] for p in labels] for t in labels], dtype=float)
        rows = mat.sum(axis=1, keepdims=True)
        share = np.divide(mat, rows, out=np.zeros_like(mat), where=rows > 0)
        ax.imshow(share, cmap="Blues", vmin=0, vmax=1)
        for i in range(len(labels)):
            for j in range(len(labels)):
                ax.text(
                    j,
                    i,
                    f"{int(mat[i, j])}",
                    ha="center",
                    va="center",
                    color="white" if share[i, j] > 0.6 else "black",
                    fontsize=8,
                )
        ticks = [plain(names.get(x, x)) for x in labels]
        ax.set_xticks(range(len(labels)), ticks, rotation=30, ha="right")
        ax.set_yticks(range(len(labels)), ticks)
        ax.set_xlabel("model")
        ax.set_ylabel("human vote")
        ax.set_title(plain(m["annotator"]))
    fig.tight_layout()
    return {
        "name": "confusion",
        "caption": "Confusion of each model with the human vote (counts; shade: share of the row).",
        "data": png_base64(fig),
    }


def sources_figure(counts: dict[str, int]) -> str:
    """Items by the source of their label (``counts`` of :data:`SOURCES`), as bars."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 2.2))
    ax.barh(list(SOURCES)[::-1], [counts[s] for s in SOURCES][::-1], color="#1565c0")
    for i, s in enumerate(list(SOURCES)[::-1]):
        ax.text(counts[s], i, f" {counts[s]}", va="center", fontsize=7)
    ax.set_xlabel("items")
    ax.set_xlim(0, max(counts.values()) * 1.15 + 1)
    fig.tight_layout()
    return png_base64(fig)
