"""`quorum annotate`, `quorum status` and `quorum export` for live projects."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import typer

from quorum.errors import QuorumError


def _setup_logging(quiet: bool) -> None:
    from rich.logging import RichHandler

    logger = logging.getLogger("quorum.live")
    if not logger.handlers:
        h = RichHandler(show_time=False, show_path=False, markup=False)
        h.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(h)
    logger.setLevel(logging.ERROR if quiet else logging.INFO)
    logger.propagate = False


def _fail(exc: Exception) -> None:
    typer.secho(f"error: {exc}", fg="red", err=True)
    raise typer.Exit(2)


def register(app: typer.Typer) -> None:
    @app.command("annotate")
    def annotate_cmd(
        project: Path = typer.Argument(..., help="project file (.toml or .yaml)"),
        wait: float = typer.Option(
            0.0, "--wait", help="seconds to wait for human answers before finishing"
        ),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress output"),
        engine: str | None = typer.Option(
            None,
            "--engine",
            help="local or ray: where LLM calls and features run (overrides the project's engine)",
        ),
    ) -> None:
        """Label a project's items under its budget (resumes where a previous run stopped)."""
        from quorum.live.config import load_project
        from quorum.live.runner import annotate, progress_line

        _setup_logging(quiet)
        try:
            cfg = load_project(project)
            if engine is not None:
                from quorum.engine import resolve_engine

                cfg = cfg.model_copy(update={"engine": resolve_engine(engine)})
            s = annotate(cfg, wait=wait, quiet=quiet)
        except QuorumError as exc:
            _fail(exc)
            return
        typer.echo(progress_line(s.labelled, s.n_items, s.spent, max(0.0, s.budget - s.spent)))
        calls = ", ".join(f"{k} {v}" for k, v in sorted(s.calls.items()))
        typer.echo(f"run {s.run_id}: {s.status} after {s.passes} pass(es); calls: {calls}")
        if s.interrupted_before:
            typer.echo(f"resumed: {s.interrupted_before} call(s) had been cut off by a stop")
        for name in s.dead:
            typer.secho(f"annotator {name} was taken out of the run (dead endpoint)", fg="yellow")
        if s.pending_humans:
            typer.secho(
                f"{s.pending_humans} item(s) wait for a human: see {s.queue}/pending.csv; "
                f"write labels to {s.queue}/answers.csv (item_id,label) and run again "
                "(or use --wait SECONDS)",
                fg="yellow",
            )

    @app.command("status")
    def status_cmd(
        project: Path = typer.Argument(..., help="project file (.toml or .yaml)"),
        as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
    ) -> None:
        """Progress, spending and calls of a project, from its ledger."""
        from quorum.live.config import load_project
        from quorum.live.runner import status

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
        from rich.table import Table

        con = Console(soft_wrap=True)
        if not con.is_terminal:
            con = Console(soft_wrap=True, width=160)
        con.print(f"[bold]{st['project']}[/bold]  ledger {st['ledger']}")
        con.print(st["line"])
        if st["labelled_last_run"] is not None:
            con.print(f"final labels (last finished run): {st['labelled_last_run']}/{st['items']}")
        last = st["last_run"]
        if last:
            con.print(
                f"runs: {st['runs']} (last: #{last['run_id']} {last['status']}, "
                f"method {last['method']}, seed {last['seed']})"
            )
        con.print("calls: " + ", ".join(f"{k} {v}" for k, v in sorted(st["calls"].items())))
        if st["held_for_humans"]:
            con.print(f"held for pending human labels: ${st['held_for_humans']:.6f}")
        if st["interrupted_calls"]:
            con.print(
                f"interrupted calls: {st['interrupted_calls']} "
                f"(possibly billed, at most ${st['interrupted_possibly_billed']:.6f})"
            )
        if st["pending_humans"]:
            con.print(f"waiting for humans: {len(st['pending_humans'])} item(s) in {st['queue']}")
        per = per.loc[:, [c for c in per.columns if c in _KEEP or per[c].fillna(0).any()]]
        t = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        for c in per.columns:
            t.add_column(_SHORT.get(c, c), justify="left" if c == "annotator" else "right")
        for r in per.itertuples(index=False):
            t.add_row(*[_fmt(v) for v in r])
        con.print(t)

    @app.command("export")
    def export_cmd(
        project: Path = typer.Argument(..., help="project file (.toml or .yaml)"),
        fmt: str = typer.Option("csv", "--format", "-f", help="csv, jsonl or parquet"),
        out: Path | None = typer.Option(None, "--out", "-o", help="output file"),
    ) -> None:
        """Write final labels with provenance (annotators, answers, agreement, cost)."""
        from quorum.live.config import load_project
        from quorum.live.runner import export

        try:
            path = export(load_project(project), fmt, out)
        except QuorumError as exc:
            _fail(exc)
            return
        typer.echo(f"wrote {path}")


_KEEP = {"annotator", "calls", "ok", "cost"}
_SHORT = {
    "unparseable": "unparsed",
    "interrupted": "interr",
    "prompt_tokens": "tok_in",
    "completion_tokens": "tok_out",
    "mean_latency_s": "latency_s",
    "attempts": "tries",
}


def _fmt(v) -> str:
    if isinstance(v, float):
        return "" if v != v else f"{v:.6f}".rstrip("0").rstrip(".")
    return "" if v is None else str(v)
