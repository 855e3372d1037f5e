"""Budget fractions above 1.0: allowed in dollars (money beyond the all-human cost), refused
in the auditor setting (a share of the items, at most all of them), before any loading."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import quorum.simulate as sim
from quorum.cli.main import app
from quorum.data.schema import AnnotatorSpec, Dataset, TaskSpec
from quorum.routing.core.replay import RecordedSource


def prepared(n: int = 40) -> sim.Prepared:
    task = TaskSpec(
        name="t",
        type="classification",
        labels=["a", "b"],
        annotators=[AnnotatorSpec(name="m", price=0.01)],
        human_price=0.1,
    )
    ids = [str(i) for i in range(n)]
    items = pd.DataFrame({"item_id": ids, "text": ids, "gold": ["a"] * n})
    ann = pd.DataFrame({"item_id": ids, "annotator": "m", "output": ["a", "b"] * (n // 2)})
    ds = Dataset(task, items, ann)
    return sim.Prepared(ds, task, np.zeros((n, 3)), None, RecordedSource(ds))


@pytest.mark.parametrize("fraction", [0.0, 1.0, 1.2, 3.0])
def test_dollars_fraction_is_money_even_above_one(fraction):
    problem, budget = sim.make_problem(prepared(), "dollars", fraction)
    assert budget.limit == pytest.approx(fraction * 40 * 0.1)
    assert budget.human_limit is None and problem.human_budget is None


def test_auditor_fraction_stops_at_one():
    _, budget = sim.make_problem(prepared(), "auditor", 1.0)
    assert budget.human_limit == 40
    with pytest.raises(ValueError, match=r"auditor budget 1.2 is the share of items .* dollars"):
        sim.make_problem(prepared(), "auditor", 1.2)


@pytest.mark.parametrize("fraction", [-0.1, float("nan"), float("inf")])
def test_nonsense_fractions_are_refused(fraction):
    with pytest.raises(ValueError, match="must be a number >= 0"):
        sim.check_fraction("dollars", fraction)


def test_cli_refuses_an_auditor_fraction_above_one_before_loading(monkeypatch):
    import quorum.data.loaders as loaders

    def no_load(*args, **kwargs):
        raise AssertionError("the dataset was loaded")

    monkeypatch.setattr(loaders, "load_dataset", no_load)
    res = CliRunner().invoke(
        app, ["simulate", "-d", "anything", "--setting", "auditor", "--budget", "1.2"]
    )
    assert res.exit_code == 1 and "at most 1.0" in res.output


@pytest.mark.realdata
@pytest.mark.parametrize("method", ["quorum", "random"])
def test_a_dollars_budget_of_1_2_is_usable_on_real_data(shared_data_dir, method):
    """flute: 500 items, all-human cost 50; with 60 every item can get a human label."""
    prep = sim.prepare("llms-for-css/flute")
    row, _ = sim.simulate_once(prep, method, "dollars", 1.2, 0)
    assert row["budget_limit"] == pytest.approx(60.0)
    assert row["cost"] <= 60.0 + 1e-9
    assert row["human_labels"] == row["n_items"] == 500 and row["accuracy"] == 1.0


def test_make_router_names_an_unknown_parameter():
    from quorum.api import make_router

    with pytest.raises(ValueError, match=r"random: unknown parameter\(s\) \['tau_h'\]"):
        make_router("random", tau_h=0.3)
    assert make_router("quorum", tau_h=0.3).tau_h == 0.3


@pytest.mark.parametrize("price", ["-1", "nan", "inf"])
def test_a_price_that_is_no_money_is_refused(price):
    """--annotators refuses them (tests/test_simulate_cli_odd_options.py runs the CLI); a
    task's annotator, from a task file or built in Python, is held to the same: no NaN or
    infinite price (a negative one was refused before)."""
    from pydantic import ValidationError

    with pytest.raises(ValueError, match=r"bad price in --annotators: 'a=.*'; a price is a finite"):
        sim.parse_annotators(f"b=0.01,a={price}")
    with pytest.raises(ValidationError):
        AnnotatorSpec(name="a", price=float(price))
    with pytest.raises(ValidationError):
        AnnotatorSpec(name="a", price=0.01, confidence_price=float(price))
