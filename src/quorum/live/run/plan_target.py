"""``quorum plan --target-quality Q``: what a quality target is likely to cost.

The target mode's ladder (:class:`~quorum.quality.target.TargetQuality`: the same rungs,
checks and Bonferroni looks as ``quorum annotate``) runs ``runs`` times on the project's
router and items against the plan's simulated source (:class:`~quorum.live.run.plan.PlanSource`),
each time with other coins; nothing is called or paid. What the simulation rests on is
said in ``based_on``:

- **recorded answers**, where the project's ledger holds some (a pilot run on a few items,
  ``items.limit``, or an earlier run): each LLM's accuracy against the items' human label
  (the team's reliability-weighted vote) or gold (control items), and on those items the
  recorded answers themselves (a replay);
- otherwise, and for an LLM with fewer than ``min_compared`` such items, the assumed
  ``llm_accuracy``.

The human label is the truth (the estimate is relative to it, docs/quality.md), LLM errors
are independent coins, and unknown items get a random true label: the figures are a guide,
not a promise; a pilot on the project's own items makes them much better.
"""

from __future__ import annotations

import sqlite3
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from quorum.live.project.config import ProjectConfig
from quorum.live.run.plan import PlanSetup, setup
from quorum.quality.target import TargetQuality
from quorum.routing.core.budget import Budget


@dataclass
class TargetPlan:
    """The simulated ladders: how often the ceiling reached the target, at what spend."""

    project: str
    target: float
    confidence: float
    ceiling: float
    runs: int
    reached: int
    spent: list[float]
    looks: list[int]
    lower_bounds: list[float]
    more_money: list[float]
    planned_looks: int
    accuracy: dict[str, float]
    based_on: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        med = float(np.median(self.spent))
        out = [
            f"target {self.target:.3f} at {self.confidence:.0%} confidence, budget "
            f"{self.ceiling:.6g} as ceiling: reached in {self.reached} of {self.runs} "
            f"simulated runs; spend median {med:.6g} ({med / self.ceiling:.0%} of the "
            f"budget), from {min(self.spent):.6g} to {max(self.spent):.6g}; looks "
            f"{min(self.looks)}-{max(self.looks)} of {self.planned_looks}",
            "final lower bounds: " + ", ".join(f"{x:.3f}" for x in self.lower_bounds),
        ]
        if self.reached < self.runs:
            more = (
                f"about {float(np.median(self.more_money)):.6g} more money (median of the "
                "runs that could say)"
                if self.more_money
                else "more money alone may not reach it (the lower bound stopped rising)"
            )
            out.append(f"where the budget did not reach it: {more}")
        return out + [f"based on: {b}" for b in self.based_on]


def recorded_answers(
    cfg: ProjectConfig, llms: list[str], gold: dict[str, str]
) -> tuple[dict[str, str], dict[tuple[str, str], str]]:
    """The ledger's truth per item (its human label, else gold) and the LLMs' recorded
    answers on those items (empty without a ledger)."""
    if not cfg.ledger_path.is_file():
        return {}, {}
    con = sqlite3.connect(f"file:{cfg.ledger_path}?mode=ro", uri=True)
    try:
        human = con.execute(
            "SELECT item_id, label FROM human_queue WHERE status='answered' AND label IS NOT "
            "NULL ORDER BY rowid"
        ).fetchall()
        calls = con.execute(
            "SELECT item_id, annotator, output FROM calls WHERE kind='annotate' AND "
            "status='ok' AND output IS NOT NULL ORDER BY call_id"
        ).fetchall()
    except sqlite3.Error:
        return {}, {}
    finally:
        con.close()
    truth = {**gold, **{str(i): str(y) for i, y in human}}
    answers = {(str(i), str(a)): str(o) for i, a, o in calls if a in llms and str(i) in truth}
    return truth, answers


def _accuracy(
    llms: list[str], truth: dict[str, str], answers: dict, default: float, least: int
) -> tuple[dict[str, float], list[str]]:
    """Each LLM's accuracy on the recorded items (``least`` of them at least), else the
    default, and the words that say which."""
    acc, words = {}, []
    for a in llms:
        hits = [y == truth[i] for (i, b), y in answers.items() if b == a]
        if len(hits) >= least:
            acc[a] = float(np.mean(hits))
            words.append(f"{a}: right {acc[a]:.2f} on {len(hits)} recorded item(s) with a "
                         "human label or gold (the ledger)")  # fmt: skip
        else:
            acc[a] = default
            words.append(f"{a}: assumed right {default:.2f} (only {len(hits)} recorded "
                         f"item(s) to compare, fewer than {least})")  # fmt: skip
    return acc, words


def plan_target(
    cfg: ProjectConfig,
    target: float | None = None,
    confidence: float | None = None,
    llm_accuracy: float = 0.8,
    runs: int = 5,
    features: str | None = None,
    min_compared: int = 10,
) -> TargetPlan:
    """Simulate the target mode ``runs`` times (see the module docstring)."""
    from quorum.live.run.runner import make_method

    target = target if target is not None else cfg.budget.target_quality
    if target is None or not 0.0 < target < 1.0:
        raise ValueError(f"a target quality in (0, 1) is needed, got {target}")
    conf = confidence if confidence is not None else (cfg.budget.confidence or 0.9)
    rule = TargetQuality(target, conf)
    ps = setup(cfg, features)
    llms = [s.name for s in ps.specs if s.kind != "human"]
    col = ps.items["gold"] if "gold" in ps.items.columns else [None] * len(ps.items)
    gold = {str(i): y for i, y in zip(ps.items["item_id"], col, strict=True)
            if isinstance(y, str) and y in ps.labels}  # fmt: skip
    truth, answers = recorded_answers(ps.cfg, llms, gold)
    acc, words = _accuracy(llms, truth, answers, llm_accuracy, min_compared)
    ps.truth.update({i: y for i, y in truth.items() if i in ps.truth})
    outs = []
    for r in range(runs):
        source = ps.source(llm_accuracy, ps.cfg.seed + r, accuracy=acc, recorded=answers)
        _, out = rule.run(
            lambda: make_method(cfg.method, cfg.method_params),
            lambda share: _rung(ps, share),
            source,
            seed=ps.cfg.seed + r,
        )
        outs.append(out)
    known = (
        f"{len(truth)} item(s) with a known label, their recorded LLM answers replayed"
        if answers
        else "no recorded answers: a pilot run (items.limit) makes this plan rest on the "
        "project's own LLMs"
    )
    based = [*words, known, "humans are the truth; LLM errors independent coins; nothing "
             "was called or paid"]  # fmt: skip
    return TargetPlan(
        cfg.name, target, conf, cfg.budget.limit, runs, sum(o.reached for o in outs),
        [o.spent for o in outs], [len(o.steps) for o in outs],
        [o.estimate.low for o in outs],
        [o.more_money for o in outs if not o.reached and o.more_money is not None],
        len(rule.ladder), acc, based,
    )  # fmt: skip


def _rung(ps: PlanSetup, share: float) -> tuple[Any, Budget]:
    """The problem and budget of one rung of the ladder (a share of the ceiling)."""
    import dataclasses

    b = ps.cfg.budget
    problem = ps.problem
    if problem.human_budget is not None:
        problem = dataclasses.replace(problem, human_budget=int(problem.human_budget * share))
    hl = None if b.human_limit is None else int(b.human_limit * share)
    return problem, Budget(b.limit * share, human_limit=hl)
