"""QUORUM's router (paper, sec. 3 and Algorithms 1-2), one concept per module.

Read ``router`` (the estimator and its hyperparameters), then ``flow`` (Algorithms 1 and 2 top
to bottom, each node a named step); ``run`` holds a run's state, split by concept.

- ``audit/``: The audit path: the cheapest LLM on every item, humans on its likeliest errors.
- ``compiled/``: The compiled twin (numba) of the dollars setting's per-item loops, for replay.

Modules:

- ``answers``: A QUORUM run's answers and votes: what each item got, its aggregate and
  disagreement.
- ``arms``: A QUORUM run's arm models: the contexts x_t, every arm's posterior, the exploration
  schedule and which items have given their rewards.
- ``asked``: The context x_t each arm was asked with, and whether it has had its reward.
- ``calibration``: Calibration: which items, how many, and what the calibration answers say
  about the panel.
- ``final_labels``: The last step of a QUORUM run: every item's final label, and the result.
- ``flow``: QUORUM's flow: the paper's Algorithms 1 (dollars) and 2 (auditor) with our plans as
  named steps. Read :func:`dollars` and :func:`auditor` top to bottom; each branch names the
  step (and the module) that decides it. docs/architecture.md has the same tree as a table.
- ``loops``: Which loops a run takes, decided in one place: the Python loops (the reference
  path) or their compiled twin (:mod:`~quorum.routing.quorum.compiled`).
- ``params``: QUORUM's hyperparameters as one validated, immutable object.
- ``phase2``: Phase 2 of the dollars setting: every item not calibrated, in a random order, goes
  to one arm (QUORUM's "routing" step, Algorithm 1 line 7-15).
- ``phase3``: Phase 3 of the dollars setting: refinement ("extra annotations", Algorithm 1 line
  16-24) and the leftover human labels.
- ``policy``: How QUORUM picks an arm for one item: the routing rules, as pure functions.
- ``posterior``: Bayesian linear-regression posterior over an annotator's quality, theta_a ~
  N(mu_a, Sigma_a).
- ``refinement``: Phase 3's pick of the next item: the open item with the highest priority P_t.
- ``report``: What a QUORUM run reports (``RoutingResult.info``): one typed record, written by
  the step that decides each field, read by nobody in the run (no decision depends on it).
- ``rewards``: Rewards: when an item settles, every arm asked on it learns how it did (once).
- ``router``: The QUORUM router (paper, sec. 3 and Algorithms 1-2).
- ``run``: The state of one QUORUM run, split by concept, and the steps every plan buys with.
"""
