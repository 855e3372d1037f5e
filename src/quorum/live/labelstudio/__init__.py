"""Label Studio as the humans' web page: the queue over its REST API, its project, its server.

Modules:

- ``answers``: Annotations read back from Label Studio as answers, with who gave them.
- ``client``: The Label Studio REST client: JSON over HTTP with retries, and the API token.
- ``database_template``: A migrated, empty Label Studio database, made once per Label Studio
  install and copied into each new data folder.
- ``page``: What Label Studio shows people: the labelling page, the task data keys, option text.
- ``predictions``: LLM answers shown to annotators as pre-annotations
  (``humans.labelstudio.predictions``).
- ``project``: The Label Studio project that holds QUORUM's human tasks: found, created,
  checked, listed.
- ``queue``: The human arm in Label Studio: a :class:`~quorum.live.humans.queue.HumanQueue` over
  its REST API.
- ``server``: Start and stop a local Label Studio (Community edition) for tests, demos and small
  teams.
"""
