"""Labels for the items a live pass left without one, whatever the method (nothing is
called or paid): :func:`fill_labels` applies :func:`quorum.routing.core.fallback.fill_unlabelled`
to a pass's result before its random checks; :func:`mark_provisional` marks the labels still
waiting for a person after them."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import numpy as np

from quorum.live.run.source import LiveSource
from quorum.routing.core.base import RoutingResult
from quorum.routing.core.fallback import fill_unlabelled, item_space

log = logging.getLogger("quorum.live")


def fill_labels(result: RoutingResult, problem: Any, source: LiveSource) -> RoutingResult:
    """Every item the pass left without a label gets one where a source can give it
    (:func:`~quorum.routing.core.fallback.fill_unlabelled`: the label model's kNN vote of the
    human labels, else of the other items' labels), whatever the method, before the random
    checks draw (:func:`~quorum.live.run.target.route_pass`). The labels frame gains
    ``labelled_by`` (the fallback's name, else None: the annotators' answers) and
    ``why_unlabelled`` (an item still without a label). Nothing is called or paid."""
    labels = result.labels.copy()
    if labels.empty:
        return result
    ann = result.annotations
    human = source.human.name if source.human is not None else problem.task.human
    hum: dict[str, str] = {}
    if len(ann) and human:
        ok = ann[(ann["annotator"] == human) & (ann["status"] == "ok") & ann["output"].notna()]
        hum = dict(zip(ok["item_id"].astype(str), ok["output"].astype(str), strict=True))
    pos = {str(i): j for j, i in enumerate(problem.item_ids)}
    rows = np.array([pos[str(i)] for i in labels["item_id"]], dtype=int)
    space = item_space(problem.phi, problem.embeddings)[rows]
    outs = [None if v is None or v != v else str(v) for v in labels["output"]]
    filled = fill_unlabelled(
        outs,
        [hum.get(str(i)) for i in labels["item_id"]],
        list(problem.task.labels or []),
        space,
    )
    labels["output"] = filled.labels
    labels["labelled_by"] = filled.by
    labels["why_unlabelled"] = filled.why
    if filled.n_filled:
        log.info(
            "%d item(s) without a usable answer labelled by %s",
            filled.n_filled,
            ", ".join(sorted({b for b in filled.by if b})),
        )
    return dataclasses.replace(result, labels=labels)


def mark_provisional(result: RoutingResult, source: LiveSource) -> RoutingResult:
    """The labels frame gains ``provisional``: the item's human task (the router's or a
    random check's) is still pending, so its label may change."""
    labels = result.labels
    if labels.empty:
        return result
    waiting = set(source.ledger.pending_humans()["item_id"]) if source.human is not None else set()
    labels = labels.copy()
    labels["provisional"] = [str(i) in waiting for i in labels["item_id"]]
    return dataclasses.replace(result, labels=labels)
