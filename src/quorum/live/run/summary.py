"""A run's summary: what ``annotate`` records at a run's end, and reading it back.

:class:`RunSummary` is what :func:`quorum.live.run.runner.annotate` returns and keeps in the
ledger's ``runs`` row; ``quorum status`` and the export read the last run back with
:func:`last_pass`, :func:`decisions_of` and :func:`quality_of`.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from quorum.data.writer import jsonable
from quorum.live.ledger.store import Ledger, money_str
from quorum.live.run.source import LiveSource
from quorum.routing.core.base import RoutingResult
from quorum.routing.core.budget import from_units


@dataclass
class RunSummary:
    """What one ``annotate`` run did: returned, and kept in the ledger's ``runs`` row."""

    run_id: int
    status: str  # finished | pending
    passes: int
    n_items: int
    labelled: int
    spent: float
    budget: float
    calls: dict[str, int]
    pending_humans: int
    interrupted_before: int
    dead: list[str] = field(default_factory=list)
    queue: str | None = None
    #: human tasks the last pass waits for, and how many answers came while this run waited
    waiting_for: list[str] = field(default_factory=list)
    answers_came: int = 0
    #: answers to tasks no pass asked for any more, handed to the router (this run)
    given: int = 0
    #: pending tasks no pass needed any more, withdrawn (this run)
    withdrawn: int = 0
    spent_str: str = "0"
    #: machine annotators of the project, and the router's note (e.g. why nothing was done)
    arms: list[str] = field(default_factory=list)
    note: str | None = None
    #: what the router decided and why (``DECISION_KEYS`` of its ``info``), for provenance
    decisions: dict[str, Any] = field(default_factory=dict)
    #: items the run could not label (no source could give a label), with the reason
    unlabelled: dict[str, str] = field(default_factory=dict)
    #: items labelled by a fallback (:func:`quorum.live.run.fill.fill_labels`), by its name
    filled: dict[str, int] = field(default_factory=dict)
    #: the labels' estimated quality (``[budget] quality_checks``, docs/quality.md)
    quality: dict[str, Any] | None = None
    #: the target mode's state and stop (``[budget] target_quality``, docs/quality.md)
    target: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


#: run statuses whose labels are final (a run that ended with unlabelled items is done too:
#: its unlabelled items are not final, the rest are)
DONE = ("finished", "unlabelled")

#: the router's decisions kept with each run (``RunSummary.decisions``): its strategy,
#: audit plan and the counts behind them, where the router reports them
DECISION_KEYS = (
    "dollars_strategy",
    "panel_check",
    "panel_dominated",
    "calibration_accuracy",
    "n_calibration",
    "dollars_audit_plan",
    "auditor_audit_plan",
    "audit_check",
    "llm_sample",
    "unasked_labels",
    "auditor_order",
    "label_model",
)


def router_decisions(info: dict[str, Any]) -> dict[str, Any]:
    """The ``DECISION_KEYS`` of a router's ``info``, as plain JSON values."""
    return jsonable({k: info[k] for k in DECISION_KEYS if k in info})


def run_summary(
    ledger: Ledger,
    run_id: int,
    passes: int,
    result: RoutingResult | None,
    source: LiveSource,
    n_int: int,
    human: Any,
) -> RunSummary:
    """The summary of run ``run_id`` after its last pass ``result``: the ledger's calls and
    money, the items it could not label, and whether it ended, waits or left items out."""
    calls = {
        r["status"]: int(r["n"])
        for r in ledger.query("SELECT status, count(*) AS n FROM calls GROUP BY status")
    }
    pending = len(ledger.pending_humans())
    labelled = int(result.labels["output"].notna().sum()) if result is not None else 0
    money = ledger.money_units()
    dead = [n for n, a in source.annotators.items() if not a.available]
    waiting = sorted(source.blocking.values()) if source.waiting else []
    unlabelled: dict[str, str] = {}
    filled: dict[str, int] = {}
    if result is not None and "why_unlabelled" in result.labels.columns:
        lab = result.labels
        miss = lab[lab["output"].isna()]
        unlabelled = {
            str(i): str(w or "no usable answer")
            for i, w in zip(miss["item_id"], miss["why_unlabelled"], strict=True)
        }
        filled = {str(k): int(v) for k, v in lab["labelled_by"].dropna().value_counts().items()}
    if source.waiting:
        state = "pending"
    elif unlabelled:
        state = "unlabelled"
    else:
        state = "finished"
    return RunSummary(
        run_id=run_id,
        status=state,
        passes=passes,
        n_items=len(source.items),
        labelled=labelled,
        spent=from_units(money["committed"]),
        budget=source.stats.budget,
        calls=calls,
        pending_humans=pending,
        interrupted_before=n_int,
        dead=dead,
        queue=_queue_where(human.queue) if human is not None and pending else None,
        waiting_for=waiting,
        spent_str=money_str(money["committed"]),
        arms=[n for n, a in source.annotators.items() if a.kind != "human"],
        note=None if result is None else result.info.get("note"),
        decisions={} if result is None else router_decisions(result.info),
        unlabelled=unlabelled,
        filled=filled,
    )


def decisions_of(run: sqlite3.Row | None) -> dict[str, Any]:
    """``RunSummary.decisions`` of a ledger run (empty for runs before they were kept)."""
    if run is None or not run["summary"]:
        return {}
    try:
        return dict(json.loads(run["summary"]).get("decisions") or {})
    except (ValueError, AttributeError):
        return {}


def quality_of(run: sqlite3.Row | None) -> dict[str, Any] | None:
    """``RunSummary.quality`` of a ledger run (None without checks)."""
    if run is None or not run["summary"]:
        return None
    try:
        q = json.loads(run["summary"]).get("quality")
    except (ValueError, AttributeError):
        return None
    return dict(q) if q else None


def quality_summary(info: dict[str, Any]) -> dict[str, Any] | None:
    """``RunSummary.quality`` from a router's ``info`` (None without quality checks): the
    estimate, the checks still pending, and each checked item's score."""
    if "quality" not in info:
        return None
    quality = dict(info["quality"])
    quality["pending_checks"] = int(info.get("quality_pending", 0))
    ch = info.get("quality_checks") or {}
    quality["checked"] = dict(
        zip(ch.get("item_id", []), map(float, ch.get("score", [])), strict=True)
    )
    return quality


def _queue_where(queue: Any) -> str:
    """Where the humans' work waits: the file queue's folder or the Label Studio project."""
    folder = getattr(queue, "folder", None)
    return str(folder) if folder is not None else str(getattr(queue, "project_url", queue))


def row_extra(text: str | None) -> dict[str, Any]:
    """The ``extra`` JSON of a ledger row (empty where there is none)."""
    if not text:
        return {}
    try:
        v = json.loads(text)
    except ValueError:
        return {}
    return v if isinstance(v, dict) else {}


def last_pass(ledger: Ledger) -> tuple[sqlite3.Row | None, int | None]:
    """The latest run that wrote labels and its last pass (finished or pending)."""
    rows = ledger.query(
        "SELECT r.*, max(l.pass) AS last_pass FROM runs r JOIN labels l ON l.run_id = r.run_id "
        "GROUP BY r.run_id ORDER BY r.run_id DESC LIMIT 1"
    )
    if not rows:
        return None, None
    return rows[0], int(rows[0]["last_pass"])


def labelled_before(ledger: Ledger) -> int:
    """Items the ledger's latest labels label: where the progress line of a resumed run
    starts (issue 38: it went back to "labelled 1/300")."""
    run, p = last_pass(ledger)
    if run is None:
        return 0
    row = ledger.query(
        "SELECT count(*) FROM labels WHERE run_id=? AND pass=? AND output IS NOT NULL",
        (run["run_id"], p),
    )
    return int(row[0][0])
