"""What ``quorum status`` prints for a person: labels, people, money, then the
per-annotator calls table (``--json`` prints :func:`quorum.live.outputs.status.status` as it is)."""

from __future__ import annotations

from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table


def print_status(con: Console, st: dict[str, Any], per: pd.DataFrame) -> None:
    """Print the status ``st`` (without its ``per_annotator`` frame ``per``) to ``con``."""
    _print_labels(con, st)
    _print_people(con, st)
    _print_money(con, st)
    con.print(_calls_table(per))


def _print_labels(con: Console, st: dict[str, Any]) -> None:
    """The status's labels: the progress line, items provisional or left out, runs, calls."""
    con.print(f"[bold]{st['project']}[/bold]  ledger {st['ledger']}")
    con.print(st["line"] + ("" if st["labels_final"] else " (provisional)"))
    if st.get("provisional"):
        con.print(f"provisional labels (their human task is pending): {st['provisional']}")
    if st.get("unlabelled"):
        why = sorted(set(st["unlabelled"].values()))
        con.print(f"no label: {len(st['unlabelled'])} item(s) ({'; '.join(why)})")
    last = st["last_run"]
    if last:
        con.print(
            f"runs: {st['runs']} (last: #{last['run_id']} {last['status']}, "
            f"method {last['method']}, seed {last['seed']})"
            + (f": {last['note']}" if last.get("note") else "")
        )
    con.print("calls: " + ", ".join(f"{k} {v}" for k, v in sorted(st["calls"].items())))


def _print_people(con: Console, st: dict[str, Any]) -> None:
    """The status's people: human tasks, the team's reliabilities, the annotators'
    agreement."""
    from quorum.live.humans.agreement import agreement_lines

    if st["human_tasks"]:
        con.print(
            "human tasks: " + ", ".join(f"{k} {v}" for k, v in sorted(st["human_tasks"].items()))
        )
    if st.get("human_team"):
        q = st.get("human_quality")
        con.print(
            "human team (accuracy, labels, checked, gold right/of)"
            + (f"; the arm's quality {q:.2f}" if q is not None else "")
            + ": "
            + ", ".join(
                f"{p['person'] or '?'} {p['accuracy']:.2f} ({p['labels']}, {p['checked']}, "
                f"{p['gold_correct']}/{p['gold']})"
                for p in st["human_team"]
            )
        )
        ev = st.get("human_evidence") or {}
        if ev and not ev.get("dependable"):
            con.print(
                f"human reliabilities are not dependable: {ev['why']}",
                style="yellow",
                markup=False,
            )
    for line in agreement_lines(st["agreement"]):
        con.print(line, markup=False, highlight=False)
    from quorum.live.outputs.judges import judge_lines

    for line in judge_lines(st.get("pair_judges") or []):
        con.print(line, markup=False, highlight=False)


def _print_money(con: Console, st: dict[str, Any]) -> None:
    """The status's warnings, the labels' checked quality, money held or possibly billed,
    and the human tasks waiting (with their Label Studio links)."""
    for w in st.get("warnings") or []:
        con.print(f"warning: {w}", style="yellow", markup=False)
    from quorum.live.run.target import quality_lines

    for line in quality_lines(st.get("quality"), st.get("target")):
        con.print(line, markup=False, highlight=False)
    if st["held_for_humans"] != "0":
        con.print(f"held for pending human labels: ${st['held_for_humans']}")
    if st["interrupted_calls"]:
        con.print(
            f"interrupted calls: {st['interrupted_calls']} "
            f"(possibly billed, at most ${st['interrupted_possibly_billed']}, counted as spent)"
        )
    if st["pending_humans"]:
        con.print(f"waiting for humans: {len(st['pending_humans'])} item(s) in {st['queue']}")
    for item_id, url in list(st["human_links"].items())[:50]:
        con.print(f"  {item_id}: {url}")


def _calls_table(per: pd.DataFrame) -> Table:
    """The per-annotator calls table (columns that are all zero left out)."""
    per = per.loc[:, [c for c in per.columns if c in _KEEP or per[c].fillna(0).any()]]
    t = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for c in per.columns:
        t.add_column(_SHORT.get(c, c), justify="left" if c == "annotator" else "right")
    for r in per.itertuples(index=False):
        t.add_row(*[_fmt(v) for v in r])
    return t


_KEEP = {"annotator", "calls", "ok", "cost"}


_SHORT = {
    "unparseable": "unparsed",
    "interrupted": "interr",
    "prompt_tokens": "tok_in",
    "completion_tokens": "tok_out",
    "mean_latency_s": "latency_s",
    "attempts": "tries",
}


def _fmt(v: Any) -> str:
    """A table cell: floats without trailing zeros, NaN and None empty."""
    if isinstance(v, float):
        return "" if v != v else f"{v:.6f}".rstrip("0").rstrip(".")
    return "" if v is None else str(v)
