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
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from quorum.data.io import jsonable
from quorum.errors import ConfigError
from quorum.live.calls import Redactor
from quorum.live.config import ProjectConfig
from quorum.live.human_book import HumanBook
from quorum.live.items import item_views, load_items
from quorum.live.ledger import Ledger, money_str
from quorum.live.problem import build_arms, build_problem, build_task, make_parser
from quorum.live.source import LiveSource, LiveStats
from quorum.progress import ProgressBar
from quorum.routing.base import Outcome, Router, RoutingResult
from quorum.routing.budget import Budget, from_units, to_units

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
    """The one line both the progress bar and ``quorum status`` print (money exact)."""
    return (
        f"labelled {done}/{total} | spent ${money_str(to_units(spent))} | "
        f"budget left ${money_str(to_units(left))}"
    )


def open_ledger(cfg: ProjectConfig) -> Ledger:
    """The project's ledger, or a one-line error when its folder cannot be written."""
    try:
        return Ledger(cfg.ledger_path, sync=cfg.ledger_sync)
    except (OSError, sqlite3.Error) as exc:
        why = getattr(exc, "strerror", None) or str(exc)
        raise ConfigError(
            f"cannot write the ledger {cfg.ledger_path}: {why}; make its folder writable or "
            "set `ledger` in the project file to a writable path"
        ) from None


def check_budget(cfg: ProjectConfig, arms: dict[str, Any]) -> None:
    """Refuse a budget that cannot buy a single annotation (instead of a silent no-op)."""
    limit = cfg.budget.limit
    if limit <= 0:
        raise ConfigError("budget.limit is 0: nothing can be annotated; set a positive budget")
    machines = {n: a.price() for n, a in arms.items() if n != cfg.human}
    name = min(machines, key=lambda n: machines[n])
    if to_units(machines[name]) > to_units(limit):
        raise ConfigError(
            f"budget.limit {limit:g} is below the price of one call of the cheapest "
            f"annotator ({name!r}: {machines[name]:.6g}); nothing can be annotated"
        )


class Progress:
    """The run's progress: the one progress bar (terminal), else a log line every ``every`` s."""

    def __init__(self, total: int, quiet: bool = False, every: float = 5.0) -> None:
        self.quiet = quiet
        self.every = every
        self._last = 0.0
        self._bar: ProgressBar | None = ProgressBar(
            total, "annotate", enabled=not quiet
        ).__enter__()

    def update(self, _out: Outcome | None, s: LiveStats) -> None:
        line = progress_line(len(s.items_ok), s.n_items, s.committed, s.left)
        if self._bar is not None and self._bar.shown:
            self._bar.update(line, completed=len(s.items_ok))
        elif not self.quiet and time.monotonic() - self._last >= self.every:
            self._last = time.monotonic()
            print(line, file=sys.stderr, flush=True)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
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
    #: the labels' estimated quality (``[budget] quality_checks``, docs/quality.md)
    quality: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


#: how often one run routes again after handing answered tasks to the router or
#: withdrawing unneeded ones (each time the set of given tasks grows, so it ends)
MAX_SETTLE_PASSES = 8


def annotate(
    cfg: ProjectConfig,
    *,
    wait: float = 0.0,
    quiet: bool = False,
) -> RunSummary:
    """Run (or resume) the project until the router is done; optionally wait for humans.

    Each pass runs the router from the start over the ledger (see the module docstring).
    A pass that reaches a human task without its answer is frozen there; with ``wait`` the
    run sleeps until those answers arrive and routes again, spending at most ``wait``
    seconds waiting in all (routing time does not count).
    """
    if wait < 0:
        raise ConfigError(f"--wait must be >= 0 seconds, got {wait:g}")
    items = load_items(cfg)
    views = item_views(items)
    ledger = open_ledger(cfg)
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
                "(at most %s) and made again where the router still needs them",
                n_int,
                money_str(to_units(amt_int)),
            )
        redactor = Redactor()
        arms, human = build_arms(cfg, items, views, redactor)
        check_budget(cfg, arms)
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
            gold=dict(zip(items["item_id"], items["gold"], strict=True))
            if "gold" in items.columns
            else None,
        )
        source.resubmit_pending()
        source.collect_answers()
        interrupted_total = ledger.money()["interrupted"]
        wait_left = wait  # seconds this run may still spend waiting for humans
        passes = settle = came = given = withdrawn = 0
        result: RoutingResult | None = None
        while True:
            passes += 1
            source.begin_pass()
            budget = Budget(cfg.budget.limit, human_limit=cfg.budget.human_limit)
            if cfg.budget.charge_interrupted and interrupted_total > 0:
                budget.charge(min(interrupted_total, budget.remaining))
            router = make_method(cfg.method, _with_human_quality(cfg, source))
            result = _route(cfg, router, problem, source, budget)
            ledger.write_result(run_id, passes, result.annotations, result.labels, result.trace)
            if source.frozen:
                source.collect_answers()  # answers that came while the pass ran
                if _all_resolved(ledger, source.blocking):
                    came += len(source.blocking)
                    continue
                if wait_left <= 0:
                    break
                t0 = time.monotonic()
                n_came, done = _wait_for(source, ledger, t0 + wait_left)
                wait_left -= time.monotonic() - t0
                came += n_came
                if not done:
                    break
                continue
            # a complete pass: tasks it did not ask for are used (answered) or freed (pending)
            n_given, n_withdrawn = _settle_orphans(source, ledger)
            given += n_given
            withdrawn += n_withdrawn
            if not (n_given or n_withdrawn) or settle >= MAX_SETTLE_PASSES:
                break
            settle += 1
        progress.stop()
        summary = _summary(ledger, run_id, passes, result, source, n_int, human)
        summary.answers_came, summary.given, summary.withdrawn = came, given, withdrawn
        if result is not None and "quality" in result.info:
            summary.quality = dict(result.info["quality"])
            summary.quality["pending_checks"] = int(result.info.get("quality_pending", 0))
            ch = result.info.get("quality_checks") or {}
            summary.quality["checked"] = dict(
                zip(ch.get("item_id", []), map(float, ch.get("score", [])), strict=True)
            )
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


def _route(cfg: ProjectConfig, router: Any, problem: Any, source: LiveSource, budget: Budget):
    """One pass of the router; with ``[budget] quality_checks``, on the budget less the
    checks' money, and the random checks asked once the pass is complete (docs/quality.md).
    """
    if cfg.budget.quality_checks is None:
        return router.route(problem, source, budget, seed=cfg.seed)
    from quorum.quality.checks import QualityChecks

    checks = QualityChecks(share=cfg.budget.quality_checks, confidence=cfg.budget.confidence)
    inner_problem, inner, n = checks.split(problem, budget, source)
    result = router.route(inner_problem, source, inner, seed=cfg.seed)
    if source.frozen:  # the pass waits for a person: its labels are not final yet
        return result
    return checks.check(result, problem, source, budget, n, seed=cfg.seed)[0]


def _with_human_quality(cfg: ProjectConfig, source: LiveSource) -> dict[str, Any]:
    """The router's parameters, with the human arm's estimated quality where the router
    takes one (``human_quality``) and the project does not set it itself."""
    params = dict(cfg.method_params)
    q = source.human_quality()
    if q is None or "human_quality" in params:
        return params
    import inspect

    router = make_method(cfg.method, params)
    if "human_quality" in inspect.signature(type(router).__init__).parameters:
        params["human_quality"] = q
        log.debug("the human arm's quality for the router: %.2f", q)
    return params


def _all_resolved(ledger: Ledger, keys: dict[str, str]) -> bool:
    """Every task ``keys`` has its labels, or expired (the router plans it without)."""
    return all(
        (t := ledger.human_task(k)) is not None and t["status"] in ("answered", "expired")
        for k in keys
    )


def _wait_for(source: LiveSource, ledger: Ledger, deadline: float) -> tuple[int, bool]:
    """Sleep until every task the frozen pass waits for is answered, or the deadline.

    Returns (answers that came while waiting, whether all of them are in). Nothing is
    routed or written while it sleeps: the queue is looked at, the ledger only changes
    when an answer arrives.
    """
    keys = source.blocking
    n = len(keys)
    answered = sum(_all_resolved(ledger, {k: v}) for k, v in keys.items())
    if answered == n:
        return 0, True
    left = deadline - time.monotonic()
    assert source.human is not None
    where = source.human.queue
    folder = getattr(where, "folder", None)
    log.info(
        "waiting up to %.0f s for %d human answer(s)%s: items %s",
        left,
        n - answered,
        f" in {folder}/answers.csv" if folder is not None else "",
        _ids([v for k, v in keys.items() if not _all_resolved(ledger, {k: v})]),
    )
    first = answered
    while answered < n:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        due = source.next_expiry()
        if not where.wait(left if due is None else min(left, due + 0.05)) and (
            due is None or due > left
        ):
            continue
        source.collect_answers()
        now = sum(_all_resolved(ledger, {k: v}) for k, v in keys.items())
        if now > answered:
            answered = now
            log.info("%d of %d human answer(s) came", answered - first, n - first)
    if answered < n:
        log.info(
            "time is up: %d of %d human answer(s) came; run again (or with a longer --wait) "
            "to go on",
            answered - first,
            n - first,
        )
    return answered - first, answered == n


def _settle_orphans(source: LiveSource, ledger: Ledger) -> tuple[int, int]:
    """After a complete pass: answered tasks it did not ask for are given to the router,
    pending ones are withdrawn (their held money is freed). Returns the two counts."""
    if source.human is None:
        return 0, 0
    tasks = ledger.human_tasks()
    tasks = tasks[tasks["annotator"] == source.human.name]
    asked = tasks["request_key"].isin(list(source.asked_human))
    orphan_ans = tasks[(tasks["status"] == "answered") & (tasks["given"] != 1) & ~asked]
    orphan_pend = tasks[(tasks["status"] == "pending") & ~asked]
    if len(orphan_ans):
        ledger.mark_given(orphan_ans["request_key"].tolist())
        log.info(
            "%d human answer(s) to tasks this pass no longer asked for (items %s) are given "
            "to the router as labels; routing again",
            len(orphan_ans),
            _ids(orphan_ans["item_id"].tolist()),
        )
    if len(orphan_pend):
        source.withdraw_tasks(
            dict(zip(orphan_pend["request_key"], orphan_pend["item_id"], strict=True))
        )
        log.info(
            "%d pending human task(s) are no longer needed (items %s): withdrawn, their held "
            "money freed",
            len(orphan_pend),
            _ids(orphan_pend["item_id"].tolist()),
        )
    return len(orphan_ans), len(orphan_pend)


#: the router's decisions kept with each run (``RunSummary.decisions``): its strategy,
#: audit plan and the counts behind them, where the router reports them
#: ``labelled_by`` of a label no annotator gave (the router's label model, or for an item
#: nobody was asked on, the cheapest LLM's commonest answer; docs/router.md)
LABEL_MODEL = "label model"

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


def _decisions_of(run: sqlite3.Row | None) -> dict[str, Any]:
    """``RunSummary.decisions`` of a ledger run (empty for runs before they were kept)."""
    if run is None or not run["summary"]:
        return {}
    try:
        return dict(json.loads(run["summary"]).get("decisions") or {})
    except (ValueError, AttributeError):
        return {}


def _quality_of(run: sqlite3.Row | None) -> dict[str, Any] | None:
    """``RunSummary.quality`` of a ledger run (None without checks)."""
    if run is None or not run["summary"]:
        return None
    try:
        q = json.loads(run["summary"]).get("quality")
    except (ValueError, AttributeError):
        return None
    return dict(q) if q else None


def _float(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if v != v else v


def _ids(ids: list[str], most: int = 10) -> str:
    shown = ", ".join(map(str, ids[:most]))
    return shown + (f" and {len(ids) - most} more" if len(ids) > most else "")


def _summary(ledger, run_id, passes, result, source, n_int, human) -> RunSummary:
    calls = {
        r["status"]: int(r["n"])
        for r in ledger.query("SELECT status, count(*) AS n FROM calls GROUP BY status")
    }
    pending = len(ledger.pending_humans())
    labelled = int(result.labels["output"].notna().sum()) if result is not None else 0
    money = ledger.money_units()
    dead = [n for n, a in source.annotators.items() if not a.available]
    waiting = sorted(source.blocking.values()) if source.frozen else []
    return RunSummary(
        run_id=run_id,
        status="pending" if source.frozen else "finished",
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


# -- status -------------------------------------------------------------------------
def _last_pass(ledger: Ledger) -> tuple[sqlite3.Row | None, int | None]:
    """The latest run that wrote labels and its last pass (finished or pending)."""
    rows = ledger.query(
        "SELECT r.*, max(l.pass) AS last_pass FROM runs r JOIN labels l ON l.run_id = r.run_id "
        "GROUP BY r.run_id ORDER BY r.run_id DESC LIMIT 1"
    )
    if not rows:
        return None, None
    return rows[0], int(rows[0]["last_pass"])


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
        per = per.drop(columns="cost_units")
        last = ledger.last_run()
        run, p = _last_pass(ledger)
        labelled = None
        if run is not None:
            labelled = int(
                ledger.query(
                    "SELECT count(*) FROM labels WHERE run_id=? AND pass=? AND output IS NOT NULL",
                    (run["run_id"], p),
                )[0][0]
            )
        tasks = ledger.human_tasks()
        team = HumanBook(ledger).reliability_frame()
        slots = HumanBook(ledger).labels()
        runs = int(ledger.query("SELECT count(*) FROM runs")[0][0])
        links = _human_links(cfg, tasks.loc[tasks["status"] == "pending", "item_id"].tolist())
    finally:
        ledger.close()
    limit_u = to_units(cfg.budget.limit)
    left_u = max(0, limit_u - money["committed"])
    pending = tasks[tasks["status"] == "pending"]
    return {
        "project": cfg.name,
        "ledger": str(cfg.ledger_path),
        "line": progress_line(
            labelled or 0, n_items, from_units(money["committed"]), from_units(left_u)
        ),
        "items": n_items,
        "labelled": labelled,
        "labels_final": bool(run is not None and run["status"] == "finished"),
        "labels_run": None if run is None else int(run["run_id"]),
        "budget": money_str(limit_u),
        "spent": money_str(money["committed"]),
        "left": money_str(left_u),
        "paid": money_str(money["paid"]),
        "held_for_humans": money_str(money["pending"]),
        "interrupted_calls": money["interrupted_calls"],
        "interrupted_possibly_billed": money_str(money["interrupted"]),
        "calls": by_status,
        "human_tasks": {k: int(v) for k, v in tasks["status"].value_counts().items()},
        "human_labels": {k: int(v) for k, v in slots["status"].value_counts().items()},
        "human_team": [
            {k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
            for r in team.to_dict("records")
        ],
        "human_quality": _float(meta.get("human_quality")),
        "quality": _quality_of(last),
        "per_annotator": per,
        "runs": runs,
        "last_run": dict(last) if last is not None else None,
        "router_decisions": _decisions_of(last),
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
    """Labels of the last routing pass, one row per item, with provenance from the ledger.

    ``final`` is False while the run waits for human answers (the labels are then those
    of a pass frozen at the first missing answer). ``pending_human`` says whether the item
    has a human task waiting, ``human_by`` who answered it, ``labelled_by`` the annotators
    whose answer is the label; ``quality_check``, for an item of the random quality checks
    (docs/quality.md), the score its machine label had against the human's (1.0: right).
    """
    items = load_items(cfg).set_index("item_id")
    ledger = Ledger(cfg.ledger_path, readonly=True)
    try:
        run, p = _last_pass(ledger)
        if run is None:
            raise ConfigError(
                f"{cfg.name}: no labels in {cfg.ledger_path} yet; run `quorum annotate` first"
            )
        rid = run["run_id"]
        labels = ledger.frame("SELECT * FROM labels WHERE run_id=? AND pass=?", (rid, p))
        dec = ledger.frame(
            "SELECT item_id, annotator, kind, output, status, cost FROM decisions "
            "WHERE run_id=? AND pass=? AND source='call' ORDER BY step",
            (rid, p),
        )
        tasks = ledger.human_tasks()
        slots = HumanBook(ledger).labels()
        cost = ledger.frame(
            "SELECT item_id, sum(CAST(round(cost * 1000000000) AS INTEGER)) AS u FROM calls "
            "WHERE status IN ('ok','unparseable','failed','pending') GROUP BY item_id"
        )
    finally:
        ledger.close()
    names = cfg.task.label_names or {}
    checked = (_quality_of(run) or {}).get("checked") or {}  # item -> its label's score
    final = run["status"] == "finished"
    human_name = cfg.human
    waiting = set(tasks.loc[tasks["status"] == "pending", "item_id"])
    answered = {r["item_id"]: r for r in tasks[tasks["status"] == "answered"].to_dict("records")}
    cost_u = dict(zip(cost["item_id"], cost["u"], strict=True))
    given: dict[str, list[dict[str, Any]]] = {}
    for r in slots[slots["status"].isin(("answered", "late", "late-unpaid"))].to_dict("records"):
        given.setdefault(r["item_id"], []).append(
            {"by": r["person"], "label": r["label"], "status": r["status"]}
        )
    groups = {k: g for k, g in dec.groupby("item_id", sort=False)} if len(dec) else {}
    rows = []
    for r in labels.to_dict("records"):
        iid = r["item_id"]
        g = groups.get(iid)
        ann = g[g["kind"] != "confidence"] if g is not None else None
        answers = {} if ann is None else dict(zip(ann["annotator"], ann["output"], strict=True))
        answers = {k: (None if v != v else v) for k, v in answers.items()}
        statuses = {} if ann is None else dict(zip(ann["annotator"], ann["status"], strict=True))
        out = r["output"]
        task = answered.get(iid)
        by = [a for a, v in answers.items() if out is not None and v == out]
        if out is not None and not by:
            by = [LABEL_MODEL]  # no annotator gave this label: the router's label model did
        if human_name in by and task is not None and task["answered_by"]:
            by = [f"{human_name} ({task['answered_by']})" if a == human_name else a for a in by]
        rows.append(
            {
                "item_id": iid,
                "text": items["text"].get(iid),
                "label": out,
                "label_name": names.get(out, out) if out is not None else None,
                "final": final,
                "agreement": r["agreement"],
                "n_annotations": r["n_annotations"],
                "human": bool(r["human"]),
                "human_by": task["answered_by"] if task is not None and r["human"] else None,
                "labelled_by": by,
                "annotators": list(answers),
                "answers": answers,
                "statuses": statuses,
                "cost": from_units(int(cost_u.get(iid, 0) or 0)),
                "human_labels": given.get(iid, []) if r["human"] else [],
                "human_confidence": _float(task["confidence"]) if task is not None else None,
                "pending_human": iid in waiting,
                "quality_check": checked.get(iid),
                "run_id": rid,
            }
        )
    return pd.DataFrame(rows)


def export(cfg: ProjectConfig, fmt: str, out: Path | None) -> Path:
    fmt = fmt.lower()
    if fmt not in ("csv", "jsonl", "parquet"):
        raise ConfigError(f"unknown export format {fmt!r}; use csv, jsonl or parquet")
    df = export_frame(cfg)
    out = out or cfg.root / f"{cfg.name}-labels.{fmt}"
    for up in out.parents:
        if up.exists() and not up.is_dir():
            raise ConfigError(f"cannot write the export to {out}: {up} is a file, not a folder")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "jsonl":
            with out.open("w", encoding="utf-8") as f:
                for rec in df.to_dict("records"):
                    f.write(json.dumps(rec, default=str, ensure_ascii=False) + "\n")
            return out
        flat = df.copy()
        for col in ("labelled_by", "annotators", "answers", "statuses", "human_labels"):
            flat[col] = flat[col].map(lambda v: json.dumps(v, ensure_ascii=False, default=str))
        if fmt == "csv":
            flat.to_csv(out, index=False)
        else:
            flat.to_parquet(out, index=False)
    except OSError as exc:
        raise ConfigError(f"cannot write the export to {out}: {exc.strerror or exc}") from None
    return out
