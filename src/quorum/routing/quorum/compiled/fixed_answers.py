"""Fixed answers: a replay source's answers as integer codes, for the compiled loops.

A replay source (:class:`~quorum.routing.core.replay.RecordedSource`, the scale benchmark's
array source) answers every (item, annotator) the same whenever it is asked, at the
annotator's price. Such a source may say so with ``fixed_outputs(annotator, item_ids)``:
the outputs ``annotate`` would return, ``None`` where the answer is not usable (a paid
call with status ``"unparseable"``, never ``"failed"`` or ``"pending"``). The router's
compiled loops (:mod:`~quorum.routing.quorum.compiled.phase3_loop`) then read an answer from
:class:`AnswerCodes` at the moment they buy it, and the recorder records the same calls
afterwards, in the same order; a live source has no ``fixed_outputs`` and is always
routed by the Python loops.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from quorum.routing.core.base import Outcome
from quorum.routing.core.budget import to_units

__all__ = ["AnswerCodes", "answer_codes", "gc_paused"]

#: the code of "no usable output"
NO_OUTPUT = -1


@dataclass(frozen=True)
class AnswerCodes:
    """``codes[t, a]``: the label code of annotator a's answer on item t (``NO_OUTPUT``
    where it is not usable); equal codes are equal outputs. ``prices[a]``: what a call
    costs (the price reserved is the price paid). ``labels[c]``: the output of code c.

    For a kind whose outputs are label sets (``compiled_outputs = "label_sets"``)
    :meth:`with_bitmasks` adds ``bits[c]``, the set of code c as an int64 bitmask, and
    ``text_rank[c]``, code c's place among the outputs' strings in Python's sort order
    (the order in which :class:`~quorum.tasks.multilabel.LabelSetVote` sums an item's
    answers); both are None for labels."""

    codes: np.ndarray
    prices: np.ndarray
    labels: list[str]
    bits: np.ndarray | None = None
    text_rank: np.ndarray | None = None

    def with_bitmasks(self, bits: np.ndarray) -> AnswerCodes:
        """These codes with each output's bitmask ``bits[c]`` and its string's rank."""
        rank = np.empty(len(self.labels), dtype=np.int64)
        rank[sorted(range(len(self.labels)), key=self.labels.__getitem__)] = np.arange(
            len(self.labels), dtype=np.int64
        )
        return replace(self, bits=np.asarray(bits, dtype=np.int64), text_rank=rank)

    @property
    def price_units(self) -> np.ndarray:
        """``prices`` in the budget's integer nano-units."""
        return np.array([to_units(p) for p in self.prices], dtype=np.int64)

    def outcomes(
        self, ids: list[str], t_of: np.ndarray, arm_of: np.ndarray, names: list[str]
    ) -> list[Outcome]:
        """The outcomes the source gives for the calls (item ``t_of[i]`` with id
        ``ids[i]``, arm ``arm_of[i]`` named ``names[i]``): the output where it is usable,
        else status "unparseable"; the cost is the price."""
        codes = self.codes[t_of, arm_of].tolist()
        cost = self.prices[arm_of].tolist()
        labels = self.labels
        return [
            Outcome(i, a, labels[y], c, "ok") if y >= 0 else Outcome(i, a, None, c, "unparseable")
            for i, a, y, c in zip(ids, names, codes, cost, strict=True)
        ]


def answer_codes(source, item_ids: Sequence[str], annotators: Sequence[str]) -> AnswerCodes | None:
    """The fixed answers of ``annotators`` on ``item_ids`` as codes, or None when the
    source does not declare fixed answers (live sources)."""
    fixed = getattr(source, "fixed_outputs", None)
    if not callable(fixed):
        return None
    ids = list(item_ids)
    outs = np.empty((len(annotators), len(ids)), dtype=object)
    for a, name in enumerate(annotators):
        outs[a] = fixed(name, ids)
    # one code per distinct output (pandas' hash table; None -> -1)
    flat, labels = pd.factorize(outs.ravel(), use_na_sentinel=True)
    codes = np.ascontiguousarray(flat.reshape(len(annotators), len(ids)).T, dtype=np.int32)
    prices = np.array([float(source.price(a)) for a in annotators])
    return AnswerCodes(codes, prices, list(labels))


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off, then as it was. Recording a million replayed
    calls at once allocates millions of objects without cycles (outcomes, log entries);
    the collections they set off walk every live object again and again (4 of 10.7 CPU s
    of phase 2 at a million items), so the compiled steps record with the collector
    paused. Reference counting still frees everything as usual."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
