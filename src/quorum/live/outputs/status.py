"""``quorum status``: what the ledger says of a project (labels, human tasks, money, calls)."""

from __future__ import annotations

import logging
import sqlite3
from typing import Any

import pandas as pd

from quorum.errors import ConfigError
from quorum.live.humans.agreement import agreement_summary, label_agreement
from quorum.live.humans.book import HumanBook, reliability_evidence
from quorum.live.ledger.schema import float_or_none
from quorum.live.ledger.store import Ledger, money_str
from quorum.live.machines.answer_health import constant_warnings, unparseable_warnings
from quorum.live.outputs.judges import answered_pairs, judge_table
from quorum.live.project.config import ProjectConfig
from quorum.live.run.progress import progress_line
from quorum.live.run.summary import (
    DONE,
    decisions_of,
    last_pass,
    quality_of,
    row_extra,
)
from quorum.live.run.target import META_KEY as TARGET_KEY
from quorum.live.run.target import target_status
from quorum.routing.core.budget import from_units, to_units

log = logging.getLogger("quorum.live")

#: issue #24's estimate keys in the status, when the run has one
QUALITY_KEYS = ("quality_estimate", "quality_low", "quality_high")


def _human_links(cfg: ProjectConfig, item_ids: list[str]) -> dict[str, str]:
    """Label Studio links of pending human tasks (empty for the file queue or on error)."""
    if cfg.humans.backend != "labelstudio" or not item_ids:
        return {}
    from quorum.live.labelstudio.queue import LabelStudioError, LabelStudioHumanQueue

    try:
        q = LabelStudioHumanQueue.from_config(cfg)
    except ConfigError as exc:
        log.warning("no Label Studio links: %s", exc)
        return {}
    q.create = False
    try:
        return q.links(item_ids)
    except LabelStudioError as exc:
        log.warning("no Label Studio links: %s", exc)
        return {}
    finally:
        q.client.close()


def status(cfg: ProjectConfig) -> dict[str, Any]:
    """What the ledger says: labels, human tasks, money (exact decimal strings), calls."""
    ledger = Ledger(cfg.ledger_path, readonly=True)
    try:
        meta = {r["key"]: r["value"] for r in ledger.query("SELECT key, value FROM meta")}
        n_items = int(meta.get("n_items", 0))
        money = ledger.money_units()
        by_status = {
            r[0]: int(r[1])
            for r in ledger.query("SELECT status, count(*) FROM calls GROUP BY status")
        }
        per = _per_annotator(ledger)
        last = ledger.last_run()
        if last is not None and last["status"] == "running":
            last = dict(last)
            if not ledger.holder_alive(last.get("pid"), last.get("host")):
                # killed (kill -9, a crash): the next annotate records it as killed
                last["status"] = "killed"
                last["note"] = "its process is gone (killed or crashed); run annotate to resume"
        run, labelled, unlabelled, provisional = _last_labels(ledger)
        tasks = ledger.human_tasks()
        humans = _humans(cfg, ledger, tasks, meta)
        warnings = unparseable_warnings(ledger)
        if cfg.task.kind.discrete:
            warnings += constant_warnings(ledger)
        short = tasks[tasks["note"].fillna("").str.startswith("closed at the timeout")]
        if len(short):
            warnings.append(
                f"{len(short)} human task(s) closed at the timeout with fewer labels than "
                f"wanted (items {', '.join(map(str, short['item_id'].head(10)))}): their label "
                "rests on fewer people"
            )
        runs = int(ledger.query("SELECT count(*) FROM runs")[0][0])
        links = _human_links(cfg, tasks.loc[tasks["status"] == "pending", "item_id"].tolist())
        kind = cfg.task.kind
        graded = kind.people_score if kind.graded_people else None  # span lists: span F1
        agreement = agreement_summary(ledger, cfg.task.labels, graded, _measure(kind))
        if kind.label_set_outputs:  # sets of labels: the figures per label too
            agreement["per_label"] = label_agreement(ledger, kind)
        judges = judge_table(answered_pairs(ledger))  # pairwise judges asked in both orders
    finally:
        ledger.close()
    limit_u = to_units(cfg.budget.limit)
    left_u = max(0, limit_u - money["committed"])
    pending = tasks[tasks["status"] == "pending"]
    return {
        "project": cfg.name,
        "ledger": str(cfg.ledger_path),
        "line": progress_line(
            labelled or 0,
            n_items,
            from_units(money["committed"]),
            from_units(left_u),
            provisional,
            len(pending) if len(tasks) else None,
        ),
        "items": n_items,
        "labelled": labelled,
        "labels_final": bool(run is not None and run["status"] in DONE),
        "unlabelled": unlabelled,
        "provisional": provisional,
        "labels_run": None if run is None else int(run["run_id"]),
        **_money(limit_u, left_u, money),
        "calls": by_status,
        **humans,
        "warnings": warnings,
        "quality": quality_of(last),
        "target": target_status(meta.get(TARGET_KEY)),
        "per_annotator": per,
        "runs": runs,
        "last_run": dict(last) if last is not None else None,
        "router_decisions": decisions_of(last),
        "agreement": agreement,
        "pair_judges": judges,
        "pending_humans": pending["item_id"].tolist(),
        "human_links": links,
        "queue": (
            cfg.humans.labelstudio.url
            if cfg.humans.backend == "labelstudio"
            else str(cfg.queue_dir)
        ),
    }


def _per_annotator(ledger: Ledger) -> pd.DataFrame:
    """Each annotator's calls by status, their cost (exact decimal string), tokens, mean
    latency and attempts."""
    per = ledger.frame(
        "SELECT annotator, count(*) AS calls, "
        "sum(status='ok') AS ok, sum(status='unparseable') AS unparseable, "
        "sum(status='failed') AS failed, sum(status='pending') AS pending, "
        "sum(status='interrupted') AS interrupted, "
        "sum(CASE WHEN status IN ('ok','unparseable','failed','pending') THEN "
        "CAST(round(cost * 1000000000) AS INTEGER) ELSE 0 END) AS cost_units, "
        "sum(coalesce(prompt_tokens,0)) AS prompt_tokens, "
        "sum(coalesce(completion_tokens,0)) AS completion_tokens, "
        "avg(latency_s) AS mean_latency_s, sum(attempts) AS attempts "
        "FROM calls GROUP BY annotator ORDER BY annotator"
    )
    per.insert(per.columns.get_loc("cost_units"), "cost", per["cost_units"].map(money_str))
    return per.drop(columns="cost_units")


def _last_labels(
    ledger: Ledger,
) -> tuple[sqlite3.Row | None, int | None, dict[str, str], int]:
    """The latest labels: their run (None: no labels yet), how many items are labelled,
    the unlabelled ones with the reason, and how many labels are provisional."""
    run, p = last_pass(ledger)
    labelled = None
    unlabelled: dict[str, str] = {}
    provisional = 0
    if run is not None:
        rows = ledger.query(
            "SELECT item_id, output, extra FROM labels WHERE run_id=? AND pass=?",
            (run["run_id"], p),
        )
        labelled = sum(r["output"] is not None for r in rows)
        for r in rows:
            extra = row_extra(r["extra"])
            provisional += extra.get("provisional") is True and r["output"] is not None
            if r["output"] is None:
                why = extra.get("why_unlabelled")
                unlabelled[r["item_id"]] = why if isinstance(why, str) else "no usable answer"
    return run, labelled, unlabelled, provisional


def _money(limit_u: int, left_u: int, money: dict[str, int]) -> dict[str, Any]:
    """The money part of the status, exact decimal strings (units of 1e-9 dollars in)."""
    return {
        "budget": money_str(limit_u),
        "spent": money_str(money["committed"]),
        "left": money_str(left_u),
        "paid": money_str(money["paid"]),
        "held_for_humans": money_str(money["pending"]),
        "interrupted_calls": money["interrupted_calls"],
        "interrupted_possibly_billed": money_str(money["interrupted"]),
    }


def _humans(
    cfg: ProjectConfig, ledger: Ledger, tasks: pd.DataFrame, meta: dict[str, str]
) -> dict[str, Any]:
    """The people's part of the status: tasks and label slots by status, each person's
    reliability, the human arm's quality and how much the reliabilities rest on."""
    team = HumanBook(ledger).reliability_frame()
    slots = HumanBook(ledger).labels()
    return {
        "human_tasks": {k: int(v) for k, v in tasks["status"].value_counts().items()},
        "human_labels": {k: int(v) for k, v in slots["status"].value_counts().items()},
        "human_team": [
            {k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
            for r in team.to_dict("records")
        ],
        "human_quality": float_or_none(meta.get("human_quality")),
        "human_evidence": reliability_evidence(
            team, cfg.humans.labels_per_item, cfg.humans.min_evidence
        ),
    }


def _measure(kind: Any) -> str:
    """What an agreement figure measures for the task's kind (see
    :func:`~quorum.live.humans.agreement.agreement_summary`)."""
    return f"mean {kind.metric_title}" if kind.graded_people else "the same label"
