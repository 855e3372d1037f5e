"""`quorum simulate`: replay a routing method on recorded annotations."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from quorum.errors import QuorumError


def _parse_params(values: list[str] | None) -> dict:
    out: dict = {}
    for v in values or []:
        key, sep, raw = v.partition("=")
        if not sep:
            raise typer.BadParameter(f"--param expects KEY=VALUE, got {v!r}")
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out


#: the help of ``quorum simulate``'s options that runs over a line
HELP = {
    "budget": "auditor: share of items for humans (<= 1); dollars: share of the all-human "
    "cost (may exceed 1, e.g. 1.2)",
    "annotators": "LLM panel as name=price,... (default: the dataset's panel)",
    "human": "'gold' (perfect human) or a recorded human annotator",
    "quality": "buy random human checks out of the budget and estimate the labels' quality "
    "(quality_estimate, quality_low, quality_high; docs/quality.md); default: on for "
    "quorum, off for the other methods",
    "target": "spend in steps up to the budget and stop once the quality's lower bound "
    "reaches this (implies --quality)",
    "confidence": "confidence of the target (default 0.9) or of the interval (0.95)",
}
BudgetOption = Annotated[float, typer.Option(help=HELP["budget"])]
AnnotatorsOption = Annotated[str | None, typer.Option(help=HELP["annotators"])]
HumanOption = Annotated[str, typer.Option(help=HELP["human"])]
ParamOption = Annotated[
    list[str] | None, typer.Option("--param", "-p", help="router parameter KEY=VALUE")
]
QualityOption = Annotated[
    bool | None, typer.Option("--quality/--no-quality", help=HELP["quality"], show_default=False)
]
TargetOption = Annotated[float | None, typer.Option(help=HELP["target"])]
ConfidenceOption = Annotated[float | None, typer.Option(help=HELP["confidence"])]


def simulate(
    dataset: Annotated[str, typer.Option("--dataset", "-d", help="named dataset or folder")],
    setting: Annotated[str, typer.Option(help="dollars or auditor")] = "dollars",
    budget: BudgetOption = 0.3,
    method: Annotated[str, typer.Option(help="quorum, random, coannotating, cdi, ...")] = "quorum",
    annotators: AnnotatorsOption = None,
    human: HumanOption = "gold",
    seeds: Annotated[int, typer.Option(help="number of seeds (0..N-1)")] = 1,
    param: ParamOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object per seed")] = False,
    quality: QualityOption = None,
    target_quality: TargetOption = None,
    confidence: ConfidenceOption = None,
) -> None:
    """Run a routing method on recorded annotations and print its metrics."""
    from quorum.data.loaders import load_dataset
    from quorum.simulate import (
        check_fraction,
        check_supported,
        human_gaps_note,
        parse_annotators,
        prepare,
        simulate_once,
    )

    if seeds < 1:
        raise typer.BadParameter("--seeds must be >= 1")
    try:
        check_fraction(setting, budget)
        params = _parse_params(param)
        target = _quality_options(params, quality, target_quality, confidence)
        _check_router_params(method, params, target)  # before the data and features
        panel = parse_annotators(annotators)
        ds = load_dataset(dataset)
        check_supported(method, ds.task.kind, ds.name)  # before features and embeddings
        _say_defaults(ds, dataset)
        if (gaps := human_gaps_note(ds, human)) is not None:
            typer.echo(f"note: {gaps}", err=True)
        prep = prepare(ds, panel, human)
        rows = []
        for s in range(seeds):
            row, _ = simulate_once(prep, method, setting, budget, s, params, target=target)
            rows.append(row)
            if as_json:
                sys.stdout.write(json.dumps(row) + "\n")
                sys.stdout.flush()
    except (QuorumError, ValueError, KeyError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=1) from exc
    if not as_json:
        _print_table(rows)


def _quality_options(
    params: dict, quality: bool | None, target: float | None, confidence: float | None
) -> object | None:
    """Turn the quality flags into the ``quality`` / ``quality_*`` parameters and a target."""
    if confidence is not None and not 0.0 < confidence < 1.0:
        raise ValueError(f"--confidence must be in (0, 1), got {confidence}")
    if quality is False and (target is not None or confidence is not None):
        raise ValueError("--no-quality turns the checks off: drop --target-quality/--confidence")
    if quality is not None:
        params["quality"] = quality
    if target is None:
        if confidence is not None:
            params["quality"] = True
            params["quality_confidence"] = confidence
        return None
    from quorum.quality.target import TargetQuality

    return TargetQuality(target, 0.9 if confidence is None else confidence)


def _check_router_params(method: str, params: dict, target: object | None) -> None:
    """A ``--param`` name the router does not take: one line naming the router's own
    (:func:`quorum.methods.check_params`), before the data and features are loaded."""
    from quorum.methods import check_params
    from quorum.simulate import run_checks

    _, rest = run_checks(method, dict(params), target)
    try:
        check_params(method, rest)
    except ValueError as exc:
        raise ValueError(f"--param: {exc}") from None


def _say_defaults(ds, where: str) -> None:
    """One stderr line when a dataset folder got default prices, panel or annotators."""
    used = ds.meta.get("defaults") or {}
    parts = []
    if used.get("prices"):
        parts.append("prices " + ", ".join(f"{a}={p:g}" for a, p in used["prices"].items()))
    if used.get("panel"):
        parts.append(f"panel ({used['panel']}) {ds.meta.get('panel')}")
    if used.get("annotators"):
        parts.append(f"annotators declared from the answers {used['annotators']}")
    if parts:
        typer.echo(
            f"note: {ds.name} uses defaults: {'; '.join(parts)} (quorum datasets show {where})",
            err=True,
        )


def _print_table(rows: list[dict]) -> None:
    import numpy as np
    from rich.console import Console
    from rich.table import Table

    # the task kind's metric (accuracy, rouge1, span_f1, ...), named by every row
    metric = rows[0].get("metric") or ("rouge1" if "rouge1" in rows[0] else "accuracy")
    t = Table(
        title=f"{rows[0]['method']} on {rows[0]['dataset']} ({rows[0]['setting']}, "
        f"budget {rows[0]['budget']:.0%})"
    )
    est = rows[0].get("quality_estimate") is not None
    cols = ["seed", metric, "mca", "cost", "budget_limit", "human_labels", "llm_calls"]
    for col in cols + (["estimate [interval], checks"] if est else []):
        t.add_column(col, justify="right")
    for r in rows:
        mca = "-" if r.get("mca") is None else f"{r['mca']:.3f}"
        cells = [
            str(r["seed"]),
            f"{r[metric]:.4f}",
            mca,
            f"{r['cost']:.2f}",
            f"{r['budget_limit']:.2f}",
            str(r["human_labels"]),
            str(r["llm_calls"]),
        ]
        if est:
            cells.append(
                f"{r['quality_estimate']:.3f} [{r['quality_low']:.3f}, "
                f"{r['quality_high']:.3f}], {r['quality_n_checks']}"
            )
        t.add_row(*cells)
    if len(rows) > 1:
        vals = np.array([r[metric] for r in rows])
        t.add_row("mean", f"{vals.mean():.4f} ± {vals.std():.4f}", *[""] * (len(t.columns) - 2))
    if rows[0].get("accounting") == "authors":
        unpaid = np.mean([r.get("unpaid_cost", 0.0) for r in rows])
        t.caption = (
            f"authors' accounting: cost leaves out {unpaid:.2f} of free LLM answers "
            "(calibration answers, labels of items the money did not reach)"
        )
    Console().print(t)
    for r in rows:
        if r.get("target_message"):
            typer.echo(f"seed {r['seed']}: {r['target_message']}")


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate)
