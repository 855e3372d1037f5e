"""The audit path: the cheapest LLM on every item, humans on its likeliest errors.

Modules:

- ``auditing``: Auditing: which items of the cheapest LLM most likely are errors, and how many
  humans.
- ``by_value``: The audit by value: one LLM on every item left, chosen by the quality it is
  expected to give at the money left, and humans at random on the others (kinds with
  ``TaskKind.audit_llm_by_value``, e.g. spans).
- ``label_state``: A QUORUM run's label model: P(y | x, answers) from the human labels bought so
  far.
- ``one_shot``: The one-shot audit: humans on the cheapest LLM's likeliest errors, ranked once
  from the calibration errors (Algorithm 2; the auditor ordering ``auditor_rule``), the LLM on
  the rest. Used where the label model is off (``audit_llm_first=False``, summaries, problems
  above ``label_model_max_items``); the audit plans are
  :mod:`~quorum.routing.quorum.audit.plans`. Summaries' orders (``summary_audit``): random,
  the longest sources, the summaries least like their source's lead, the sources whose
  lead is least like the rest, the least focused sources, or the focus checked first.
- ``plans``: The audit plans: how the cheapest LLM and the humans share the items left to audit
  (auditor setting; dollars when the panel is dominated; labels, label model on).
- ``signal_check``: The summary audit that checks its free order first (ours, issue 39): a
  random slice of the human summaries, then the least focused sources only where the
  slice's evidence agrees, else Random's order (``summary_audit="checked"``).
- ``source_focus``: Source focus (ours, issue 39): how closely a cheap LLM's summary of a
  source should follow a human's, read from the source text alone, before any call
  (``summary_audit="focused"``).
"""
