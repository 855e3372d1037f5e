"""The audit plans: how the cheapest LLM and the humans share the items left to audit
(auditor setting; dollars when the panel is dominated; labels, label model on).

Each plan is an object with one job, chosen once from ``dollars_audit_plan`` /
``auditor_audit_plan`` (:func:`audit_plan`):

- :class:`LlmFirst`: the cheapest LLM answers every item, then humans go, in rounds, to
  the items whose label is likeliest wrong under the label model;
- :class:`HumansInstead`: each item gets one answer, a human's or the LLM's; humans go,
  in rounds, to the items whose label model prior is least sure;
- :class:`HumansOnly`: no more LLM answers, the money buys humans only;
- :class:`Check`: both plans' choice of humans on a sample, then the plan that fixed more
  labels per unit of money there.

:func:`audit` runs a plan, after the one switch the data can make: where the cheapest
LLM's answers add less than the human labels their price buys (``llm_sample``,
:func:`llm_adds_little`), "humans-only" whatever the plan.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from statistics import NormalDist

import numpy as np

from quorum.routing.core.budget import affordable_count, cap_humans
from quorum.routing.core.label_model import label_indices
from quorum.routing.quorum.audit.auditing import round_sizes
from quorum.routing.quorum.params import QuorumParams
from quorum.routing.quorum.run import QuorumRun

__all__ = [
    "AuditPlan",
    "Check",
    "HumansInstead",
    "HumansOnly",
    "LlmFirst",
    "audit",
    "audit_plan",
    "instead_z",
    "labelled_errors",
    "mostly_right",
]

_NONE = np.zeros(0, dtype=int)


class AuditPlan(ABC):
    """Audit the items ``rest`` with the cheapest LLM ``cheap`` and at most ``n_h`` humans
    (None: as many as the money buys). ``trace_q``: the trace keeps x_t and q_a(x_t) of the
    LLM's items, as in bandit routing (dollars, for the dashboard)."""

    name = ""

    def __init__(self, cfg: QuorumParams, trace_q: bool = False) -> None:
        self.cfg = cfg
        self.trace_q = trace_q

    @abstractmethod
    def run(self, run: QuorumRun, rest: np.ndarray, cheap: str, n_h: int | None) -> str:
        """Buy the plan's answers; returns the name of the plan taken."""
        raise NotImplementedError


class LlmFirst(AuditPlan):
    """The cheapest LLM on every item of ``rest``, then humans in ``audit_rounds`` rounds
    on the items whose label is likeliest wrong (those of ``rest`` and ``answered``, items
    the LLM has already answered)."""

    name = "llm-first"

    def run(self, run, rest, cheap, n_h, answered: np.ndarray = _NONE) -> str:
        X = Q = None
        if self.trace_q:
            X, Q = run.contexts_now(rest, (run.T - len(rest)) / max(run.T, 1))
        run.buy(rest, cheap, "llm", X, Q)
        c_h = run.spend.c_h
        n_afford = affordable_count(run.budget.remaining, c_h) if c_h > 0 else len(rest)
        n_h = n_afford if n_h is None else min(n_h, n_afford)
        n_h = cap_humans(n_h, run.budget.humans_left)
        pool = np.asarray(rest, dtype=int)
        if len(answered):
            pool = np.concatenate([np.asarray(answered, dtype=int), pool])
        run.report.auditor_order = "label-model posterior, rounds"
        buy_in_rounds(run, pool, max(0, min(n_h, len(pool))), run.labels.wrong_probability)
        return self.name


class HumansInstead(AuditPlan):
    """Every item of ``rest`` gets one answer, a human's or the cheapest LLM's, so the
    money buys (M - U c_l) / (c_H - c_l) humans (U: the items of ``rest`` the LLM has not
    answered); in ``audit_rounds`` rounds humans go to the items whose label model prior
    p(y | x) is least sure (refitted after each round), and the LLM answers the rest."""

    name = "humans-instead"
    #: the cheapest LLM answers the items no human got
    llm_rest = True

    def run(self, run, rest, cheap, n_h) -> str:
        pool = np.asarray(rest, dtype=int)
        c_l = run.rec.price(cheap) if self.llm_rest else 0.0
        spare = run.budget.remaining - run.answers.not_asked(pool, cheap) * c_l
        step = run.spend.c_h - c_l
        n = affordable_count(spare, step) if step > 0 and spare > 0 else 0
        if n_h is not None and not self.llm_rest:
            n = min(n, n_h)
        n = cap_humans(n, run.budget.humans_left)
        run.report.auditor_order = "label-model prior, rounds"
        pool = buy_in_rounds(run, pool, max(0, min(n, len(pool))), run.labels.prior_doubt)
        if self.llm_rest:
            run.buy(pool, cheap, "llm")
        return self.name


class HumansOnly(HumansInstead):
    """No LLM answers: the money buys M / c_H humans (at most ``n_h``); the items nobody
    was asked on are labelled by
    :meth:`~quorum.routing.quorum.audit.label_state.LabelModelState.unasked_labels`."""

    name = "humans-only"
    llm_rest = False


class Check(AuditPlan):
    """Both plans' choice of humans on a random sample, then the plan whose humans changed
    more labels there per unit of money.

    The cheapest LLM answers ``audit_check_share`` of ``rest`` (in random order), and the
    sample gets the humans "llm-first" would afford on it: half go to the items whose
    label is likeliest wrong given the LLM's answer (llm-first's choice), half to those
    whose label model prior p(y | x) is least sure (humans-instead's choice, made
    without the answer). Each half's share of labels the human changed (Beta(1, 1)),
    p_first and p_instead, is what a human fixes there; "llm-first" goes on iff
    p_first / c_H >= p_instead / (c_H - c_l), the fixes per unit of money (a human
    bought instead of the LLM costs c_H - c_l more than the LLM alone), with
    ``audit_check_confidence``: where the cheapest LLM is mostly right
    (:func:`mostly_right`), the check is not made if the calibration's human labels
    already show it ("llm-first"), its humans are bought in two rounds with the second
    picked by the refitted label model, and "humans-instead" needs the sample to make it
    that likely (:func:`instead_z`): a tie keeps "llm-first". Where the
    sample would get fewer than ``audit_check_min`` humans, nothing is sampled and the
    run goes on "llm-first" (too few labels to tell)."""

    name = "check"

    def run(self, run, rest, cheap, n_h) -> str:
        cfg = self.cfg
        rest = np.asarray(rest, dtype=int)
        c_l, c_h = run.rec.price(cheap), run.spend.c_h
        m = int(np.ceil(cfg.audit_check_share * len(rest)))
        todo = run.answers.not_asked(rest, cheap)
        afford = (run.budget.remaining - todo * c_l) / c_h if c_h > 0 else 0.0
        n_s = int(max(0.0, afford) * m / max(len(rest), 1) + 1e-9)
        n_s = cap_humans(n_s, run.budget.humans_left)
        first = LlmFirst(cfg, self.trace_q)
        if n_s < cfg.audit_check_min or c_h <= c_l:
            return first.run(run, rest, cheap, n_h)
        # the calibration's human labels show the LLM mostly right: llm-first, no sample
        known = labelled_errors(run, cheap)
        if (
            cfg.audit_check_confidence > 0.5
            and known[1] >= cfg.audit_check_min
            and mostly_right(*known, len(run.labels.labels))
        ):
            run.report.audit_check = {
                "skipped": "the calibration shows the cheapest LLM mostly right",
                "calibration_errors": list(known),
                "plan": first.name,
            }
            return first.run(run, rest, cheap, n_h)
        sample, rest = rest[:m], rest[m:]
        taken, answered = self._sample(run, sample, cheap, n_s)
        if taken == first.name:
            return first.run(run, rest, cheap, n_h, answered=answered)
        return HumansInstead(cfg, self.trace_q).run(run, rest, cheap, None)

    def _sample(
        self, run: QuorumRun, sample: np.ndarray, cheap: str, n_s: int
    ) -> tuple[str, np.ndarray]:
        """Buy the sample's answers and humans; (the plan it favours, the sample's items
        the LLM answered and no human checked)."""
        c_l, c_h = run.rec.price(cheap), run.spend.c_h
        run.buy(sample, cheap, "llm")
        post = run.labels.posterior(sample)
        guess, w = post.argmax(axis=1), 1.0 - post.max(axis=1)
        hum, y_h = run.labels.human_labelled()
        u = 1.0 - run.labels.prior(sample, hum, y_h).max(axis=1) if len(hum) else 0.0 * w
        # half of the sample's humans to each plan's choice: the largest w (llm-first),
        # the least sure prior (humans-instead, which does not see the LLM's answer)
        by_w = np.argsort(-w, kind="stable")[: (n_s + 1) // 2]
        order_u = np.argsort(-u, kind="stable")
        by_u = order_u[~np.isin(order_u, by_w)][: n_s - len(by_w)]

        def found(rows: np.ndarray) -> tuple[int, int]:
            """(labels that the human changed, human labels) among the sample's ``rows``."""
            outs = run.answers.outputs
            y = label_indices(
                [outs(int(sample[j])).get(run.human) for j in rows], run.labels.labels
            )
            ok = y >= 0
            return int((y[ok] != guess[rows][ok]).sum()), int(ok.sum())

        L = len(run.labels.labels)
        if self.cfg.audit_check_confidence <= 0.5:  # one round (before issue 39)
            run.buy(sample[np.concatenate([by_w, by_u])], run.human, "audit")
        else:  # two rounds: the first half of each plan's choice, then the rest
            h_w, h_u = (len(by_w) + 1) // 2, (len(by_u) + 1) // 2
            run.buy(sample[np.concatenate([by_w[:h_w], by_u[:h_u]])], run.human, "audit")
            (f_w, n_w), (f_u, n_u) = found(by_w[:h_w]), found(by_u[:h_u])
            if mostly_right(f_w + f_u, n_w + n_u, L):
                # the LLM mostly right: the second round's choices are made again by the
                # label model refitted on the first round's labels, as the plans learn
                left = np.setdiff1d(
                    np.arange(len(sample)), np.concatenate([by_w[:h_w], by_u[:h_u]])
                )
                post = run.labels.posterior(sample[left])
                guess[left] = post.argmax(axis=1)
                w2 = 1.0 - post.max(axis=1)
                hum, y_h = run.labels.human_labelled()
                u2 = (
                    1.0 - run.labels.prior(sample[left], hum, y_h).max(axis=1)
                    if len(hum)
                    else 0.0 * w2
                )
                r2_w = np.argsort(-w2, kind="stable")[: len(by_w) - h_w]
                o2 = np.argsort(-u2, kind="stable")
                r2_u = o2[~np.isin(o2, r2_w)][: len(by_u) - h_u]
                by_w = np.concatenate([by_w[:h_w], left[r2_w]])
                by_u = np.concatenate([by_u[:h_u], left[r2_u]])
            run.buy(sample[np.concatenate([by_w[h_w:], by_u[h_u:]])], run.human, "audit")
        pick = sample[np.concatenate([by_w, by_u])]
        (f_w, n_w), (f_u, n_u) = found(by_w), found(by_u)
        z = instead_z(f_w, n_w, f_u, n_u, c_h, c_l)
        # the LLM mostly right: a tie favours llm-first (audit_check_confidence)
        strong = mostly_right(f_w + f_u, n_w + n_u, L)
        level = self.cfg.audit_check_confidence if strong else 0.5
        plan = HumansInstead.name if z > NormalDist().inv_cdf(level) else LlmFirst.name
        run.report.audit_check = {
            "sample": len(sample),
            "humans": len(pick),
            "fixed_llm_first": [f_w, n_w],
            "fixed_humans_instead": [f_u, n_u],
            "z_humans_instead": float(z),
            "confidence": float(level),
            "plan": plan,
        }
        return plan, sample[~np.isin(sample, pick)]


def mostly_right(changed: int, checked: int, n_labels: int) -> bool:
    """The cheapest LLM is mostly right: the share of its labels a human changed,
    (changed + 1) / (checked + 2), is below half of what a human would change after a
    random answer, (1 - 1/L) / 2 (``audit_check_confidence``).

    >>> mostly_right(20, 100, 4), mostly_right(30, 100, 2), mostly_right(40, 100, 4)
    (True, False, False)
    """
    return (changed + 1.0) / (checked + 2.0) < 0.5 * (1.0 - 1.0 / max(n_labels, 2))


def labelled_errors(run: QuorumRun, cheap: str) -> tuple[int, int]:
    """(items where the human's label differs from ``cheap``'s answer, items with both):
    the calibration's measure of the cheapest LLM before the check."""
    hum, y_h = run.labels.human_labelled()
    outs = run.answers.outputs
    y_l = label_indices([outs(int(t)).get(cheap) for t in hum], run.labels.labels)
    ok = y_l >= 0
    return int((y_l[ok] != y_h[ok]).sum()), int(ok.sum())


def instead_z(f_w: int, n_w: int, f_u: int, n_u: int, c_h: float, c_l: float) -> float:
    """How many standard errors "humans-instead" fixes more labels per unit of money than
    "llm-first" on the check's sample (``audit_check_confidence``).

    p_first ~ Beta(1 + f_w, 1 + n_w - f_w), p_instead ~ Beta(1 + f_u, 1 + n_u - f_u) (the
    labels the human changed among each half's n humans); the difference
    d = p_instead / (c_H - c_l) - p_first / c_H is taken as normal, z = E[d] / sd(d). z > 0
    exactly where the means' rule (before issue 39) chose "humans-instead".

    Examples
    --------
    >>> round(instead_z(13, 58, 14, 57, 0.1, 0.01), 2)  # a tie: well below z(0.9) = 1.28
    0.59
    >>> instead_z(5, 50, 25, 50, 0.1, 0.01) > 3  # the prior's picks fix five times more
    True
    """
    a_w, b_w = 1.0 + f_w, 1.0 + n_w - f_w
    a_u, b_u = 1.0 + f_u, 1.0 + n_u - f_u
    mean = a_u / (a_u + b_u) / (c_h - c_l) - a_w / (a_w + b_w) / c_h
    var_w = a_w * b_w / ((a_w + b_w) ** 2 * (a_w + b_w + 1.0)) / c_h**2
    var_u = a_u * b_u / ((a_u + b_u) ** 2 * (a_u + b_u + 1.0)) / (c_h - c_l) ** 2
    return float(mean / np.sqrt(var_w + var_u))


def audit_plan(name: str, cfg: QuorumParams, trace_q: bool = False) -> AuditPlan:
    """The plan called ``name`` ("llm-first", "humans-instead", "humans-only", "check")."""
    plans = {p.name: p for p in (LlmFirst, HumansInstead, HumansOnly, Check)}
    return plans[name](cfg, trace_q)


def audit(run: QuorumRun, rest: np.ndarray, cheap: str, plan: AuditPlan, n_h=None) -> str:
    """Audit ``rest`` by ``plan``, or by "humans-only" where the cheapest LLM's answers add
    too little (:func:`llm_adds_little`); returns the name of the plan taken."""
    if not isinstance(plan, HumansOnly) and llm_adds_little(run, rest, cheap):
        return HumansOnly(plan.cfg).run(run, rest, cheap, n_h)
    return plan.run(run, rest, cheap, n_h)


def buy_in_rounds(run: QuorumRun, pool: np.ndarray, n_h: int, score) -> np.ndarray:
    """``n_h`` human labels in ``audit_rounds`` rounds, each to the items of ``pool`` with
    the highest ``score(pool)`` (refitted after each round); returns the items left."""
    for size in round_sizes(n_h, run.cfg.audit_rounds):
        if size <= 0 or len(pool) == 0:
            continue
        pick = pool[np.argsort(-score(pool), kind="stable")[:size]]
        run.buy(pick, run.human, "audit")
        pool = pool[~np.isin(pool, pick)]
    return pool


def llm_adds_little(run: QuorumRun, rest: np.ndarray, cheap: str) -> bool:
    """``llm_sample``: True where the cheapest LLM's answers are worth less than the
    human labels their price buys instead, judged without any label.

    It answers ``llm_sample`` items (those it answered already, then the first items
    of ``rest``, which is in random order). Its answer can take an item's label away
    from the label model's only where it is not its commonest answer, so
    r = (answers that differ from it + 1) / (answers + 2) bounds the accuracy it adds
    per item; the price c_l buys c_l / c_H of a human label, which fixes the label
    model's label with probability 1 - p_maj at most (p_maj: the commonest human
    label's Beta(1)-smoothed share; 1/L without human labels). Returns r < (c_l / c_H)
    (1 - p_maj) and reports the numbers (``info["llm_sample"]``). When True, the items
    nobody is asked on get the label model's ``unasked_labels``."""
    cfg, labels = run.cfg, run.labels.labels
    if cfg.llm_sample <= 0 or cfg.label_model_vote == "off" or not labels:
        return False
    c_l, c_h = run.rec.price(cheap), run.spend.c_h
    if c_h <= c_l:
        return False
    need = max(0, cfg.llm_sample - int(run.answers.asked(np.arange(run.T), cheap).sum()))
    if need:
        run.buy(np.asarray(rest, dtype=int)[:need], cheap, "llm")
    outs = (run.answers.outputs(t) for t in range(run.T))
    answers = [o[cheap] for o in outs if cheap in o]
    if not answers:
        return False
    mode, common = Counter(answers).most_common(1)[0]
    r = (len(answers) - common + 1.0) / (len(answers) + 2.0)
    _, y_h = run.labels.human_labelled()
    L = len(labels)
    p_maj = (np.bincount(y_h, minlength=L).max() + 1.0) / (len(y_h) + L) if len(y_h) else 1 / L
    worth = c_l / c_h * (1.0 - p_maj)
    run.report.llm_sample = {
        "answers": len(answers),
        "differ_from_commonest": len(answers) - common,
        "r": float(r),
        "humans_worth": float(worth),
        "humans_only": bool(r < worth),
    }
    if r >= worth:
        return False
    run.labels.unasked_label_ = mode if mode in labels else None
    return True
