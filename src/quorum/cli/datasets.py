"""``quorum datasets``: list, show and export datasets, and write dataset folders (init)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
import yaml
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from quorum.data.schema import Dataset, TaskType
from quorum.errors import QuorumError

datasets_app = typer.Typer(
    help="List, inspect and export datasets; write a dataset folder from your own data (init).",
    no_args_is_help=True,
)

DataDirOpt = typer.Option(
    None, "--data-dir", help="folder with the shared datasets (default: $QUORUM_DATA_DIR)"
)


def register(app: typer.Typer) -> None:
    """Add the ``datasets`` sub-command to the main ``quorum`` app."""
    app.add_typer(datasets_app, name="datasets")


def _console() -> Console:
    con = Console(highlight=False)
    if not con.is_terminal:  # piped or captured: do not squeeze tables into 80 columns
        con = Console(highlight=False, width=160)
    return con


_SHORT_TYPE = {"multiple_choice": "mc", "classification": "class", "summarization": "summ"}


def _fail(exc: Exception) -> typer.Exit:
    Console(stderr=True, highlight=False).print(f"[red]error:[/red] {exc}")
    return typer.Exit(code=1)


def _metric(ds: Dataset) -> str:
    return ds.task.kind.metric_label


def _scores(ds: Dataset) -> tuple[dict[str, float], dict[str, float]]:
    if "scores" in ds.meta and "coverage" in ds.meta:
        return ds.meta["scores"], ds.meta["coverage"]
    from quorum.data.loaders import annotator_scores

    return annotator_scores(ds.task.type, ds.items, ds.annotations)


def summarize(name: str, ds: Dataset) -> dict[str, Any]:
    """A JSON-able summary of one dataset: counts, panel and per-annotator quality."""
    scores, coverage = _scores(ds)
    panel = list(ds.meta.get("panel", []))
    unp = ds.meta.get("unparseable", {})
    annotators = [
        {
            "name": a.name,
            "kind": a.kind,
            "price": a.price,
            "score": None if a.name not in scores else round(scores[a.name], 6),
            "coverage": round(coverage.get(a.name, 0.0), 4),
            "unparseable": unp.get(a.name),
            "in_panel": a.name in panel,
        }
        for a in ds.task.annotators
    ]
    annotators.sort(key=lambda r: (-(r["score"] or 0.0), r["name"]))
    return {
        "name": name,
        "type": ds.task.type.value,
        "language": ds.task.language,
        "items": ds.n_items,
        "annotations": len(ds.annotations),
        "labels": ds.task.labels,
        "metric": _metric(ds),
        "metric_short": ds.task.kind.metric_short,
        "human_price": ds.task.human_price,
        "panel": panel,
        "annotators": annotators,
        "dropped": dict(ds.meta.get("dropped") or {}),
        "defaults": dict(ds.meta.get("defaults") or {}),
        "notes": list(ds.meta.get("notes", [])),
    }


def _fmt(score: float | None) -> str:
    return "  -  " if score is None else f"{score:.3f}".lstrip("0")


def _annotators_table(rows: list[dict[str, Any]]) -> Table:
    """``datasets list --annotators``: one row per annotator."""
    t = Table("dataset", "annotator", "kind", "price", "score", "coverage", "panel")
    for r in rows:
        for i, a in enumerate(r["annotators"]):
            t.add_row(
                r["name"] if i == 0 else "",
                a["name"],
                a["kind"],
                f"{a['price']:.6g}",
                _fmt(a["score"]),
                f"{a['coverage']:.0%}",
                "*" if a["in_panel"] else "",
            )
    return t


def _datasets_table(rows: list[dict[str, Any]]) -> Table:
    """``datasets list``: one row per dataset, its panel's scores and the others' range."""
    t = Table("dataset", "type", "lang", "items", "ann.", "metric", "panel (score)", "others")
    for r in rows:
        by = {a["name"]: a for a in r["annotators"]}
        panel = "\n".join(f"{p} {_fmt(by[p]['score'])}" for p in r["panel"] if p in by)
        rest = [a["score"] for a in r["annotators"] if not a["in_panel"]]
        rest = [x for x in rest if x is not None]
        others = f"{len(rest)}: {_fmt(min(rest))}-{_fmt(max(rest))}" if rest else "-"
        t.add_row(
            r["name"],
            _SHORT_TYPE.get(r["type"], r["type"]),
            r["language"],
            str(r["items"]),
            str(len(r["annotators"])),
            r["metric_short"],
            panel or "-",
            others,
        )
    return t


@datasets_app.command("list")
def list_cmd(
    as_json: bool = typer.Option(False, "--json", help="print JSON instead of a table"),
    annotators: bool = typer.Option(
        False, "--annotators", "-a", help="one row per annotator (kind, price, score, coverage)"
    ),
    data_dir: Path | None = DataDirOpt,
) -> None:
    """Every named dataset with items, annotators, the default panel and annotator quality.

    Quality is accuracy against gold (labels) or mean unigram ROUGE-1 F against the
    reference (summaries), over all items: a missing answer counts as wrong.
    """
    from quorum.data.loaders import list_datasets, load_dataset

    try:
        names = list_datasets(data_dir)
    except QuorumError as exc:
        raise _fail(exc) from exc
    rows, errors = [], {}
    for n in names:
        try:
            rows.append(summarize(n, load_dataset(n, data_dir=data_dir)))
        except QuorumError as exc:
            errors[n] = str(exc)
    if as_json:
        typer.echo(json.dumps({"datasets": rows, "errors": errors}, indent=1))
        return
    con = _console()
    t = _annotators_table(rows) if annotators else _datasets_table(rows)
    con.print(t)
    for n, e in errors.items():
        con.print(f"[red]{n}: {e}[/red]")
    if errors:
        raise typer.Exit(code=1)


@datasets_app.command("show")
def show_cmd(
    name: str = typer.Argument(..., help="dataset name or folder"),
    n: int = typer.Option(3, "--n", "-n", help="how many example items"),
    data_dir: Path | None = DataDirOpt,
) -> None:
    """Print the task spec, the default panel, caveats and a few example items."""
    from quorum.data.loaders import load_dataset

    try:
        ds = load_dataset(name, data_dir=data_dir)
    except QuorumError as exc:
        raise _fail(exc) from exc
    con = _console()
    info = summarize(name, ds)
    con.print(f"[bold]{name}[/bold]  {ds.n_items} items, {len(ds.annotations)} annotations")
    spec = ds.task.model_dump(mode="json", exclude_none=True)
    spec.pop("annotators", None)
    con.print(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True, width=100), markup=False)
    metric = info["metric_short"]
    con.print(f"annotators ({len(info['annotators'])}; name kind price {metric} coverage):")
    for a in info["annotators"]:
        mark = "  [panel]" if a["in_panel"] else ""
        con.print(
            f"  {a['name']}  {a['kind']}  {a['price']:.6g}  {_fmt(a['score'])}  "
            f"{a['coverage']:.0%}{mark}",
            markup=False,
        )
    con.print(_panel_line(ds, info), markup=False)
    unp = {k: v for k, v in ds.meta.get("unparseable", {}).items() if v}
    if unp:
        con.print(f"no usable answer (counted as unparseable): {unp}", markup=False)
    if info["dropped"] and not any(n.startswith("dropped ") for n in info["notes"]):
        con.print(f"dropped answers outside the label set: {info['dropped']}", markup=False)
    for note in info["notes"]:
        con.print(f"note: {note}", markup=False)
    ann = ds.annotations
    for _, row in ds.items.head(n).iterrows():
        con.print(f"\n[bold]item {escape(str(row['item_id']))}[/bold]")
        con.print(_clip(row["text"], 400), markup=False)
        for col in ("gold", "reference"):
            if col in row.index and isinstance(row[col], str):
                label = (ds.task.label_names or {}).get(row[col])
                extra = f" ({label})" if label else ""
                con.print(f"  {col}: {_clip(row[col], 200)}{extra}", markup=False)
        for _, a in ann.loc[ann["item_id"] == row["item_id"]].iterrows():
            conf = a.get("confidence")
            c = f"  conf={conf:.2f}" if isinstance(conf, float) and conf == conf else ""
            con.print(f"  {a['annotator']}: {_clip(str(a['output']), 120)}{c}", markup=False)


def _panel_line(ds: Dataset, info: dict[str, Any]) -> str:
    """The panel and where it comes from; never a bare '-' while machines exist."""
    how = info["defaults"].get("panel")
    if info["panel"]:
        return f"panel: {info['panel']}" + (f" (default: {how})" if how else "")
    machines = [a.name for a in ds.task.llms]
    if machines:
        return f"panel: none given; quorum simulate uses every machine annotator {machines}"
    return "panel: - (no machine annotators)"


def _clip(text: str, n: int) -> str:
    text = str(text)
    return text if len(text) <= n else text[: n - 3] + "..."


@datasets_app.command("export")
def export_cmd(
    name: str = typer.Argument(..., help="dataset name (see `quorum datasets list`)"),
    out_dir: Path = typer.Argument(..., help="folder to write"),
    fmt: str = typer.Option("csv", "--format", "-f", help="csv, jsonl or parquet"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace existing files"),
    data_dir: Path | None = DataDirOpt,
) -> None:
    """Write a dataset as a canonical folder (task.toml, items.*, annotations.*, meta.json)."""
    from quorum.data.io import FORMATS
    from quorum.data.loaders import load_dataset
    from quorum.data.writer import save_folder

    if fmt not in FORMATS:
        raise _fail(ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}"))
    try:
        ds = load_dataset(name, data_dir=data_dir)
        folder = save_folder(ds, out_dir, fmt=fmt, overwrite=overwrite)  # type: ignore[arg-type]
    except QuorumError as exc:
        raise _fail(exc) from exc
    except FileExistsError as exc:
        raise _fail(Exception(f"{exc} (use --overwrite)")) from exc
    typer.echo(f"wrote {name}: {ds.n_items} items, {len(ds.annotations)} annotations -> {folder}")


def _csv_list(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


@datasets_app.command("init")
def init_cmd(
    out_dir: Path = typer.Argument(..., help="dataset folder to write"),
    source: Path | None = typer.Option(
        None, "--from", help="CSV/TSV/JSONL/JSON/Parquet table, one row per item"
    ),
    task_type: str | None = typer.Option(
        None,
        "--type",
        "-t",
        help=f"task kind: {', '.join(t.value for t in TaskType)} (default: recognised from "
        "the columns, label lists are multilabel; else classification)",
    ),
    id_column: str | None = typer.Option(None, "--id", help="id column (default: item_id/row)"),
    text: str = typer.Option("text", "--text", help="text column, or columns a,b (template)"),
    template: str | None = typer.Option(
        None, "--template", help="text from columns, e.g. '{premise} / {hypothesis}'"
    ),
    gold: str | None = typer.Option(None, "--gold", help="gold column (summaries: reference)"),
    choices: str | None = typer.Option(
        None, "--choices", help="options column (JSON list or a||b), or one column per option"
    ),
    answers: str | None = typer.Option(
        None, "--answers", help="answer columns, one per annotator: a,b,c"
    ),
    answers_file: Path | None = typer.Option(
        None, "--answers-file", help="long answers: item_id,annotator,output (or task,worker,label)"
    ),
    humans: str | None = typer.Option(None, "--humans", help="annotators that are people: a,b"),
    price: list[str] | None = typer.Option(
        None, "--price", help="NAME=PRICE per call (repeat); others get the default rule"
    ),
    labels: str | None = typer.Option(None, "--labels", help="label set a,b,c (default: found)"),
    name: str | None = typer.Option(None, "--name", help="task name (default: folder name)"),
    language: str = typer.Option("en", "--language"),
    fmt: str = typer.Option("csv", "--format", "-f", help="csv, jsonl or parquet"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace existing files"),
) -> None:
    """Write a dataset folder: from a table of items and answers (--from), or a template.

    Without --from, a small commented folder of --type to fill in. With --from, the table's
    rows become items and its answer columns (or --answers-file) the annotations; --from
    may also be a folder of items.* and answers.* without a task file (e.g. mfrc's). Prices
    and panel not given get the default rule when the folder is loaded.
    \f
    Above 60 lines because of its option table (one typer option per ``init_folder``
    argument, 33 lines); the body only passes them on. (``\\f`` ends the ``--help`` text.)
    """
    from quorum.data.importer import init_folder
    from quorum.data.template import write_template

    try:
        if source is None:
            task_type = task_type or "classification"
            folder = write_template(out_dir, task_type, overwrite=overwrite)
            typer.echo(
                f"wrote a {task_type} template to {folder}: edit task.toml, items.csv and "
                f"annotations.csv, then `quorum datasets show {folder}`"
            )
            return
        prices = _prices(price)
        ds = init_folder(
            out_dir,
            source,
            task_type=task_type,
            id_column=id_column,
            text=_csv_list(text) or ["text"],
            template=template,
            gold=gold,
            choices=_csv_list(choices),
            answers=_csv_list(answers),
            answers_file=answers_file,
            humans=_csv_list(humans),
            prices=prices,
            labels=_csv_list(labels) or None,
            name=name,
            language=language,
            fmt=fmt,  # type: ignore[arg-type]
            overwrite=overwrite,
        )
    except (QuorumError, ValueError) as exc:
        raise _fail(exc) from exc
    except FileExistsError as exc:
        raise _fail(Exception(str(exc))) from exc
    _say_written(out_dir, ds)


def _prices(price: list[str] | None) -> dict[str, float]:
    """``--price NAME=PRICE`` options as a dict (a bad one: a one-line usage error)."""
    prices = {}
    for p in price or []:
        key, sep, val = p.partition("=")
        try:
            prices[key.strip()] = float(val)
        except ValueError:
            sep = ""
        if not sep:
            raise typer.BadParameter(f"--price expects NAME=PRICE, got {p!r}")
    return prices


def _say_written(out_dir: Path, ds: Dataset) -> None:
    typer.echo(
        f"wrote {out_dir}: {ds.n_items} items, {len(ds.annotations)} answers, "
        f"{len(ds.task.annotators)} annotators, labels {ds.task.labels}"
    )
    for note in ds.meta.get("notes", []):
        typer.echo(f"note: {note}")
    typer.echo(f"next: quorum datasets show {out_dir}; quorum simulate --dataset {out_dir}")
