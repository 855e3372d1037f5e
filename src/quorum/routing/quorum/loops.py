"""Which loops a run takes, decided in one place: the Python loops (the reference path) or
their compiled twin (:mod:`~quorum.routing.quorum.compiled`).

The compiled steps apply in replay, where a source's answers are fixed and known as integer
codes (``fixed_outputs``), with ``loop_backend="numba"``, a task kind whose outputs the
compiled steps can hold (``TaskKind.compiled_outputs``: labels compared by equality, or
label sets as bitmasks, ``TaskKind.output_bitmasks``), the numba posteriors, no arm
liveness checks and no earlier outcomes (a live pass resumed). Everywhere else every step
is Python. A rule takes its compiled twin only where it has one (``compiled`` on the rule classes of
:mod:`~quorum.routing.quorum.phase2` and :mod:`~quorum.routing.quorum.phase3`); phase 2's
also needs no ``pessimism`` and a limit whose nano-units turn into floats exactly. Every
step then asks :attr:`QuorumRun.loops <quorum.routing.quorum.run.QuorumRun.loops>`, never
the conditions themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from quorum.routing.quorum.compiled.coded_sets import MAX_ANSWERS
from quorum.routing.quorum.compiled.fixed_answers import AnswerCodes, answer_codes

__all__ = ["EXACT_UNITS", "Loops", "choose_loops"]

#: integer units below 2**53 turn into floats exactly (Budget.remaining divides ints)
EXACT_UNITS = 2**53


@dataclass(frozen=True)
class Loops:
    """The loops of one run.

    Attributes
    ----------
    fixed : the source's answers as codes where the compiled steps apply, else None.
    phase2 : whether phase 2 may run compiled (for a rule that has a compiled twin).
    """

    fixed: AnswerCodes | None = None
    phase2: bool = False

    @property
    def compiled(self) -> bool:
        """Whether the compiled steps apply at all (calibration's calls, rewards, phase 3)."""
        return self.fixed is not None


def choose_loops(run: Any) -> Loops:
    """The loops of ``run`` (a :class:`~quorum.routing.quorum.run.QuorumRun`; the module
    docstring); looks the fixed answers up once."""
    cfg = run.cfg
    posts = [*run.arms.post.values(), run.arms.post_h]
    form = run.kind.compiled_outputs
    python = (
        cfg.loop_backend != "numba"
        or form is None
        or run.spend.checks_liveness
        or run.rec.has_prior
        or not all(p.compiled for p in posts)
    )
    if python:
        return Loops()
    fixed = answer_codes(run.rec.source, run.ids, [*run.llm_names, run.human])
    if fixed is None:
        return Loops()
    if form == "label_sets":  # each output's set as a bitmask, or the Python loops
        bits = run.kind.output_bitmasks(fixed.labels)
        if bits is None or run.K + 1 > MAX_ANSWERS:
            return Loops()
        fixed = fixed.with_bitmasks(bits)
    phase2 = cfg.pessimism == 0 and run.budget.limit_units < EXACT_UNITS
    return Loops(fixed, phase2)
