"""A live project's report: one self-contained HTML page from its ledger.

``quorum report PROJECT [-o FILE]`` reads the ledger only (read-only, as ``quorum status``),
so it can be written while a run is going and after it. Every number on the page is one of
:func:`quorum.live.outputs.status.status` (the same as ``quorum status --json``) or is computed from
the same ledger rows: the money, the label sources of the export, the agreement figures
(:mod:`quorum.live.humans.agreement`), the human tasks, the router's decisions in plain words and,
where the run has one, the estimated accuracy with its interval.

The page uses the bench report's style (:mod:`quorum.pages`); figures are matplotlib PNGs
embedded as base64, so the file can be mailed or opened offline.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pandas as pd

from quorum.errors import ConfigError
from quorum.live.ledger.store import Ledger
from quorum.live.outputs import sections
from quorum.live.outputs.export import export_frame
from quorum.live.outputs.provenance import label_sources
from quorum.live.outputs.span_view import spans_section
from quorum.live.outputs.status import status
from quorum.live.project.config import ProjectConfig
from quorum.pages import render


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
    """The page's HTML from :func:`report_data`: its sections
    (:mod:`quorum.live.outputs.sections`) under a header naming the project, the method and
    the run's state."""
    st = data["status"]
    parts = [
        sections.overview_section(cfg, st),
        sections.money_section(cfg, st, data["spending"]),
        sections.sources_section(data["sources"]),
        *(
            [sections.labels_section(cfg, st, data["frame"])]
            if cfg.task.kind.label_set_outputs  # sets of labels: the figures per label
            else []
        ),
        sections.people_section(st),
        sections.models_section(cfg, st),
        sections.tasks_section(st),
        sections.decisions_section(cfg, st),
        sections.quality_section(st),
    ]
    kind = cfg.task.kind
    if kind.marks_text:  # a span task: a few items with their spans by source
        parts.insert(3, spans_section(data["frame"], kind, cfg.human))
    last = st.get("last_run") or {}
    meta = {
        "project": cfg.name,
        "written": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "ledger": st["ledger"],
        "method": last.get("method") or cfg.method,
        "state": _state(st),
    }
    return render("quorum.live.outputs/report.html", meta=meta, sections=parts)


def _state(st: dict[str, Any]) -> str:
    """The last run's state in words (for the page's header)."""
    last = st.get("last_run") or {}
    if not last:
        return "no run yet"
    if last.get("status") == "running":
        return f"run #{last['run_id']} is going"
    return f"run #{last['run_id']} {last.get('status')}"
