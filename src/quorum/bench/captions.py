"""Captions' shared parts: the dataset label, the failed-runs note, the seed count."""

from __future__ import annotations

from typing import Any

from quorum.bench.runner import BenchRun


def dataset_label(run: BenchRun, d: str, setting: str) -> str:
    """The main tables' first cell: dataset, panel's mean quality, size or human cost."""
    info = run.info(d)
    if not info:
        return d
    llm = "" if info.get("llm_mean") is None else f"<br>(LLM: {info['llm_mean']:.3f})"
    if setting == "dollars":
        return f"{d}{llm}<br>Human cost: {info['all_human_cost']:,.0f}"
    return f"{d}{llm}<br>{info['n_items']:,} items"


def _errors(rows: list[dict[str, Any]]) -> list[str]:
    errs = sorted({str(r.get("error")) for r in rows if r.get("status") == "error"})
    return errs


def error_note(rows: list[dict[str, Any]]) -> str:
    """A caption's note on the failed runs among ``rows`` (empty when none failed)."""
    errs = _errors(rows)
    if not errs:
        return ""
    n = sum(1 for r in rows if r.get("status") == "error")
    shown = "; ".join(e[:160] for e in errs[:5])
    return f"\n\n**{n} run(s) failed** and are shown as `error`: {shown}"


def seed_ids(seeds: Any) -> list[int]:
    """A config's ``seeds``: a count or the list itself."""
    return list(range(seeds)) if isinstance(seeds, int) else list(seeds)


def n_seeds(seeds: Any) -> str:
    """``"1 seed"`` / ``"5 seeds"``."""
    n = len(seed_ids(seeds))
    return f"{n} seed" + ("" if n == 1 else "s")
