"""CoAnnotating (Li et al., EMNLP 2023): uncertainty-ranked, one-batch allocation.

``coannotating`` is the form the QUORUM paper reproduced (amazon-science/QUORUM,
``routers/co_annotating_router.py``): one labelling LLM (the cheapest) labels every item
and gives its own confidence (one paid call per item; a named substitute where the data
has none, see :mod:`quorum.baselines._confidence`); the least confident items go to
humans, the rest keep the labeller's answer.

``coannotating-ensemble`` is CoAnnotating's own signal as SALT-NLP/CoAnnotating's
notebooks compute it, on whatever the data has: every item is answered under several
prompt wordings (here: the recorded prompts or, as a substitute, the task's models);
uncertainty is the entropy of those answers; the rest keep the majority answer.

Either way all uncertainty calls are paid for every item before the allocation, and the
most uncertain items go to humans in one batch, as many as the budget allows.

Budget (our rule; the source code takes no budget): auditor, the ``B`` most uncertain
items; dollars, the most uncertain ``floor(money left after the estimate / c_H)`` items.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from quorum.baselines._common import (
    Routed,
    affordable_humans,
    item_trace,
    label_frame,
    ranked,
)
from quorum.baselines._confidence import (
    ConfidenceBaseline,
    ConfidenceMode,
    Substitute,
    plan_info,
)
from quorum.routing.core.run_core import RunCore


class CoAnnotatingRouter(ConfidenceBaseline):
    """Send the most uncertain items to humans (the paper's form: the labeller's own
    answer and confidence).

    Parameters
    ----------
    confidence, labeller, entropy_annotators, substitute:
        see :class:`~quorum.baselines._confidence.ConfidenceBaseline`.
    llm_label:
        "labeller" (default: the labelling LLM's own answer) or "majority" (the vote over
        the prompts/models bought for uncertainty; the medoid summary for summaries).
    """

    name = "coannotating"
    prompts_faithful = True

    def __init__(
        self,
        confidence: ConfidenceMode = "paper",
        labeller: str | None = None,
        entropy_annotators: list[str] | None = None,
        llm_label: Literal["majority", "labeller"] = "labeller",
        substitute: Substitute = "agreement",
    ) -> None:
        super().__init__(confidence, labeller, entropy_annotators, substitute)
        if llm_label not in ("majority", "labeller"):
            raise ValueError("llm_label must be 'majority' or 'labeller'")
        self.llm_label = llm_label

    def _route(self, run: RunCore) -> Routed:
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
        arm = np.full(len(ids), plan.labeller, dtype=object)
        keep = "keep" if self.llm_label == "labeller" else "majority"  # the LLM label kept
        mode = np.full(len(ids), keep, dtype=object)
        arm[chosen], mode[chosen] = human, "escalate"
        trace = item_trace(
            run, by_unc, arm, mode, uncertainty=sig.uncertainty, confidence=sig.confidence
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


class CoAnnotatingEnsembleRouter(CoAnnotatingRouter):
    """CoAnnotating over several answers per item: entropy over the recorded prompts (or,
    a substitute, the task's models) and the majority answer as the LLM label.

    Same parameters as :class:`CoAnnotatingRouter`; only the defaults differ
    (``confidence="auto"``, ``llm_label="majority"``).
    """

    name = "coannotating-ensemble"

    def __init__(
        self,
        confidence: ConfidenceMode = "auto",
        labeller: str | None = None,
        entropy_annotators: list[str] | None = None,
        llm_label: Literal["majority", "labeller"] = "majority",
        substitute: Substitute = "agreement",
    ) -> None:
        super().__init__(confidence, labeller, entropy_annotators, llm_label, substitute)
