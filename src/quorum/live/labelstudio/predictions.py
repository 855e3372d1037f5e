"""LLM answers shown to annotators as pre-annotations (``humans.labelstudio.predictions``).

:func:`ledger_predictions` reads the answers so far from the project's ledger (read-only);
:func:`prediction_result` turns one of them into the pre-annotation of a task's page.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quorum.live.labelstudio.page import shown
from quorum.tasks.base import TaskKind


@dataclass(frozen=True)
class Prediction:
    """An LLM's answer shown to annotators as a pre-annotation; ``score`` in [0, 1]."""

    annotator: str
    output: str
    score: float | None = None


PredictionSource = Callable[[list[str]], dict[str, list[Prediction]]]


def ledger_predictions(ledger_path: str | Path, humans: Iterable[str] = ()) -> PredictionSource:
    """LLM answers so far, read from the project's ledger (read-only). The score is the
    model's own confidence where it gave one (logprobs or a confidence call), else the share
    of the item's machine answers that agree with it."""
    skip = set(humans)

    def read(item_ids: list[str]) -> dict[str, list[Prediction]]:
        p = Path(ledger_path)
        if not item_ids or not p.is_file():
            return {}
        con = sqlite3.connect(f"file:{p}?mode=ro", uri=True, timeout=30)
        try:
            marks = ",".join("?" * len(item_ids))
            rows = con.execute(
                "SELECT item_id, annotator, kind, output, confidence FROM calls "
                f"WHERE status='ok' AND item_id IN ({marks}) AND annotator_kind != 'human' "
                "ORDER BY call_id",
                item_ids,
            ).fetchall()
        finally:
            con.close()
        answers: dict[str, dict[str, tuple[str, float | None]]] = {}
        conf: dict[tuple[str, str], float] = {}
        for item_id, annotator, kind, output, c in rows:
            if annotator in skip or output is None:
                continue
            if kind == "confidence":
                if c is not None:
                    conf[(item_id, annotator)] = float(c)
            elif kind == "annotate":
                answers.setdefault(item_id, {})[annotator] = (str(output), c)
        out: dict[str, list[Prediction]] = {}
        for item_id, by in answers.items():
            outputs = [o for o, _ in by.values()]
            preds = []
            for annotator, (o, c) in by.items():
                score = c if c is not None else conf.get((item_id, annotator))
                if score is None:
                    score = outputs.count(o) / len(outputs)
                preds.append(Prediction(annotator, o, min(1.0, max(0.0, float(score)))))
            out[item_id] = preds
        return out

    return read


def prediction_result(p: Prediction, kind: TaskKind, choices: list[str]) -> dict[str, Any] | None:
    """The pre-annotation of a task showing ``choices`` (None: the answer cannot be shown,
    e.g. a label that is not one of them), as the task kind shows an output
    (:meth:`~quorum.tasks.base.TaskKind.labelstudio_prediction`)."""
    shown_as = kind.labelstudio_prediction(p.output, choices, shown)
    if shown_as is None:
        return None
    value, control = shown_as
    name = kind.labelstudio_name
    values = value if isinstance(value, list) else [value]  # a span list: one region each
    out: dict[str, Any] = {
        "model_version": p.annotator,
        "result": [
            {"from_name": name, "to_name": "text", "type": control, "value": v} for v in values
        ],
    }
    if p.score is not None:
        out["score"] = p.score
    return out
