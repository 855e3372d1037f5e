"""Rewards: when an item settles, every arm asked on it learns how it did (once).

An LLM's reward is its similarity to the human label where there is one; without one
(``agreement_reward``) its agreement with the weighted majority, paid
:func:`~quorum.routing.quorum.calibration.agreement_reward` (``agreement_reward_value``). The
human arm learns from its agreement with the other annotators' majority.
"""

from __future__ import annotations

from quorum.routing.quorum.calibration import agreement_reward
from quorum.routing.quorum.compiled.phase3_loop import compiled_settle
from quorum.routing.quorum.run import QuorumRun

__all__ = ["settle", "settle_many"]


def settle(run: QuorumRun, t: int) -> None:
    """Item t is done: give each arm asked on it its reward (once)."""
    arms, ans, cfg = run.arms, run.answers, run.cfg
    if arms.settled[t]:
        return
    arms.settled[t] = True
    answers = run.rec.by_item.get(run.ids[t], {})
    outs = ans.outputs(t)
    human_out = outs.get(run.human)
    paid = None  # (reward if it agrees, if not) without a human label
    if human_out is not None:
        ref = human_out
    elif cfg.agreement_reward and len(outs) >= 2:
        ref, _, _ = ans.aggregate(t)
        if run.kind.discrete and cfg.agreement_reward_value == "calibrated":
            paid = agreement_reward(*arms.agreed_seen, len(run.p.task.labels or []))
    else:
        return
    asked = arms.asked
    for a, o in answers.items():
        if ans.is_h(a) or o.status == "pending" or o.status == "failed":
            continue
        x = asked.unrewarded(t, a)  # asked on t, no reward yet
        if x is None:
            continue
        r = ans.similarity(o.output if o.ok else None, ref)
        if paid is not None:
            r = paid[0] if r >= 1.0 else paid[1]
        arms.post[a].update(x, r)
        asked.mark_rewarded(t, a)
    others = {a: y for a, y in outs.items() if not ans.is_h(a)}
    if human_out is not None and run.kind.discrete and len(others) >= 2:
        y_o, agr_o = ans.agg.vote(others, ans.is_h)
        if ans.agg.consensus(agr_o, len(others)):  # how often LLM consensus is right
            n_seen, n_right = arms.agreed_seen
            arms.agreed_seen = (n_seen + 1, n_right + int(y_o == human_out))
    if human_out is not None and len(others) >= 2 and asked.has(t, run.human):
        _reward_human(run, t, others, human_out)


def settle_many(run: QuorumRun, items: list[int]) -> None:
    """:func:`settle` of ``items`` in turn, with nothing bought meanwhile; in replay one
    compiled call (``loop_backend``, :mod:`~quorum.routing.quorum.compiled.phase3_loop`)."""
    if run.loops.compiled and len(items):
        compiled_settle(run, run.loops.fixed, items)
        return
    for t in items:
        settle(run, t)


def _reward_human(run: QuorumRun, t: int, others: dict[str, str], human_out: str) -> None:
    """The human arm: its similarity to the majority of the other annotators."""
    ans = run.answers
    ref_o = ans.majority(others, t)
    run.arms.post_h.update(run.arms.asked.get(t, run.human), ans.similarity(human_out, ref_o))
    run.arms.asked.mark_rewarded(t, run.human)
