"""CoAnnotating (Li et al., EMNLP 2023): uncertainty-ranked, one-batch allocation.

Every item is answered by the LLM under several prompt wordings (here: the recorded
prompts or, as a substitute, the task's models); uncertainty is the entropy of those
answers (or 1 - confidence where a confidence is recorded / asked live). Items are
sorted by uncertainty and the most uncertain ones go to humans, as many as the budget
allows; the rest keep the LLM label, the majority over the answers (SALT-NLP/CoAnnotating
notebooks). All uncertainty calls are paid for every item before the allocation.

Budget (our rule; the source code takes no budget): auditor, the ``B`` most uncertain
items; dollars, the most uncertain ``floor(money left after the estimate / c_H)`` items.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from quorum.baselines._common import (
    Routed,
    RouteRun,
    affordable_humans,
    label_frame,
    ranked,
)
from quorum.baselines._confidence import ConfidenceBaseline, ConfidenceMode, plan_info


class CoAnnotatingRouter(ConfidenceBaseline):
    """Send the most uncertain items to humans.

    Parameters
    ----------
    confidence, labeller, entropy_annotators:
        see :class:`~quorum.baselines._confidence.ConfidenceBaseline`.
    llm_label:
        "majority" (default, as CoAnnotating: the vote over prompts/models; the medoid
        summary for summaries) or "labeller" (the labelling LLM's own answer).
    """

    name = "coannotating"
    prompts_faithful = True

    def __init__(
        self,
        confidence: ConfidenceMode = "auto",
        labeller: str | None = None,
        entropy_annotators: list[str] | None = None,
        llm_label: Literal["majority", "labeller"] = "majority",
    ) -> None:
        super().__init__(confidence, labeller, entropy_annotators)
        if llm_label not in ("majority", "labeller"):
            raise ValueError("llm_label must be 'majority' or 'labeller'")
        self.llm_label = llm_label

    def _route(self, run: RouteRun) -> Routed:
        problem, budget, rng, rec = run.problem, run.budget, run.rng, run.rec
        ids, human = run.ids, run.human
        plan, sig, _order, cap = self.buy_signals(problem, rec, budget, rng)

        n_h = affordable_humans(rec, cap)
        by_unc = ranked(sig.uncertainty, rng, descending=True)  # unestimated items last
        chosen = by_unc[:n_h]
        rec.annotate_many([(ids[t], human) for t in chosen], phase="route")

        llm_out = sig.aggregate if self.llm_label == "majority" else sig.label
        outputs = {ids[t]: llm_out[t] for t in range(len(ids))}
        agreement = {ids[t]: float(sig.agreement[t]) for t in range(len(ids))}
        labels = label_frame(ids, rec, outputs, agreement)
        to_human = np.zeros(len(ids), dtype=bool)
        to_human[chosen] = True
        trace = pd.DataFrame(
            {
                "item_id": ids,
                "uncertainty": sig.uncertainty,
                "confidence": sig.confidence,
                "human": to_human,
            }
        )
        info = plan_info(plan, sig)
        info.update(
            {
                "rule": "top-uncertainty to humans (one batch)",
                "llm_label": self.llm_label,
                "n_human_target": int(n_h),
                "degraded": bool(sig.estimated.sum() < len(ids)),
            }
        )
        return Routed(labels, info, trace)
