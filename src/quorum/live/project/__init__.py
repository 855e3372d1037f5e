"""The project file and what it names: items, task, annotators, people.

Modules:

- ``annotators``: The ``[[annotators]]`` entries of a project file: one arm each (LLM, local
  model, human).
- ``config``: The project file of a live annotation job (TOML or YAML), validated with pydantic.
- ``humans``: The ``[humans]`` section of a project file: how the human arm reaches people.
- ``items``: Read the project's items file into ``item_id, text[, gold, choices]``.
- ``task``: The ``[items]`` and ``[task]`` sections of a project file: what is labelled, and
  how.
"""
