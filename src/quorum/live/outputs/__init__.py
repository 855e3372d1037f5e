"""What people read of a project: exports (files, Hugging Face), the card, the report, status.

Modules:

- ``card``: The dataset card (``README.md``) of a Hugging Face export
  (:mod:`quorum.live.outputs.hf`): YAML metadata, then the facts a reader needs, section by
  section (the task, how each item was labelled, money, the team, the router's decisions, the
  estimated accuracy, columns).
- ``decisions``: The router's decisions in plain words, for the report and the dataset card.
- ``export``: The labels of the last routing pass, one row per item, with their provenance from
  the ledger: what ``quorum export`` writes (:mod:`quorum.live.outputs.files`), the report and
  the dataset card read.
- ``figures``: The figures of a live project's report (:mod:`quorum.live.outputs.report`):
  matplotlib PNGs, base64 for the self-contained page.
- ``files``: ``quorum export``: write the labels with their provenance (:func:`export_frame`) to
  a CSV, JSONL or Parquet file, or a Hugging Face datasets folder with its card
  (:mod:`quorum.live.outputs.hf`).
- ``hf``: A live project's labels as a Hugging Face ``datasets`` folder with a dataset card.
- ``judges``: Pairwise judges asked in both orders (``swap``): what each said in each order,
  read from the ledger's ``swap_pairs`` for the status, the report page and the export.
- ``provenance``: Where each label of a live project came from, in four words a team reads at a
  glance.
- ``report``: A live project's report: one self-contained HTML page from its ledger.
- ``sections``: The sections of a live project's report (:mod:`quorum.live.outputs.report`), in
  page order: each reads the status (and the spending events or label sources) and returns its
  HTML body and figures.
- ``span_view``: A few items of a span task with their spans highlighted by source, for the
  report page.
- ``status``: ``quorum status``: what the ledger says of a project (labels, human tasks, money,
  calls).
"""
