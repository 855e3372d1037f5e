"""One live run: the project's problem, the live source, the runner, plans, targets and waits.

Modules:

- ``definition``: What a ledger's answers mean: the task's labels and the prices they were
  bought at.
- ``fill``: Labels for the items a live pass left without one, whatever the method (nothing is
  called or paid): :func:`fill_labels` applies
  :func:`quorum.routing.core.fallback.fill_unlabelled` to a pass's result before its random
  checks; :func:`mark_provisional` marks the labels still waiting for a person.
- ``plan``: ``quorum plan PROJECT``: what a project will cost and ask for, before anything is
  spent.
- ``plan_target``: ``quorum plan --target-quality Q``: what a quality target is likely to cost.
- ``problem``: Build the routing problem of a project: the TaskSpec, the arms and the item
  features.
- ``progress``: The run's progress: one line (labels, the people's pending tasks, money) that
  both the progress bar of ``quorum annotate`` and ``quorum status`` print.
- ``runner``: Run a project: ``annotate`` (resumable), read top to bottom.
- ``settle``: After a complete pass: human answers and paid calls it did not use.
- ``source``: LiveSource: the AnnotationSource that calls LLMs, local models and humans for
  real.
- ``summary``: A run's summary: what ``annotate`` records at a run's end, and reading it back.
- ``target``: Quality checks and the target-quality mode of ``quorum annotate``
  (docs/quality.md).
- ``waiting``: Waiting for people: a pass that reaches a human task without its answer is frozen
  there; :func:`wait_for` sleeps until some of those answers come (or the tasks expire).
"""
