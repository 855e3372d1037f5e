"""The decision trace every router writes, kept column by column.

The one trace format of QUORUM, the paper preset (:mod:`~quorum.routing.paper.router`) and the
baselines (:mod:`quorum.baselines`, through :func:`quorum.baselines._common.item_trace`).
One row per decision (QUORUM: calibration call, phase-2 route, extra annotation, leftover
human label; a baseline: one row per item, where its rule sent it), in the order decided:

- ``step`` (1, 2, ...), ``phase``, ``item_id``, ``arm`` (the annotator the item went to;
  ``"-"``: none affordable), ``mode`` (why: ``explore``, ``exploit``, ``calibration``,
  ``escalate``, ``keep``, ...), ``price`` (of that arm);
- QUORUM's context: ``epsilon`` (epsilon_t), ``b_t``, ``p_t``, ``budget_left`` (money left)
  and ``priority`` (phase 3's P_t); NaN where a router has none (the baselines);
- the score a baseline decided on, each column only where some row has it:
  ``priority`` (SANT's score), ``uncertainty`` (CoAnnotating, HyPAC), ``confidence``
  (CoAnnotating, CDI, ARAIDA), ``p_human`` (CDI's sampling probability pi_t);
- ``q:<llm>``: every LLM's q_a(x_t), where the decision looked at them.

A list of one dict per row costs about 1 kB a row (2-3 GB for a million items); numbers
here sit in typed arrays (8 bytes each) and strings in lists of shared references.

:meth:`DecisionTrace.frame` gives the DataFrame that ``pd.DataFrame(list_of_row_dicts)``
gave before (same columns, order, values and dtypes; tests/test_routing_scale.py checks).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence

import numpy as np
import pandas as pd

_NAN = math.nan

#: the optional score columns, in the order the frame writes them (after ``priority``)
SCORES = ("uncertainty", "confidence", "p_human")


class DecisionTrace:
    """Append-only decision log of one run; ``llm_names`` name the ``q:<llm>`` columns."""

    def __init__(self, llm_names: Sequence[str]) -> None:
        self.llm_names = list(llm_names)
        self.step = array("q")
        self.phase: list[str] = []
        self.item_id: list[str] = []
        self.arm: list[str] = []
        self.mode: list[str] = []
        self.epsilon = array("d")
        self.b_t = array("d")
        self.p_t = array("d")
        self.price = array("d")
        self.budget_left = array("d")
        self.priority = array("d")
        self.q = array("d")  # len(llm_names) values per row, NaN where not looked at
        self.scores: dict[str, array] = {}  # SCORES given so far, NaN-padded to their rows
        self._any_priority = False
        self._any_q = False
        self._no_q = [_NAN] * len(self.llm_names)

    def __len__(self) -> int:
        return len(self.step)

    def append(
        self,
        phase: str,
        item_id: str,
        arm: str,
        mode: str,
        epsilon: float,
        b_t: float,
        p_t: float,
        price: float,
        budget_left: float,
        priority: float | None = None,
        q: Sequence[float] | np.ndarray | None = None,
        *,
        uncertainty: float | None = None,
        confidence: float | None = None,
        p_human: float | None = None,
    ) -> None:
        """One decision; its step is the number of rows so far + 1."""
        step = len(self) + 1
        if uncertainty is not None or confidence is not None or p_human is not None:
            given = (uncertainty, confidence, p_human)
            for name, v in zip(SCORES, given, strict=True):
                if v is not None:
                    col = self.scores.setdefault(name, array("d"))
                    col.extend([_NAN] * (step - 1 - len(col)))
                    col.append(v)
        self.step.append(step)
        self.phase.append(phase)
        self.item_id.append(item_id)
        self.arm.append(arm)
        self.mode.append(mode)
        self.epsilon.append(epsilon)
        self.b_t.append(b_t)
        self.p_t.append(p_t)
        self.price.append(price)
        self.budget_left.append(budget_left)
        if priority is None:
            self.priority.append(_NAN)
        else:
            self._any_priority = True
            self.priority.append(priority)
        if q is None:
            self.q.extend(self._no_q)
        else:
            if len(q) != len(self.llm_names):
                raise ValueError(f"{len(q)} q values for {len(self.llm_names)} LLMs")
            self._any_q = True
            self.q.extend([float(v) for v in q])

    def extend(
        self,
        phase: Sequence[str],
        item_id: Sequence[str],
        arm: Sequence[str],
        mode: Sequence[str],
        price: np.ndarray,
        priority: np.ndarray | None = None,
        *,
        epsilon: np.ndarray | None = None,
        b_t: np.ndarray | None = None,
        p_t: np.ndarray | None = None,
        budget_left: np.ndarray | None = None,
        q: np.ndarray | None = None,
        **scores: np.ndarray,
    ) -> None:
        """Many decisions at once, one per entry of the (equally long) columns, the rows
        :meth:`append` would write one by one. A column not given is NaN (a baseline's
        rows have no epsilon, b_t, p_t, money left or q); ``q`` is (n, K).
        ``scores``: some of :data:`SCORES`."""
        n, start = len(item_id), len(self)
        unknown = set(scores) - set(SCORES)
        if unknown:
            raise ValueError(f"unknown score columns {sorted(unknown)}; known: {SCORES}")
        self.step.frombytes(np.arange(start + 1, start + n + 1, dtype=np.int64).tobytes())
        self.phase.extend(phase)
        self.item_id.extend(item_id)
        self.arm.extend(arm)
        self.mode.extend(mode)
        nan = np.full(n, _NAN).tobytes()
        given = {"epsilon": epsilon, "b_t": b_t, "p_t": p_t, "budget_left": budget_left}
        for name, values in given.items():
            col = nan if values is None else np.asarray(values, dtype=np.float64).tobytes()
            getattr(self, name).frombytes(col)
        self.price.frombytes(np.asarray(price, dtype=np.float64).tobytes())
        if priority is None:
            self.priority.frombytes(nan)
        else:  # no rows (e.g. a compiled phase 3 with no pick) leave the column as it was
            self._any_priority = self._any_priority or n > 0
            self.priority.frombytes(np.asarray(priority, dtype=np.float64).tobytes())
        if q is None:
            self.q.frombytes(np.full(n * len(self.llm_names), _NAN).tobytes())
        else:
            q = np.ascontiguousarray(q, dtype=np.float64)
            if q.shape != (n, len(self.llm_names)):
                raise ValueError(f"q has shape {q.shape}, expected {(n, len(self.llm_names))}")
            self._any_q = self._any_q or n > 0
            self.q.frombytes(q.tobytes())
        for name, values in scores.items():
            col = self.scores.setdefault(name, array("d"))
            col.extend([_NAN] * (start - len(col)))
            col.frombytes(np.asarray(values, dtype=np.float64).tobytes())

    def frame(self) -> pd.DataFrame:
        """The trace as a DataFrame (empty, without columns, when nothing was logged)."""
        n = len(self)
        if n == 0:
            return pd.DataFrame([])
        cols: dict[str, object] = {
            "step": np.frombuffer(self.step, dtype=np.int64).copy(),
            "phase": self.phase,
            "item_id": self.item_id,
            "arm": self.arm,
            "mode": self.mode,
        }
        for name in ("epsilon", "b_t", "p_t", "price", "budget_left"):
            cols[name] = np.frombuffer(getattr(self, name), dtype=np.float64).copy()
        if self._any_priority:
            cols["priority"] = np.frombuffer(self.priority, dtype=np.float64).copy()
        else:  # no row had a priority: a column of None, as a list of dicts gives
            cols["priority"] = np.full(n, None, dtype=object)
        for name in SCORES:
            if name in self.scores:
                col = np.full(n, _NAN)
                got = np.frombuffer(self.scores[name], dtype=np.float64)
                col[: len(got)] = got
                cols[name] = col
        if self._any_q:
            q = np.frombuffer(self.q, dtype=np.float64).reshape(n, len(self.llm_names))
            for k, a in enumerate(self.llm_names):
                cols[f"q:{a}"] = q[:, k].copy()
        return pd.DataFrame(cols)
