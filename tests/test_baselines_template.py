"""The baselines' one route template (BaselineRouter): checks, run opening, thread limit."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from baselines_fakes import auditor_budget, make_dataset, make_problem, source_of
from quorum.baselines._common import BaselineRouter, Routed, label_frame
from quorum.errors import UnsupportedTaskError
from quorum.methods import METHODS, get_router_class
from quorum.routing.core.budget import Budget
from quorum.routing.core.run_core import RunCore

BASELINES = [m for m in METHODS if not get_router_class(m).is_quorum]
PRICES = {"cheap": 0.01, "strong": 0.05}


@pytest.mark.parametrize("name", BASELINES)
def test_every_baseline_uses_the_template(name):
    cls = get_router_class(name)
    assert issubclass(cls, BaselineRouter)
    assert cls.route is BaselineRouter.route  # the prologue is not redefined
    # its own rule (an *-ensemble variant inherits its paper form's rule)
    assert any("_route" in vars(k) for k in cls.__mro__[: cls.__mro__.index(BaselineRouter)])


def test_the_prologue_is_written_once():
    """No baseline module builds its own recorder or seeded generator in ``_route``."""
    folder = Path(inspect.getfile(BaselineRouter)).parent
    for path in folder.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef) and fn.name == "_route":
                src = ast.unparse(fn)
                assert "CallRecorder(" not in src and "default_rng(" not in src, path.name


class Probe(BaselineRouter):
    """Records what the template hands over; asks a human for the first item."""

    name = "probe"

    def __init__(self, needs_labels: bool = False, n_threads: int | None = None) -> None:
        self.needs_labels = needs_labels
        self.n_threads = n_threads

    def _route(self, run: RunCore) -> Routed:
        self.run = run
        self.threads = {i["internal_api"]: i["num_threads"] for i in threadpool_info()}
        self.draw = run.rng.random()
        run.rec.annotate(run.ids[0], run.human, phase="route")
        labels = label_frame(run.ids, run.rec, {i: "a" for i in run.ids})
        return Routed(labels, {"rule": "probe"})


def _toy(summarization: bool = False):
    gold = ["a", "b", "a", "b"]
    ds = make_dataset(gold, {a: list(gold) for a in PRICES}, PRICES, summarization=summarization)
    return ds, make_problem(ds, "auditor", human_budget=1), source_of(ds, summarization)


def test_template_opens_the_run_and_builds_the_result():
    ds, problem, src = _toy()
    r = Probe()
    budget = auditor_budget(problem, r, src, 1)
    res = r.route(problem, src, budget, seed=7)
    run = r.run
    assert run.problem is problem and run.budget is budget and run.seed == 7
    assert run.T == 4 and list(run.ids) == list(problem.item_ids)
    assert run.human == ds.task.human and run.rec.budget is budget
    assert r.draw == np.random.default_rng(7).random()  # the generator is seeded, unused before
    assert (res.method, res.seed, res.human_labels) == ("probe", 7, 1)
    assert res.info == {"params": {"needs_labels": False, "n_threads": None}, "rule": "probe"}
    assert res.cost == pytest.approx(budget.spent) and res.trace is None
    assert list(res.labels["item_id"]) == list(problem.item_ids)


def test_template_refuses_what_the_method_cannot_do():
    _, problem, src = _toy(summarization=True)
    with pytest.raises(UnsupportedTaskError, match="summarization"):
        Probe(needs_labels=True).route(problem, src, Budget(1.0))
    ds, problem, src = _toy()
    problem.task = ds.task.model_copy(update={"annotators": []})
    assert problem.llms == []
    with pytest.raises(ValueError, match="at least one machine annotator"):
        Probe().route(problem, src, Budget(1.0))


def test_n_threads_limits_blas_only_while_routing():
    _, problem, src = _toy()
    before = {i["internal_api"]: i["num_threads"] for i in threadpool_info()}
    r = Probe(n_threads=1)
    r.route(problem, src, Budget(1.0))
    assert r.threads and set(r.threads.values()) == {1}
    assert {i["internal_api"]: i["num_threads"] for i in threadpool_info()} == before
