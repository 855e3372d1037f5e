"""The context x_t each arm was asked with, and whether it has had its reward.

An arm learns from an item only once the item settles, with the context it was asked
with. A dict ``(t, arm) -> x`` costs ~350 bytes per call (key tuple, array object, data);
here the contexts are rows of one growing float64 buffer, found through a (T, arms) index
array, and "rewarded" is a boolean array.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class AskedContexts:
    """x_t per (item, arm) for ``n_items`` items and the arms ``arms`` (names).

    >>> ctx = AskedContexts(3, ["gpt", "human"], dim=2)
    >>> ctx.put(1, "human", np.array([0.5, 1.0]))
    >>> ctx.has(1, "human"), ctx.has(1, "gpt"), ctx.has(1, "someone else")
    (True, False, False)
    >>> ctx.get(1, "human").tolist()
    [0.5, 1.0]
    """

    def __init__(self, n_items: int, arms: Sequence[str], dim: int) -> None:
        self.col = {a: j for j, a in enumerate(arms)}
        self.dim = dim
        self._row = np.full((n_items, len(self.col)), -1, dtype=np.int64)
        self._rewarded = np.zeros((n_items, len(self.col)), dtype=bool)
        self._buf = np.empty((max(16, n_items), dim))
        self._n = 0

    # -- the arrays, as the compiled loops read and fill them in place -------------
    @property
    def row_of(self) -> np.ndarray:
        """(T, arms) buffer row of each (item, arm) asked; -1: not asked."""
        return self._row

    @property
    def buffer(self) -> np.ndarray:
        """The contexts x_t, one row each (rows ``[0, rows)`` in use; :meth:`reserve`
        makes room ahead)."""
        return self._buf

    @property
    def rewarded_mask(self) -> np.ndarray:
        """(T, arms): whether the arm has had its reward on the item."""
        return self._rewarded

    @property
    def rows(self) -> int:
        """Rows of :attr:`buffer` in use."""
        return self._n

    @rows.setter
    def rows(self, n: int) -> None:
        """After a compiled step filled rows of the reserved buffer in place."""
        if not 0 <= n <= len(self._buf):
            raise ValueError(f"rows {n} outside the buffer's {len(self._buf)}")
        self._n = int(n)

    def put(self, t: int, arm: str, x: np.ndarray) -> None:
        """Arm ``arm`` was asked about item ``t`` with context ``x`` (a later call replaces)."""
        j = self.col[arm]
        r = int(self._row[t, j])
        if r < 0:
            if self._n == len(self._buf):
                grown = np.empty((2 * len(self._buf), self.dim))
                grown[: self._n] = self._buf[: self._n]
                self._buf = grown
            r = self._n
            self._n += 1
            self._row[t, j] = r
        self._buf[r] = x

    def reserve(self, n: int) -> None:
        """Room for ``n`` more contexts without growing (the compiled loops write rows
        into the buffer themselves)."""
        if self._n + n > len(self._buf):
            grown = np.empty((self._n + n, self.dim))
            grown[: self._n] = self._buf[: self._n]
            self._buf = grown

    def put_many(self, items: np.ndarray, cols: np.ndarray, X: np.ndarray) -> None:
        """:meth:`put` of each (item ``items[i]``, arm column ``cols[i]``, ``X[i]``) in turn.

        >>> ctx = AskedContexts(3, ["gpt", "human"], dim=1)
        >>> ctx.put_many(np.array([2, 0]), np.array([1, 0]), np.array([[0.5], [0.25]]))
        >>> ctx.get(2, "human").tolist(), ctx.get(0, "gpt").tolist(), ctx.has(0, "human")
        ([0.5], [0.25], False)
        """
        items = np.asarray(items, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        start, stop = self._n, self._n + len(items)
        rows = np.arange(start, stop)
        fresh = not (self._row[items, cols] >= 0).any()
        if fresh:  # a pair twice among them reads back another row
            self._row[items, cols] = rows
            fresh = bool((self._row[items, cols] == rows).all())
            if not fresh:
                self._row[items, cols] = -1
        if not fresh:  # a pair asked again: replace in turn
            names = list(self.col)
            for t, j, x in zip(items.tolist(), cols.tolist(), X, strict=True):
                self.put(t, names[j], x)
            return
        if stop > len(self._buf):
            size = len(self._buf)
            while size < stop:
                size *= 2
            grown = np.empty((size, self.dim))
            grown[:start] = self._buf[:start]
            self._buf = grown
        self._buf[start:stop] = X
        self._n = stop

    def has(self, t: int, arm: str) -> bool:
        j = self.col.get(arm)
        return j is not None and bool(self._row[t, j] >= 0)

    def get(self, t: int, arm: str) -> np.ndarray:
        """The context (a view: copy it to keep it past the next :meth:`put`)."""
        r = int(self._row[t, self.col[arm]])
        if r < 0:
            raise KeyError((t, arm))
        return self._buf[r]

    def unrewarded(self, t: int, arm: str) -> np.ndarray | None:
        """The context of ``arm`` on item ``t`` if it was asked and has not had its
        reward yet (a view, as :meth:`get`), else None: has, rewarded and get in one."""
        j = self.col.get(arm)
        if j is None or self._rewarded[t, j]:
            return None
        r = self._row[t, j]
        return None if r < 0 else self._buf[r]

    def rewarded(self, t: int, arm: str) -> bool:
        j = self.col.get(arm)
        return j is not None and bool(self._rewarded[t, j])

    def mark_rewarded(self, t: int, arm: str) -> None:
        self._rewarded[t, self.col[arm]] = True
