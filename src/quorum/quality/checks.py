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
import math
from typing import Any

import numpy as np
import pandas as pd

from quorum.data.schema import TaskType
from quorum.quality.estimators import Interval, QualityEstimate, estimate_from
from quorum.quality.predicted import CorrectnessModel, exact_match, rouge1_scorer
from quorum.routing.base import AnnotationSource, Router, RoutingProblem, RoutingResult
from quorum.routing.budget import Budget

#: keys of a run's parameters that configure the checks (``quality_share=0.05``, ...)
PARAM_PREFIX = "quality_"


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

    @classmethod
    def split_params(cls, params: dict[str, Any] | None) -> tuple[QualityChecks | None, dict]:
        """Checks configured by ``quality_*`` keys of a run's parameters (None: no key),
        and the remaining parameters (the router's)."""
        params = dict(params or {})
        mine = {
            k[len(PARAM_PREFIX) :]: params.pop(k)
            for k in list(params)
            if k.startswith(PARAM_PREFIX)
        }
        return (cls(**mine) if mine else None), params

    def n_checks(self, problem: RoutingProblem, budget: Budget, human_price: float) -> int:
        """How many checks this budget pays for (see the class docstring)."""
        if problem.setting == "auditor" and problem.human_budget is not None:
            can_buy = problem.human_budget
        elif human_price > 0:  # the money above the cheapest LLM on every item
            floor = problem.n_items * min((a.price for a in problem.task.llms), default=0.0)
            can_buy = math.floor(max(0.0, budget.limit - floor) / human_price + 1e-9)
        else:
            can_buy = 0
        most = math.floor(self.max_share * can_buy + 1e-9)
        n = max(round(self.share * can_buy), min(self.min_checks, most))
        return max(0, min(n, most, problem.n_items))

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
        c_h = source.price(problem.task.human)
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
        human = task.human
        c_h = source.price(human)
        summaries = task.type is TaskType.summarization
        scorer = rouge1_scorer(task.language) if summaries else exact_match
        llms = [a.name for a in sorted(task.llms, key=lambda a: -a.price)]
        ann = result.annotations
        ok = ann.loc[(ann["status"] == "ok") & ann["output"].notna()]
        if "kind" in ok.columns:
            ok = ok.loc[ok["kind"] != "confidence"]
        by_item: dict[str, dict[str, str]] = {}
        for i, a, o in zip(ok["item_id"], ok["annotator"], ok["output"], strict=True):
            by_item.setdefault(str(i), {})[str(a)] = str(o)
        labels = result.labels.reset_index(drop=True)
        items = labels["item_id"].astype(str).tolist()
        finals = [None if o is None or o != o else str(o) for o in labels["output"]]
        human_out = {i: d.pop(human) for i, d in by_item.items() if human in d}
        llm_answers = [by_item.get(i, {}) for i in items]

        known_total, n_known, machine = 0.0, 0, []
        for k, (i, y) in enumerate(zip(items, finals, strict=True)):
            if i in human_out:
                known_total += scorer(y, human_out[i]) if y is not None else 0.0
                n_known += 1
            elif y is None:
                n_known += 1
            else:
                machine.append(k)
        model = CorrectnessModel(llms, summaries=summaries, scorer=scorer)
        trained = [i for i in items if i in human_out]
        model.fit([by_item.get(i, {}) for i in trained], [human_out[i] for i in trained])
        f = model.predict([finals[k] for k in machine], [llm_answers[k] for k in machine])

        # the simple random sample of the machine-labelled items, in the order drawn
        order = self.draw_order([items[k] for k in machine], seed)
        if not self.use_leftover:
            order = order[: min(n, len(machine))]
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
        outs = source.annotate_many([(items[machine[p]], human) for p, _ in held])
        rows, sample, scores, spent, waiting = [], [], [], 0.0, 0
        new_labels = labels.copy()
        for (pos, res), out in zip(held, outs, strict=True):
            k = machine[pos]
            i = items[k]
            res.settle(out.cost, counted=out.ok)
            spent += out.cost
            waiting += out.status == "pending"
            rows.append((i, human, out.output, out.status, out.cost, "quality_check", "human"))
            if not out.ok:  # unusable or not answered yet: left out (missing at random)
                continue
            sample.append(pos)
            scores.append(scorer(finals[k], out.output))
            if self.replace:
                new_labels.loc[k, "output"] = out.output
                new_labels.loc[k, "human"] = True
                new_labels.loc[k, "n_annotations"] = int(new_labels.loc[k, "n_annotations"]) + 1
                prev = new_labels.loc[k, "annotators"]
                new_labels.loc[k, "annotators"] = f"{prev};{human}" if prev else human
        extra = pd.DataFrame(
            rows, columns=["item_id", "annotator", "output", "status", "cost", "phase", "kind"]
        )
        if len(extra):
            start = int(ann["step"].max()) + 1 if len(ann) and "step" in ann else 1
            extra["step"] = np.arange(start, start + len(extra))
            annotations = pd.concat([ann, extra.reindex(columns=ann.columns)], ignore_index=True)
        else:
            annotations = ann
        info = dict(result.info)
        info["quality_checks"] = {
            "item_id": [items[machine[p]] for p in sample],
            "score": scores,
            "predicted": [float(f[p]) for p in sample],
        }
        info["quality_inputs"] = {
            "known_total": known_total,
            "n_items": len(items),
            "n_known": n_known,
            "predicted": f,
            "sample": np.asarray(sample, dtype=int),
            "scores": np.asarray(scores, dtype=np.float64),
            "replaced": self.replace,
            "check_cost": spent,
        }
        est = estimate_from(info["quality_inputs"], self.confidence, self.interval)
        info["quality"] = est.row()
        info["quality_pending"] = waiting  # live: checks still waiting for a person
        info["quality_model"] = {"n_train": model.n_train_, "fitted": model.model_ is not None}
        checked = dataclasses.replace(
            result,
            labels=new_labels,
            annotations=annotations,
            cost=result.cost + spent,
            human_labels=result.human_labels + len(sample),
            info=info,
        )
        return checked, est
