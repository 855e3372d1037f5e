"""The compiled twin (numba) of the dollars setting's per-item loops, for replay.

The flow chooses Python or compiled steps in one place
(:func:`~quorum.routing.quorum.loops.choose_loops`); the Python loops are the
reference.

Modules:

- ``coded_answers``: An item's answers as integer codes, compiled (numba): the weighted vote,
  its agreement, Delta_t and the contexts x_t, as the Python steps compute them from the
  answers' strings.
- ``coded_sets``: Label-set answers as int64 bitmasks, compiled (numba): the per-label
  weighted vote, its agreement, Delta_t and the Jaccard similarity of
  :class:`~quorum.tasks.multilabel.LabelSetVote`, for kinds whose ``compiled_outputs`` is
  "label_sets".
- ``coded_rewards``: Rewards over integer-coded answers, compiled (numba):
  :func:`~quorum.routing.quorum.rewards. settle` for labels, and the posterior update it makes.
- ``fixed_answers``: Fixed answers: a replay source's answers as integer codes, for the compiled
  loops.
- ``kernels``: Compiled kernels (numba) of the Bayesian linear posterior's per-decision
  arithmetic.
- ``phase2_loop``: Phase 2 in one compiled call: every routing decision of
  :func:`~quorum.routing.quorum.phase2.route_rest` under
  :class:`~quorum.routing.quorum.phase2.LagrangianRule`, then what the Python loop would have
  written (contexts asked, m_t, trace, calls).
- ``phase3_kernel``: Phase 3's refinement loop, compiled (numba):
  :func:`~quorum.routing.quorum.phase3.refine` with
  :class:`~quorum.routing.quorum.phase3.ValueRule`, over integer-coded answers, for a source
  with fixed answers. Read :func:`refine_loop` top to bottom; each step is the Python loop's, in
  its order, with the same float operations:
- ``phase3_loop``: Phase 3 in one compiled call: when it applies, the arrays it needs, and what
  it hands back to the run (the recorder, the posteriors, the contexts asked, the trace).
"""
