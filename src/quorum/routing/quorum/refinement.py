"""Phase 3's pick of the next item: the open item with the highest priority P_t.

The priorities are the pure rules :func:`refinement_priority` and
:func:`leftover_priority`; the loop that uses them is :mod:`~quorum.routing.quorum.phase3`.

``np.argmax(np.where(open, prio, -inf))`` on every pick costs O(T) a pick, O(T^2) a run.
:class:`PriorityQueue` gives the same item (the highest priority, ties to the lowest item
index, as ``np.argmax``) in O(log T): a binary heap of (-priority, item) entries where an
entry is stale, and skipped, once its item has closed or its priority has changed.
"""

from __future__ import annotations

import heapq

import numpy as np


def refinement_priority(
    difficulty: np.ndarray, delta: np.ndarray, has_human: np.ndarray
) -> np.ndarray:
    """P_t = D_t + Delta_t + 1(no human label) (paper, phase 3).

    >>> refinement_priority(np.array([0.1, 0.1]), np.array([0.5, 0.0]), np.array([0.0, 1.0]))
    array([1.6, 0.1])
    """
    return difficulty + delta + (1.0 - has_human)


def leftover_priority(difficulty: np.ndarray, agreement: np.ndarray) -> np.ndarray:
    """Priority of a settled item for a leftover human label: D_t + 1 - agreement (ours).

    >>> leftover_priority(np.array([0.2, 0.2]), np.array([1.0, 0.5])).tolist()
    [0.2, 0.7]
    """
    return difficulty + (1.0 - agreement)


class PriorityQueue:
    """The open items of ``prio`` (a float array the caller owns), highest priority first.

    The caller changes ``prio[t]`` and then calls :meth:`push` (item t has a new
    priority), :meth:`close` (item t is done) or :meth:`rebuild` (every open item has a
    new priority). Priorities must not be NaN. A rebuild sorts the open items once (numpy);
    later changes go to a small heap; :meth:`top` takes the better head of the two.

    >>> prio = np.array([0.5, 2.0, 2.0, 1.0])
    >>> queue = PriorityQueue(prio, np.ones(4, dtype=bool))
    >>> queue.top(), len(queue)
    (1, 4)
    >>> queue.close(1); queue.top()
    2
    >>> prio[0] = 3.0; queue.push(0); queue.top()
    0
    """

    def __init__(self, prio: np.ndarray, open_: np.ndarray) -> None:
        self.prio = prio
        self.open = open_
        self.n_open = int(open_.sum())
        self.rebuild()

    def __len__(self) -> int:
        return self.n_open

    def rebuild(self) -> None:
        """Every open item has a new priority."""
        idx = np.flatnonzero(self.open)
        order = np.lexsort((idx, -self.prio[idx]))
        self._sorted_item = idx[order].tolist()
        self._sorted_neg = (-self.prio[idx[order]]).tolist()
        self._head = 0
        self._heap: list[tuple[float, int]] = []

    def push(self, t: int) -> None:
        """Open item t has a new priority ``prio[t]``."""
        heapq.heappush(self._heap, (-float(self.prio[t]), t))

    def close(self, t: int) -> None:
        """Item t leaves the queue (its stale entries are dropped as they surface)."""
        if self.open[t]:
            self.open[t] = False
            self.n_open -= 1

    def _live(self, neg: float, t: int) -> bool:
        return bool(self.open[t]) and -neg == self.prio[t]

    def top(self) -> int:
        """The open item with the highest priority (the lowest index among ties)."""
        items, negs = self._sorted_item, self._sorted_neg
        i = self._head
        while i < len(items) and not self._live(negs[i], items[i]):
            i += 1
        self._head = i
        heap = self._heap
        while heap and not self._live(*heap[0]):
            heapq.heappop(heap)
        best = (negs[i], items[i]) if i < len(items) else None
        if heap and (best is None or heap[0] < best):
            best = heap[0]
        if best is None:
            raise IndexError("no open item")
        return best[1]
