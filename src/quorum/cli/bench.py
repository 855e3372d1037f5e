"""`quorum bench` (run the paper's experiments) and `quorum report` (the HTML page)."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import Annotated

import typer


def _echo(msg: str) -> None:
    typer.echo(msg, err=True)


def bench(
    config: Annotated[
        str | None,
        typer.Argument(help="TOML config, or a built-in name: default (the paper), smoke"),
    ] = None,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="output folder (cache, CSV, tables, figures)")
    ] = Path("bench-out"),
    workers: Annotated[
        int | None, typer.Option(help="worker processes (default: the config's run.workers)")
    ] = None,
    export: Annotated[
        Path | None,
        typer.Option(help="also copy README, tables and figures here (e.g. benchmarks/)"),
    ] = None,
    update_docs: Annotated[
        bool,
        typer.Option(
            help="fill the generated sections of docs/baselines.md and README.md of the checkout"
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="only show how many runs each experiment needs")
    ] = False,
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
) -> None:
    """Regenerate the paper's tables and figures on the recorded annotations.

    Every run is cached under OUT/cache: a second run computes only what changed.
    """
    cfg = _checked_config(config)
    if dry_run:
        _show_plan(cfg, out)
        return
    from quorum.bench.report import write_outputs
    from quorum.bench.runner import run_bench

    t0 = time.perf_counter()
    run = run_bench(
        cfg,
        out,
        workers=workers,
        progress=progress and sys.stderr.isatty(),
        command=_command_line(config, out, workers, export),
        log=_echo,
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(
        json.dumps(cfg.model_dump(mode="json"), indent=1), encoding="utf-8"
    )
    stats = write_outputs(run)
    _export(out, export, update_docs)
    secs = time.perf_counter() - t0
    _echo(
        f"{stats['runs_computed']} runs computed, {stats['runs_cached']} cached, "
        f"{stats['runs_failed']} failed, in {secs:.1f} s -> {out}/ (README.md, report.html)"
        + (f"; exported to {export}/" if export else "")
    )
    for e in stats.get("errors", [])[:5]:
        _echo(f"  problem: {e}")


def _checked_config(config: str | None):
    """The bench config by name or path, its datasets checked; exit 2 with one line if not."""
    from quorum.bench.config import BenchConfigError, load_config
    from quorum.errors import QuorumError

    try:
        cfg = load_config(config)
    except BenchConfigError as exc:
        _echo(str(exc))
        raise typer.Exit(code=2) from exc
    try:
        _check_datasets(cfg)
    except (ValueError, QuorumError) as exc:
        _echo(f"error: {exc}")
        raise typer.Exit(code=2) from exc
    return cfg


def _command_line(config: str | None, out: Path, workers: int | None, export: Path | None) -> str:
    """The ``quorum bench ...`` line recorded in bench.json and the README."""
    return " ".join(
        shlex.quote(str(a))
        for a in [
            "quorum",
            "bench",
            *([config] if config else []),
            "--out",
            out,
            *(["--workers", workers] if workers is not None else []),
            *(["--export", export] if export is not None else []),
        ]
    )


def _export(out: Path, export: Path | None, update_docs: bool) -> None:
    """Copy the outputs to ``export`` and fill the checkout's generated doc sections."""
    if export is not None:
        from quorum.bench.report import export as do_export

        do_export(out, export)
    if update_docs:
        from quorum.bench.report import update_docs as do_update

        root = Path(__file__).resolve().parents[3]
        for p in do_update(out, root):
            _echo(f"updated {p}")


def _check_datasets(cfg) -> None:
    from quorum.bench.plan import build_plan
    from quorum.data.loaders import list_datasets

    known = set(list_datasets())
    plan = build_plan(cfg)
    bad = [d for d in plan.datasets() if d not in known and not Path(d).is_dir()]
    if bad:
        raise ValueError(f"unknown dataset(s) {bad}; available: {sorted(known)}")


def _show_plan(cfg, out: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    from quorum.bench.cache import JsonlStore
    from quorum.bench.plan import build_plan

    plan = build_plan(cfg)
    store = JsonlStore(out / "cache" / "runs.jsonl")
    t = Table(title=f"bench plan: {cfg.name}")
    for c in ("experiment", "runs", "cached", "datasets"):
        t.add_column(c, justify="right" if c in ("runs", "cached") else "left")
    for exp, specs in plan.runs.items():
        cached = sum(1 for s in specs if s.key in store)
        ds = sorted({s.dataset for s in specs})
        t.add_row(exp, str(len(specs)), str(cached), ", ".join(ds)[:80])
    allr = plan.all_runs()
    t.add_row("distinct", str(len(allr)), str(sum(1 for s in allr if s.key in store)), "")
    Console(stderr=True).print(t)


def report(
    outdir: Annotated[
        Path,
        typer.Argument(
            metavar="BENCH_DIR|PROJECT",
            help="a `quorum bench` output folder, or a live project file",
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="HTML file (default: OUTDIR/report.html; a project: <folder>/<name>-report.html)",
        ),
    ] = None,
    rebuild: Annotated[
        bool, typer.Option(help="rebuild tables and figures from the cached runs first")
    ] = False,
) -> None:
    """Write one self-contained HTML report (tables and figures embedded): of a bench
    folder, or of a live project (PROJECT.toml/.yaml) from its ledger."""
    from quorum.bench.report import write_html

    if outdir.is_file():  # a live project file: its ledger's page (quorum.live.outputs.report)
        from quorum.cli.live import report_project

        if rebuild:
            _echo("error: --rebuild is for a bench folder; a project's page is always rebuilt")
            raise typer.Exit(code=2)

        report_project(outdir, output)
        return
    if rebuild:
        _rebuild(outdir)
    try:
        path = write_html(outdir, output)
    except FileNotFoundError as exc:
        _echo(f"error: {exc}")
        raise typer.Exit(code=1) from exc
    _echo(f"wrote {path}")


def _rebuild(outdir: Path) -> None:
    from quorum.bench.cache import JsonlStore
    from quorum.bench.config import parse_config
    from quorum.bench.plan import build_plan
    from quorum.bench.report import write_outputs
    from quorum.bench.runner import BenchRun

    cfg_file = outdir / "config.json"
    if not cfg_file.is_file():
        _echo(f"error: {cfg_file} not found")
        raise typer.Exit(code=1)
    cfg = parse_config(json.loads(cfg_file.read_text(encoding="utf-8")), f"in {cfg_file}")
    cache = outdir / "cache"
    stats_file = outdir / "bench.json"
    stats = json.loads(stats_file.read_text(encoding="utf-8")) if stats_file.is_file() else {}
    run = BenchRun(
        cfg,
        outdir,
        build_plan(cfg),
        JsonlStore(cache / "runs.jsonl"),
        JsonlStore(cache / "datasets.jsonl"),
        JsonlStore(cache / "overhead.jsonl"),
        stats,
    )
    write_outputs(run)


def register(app: typer.Typer) -> None:
    app.command("bench")(bench)
    app.command("report")(report)
