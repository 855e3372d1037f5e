"""The summary audit that checks its free order first (ours, issue 39;
``summary_audit="checked"``).

The focus of a source (:mod:`~quorum.routing.quorum.audit.source_focus`) predicts how close
the cheapest LLM's summary comes to a human's on English news whose human summaries lean
on the article's lead, and says nothing where they do not (docs/router.md, "Summaries at
equal spend: the focus checked on the first humans"). So the audit spends the first
``summary_check_share`` of its human summaries (at least ``summary_check_min``) on a
random slice of the items, as Random would, and reads on that slice whether the focus
orders the evidence the right way: the Spearman correlation ρ̂ of the focus with a target
per item. Only where ρ̂ > ``summary_check_z`` / sqrt(n - 1) (n: the slice's human
summaries) do the other humans go to the least focused sources; otherwise they go in the
run's random order, Random's plan.

The target (``summary_check_target``):

- ``"lead"``: ROUGE-1 F1 (the task's scorer) of the source's lead (first
  ``summary_lead_sentences`` sentences) against the human summary: how much the human
  summary leans on the lead, the reason the focus works. No LLM is asked, so the run spends
  Random's money and, where the check fails, does exactly what Random does.
- ``"llm"``: ROUGE-1 F1 of the cheapest LLM's summary against the human's, the quantity
  the order is for; the LLM is bought on the slice (n c_l more than Random, counted at
  equal spend).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import spearmanr

from quorum.routing.quorum.audit.source_focus import lead_sentences, source_focus
from quorum.routing.quorum.run import QuorumRun

__all__ = ["check_passes", "check_size", "checked_order", "slice_targets"]


def check_size(n_humans: int, share: float, min_size: int) -> int:
    """Human summaries in the check's slice: ``share`` of ``n_humans``, at least
    ``min_size``, at most ``n_humans``.

    >>> check_size(300, 0.1, 10), check_size(50, 0.1, 10), check_size(6, 0.1, 10)
    (30, 10, 6)
    """
    return max(0, min(n_humans, max(min_size, round(share * n_humans))))


def check_passes(focus: np.ndarray, target: np.ndarray, z: float) -> tuple[float, bool]:
    """Spearman's ρ̂ of ``focus`` with ``target`` on the slice (0 where either is constant
    or fewer than 3 items) and whether ρ̂ > z / sqrt(n - 1).

    >>> rho, ok = check_passes(np.array([1.0, 2, 3, 4]), np.array([0.1, 0.3, 0.2, 0.4]), 0.0)
    >>> round(rho, 2), ok
    (0.8, True)
    >>> check_passes(np.array([1.0, 2, 3]), np.array([0.5, 0.5, 0.5]), 0.0)
    (0.0, False)
    """
    n = len(focus)
    if n < 3 or np.ptp(focus) == 0 or np.ptp(target) == 0:
        return 0.0, False
    rho = float(spearmanr(focus, target).statistic)
    rho = 0.0 if math.isnan(rho) else rho
    return rho, rho > z / math.sqrt(n - 1)


def slice_targets(run: QuorumRun, items: np.ndarray, cheap: str) -> tuple[np.ndarray, np.ndarray]:
    """The slice's items that have a human summary, and their target
    (``summary_check_target``; see the module)."""
    texts = run.p.texts
    assert texts is not None
    score = run.kind.scorer(run.p.task.language)
    k = run.cfg.summary_lead_sentences
    keep, target = [], []
    for i, t in enumerate(items):
        outs = run.answers.outputs(int(t))
        human = outs.get(run.human)
        if not isinstance(human, str) or not human:
            continue
        if run.cfg.summary_check_target == "llm":
            other = outs.get(cheap)
        else:
            other, _ = lead_sentences(texts[int(t)], k)
        keep.append(i)
        target.append(score(other, human) if isinstance(other, str) and other else 0.0)
    return np.asarray(keep, dtype=int), np.asarray(target, dtype=float)


def checked_order(run: QuorumRun, order: np.ndarray, cheap: str, n_humans: int) -> np.ndarray:
    """Buy the check's slice (a human summary on the first :func:`check_size` items of the
    random ``order``, and ``cheap``'s with ``summary_check_target="llm"``), then return the
    other items of ``order``: the least focused sources first where the slice's evidence
    passes (:func:`check_passes`), else as they are (Random's order). Ties in the focus
    keep ``order``'s random order."""
    cfg = run.cfg
    assert run.p.texts is not None
    s = check_size(n_humans, cfg.summary_check_share, cfg.summary_check_min)
    slice_, rest = order[:s], order[s:]
    run.buy(slice_, run.human, "check")
    if cfg.summary_check_target == "llm":
        run.buy(slice_, cheap, "check")
    score = run.kind.scorer(run.p.task.language)
    texts = [run.p.texts[int(t)] for t in order]
    focus = source_focus(texts, cfg.summary_lead_sentences, score)
    keep, target = slice_targets(run, slice_, cheap)
    rho, passes = check_passes(focus[:s][keep], target, cfg.summary_check_z)
    seen = f"rho {rho:+.2f} on {len(keep)} first human summaries (summary_audit=checked)"
    if passes:
        run.report.auditor_order = f"least focused sources first: {seen}"
        return rest[np.argsort(focus[s:], kind="stable")]
    run.report.auditor_order = f"random: {seen}"
    return rest
