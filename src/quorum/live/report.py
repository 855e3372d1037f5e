"""A live project's report: one self-contained HTML page from its ledger.

``quorum report PROJECT [-o FILE]`` reads the ledger only (read-only, as ``quorum status``),
so it can be written while a run is going and after it. Every number on the page is one of
:func:`quorum.live.status.status` (the same as ``quorum status --json``) or is computed from
the same ledger rows: the money, the label sources of the export, the agreement figures
(:mod:`quorum.live.agreement`), the human tasks, the router's decisions in plain words and,
where the run has one, the estimated accuracy with its interval.

The page uses the bench report's style (:mod:`quorum.pages`); figures are matplotlib PNGs
embedded as base64, so the file can be mailed or opened offline.
"""

from __future__ import annotations

import html
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from quorum.errors import ConfigError
from quorum.live.config import ProjectConfig
from quorum.live.export import export_frame
from quorum.live.ledger import Ledger
from quorum.live.provenance import SOURCES, label_sources, source_counts
from quorum.live.status import status
from quorum.live.summary import DECISION_KEYS
from quorum.pages import png_base64, pyplot, render
from quorum.pages.tables import Table, table_html

#: the page's sections: (id, title), in order
SECTIONS = (
    ("overview", "Where the run stands"),
    ("money", "Money over time"),
    ("sources", "Labels by source"),
    ("people", "The people"),
    ("models", "Models against the human labels"),
    ("tasks", "Human tasks"),
    ("decisions", "What the router decided"),
    ("quality", "Estimated accuracy"),
)
#: issue #24's estimate keys in the status, when the run has one
QUALITY_KEYS = ("quality_estimate", "quality_low", "quality_high")


def report_data(cfg: ProjectConfig) -> dict[str, Any]:
    """Everything the page shows: the status, the export frame (None before any labels),
    the spending events and the label sources."""
    st = status(cfg)
    try:
        frame = export_frame(cfg)
    except ConfigError:
        frame = None  # no routing pass wrote labels yet
    ledger = Ledger(cfg.ledger_path, readonly=True)
    try:
        spending = ledger.frame(
            "SELECT annotator, status, CAST(round(cost * 1000000000) AS INTEGER) AS units, "
            "CASE WHEN status='pending' OR finished_at IS NULL THEN created_at "
            "ELSE finished_at END AS at FROM calls "
            "WHERE status IN ('ok','unparseable','failed','pending') ORDER BY at, call_id"
        )
    finally:
        ledger.close()
    sources = label_sources(frame, cfg.human) if frame is not None else pd.Series(dtype=str)
    return {"status": st, "frame": frame, "spending": spending, "sources": sources}


def write_report(cfg: ProjectConfig, target: str | Path | None = None) -> Path:
    """Write the project's page (default: ``<project folder>/<name>-report.html``)."""
    data = report_data(cfg)
    page = render_page(cfg, data)
    out = Path(target) if target else cfg.root / f"{cfg.name}-report.html"
    for up in out.parents:
        if up.exists() and not up.is_dir():
            raise ConfigError(f"cannot write the report to {out}: {up} is a file, not a folder")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write the report to {out}: {exc.strerror or exc}") from None
    return out


def render_page(cfg: ProjectConfig, data: dict[str, Any]) -> str:
    st = data["status"]
    sections = [
        _overview(cfg, st),
        _money(cfg, st, data["spending"]),
        _sources(data["sources"]),
        _people(st),
        _models(cfg, st),
        _tasks(st),
        _decisions(cfg, st),
        _quality(st),
    ]
    last = st.get("last_run") or {}
    meta = {
        "project": cfg.name,
        "written": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "ledger": st["ledger"],
        "method": last.get("method") or cfg.method,
        "state": _state(st),
    }
    return render("quorum.live/report.html", meta=meta, sections=sections)


def _plain(x: Any) -> str:
    """A name as matplotlib text: ``$`` escaped, so no name is read as mathtext."""
    return str(x).replace("$", r"\$")


# -- sections ---------------------------------------------------------------------------
def _section(key: str, body: list[str], figures: list[dict[str, str]] | None = None) -> dict:
    title = dict(SECTIONS)[key]
    return {"id": key, "title": title, "body": "\n".join(body), "figures": figures or []}


def _p(text: str, cls: str = "") -> str:
    c = f" class='{cls}'" if cls else ""
    return f"<p{c}>{html.escape(text)}</p>"


def _dl(pairs: list[tuple[str, str]]) -> str:
    rows = "".join(
        f"<dt>{html.escape(k)}</dt><dd data-key='{html.escape(k)}'>{html.escape(v)}</dd>"
        for k, v in pairs
    )
    return f"<dl>{rows}</dl>"


def _table(title: str, header: list[str], rows: list[list[Any]], caption: str = "") -> str:
    return table_html(Table(title, header, [[_cell(v) for v in r] for r in rows], caption))


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return ""
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def _state(st: dict[str, Any]) -> str:
    last = st.get("last_run") or {}
    if not last:
        return "no run yet"
    if last.get("status") == "running":
        return f"run #{last['run_id']} is going"
    return f"run #{last['run_id']} {last.get('status')}"


def _overview(cfg: ProjectConfig, st: dict[str, Any]) -> dict:
    last = st.get("last_run") or {}
    pairs = [
        ("Progress", st["line"] + ("" if st["labels_final"] else " (provisional)")),
        ("Items", str(st["items"])),
        ("Labelled", str(st["labelled"] or 0)),
        ("Budget", f"${st['budget']}"),
        ("Spent", f"${st['spent']}"),
        ("Left", f"${st['left']}"),
        ("Paid", f"${st['paid']}"),
        ("Held for pending humans", f"${st['held_for_humans']}"),
        ("Runs", str(st["runs"])),
    ]
    if last:
        pairs.append(
            (
                "Last run",
                f"#{last['run_id']} {last['status']}, method {last['method']}, seed {last['seed']}",
            )
        )
    if st["interrupted_calls"]:
        pairs.append(
            (
                "Interrupted calls",
                f"{st['interrupted_calls']} (possibly billed, at most "
                f"${st['interrupted_possibly_billed']})",
            )
        )
    calls = ", ".join(f"{k} {v}" for k, v in sorted(st["calls"].items())) or "none"
    pairs.append(("Calls", calls))
    return _section("overview", [_dl(pairs)])


def _money(cfg: ProjectConfig, st: dict[str, Any], spending: pd.DataFrame) -> dict:
    per = st["per_annotator"]
    budget = float(st["budget"])
    rows = []
    for r in per.to_dict("records"):
        cost = float(r["cost"])
        rows.append(
            [
                r["annotator"],
                r["calls"],
                r["ok"],
                r["unparseable"],
                r["failed"],
                r["pending"],
                f"${r['cost']}",
                f"{100 * cost / budget:.1f}%" if budget > 0 else "",
            ]
        )
    rows.append(
        [
            "all",
            int(per["calls"].sum()) if len(per) else 0,
            "",
            "",
            "",
            "",
            f"${st['spent']}",
            f"{100 * float(st['spent']) / budget:.1f}%" if budget > 0 else "",
        ]
    )
    table = _table(
        "Spending by annotator",
        ["annotator", "calls", "ok", "unparseable", "failed", "pending", "cost", "of budget"],
        rows,
        "Cost counts paid calls (ok, unparseable, failed) and the price held for pending "
        "human tasks, as `spent` in `quorum status`.",
    )
    figs = []
    if len(spending):
        figs.append(
            {
                "name": "money",
                "caption": "Money committed over time, stacked by "
                "annotator (paid calls at their end, held human prices at their start); "
                "dashed: the budget.",
                "data": _money_figure(spending, budget),
            }
        )
    body = [_p(f"Spent ${st['spent']} of ${st['budget']} (left ${st['left']})."), table]
    return _section("money", body, figs)


def _money_figure(spending: pd.DataFrame, budget: float) -> str:
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
        labels=[_plain(c) for c in cum.columns],
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


def _sources(sources: pd.Series) -> dict:
    if not len(sources):
        return _section("sources", [_p("No labels yet: no routing pass has written any.")])
    counts = source_counts(sources)
    n = len(sources)
    rows = [[s, counts[s], f"{100 * counts[s] / n:.1f}%"] for s in SOURCES]
    table = _table(
        "Items by the source of their label",
        ["source", "items", "share"],
        rows,
        "**human vote**: the label of the human task (one person or the vote of k); "
        "**agreeing LLMs**: two or more machine annotators gave it; **one LLM**: a single "
        "one did; **label model**: no annotator gave it (the router's label model chose it).",
    )
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 2.2))
    ax.barh(list(SOURCES)[::-1], [counts[s] for s in SOURCES][::-1], color="#1565c0")
    for i, s in enumerate(list(SOURCES)[::-1]):
        ax.text(counts[s], i, f" {counts[s]}", va="center", fontsize=7)
    ax.set_xlabel("items")
    ax.set_xlim(0, max(counts.values()) * 1.15 + 1)
    fig.tight_layout()
    fig_ = {
        "name": "sources",
        "caption": "Items by the source of their label.",
        "data": png_base64(fig),
    }
    return _section("sources", [table], [fig_])


def _people(st: dict[str, Any]) -> dict:
    ag = st["agreement"]["people"]
    team = {p["person"]: p for p in st.get("human_team") or []}
    persons = {p["person"]: p for p in ag["persons"]}
    names = sorted(set(team) | set(persons), key=str)
    if not names:
        return _section("people", [_p("No human label yet.")])
    rows = []
    for n in names:
        t, a = team.get(n, {}), persons.get(n, {})
        gold = f"{t['gold_correct']}/{t['gold']}" if t.get("gold") is not None else ""
        rows.append(
            [
                n,
                a.get("labels", t.get("labels")),
                t.get("accuracy"),
                t.get("checked"),
                gold,
                a.get("agree_with_others"),
                a.get("agreement_vote"),
            ]
        )
    table = _table(
        "Each person",
        [
            "person",
            "labels",
            "reliability",
            "checked",
            "gold right/of",
            "agree with others",
            "agree with the vote",
        ],
        rows,
        "**reliability**: the estimated accuracy (Dawid-Skene on checked labels, shrunk to the "
        "prior; docs/live.md); **agree with others**: the share of the other people's labels "
        "of the same items that are the same; **agree with the vote**: the share of the "
        "person's labels equal to the item's human vote.",
    )
    body = [
        _p(
            f"Krippendorff's alpha among the people: {_cell(ag['alpha']) or 'n/a'} over "
            f"{ag['items_with_2plus']} item(s) with two or more human labels "
            f"({ag['labels']} labels in all)."
        )
    ]
    q = st.get("human_quality")
    if q is not None:
        body.append(_p(f"The human arm's estimated quality (for the router): {q:.3f}."))
    body.append(table)
    if ag["pairs"]:
        body.append(
            _table(
                "Pairs of people",
                ["person", "person", "items both labelled", "agreement", "Cohen's kappa"],
                [[p["a"], p["b"], p["items"], p["agreement"], p["kappa"]] for p in ag["pairs"]],
            )
        )
    figs = []
    if rows:
        figs.append(
            {
                "name": "people",
                "caption": "Each person: reliability, agreement with the others and with the vote.",
                "data": _people_figure(rows),
            }
        )
    return _section("people", body, figs)


def _people_figure(rows: list[list[Any]]) -> str:
    plt = pyplot()
    names = [_plain(r[0]) for r in rows]
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


def _models(cfg: ProjectConfig, st: dict[str, Any]) -> dict:
    ag = st["agreement"]
    models = [m for m in ag["models"] if m["items"]]
    if not models:
        return _section("models", [_p("No item has both a human vote and a model's answer yet.")])
    names = cfg.task.label_names or {}
    body = [
        _p(
            f"{ag['human_votes']} item(s) have a human vote. Krippendorff's alpha among "
            f"everyone (people and models): {_cell(ag['everyone']['alpha']) or 'n/a'}."
        ),
        _table(
            "Each model against the human vote",
            ["model", "answers", "items with a vote", "agreement", "Cohen's kappa"],
            [
                [m["annotator"], m["answers"], m["items"], m["agreement"], m["kappa"]]
                for m in models
            ],
        ),
    ]
    for m in models:
        labels = list(m["confusion"])
        rows = []
        for t in labels:
            row = m["confusion"][t]
            pc = m["per_class"][t]
            rows.append([_label(t, names), *[row[p] for p in labels], pc["items"], pc["agreement"]])
        body.append(
            _table(
                f"{m['annotator']}: confusion with the human vote",
                ["human vote \\ model", *[_label(p, names) for p in labels], "items", "agreement"],
                rows,
                "Rows: the human vote; columns: the model's answer; **agreement**: the "
                "share of the row the model got right.",
            )
        )
    return _section("models", body, [_confusion_figure(models, names)])


def _label(x: str, names: dict[str, str]) -> str:
    return f"{x} ({names[x]})" if x in names and names[x] != x else x


def _confusion_figure(models: list[dict[str, Any]], names: dict[str, str]) -> dict[str, str]:
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
        ticks = [_plain(names.get(x, x)) for x in labels]
        ax.set_xticks(range(len(labels)), ticks, rotation=30, ha="right")
        ax.set_yticks(range(len(labels)), ticks)
        ax.set_xlabel("model")
        ax.set_ylabel("human vote")
        ax.set_title(_plain(m["annotator"]))
    fig.tight_layout()
    return {
        "name": "confusion",
        "caption": "Confusion of each model with the human vote (counts; shade: share of the row).",
        "data": png_base64(fig),
    }


def _tasks(st: dict[str, Any]) -> dict:
    tasks = st["human_tasks"]
    order = ["pending", "answered", "expired", "withdrawn"]
    keys = order + sorted(k for k in tasks if k not in order)
    body = [
        _table(
            "Human tasks by status",
            ["status", "tasks"],
            [[k, tasks.get(k, 0)] for k in keys],
            "**pending**: waiting for an answer; **answered**: labelled; **expired**: no "
            "answer within `humans.timeout`; **withdrawn**: no pass needed it any more.",
        ),
    ]
    slots = st.get("human_labels") or {}
    if slots:
        body.append(
            _table(
                "Human labels by slot status",
                ["status", "labels"],
                [[k, v] for k, v in sorted(slots.items())],
            )
        )
    if st["pending_humans"]:
        shown = st["pending_humans"][:50]
        more = len(st["pending_humans"]) - len(shown)
        body.append(
            _p(
                f"Waiting in {st['queue']}: "
                + ", ".join(map(str, shown))
                + (f" and {more} more" if more else "")
            )
        )
    return _section("tasks", body)


def decision_lines(dec: dict[str, Any], last: dict[str, Any] | None = None) -> list[str]:
    """The router's decisions (``router_decisions`` of the status) in plain words."""
    lines = []
    strat = dec.get("dollars_strategy")
    n_cal = dec.get("n_calibration")
    if strat == "bandit":
        lines.append(
            f"Strategy: the bandit routed each item between the LLMs and the humans, after "
            f"calibrating on {n_cal} item(s)."
        )
    elif strat == "audit":
        lines.append(
            "Strategy: audit. The cheapest LLM labelled the items and humans checked the "
            "ones it was likeliest to get wrong"
            + (f" (after calibrating on {n_cal} item(s))." if n_cal else ".")
        )
    pc = dec.get("panel_check")
    if isinstance(pc, str):
        lines.append(f"Panel check: {pc}.")
    if "panel_dominated" in dec:
        lines.append(
            "Panel check: the LLM panel was no better than its cheapest member for the "
            "money, so the run audited with that one."
            if dec["panel_dominated"]
            else "Panel check: the LLM panel was worth its price; the bandit went on."
        )
    acc = dec.get("calibration_accuracy")
    if isinstance(acc, dict) and acc:
        lines.append(
            "Accuracy on the calibration items: "
            + ", ".join(f"{k} {float(v):.2f}" for k, v in acc.items())
            + "."
        )
    for key, setting in (("dollars_audit_plan", "dollars"), ("auditor_audit_plan", "auditor")):
        if key in dec:
            lines.append(f"Audit plan ({setting}): {_PLANS.get(dec[key], dec[key])}.")
    chk = dec.get("audit_check")
    if isinstance(chk, dict):
        fw, nw = (chk.get("fixed_llm_first") or [0, 0])[:2]
        fu, nu = (chk.get("fixed_humans_instead") or [0, 0])[:2]
        lines.append(
            f"Audit check: on a sample of {chk.get('sample')} item(s) with "
            f"{chk.get('humans')} human label(s), humans changed {fw} of {nw} labels where the "
            f"LLM was likeliest wrong and {fu} of {nu} elsewhere; the plan taken: "
            f"{chk.get('plan')}."
        )
    ls = dec.get("llm_sample")
    if isinstance(ls, dict):
        dropped = bool(ls.get("humans_only"))
        lines.append(
            f"LLM sample: {ls.get('differ_from_commonest')} of {ls.get('answers')} answers of "
            f"the cheapest LLM differ from its commonest answer (r = {float(ls.get('r', 0)):.2f}"
            f" against {float(ls.get('humans_worth', 0)):.2f} for humans): "
            + ("the LLM was dropped, humans label instead." if dropped else "the LLM was kept.")
        )
    if "unasked_labels" in dec:
        lines.append(f"Items nobody was asked on were labelled by the {dec['unasked_labels']}.")
    if "auditor_order" in dec:
        lines.append(f"Audit order: {dec['auditor_order']}.")
    if "label_model" in dec:
        lines.append(f"Label model: {dec['label_model']}.")
    for k in sorted(set(dec) - set(DECISION_KEYS)):  # keys a newer router added
        lines.append(f"{k}: {json.dumps(dec[k], default=str)}")
    summary = _run_summary(last)
    dead = summary.get("dead") or []
    if dead:
        lines.append(f"Taken out of the run (dead endpoint): {', '.join(dead)}.")
    return lines


_PLANS = {
    "llm-first": "llm-first: humans check the items where the LLM is likeliest wrong",
    "humans-instead": "humans-instead: humans label some items in place of the LLM",
    "humans-only": "humans-only: the cheapest LLM was dropped, humans label the items",
}


def _run_summary(last: dict[str, Any] | None) -> dict[str, Any]:
    if not last or not last.get("summary"):
        return {}
    try:
        return dict(json.loads(last["summary"]))
    except (ValueError, TypeError):
        return {}


def unasked_machines(cfg: ProjectConfig, st: dict[str, Any]) -> list[str]:
    """Machine annotators of the project the ledger has no call of (never asked)."""
    per = st["per_annotator"]
    called = set(per.loc[per["calls"] > 0, "annotator"]) if len(per) else set()
    return [a.name for a in cfg.annotators if a.kind != "human" and a.name not in called]


def run_decision_lines(cfg: ProjectConfig, st: dict[str, Any]) -> list[str]:
    """:func:`decision_lines` of the status, and the machine annotators never asked."""
    lines = decision_lines(st.get("router_decisions") or {}, st.get("last_run"))
    unasked = unasked_machines(cfg, st)
    if unasked and st.get("last_run"):
        lines.append(f"Never asked (no call in the ledger): {', '.join(unasked)}.")
    return lines


def _decisions(cfg: ProjectConfig, st: dict[str, Any]) -> dict:
    last = st.get("last_run") or {}
    lines = run_decision_lines(cfg, st)
    head = f"Method {last.get('method')}, seed {last.get('seed')}." if last else "No run yet."
    if not lines:
        lines = ["The router reported no decisions (a method that keeps none, or no run yet)."]
    items = "".join(f"<li>{html.escape(x)}</li>" for x in lines)
    return _section("decisions", [_p(head), f"<ul class='decisions'>{items}</ul>"])


def _quality(st: dict[str, Any]) -> dict:
    q = st.get("quality") or st  # the status's ``quality`` object (or the keys at its top)
    est, lo, hi = (q.get(k) for k in QUALITY_KEYS)
    target = (st.get("target") or {}).get("message")
    if est is None:
        return _section(
            "quality",
            [
                _p(
                    "No estimate: this run has no estimated accuracy (no quality_estimate "
                    "in quorum status --json).",
                    "none",
                )
            ],
        )
    text = f"Estimated accuracy {float(est):.3f}"
    if lo is not None and hi is not None:
        text += f" (interval {float(lo):.3f} to {float(hi):.3f})"
    if q.get("quality_n_checks") is not None:
        text += f", from {q['quality_n_checks']} random human checks"
    body = [_p(text + ".", "estimate")]
    if target:
        body.append(_p(f"Quality target: {target}.", "target"))
    return _section("quality", body)
