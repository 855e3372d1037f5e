"""The last step of a QUORUM run: every item's final label, and the result.

:func:`final_labels` is where the label model may overrule the weighted vote
(``label_model_vote``); :func:`label_frame` writes one row per item; :func:`result`
builds the :class:`~quorum.routing.core.base.RoutingResult` through the shared run core
(:func:`~quorum.routing.core.run_core.build_result`). A hook on the final labels goes in
:func:`final_labels`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from quorum.routing.core.base import RoutingResult
from quorum.routing.core.outputs import LABEL_COLUMNS
from quorum.routing.core.run_core import build_result
from quorum.routing.quorum.run import QuorumRun

__all__ = ["final_labels", "label_frame", "result"]


def final_labels(run: QuorumRun, after_bandit: bool) -> dict[int, str]:
    """``label_model_vote``: labels of the items without a human label, the argmax of the
    label model's posterior (labels only), by item index; {} where the vote stands.

    Not after bandit routing unless ``label_model_bandit`` (escalated human labels are
    no fair sample of the LLMs' errors). Items nobody was asked on ("humans-only") get
    :meth:`~quorum.routing.quorum.audit.label_state.LabelModelState.unasked_labels`."""
    cfg, lm = run.cfg, run.labels
    if cfg.label_model_vote == "off" or not run.kind.discrete or not lm.labels:
        return {}
    if not run.label_model_fits():
        return {}
    if after_bandit and not cfg.label_model_bandit:
        return {}
    if len(lm.human_labelled()[0]) == 0:
        return {}
    outputs = run.answers.outputs
    todo = np.array([t for t in range(run.T) if run.human not in outputs(t)], dtype=int)
    if len(todo) == 0:
        return {}
    best = lm.posterior(todo, final=True).argmax(axis=1)
    final = {int(t): lm.labels[int(j)] for t, j in zip(todo, best, strict=True)}
    if lm.unasked_label_ is not None:
        unasked = np.array([t for t in todo if not run.rec.by_item.get(run.ids[t])], int)
        if len(unasked):
            labels, how = lm.unasked_labels(unasked)
            run.report.unasked_labels = how
            final.update(zip(unasked.tolist(), labels, strict=True))
    return final


def label_frame(run: QuorumRun, final: dict[int, str]) -> pd.DataFrame:
    """One row per item: ``final`` where given, else the human's label (auditor) or the
    aggregate of its answers."""
    cols: dict[str, list] = {c: [] for c in LABEL_COLUMNS}  # one list per column
    auditor = run.p.setting == "auditor"
    human, outputs, aggregate = run.human, run.answers.outputs, run.answers.aggregate
    by_item = run.rec.by_item
    one_label = run.kind.discrete
    for t, item in enumerate(run.ids):
        outs = outputs(t)
        if auditor and human in outs:
            y, agr = outs[human], 1.0
        elif one_label and len(outs) == 1:  # one answer: the vote's (y, w / w = 1.0)
            (y,) = outs.values()
            agr = 1.0
        else:
            y, agr, _n = aggregate(t)
        answers = by_item.get(item, _NO_ANSWERS)
        cols["item_id"].append(item)
        cols["output"].append(final.get(t, y))
        cols["n_annotations"].append(len(answers))
        cols["agreement"].append(agr)
        cols["human"].append(human in outs)
        cols["annotators"].append(";".join(answers))
    return pd.DataFrame(cols, columns=LABEL_COLUMNS)


_NO_ANSWERS: dict = {}


def result(run: QuorumRun, after_bandit: bool = False) -> RoutingResult:
    """The run's result: final labels, the calls paid for, the trace and the report."""
    labels = label_frame(run, final_labels(run, after_bandit))
    run.report.label_model_strength = run.labels.strength_
    run.report.context_names = list(run.arms.ctx.names_)
    run.report.posterior_means = run.arms.posterior_means()
    return build_result(run.method, run.core, labels, run.report.as_info(), run.trace.frame())
