"""The one-shot audit: humans on the cheapest LLM's likeliest errors, ranked once from
the calibration errors (Algorithm 2; the auditor ordering ``auditor_rule``), the LLM on
the rest. Used where the label model is off (``audit_llm_first=False``, summaries,
problems above ``label_model_max_items``); the audit plans are
:mod:`~quorum.routing.quorum.audit.plans`. Summaries' orders (``summary_audit``): random,
the longest sources, the summaries least like their source's lead, the sources
whose lead is least like the rest, the least focused sources, or the focus checked first
(:mod:`~quorum.routing.quorum.audit.source_focus`,
:mod:`~quorum.routing.quorum.audit.signal_check`).
"""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata

from quorum.routing.core.budget import cap_humans
from quorum.routing.quorum.audit.auditing import (
    audit_human_count,
    calibration_error_mask,
    cost_match_give_up,
    error_order,
)
from quorum.routing.quorum.audit.signal_check import checked_order
from quorum.routing.quorum.audit.source_focus import lead_sentences, source_focus
from quorum.routing.quorum.run import QuorumRun

__all__ = [
    "FREE_SUMMARY_ORDERS",
    "TEXT_SUMMARY_ORDERS",
    "calibration_errors",
    "checked_auditor",
    "error_ranked",
    "lead_audit",
    "lead_centrality",
    "lead_overlap",
    "lead_sentences",
    "longest_first",
    "one_shot_auditor",
    "one_shot_dollars",
    "summary_order",
]


#: summary audits whose order is known before any call and that ask no LLM where a human
#: summarises (Random's spend in both settings)
FREE_SUMMARY_ORDERS = ("central", "focused")
#: summary audits that read the source texts and take the dollars audit even when no
#: calibration item is affordable (``"checked"``: the focus checked on the first humans,
#: :mod:`~quorum.routing.quorum.audit.signal_check`)
TEXT_SUMMARY_ORDERS = (*FREE_SUMMARY_ORDERS, "checked")


def longest_first(order: np.ndarray, lengths: np.ndarray | None) -> np.ndarray:
    """``order`` with the longest texts first (ties keep ``order``'s random order); as
    given when the lengths are unknown.

    >>> longest_first(np.array([2, 0, 1, 3]), np.array([5, 9, 5, 1])).tolist()
    [1, 2, 0, 3]
    """
    if lengths is None:
        return order
    return order[np.argsort(-np.asarray(lengths)[order], kind="stable")]


def lead_centrality(run: QuorumRun, items: np.ndarray) -> np.ndarray:
    """How well each source's lead stands for the rest of it: ROUGE-1 F1 (the task's
    scorer) of its first ``summary_lead_sentences`` sentences against the others
    (``RoutingProblem.texts``; 0 without either). Known before any call."""
    texts = run.p.texts
    assert texts is not None
    score = run.kind.scorer(run.p.task.language)
    k = run.cfg.summary_lead_sentences
    out = np.zeros(len(items))
    for i, t in enumerate(items):
        lead, rest = lead_sentences(texts[int(t)], k)
        out[i] = score(lead, rest) if lead and rest else 0.0
    return out


def lead_overlap(run: QuorumRun, items: np.ndarray, cheap: str) -> np.ndarray:
    """ROUGE-1 F1 (the task's scorer) of ``cheap``'s summary of each item against its
    source's first ``summary_lead_sentences`` sentences (0 without either)."""
    texts = run.p.texts
    assert texts is not None
    score = run.kind.scorer(run.p.task.language)
    k = run.cfg.summary_lead_sentences
    out = np.zeros(len(items))
    for i, t in enumerate(items):
        summary = run.answers.outputs(int(t)).get(cheap)
        lead, _ = lead_sentences(texts[int(t)], k)
        out[i] = score(summary, lead) if isinstance(summary, str) and summary and lead else 0.0
    return out


def lead_audit(run: QuorumRun, order: np.ndarray, cheap: str, n_h: int) -> None:
    """Auditor, summaries, ``summary_audit="lead"`` (ours, issue 39): the cheapest LLM
    summarises every item (B c_H + T c_min, the setting's limit, what ``audit_llm_first``
    spends on labels), then the ``n_h`` humans go to the items lowest on the mean rank of
    two signals: the summary's likeness to its source's lead (:func:`lead_overlap`) and
    how well that lead stands for the rest of the source (:func:`lead_centrality`); ties
    in ``order``'s random order. A human summary replaces the LLM's where it is bought."""
    run.buy(order, cheap, "llm")
    rank = rankdata(lead_overlap(run, order, cheap)) + rankdata(lead_centrality(run, order))
    ranked = order[np.argsort(rank, kind="stable")]
    n_h = cap_humans(min(n_h, len(ranked)), run.budget.humans_left)
    run.report.auditor_order = "summaries least like the source's lead first (summary_audit)"
    run.buy(ranked[:n_h], run.human, "lead")


def summary_order(run: QuorumRun, order: np.ndarray) -> np.ndarray:
    """The items a summary audit gives the humans first (``summary_audit``): "longest",
    the longest sources (an LLM's summary of a long source is further from the human's,
    docs/router.md); "central" (both settings), and "lead" where no LLM summary is bought
    first (the dollars audit), the sources whose lead stands least for the rest
    (:func:`lead_centrality`; ties in ``order``'s random order); "focused" (both settings),
    the least focused sources (:func:`~quorum.routing.quorum.audit.source_focus.source_focus`;
    ties in ``order``'s random order); "random", ``order`` as it is."""
    if run.cfg.summary_audit == "focused" and run.p.texts is not None:
        run.report.auditor_order = "least focused sources first (summary_audit)"
        texts = [run.p.texts[int(t)] for t in order]
        score = run.kind.scorer(run.p.task.language)
        focus = source_focus(texts, run.cfg.summary_lead_sentences, score)
        return order[np.argsort(focus, kind="stable")]
    if run.cfg.summary_audit in ("lead", "central") and run.p.texts is not None:
        run.report.auditor_order = "sources whose lead stands least for the rest first"
        return order[np.argsort(lead_centrality(run, order), kind="stable")]
    if run.cfg.summary_audit == "longest" and run.p.text_lengths is not None:
        run.report.auditor_order = "longest sources first (summary_audit)"
        return longest_first(order, run.p.text_lengths)
    run.report.auditor_order = "random (summary_audit)"
    return order


def calibration_errors(run: QuorumRun, cal: list[int], cheap: str) -> tuple[list[int], list[int]]:
    """Calibration items with a human label, and those where ``cheap`` got it wrong."""
    judged, sims = [], []
    for t in cal:
        outs = run.answers.outputs(t)
        y = outs.get(run.human)
        if y is not None:
            judged.append(t)
            sims.append(run.answers.similarity(outs.get(cheap), y))
    wrong = calibration_error_mask(np.array(sims), run.kind.graded, run.cfg.summary_error_quantile)
    errs = [t for t, w in zip(judged, wrong, strict=True) if w]
    run.report.calibration_errors = len(errs)
    return judged, errs


def error_ranked(
    run: QuorumRun, rest: np.ndarray, judged: list[int], errs: list[int]
) -> np.ndarray:
    """``rest``, likeliest errors of the cheapest LLM first (``auditor_rule``)."""
    cfg = run.cfg
    space = run.p.embeddings if cfg.auditor_space == "embedding" else None
    if space is None:
        space = run.p.phi
    judged_a = np.asarray(judged, dtype=int)
    order, how = error_order(
        rest,
        judged_a,
        np.isin(judged_a, errs),
        space,
        rule=cfg.auditor_rule,
        k=cfg.auditor_k,
        cosine=cfg.auditor_space == "embedding",
        max_pairs=cfg.auditor_max_pairs,
    )
    run.report.auditor_order = how
    return order


def one_shot_dollars(run: QuorumRun, cal: list[int], rest: np.ndarray, cheap: str) -> None:
    """Dollars: as many humans as the money leaves after the LLM on every other item,
    on its likeliest errors (summaries: in the order of :func:`summary_order`; with
    ``summary_audit="central"`` or ``"focused"`` the LLM's items go in the reverse order,
    so that money too short for the LLM on all of them leaves out the sources that come
    first for the humans)."""

    def humans_for(items: np.ndarray) -> int:  # what the money left pays beside the LLM
        return audit_human_count(run.budget.remaining, len(items), run.rec.price(cheap),
                                 run.spend.c_h, run.budget.humans_left)  # fmt: skip

    n_h = humans_for(rest)
    judged, errs = calibration_errors(run, cal, cheap)
    checked = run.cfg.summary_audit == "checked" and run.p.texts is not None
    if run.kind.graded and checked and n_h > 0:
        # the check's slice first (its humans, and with target "llm" the LLM), then as
        # many humans as the money left pays, in the order the check allows
        rest = checked_order(run, rest, cheap, n_h)
        n_h = humans_for(rest)
    elif run.kind.graded and checked:
        run.report.auditor_order = "random: no human summary to check (summary_audit=checked)"
    elif run.kind.graded and run.cfg.summary_audit != "calibrated":
        rest = summary_order(run, rest)
        if run.cfg.summary_audit in FREE_SUMMARY_ORDERS and run.p.texts is not None:
            # the LLM's items best first: where the money cannot pay it on all of them
            # (c_min T above the budget), the sources whose lead stands most for the rest
            # (the most focused ones)
            rest = np.concatenate([rest[:n_h], rest[n_h:][::-1]])
    else:
        rest = error_ranked(run, rest, judged, errs)
    # the trace keeps x_t and q_a(x_t) as in bandit routing (for the dashboard)
    X, Q = run.contexts_now(rest, len(cal) / max(run.T, 1))
    run.send_split(rest, n_h, cheap, "audit", X, Q)


def checked_auditor(run: QuorumRun, order: np.ndarray, cheap: str, n_h: int) -> None:
    """Auditor, summaries, ``summary_audit="checked"``: the check's slice of the ``n_h``
    humans on the first items of the random ``order``, then the others in the order the
    check allows (:func:`~quorum.routing.quorum.audit.signal_check.checked_order`), the
    cheapest LLM on the rest."""
    rest = checked_order(run, order, cheap, n_h)
    n_left = cap_humans(n_h - (len(order) - len(rest)), run.budget.humans_left)
    run.send_split(rest, max(0, n_left), cheap, "checked")


def one_shot_auditor(
    run: QuorumRun, cal: list[int], rest: np.ndarray, cheap: str, n_h: int
) -> None:
    """Auditor: the ``n_h`` human labels left on the likeliest errors; with
    ``auditor_cost_match``, fewer, so that calibration's LLM answers are paid for."""
    sp = run.spend
    judged, errs = calibration_errors(run, cal, cheap)
    if run.cfg.auditor_cost_match and len(cal) and sp.c_h > sp.c_min:
        give_up = cost_match_give_up(len(cal), sp.c_min, sp.c_h)
        n_h = max(0, n_h - give_up)
        run.report.human_labels_given_up = give_up
    rest = error_ranked(run, rest, judged, errs)
    run.send_split(rest, n_h, cheap, "error-centroid")
