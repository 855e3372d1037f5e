"""``quorum features DATASET``: compute (or load from cache) phi(d_t) and summarise it."""

from __future__ import annotations

import json
import math
from typing import Any

import typer


def _num(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 6)


def register(app: typer.Typer) -> None:
    """Add the ``features`` command to the ``quorum`` app."""
    app.command("features")(features)


def features(
    dataset: str = typer.Argument(..., help="name of a dataset known to quorum's loaders"),
    no_cache: bool = typer.Option(
        False, "--no-cache", help="recompute, do not read or write the feature cache"
    ),
    as_json: bool = typer.Option(False, "--json", help="print the summary as JSON"),
    k: int = typer.Option(5, "--k", min=1, help="number of nearest neighbours"),
    progress: bool = typer.Option(
        True, "--progress/--no-progress", help="show a progress bar on a terminal"
    ),
    profile: str | None = typer.Option(
        None,
        "--profile",
        help="feature profile: default, static or fast (see docs/performance.md); "
        "default: $QUORUM_FEATURE_PROFILE or 'default'",
    ),
    engine: str | None = typer.Option(
        None,
        "--engine",
        help="local or ray (a local Ray instance, or $RAY_ADDRESS); same numbers; "
        "default: $QUORUM_ENGINE or 'local'",
    ),
) -> None:
    """Compute the item features phi (6 linguistic + k kNN distances) and print a summary."""
    from quorum.data.loaders import load_dataset
    from quorum.features.pipeline import extract_dataset_features

    ds = load_dataset(dataset)
    fs = extract_dataset_features(
        ds,
        k=k,
        cache=not no_cache,
        show_progress=progress and not as_json,
        profile=profile,
        engine=engine,
    )
    if as_json:
        typer.echo(json.dumps(_summary_json(dataset, fs, k), indent=2))
        return
    _print_summary(dataset, fs)


def _summary_json(dataset: str, fs: Any, k: int) -> dict[str, Any]:
    """``--json``: the dataset, model, profile, each feature's mean/std/min/max, timings."""
    summ = fs.summary()
    return {
        "dataset": dataset,
        "n_items": fs.n_items,
        "language": fs.language,
        "model": fs.model,
        "profile": fs.profile,
        "k": k,
        "features": {
            name: {
                "mean": _num(r["mean"]),
                "std": _num(r["std"]),
                "min": _num(r["min"]),
                "max": _num(r["max"]),
            }
            for name, r in summ.iterrows()
        },
        "timings": {
            key: (v if isinstance(v, bool) else round(float(v), 4)) for key, v in fs.timings.items()
        },
    }


def _print_summary(dataset: str, fs: Any) -> None:
    """The summary table (raw statistics and the normalised mean) and where it came from."""
    from rich.console import Console
    from rich.table import Table

    summ = fs.summary()
    console = Console()
    table = Table(
        title=f"{dataset}: {fs.n_items} items, language {fs.language}, embeddings {fs.model}"
    )
    for col in ("feature", "mean", "std", "min", "max", "phi mean"):
        table.add_column(col, justify="left" if col == "feature" else "right")
    for name, r in summ.iterrows():
        cells = [
            "n/a" if _num(r[c]) is None else f"{r[c]:.4g}"
            for c in ("mean", "std", "min", "max", "phi_mean")
        ]
        table.add_row(str(name), *cells)
    console.print(table)
    t = fs.timings
    src = "from cache" if t.get("cached") else "computed"
    console.print(
        f"{src} in {t['total']:.2f} s (linguistic {t['linguistic']:.2f} s, "
        f"embedding {t['embedding']:.2f} s, kNN {t['knn']:.2f} s)"
    )
