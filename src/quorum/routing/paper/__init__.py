"""QUORUM as the authors' code runs it (``--method quorum-paper``, docs/paper-preset.md).

Modules:

- ``router``: QUORUM as the authors' code runs it (``--method quorum-paper``).
- ``rules``: The paper preset's rules (``--method quorum-paper``), each a pure function: the
  authors' code (amazon-science/QUORUM) read rule by rule; no text of that code is used. The run
  that applies them is :mod:`~quorum.routing.paper.run`; the estimator and the list of where the
  code and the paper differ, :mod:`~quorum.routing.paper.router`.
- ``run``: The state and steps of one paper-preset run (:class:`PaperRun`): the authors' code's
  dollars loop (calibration, routing, refinement) and auditor split, over the rules of
  :mod:`~quorum.routing.paper.rules`. Set-up, trace and result come from the shared run core
  (:mod:`~quorum.routing.core.run_core`, :class:`~quorum.routing.core.trace.DecisionTrace`).
- ``votes``: The paper preset's votes: the authors' code's per-item annotation list, in order,
  and what it keeps up to date from it (usable count, human label, consensus, Delta_t), then the
  final output of an item (weighted vote; summaries: nearest the unweighted centroid).
"""
