"""Phase 3 of the dollars setting: refinement ("extra annotations", Algorithm 1 line
16-24) and the leftover human labels.

While money remains, the open item of highest priority P_t
(:func:`~quorum.routing.quorum.refinement.refinement_priority`) gets one more annotation; an
item closes on consensus, a human label, ``max_annotations`` or nothing left to buy. Its
arm: the human where its annotations disagree (``escalate_disagreement``), else an
:class:`ExtraArmRule`, chosen once from ``extra_arm_rule``: :class:`ValueRule` (ours,
default) or :class:`PaperExtraRule`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from quorum.routing.core.budget import affordable_count, cap_humans, first_answer_reserve
from quorum.routing.quorum.compiled.phase3_loop import compiled_refine
from quorum.routing.quorum.params import QuorumParams
from quorum.routing.quorum.policy import adaptive_tau, refine_tau_ratio, value_choice
from quorum.routing.quorum.refinement import PriorityQueue, leftover_priority, refinement_priority
from quorum.routing.quorum.rewards import settle
from quorum.routing.quorum.run import QuorumRun

__all__ = ["ExtraArmRule", "PaperExtraRule", "ValueRule", "extra_arm_rule", "refine"]

_NOTHING: dict = {}


class ExtraArmRule(ABC):
    """How phase 3 picks the arm of an item's next annotation."""

    #: the rule has a compiled twin (:mod:`~quorum.routing.quorum.compiled.phase3_kernel`)
    compiled = False

    def __init__(self, cfg: QuorumParams) -> None:
        self.cfg = cfg

    @abstractmethod
    def choose(
        self, run: QuorumRun, t: int, q: np.ndarray, fits: list[int], human_ok: bool, n_open: int
    ) -> tuple[int | None, str]:
        """(index into ``fits``, or None for the human; mode); mode "none": nothing to
        gain on item t (it closes, nothing is bought)."""
        raise NotImplementedError


class ValueRule(ExtraArmRule):
    """``extra_arm_rule="value"``: the arm with the most expected errors fixed per unit of
    money (:func:`~quorum.routing.quorum.policy.value_choice`); p, the chance that the current
    label is right, is the q of its best agreeing LLM."""

    compiled = True

    def choose(self, run, t, q, fits, human_ok, n_open):
        # the exploration draw comes first, as in value_choice (aggregation uses no rng)
        qc = np.clip(q, 0.0, 1.0).tolist()  # Python floats: the same values, cheaper
        outs = run.answers.outputs(t)
        y, _, _ = run.answers.aggregate(t)
        agree = [qc[k] for k, a in enumerate(run.llm_names) if a in outs and outs[a] == y]
        p = max(agree) if agree else 0.0
        c = run.spend.c
        return value_choice(
            [qc[k] for k in fits],
            [float(c[k]) for k in fits],
            run.spend.c_h,
            p,
            human_ok=human_ok,
            epsilon=run.arms.epsilon(),
            rng=run.rng,
        )


class PaperExtraRule(ExtraArmRule):
    """``extra_arm_rule="paper"``: phase 2's paper rule (epsilon-greedy on q, escalation
    below tau_H, adaptive with ``adaptive_tau``)."""

    def choose(self, run, t, q, fits, human_ok, n_open):
        cfg, sp = self.cfg, run.spend
        qs = q[fits] if fits else np.array([])
        scores = qs - cfg.cost_penalty * sp.c[fits] / sp.c_h if fits else None
        policy = run.arms.policy
        if cfg.adaptive_tau:
            ratio = refine_tau_ratio(run.budget.remaining, n_open, sp.c_h)
            policy = policy.with_tau(adaptive_tau(cfg.tau_h, ratio))
        return policy.select(qs, run.arms.t_explore, run.rng, human_allowed=human_ok, scores=scores)


def extra_arm_rule(cfg: QuorumParams) -> ExtraArmRule:
    """The phase-3 rule of ``cfg.extra_arm_rule``."""
    return {"value": ValueRule, "paper": PaperExtraRule}[cfg.extra_arm_rule](cfg)


class _Open:
    """Phase 3's open items: their priorities P_t (a heap), Delta_t, 1(human), and the
    count of open items with no answer yet (each keeps c_min for its first answer)."""

    def __init__(self, run: QuorumRun, n_asked: np.ndarray) -> None:
        self.run = run
        T, ans = run.T, run.answers
        self.no_answer = np.array([len(ans.outputs(t)) == 0 for t in range(T)])
        self.open = (~run.arms.settled) & (n_asked < run.cfg.max_annotations)
        # items whose only answer agrees with itself are open; consensus needs >= 2
        for t in np.flatnonzero(self.open):
            if ans.consensus(t)[1]:
                settle(run, t)
                self.open[t] = False
        self.prio = np.full(T, -np.inf)
        self.delta = np.zeros(T)
        self.has_h = np.zeros(T)
        for t in np.flatnonzero(self.open):
            self.delta[t] = ans.delta(t)
            self.has_h[t] = float(run.human in ans.outputs(t))
        self.n_unanswered = int(self.no_answer[self.open].sum())
        self.queue: PriorityQueue | None = None
        self.recompute()
        self.queue = PriorityQueue(self.prio, self.open)

    def progress(self) -> float:
        """p_t in phase 3: the share of items that need nothing more."""
        n_open = len(self.queue) if self.queue is not None else int(self.open.sum())
        return 1.0 - n_open / max(self.run.T, 1)

    def recompute(self) -> None:
        """Every open item's P_t at the money left now."""
        idx = np.flatnonzero(self.open)
        if len(idx) == 0:
            return
        arms = self.run.arms
        D = arms.difficulty(arms.contexts(idx, self.run.budget.remaining_fraction, self.progress()))
        self.prio[idx] = refinement_priority(D, self.delta[idx], self.has_h[idx])

    def update(self, t: int) -> None:
        """Item t got an annotation and stays open: its new P_t."""
        run, arms = self.run, self.run.arms
        outs = run.answers.outputs(t)
        self.delta[t] = run.answers.delta(t)
        self.has_h[t] = float(run.human in outs)
        idx = np.array([t])
        xv = arms.context(t, run.budget.remaining_fraction, self.progress())[None, :]
        self.prio[idx] = refinement_priority(arms.difficulty(xv), self.delta[idx], self.has_h[idx])
        self.queue.push(t)

    def answered(self, t: int) -> None:
        """Item t got an annotation: is it still without an answer?"""
        was = bool(self.no_answer[t])
        self.no_answer[t] = len(self.run.answers.outputs(t)) == 0
        self.n_unanswered += int(self.no_answer[t]) - int(was)

    def close(self, t: int) -> None:
        if self.open[t] and self.no_answer[t]:
            self.n_unanswered -= 1
        self.queue.close(t)
        self.prio[t] = -np.inf


def refine(run: QuorumRun, rule: ExtraArmRule) -> None:
    """Phase 3: extra annotations, the open item with the highest priority P_t first.

    Counts of open items (with and without an answer) are kept as items close, and the
    next item comes from a heap (:class:`~quorum.routing.quorum.refinement.PriorityQueue`),
    so a pick costs O(log T), not O(T).
    """
    n_asked = np.array([len(run.rec.by_item.get(i, ())) for i in run.ids], dtype=np.int64)
    if run.loops.compiled and rule.compiled:  # replay: the same loop, compiled
        compiled_refine(run, run.loops.fixed, n_asked)
    else:
        _refine_python(run, rule, _Open(run, n_asked), n_asked)
    if run.cfg.spend_leftover:
        leftover_humans(run, n_asked)


def _refine_python(run: QuorumRun, rule: ExtraArmRule, items: _Open, n_asked: np.ndarray) -> None:
    """The loop of :func:`refine`, pick by pick (the reference path; live sources)."""
    cfg, sp, arms, ans = run.cfg, run.spend, run.arms, run.answers
    queue = items.queue
    picks = 0
    while len(queue):
        arms.t_explore = run.T + picks  # phase 2 made T decisions (calibration included)
        t = queue.top()
        keep = first_answer_reserve(items.n_unanswered, items.no_answer[t], sp.c_min)
        llms, human_free = _open_arms(run, t)
        x = arms.context(t, run.budget.remaining_fraction, items.progress())
        fits = [k for k in llms if run.rec.can_afford(run.llm_names[k], keep=keep)]
        human_ok = human_free and run.rec.can_afford(run.human, keep=keep)
        if not fits and not human_ok:
            items.close(t)
            if not run.budget.can_afford(sp.c_min):
                break
            continue
        q = arms.q_values(x)
        n, agreed = ans.consensus(t)
        if cfg.escalate_disagreement and human_ok and n >= 2 and not agreed:
            k, mode = None, "disagreement"
        else:
            k, mode = rule.choose(run, t, q, fits, human_ok, len(queue))
            if mode == "none":  # nothing to gain on t: it is done, nothing is bought
                settle(run, t)
                items.close(t)
                continue
        arm = run.human if k is None else run.llm_names[fits[k]]
        arms.mark_asked(t, arm, x)
        run.log(t, "extra", arm, mode, x, q, float(items.prio[t]))
        run.rec.annotate(run.ids[t], arm, phase="extra")
        n_asked[t] += 1
        items.answered(t)
        _, agreed = ans.consensus(t)
        if run.human in ans.outputs(t) or agreed or n_asked[t] >= cfg.max_annotations:
            settle(run, t)
            items.close(t)
        else:
            items.update(t)
        picks += 1
        if picks % max(cfg.priority_refresh, len(queue) // 50 + 1) == 0:
            items.recompute()
            queue.rebuild()


def _open_arms(run: QuorumRun, t: int) -> tuple[list[int], bool]:
    """The live LLMs not yet asked on item t, and whether the human is still free."""
    asked = run.rec.by_item.get(run.ids[t], _NOTHING)  # the arms asked (no copy)
    alive = run.spend.alive
    llms = [k for k, a in enumerate(run.llm_names) if a not in asked and alive(k)]
    return llms, run.human not in asked


def leftover_humans(run: QuorumRun, n_asked: np.ndarray) -> None:
    """Money left after refinement buys human labels, highest priority first."""
    cfg, arms = run.cfg, run.arms
    by_item, ids, human = run.rec.by_item, run.ids, run.human
    cand = np.array(
        [
            t
            for t in np.flatnonzero(n_asked < cfg.max_annotations).tolist()
            if human not in by_item.get(ids[t], _NOTHING)
        ],
        dtype=int,
    )
    if len(cand) == 0 or not run.rec.can_afford(run.human):
        return
    X = arms.contexts(cand, run.budget.remaining_fraction, 1.0)
    agr = np.array([run.answers.aggregate(t)[1] for t in cand])
    prio = leftover_priority(arms.difficulty(X), agr)
    n_afford = affordable_count(run.budget.remaining, run.spend.c_h)
    n_afford = cap_humans(n_afford, run.budget.humans_left)
    order = np.argsort(-prio, kind="stable")[:n_afford]
    chosen = cand[order]
    for pos, t in zip(order, chosen, strict=True):
        arms.asked.put(int(t), run.human, X[pos])
        run.log(int(t), "leftover", run.human, "leftover", None, None, None)
    run.spend.send([(run.ids[t], run.human) for t in chosen], "leftover")
