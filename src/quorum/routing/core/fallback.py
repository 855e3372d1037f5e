"""Labels for the items a routing pass left without one (ours, issue 27).

A router labels an item by its usable answers. Live, an item may end with none: its only
paid answer did not parse (or its call failed) and the budget is gone. The recorded
datasets never show this (their unparseable answers are dropped when they load), so the
routers need no rule for it; the live runner applies :func:`fill_unlabelled` to every
routing result instead, whatever the method:

1. ``"label model"``: p_LM(y | x), the kNN vote of the human labels bought so far
   (:func:`~quorum.routing.core.label_model.knn_label_probs`, k neighbours, pseudo-counts
   ``strength`` towards the human label frequencies), argmax;
2. ``"neighbours' labels"`` where there is no human label at all: the same kNN vote over
   the labels the pass gave the other items (the annotators' answers on the nearest items);
3. no label, with the reason, where neither exists (nothing in the run is labelled).

It takes and returns plain arrays and lists: no state, no calls, nothing paid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from quorum.routing.core.label_model import knn_label_probs, label_indices

__all__ = ["FILLED_BY_KNN_HUMAN", "FILLED_BY_KNN_RUN", "Filled", "fill_unlabelled", "item_space"]

#: ``labelled_by`` of a label from the kNN vote of the human labels
FILLED_BY_KNN_HUMAN = "label model"
#: ``labelled_by`` of a label from the kNN vote of the other items' labels (no human label)
FILLED_BY_KNN_RUN = "neighbours' labels"


@dataclass(frozen=True)
class Filled:
    """What :func:`fill_unlabelled` decided: per item, the label (or None), who gave it
    (``by``: one of the ``FILLED_BY_*`` names, or None where the label was there already)
    and, for an item still without a label, why."""

    labels: list[str | None]
    by: list[str | None]
    why: list[str | None]

    @property
    def n_filled(self) -> int:
        return sum(b is not None for b in self.by)


def item_space(phi: np.ndarray, embeddings: np.ndarray | None) -> np.ndarray:
    """Unit-norm item vectors for the kNN vote: the embeddings, else standardised phi
    (the space QUORUM's own label model uses)."""
    if embeddings is not None:
        return np.asarray(embeddings, dtype=np.float64)
    phi = np.asarray(phi, dtype=np.float64)
    z = (phi - phi.mean(0)) / (phi.std(0) + 1e-9)
    return z / np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-12)


def fill_unlabelled(
    outputs: Sequence[str | None],
    human_labels: Sequence[str | None],
    labels: Sequence[str],
    space: np.ndarray,
    *,
    k: int = 10,
    strength: float = 2.0,
) -> Filled:
    """Fill the ``None`` entries of ``outputs`` (one per item, aligned with ``space``).

    ``human_labels`` holds each item's human label (None where it has none), ``labels``
    the task's label set. Items with an output keep it (``by`` None).

    Examples
    --------
    >>> import numpy as np
    >>> space = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [0.8, 0.6]])
    >>> f = fill_unlabelled(["a", "a", "b", "b", None], ["a", "a", "b", "b", None],
    ...                     ["a", "b"], space, k=2)
    >>> f.labels[-1], f.by[-1]
    ('a', 'label model')
    >>> f = fill_unlabelled(["a", "b", None], [None, None, None], ["a", "b"],
    ...                     np.array([[1.0, 0.0], [0.0, 1.0], [0.1, 1.0]]), k=1)
    >>> f.labels[-1], f.by[-1]
    ('b', "neighbours' labels")
    >>> fill_unlabelled([None, None], [None, None], ["a", "b"], np.eye(2)).why[0]
    'no usable answer, no human label and no other item labelled'
    """
    labels = [str(x) for x in labels]
    out = list(outputs)
    by: list[str | None] = [None] * len(out)
    why: list[str | None] = [None] * len(out)
    todo = np.array([i for i, y in enumerate(out) if y is None], dtype=int)
    if not len(todo):
        return Filled(out, by, why)
    if not labels:  # summaries: no label set to vote over
        for i in todo:
            why[i] = "no usable answer (summaries have no label model)"
        return Filled(out, by, why)
    L = len(labels)
    y_h = label_indices(list(human_labels), labels)
    name = FILLED_BY_KNN_HUMAN
    ref = np.flatnonzero(y_h >= 0)
    y_ref = y_h[ref]
    if not len(ref):
        name = FILLED_BY_KNN_RUN
        y_o = label_indices(out, labels)
        ref = np.flatnonzero(y_o >= 0)
        y_ref = y_o[ref]
    if not len(ref):
        for i in todo:
            why[i] = "no usable answer, no human label and no other item labelled"
        return Filled(out, by, why)
    p = knn_label_probs(space, ref, y_ref, todo, L, k=k, strength=strength)
    for i, j in zip(todo.tolist(), p.argmax(axis=1).tolist(), strict=True):
        out[i] = labels[int(j)]
        by[i] = name
    return Filled(out, by, why)
