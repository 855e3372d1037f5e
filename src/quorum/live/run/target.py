"""Quality checks and the target-quality mode of ``quorum annotate`` (docs/quality.md).

- :class:`LiveChecks`: :class:`~quorum.quality.checks.QualityChecks` whose sample is the
  first machine-labelled items of one fixed random order of the project's items (a hash
  of the seed and the item id). Given the machine-labelled set M, that is a simple random
  sample of M (the order is independent of the router), and a pass whose M changed a
  little (a settle pass, a higher rung of the target's ladder, a resumed run) asks again
  for the checks it already bought instead of drawing new ones.
- :class:`LiveTarget`: the target mode's budget ladder, kept in the ledger (``meta``
  ``target``) so that a resumed run goes on at the rung it had reached, with the checks
  already bought (the ledger answers them again) and the looks already made.
- :func:`route_pass`: one routing pass with the checks (and the rung's budget).

The truth of a check is what the human arm returns: with several labels per item, the
vote of the item's labels weighted by each person's reliability
(:mod:`quorum.live.humans.reliability`, refitted as labels come), so every pass scores the
checks against the current vote.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from quorum.live.machines.machine_calls import DEFERRED
from quorum.live.project.config import ProjectConfig
from quorum.live.run.fill import fill_labels
from quorum.quality.checks import QualityChecks
from quorum.quality.estimators import checks_for_width, expected_width
from quorum.quality.target import TARGET_CHECKS, TargetQuality, _more_money
from quorum.routing.core.base import Router, RoutingProblem, RoutingResult
from quorum.routing.core.budget import Budget, from_units

log = logging.getLogger("quorum.live")

#: the ledger ``meta`` key of the target mode's state
META_KEY = "target"
#: the betting interval's width over the t interval's (about a third, docs/quality.md)
BETTING_WIDER = 1.35


class LiveChecks(QualityChecks):
    """Checks drawn in one fixed random order of the items (see the module docstring).

    ``width`` (``[budget] quality_checks = "auto"``, issue 38): as many checks as an
    interval about ``width`` wide needs (:func:`~quorum.quality.estimators.checks_for_width`,
    every item machine-labelled, the widest case), at most ``max_share`` of the checks the
    money above one label per item can buy; None: ``share`` as in replay. A check costs
    what the live source holds for it (:meth:`LiveSource.check_price`: with several labels
    per item, half a label more for the person asked where they disagree). The t
    interval's variance is at least what the predicted scores imply (``variance_floor``,
    :func:`~quorum.quality.estimators.ppi_estimate`): a few dozen live checks that happen
    to agree made intervals 0.16 wide that missed the truth.
    """

    def __init__(
        self, *, width: float | None = None, variance_floor: bool = True, **kw: Any
    ) -> None:
        super().__init__(variance_floor=variance_floor, **kw)
        self.width = width

    def draw_order(self, machine_items: list[str], seed: int = 0) -> np.ndarray:
        keys = [_rank(self.stream, seed, i) for i in machine_items]
        return np.argsort(np.asarray(keys, dtype=np.uint64), kind="stable")

    def check_price(self, source: Any, human: str) -> float:
        held = getattr(source, "check_price", None)
        return float(held(human)) if callable(held) else float(source.price(human))

    def wanted(self, n_items: int) -> int:
        """The checks an interval about ``width`` wide needs (``width`` set)."""
        assert self.width is not None
        return checks_for_width(self.width / self.widening, n_items, self.confidence)

    @property
    def widening(self) -> float:
        """How much wider the interval rule is than the t interval the sizing assumes: the
        betting interval about a third (docs/quality.md, measured on the bench)."""
        return BETTING_WIDER if self.interval == "betting" else 1.0

    def n_checks(self, problem: RoutingProblem, budget: Budget, human_price: float) -> int:
        if self.width is None:
            return super().n_checks(problem, budget, human_price)
        most = math.floor(self.max_share * self.can_buy(problem, budget, human_price) + 1e-9)
        return max(0, min(self.wanted(problem.n_items), most, problem.n_items))

    def outlook(self, problem: RoutingProblem, budget: Budget, source: Any) -> tuple[str, bool]:
        """What the checks will be, in one line, before anything is spent: how many, what
        they cost, the width to expect, and where the budget buys fewer than wanted, so
        (then the second value is True: a warning)."""
        price = self.check_price(source, problem.task.human)
        n = self.n_checks(problem, budget, price)
        w = min(1.0, expected_width(n, problem.n_items, self.confidence) * self.widening)
        level = f"{self.confidence:.0%}"
        if n == 0:
            return (
                f"quality checks: none: the money above one label per item buys no check at "
                f"{price:.4g} a check, so the labels' quality gets no estimate (the {level} "
                "interval is every value); raise budget.limit for one",
                True,
            )
        line = (
            f"quality checks: {n} random human check(s) at about {price:.4g} each "
            f"({n * price:.4g} of the budget {budget.limit:.4g}), kept for them whatever "
            f"else is queued; the {level} interval of the labels' quality is expected to be "
            f"about {w:.2f} wide"
        )
        short = self.width is not None and n < self.wanted(problem.n_items)
        if short:
            want = self.wanted(problem.n_items)
            line += (
                f"; an interval about {self.width:.2f} wide needs {want} checks, more than "
                f"budget.quality_max_share ({self.max_share:g}) of the money above one label "
                f"per item buys: raise budget.limit (about {want * price:.4g} for the checks) "
                "or budget.quality_max_share, or accept the wider interval"
            )
        return line, short


def _rank(stream: int, seed: int, item_id: str) -> int:
    h = hashlib.blake2b(f"{stream}\x00{seed}\x00{item_id}".encode(), digest_size=8)
    return int.from_bytes(h.digest(), "big")


def plain_checks(cfg: ProjectConfig) -> LiveChecks | None:
    """The checks of a run without a target: ``[budget] quality_checks`` "auto" (default),
    as many as an interval about ``quality_width`` wide needs, at most
    ``quality_max_share`` of those the money above one label per item buys; a number, that
    share of the human labels the budget can buy (at most that share, not the replay cap
    of 5 %). None from money the router leaves (live money the router did not need stays
    unspent)."""
    b = cfg.budget
    share = b.quality_checks
    if share == "auto":
        return LiveChecks(
            share=0.0, min_checks=0, max_share=b.quality_max_share, confidence=b.level,
            use_leftover=False, width=b.quality_width, interval=b.quality_interval,
        )  # fmt: skip
    if not share:
        return None
    return LiveChecks(share=share, max_share=max(share, 0.05), confidence=b.level,
                      use_leftover=False, interval=b.quality_interval)  # fmt: skip


@dataclass
class LiveTarget:
    """The target mode's ladder (:class:`~quorum.quality.target.TargetQuality`) in a live
    run: the rung, the looks made, and how it ended (``state``: climbing, reached or
    not_reached). Each look's lower bound is one-sided at 1 - alpha / K (Bonferroni over
    the K planned looks)."""

    target: float
    confidence: float
    ceiling: float
    ladder: tuple[float, ...] = TargetQuality(0.5).ladder
    step: int = 0
    looks: list[dict[str, Any]] = field(default_factory=list)
    state: str = "climbing"
    more_money: float | None = None
    message: str = ""

    @classmethod
    def of(cls, cfg: ProjectConfig, ledger: Any) -> LiveTarget | None:
        """The project's target state from the ledger, or a new ladder (None: no target).
        A different target, confidence or budget starts a new ladder."""
        b = cfg.budget
        if b.target_quality is None:
            return None
        new = cls(b.target_quality, b.level, b.limit)
        rows = ledger.query("SELECT value FROM meta WHERE key=?", (META_KEY,))
        if not rows:
            return new
        old = cls(**json.loads(rows[0]["value"]))
        if (old.target, old.confidence, old.ceiling) == (new.target, new.confidence, new.ceiling):
            return old
        log.warning("target, confidence or budget changed since the last run: a new ladder "
                    "(the calls already paid are reused)")  # fmt: skip
        return new

    @property
    def rule(self) -> TargetQuality:
        return TargetQuality(self.target, self.confidence, self.ladder)

    @property
    def share(self) -> float:
        return self.ladder[self.step]

    def checks(self) -> LiveChecks:
        """The checks of a look: more than a plain run's (the stop rests on the lower
        bound), at the look's level (two-sided 1 - 2 alpha / K)."""
        return LiveChecks(**TARGET_CHECKS, confidence=self.rule.look_confidence())

    def rung(self, problem: RoutingProblem, budget: Budget) -> tuple[RoutingProblem, Budget]:
        """The problem and budget of the current rung: its share of the ceiling (and, in
        the auditor setting, of the human labels)."""
        share = self.share
        hl = budget.human_limit
        rung = Budget(self.ceiling * share, human_limit=None if hl is None else int(hl * share))
        if budget.spent > 0:  # charged interrupted calls
            rung.charge(min(budget.spent, rung.remaining))
        if problem.human_budget is not None:
            problem = dataclasses.replace(problem, human_budget=int(problem.human_budget * share))
        return problem, rung

    def look(self, result: RoutingResult, spent: float) -> bool:
        """Look at a complete pass of the current rung; True: climb and route again."""
        if self.state != "climbing" or "quality" not in result.info:
            return False
        q = result.info["quality"]
        self.looks.append({
            "share": self.share, "limit": round(self.ceiling * self.share, 9),
            "spent": round(spent, 9), "estimate": q["quality_estimate"],
            "low": q["quality_low"], "high": q["quality_high"],
            "n_checks": q["quality_n_checks"],
        })  # fmt: skip
        if q["quality_low"] >= self.target:
            self.state = "reached"
        elif self.step + 1 < len(self.ladder):
            self.step += 1
            log.info("look %d of %d: lower bound %.3f below the target %.3f; spending up to "
                     "%.4g of the budget", len(self.looks), len(self.ladder), q["quality_low"],
                     self.target, self.ceiling * self.share)  # fmt: skip
            return True
        else:
            self.state = "not_reached"
            self.more_money = _more_money(self.looks, self.target)
        self.message = self._words(q)
        return False

    def _words(self, q: dict[str, Any]) -> str:
        k, n = len(self.looks), len(self.ladder)
        spent = self.looks[-1]["spent"]
        at = f"{self.confidence:.0%} confidence"
        if self.state == "reached":
            early = "; spending stopped early" if k < n else ""
            return (f"target {self.target:.3f} reached at {at} at look {k} of {n}: lower bound "
                    f"{q['quality_low']:.3f}, spent {spent:.4g} of the budget "
                    f"{self.ceiling:.4g}{early}")  # fmt: skip
        more = (
            f"; about {self.more_money:.4g} more money would reach it if the lower bound kept "
            "rising as over the last look"
            if self.more_money is not None
            else "; the lower bound did not rise over the last look, so more money alone may "
            "not reach it"
        )
        return (f"target {self.target:.3f} not reached within the budget {self.ceiling:.4g}: "
                f"estimate {q['quality_estimate']:.3f}, lower bound {q['quality_low']:.3f} "
                f"at {at}" + more)  # fmt: skip

    def looked(self, result: RoutingResult, ledger: Any) -> bool:
        """After a complete, settled pass: look (:meth:`look`) and keep the state in the
        ledger; True: the run climbed a rung and routes again."""
        if self.state != "climbing":
            return False
        climb = self.look(result, from_units(ledger.money_units()["committed"]))
        self.save(ledger)
        if not climb and self.message:
            log.info("%s", self.message)
        return climb

    def save(self, ledger: Any) -> None:
        with ledger.tx() as c:
            c.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                      (META_KEY, json.dumps(dataclasses.asdict(self))))  # fmt: skip

    def row(self) -> dict[str, Any]:
        """What the run summary, ``status --json`` and the report carry."""
        last = self.looks[-1] if self.looks else {}
        saved = self.ceiling - last["spent"] if self.state == "reached" else None
        return {
            "target_quality": self.target, "confidence": self.confidence,
            "state": self.state, "reached": self.state == "reached",
            "looks": len(self.looks), "planned_looks": len(self.ladder),
            "rung": self.step + 1, "rung_limit": round(self.ceiling * self.share, 9),
            "ceiling": self.ceiling, "spent": last.get("spent"),
            "saved": None if saved is None else round(saved, 9),
            "lower_bound": last.get("low"), "more_money": self.more_money,
            "message": self.message, "steps": list(self.looks),
        }  # fmt: skip


def route_pass(
    cfg: ProjectConfig,
    router: Router,
    problem: RoutingProblem,
    source: Any,
    budget: Budget,
    target: LiveTarget | None = None,
) -> RoutingResult:
    """One pass of the router: on the rung's budget (target mode) less the checks' money;
    the items it left without a label are filled (:func:`~quorum.live.run.fill.fill_labels`),
    and the random checks are asked once the pass is complete (not waiting for a person).
    The fill comes first, so the checks draw from the labels the run will export, the
    label model's among them (issue 38's trial: filled after the checks, its 276 items were
    never checked and the checks could draw only from the 12 the LLMs labelled).

    The live source is told the pass's bounds (issue 38): no call of the pass takes the
    ledger's money past the rung's limit, and none but the checks' takes the money kept
    for them, so that tasks sent ahead or calls of earlier passes never eat it."""
    if target is not None:
        problem, budget = target.rung(problem, budget)
    checks = target.checks() if target is not None else plain_checks(cfg)
    cap = budget.limit if target is not None else None
    bound = getattr(source, "bound_pass", None)
    if checks is None:
        if bound is not None:
            bound(cap, 0.0)
        return fill_labels(router.route(problem, source, budget, seed=cfg.seed), problem, source)
    inner_problem, inner, n = checks.split(problem, budget, source)
    if bound is not None:
        bound(cap, n * checks.check_price(source, problem.task.human))
    result = fill_labels(router.route(inner_problem, source, inner, seed=cfg.seed), problem, source)
    if source.waiting:  # the pass waits for a person: its labels are not final yet
        return result
    checking = getattr(source, "checking", None)
    with checking() if checking is not None else contextlib.nullcontext():
        return checks.check(result, problem, source, budget, n, seed=cfg.seed)[0]


def send_checks_first(
    cfg: ProjectConfig, problem: RoutingProblem, source: Any, target: LiveTarget | None
) -> int:
    """Send the random checks to the people before the router starts (issue 38: a team
    waited 140 s for its first task while the cheapest LLM labelled every item).

    The checks are the first machine-labelled items of one fixed random order of the
    items (:class:`LiveChecks`), so the first n items of that order are each either a
    check or an item the router sends to people itself (then the check takes the next
    one): none is wasted, and the sample is the one the checks would draw at the end.
    Returns how many tasks were asked (answered ones come back from the ledger)."""
    human = problem.task.human
    if getattr(source, "human", None) is None or not hasattr(source, "checking"):
        return 0
    budget = Budget(cfg.budget.limit, human_limit=cfg.budget.human_limit)
    if target is not None:
        problem, budget = target.rung(problem, budget)
    checks = target.checks() if target is not None else plain_checks(cfg)
    if checks is None:
        return 0
    _, _, n = checks.split(problem, budget, source)
    if n <= 0:
        return 0
    ids = [str(i) for i in problem.item_ids]
    first = [ids[int(p)] for p in checks.draw_order(ids, cfg.seed)[:n]]
    source.bound_pass(budget.limit if target is not None else None,
                      n * checks.check_price(source, human))  # fmt: skip
    with source.checking(settle=False):
        outs = source.annotate_many([(i, human) for i in first])
    sent = sum(o.status == "pending" and o.raw != DEFERRED for o in outs)
    if sent:
        log.info("%d random check(s) sent to the people first, while the machines label "
                 "the items", sent)  # fmt: skip
    return len(first)


def checks_outlook(
    cfg: ProjectConfig, problem: RoutingProblem, source: Any, target: LiveTarget | None
) -> tuple[str, bool] | None:
    """The run's checks in one line before anything is spent, and whether it is a warning
    (fewer than wanted, or none); None: no checks. In target mode those of the first
    rung."""
    budget = Budget(cfg.budget.limit, human_limit=cfg.budget.human_limit)
    if target is not None:
        problem, budget = target.rung(problem, budget)
    checks = target.checks() if target is not None else plain_checks(cfg)
    if checks is None:
        return None
    return checks.outlook(problem, budget, source)


def target_status(saved: str | None) -> dict[str, Any] | None:
    """``status --json``'s ``target``: the ladder's state kept in the ledger (None where
    the project never ran with a target)."""
    if not saved:
        return None
    try:
        return LiveTarget(**json.loads(saved)).row()
    except (ValueError, TypeError):
        return None


def quality_lines(q: dict[str, Any] | None, t: dict[str, Any] | None) -> list[str]:
    """The lines ``quorum annotate`` and ``quorum status`` print about the estimate and the
    target (none without them)."""
    out = []
    if q:
        out.append(
            f"labels' quality (vs the human label): {q['quality_estimate']:.3f}, "
            f"{q['quality_confidence']:.0%} interval {q['quality_low']:.3f}-"
            f"{q['quality_high']:.3f}, from {q['quality_n_checks']} random checks"
            + (f" ({q['pending_checks']} waiting)" if q.get("pending_checks") else "")
        )
    if t:
        out.append(t["message"] or (
            f"target {t['target_quality']:.3f} at {t['confidence']:.0%} confidence: rung "
            f"{t['rung']} of {t['planned_looks']} (spending up to {t['rung_limit']:.4g} of "
            f"{t['ceiling']:.4g}), {t['looks']} look(s) so far"
        ))  # fmt: skip
    return out
