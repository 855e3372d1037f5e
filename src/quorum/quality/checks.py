"""Random human checks bought out of the run's own budget, wrapped around any router.

:class:`QualityChecks` sets aside the money of n human labels, runs the router on the rest
(``Budget(limit - n c_H)``; in the auditor setting also ``B - n`` human labels), then draws
a simple random sample of n of the items the router did *not* send to a human (the items
it did are scored for free against their human label) and buys a human label for each.
A checked item's final label becomes its human label (nothing paid for is lost), and
:func:`~quorum.quality.estimators.ppi_estimate` turns the checks into the estimate.

How many checks (ours, each a parameter): ``share`` of the human labels the budget can buy
(dollars: the money above the cheapest LLM on every item, ``(limit - T c_min) / c_H``, so
that the checks never leave an item without a label; auditor: B), at least ``min_checks``
but never more than ``max_share`` of them; with ``use_leftover``, what the router leaves
unspent buys more. The sample is drawn with its own random stream
(``seed``, ``stream``), independent of the router's.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
from typing import Any

import numpy as np
import pandas as pd

from quorum.quality.estimators import Interval, QualityEstimate, estimate_from
from quorum.quality.predicted import CorrectnessModel
from quorum.routing.core.base import AnnotationSource, Router, RoutingProblem, RoutingResult
from quorum.routing.core.budget import Budget

#: keys of a run's parameters that configure the checks (``quality_share=0.05``, ...)
PARAM_PREFIX = "quality_"
#: the run parameter that turns the checks on or off (``quality = false``)
SWITCH = "quality"
#: the routers whose replay runs buy the checks unless told not to (ours): QUORUM pays
#: for its own estimate out of its budget, at equal spend; the paper's baselines (and
#: the paper preset) run as the paper ran them, without checks (docs/quality.md)
CHECKED_BY_DEFAULT = frozenset({"quorum"})


def checks_by_default(method: str) -> bool:
    """Whether a replay run of ``method`` (a registry name) buys the checks by default.

    >>> checks_by_default("quorum"), checks_by_default("random"), checks_by_default("quorum-paper")
    (True, False, False)
    """
    return method in CHECKED_BY_DEFAULT


class QualityChecks:
    """Buy ``n`` random human checks out of the budget and estimate the labels' quality.

    Parameters
    ----------
    share: share of the human labels the budget can buy spent on random checks.
    min_checks: fewest checks (when ``max_share`` allows).
    max_share: most of the human labels the budget can buy spent on checks.
    confidence: level of the interval (0.95: a 95 % interval).
    interval: "clt" (t interval, PPI) or "betting" (anytime-valid confidence sequence).
    replace: a checked item's final label becomes its human label.
    use_leftover: money (and auditor human labels) the router left unspent buys more checks.
    stream: the sample's random stream, apart from the router's (``seed`` is the run's).
    variance_floor: with 0/1 scores, the t interval's variance is at least the mean of
        f (1 - f) over the checks (:func:`~quorum.quality.estimators.ppi_estimate`; live).
    """

    def __init__(
        self,
        share: float = 0.03,
        min_checks: int = 10,
        max_share: float = 0.05,
        confidence: float = 0.95,
        interval: Interval = "clt",
        replace: bool = True,
        use_leftover: bool = True,
        stream: int = 2424,
        variance_floor: bool = False,
    ) -> None:
        if not 0.0 <= share <= 1.0 or not 0.0 <= max_share <= 1.0:
            raise ValueError(f"share and max_share must be in [0, 1], got {share}, {max_share}")
        if not 0.0 < confidence < 1.0:
            raise ValueError(f"confidence must be in (0, 1), got {confidence}")
        if interval not in ("clt", "betting"):
            raise ValueError(f"interval must be 'clt' or 'betting', got {interval!r}")
        self.share = share
        self.min_checks = min_checks
        self.max_share = max_share
        self.confidence = confidence
        self.interval = interval
        self.replace = replace
        self.use_leftover = use_leftover
        self.stream = stream
        self.variance_floor = variance_floor

    @classmethod
    def split_params(
        cls, params: dict[str, Any] | None, default: bool = False
    ) -> tuple[QualityChecks | None, dict]:
        """Checks configured by a run's parameters, and the remaining ones (the router's).

        ``quality`` (true / false) turns the checks on or off; ``quality_<name>`` keys set
        a :class:`QualityChecks` parameter (and turn them on); neither: ``default`` (see
        :func:`checks_by_default`). ``quality = false`` with ``quality_*`` keys is refused.
        """
        on, kw, rest = cls.read_params(params)
        if on is False or not (on or kw or default):
            return None, rest
        return cls(**kw), rest

    @classmethod
    def read_params(cls, params: dict[str, Any] | None) -> tuple[bool | None, dict, dict]:
        """``(quality, {name: value} of the quality_* keys, the router's parameters)``,
        validated: ``quality`` a boolean or absent, every name a :class:`QualityChecks`
        parameter, no ``quality_*`` key with ``quality = false``."""
        rest = dict(params or {})
        on = rest.pop(SWITCH, None)
        if on is not None and not isinstance(on, bool):
            raise ValueError(f"{SWITCH} must be true or false, got {on!r}")
        kw = {k[len(PARAM_PREFIX) :]: rest.pop(k) for k in list(rest) if k.startswith(PARAM_PREFIX)}
        known = _init_names(cls)
        bad = sorted(set(kw) - known)
        if bad:
            raise ValueError(
                f"unknown quality check parameter(s) {[PARAM_PREFIX + k for k in bad]}; "
                f"known: {sorted(PARAM_PREFIX + k for k in known)}"
            )
        if on is False and kw:
            drop = sorted(PARAM_PREFIX + k for k in kw)
            raise ValueError(f"{SWITCH} = false turns the checks off: drop {drop}")
        return on, kw, rest

    def can_buy(self, problem: RoutingProblem, budget: Budget, human_price: float) -> int:
        """The human labels (checks) the budget can buy: auditor, B; dollars, the money
        above the cheapest LLM on every item over ``human_price``."""
        if problem.setting == "auditor" and problem.human_budget is not None:
            return int(problem.human_budget)
        if human_price > 0:  # the money above the cheapest LLM on every item
            floor = problem.n_items * min((a.price for a in problem.task.llms), default=0.0)
            return math.floor(max(0.0, budget.limit - floor) / human_price + 1e-9)
        return 0

    def n_checks(self, problem: RoutingProblem, budget: Budget, human_price: float) -> int:
        """How many checks this budget pays for (see the class docstring)."""
        can_buy = self.can_buy(problem, budget, human_price)
        most = math.floor(self.max_share * can_buy + 1e-9)
        n = max(round(self.share * can_buy), min(self.min_checks, most))
        return max(0, min(n, most, problem.n_items))

    def check_price(self, source: AnnotationSource, human: str) -> float:
        """What one check costs (the human arm's price; a live source may hold more)."""
        return source.price(human)

    # ------------------------------------------------------------------ run
    def route(
        self,
        router: Router,
        problem: RoutingProblem,
        source: AnnotationSource,
        budget: Budget,
        seed: int = 0,
    ) -> tuple[RoutingResult, QualityEstimate]:
        """Run ``router`` on the budget less the checks' money, buy the checks, estimate."""
        inner_problem, inner, n = self.split(problem, budget, source)
        result = router.route(inner_problem, source, inner, seed=seed)
        return self.check(result, problem, source, budget, n, seed)

    def split(
        self, problem: RoutingProblem, budget: Budget, source: AnnotationSource
    ) -> tuple[RoutingProblem, Budget, int]:
        """The router's problem and budget (the checks' money set aside), and n."""
        c_h = self.check_price(source, problem.task.human)
        n = self.n_checks(problem, budget, c_h)
        inner_problem = problem
        if problem.setting == "auditor" and problem.human_budget is not None:
            inner_problem = dataclasses.replace(problem, human_budget=problem.human_budget - n)
        inner = Budget(
            limit=max(0.0, budget.limit - n * c_h),
            human_limit=None if budget.human_limit is None else budget.human_limit - n,
        )
        if budget.spent > 0:  # money the caller charged already (live: interrupted calls)
            inner.charge(min(budget.spent, inner.remaining))
        return inner_problem, inner, n

    def draw_order(self, machine_items: list[str], seed: int = 0) -> np.ndarray:
        """Positions in ``machine_items`` (the machine-labelled items) in the order the
        checks are drawn: a random permutation from the checks' own stream."""
        rng = np.random.default_rng([self.stream, int(seed)])
        return rng.permutation(len(machine_items))

    def check(
        self,
        result: RoutingResult,
        problem: RoutingProblem,
        source: AnnotationSource,
        budget: Budget,
        n: int,
        seed: int = 0,
    ) -> tuple[RoutingResult, QualityEstimate]:
        """Buy up to ``n`` random checks after ``result`` and estimate its quality."""
        task = problem.task
        c_h = self.check_price(source, task.human)
        scorer = task.kind.scorer(task.language)
        by_item, human_out = _answers_by_item(result.annotations, task.human)
        labels = result.labels.reset_index(drop=True)
        items = labels["item_id"].astype(str).tolist()
        finals = [None if o is None or o != o else str(o) for o in labels["output"]]
        known_total, n_known, machine = _strata(items, finals, human_out, scorer)
        llms = [a.name for a in sorted(task.llms, key=lambda a: -a.price)]
        model = CorrectnessModel(llms, graded=task.kind.graded, scorer=scorer)
        trained = [i for i in items if i in human_out]
        model.fit([by_item.get(i, {}) for i in trained], [human_out[i] for i in trained])
        f = model.predict(
            [finals[k] for k in machine], [by_item.get(items[k], {}) for k in machine]
        )
        held = self._reserve([items[k] for k in machine], n, result, budget, c_h, seed)
        outs = source.annotate_many([(items[machine[p]], task.human) for p, _ in held])
        bought = self._apply(held, outs, machine, items, finals, labels, task.human, scorer)
        info = dict(result.info)
        info["quality_checks"] = {
            "item_id": [items[machine[p]] for p in bought.sample],
            "score": bought.scores,
            "predicted": [float(f[p]) for p in bought.sample],
        }
        info["quality_inputs"] = {
            "known_total": known_total,
            "n_items": len(items),
            "n_known": n_known,
            "predicted": f,
            "sample": np.asarray(bought.sample, dtype=int),
            "scores": np.asarray(bought.scores, dtype=np.float64),
            "replaced": self.replace,
            "check_cost": bought.spent,
        }
        if self.variance_floor and not task.kind.graded and bought.sample:
            fs = np.asarray([float(f[p]) for p in bought.sample])
            info["quality_inputs"]["var_floor"] = float(np.mean(fs * (1.0 - fs)))
        est = estimate_from(info["quality_inputs"], self.confidence, self.interval)
        info["quality"] = est.row()
        info["quality_pending"] = bought.waiting  # live: checks still waiting for a person
        info["quality_model"] = {"n_train": model.n_train_, "fitted": model.model_ is not None}
        checked = dataclasses.replace(
            result,
            labels=bought.labels,
            annotations=_with_calls(result.annotations, bought.rows),
            budget_limit=budget.limit,  # the whole budget: the router's and the checks'
            cost=result.cost + bought.spent,
            human_labels=result.human_labels + len(bought.sample),
            info=info,
        )
        return checked, est

    def _reserve(
        self,
        machine_items: list[str],
        n: int,
        result: RoutingResult,
        budget: Budget,
        c_h: float,
        seed: int,
    ) -> list[tuple[int, Any]]:
        """The simple random sample of the machine-labelled items (their ids) in the order
        drawn (:meth:`draw_order`), each with a reservation of c_H, as far as the room left
        affords."""
        n_machine = len(machine_items)
        order = self.draw_order(machine_items, seed)
        if not self.use_leftover:
            order = order[: min(n, n_machine)]
        room = Budget(
            limit=max(0.0, budget.limit - result.cost),
            human_limit=None
            if budget.human_limit is None
            else budget.human_limit - result.human_labels,
        )
        # reserve what the room affords, then ask for every check at once (live: one batch
        # of human tasks, answered while the run waits)
        held = []
        for pos in order:
            if not room.can_afford(c_h, human=True):
                break
            held.append((int(pos), room.reserve(c_h, human=True)))
        return held

    def _apply(
        self,
        held: list[tuple[int, Any]],
        outs: list[Any],
        machine: list[int],
        items: list[str],
        finals: list[str | None],
        labels: pd.DataFrame,
        human: str,
        scorer: Any,
    ) -> _Bought:
        """Settle the checks' reservations, score the usable answers and (``replace``) make
        them the checked items' final labels."""
        bought = _Bought(labels.copy())
        for (pos, res), out in zip(held, outs, strict=True):
            k = machine[pos]
            res.settle(out.cost, counted=out.ok)
            bought.spent += out.cost
            bought.waiting += out.status == "pending"
            row = (items[k], human, out.output, out.status, out.cost, "quality_check", "human")
            bought.rows.append(row)
            if not out.ok:  # unusable or not answered yet: left out (missing at random)
                continue
            bought.sample.append(pos)
            bought.scores.append(scorer(finals[k], out.output))
            if self.replace:
                _relabel(bought.labels, k, out.output, human)
        return bought


@functools.cache
def _init_names(cls: type) -> frozenset[str]:
    return frozenset(inspect.signature(cls.__init__).parameters) - {"self"}


@dataclasses.dataclass
class _Bought:
    """What the checks bought: final labels, call rows, the usable sample and its scores."""

    labels: pd.DataFrame
    rows: list[tuple] = dataclasses.field(default_factory=list)
    sample: list[int] = dataclasses.field(default_factory=list)
    scores: list[float] = dataclasses.field(default_factory=list)
    spent: float = 0.0
    waiting: int = 0


def _answers_by_item(
    ann: pd.DataFrame, human: str
) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """Each item's usable LLM answers by annotator, and its human label where it has one."""
    ok = ann.loc[(ann["status"] == "ok") & ann["output"].notna()]
    if "kind" in ok.columns:
        ok = ok.loc[ok["kind"] != "confidence"]
    by_item: dict[str, dict[str, str]] = {}
    for i, a, o in zip(ok["item_id"], ok["annotator"], ok["output"], strict=True):
        by_item.setdefault(str(i), {})[str(a)] = str(o)
    human_out = {i: d.pop(human) for i, d in by_item.items() if human in d}
    return by_item, human_out


def _strata(
    items: list[str], finals: list[str | None], human_out: dict[str, str], scorer: Any
) -> tuple[float, int, list[int]]:
    """The known stratum K (its total score and size) and the positions of M's items."""
    known_total, n_known, machine = 0.0, 0, []
    for k, (i, y) in enumerate(zip(items, finals, strict=True)):
        if i in human_out:
            known_total += scorer(y, human_out[i]) if y is not None else 0.0
            n_known += 1
        elif y is None:
            n_known += 1
        else:
            machine.append(k)
    return known_total, n_known, machine


def _relabel(labels: pd.DataFrame, k: int, output: str, human: str) -> None:
    """Row ``k``'s final label becomes the human's ``output``."""
    labels.loc[k, "output"] = output
    labels.loc[k, "human"] = True
    labels.loc[k, "n_annotations"] = int(labels.loc[k, "n_annotations"]) + 1
    prev = labels.loc[k, "annotators"]
    labels.loc[k, "annotators"] = f"{prev};{human}" if prev else human
    if "labelled_by" in labels.columns:  # live: a fallback's label is now the human's
        labels.loc[k, "labelled_by"] = None


def _with_calls(ann: pd.DataFrame, rows: list[tuple]) -> pd.DataFrame:
    """The annotations with the checks' calls appended (numbered steps after the last)."""
    extra = pd.DataFrame(
        rows, columns=["item_id", "annotator", "output", "status", "cost", "phase", "kind"]
    )
    if not len(extra):
        return ann
    start = int(ann["step"].max()) + 1 if len(ann) and "step" in ann else 1
    extra["step"] = np.arange(start, start + len(extra))
    return pd.concat([ann, extra.reindex(columns=ann.columns)], ignore_index=True)
