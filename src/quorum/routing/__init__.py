"""Routing: who labels which item, under a budget (the algorithm layer).

Sub-packages, bottom to top (each imports only from the ones before it):

- ``core/``: The run core every router shares: the router contract, money, paid calls, the
  trace, replay.
- ``quorum/``: QUORUM's router (paper, sec. 3 and Algorithms 1-2), one concept per module.
- ``paper/``: QUORUM as the authors' code runs it (``--method quorum-paper``, docs/paper-
  preset.md).
"""
