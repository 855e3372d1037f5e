"""A linear part-of-speech tagger over hashed token features, distilled from spaCy's tags.

Used by :mod:`quorum.features.fast_linguistic` (the ``fast`` feature profile): trained on
the tags that the full spaCy pipeline gives a sample of the texts, it tags the rest.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: spaCy token attributes read for each token, in this column order
TOKEN_ATTRS = ("ORTH", "LOWER", "LENGTH", "SHAPE", "PREFIX", "SUFFIX")
ORTH, LOWER, LENGTH, SHAPE, PREFIX, SUFFIX = range(6)


class HashedTagger:
    """Linear part-of-speech tagger over hashed token features (sklearn ``SGDClassifier``).

    Features of token i: lower-cased form of tokens i-1, i, i+1; shape, prefix and suffix of
    token i; suffix of token i-1. Each is hashed into ``n_buckets`` one-hot columns.
    ``epochs`` passes of hinge-loss SGD with L2 penalty ``alpha``; ``seed`` fixes the
    shuffling, so the same tokens give the same tagger. ``n_jobs`` threads fit the
    one-vs-rest problems (one per tag; -1: every core): scikit-learn draws their seeds
    before it splits them, so the tagger is the same for any ``n_jobs``.
    """

    def __init__(
        self,
        n_buckets: int = 2**18,
        epochs: int = 10,
        alpha: float = 1e-5,
        seed: int = 0,
        n_jobs: int | None = -1,
    ) -> None:
        self.n_buckets = n_buckets
        self.epochs = epochs
        self.alpha = alpha
        self.seed = seed
        self.n_jobs = n_jobs

    def _hashed(self, arr: np.ndarray) -> np.ndarray:
        """(n_tokens, 7) bucket indices of one document's tokens (``arr`` as ``TOKEN_ATTRS``)."""
        a = arr.astype(np.uint64, copy=False)

        def shift(col: np.ndarray, by: int) -> np.ndarray:
            """col moved ``by`` places (positive: the token before), zero-padded."""
            z = np.zeros(abs(by), dtype=np.uint64)
            if len(col) <= abs(by):
                return np.zeros(len(col), dtype=np.uint64)
            return np.concatenate([z, col[:-by]]) if by > 0 else np.concatenate([col[-by:], z])

        lower, shape, suffix = a[:, LOWER], a[:, SHAPE], a[:, SUFFIX]
        cols = (
            a[:, ORTH],
            lower,
            shift(lower, 1),
            shift(lower, -1),
            shift(lower, 2),
            shift(lower, -2),
            shape,
            shift(shape, 1),
            shift(shape, -1),
            a[:, PREFIX],
            suffix,
            shift(suffix, 1),
            shift(suffix, -1),
        )
        out = np.empty((len(a), len(cols)), dtype=np.int64)
        b = np.uint64(self.n_buckets)
        with np.errstate(over="ignore"):
            for j, c in enumerate(cols):
                out[:, j] = ((c * np.uint64(2 * j + 1_000_003)) + np.uint64(j)) % b
        return out

    def fit(self, arrays: Sequence[np.ndarray], tags: Sequence[np.ndarray]) -> HashedTagger:
        """Learn from documents' token arrays and their POS ids (one array per document)."""
        import scipy.sparse as sp
        from sklearn.linear_model import SGDClassifier

        feats = np.concatenate([self._hashed(a) for a in arrays if len(a)])
        y = np.concatenate([t for a, t in zip(arrays, tags, strict=True) if len(a)])
        classes = np.unique(y)
        if len(classes) < 2:  # nothing to learn: always the one tag seen
            self.classes_ = classes.astype(np.uint64)
            self.weights_ = np.zeros((self.n_buckets, 1), dtype=np.float32)
            self.bias_ = np.zeros(1, dtype=np.float32)
            return self
        rows = np.repeat(np.arange(len(feats)), feats.shape[1])
        x = sp.csr_matrix(
            (np.ones(feats.size, dtype=np.float64), (rows, feats.ravel())),
            shape=(len(feats), self.n_buckets),
        )
        clf = SGDClassifier(
            loss="hinge", alpha=self.alpha, max_iter=self.epochs, tol=None,
            random_state=self.seed, n_jobs=self.n_jobs,
        )  # fmt: skip
        clf.fit(x, y.astype(np.int64))
        self.classes_ = clf.classes_.astype(np.uint64)
        self.weights_ = np.ascontiguousarray(clf.coef_.T, dtype=np.float32)
        self.bias_ = clf.intercept_.astype(np.float32)
        return self

    def predict(self, arr: np.ndarray) -> np.ndarray:
        """POS ids (uint64, spaCy's ``POS`` values) of one document's tokens."""
        return self.predict_many([arr])[0]

    def predict_many(self, arrays: Sequence[np.ndarray], chunk: int = 200_000) -> list[np.ndarray]:
        """:meth:`predict` of many documents, scored ``chunk`` tokens at a time."""
        lengths = [len(a) for a in arrays]
        if not sum(lengths):
            return [np.zeros(0, dtype=np.uint64) for _ in arrays]
        feats = np.concatenate([self._hashed(a) for a in arrays if len(a)])
        tags = np.empty(len(feats), dtype=np.uint64)
        for s in range(0, len(feats), chunk):
            part = feats[s : s + chunk]
            scores = np.broadcast_to(self.bias_, (len(part), len(self.bias_))).copy()
            for j in range(part.shape[1]):
                scores += self.weights_[part[:, j]]
            tags[s : s + chunk] = self.classes_[np.argmax(scores, axis=1)]
        return np.split(tags, np.cumsum(lengths)[:-1])
