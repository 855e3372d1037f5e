"""Run a project: ``annotate`` (resumable), read top to bottom.

Resume is a deterministic re-run: the router runs again with the same seed and a fresh
budget; every call it makes is first looked up in the ledger, so completed calls come back
at their recorded cost and nothing is paid twice. Calls cut off by a kill are marked
``interrupted`` and made again (see docs/live.md).

The flow: :func:`annotate` opens the run (:func:`_open_run`), routes pass after pass
(:func:`_route_until_done`: :func:`_one_pass`, then waiting for people,
:mod:`quorum.live.run.waiting`, or settling a complete pass, :mod:`quorum.live.run.settle`) and
records its summary (:mod:`quorum.live.run.summary`). ``quorum status`` and ``quorum export``
read the ledger back: :mod:`quorum.live.outputs.status`, :mod:`quorum.live.outputs.export`.
"""

from __future__ import annotations

import json
import logging
import math
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

import pandas as pd

from quorum.errors import ConfigError
from quorum.live.ledger.schema import damaged
from quorum.live.ledger.store import Ledger, money_str
from quorum.live.machines.answer_health import constant_answers, unparseable_warnings
from quorum.live.machines.calls import Redactor
from quorum.live.project.config import ProjectConfig
from quorum.live.project.items import item_views, load_items
from quorum.live.run.definition import check_definition
from quorum.live.run.fill import mark_provisional
from quorum.live.run.problem import build_arms, build_problem, build_task, make_parser
from quorum.live.run.progress import Progress
from quorum.live.run.settle import give_paid_calls, label_orphans, settle_orphans
from quorum.live.run.source import LiveSource
from quorum.live.run.summary import (
    RunSummary,
    labelled_before,
    quality_summary,
    run_summary,
)
from quorum.live.run.target import LiveTarget, checks_outlook, route_pass, send_checks_first
from quorum.live.run.waiting import n_resolved, wait_for
from quorum.routing.core.base import Router, RoutingResult
from quorum.routing.core.budget import Budget, to_units

log = logging.getLogger("quorum.live")


def make_method(name: str, params: dict[str, Any]) -> Router:
    """A router by registry name (``quorum``, ``random``, ...) or ``module:Class``
    (:func:`quorum.methods.make_router`); a bad name, or ``method_params`` the router does
    not take, is a one-line :class:`ConfigError`."""
    from quorum.methods import get_router_class, make_router

    try:
        get_router_class(name)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    try:
        return make_router(name, **params)  # checks the names (quorum.methods.check_params)
    except ValueError as exc:  # a value the router refuses, or a name it does not take
        raise ConfigError(f"method_params of method {name!r}: {exc}") from None
    except TypeError as exc:  # a router of one's own that takes **kwargs and refuses some
        if "keyword argument" not in str(exc):
            raise
        raise ConfigError(f"method_params of method {name!r}: {exc}") from None


def open_ledger(cfg: ProjectConfig) -> Ledger:
    """The project's ledger, or a one-line error when its folder cannot be written."""
    try:
        return Ledger(cfg.ledger_path, sync=cfg.ledger_sync)
    except sqlite3.DatabaseError as exc:
        if not isinstance(exc, sqlite3.OperationalError):
            raise damaged(cfg.ledger_path, exc) from None
        raise _unwritable(cfg, exc) from None
    except OSError as exc:
        raise _unwritable(cfg, exc) from None


def _unwritable(cfg: ProjectConfig, exc: BaseException) -> ConfigError:
    """The ledger's file or folder cannot be written: one line that says what to do."""
    why = getattr(exc, "strerror", None) or str(exc)
    return ConfigError(
        f"cannot write the ledger {cfg.ledger_path}: {why}; make its folder writable or "
        "set `ledger` in the project file to a writable path"
    )


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


#: how often one run routes again after handing answered tasks to the router or
#: withdrawing unneeded ones (each time the set of given tasks grows, so it ends)
MAX_SETTLE_PASSES = 8


@dataclass
class _Run:
    """One ``annotate`` run's open parts, set as they are made: ``annotate`` records the
    run's end and closes them whatever happens."""

    cfg: ProjectConfig
    ledger: Ledger
    run_id: int | None = None
    progress: Progress | None = None
    source: LiveSource | None = None
    problem: Any = None
    human: Any = None
    #: calls a stopped run cut off, found when this one started
    n_interrupted: int = 0
    #: the target mode's ladder (``[budget] target_quality``), else None
    target: LiveTarget | None = None


@dataclass
class _Tally:
    """The run's counts across its passes, and the seconds it may still wait for people."""

    wait_left: float
    passes: int = 0
    settle: int = 0  # passes routed again after settling (at most MAX_SETTLE_PASSES)
    came: int = 0  # human answers that came while the run ran or waited
    given: int = 0  # answers to tasks no pass asked for, handed to the router
    withdrawn: int = 0  # pending tasks no pass needed, withdrawn


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
    if not math.isfinite(wait) or wait < 0:
        raise ConfigError(f"--wait must be a finite number of seconds >= 0, got {wait:g}")
    items = load_items(cfg)
    views = item_views(items, cfg.task.kind.item_fields)
    make_method(cfg.method, cfg.method_params)  # a bad method stops it before any write
    ledger = open_ledger(cfg)
    ledger.acquire()
    run = _Run(cfg, ledger)
    try:
        source = _open_run(run, items, views, quiet)
        tally = _Tally(wait_left=wait)
        result = _route_until_done(run, source, tally)
        return _finish_run(run, source, result, tally)
    except BaseException as exc:
        _record_failure(run, exc)
        raise
    finally:
        if run.source is not None:
            run.source.close()
        ledger.close()


def _open_run(run: _Run, items: pd.DataFrame, views: Any, quiet: bool) -> LiveSource:
    """Start the run: count the calls a stopped run cut off, build and check the annotators,
    the task and the problem, open the run's ledger row, its progress line and its source
    (which sends again the human tasks still pending and collects their answers)."""
    cfg, ledger = run.cfg, run.ledger
    ledger.close_stale_runs()
    run.n_interrupted, amt_int = ledger.mark_interrupted()
    if run.n_interrupted:
        log.warning(
            "%d call(s) were cut off by a stopped run; counted as possibly billed "
            "(at most %s) and made again where the router still needs them",
            run.n_interrupted,
            money_str(to_units(amt_int)),
        )
    redactor = Redactor()
    arms, run.human = build_arms(cfg, items, views, redactor)
    check_humans(cfg, run.human)
    check_budget(cfg, arms)
    task = build_task(cfg, arms, run.human)
    check_definition(cfg, ledger)  # labels or prices changed since the answers: refuse
    run.problem = build_problem(cfg, task, items, cfg.ledger_path.parent / "features")
    config_json = json.dumps(cfg.model_dump(mode="json"), sort_keys=True)
    run.run_id = ledger.start_run(
        cfg.name, cfg.fingerprint(), config_json, cfg.method, cfg.seed, cfg.budget.limit
    )
    with ledger.tx() as c:
        c.execute("INSERT OR REPLACE INTO meta VALUES ('n_items', ?)", (str(len(items)),))
        c.execute("INSERT OR REPLACE INTO meta VALUES ('budget', ?)", (str(cfg.budget.limit),))
    run.target = LiveTarget.of(cfg, ledger)
    run.progress = Progress(len(items), quiet=quiet)
    run.progress.floor = labelled_before(ledger)  # a resumed run goes on from there
    run.source = source = LiveSource(
        task_type=task.type,
        items=views,
        annotators=arms,
        ledger=ledger,
        run_id=run.run_id,
        budget_limit=cfg.budget.limit,
        parser=make_parser(cfg),
        human=run.human,
        concurrency=cfg.concurrency,
        redactor=redactor,
        on_event=run.progress.update,
        gold=dict(zip(items["item_id"], items["gold"], strict=True))
        if "gold" in items.columns
        else None,
        queue_depth=_queue_depth(cfg, run.human),
        charge_interrupted=cfg.budget.charge_interrupted,
        kind=cfg.task.kind,
    )
    source.resubmit_pending()
    source.collect_answers()
    outlook = checks_outlook(cfg, run.problem, source, run.target)
    if outlook is not None:
        log.log(logging.WARNING if outlook[1] else logging.INFO, "%s", outlook[0])
    send_checks_first(cfg, run.problem, source, run.target)
    return source


def _route_until_done(run: _Run, source: LiveSource, tally: _Tally) -> RoutingResult | None:
    """Route pass after pass until a pass waits for people (and no answer comes within the
    wait) or a complete pass leaves nothing to settle; returns the last pass's result."""
    interrupted_total = run.ledger.money()["interrupted"]
    result: RoutingResult | None = None
    while True:
        tally.passes += 1
        result = _one_pass(run, source, tally.passes, interrupted_total)
        if source.waiting:
            if _answers_came(run.ledger, source, tally):
                continue  # route again with them (delayed feedback)
            return result
        if _settled(run, source, result, tally):
            if run.target is None or not run.target.looked(result, run.ledger):
                return result
            tally.settle = 0  # the target climbs a rung: route again on more money
        else:
            tally.settle += 1


def _one_pass(
    run: _Run, source: LiveSource, n_pass: int, interrupted_total: float
) -> RoutingResult:
    """One pass of the router from the start over the ledger, on a fresh budget (less the
    money of cut-off calls where ``budget.charge_interrupted``); its labels, filled
    (:func:`~quorum.live.run.fill.fill_labels`) and checked, are marked provisional where a
    person has yet to answer (:func:`mark_provisional`) and written to the ledger."""
    cfg = run.cfg
    source.begin_pass()
    budget = Budget(cfg.budget.limit, human_limit=cfg.budget.human_limit)
    if cfg.budget.charge_interrupted and interrupted_total > 0:
        budget.charge(min(interrupted_total, budget.remaining))
    source.skip_unpaid = True  # a planned call the ledger cannot pay: not made
    router = make_method(cfg.method, _with_human_quality(cfg, source))
    result = route_pass(cfg, router, run.problem, source, budget, run.target)
    result = mark_provisional(result, source)
    run.ledger.write_result(run.run_id, n_pass, result.annotations, result.labels, result.trace)
    run.progress.pass_done(result, source)
    return result


def _answers_came(ledger: Ledger, source: LiveSource, tally: _Tally) -> bool:
    """A pass waits for people: whether answers came (while it ran, else while the run
    waited at most ``tally.wait_left`` more seconds), so that it routes again."""
    source.collect_answers()  # answers that came while the pass ran
    n_res = n_resolved(ledger, source.blocking)
    if n_res:
        tally.came += n_res
        return True
    if tally.wait_left <= 0:
        return False
    t0 = time.monotonic()
    n_came, _done = wait_for(source, ledger, t0 + tally.wait_left)
    tally.wait_left -= time.monotonic() - t0
    tally.came += n_came
    return bool(n_came)


def _settled(run: _Run, source: LiveSource, result: RoutingResult, tally: _Tally) -> bool:
    """After a complete pass: tasks it did not ask for are used (answered) or freed
    (pending), paid answers it could not reuse given to the router. True when nothing
    changed (or after ``MAX_SETTLE_PASSES``): the run is done; else it routes again."""
    ledger = run.ledger
    ahead = source.queue_depth > 1
    if ahead and label_orphans(result, source, ledger):
        ledger.write_result(
            run.run_id, tally.passes, result.annotations, result.labels, result.trace
        )
    n_given, n_withdrawn = settle_orphans(source, ledger, give=not ahead)
    n_calls = give_paid_calls(source, ledger)
    tally.given += n_given
    tally.withdrawn += n_withdrawn
    if (n_given or n_withdrawn or n_calls) and tally.settle < MAX_SETTLE_PASSES:
        return False
    if source.kept_checks:
        log.info(
            "the router asked %d time(s) for a random check's item that its own money could "
            "not take over: the task stayed a check (the money kept for the checks stays "
            "theirs) and its label is the item's label",
            source.kept_checks,
        )
    if source.not_made:
        cut = ledger.money_units()["interrupted"]
        log.warning(
            "%d call(s) the router planned were not made: the ledger's money is spent%s",
            source.not_made,
            " (calls cut off by a stop count as possibly billed; set "
            "budget.charge_interrupted = true to let the router plan with that)"
            if cut > 0 and not run.cfg.budget.charge_interrupted
            else " (on answers this pass did not reuse; they were given to the router)",
        )
    return True


def _finish_run(
    run: _Run, source: LiveSource, result: RoutingResult | None, tally: _Tally
) -> RunSummary:
    """The run ended (done, or waiting for people): warn of unparseable answers, record
    its summary in the ledger and return it."""
    run.progress.stop()
    for warning in unparseable_warnings(run.ledger):
        log.warning("%s", warning)
    if run.cfg.task.kind.discrete:
        for c in constant_answers(run.ledger):
            if c.annotator not in source.uninformative:  # those were said when taken out
                log.warning("%s", c.line())
    summary = run_summary(
        run.ledger, run.run_id, tally.passes, result, source, run.n_interrupted, run.human
    )
    summary.answers_came, summary.given, summary.withdrawn = (
        tally.came,
        tally.given,
        tally.withdrawn,
    )
    if result is not None:
        summary.quality = quality_summary(result.info)
    if run.target is not None:
        summary.target = run.target.row()
    run.ledger.finish_run(run.run_id, summary.status, tally.passes, summary.as_dict())
    return summary


def _record_failure(run: _Run, exc: BaseException) -> None:
    """The run stopped on an error or a kill: stop its progress line and record its end
    (``interrupted`` or ``failed``) where its ledger row was opened."""
    if run.progress is not None:
        run.progress.stop()
    if run.run_id is not None:
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        try:
            run.ledger.finish_run(run.run_id, status, 0, {"error": f"{type(exc).__name__}: {exc}"})
        except Exception:
            log.debug("could not record the run's end", exc_info=True)


#: router parameters a live run sets where the router takes them and the project does not
#: (issue 38): the final labels' prior shrunk to uniform, not to the frequencies of the
#: few dozen human labels the router chose, and an LLM never voted against there
#: (docs/live.md, "A real team's run")
LIVE_ROUTER_DEFAULTS: dict[str, Any] = {
    "label_model_final_prior": "uniform",
    "label_model_final_floor": "chance",
}


def _with_human_quality(cfg: ProjectConfig, source: LiveSource) -> dict[str, Any]:
    """The router's parameters, with the human arm's estimated quality where the router
    takes one (``human_quality``) and the project does not set it itself, and the live
    defaults (:data:`LIVE_ROUTER_DEFAULTS`) where it takes them."""
    import inspect

    params = dict(cfg.method_params)
    takes = set(inspect.signature(type(make_method(cfg.method, params)).__init__).parameters)
    for name, value in LIVE_ROUTER_DEFAULTS.items():
        if name in takes and name not in params:
            params[name] = value
    q = source.human_quality()
    if q is None or "human_quality" in params:
        return params
    if "human_quality" in takes:
        params["human_quality"] = q
        log.debug("the human arm's quality for the router: %.2f", q)
    return params
