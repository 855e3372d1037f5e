"""Where each label of a live project came from, in four words a team reads at a glance.

The export's ``labelled_by`` (the annotators whose answer is the label) says it item by
item; :func:`label_source` sums it up:

- ``human vote``: the label is the human arm's (one person, or the vote of k people);
- ``agreeing LLMs``: two or more machine annotators gave it;
- ``one LLM``: a single machine annotator gave it;
- ``label model``: no annotator gave it (the router's label model chose it, or for an item
  nobody was asked on, the fallback of docs/router.md);
- ``no label``: the item has no label yet.

>>> label_source(["expert (ann, bea)", "gpt"], "expert")
'human vote'
>>> label_source(["gpt", "llama"], "expert"), label_source(["label model"], "expert")
('agreeing LLMs', 'label model')
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from quorum.live.outputs.export import LABEL_MODEL

#: the sources, in the order the report and the dataset card list them
SOURCES = ("human vote", "agreeing LLMs", "one LLM", "label model", "no label")


def label_source(labelled_by: Sequence[str] | None, human: str | None) -> str:
    """The source of one label from its ``labelled_by`` list and the human arm's name."""
    by = list(labelled_by or [])
    if not by:
        return "no label"
    if human is not None and any(a == human or a.startswith(f"{human} (") for a in by):
        return "human vote"
    if by == [LABEL_MODEL]:
        return "label model"
    return "agreeing LLMs" if len(by) >= 2 else "one LLM"


def label_sources(frame: pd.DataFrame, human: str | None) -> pd.Series:
    """:func:`label_source` of every row of an export frame (``label``, ``labelled_by``)."""
    return pd.Series(
        [
            label_source(by if lab is not None and lab == lab else [], human)
            for lab, by in zip(frame["label"], frame["labelled_by"], strict=True)
        ],
        index=frame.index,
        name="source",
    )


def source_counts(sources: pd.Series) -> dict[str, int]:
    """Items per source, every source listed (0 where none)."""
    counts = sources.value_counts()
    return {s: int(counts.get(s, 0)) for s in SOURCES}
