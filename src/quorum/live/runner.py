"""Run a project: ``annotate`` (resumable), ``status`` and the rows ``export_frame``
(written to files by :mod:`quorum.live.export`).

Resume is a deterministic re-run: the router runs again with the same seed and a fresh
budget; every call it makes is first looked up in the ledger, so completed calls come back
at their recorded cost and nothing is paid twice. Calls cut off by a kill are marked
``interrupted`` and made again (see docs/live.md).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from quorum.data.writer import jsonable
from quorum.errors import ConfigError
from quorum.live.agreement import agreement_summary
from quorum.live.answer_health import unparseable_warnings
from quorum.live.calls import Redactor
from quorum.live.config import ProjectConfig
from quorum.live.definition import check_definition
from quorum.live.human_book import HumanBook, reliability_evidence
from quorum.live.items import item_views, load_items
from quorum.live.ledger import Ledger, money_str
from quorum.live.problem import build_arms, build_problem, build_task, make_parser
from quorum.live.source import LiveSource, LiveStats
from quorum.progress import ProgressBar
from quorum.routing.base import Outcome, Router, RoutingResult
from quorum.routing.budget import Budget, from_units, to_units
from quorum.routing.fallback import fill_unlabelled, item_space

log = logging.getLogger("quorum.live")


def make_method(name: str, params: dict[str, Any]) -> Router:
    """A router by registry name (``quorum``, ``random``, ...) or ``module:Class``
    (:func:`quorum.methods.make_router`); a bad name is a :class:`ConfigError`."""
    from quorum.methods import make_router

    try:
        return make_router(name, **params)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def progress_line(
    done: int,
    total: int,
    spent: float,
    left: float,
    provisional: int = 0,
    people_pending: int | None = None,
) -> str:
    """The one line both the progress bar and ``quorum status`` print (money exact):
    labelled items (of which ``provisional``: their human task still waits), the people's
    pending tasks, money."""
    lab = f"labelled {done}/{total}" + (f" ({provisional} provisional)" if provisional else "")
    ppl = "" if people_pending is None else f" | people: {people_pending} task(s) pending"
    return (
        f"{lab}{ppl} | spent ${money_str(to_units(spent))} | "
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


#: human tasks a pass may keep waiting at once where ``humans.queue_depth`` is unset: 1,
#: a pass stops at its first unanswered task (the behaviour the existing tests and the
#: replay-exact path assume); docs/live.md advises twice the team's size
DEFAULT_QUEUE_DEPTH = 1


def _queue_depth(cfg: ProjectConfig, human: Any) -> int:
    """``humans.queue_depth``, else :data:`DEFAULT_QUEUE_DEPTH`."""
    if human is None:
        return 1
    depth = getattr(cfg.humans, "queue_depth", None)
    return int(depth) if depth else DEFAULT_QUEUE_DEPTH


def check_humans(cfg: ProjectConfig, human: Any) -> None:
    """The human backend answers, takes the token and lets its user use the project:
    checked before the first paid call (one clear error, issue 27)."""
    check = getattr(getattr(human, "queue", None), "check", None)
    if callable(check):
        check(cfg.humans.labelstudio.token_env)


class Progress:
    """The run's progress: the one progress bar (terminal), else a log line every ``every`` s."""

    def __init__(self, total: int, quiet: bool = False, every: float = 5.0) -> None:
        self.quiet = quiet
        self.every = every
        self._last = 0.0
        self._bar: ProgressBar | None = ProgressBar(
            total, "annotate", enabled=not quiet
        ).__enter__()

    #: labelled items and provisional ones after the last pass, and the people's pending
    #: tasks: a pass replays from the start, so its own count starts at zero; the line
    #: shows the larger of the two and never goes backwards across passes (issue 27)
    floor: int = 0
    provisional: int = 0
    people: int | None = None

    def pass_done(self, result: RoutingResult | None, source: LiveSource) -> None:
        """A pass ended: its labels (provisional ones marked) and the people's queue."""
        if result is not None and len(result.labels):
            lab = result.labels
            self.floor = int(lab["output"].notna().sum())
            if "provisional" in lab.columns:
                self.provisional = int((lab["provisional"] & lab["output"].notna()).sum())
        if source.human is not None:
            self.people = len(source.ledger.pending_humans())
        self.update(None, source.stats, force=True)

    def update(self, _out: Outcome | None, s: LiveStats, force: bool = False) -> None:
        done = max(self.floor, len(s.items_ok))
        line = progress_line(done, s.n_items, s.committed, s.left, self.provisional, self.people)
        if self._bar is not None and self._bar.shown:
            self._bar.update(line, completed=done)
        elif not self.quiet and (force or time.monotonic() - self._last >= self.every):
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
    #: items the run could not label (no source could give a label), with the reason
    unlabelled: dict[str, str] = field(default_factory=dict)
    #: items labelled by a fallback (:func:`fill_labels`), by its name
    filled: dict[str, int] = field(default_factory=dict)
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
        check_humans(cfg, human)
        check_budget(cfg, arms)
        task = build_task(cfg, arms, human)
        check_definition(cfg, ledger)  # labels or prices changed since the answers: refuse
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
            queue_depth=_queue_depth(cfg, human),
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
            source.skip_unpaid = True  # a planned call the ledger cannot pay: not made
            router = make_method(cfg.method, _with_human_quality(cfg, source))
            result = _route(cfg, router, problem, source, budget)
            result = fill_labels(result, problem, source)
            ledger.write_result(run_id, passes, result.annotations, result.labels, result.trace)
            progress.pass_done(result, source)
            if source.waiting:
                source.collect_answers()  # answers that came while the pass ran
                n_res = _n_resolved(ledger, source.blocking)
                if n_res:  # route again with them (delayed feedback)
                    came += n_res
                    continue
                if wait_left <= 0:
                    break
                t0 = time.monotonic()
                n_came, _done = _wait_for(source, ledger, t0 + wait_left)
                wait_left -= time.monotonic() - t0
                came += n_came
                if not n_came:
                    break
                continue
            # a complete pass: tasks it did not ask for are used (answered) or freed (pending)
            ahead = source.queue_depth > 1
            if ahead and _label_orphans(result, source, ledger):
                ledger.write_result(run_id, passes, result.annotations, result.labels, result.trace)
            n_given, n_withdrawn = _settle_orphans(source, ledger, give=not ahead)
            n_calls = _give_paid_calls(source, ledger)
            given += n_given
            withdrawn += n_withdrawn
            if not (n_given or n_withdrawn or n_calls) or settle >= MAX_SETTLE_PASSES:
                if source.not_made:
                    log.warning(
                        "%d call(s) the router planned were not made: the ledger's money is "
                        "spent (calls cut off by a stop count as possibly billed; set "
                        "budget.charge_interrupted = true to let the router plan with that)",
                        source.not_made,
                    )
                break
            settle += 1
        progress.stop()
        for warning in unparseable_warnings(ledger):
            log.warning("%s", warning)
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


def fill_labels(result: RoutingResult, problem: Any, source: LiveSource) -> RoutingResult:
    """Every item the pass left without a label gets one where a source can give it
    (:func:`~quorum.routing.fallback.fill_unlabelled`: the label model's kNN vote of the
    human labels, else of the other items' labels), whatever the method. The labels frame
    gains ``labelled_by`` (the fallback's name, else None: the annotators' answers),
    ``why_unlabelled`` (an item still without a label) and ``provisional`` (the item's
    human task is still pending). Nothing is called or paid."""
    labels = result.labels.copy()
    if labels.empty:
        return result
    ann = result.annotations
    human = source.human.name if source.human is not None else problem.task.human
    hum: dict[str, str] = {}
    if len(ann) and human:
        ok = ann[(ann["annotator"] == human) & (ann["status"] == "ok") & ann["output"].notna()]
        hum = dict(zip(ok["item_id"].astype(str), ok["output"].astype(str), strict=True))
    pos = {str(i): j for j, i in enumerate(problem.item_ids)}
    rows = np.array([pos[str(i)] for i in labels["item_id"]], dtype=int)
    space = item_space(problem.phi, problem.embeddings)[rows]
    outs = [None if v is None or v != v else str(v) for v in labels["output"]]
    filled = fill_unlabelled(
        outs,
        [hum.get(str(i)) for i in labels["item_id"]],
        list(problem.task.labels or []),
        space,
    )
    labels["output"] = filled.labels
    labels["labelled_by"] = filled.by
    labels["why_unlabelled"] = filled.why
    waiting = set(source.ledger.pending_humans()["item_id"]) if source.human is not None else set()
    labels["provisional"] = [str(i) in waiting for i in labels["item_id"]]
    if filled.n_filled:
        log.info(
            "%d item(s) without a usable answer labelled by %s",
            filled.n_filled,
            ", ".join(sorted({b for b in filled.by if b})),
        )
    result.labels = labels
    return result


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
    if source.waiting:  # the pass waits for a person: its labels are not final yet
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


def _n_resolved(ledger: Ledger, keys: dict[str, str]) -> int:
    """How many of the tasks ``keys`` have their labels or expired."""
    return sum(_all_resolved(ledger, {k: v}) for k, v in keys.items())


def _all_resolved(ledger: Ledger, keys: dict[str, str]) -> bool:
    """Every task ``keys`` has its labels, or expired (the router plans it without)."""
    return all(
        (t := ledger.human_task(k)) is not None and t["status"] in ("answered", "expired")
        for k in keys
    )


def _wait_for(source: LiveSource, ledger: Ledger, deadline: float) -> tuple[int, bool]:
    """Sleep until one of the tasks the pass waits for is answered (or expires), or the
    deadline.

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
            log.info("human tasks waited for: %s (of %d)", _came(ledger, keys), n)
            break  # route again at once: the others are still being answered
    if answered == first:
        log.info(
            "time is up: human tasks waited for: %s (of %d); run again (or with a longer "
            "--wait) to go on",
            _came(ledger, keys),
            n,
        )
    return answered - first, answered == n


def _came(ledger: Ledger, keys: dict[str, str]) -> str:
    """How the tasks ``keys`` were resolved, in words: answered ones and expired ones."""
    st = [t["status"] if (t := ledger.human_task(k)) is not None else None for k in keys]
    got, gone = st.count("answered"), st.count("expired")
    parts = [f"{got} answered"] + ([f"{gone} withdrawn unanswered (timeout)"] if gone else [])
    return ", ".join(parts)


def _give_paid_calls(source: LiveSource, ledger: Ledger) -> int:
    """After a complete pass that planned calls the ledger could not pay (its money went to
    answers this pass did not reuse: an earlier pass's, whose path the human answers since
    changed, or an earlier configuration's): every paid machine answer is handed to the
    router as a prior outcome, its cost charged to the router's budget before it plans, so
    the next pass plans only the money that is left and still uses every paid answer.
    Returns how many were handed over (0 when the pass planned nothing it could not pay)."""
    if not source.not_made:
        return 0
    machines = [n for n, a in source.annotators.items() if a.kind != "human"]
    calls = ledger.frame(
        "SELECT call_id, item_id, annotator FROM calls WHERE kind='annotate' AND status IN "
        "('ok','unparseable') AND call_id NOT IN (SELECT call_id FROM given_calls) "
        "ORDER BY call_id"
    )
    calls = calls[calls["annotator"].isin(machines) & calls["item_id"].isin(list(source.items))]
    new = calls.drop_duplicates(["item_id", "annotator"], keep="last")["call_id"].tolist()
    if new:
        ledger.give_calls([int(c) for c in new])
        log.info(
            "the router planned %d call(s) the ledger had no money left for (it went to "
            "answers this pass did not reuse); %d paid machine answer(s) are given to the "
            "router (their cost charged to its budget before it plans); routing again",
            source.not_made,
            len(new),
        )
    return len(new)


def _orphan_answers(source: LiveSource, ledger: Ledger) -> pd.DataFrame:
    """Answered human tasks the last pass did not ask for (and not given to the router)."""
    tasks = ledger.human_tasks()
    tasks = tasks[tasks["annotator"] == source.human.name] if source.human else tasks[:0]
    asked = tasks["request_key"].isin(list(source.asked_human))
    return tasks[(tasks["status"] == "answered") & (tasks["given"] != 1) & ~asked]


def _label_orphans(result: RoutingResult | None, source: LiveSource, ledger: Ledger) -> int:
    """With tasks sent ahead (``queue_depth`` > 1): each answered task the complete pass
    did not ask for is its item's label (``labelled_by`` the human arm), instead of being
    given to the router to route again. Giving them back changes the router's plan (its
    budget and checks start from them: on llms-for-css/flute at 0.3, QUORUM's accuracy
    fell from 0.65 to 0.40, against 0.58 this way; scripts/delayed_feedback.py). Returns
    how many labels it set."""
    if result is None or source.human is None:
        return 0
    orphans = _orphan_answers(source, ledger)
    got = {str(i): y for i, y in zip(orphans["item_id"], orphans["label"], strict=True)
           if isinstance(y, str)}  # fmt: skip
    if not got:
        return 0
    lab = result.labels.copy()
    hit = lab["item_id"].astype(str).isin(list(got))
    lab.loc[hit, "output"] = lab.loc[hit, "item_id"].astype(str).map(got)
    lab.loc[hit, "human"] = True
    if "labelled_by" not in lab.columns:
        lab["labelled_by"] = None
    lab["labelled_by"] = lab["labelled_by"].astype(object)
    lab.loc[hit, "labelled_by"] = f"{source.human.name} (a task sent ahead)"
    if "why_unlabelled" in lab.columns:
        lab.loc[hit, "why_unlabelled"] = None
    result.labels = lab
    log.info(
        "%d human answer(s) to tasks sent ahead that the last pass did not ask for are their "
        "items' labels (items %s)",
        int(hit.sum()),
        _ids(sorted(got)),
    )
    return int(hit.sum())


def _settle_orphans(source: LiveSource, ledger: Ledger, give: bool = True) -> tuple[int, int]:
    """After a complete pass: answered tasks it did not ask for are given to the router
    (``give``), pending ones are withdrawn (their held money is freed). Returns the two
    counts."""
    if source.human is None:
        return 0, 0
    tasks = ledger.human_tasks()
    tasks = tasks[tasks["annotator"] == source.human.name]
    asked = tasks["request_key"].isin(list(source.asked_human))
    orphan_ans = _orphan_answers(source, ledger) if give else tasks[:0]
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
#: run statuses whose labels are final (a run that ended with unlabelled items is done too:
#: its unlabelled items are not final, the rest are)
DONE = ("finished", "unlabelled")


def _extra(text: str | None) -> dict[str, Any]:
    """The ``extra`` JSON of a ledger row (empty where there is none)."""
    if not text:
        return {}
    try:
        v = json.loads(text)
    except ValueError:
        return {}
    return v if isinstance(v, dict) else {}


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
        unlabelled: dict[str, str] = {}
        provisional = 0
        if run is not None:
            rows = ledger.query(
                "SELECT item_id, output, extra FROM labels WHERE run_id=? AND pass=?",
                (run["run_id"], p),
            )
            labelled = sum(r["output"] is not None for r in rows)
            for r in rows:
                extra = _extra(r["extra"])
                provisional += extra.get("provisional") is True and r["output"] is not None
                if r["output"] is None:
                    why = extra.get("why_unlabelled")
                    unlabelled[r["item_id"]] = why if isinstance(why, str) else "no usable answer"
        tasks = ledger.human_tasks()
        team = HumanBook(ledger).reliability_frame()
        slots = HumanBook(ledger).labels()
        warnings = unparseable_warnings(ledger)
        runs = int(ledger.query("SELECT count(*) FROM runs")[0][0])
        links = _human_links(cfg, tasks.loc[tasks["status"] == "pending", "item_id"].tolist())
        agreement = agreement_summary(ledger, cfg.task.labels)
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
        "human_evidence": reliability_evidence(
            team, cfg.humans.labels_per_item, cfg.humans.min_evidence
        ),
        "warnings": warnings,
        "quality": _quality_of(last),
        "per_annotator": per,
        "runs": runs,
        "last_run": dict(last) if last is not None else None,
        "router_decisions": _decisions_of(last),
        "agreement": agreement,
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
    done = run["status"] in DONE
    human_name = cfg.human
    waiting = set(tasks.loc[tasks["status"] == "pending", "item_id"])
    answered = {r["item_id"]: r for r in tasks[tasks["status"] == "answered"].to_dict("records")}
    cost_u = dict(zip(cost["item_id"], cost["u"], strict=True))
    given: dict[str, list[dict[str, Any]]] = {}
    for r in slots[slots["status"].isin(("answered", "late", "late-unpaid", "extra"))].to_dict(
        "records"
    ):
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
        extra = _extra(r.get("extra"))
        task = answered.get(iid)
        by = [a for a, v in answers.items() if out is not None and v == out]
        if isinstance(extra.get("labelled_by"), str):
            by = [extra["labelled_by"]]  # no usable answer: the fallback (fill_labels)
        elif out is not None and not by:
            by = [LABEL_MODEL]  # no annotator gave this label: the router's label model did
        provisional = extra.get("provisional") is True or iid in waiting
        if human_name in by and task is not None and task["answered_by"]:
            by = [f"{human_name} ({task['answered_by']})" if a == human_name else a for a in by]
        rows.append(
            {
                "item_id": iid,
                "text": items["text"].get(iid),
                "label": out,
                "label_name": names.get(out, out) if out is not None else None,
                "final": done and out is not None and not provisional,
                "why_not_final": _why_not_final(done, out, provisional, extra),
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


def _why_not_final(done: bool, out: Any, provisional: bool, extra: dict[str, Any]) -> str | None:
    """Why an exported label is not final (None where it is)."""
    if out is None:
        why = extra.get("why_unlabelled")
        return why if isinstance(why, str) else "no usable answer"
    if provisional:
        return "its human task waits for answers (provisional label)"
    if not done:
        return "the run waits for human answers (labels so far are provisional)"
    return None
