"""Build the final-labels frame from what a router collected."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from quorum.routing.core.recorder import CallRecorder

LABEL_COLUMNS = ["item_id", "output", "n_annotations", "agreement", "human", "annotators"]


def single_output_labels(
    item_ids: Iterable[str], rec: CallRecorder, prefer: Sequence[str] = ()
) -> pd.DataFrame:
    """One output per item: the first preferred annotator with a usable answer, else any.

    For routers that collect one annotation per item (most baselines). An item with no
    usable answer gets output None (it counts as wrong in accuracy).
    """
    rows = []
    for i in item_ids:
        outs = rec.outputs(i)
        chosen = None
        for a in prefer:
            if a in outs:
                chosen = outs[a]
                break
        if chosen is None and outs:
            chosen = next(iter(outs.values()))
        rows.append(
            {
                "item_id": i,
                "output": chosen,
                "n_annotations": len(rec.by_item.get(i, {})),
                "agreement": 1.0 if outs else 0.0,
                "human": any(rec.is_human(a) for a in outs),
                "annotators": ";".join(rec.by_item.get(i, {})),
            }
        )
    return pd.DataFrame(rows, columns=LABEL_COLUMNS)
