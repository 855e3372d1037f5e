"""The ``quorum`` command: one module per area, each with ``register(app)``; ``main`` assembles
them.

Modules:

- ``bench``: `quorum bench` (run the paper's experiments) and `quorum report` (the HTML page).
- ``datasets``: ``quorum datasets``: list, show and export datasets, and write dataset folders
  (init).
- ``features``: ``quorum features DATASET``: compute (or load from cache) phi(d_t) and summarise
  it.
- ``live``: `quorum annotate`, `quorum status` and `quorum export` for live projects.
- ``main``: The `quorum` command. Each area registers its own commands from its own module.
- ``simulate``: `quorum simulate`: replay a routing method on recorded annotations.
- ``status_text``: What ``quorum status`` prints for a person: labels, people, money, then the
  per-annotator calls table (``--json`` prints :func:`quorum.live.outputs.status.status` as it
  is).
"""
