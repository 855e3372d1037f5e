"""Fixed answers: a replay source's answers as integer codes, for the compiled loops.

A replay source (:class:`~quorum.routing.replay.RecordedSource`, the scale benchmark's
array source) answers every (item, annotator) the same whenever it is asked, at the
annotator's price. Such a source may say so with ``fixed_outputs(annotator, item_ids)``:
the outputs ``annotate`` would return, ``None`` where the answer is not usable (a paid
call with status ``"unparseable"``, never ``"failed"`` or ``"pending"``). The router's
compiled loops (:mod:`~quorum.routing.phase3_loop`) then read an answer from
:class:`AnswerCodes` at the moment they buy it, and the recorder records the same calls
afterwards, in the same order; a live source has no ``fixed_outputs`` and is always
routed by the Python loops.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["AnswerCodes", "answer_codes"]

#: the code of "no usable output"
NO_OUTPUT = -1


@dataclass(frozen=True)
class AnswerCodes:
    """``codes[t, a]``: the label code of annotator a's answer on item t (``NO_OUTPUT``
    where it is not usable); equal codes are equal outputs. ``prices[a]``: what a call
    costs (the price reserved is the price paid)."""

    codes: np.ndarray
    prices: np.ndarray
    labels: list[str]


def answer_codes(source, item_ids: Sequence[str], annotators: Sequence[str]) -> AnswerCodes | None:
    """The fixed answers of ``annotators`` on ``item_ids`` as codes, or None when the
    source does not declare fixed answers (live sources)."""
    fixed = getattr(source, "fixed_outputs", None)
    if not callable(fixed):
        return None
    ids = list(item_ids)
    code_of: dict[str, int] = {}
    codes = np.full((len(ids), len(annotators)), NO_OUTPUT, dtype=np.int32)
    for a, name in enumerate(annotators):
        outs = fixed(name, ids)
        codes[:, a] = [
            NO_OUTPUT if y is None else code_of.setdefault(y, len(code_of)) for y in outs
        ]
    prices = np.array([float(source.price(a)) for a in annotators])
    return AnswerCodes(codes, prices, list(code_of))
