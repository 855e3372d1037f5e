"""Task kinds: what differs between one label, a summary, a label set, spans or a pair lives in one
class per kind.

A new kind is one module: a TaskKind subclass (its outputs' parser, aggregator, metric, prompt
template and human-task shape) and one entry in registry.KINDS (docs/architecture.md, "How to
add a task kind"). The rest of QUORUM asks ``task.kind`` and never tests the task's type.

Modules:

- ``base``: What every task kind is: the type names, one item as a prompt sees it, and the
  :class:`TaskKind` contract that routing, live runs, quality checks, the bench and the exports
  ask instead of testing the task's type.
- ``classification``: Classification (one label from a fixed set) and its multiple-choice
  variant: the weighted majority vote (paper, sec. 3.3), Delta_t, how a person's answer names a
  label.
- ``multilabel``: Multi-label (a set of labels from a fixed list per item): the per-label
  weighted vote, set agreement by Jaccard, micro-/macro-F1 and exact match (scikit-learn's).
- ``pairwise``: Pairwise judgements (which of two outputs is better): a discrete kind with the
  labels "1" and "2" (and "tie" where a task allows it), the judge asked in both answer orders
  (``swap``), an inconsistent pair recorded and used as a routing signal.
- ``parsing``: Turn raw LLM answers into labels, summaries and confidences, or say they are
  unusable.
- ``registry``: The task kinds by name, and the kind of a task.
- ``spans``: Span tasks (entities, error spans): an output is a list of typed character spans
  over the item's text. Encoding, the matching rule, span F1, the weighted span vote, quotes to
  offsets.
- ``summarization``: Summarization (a free-text output per item): the embedding-centroid
  aggregation (paper, sec. 3.3), the clipped cosine between two summaries, ROUGE-1.
"""
