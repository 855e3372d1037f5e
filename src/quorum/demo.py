"""`quorum demo`: the README's main job on an embedded default.

Runs QUORUM and Random on a real recorded dataset (default: MMLU-Redux with the answers of
real LLMs) in both settings and prints accuracy, MCA and cost side by side.
"""

from __future__ import annotations

from typing import Annotated

import typer


def demo(
    dataset: Annotated[str, typer.Option(help="named dataset or folder")] = "mmlu-redux",
    budget: Annotated[float, typer.Option(help="budget fraction (see quorum simulate)")] = 0.3,
    seeds: Annotated[int, typer.Option(help="seeds per method")] = 3,
) -> None:
    """Route a real dataset with QUORUM and Random and compare them."""
    import time

    import numpy as np
    from rich.console import Console
    from rich.table import Table

    from quorum.simulate import prepare, simulate_once

    console = Console()
    t0 = time.perf_counter()
    console.print(f"[bold]QUORUM demo[/bold]: loading [cyan]{dataset}[/cyan] and its features…")
    prep = prepare(dataset)
    panel = ", ".join(f"{a.name} (${a.price:g})" for a in prep.task.llms)
    console.print(
        f"{prep.dataset.n_items} items; LLM panel: {panel}; human: {prep.task.human} "
        f"(${prep.task.human_spec.price:g}); features in {prep.feature_seconds:.1f}s"
    )
    metric = prep.task.kind.metric_name
    table = Table(title=f"{dataset}, budget {budget:.0%}, mean over {seeds} seeds")
    for col in ("setting", "method", metric, "MCA", "cost", "limit", "human labels", "LLM calls"):
        table.add_column(col, justify="right")
    spent: dict[tuple[str, str], float] = {}
    for setting in ("auditor", "dollars"):
        for method in ("random", "quorum"):
            rows = [simulate_once(prep, method, setting, budget, s)[0] for s in range(seeds)]
            spent[setting, method] = float(np.mean([r["cost"] for r in rows]))
            acc = np.array([r[metric] for r in rows])
            mca = [r["mca"] for r in rows if r.get("mca") is not None]
            table.add_row(
                setting,
                method,
                f"{acc.mean():.4f} ± {acc.std():.4f}",
                f"{np.mean(mca):.3f}" if mca else "-",
                f"{np.mean([r['cost'] for r in rows]):.2f}",
                f"{rows[0]['budget_limit']:.2f}",
                f"{np.mean([r['human_labels'] for r in rows]):.0f}",
                f"{np.mean([r['llm_calls'] for r in rows]):.0f}",
            )
    console.print(table)
    for setting in ("auditor", "dollars"):
        diff = spent[setting, "quorum"] - spent[setting, "random"]
        if abs(diff) >= 0.005:
            more = "more" if diff > 0 else "less"
            console.print(
                f"{setting}: quorum spent {abs(diff):.2f} {more} than random at the same budget; "
                "`quorum bench` compares every method at equal spend (tables/equal_spend.md)"
            )
    console.print(f"done in {time.perf_counter() - t0:.1f}s")


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
