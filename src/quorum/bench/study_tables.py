"""The research-question tables besides the main one: RQ2 features, RQ3 annotations per item,
the hyper-parameter sensitivity and the noisy humans."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from quorum.bench.captions import error_note, n_seeds
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
    mean_sd,
    method_name,
    metric_col,
    pct,
    rank_marks,
)


def _study(run: BenchRun, name: str) -> tuple[Any, list[dict[str, Any]], pd.DataFrame] | None:
    """The config section ``name``, its rows and their frame with the quality column q
    (accuracy, or ROUGE-1 for summaries); None when the section is off or has no rows."""
    sec = run.config.section(name)
    if sec is None:
        return None
    rows_all = run.rows(name)
    df = frame(rows_all)
    if df.empty:
        return None
    return sec, rows_all, df.assign(q=metric_col(df))


def features_tables(run: BenchRun) -> list[TableFile]:
    study = _study(run, "features")
    if study is None:
        return []
    sec, rows_all, df = study
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
                f"{n_seeds(sec.seeds)}. **Bold**: best."
                + error_note([r for r in rows_all if r["setting"] == setting]),
            )
        )
    return [TableFile("features", "RQ2: features vs uncertainty vs random features", tables=tables)]


def annotations_tables(run: BenchRun) -> list[TableFile]:
    study = _study(run, "annotations")
    if study is None:
        return []
    sec, rows_all, df = study
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
        + error_note(rows_all)
    )
    t = Table("Annotations per item", header, rows, cap)
    return [TableFile("annotations", "RQ3: number of annotations per item", tables=[t])]


def _default(name: str) -> Any:
    from quorum.bench.config import router_defaults

    return router_defaults("quorum").get(name)


PARAM_LABELS = {
    "tau_h": "τ_H (escalation threshold)",
    "w_human": "w_H (human vote weight)",
    "epsilon0": "ε_0 (initial exploration)",
    "gamma": "γ (exploration decay)",
    "calibration_share": "Calibration share",
}


def sensitivity_tables(run: BenchRun) -> list[TableFile]:
    study = _study(run, "sensitivity")
    if study is None:
        return []
    sec, rows_all, df = study
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
        f"mean ± std over {n_seeds(sec.seeds)}. **Bold**: best value."
    )
    if sec.note:
        intro += f"\n\n{sec.note}"
    intro += error_note(rows_all)
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
        return [TableFile("noisy", title, "No successful runs." + error_note(rows_all))]
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
        f"Accuracy (mean ± std, {n_seeds(sec.seeds)}) on {sec.dataset}, "
        f"{SETTINGS[sec.setting].lower()} setting, {sec.human_labels} human labels; each recorded "
        "labeller in turn is the human arm, gold (the majority label) is used only to score. "
        "Noise = the labeller's disagreement with gold. Machine annotator: "
        f"{panel}"
        + (f" (accuracy {llm:.3f})" if llm is not None else "")
        + ". **Bold**: best."
        + error_note(rows_all)
    )
    t = Table(
        "Noisy humans", ["Labeller (noise)", *[method_name(m) for m in sec.methods]], rows, cap
    )
    return [TableFile("noisy", title, tables=[t])]
