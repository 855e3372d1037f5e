"""The run core every router shares: the router contract, money, paid calls, the trace, replay.

Modules:

- ``base``: The common router interface: a problem, a source of annotations, and a result.
- ``budget``: A hard budget with reserve-then-settle accounting.
- ``fallback``: Labels for the items a routing pass left without one (ours, issue 27).
- ``label_model``: A cheap label model learned from every human label bought so far (ours, issue
  14).
- ``outputs``: Build the final-labels frame from what a router collected.
- ``recorder``: Make paid calls through one place: reserve, call, settle, record.
- ``replay``: Replay: an annotation source backed by recorded annotations of real models.
- ``run_core``: What every router's run opens with and how it hands back its result (one core).
- ``trace``: The decision trace every router writes, kept column by column.
"""
