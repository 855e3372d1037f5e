"""Run a project: ``annotate`` (resumable), ``status`` and ``export``.

Resume is a deterministic re-run: the router runs again with the same seed and a fresh
budget; every call it makes is first looked up in the ledger, so completed calls come back
at their recorded cost and nothing is paid twice. Calls cut off by a kill are marked
``interrupted`` and made again (see docs/live.md).
"""

from __future__ import annotations

import importlib
import json
import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from quorum.errors import ConfigError
from quorum.live.calls import Redactor
from quorum.live.config import ProjectConfig
from quorum.live.items import item_views, load_items
from quorum.live.ledger import Ledger
from quorum.live.problem import build_arms, build_problem, build_task, make_parser
from quorum.live.source import LiveSource, LiveStats
from quorum.routing.base import Outcome, Router, RoutingResult
from quorum.routing.budget import Budget

log = logging.getLogger("quorum.live")


def make_method(name: str, params: dict[str, Any]) -> Router:
    """A router by registry name (``quorum``, ``random``, ...) or ``module:Class``."""
    if ":" in name:
        mod, _, cls = name.partition(":")
        try:
            return getattr(importlib.import_module(mod), cls)(**params)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"method {name!r}: cannot import ({exc})") from None
    from quorum.methods import make_router

    try:
        return make_router(name, **params)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def progress_line(done: int, total: int, spent: float, left: float) -> str:
    """The one line both the progress bar and ``quorum status`` print."""
    return f"items {done}/{total} | spent ${spent:.6f} | budget left ${left:.6f}"


class Progress:
    """A rich progress bar (terminal) or periodic log lines (files, CI)."""

    def __init__(self, total: int, quiet: bool = False, every: float = 5.0) -> None:
        self.total = total
        self.quiet = quiet
        self.every = every
        self._last = 0.0
        self._bar = None
        self._task = None
        if not quiet and sys.stderr.isatty():
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(
                TextColumn("[bold]annotate"),
                BarColumn(),
                TextColumn("{task.fields[line]}"),
                TimeElapsedColumn(),
                transient=False,
            )
            self._task = self._bar.add_task("annotate", total=total, line="")
            self._bar.start()

    def update(self, _out: Outcome | None, s: LiveStats) -> None:
        line = progress_line(len(s.items_ok), s.n_items, s.committed, s.left)
        if self._bar is not None:
            self._bar.update(self._task, completed=len(s.items_ok), line=line)
        elif not self.quiet and time.monotonic() - self._last >= self.every:
            self._last = time.monotonic()
            print(line, file=sys.stderr, flush=True)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


@dataclass
class RunSummary:
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

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def annotate(
    cfg: ProjectConfig,
    *,
    wait: float = 0.0,
    quiet: bool = False,
    poll_every: float = 1.0,
) -> RunSummary:
    """Run (or resume) the project until the router is done; optionally wait for humans."""
    items = load_items(cfg)
    views = item_views(items)
    ledger = Ledger(cfg.ledger_path, sync=cfg.ledger_sync)
    ledger.acquire()
    source: LiveSource | None = None
    run_id = None
    progress = None
    try:
        ledger.close_stale_runs()
        n_int, amt_int = ledger.mark_interrupted()
        if n_int:
            log.warning(
                "%d call(s) were cut off by a stopped run; counted as possibly billed "
                "(at most %.6g) and made again where the router still needs them",
                n_int,
                amt_int,
            )
        redactor = Redactor()
        arms, human = build_arms(cfg, items, views, redactor)
        task = build_task(cfg, arms, human)
        problem = build_problem(cfg, task, items, cfg.ledger_path.parent / "features")
        config_json = json.dumps(cfg.model_dump(mode="json"), sort_keys=True)
        run_id = ledger.start_run(
            cfg.name, cfg.fingerprint(), config_json, cfg.method, cfg.seed, cfg.budget.limit
        )
        with ledger.tx() as c:
            c.execute("INSERT OR REPLACE INTO meta VALUES ('n_items', ?)", (str(len(items)),))
            c.execute("INSERT OR REPLACE INTO meta VALUES ('budget', ?)", (str(cfg.budget.limit),))
        progress = Progress(len(items), quiet=quiet)
        source = LiveSource(
            task_type=task.type,
            items=views,
            annotators=arms,
            ledger=ledger,
            run_id=run_id,
            budget_limit=cfg.budget.limit,
            parser=make_parser(cfg),
            human=human,
            concurrency=cfg.concurrency,
            redactor=redactor,
            on_event=progress.update,
        )
        source.resubmit_pending()
        source.refresh_answers()
        interrupted_total = ledger.money()["interrupted"]
        deadline = time.monotonic() + max(0.0, wait)
        passes = 0
        result: RoutingResult | None = None
        while True:
            passes += 1
            budget = Budget(cfg.budget.limit, human_limit=cfg.budget.human_limit)
            if cfg.budget.charge_interrupted and interrupted_total > 0:
                budget.charge(min(interrupted_total, budget.remaining))
            router = make_method(cfg.method, cfg.method_params)
            result = router.route(problem, source, budget, seed=cfg.seed)
            ledger.write_result(run_id, passes, result.annotations, result.labels, result.trace)
            pending = ledger.pending_humans()
            if pending.empty or time.monotonic() >= deadline:
                break
            answered = _wait_for_answers(source, len(pending), deadline, poll_every)
            if not answered and source.refresh_answers() == 0:
                break
        progress.stop()
        summary = _summary(ledger, run_id, passes, result, source, n_int, human)
        ledger.finish_run(run_id, summary.status, passes, summary.as_dict())
        return summary
    except BaseException as exc:
        if progress is not None:
            progress.stop()
        if run_id is not None:
            status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
            try:
                ledger.finish_run(run_id, status, 0, {"error": f"{type(exc).__name__}: {exc}"})
            except Exception:
                log.debug("could not record the run's end", exc_info=True)
        raise
    finally:
        if source is not None:
            source.close()
        ledger.close()


def _wait_for_answers(source: LiveSource, n_pending: int, deadline: float, every: float) -> bool:
    """Poll the human queue until every pending call is answered (True) or time is up."""
    while time.monotonic() < deadline:
        if source.refresh_answers() >= n_pending:
            return True
        time.sleep(min(every, max(0.0, deadline - time.monotonic())))
    return False


def _summary(ledger, run_id, passes, result, source, n_int, human) -> RunSummary:
    calls = {
        r["status"]: int(r["n"])
        for r in ledger.query("SELECT status, count(*) AS n FROM calls GROUP BY status")
    }
    pending = len(ledger.pending_humans())
    labelled = int(result.labels["output"].notna().sum()) if result is not None else 0
    money = ledger.money()
    dead = [n for n, a in source.annotators.items() if not a.available]
    return RunSummary(
        run_id=run_id,
        status="pending" if pending else "finished",
        passes=passes,
        n_items=len(source.items),
        labelled=labelled,
        spent=money["committed"],
        budget=source.stats.budget,
        calls=calls,
        pending_humans=pending,
        interrupted_before=n_int,
        dead=dead,
        queue=_queue_where(human.queue) if human is not None and pending else None,
    )


def _queue_where(queue: Any) -> str:
    """Where the humans' work waits: the file queue's folder or the Label Studio project."""
    folder = getattr(queue, "folder", None)
    return str(folder) if folder is not None else str(getattr(queue, "project_url", queue))


def _human_links(cfg: ProjectConfig, item_ids: list[str]) -> dict[str, str]:
    """Label Studio links of pending human tasks (empty for the file queue or on error)."""
    if cfg.humans.backend != "labelstudio" or not item_ids:
        return {}
    from quorum.live.labelstudio import LabelStudioError, LabelStudioHumanQueue

    try:
        q = LabelStudioHumanQueue.from_config(cfg, None)
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


# -- status -------------------------------------------------------------------------
def status(cfg: ProjectConfig) -> dict[str, Any]:
    """What the ledger says: progress, money, calls by status and by annotator."""
    ledger = Ledger(cfg.ledger_path, readonly=True)
    try:
        meta = {r["key"]: r["value"] for r in ledger.query("SELECT key, value FROM meta")}
        n_items = int(meta.get("n_items", 0))
        money = ledger.money()
        done = ledger.query(
            "SELECT count(DISTINCT item_id) FROM calls WHERE status='ok' AND kind='annotate'"
        )[0][0]
        by_status = {
            r[0]: int(r[1])
            for r in ledger.query("SELECT status, count(*) FROM calls GROUP BY status")
        }
        per = ledger.frame(
            "SELECT annotator, count(*) AS calls, "
            "sum(status='ok') AS ok, sum(status='unparseable') AS unparseable, "
            "sum(status='failed') AS failed, sum(status='pending') AS pending, "
            "sum(status='interrupted') AS interrupted, "
            "sum(CASE WHEN status IN ('ok','unparseable','failed','pending') THEN cost "
            "ELSE 0 END) AS cost, "
            "sum(coalesce(prompt_tokens,0)) AS prompt_tokens, "
            "sum(coalesce(completion_tokens,0)) AS completion_tokens, "
            "avg(latency_s) AS mean_latency_s, sum(attempts) AS attempts "
            "FROM calls GROUP BY annotator ORDER BY annotator"
        )
        last = ledger.last_run()
        fin = ledger.last_run(finished=True)
        labelled = None
        if fin is not None:
            labelled = ledger.query(
                "SELECT count(*) FROM labels WHERE run_id=? AND pass=? AND output IS NOT NULL",
                (fin["run_id"], fin["passes"]),
            )[0][0]
        pending = ledger.pending_humans()
        runs = int(ledger.query("SELECT count(*) FROM runs")[0][0])
        links = _human_links(cfg, pending["item_id"].tolist())
    finally:
        ledger.close()
    limit = cfg.budget.limit
    return {
        "project": cfg.name,
        "ledger": str(cfg.ledger_path),
        "line": progress_line(
            done, n_items, money["committed"], max(0.0, limit - money["committed"])
        ),
        "items": n_items,
        "items_done": int(done),
        "labelled_last_run": labelled,
        "budget": limit,
        "spent": money["committed"],
        "left": max(0.0, limit - money["committed"]),
        "paid": money["paid"],
        "held_for_humans": money["pending"],
        "interrupted_calls": money["interrupted_calls"],
        "interrupted_possibly_billed": money["interrupted"],
        "calls": by_status,
        "per_annotator": per,
        "runs": runs,
        "last_run": dict(last) if last is not None else None,
        "pending_humans": pending["item_id"].tolist(),
        "human_links": links,
        "queue": (
            cfg.humans.labelstudio.url
            if cfg.humans.backend == "labelstudio"
            else str(cfg.queue_dir)
        ),
    }


# -- export -------------------------------------------------------------------------
def export_frame(cfg: ProjectConfig) -> pd.DataFrame:
    """Final labels of the last completed run with per-item provenance from the ledger."""
    ledger = Ledger(cfg.ledger_path, readonly=True)
    try:
        fin = ledger.last_run(finished=True)
        if fin is None:
            raise ConfigError(
                f"{cfg.name}: no finished run in {cfg.ledger_path}; run `quorum annotate` first"
            )
        rid, p = fin["run_id"], fin["passes"]
        labels = ledger.frame("SELECT * FROM labels WHERE run_id=? AND pass=?", (rid, p))
        dec = ledger.frame(
            "SELECT item_id, annotator, kind, output, status, cost FROM decisions "
            "WHERE run_id=? AND pass=? AND source='call' ORDER BY step",
            (rid, p),
        )
    finally:
        ledger.close()
    names = cfg.task.label_names or {}
    rows = []
    groups = {k: g for k, g in dec.groupby("item_id", sort=False)} if len(dec) else {}
    for r in labels.to_dict("records"):
        g = groups.get(r["item_id"])
        ann = g[g["kind"] != "confidence"] if g is not None else None
        answers = {} if ann is None else dict(zip(ann["annotator"], ann["output"], strict=True))
        statuses = {} if ann is None else dict(zip(ann["annotator"], ann["status"], strict=True))
        out = r["output"]
        rows.append(
            {
                "item_id": r["item_id"],
                "label": out,
                "label_name": names.get(out, out) if out is not None else None,
                "agreement": r["agreement"],
                "n_annotations": r["n_annotations"],
                "human": bool(r["human"]),
                "annotators": list(answers),
                "answers": {k: (None if v != v else v) for k, v in answers.items()},
                "statuses": statuses,
                "cost": float(g["cost"].sum()) if g is not None else 0.0,
                "pending_human": bool(ann is not None and (ann["status"] == "pending").any()),
                "run_id": rid,
            }
        )
    return pd.DataFrame(rows)


def export(cfg: ProjectConfig, fmt: str, out: Path | None) -> Path:
    df = export_frame(cfg)
    fmt = fmt.lower()
    if fmt not in ("csv", "jsonl", "parquet"):
        raise ConfigError(f"unknown export format {fmt!r}; use csv, jsonl or parquet")
    out = out or cfg.root / f"{cfg.name}-labels.{fmt}"
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        with out.open("w", encoding="utf-8") as f:
            for rec in df.to_dict("records"):
                f.write(json.dumps(rec, default=str, ensure_ascii=False) + "\n")
        return out
    flat = df.copy()
    for col in ("annotators", "answers", "statuses"):
        flat[col] = flat[col].map(lambda v: json.dumps(v, ensure_ascii=False, default=str))
    if fmt == "csv":
        flat.to_csv(out, index=False)
    else:
        flat.to_parquet(out, index=False)
    return out
