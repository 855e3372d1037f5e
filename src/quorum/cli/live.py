"""`quorum annotate`, `quorum status` and `quorum export` for live projects."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from quorum.errors import QuorumError

if TYPE_CHECKING:
    from quorum.live.run.summary import RunSummary


def _setup_logging(quiet: bool) -> None:
    """Log lines to stderr: rich on a terminal, plain unwrapped lines otherwise.

    A handler someone else put on the ``quorum.live`` logger is left as the only one. The
    handler a previous command of this process added is replaced by one on the current
    ``sys.stderr``: the command may run again in one process (a notebook, typer's
    ``CliRunner``), and the stream the old one wrote to may be closed by then."""
    import sys

    logger = logging.getLogger("quorum.live")
    for old in [h for h in logger.handlers if getattr(h, "_quorum_cli", False)]:
        logger.removeHandler(old)
    if not logger.handlers:
        h: logging.Handler
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.logging import RichHandler

            h = RichHandler(
                console=Console(stderr=True), show_time=False, show_path=False, markup=False
            )
            h.setFormatter(logging.Formatter("%(message)s"))
        else:
            h = logging.StreamHandler(sys.stderr)
            h.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
        h._quorum_cli = True  # type: ignore[attr-defined]
        logger.addHandler(h)
    logger.setLevel(logging.ERROR if quiet else logging.INFO)
    logger.propagate = False


#: exit status of `quorum annotate` when the run ended with items no source could label
UNLABELLED_EXIT = 3


def _fail(exc: Exception) -> None:
    """Print ``exc`` as one red ``error:`` line and exit with status 2."""
    if isinstance(exc, OSError) and not isinstance(exc, QuorumError):
        where = exc.filename or "a file"
        exc = QuorumError(
            f"cannot write {where}: {exc.strerror or exc} (the project folder must be "
            "writable, or set `ledger` and `human_queue` to writable paths)"
        )
    typer.secho(f"error: {exc}", fg="red", err=True)
    raise typer.Exit(2)


def register(app: typer.Typer) -> None:
    """Add the live commands to ``app``: ``annotate``, ``plan``, ``status``, ``export`` and
    the ``labelstudio`` group (each command is a function of this module)."""
    app.command("annotate")(annotate_cmd)
    app.command("plan")(plan_cmd)
    app.command("status")(status_cmd)
    app.command("export")(export_cmd)
    ls_app = typer.Typer(
        name="labelstudio",
        help="Label Studio for the human arm: set up the people who label.",
        no_args_is_help=True,
    )
    app.add_typer(ls_app, name="labelstudio")
    ls_app.command("users")(ls_users_cmd)


def annotate_cmd(
    project: Path = typer.Argument(..., help="project file (.toml or .yaml)"),
    wait: float = typer.Option(
        0.0, "--wait", help="at most this many seconds (in all) of waiting for human answers"
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress output"),
    engine: str | None = typer.Option(
        None,
        "--engine",
        help="local or ray: where LLM calls and features run (overrides the project's engine)",
    ),
) -> None:
    """Label a project's items under its budget (resumes where a previous run stopped)."""
    from quorum.live.project.config import load_project
    from quorum.live.run.runner import annotate

    _setup_logging(quiet)
    if not math.isfinite(wait) or wait < 0:
        _fail(QuorumError(f"--wait must be a finite number of seconds, 0 or more; got {wait:g}"))
    try:
        cfg = load_project(project)
        if engine is not None:
            from quorum.engine import resolve_engine

            cfg = cfg.model_copy(update={"engine": resolve_engine(engine)})
        s = annotate(cfg, wait=wait, quiet=quiet)
    except (QuorumError, OSError) as exc:
        _fail(exc)
        return
    _print_run(s)
    if s.status == "pending":
        _print_waiting(s)
        return
    _check_outcome(s)


def _print_run(s: RunSummary) -> None:
    """The run's progress line, passes and calls, and what it resumed, settled or lost."""
    from quorum.live.run.progress import progress_line

    typer.echo(progress_line(s.labelled, s.n_items, s.spent, max(0.0, s.budget - s.spent)))
    calls = ", ".join(f"{k} {v}" for k, v in sorted(s.calls.items()))
    typer.echo(f"run {s.run_id}: {s.status} after {s.passes} pass(es); calls: {calls}")
    from quorum.live.run.target import quality_lines

    for line in quality_lines(s.quality, s.target):
        typer.echo(line)
    if s.interrupted_before:
        typer.echo(f"resumed: {s.interrupted_before} call(s) had been cut off by a stop")
    if s.given or s.withdrawn:
        typer.echo(
            f"human tasks no pass asked for any more: {s.given} answer(s) given to the "
            f"router, {s.withdrawn} pending task(s) withdrawn"
        )
    for name in s.dead:
        typer.secho(f"annotator {name} was taken out of the run (dead endpoint)", fg="yellow")


def _print_waiting(s: RunSummary) -> None:
    """The run waits for people: where their tasks are and how to go on."""
    if str(s.queue).startswith(("http://", "https://")):
        typer.secho(
            f"the router waits for {len(s.waiting_for)} human answer(s) in Label Studio: "
            f"{s.queue}; run again to collect their labels (or use --wait SECONDS)",
            fg="yellow",
        )
        return
    typer.secho(
        f"the router waits for {len(s.waiting_for)} human answer(s) before it can go "
        f"on (labels so far are provisional): see {s.queue}/pending.csv; write labels "
        f"to {s.queue}/answers.csv (item_id,label[,annotator]) and run again "
        "(or use --wait SECONDS)",
        fg="yellow",
    )


def _check_outcome(s: RunSummary) -> None:
    """A run that did not wait: fail where every machine annotator died or nothing was
    labelled, exit with :data:`UNLABELLED_EXIT` where items are left without a label."""
    machines = [n for n in s.arms if n not in s.dead]
    if s.arms and not machines:
        _fail(
            QuorumError(
                f"every machine annotator is dead ({', '.join(s.dead)}); {s.labelled} of "
                f"{s.n_items} item(s) labelled without them; fix the endpoint(s) and run "
                "again"
            )
        )
    if s.filled:
        typer.echo(
            "labels from the fallback or from tasks sent ahead: "
            + ", ".join(f"{n} by {by}" for by, n in sorted(s.filled.items()))
        )
    if s.unlabelled:
        why = sorted(set(s.unlabelled.values()))
        typer.secho(
            f"not finished: {len(s.unlabelled)} of {s.n_items} item(s) have no label "
            f"({'; '.join(why)}{'; ' + s.note if s.note else ''}): items "
            f"{', '.join(list(s.unlabelled)[:10])}",
            fg="red",
            err=True,
        )
        raise typer.Exit(UNLABELLED_EXIT)
    if s.labelled == 0:
        _fail(QuorumError(f"no item was labelled: {s.note or 'see the log above'}"))


def plan_cmd(
    project: Path = typer.Argument(..., help="project file (.toml or .yaml)"),
    llm_accuracy: float = typer.Option(
        0.8, "--llm-accuracy", min=0.0, max=1.0, help="assumed accuracy of each LLM"
    ),
    features: str | None = typer.Option(
        None, "--features", help="override the project's features (e.g. light)"
    ),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
    target: float | None = typer.Option(
        None,
        "--target-quality",
        min=0.0,
        max=1.0,
        help="also: what this quality target is likely to cost (default: the project's "
        "[budget] target_quality)",
    ),
    confidence: float | None = typer.Option(
        None, "--confidence", min=0.0, max=1.0, help="the target's confidence (default 0.9)"
    ),
    runs: int = typer.Option(5, "--runs", min=1, help="simulated runs for the target"),
) -> None:
    """Before spending anything: max spend, expected LLM calls, human labels and hours,
    and with a quality target what it is likely to cost."""
    from quorum.live.project.config import load_project
    from quorum.live.run.plan import plan
    from quorum.live.run.plan_target import plan_target

    _setup_logging(True)
    try:
        cfg = load_project(project)
        p = plan(cfg, llm_accuracy=llm_accuracy, features=features)
        tp = None
        if target is not None or cfg.budget.target_quality is not None:
            tp = plan_target(cfg, target, confidence, llm_accuracy, runs, features)
    except (QuorumError, ValueError) as exc:
        _fail(exc)
        return
    if as_json:
        out = p.as_dict() | ({"target": tp.as_dict()} if tp is not None else {})
        typer.echo(json.dumps(out, indent=2))
        return
    for line in p.lines() + (tp.lines() if tp is not None else []):
        typer.echo(line)


def status_cmd(
    project: Path = typer.Argument(..., help="project file (.toml or .yaml)"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Progress, spending and calls of a project, from its ledger."""
    from quorum.live.outputs.status import status
    from quorum.live.project.config import load_project

    try:
        st = status(load_project(project))
    except QuorumError as exc:
        _fail(exc)
        return
    per = st.pop("per_annotator")
    if as_json:
        st["per_annotator"] = per.to_dict("records")
        typer.echo(json.dumps(st, indent=2, default=str))
        return
    from rich.console import Console

    from quorum.cli.status_text import print_status

    con = Console(soft_wrap=True)
    if not con.is_terminal:
        con = Console(soft_wrap=True, width=160)
    print_status(con, st, per)


def export_cmd(
    project: Path = typer.Argument(..., help="project file (.toml or .yaml)"),
    fmt: str = typer.Option(
        "csv", "--format", "-f", help="csv, jsonl, parquet or hf (a datasets folder + card)"
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="output file (hf: folder)"),
    push_to_hub: str | None = typer.Option(
        None,
        "--push-to-hub",
        help="with -f hf: also push to this Hub dataset repo (needs HF_HUB_OFFLINE=0 and "
        "a token: HF_TOKEN or `hf auth login`)",
    ),
) -> None:
    """Write final labels with provenance (annotators, answers, agreement, cost)."""
    from quorum.live.outputs.files import export
    from quorum.live.project.config import load_project

    try:
        if push_to_hub and fmt.lower() != "hf":
            raise QuorumError("--push-to-hub needs -f hf")
        path = export(load_project(project), fmt, out)
        if push_to_hub:
            from quorum.live.outputs.hf import push_to_hub as push

            typer.echo(f"wrote {path}")
            path = push(path, push_to_hub)
    except (QuorumError, OSError) as exc:
        _fail(exc)
        return
    typer.echo(f"{'pushed to' if push_to_hub else 'wrote'} {path}")


def ls_users_cmd(
    emails: list[str] = typer.Argument(..., help="e-mail of each annotator to create"),
    data_dir: Path = typer.Option(
        ..., "--data-dir", help="the server's data folder (label-studio start --data-dir)"
    ),
    url: str | None = typer.Option(
        None,
        "--url",
        help="the running server, to check the new tokens (e.g. http://127.0.0.1:8080)",
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="write the accounts to this CSV file (mode 0600) instead of printing them",
    ),
) -> None:
    """Create annotator accounts with a password and API tokens (or reset an existing
    account's password and tokens); prints e-mail, password, personal access token."""
    import csv
    import io
    import os

    from quorum.live.labelstudio.server import create_users

    try:
        users = create_users(data_dir, emails, url=url)
    except QuorumError as exc:
        _fail(exc)
        return
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["email", "password", "personal_access_token", "legacy_token"])
    for u in users:
        w.writerow([u.email, u.password, u.pat, u.token])
    if out is None:
        typer.echo(buf.getvalue(), nl=False)
        return
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(buf.getvalue())
    typer.echo(f"wrote {len(users)} account(s) to {out} (secrets: keep it private)")


def report_project(project: Path, output: Path | None) -> None:
    """`quorum report PROJECT [-o FILE]`: the project's HTML page from its ledger (the
    `report` command is shared with the bench folder form, quorum.cli.bench)."""
    from quorum.live.outputs.report import write_report
    from quorum.live.project.config import load_project

    try:
        path = write_report(load_project(project), output)
    except (QuorumError, OSError) as exc:
        _fail(exc)
        return
    typer.echo(f"wrote {path}")
