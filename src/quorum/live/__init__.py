"""Live projects: real LLM calls, real people, a durable ledger (docs/live.md).

Sub-packages, bottom to top (each imports only from the ones before it). One item's way:
``run.runner`` reads the ``project``, builds the problem (``run.problem``), routes it through
the ``run.source`` (``machines`` for LLM calls, ``humans`` or ``labelstudio`` for people, every
step in the ``ledger``), then ``outputs`` export the labels.

- ``project/``: The project file and what it names: items, task, annotators, people.
- ``ledger/``: The durable ledger: one SQLite file per project, its schema and its cells.
- ``machines/``: The machine annotators: LLM and local-model calls, prompts, parsing, paid
  exactly once.
- ``humans/``: The human arm: queues of human tasks, their answers, people's reliability and
  agreement.
- ``labelstudio/``: Label Studio as the humans' web page: the queue over its REST API, its
  project, its server.
- ``run/``: One live run: the project's problem, the live source, the runner, plans, targets and
  waits.
- ``outputs/``: What people read of a project: exports (files, Hugging Face), the card, the
  report, status.
"""
