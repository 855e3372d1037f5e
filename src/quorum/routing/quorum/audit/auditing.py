"""Auditing: which items of the cheapest LLM most likely are errors, and how many humans.

Pure functions used by the auditor setting (Algorithm 2) and by the dollars setting's
audit path (ours; ``dollars_strategy``). The run object makes the calls.

- :func:`calibration_error_mask`: which calibration answers count as errors.
- :func:`error_order`: the remaining items, likeliest errors first (``auditor_rule``:
  the kNN error rate (ours) or the distance to the error centroid (Algorithm 2)).
- :func:`audit_human_count` and :func:`cost_match_give_up`: how many human labels fit.
"""

from __future__ import annotations

import math

import numpy as np

from quorum.routing.core.budget import cap_humans

_EPS = 1e-9


def calibration_error_mask(
    similarity: np.ndarray, graded: bool = False, quantile: float = 0.5
) -> np.ndarray:
    """True where a calibration answer is an error.

    0/1 scores (labels): similarity (1 = same label as the human) below 1. Graded scores
    (a kind with ``graded``, e.g. summaries): similarity to the human's output below the
    ``quantile`` of the calibration similarities (``summary_error_quantile``).

    Examples
    --------
    >>> import numpy as np
    >>> calibration_error_mask(np.array([1.0, 0.0, 1.0])).tolist()
    [False, True, False]
    >>> calibration_error_mask(np.array([0.9, 0.5, 0.7, 0.2]), graded=True).tolist()
    [False, True, False, True]
    """
    s = np.asarray(similarity, dtype=np.float64)
    if graded and len(s):
        return s < np.quantile(s, quantile)
    return s < 1.0


#: distance matrices up to this many entries are computed at once (as before: same bits)
FULL_MATRIX_ENTRIES = 2**27
#: larger ones in blocks of rows of about this many entries (bounded memory)
BLOCK_ENTRIES = 2**24


def error_order(
    rest: np.ndarray,
    judged: np.ndarray,
    is_error: np.ndarray,
    space: np.ndarray,
    *,
    rule: str = "knn",
    k: int = 10,
    cosine: bool = True,
    max_pairs: int | None = None,
) -> tuple[np.ndarray, str]:
    """``rest`` sorted so that the items most likely to be LLM errors come first.

    ``judged`` are calibration items with a human label and ``is_error`` marks those the
    LLM got wrong; ``space`` holds one row per item (unit-norm embeddings with
    ``cosine=True``, else features compared by Euclidean distance).

    ``rule="knn"`` (ours): the share of errors among the k' = min(k, |judged| // 4) (at
    least 1) nearest judged items, ties broken by the distance to the nearest error, so
    that several separate error regions all count. ``rule="centroid"`` (Algorithm 2):
    distance to the centroid of the errors (needs 2 errors). With too few errors the
    order is left as it is. Returns (order, how).

    The kNN rule costs |rest| x |judged| distances. ``max_pairs`` bounds that work: above
    it, the neighbours are looked for among a fixed random sample of
    ``max_pairs // |rest|`` judged items (``how`` then says so). Distance matrices above
    :data:`FULL_MATRIX_ENTRIES` entries are computed in blocks of rows.

    Examples
    --------
    >>> import numpy as np
    >>> space = np.array([[1.0, 0.0], [0.0, 1.0], [0.9, 0.1], [0.1, 0.9]])
    >>> order, how = error_order(np.array([2, 3]), np.array([0, 1]), np.array([False, True]),
    ...                          space, rule="knn", k=1, cosine=False)
    >>> order.tolist(), how
    ([3, 2], 'knn-error-rate')
    """
    rest = np.asarray(rest, dtype=int)
    judged = np.asarray(judged, dtype=int)
    is_err = np.asarray(is_error, dtype=float)
    how = "knn-error-rate"
    if rule == "knn" and max_pairs is not None and len(rest) * len(judged) > max_pairs:
        keep = max(1, max_pairs // max(1, len(rest)))
        pick = np.sort(np.random.default_rng(0).choice(len(judged), keep, replace=False))
        judged, is_err = judged[pick], is_err[pick]
        how = f"knn-error-rate (a sample of {keep} calibration items)"
    n_err = int(is_err.sum())
    if rule == "knn" and n_err >= 1 and len(rest):
        kk = max(1, min(k, len(judged) // 4))
        score, tie = _knn_scores_blocked(space, rest, judged, is_err, kk, cosine)
        return rest[np.lexsort((tie, -score))], how
    if n_err >= 2 and len(rest):
        dist = _centroid_distance(space, rest, judged[is_err > 0], cosine)
        return rest[np.argsort(dist, kind="stable")], "error-centroid"
    return rest, "random (fewer than 2 calibration errors)"


def _knn_scores_blocked(
    space: np.ndarray,
    rest: np.ndarray,
    judged: np.ndarray,
    is_err: np.ndarray,
    kk: int,
    cosine: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_knn_scores` of the items ``rest``, in blocks of rows where the distance
    matrix would pass :data:`FULL_MATRIX_ENTRIES` entries."""
    if len(rest) * len(judged) <= FULL_MATRIX_ENTRIES:
        return _knn_scores(space[rest], space[judged], is_err, kk, cosine)
    width = len(judged) * (1 if cosine else space.shape[1])
    step = max(1, BLOCK_ENTRIES // width)
    parts = [
        _knn_scores(space[rest[i : i + step]], space[judged], is_err, kk, cosine)
        for i in range(0, len(rest), step)
    ]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _centroid_distance(
    space: np.ndarray, rest: np.ndarray, errors: np.ndarray, cosine: bool
) -> np.ndarray:
    """Distance of the items ``rest`` to the centroid of the ``errors`` (Algorithm 2):
    1 - cosine to the normalised centroid, or Euclidean."""
    centroid = space[errors].mean(axis=0)
    if cosine:
        nrm = np.linalg.norm(centroid)
        centroid = centroid / nrm if nrm > 0 else centroid
        return 1.0 - space[rest] @ centroid
    return np.linalg.norm(space[rest] - centroid, axis=1)


def _knn_scores(
    query: np.ndarray, ref: np.ndarray, is_err: np.ndarray, kk: int, cosine: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Share of errors among each query row's kk nearest ``ref`` rows; distance to the
    nearest error (the tie-break)."""
    d = 1.0 - query @ ref.T if cosine else np.linalg.norm(query[:, None, :] - ref[None], axis=2)
    nn = np.argpartition(d, kk - 1, axis=1)[:, :kk]
    score = is_err[nn].mean(axis=1)
    # ties (common with few calibration items) go to the items nearest the errors
    tie = d[:, is_err > 0].min(axis=1)
    return score, tie


def audit_human_count(
    money: float, n_items: int, c_llm: float, c_h: float, humans_left: int | None = None
) -> int:
    """Human labels that fit when every other one of ``n_items`` gets the LLM at ``c_llm``.

    Examples
    --------
    >>> audit_human_count(5.0, 100, 0.01, 0.1)  # (5 - 100 * 0.01) / (0.1 - 0.01)
    44
    >>> audit_human_count(10.0, 100, 0.01, 0.1)  # 9 / 0.09 = 100, not 99
    100
    """
    n_h = 0
    if c_h > c_llm:
        # floor(a / b + eps), not a // b: (10 - 1) // 0.09 is 99.0 in floating point
        n_h = math.floor((money - n_items * c_llm) / (c_h - c_llm) + _EPS)
    return cap_humans(max(0, min(n_h, n_items)), humans_left)


def round_sizes(n_h: int, rounds: int) -> np.ndarray:
    """Human labels per round when ``n_h`` are bought in ``rounds`` rounds (as even as
    whole numbers allow; ``audit_rounds``).

    >>> round_sizes(10, 3).tolist(), round_sizes(2, 5).tolist()
    ([3, 4, 3], [0, 1, 0, 1, 0])
    """
    return np.diff(np.linspace(0, n_h, rounds + 1).round().astype(int))


def cost_match_give_up(n_calibration: int, c_min: float, c_h: float) -> int:
    """Human labels to give up so that calibration's LLM answers are paid for (ours).

    ``auditor_cost_match``: the cheapest LLM's answers on |C| human-labelled items cost
    |C| c_min; giving up ceil(|C| c_min / (c_H - c_min)) human labels keeps the total at
    or below B c_H + (T - B) c_min.

    >>> cost_match_give_up(90, 0.01, 0.1)
    10
    """
    if n_calibration <= 0 or c_h <= c_min:
        return 0
    return math.ceil(n_calibration * c_min / (c_h - c_min) - 1e-9)
