"""The labels of the last routing pass, one row per item, with their provenance from the
ledger: what ``quorum export`` writes (:mod:`quorum.live.outputs.files`), the report and
the dataset card read."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from quorum.errors import ConfigError
from quorum.live.humans.book import HumanBook
from quorum.live.ledger.schema import float_or_none
from quorum.live.ledger.store import Ledger
from quorum.live.outputs.judges import answered_pairs, item_verdicts
from quorum.live.project.config import ProjectConfig
from quorum.live.project.items import load_items
from quorum.live.run.summary import DONE, last_pass, quality_of, row_extra
from quorum.routing.core.budget import from_units

#: ``labelled_by`` of a label no annotator gave (the router's label model, or for an item
#: nobody was asked on, the cheapest LLM's commonest answer; docs/router.md)
LABEL_MODEL = "label model"


# -- export -------------------------------------------------------------------------
def export_frame(cfg: ProjectConfig) -> pd.DataFrame:
    """Labels of the last routing pass, one row per item, with provenance from the ledger.

    ``final`` is False while the run waits for human answers (the labels are then those
    of a pass frozen at the first missing answer). ``pending_human`` says whether the item
    has a human task waiting, ``human_by`` who answered it, ``labelled_by`` the annotators
    whose answer is the label; ``quality_check``, for an item of the random quality checks
    (docs/quality.md), the score its machine label had against the human's (1.0: right).
    """
    items = load_items(cfg).set_index("item_id")
    ledger = Ledger(cfg.ledger_path, readonly=True)
    try:
        run, p = last_pass(ledger)
        if run is None:
            raise ConfigError(
                f"{cfg.name}: no labels in {cfg.ledger_path} yet; run `quorum annotate` first"
            )
        labels = ledger.frame("SELECT * FROM labels WHERE run_id=? AND pass=?", (run["run_id"], p))
        look = _lookups(cfg, ledger, run, p, items)
        pairs = answered_pairs(ledger)
    finally:
        ledger.close()
    frame = pd.DataFrame([_row(r, look) for r in labels.to_dict("records")])
    return _with_parts(frame, cfg, items, pairs)


def _with_parts(
    frame: pd.DataFrame, cfg: ProjectConfig, items: pd.DataFrame, pairs: pd.DataFrame
) -> pd.DataFrame:
    """A kind's own columns after ``text`` (a pair's ``instruction, output_1, output_2``)
    and, where judges were asked in both orders, ``swap_verdicts`` after ``statuses``: per
    judge its verdict in the given and in the swapped order (original numbering), their
    consistency and its answer (:func:`quorum.live.outputs.judges.item_verdicts`)."""
    if frame.empty:
        return frame
    at = frame.columns.get_loc("text") + 1
    for k, f in enumerate(c for c in cfg.task.kind.item_fields if c in items.columns):
        frame.insert(at + k, f, frame["item_id"].map(items[f]))
    if len(pairs):
        verdicts = item_verdicts(pairs)
        at = frame.columns.get_loc("statuses") + 1
        frame.insert(at, "swap_verdicts", [verdicts.get(str(i), {}) for i in frame["item_id"]])
    return frame


@dataclass
class _Lookups:
    """What each exported row looks up by item id, read from the ledger once."""

    run_id: int
    texts: pd.Series
    #: an output as its label's name (``label_name``), each checked item's score,
    #: whether the run's labels are final
    name_of: Callable[[str], str]
    checked: dict[str, float]
    done: bool
    #: the human arm, its pending tasks' items, its answered tasks, the people's labels
    human: str | None
    waiting: set[str]
    answered: dict[str, dict[str, Any]]
    given: dict[str, list[dict[str, Any]]]
    #: each item's money (units) and the pass's call decisions
    cost_u: dict[str, int]
    groups: dict[str, pd.DataFrame]


def _lookups(
    cfg: ProjectConfig, ledger: Ledger, run: sqlite3.Row, p: int, items: pd.DataFrame
) -> _Lookups:
    """The ledger's rows the export needs for the last pass ``p`` of ``run``."""
    rid = run["run_id"]
    dec = ledger.frame(
        "SELECT item_id, annotator, kind, output, status, cost FROM decisions "
        "WHERE run_id=? AND pass=? AND source='call' ORDER BY step",
        (rid, p),
    )
    tasks = ledger.human_tasks()
    slots = HumanBook(ledger).labels()
    cost = ledger.frame(
        "SELECT item_id, sum(CAST(round(cost * 1000000000) AS INTEGER)) AS u FROM calls "
        "WHERE status IN ('ok','unparseable','failed','pending') GROUP BY item_id"
    )
    given: dict[str, list[dict[str, Any]]] = {}
    for r in slots[slots["status"].isin(("answered", "late", "late-unpaid", "extra"))].to_dict(
        "records"
    ):
        given.setdefault(r["item_id"], []).append(
            {"by": r["person"], "label": r["label"], "status": r["status"]}
        )
    return _Lookups(
        run_id=rid,
        texts=items["text"],
        name_of=cfg.task.kind.output_name,
        checked=(quality_of(run) or {}).get("checked") or {},  # item -> its label's score
        done=run["status"] in DONE,
        human=cfg.human,
        waiting=set(tasks.loc[tasks["status"] == "pending", "item_id"]),
        answered={r["item_id"]: r for r in tasks[tasks["status"] == "answered"].to_dict("records")},
        given=given,
        cost_u=dict(zip(cost["item_id"], cost["u"], strict=True)),
        groups={k: g for k, g in dec.groupby("item_id", sort=False)} if len(dec) else {},
    )


def _row(r: dict[str, Any], k: _Lookups) -> dict[str, Any]:
    """One exported row: the label of ``r`` (a ``labels`` row) and its provenance."""
    iid = r["item_id"]
    g = k.groups.get(iid)
    ann = g[g["kind"] != "confidence"] if g is not None else None
    answers = {} if ann is None else dict(zip(ann["annotator"], ann["output"], strict=True))
    answers = {a: (None if v != v else v) for a, v in answers.items()}
    statuses = {} if ann is None else dict(zip(ann["annotator"], ann["status"], strict=True))
    out = r["output"]
    extra = row_extra(r.get("extra"))
    task = k.answered.get(iid)
    provisional = extra.get("provisional") is True or iid in k.waiting
    return {
        "item_id": iid,
        "text": k.texts.get(iid),
        "label": out,
        "label_name": k.name_of(out) if out is not None else None,
        "final": k.done and out is not None and not provisional,
        "why_not_final": _why_not_final(k.done, out, provisional, extra),
        "agreement": r["agreement"],
        "n_annotations": r["n_annotations"],
        "human": bool(r["human"]),
        "human_by": task["answered_by"] if task is not None and r["human"] else None,
        "labelled_by": _labelled_by(answers, out, extra, k.human, task),
        "annotators": list(answers),
        "answers": answers,
        "statuses": statuses,
        "cost": from_units(int(k.cost_u.get(iid, 0) or 0)),
        "human_labels": k.given.get(iid, []) if r["human"] else [],
        "human_confidence": float_or_none(task["confidence"]) if task is not None else None,
        "pending_human": iid in k.waiting,
        "quality_check": k.checked.get(iid),
        "run_id": k.run_id,
    }


def _labelled_by(
    answers: dict[str, Any],
    out: Any,
    extra: dict[str, Any],
    human: str | None,
    task: dict[str, Any] | None,
) -> list[str]:
    """The annotators whose answer is the label ``out`` (the human arm with who answered),
    the fallback that gave it, or the router's label model where no annotator did."""
    by = [a for a, v in answers.items() if out is not None and v == out]
    if isinstance(extra.get("labelled_by"), str):
        by = [extra["labelled_by"]]  # no usable answer: the fallback (fill_labels)
    elif out is not None and not by:
        by = [LABEL_MODEL]  # no annotator gave this label: the router's label model did
    if human in by and task is not None and task["answered_by"]:
        by = [f"{human} ({task['answered_by']})" if a == human else a for a in by]
    return by


def _why_not_final(done: bool, out: Any, provisional: bool, extra: dict[str, Any]) -> str | None:
    """Why an exported label is not final (None where it is)."""
    if out is None:
        why = extra.get("why_unlabelled")
        return why if isinstance(why, str) else "no usable answer"
    if provisional:
        return "its human task waits for answers (provisional label)"
    if not done:
        return "the run waits for human answers (labels so far are provisional)"
    return None
