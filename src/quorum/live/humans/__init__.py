"""The human arm: queues of human tasks, their answers, people's reliability and agreement.

Modules:

- ``agreement``: How far the people of a live project agree with each other, and the models with
  them.
- ``answer_sink``: What the answer collector reports, what it needs from the run, how it words
  answers.
- ``book``: The ledger's book of human labels: the slots of each human task and what filled
  them.
- ``collector``: Human answers into the ledger: slots filled, late answers, timeouts,
  reliabilities, votes.
- ``queue``: The human arm: a queue that tasks are submitted to and answers are read back from.
- ``reliability``: How far each human annotator can be trusted, and the vote of an item's k
  human labels.
- ``tasks``: What a human task is made of: its request key, what it shows, how its answers read.
"""
