"""Figures (matplotlib, Agg): cost vs quality with the Pareto frontier, quality vs budget,
and the bandit dashboard of one QUORUM run."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from quorum.bench.main_tables import main_stats
from quorum.bench.runner import BenchRun
from quorum.bench.tables import SETTINGS, method_name, pct
from quorum.pages import pyplot as _plt
from quorum.tasks.base import TaskType
from quorum.tasks.registry import kind_of

COLORS = {
    "random": "#9e9e9e",
    "araida": "#8c564b",
    "cdi": "#1f77b4",
    "coannotating": "#2ca02c",
    "hypac": "#9467bd",
    "sant": "#ff7f0e",
    "quorum": "#d62728",
    "quorum-paper": "#e377c2",
    "quorum-paper-authors-accounting": "#bcbd22",
    # the baselines' earlier multi-model forms: lighter shades of their paper forms
    "cdi-ensemble": "#aec7e8",
    "coannotating-ensemble": "#98df8a",
    "hypac-ensemble": "#c5b0d5",
    "random-uniform": "#c7c7c7",
}
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def _grid(n: int, ncols: int = 4) -> tuple[int, int]:
    ncols = min(ncols, max(1, n))
    return math.ceil(n / ncols), ncols


def pareto_front(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the points no other point beats on both cost (lower) and quality (higher)."""
    order = np.lexsort((-y, x))
    front, best = [], -np.inf
    for i in order:
        if y[i] > best + 1e-12:
            front.append(i)
            best = y[i]
    return np.array(front, dtype=int)


def _ylabel(run: BenchRun, d: str) -> str:
    info = run.info(d) or {}
    ttype = info.get("type")
    return kind_of(ttype).metric_title if ttype in set(TaskType) else "Accuracy"


def _grid_axes(plt: Any, n: int, row_height: float) -> tuple[Any, Any, int]:
    """A figure with one panel per dataset (``n``), its axes and its number of rows."""
    nr, nc = _grid(n)
    fig, axes = plt.subplots(
        nr, nc, figsize=(max(3.3 * nc, 8), row_height * nr + 0.6), squeeze=False
    )
    return fig, axes, nr


def _setting_cells(run: BenchRun, setting: str) -> tuple[Any, pd.DataFrame, list[str]] | None:
    """The main section, one setting's cell statistics and the datasets that have any."""
    sec = run.config.section("main")
    stats = main_stats(run)
    if sec is None or stats.empty:
        return None
    st = stats[stats["setting"] == setting]
    datasets = [d for d in sec.datasets if (st["dataset"] == d).any()]
    return (sec, st, datasets) if datasets else None


def _pareto_panel(ax: Any, sub: pd.DataFrame, sec: Any) -> None:
    """One dataset's points (colour = method, marker = budget) and its Pareto frontier."""
    for m in sec.methods:
        ms = sub[sub["method"] == m]
        for j, b in enumerate(sec.budgets):
            p = ms[np.isclose(ms["budget"], b)]
            if len(p):
                ax.scatter(
                    p["cost"],
                    p["q"],
                    color=COLORS.get(m, "k"),
                    marker=MARKERS[j % len(MARKERS)],
                    s=28 if m == "quorum" else 18,
                    edgecolor="k" if m == "quorum" else "none",
                    linewidth=0.5,
                    zorder=3,
                )
    if len(sub):
        x, y = sub["cost"].to_numpy(float), sub["q"].to_numpy(float)
        f = pareto_front(x, y)
        ax.step(x[f], y[f], where="post", color="k", lw=0.9, ls="--", zorder=2)


def _pareto_legend(plt: Any, sec: Any) -> list[Any]:
    """Methods' colours, budgets' markers, the frontier's line."""
    handles = [
        plt.Line2D([], [], color=COLORS.get(m, "k"), marker="o", ls="", label=method_name(m))
        for m in sec.methods
    ]
    handles += [
        plt.Line2D(
            [],
            [],
            color="k",
            marker=MARKERS[j % len(MARKERS)],
            ls="",
            mfc="none",
            label=f"budget {pct(b)}",
        )
        for j, b in enumerate(sec.budgets)
    ]
    handles.append(plt.Line2D([], [], color="k", ls="--", label="Pareto frontier"))
    return handles


def pareto_figure(run: BenchRun, setting: str, path: Path) -> Path | None:
    got = _setting_cells(run, setting)
    if got is None:
        return None
    sec, st, datasets = got
    plt = _plt()
    fig, axes, nr = _grid_axes(plt, len(datasets), 2.7)
    for ax, d in zip(axes.flat, datasets, strict=False):
        _pareto_panel(ax, st[st["dataset"] == d].dropna(subset=["q", "cost"]), sec)
        ax.set_title(d)
        ax.set_xlabel("cost")
        ax.set_ylabel(_ylabel(run, d))
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(datasets) :]:
        ax.axis("off")
    handles = _pareto_legend(plt, sec)
    fig.legend(
        handles=handles,
        loc="lower center",
        ncol=min(len(handles), 8),
        frameon=False,
        bbox_to_anchor=(0.5, 0.0),
    )
    fig.suptitle(f"Cost vs quality, {SETTINGS[setting].lower()} setting (mean over seeds)")
    fig.tight_layout(rect=(0, 0.06 if nr > 1 else 0.12, 1, 0.97))
    fig.savefig(path, bbox_inches="tight")  # a legend wider than the axes is not cut
    plt.close(fig)
    return path


def budget_figure(run: BenchRun, setting: str, path: Path) -> Path | None:
    got = _setting_cells(run, setting)
    if got is None:
        return None
    sec, st, datasets = got
    plt = _plt()
    fig, axes, nr = _grid_axes(plt, len(datasets), 2.6)
    for ax, d in zip(axes.flat, datasets, strict=False):
        sub = st[st["dataset"] == d]
        for m in sec.methods:
            ms = sub[sub["method"] == m].sort_values("budget")
            if ms.empty:
                continue
            ax.errorbar(
                ms["budget"] * 100,
                ms["q"],
                yerr=ms["qs"],
                color=COLORS.get(m, "k"),
                marker="o",
                ms=3,
                lw=1.8 if m == "quorum" else 1.0,
                capsize=2,
                label=method_name(m),
                zorder=3 if m == "quorum" else 2,
            )
        info = run.info(d) or {}
        if info.get("llm_mean") is not None:
            ax.axhline(info["llm_mean"], color="k", lw=0.6, ls=":", label="LLM panel mean")
        ax.set_title(d)
        ax.set_xlabel("budget (%)")
        ax.set_ylabel(_ylabel(run, d))
        ax.set_xticks([b * 100 for b in sec.budgets])
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(datasets) :]:
        ax.axis("off")
    handles, labels = [], []
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 8), frameon=False)
    fig.suptitle(f"Quality vs budget, {SETTINGS[setting].lower()} setting (mean ± std)")
    fig.tight_layout(rect=(0, 0.05 if nr > 1 else 0.12, 1, 0.97))
    fig.savefig(path, bbox_inches="tight")  # a legend wider than the axes is not cut
    plt.close(fig)
    return path


def pretty_context_names(names: list[str], feature_names: list[str]) -> list[str]:
    """Context column names for plots.

    Runs carry real names (``ContextBuilder.names_``); traces cached by older versions
    carry ``phi<i>``/``m:<llm>`` placeholders, mapped here to ``feature_names``.
    """
    out = []
    for n in names:
        if n.startswith("phi") and n[3:].isdigit() and int(n[3:]) < len(feature_names):
            out.append(feature_names[int(n[3:])])
        elif n.startswith("m:"):
            out.append(f"m[{n[2:]}]")
        else:
            out.append(n)
    return out


def _short(a: str, n: int = 18) -> str:
    a = a.split("/")[-1]
    return a if len(a) <= n else a[: n - 1] + "…"


def _arm_share_panel(
    plt: Any, ax: Any, trace: pd.DataFrame, arms: list[str], label: dict[str, str], win: int
) -> None:
    """The dashboard's left panel: the arms' share of the decisions, per window of ``win``."""
    tr = trace[trace["arm"].astype(str) != "-"].sort_values("step").reset_index(drop=True)
    tr["window"] = tr.index // win
    share = pd.crosstab(tr["window"], tr["arm"], normalize="index").reindex(
        columns=arms, fill_value=0
    )
    x = (share.index.to_numpy() + 0.5) * win
    cmap = plt.get_cmap("tab10")
    ax.stackplot(
        x,
        share.T.to_numpy(),
        labels=[label[a] for a in arms],
        colors=[cmap(i % 10) for i in range(len(arms))],
        alpha=0.85,
    )
    ax.set_xlim(0, max(x[-1] + win / 2, 1) if len(x) else 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel(f"decision (windows of {win})")
    ax.set_ylabel("share of annotations")
    ax.set_title("Arm choice over time")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3, fontsize=7, frameon=False)


def _weights_panels(
    fig: Any, ax_w: Any, ax_imp: Any, info: dict[str, Any], arms: list[str], label: dict
) -> None:
    """The dashboard's centre (posterior mean weights, feature x arm) and right (importance)."""
    names = pretty_context_names(info["context_names"], info.get("feature_names", []))
    W = np.array([info["posterior_means"][a] for a in arms], dtype=float).T  # features x arms
    lim = float(np.nanmax(np.abs(W))) or 1.0
    im = ax_w.imshow(W, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
    ax_w.set_yticks(range(len(names)), names, fontsize=7)
    ax_w.set_xticks(range(len(arms)), [label[a] for a in arms], rotation=35, ha="right")
    ax_w.set_title("Posterior mean weights (feature x arm)")
    fig.colorbar(im, ax=ax_w, fraction=0.046, pad=0.04)
    imp = np.abs(W).mean(axis=1)
    order = np.argsort(imp)
    ax_imp.barh(np.array(names)[order], imp[order], color="#d62728")
    ax_imp.tick_params(axis="y", labelsize=7)
    ax_imp.set_xlabel("mean |weight| across arms")
    ax_imp.set_title("Feature importance")


def dashboard_figure(run: BenchRun, path: Path) -> Path | None:
    sec = run.config.section("dashboard")
    specs = run.plan.runs.get("dashboard", [])
    if sec is None or not specs:
        return None
    from quorum.bench.cache import Artifacts

    arts = Artifacts(run.cache_dir)
    key = specs[0].key
    if not arts.has(key):
        return None
    trace, info = arts.load(key)
    if trace.empty or not info.get("posterior_means"):
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(15, 5.2), gridspec_kw={"width_ratios": [1.2, 1.1, 0.9]})
    arms = list(info.get("arms") or info["posterior_means"])
    human = info.get("human", "gold")
    label = {a: (f"human ({a})" if a == human else _short(a)) for a in arms}
    _arm_share_panel(plt, axes[0], trace, arms, label, max(1, int(sec.window)))
    _weights_panels(fig, axes[1], axes[2], info, arms, label)
    s = specs[0]
    fig.suptitle(
        f"QUORUM bandit on {s.dataset}, {SETTINGS[s.setting].lower()} setting, budget "
        f"{pct(s.budget)}, seed {s.seed} (human arm: {info.get('human', 'gold')})"
    )
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(path)
    plt.close(fig)
    return path


def all_figures(run: BenchRun, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    sec = run.config.section("main")
    for setting in sec.settings if sec else []:
        for fn, stem in ((pareto_figure, "pareto"), (budget_figure, "budget")):
            p = fn(run, setting, folder / f"{stem}_{setting}.png")
            if p:
                out.append(p)
    p = dashboard_figure(run, folder / "dashboard.png")
    if p:
        out.append(p)
    return out
