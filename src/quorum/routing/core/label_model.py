"""A cheap label model learned from every human label bought so far (ours, issue 14).

ARAIDA and SANT learn from the human labels they buy; QUORUM used them only as bandit
rewards. These pure functions (arrays in, arrays out) turn the human-labelled items into

- :func:`knn_label_probs`: p_LM(y | x), a kNN vote of the human labels around an item in
  the embedding space, smoothed towards the human label frequencies;
- :func:`knn_error_rate`: e(x), the share of errors of the cheapest LLM among the
  human-checked items around x, smoothed towards its overall error rate;
- :func:`one_coin_posterior`: P(y | answers), the label model as the prior and each
  answer as a one-coin annotator (right with its accuracy, else any other label evenly);
- :func:`label_indices`: labels as indices (-1 for an unknown or missing output).

The run object (:mod:`quorum.routing.quorum.router`) uses them for the final vote of items without
a human label (``label_model_vote``) and to rank the items that most likely carry a wrong
label for the human (``audit_rule="posterior"``, ``audit_rounds``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "fit_knn_strength",
    "knn_counts",
    "knn_error_rate",
    "knn_label_probs",
    "knn_neighbours",
    "label_indices",
    "one_coin_posterior",
]


def label_indices(outputs: Sequence[str | None], labels: Sequence[str]) -> np.ndarray:
    """Index of each output in ``labels``; -1 for None or an output not in ``labels``.

    >>> label_indices(["b", None, "z", "a"], ["a", "b"]).tolist()
    [1, -1, -1, 0]
    """
    pos = {y: j for j, y in enumerate(labels)}
    return np.array([pos.get(o, -1) if o is not None else -1 for o in outputs], dtype=int)


def knn_neighbours(
    space: np.ndarray, query: np.ndarray, ref: np.ndarray, k: int, chunk: int = 1024
) -> tuple[np.ndarray, np.ndarray]:
    """Cosine similarities (>= 0) and positions in ``ref`` of the k nearest reference rows
    of every query row (an item is never its own neighbour), ``chunk`` queries at a time.
    :func:`knn_label_probs` and :func:`knn_error_rate` take it as ``neighbours`` where the
    caller has it already (the same query and reference items, the same k)."""
    kk = min(k, len(ref))
    R = np.asarray(space[ref], dtype=np.float32)
    s_out = np.zeros((len(query), kk))
    nn_out = np.zeros((len(query), kk), dtype=int)
    for i in range(0, len(query), chunk):
        q = query[i : i + chunk]
        sims = np.asarray(space[q], dtype=np.float32) @ R.T
        sims[q[:, None] == ref[None, :]] = -np.inf
        nn = np.argpartition(-sims, kk - 1, axis=1)[:, :kk]
        s = np.take_along_axis(sims, nn, axis=1).astype(np.float64)
        s_out[i : i + chunk] = np.clip(np.where(np.isfinite(s), s, 0.0), 0.0, None)
        nn_out[i : i + chunk] = nn
    return s_out, nn_out


def knn_counts(
    space: np.ndarray,
    labelled: np.ndarray,
    y: np.ndarray,
    query: np.ndarray,
    n_labels: int,
    k: int,
    neighbours: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Similarity-weighted label counts (n, n_labels) of the k nearest labelled items."""
    s, nn = neighbours if neighbours is not None else knn_neighbours(space, query, labelled, k)
    c = np.zeros((len(query), n_labels))
    rows = np.repeat(np.arange(len(query)), nn.shape[1])
    np.add.at(c, (rows, y[nn].ravel()), s.ravel())
    return c, c.sum(axis=1, keepdims=True)


def knn_label_probs(
    space: np.ndarray,
    labelled: np.ndarray,
    y: np.ndarray,
    query: np.ndarray,
    n_labels: int,
    *,
    k: int = 10,
    strength: float = 2.0,
    neighbours: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """p_LM(y | x) for the rows ``query`` (n, n_labels).

    ``space`` holds unit-norm item vectors; ``labelled`` are the items with a human label
    ``y`` (label indices). p(y) = (sum_j s_j 1[y_j = y] + strength pi(y)) / (sum_j s_j +
    strength) over the k nearest labelled items (cosine similarities s_j clipped at 0),
    with pi the Beta(1)-smoothed frequency of each label among the human labels. Without
    labelled items, the uniform distribution.

    Examples
    --------
    >>> import numpy as np
    >>> space = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [0.8, 0.6]])
    >>> p = knn_label_probs(space, np.array([0, 1, 2, 3]), np.array([0, 0, 1, 1]),
    ...                     np.array([4]), 2, k=2, strength=1.0)
    >>> p.round(3).tolist()  # near the two items labelled 0
    [[0.808, 0.192]]
    """
    query = np.asarray(query, dtype=int)
    labelled = np.asarray(labelled, dtype=int)
    y = np.asarray(y, dtype=int)
    keep = y >= 0
    labelled, y = labelled[keep], y[keep]
    if len(labelled) == 0 or len(query) == 0:
        return np.full((len(query), n_labels), 1.0 / max(n_labels, 1))
    prior = (np.bincount(y, minlength=n_labels) + 1.0) / (len(y) + n_labels)
    c, tot = knn_counts(space, labelled, y, query, n_labels, k, neighbours)
    return (c + strength * prior[None, :]) / (tot + strength)


#: pseudo-counts tried by :func:`fit_knn_strength` (the last: the label frequencies only)
STRENGTH_GRID = (0.5, 2.0, 8.0, 32.0, 1e6)


def fit_knn_strength(
    space: np.ndarray,
    labelled: np.ndarray,
    y: np.ndarray,
    n_labels: int,
    *,
    k: int = 10,
    grid: tuple[float, ...] = STRENGTH_GRID,
    max_items: int = 2000,
    one_se: bool = False,
) -> float:
    """The ``strength`` of :func:`knn_label_probs` with the best leave-one-out
    log-likelihood of the human labels (at most ``max_items`` of them, the first ones).
    Where neighbours say nothing about the label the largest value wins, and the label
    model falls back to the label frequencies.

    ``one_se`` (ours, issue 38): the largest strength whose mean leave-one-out
    log-likelihood is within one standard error (of its paired difference per label) of
    the best one's, the one-standard-error rule: a handful of labels on features that say
    nothing about them (16 labels in a scripted team's run) no longer picks the
    neighbours by chance.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> space = np.repeat(np.eye(2), 20, axis=0)
    >>> fit_knn_strength(space, np.arange(40), np.repeat([0, 1], 20), 2, k=5)  # clusters
    0.5
    >>> fit_knn_strength(space, np.arange(40), rng.integers(0, 2, 40), 2, k=5)  # noise
    1000000.0
    """
    labelled = np.asarray(labelled, dtype=int)
    y = np.asarray(y, dtype=int)
    keep = y >= 0
    labelled, y = labelled[keep][:max_items], y[keep][:max_items]
    if len(labelled) < 5:
        return float(grid[-1])
    prior = (np.bincount(y, minlength=n_labels) + 1.0) / (len(y) + n_labels)
    c, tot = knn_counts(space, labelled, y, labelled, n_labels, k)
    rows = np.arange(len(y))
    best, best_ll = float(grid[-1]), -np.inf
    per: dict[float, np.ndarray] = {}
    for s in grid:
        p = (c[rows, y] + s * prior[y]) / (tot[:, 0] + s)
        per[float(s)] = np.log(np.clip(p, 1e-12, None))
        ll = float(per[float(s)].sum())
        if ll > best_ll + 1e-9:
            best, best_ll = float(s), ll
    if not one_se:
        return best
    for s in sorted(per, reverse=True):  # the simplest first: the label frequencies
        d = per[s] - per[best]
        if d.mean() >= -d.std(ddof=1) / np.sqrt(len(d)) - 1e-12:
            return s
    return best


def knn_error_rate(
    space: np.ndarray,
    judged: np.ndarray,
    is_error: np.ndarray,
    query: np.ndarray,
    *,
    k: int = 10,
    strength: float = 2.0,
    neighbours: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """e(x): the similarity-weighted share of errors among the k nearest ``judged`` items
    (human-checked answers of the LLM), shrunk towards its overall error rate with
    ``strength`` pseudo-neighbours. Without judged items, 0.5.

    Examples
    --------
    >>> import numpy as np
    >>> space = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0]])
    >>> knn_error_rate(space, np.array([0, 1, 2, 3]), np.array([0, 0, 1, 1]),
    ...                np.array([4]), k=2, strength=2.0).round(3).tolist()
    [0.75]
    """
    query = np.asarray(query, dtype=int)
    judged = np.asarray(judged, dtype=int)
    err = np.asarray(is_error, dtype=float)
    if len(judged) == 0:
        return np.full(len(query), 0.5)
    overall = (err.sum() + 1.0) / (len(err) + 2.0)
    if len(query) == 0:
        return np.zeros(0)
    s, nn = neighbours if neighbours is not None else knn_neighbours(space, query, judged, k)
    num = (s * err[nn]).sum(axis=1) + strength * overall
    return num / (s.sum(axis=1) + strength)


def one_coin_posterior(prior: np.ndarray, votes: np.ndarray, accuracy: np.ndarray) -> np.ndarray:
    """P(y | answers) with ``prior`` (n, L) as the prior and each answer as a one-coin
    annotator: ``votes`` (n, A) label indices (-1 = no answer), ``accuracy`` (n, A) or (A,)
    the chance each answer is right; a wrong answer is any other label, evenly.

    Examples
    --------
    >>> import numpy as np
    >>> prior = np.array([[0.5, 0.5], [0.9, 0.1]])
    >>> post = one_coin_posterior(prior, np.array([[1], [1]]), np.array([0.7]))
    >>> post.round(3).tolist()  # the answer wins over a flat prior, not over a sure one
    [[0.3, 0.7], [0.794, 0.206]]
    """
    prior = np.asarray(prior, dtype=float)
    votes = np.atleast_2d(np.asarray(votes, dtype=int))
    L = prior.shape[1]
    acc = np.broadcast_to(np.clip(np.asarray(accuracy, dtype=float), 1e-3, 1 - 1e-3), votes.shape)
    logp = np.log(np.clip(prior, 1e-12, None))
    for a in range(votes.shape[1]):
        v, q = votes[:, a], acc[:, a]
        has = v >= 0
        wrong = np.log((1.0 - q) / max(L - 1, 1))
        lik = np.repeat(wrong[:, None], L, axis=1)
        lik[has, v[has]] = np.log(q[has])
        logp += np.where(has[:, None], lik, 0.0)
    logp -= logp.max(axis=1, keepdims=True)
    p = np.exp(logp)
    return p / p.sum(axis=1, keepdims=True)
