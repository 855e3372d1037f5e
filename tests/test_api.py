"""The library face on real data: quorum.replay equals the simulator, and the README's
Python blocks run as written (replay on recorded answers, live against a local server)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

import quorum
from quorum.data.loaders import load_dataset
from quorum.errors import DataValidationError
from quorum.simulate import prepare, simulate_once

pytestmark = pytest.mark.realdata

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


@pytest.fixture(scope="module")
def flute(shared_data_dir):
    ds = load_dataset("llms-for-css/flute")
    prep = prepare(ds)
    keep = {a.name for a in prep.task.annotators}
    answers = ds.annotations.loc[ds.annotations["annotator"].isin(keep)]
    return ds, prep, answers


@pytest.mark.parametrize(("setting", "budget"), [("dollars", 0.3), ("auditor", 0.1)])
def test_replay_equals_the_simulator(flute, setting: str, budget: float) -> None:
    ds, prep, answers = flute
    prices = {a.name: a.price for a in prep.task.llms} | {"gold": prep.task.human_spec.price}
    got = quorum.replay(
        answers,
        prices=prices,
        human=prep.task.human,
        items=ds.items[["item_id", "text", "gold"]],
        labels=prep.task.labels,
        setting=setting,
        budget=budget,
        seed=1,
    )
    _, want = simulate_once(prep, "quorum", setting, budget, seed=1)
    pd.testing.assert_frame_equal(
        got.labels.sort_values("item_id").reset_index(drop=True),
        want.labels.sort_values("item_id").reset_index(drop=True),
    )
    assert got.cost == pytest.approx(want.cost) and got.cost <= want.budget_limit + 1e-9


def test_replay_takes_crowdkit_columns_and_names_missing_ones(flute) -> None:
    ds, prep, answers = flute
    prices = {a.name: a.price for a in prep.task.llms} | {"gold": prep.task.human_spec.price}
    ck = answers.rename(columns={"item_id": "task", "annotator": "worker", "output": "label"})
    items = ds.items[["item_id", "text", "gold"]]
    r = quorum.replay(ck, prices=prices, human="gold", items=items, budget=0.2, features="light")
    assert len(r.labels) == ds.n_items and r.cost <= 0.2 * ds.n_items * prices[prep.task.human]
    with pytest.raises(DataValidationError, match=r"missing column\(s\) \['output'\]"):
        quorum.replay(answers.drop(columns="output"), prices=prices, human="gold", items=items)
    with pytest.raises(DataValidationError, match="no price for annotator"):
        quorum.replay(answers, prices={"gold": 0.1}, human="gold", items=items)
    with pytest.raises(DataValidationError, match="`gold` column of `items`"):
        quorum.replay(answers, prices=prices, human="gold")


def test_readme_replay_block_runs(flute, tmp_path, monkeypatch) -> None:
    ds, prep, answers = flute
    llms = [a.name for a in prep.task.llms]  # cheapest first
    rename = {llms[0]: "small", llms[-1]: "large"}
    frame = answers.loc[answers["annotator"].isin(rename)].replace({"annotator": rename})
    expert = ds.items.assign(annotator="expert").rename(columns={"gold": "output"})
    frame = pd.concat([frame, expert[["item_id", "annotator", "output"]]])
    frame[["item_id", "annotator", "output"]].to_csv(tmp_path / "answers.csv", index=False)
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(_python_blocks()[0], scope)
    result = scope["result"]
    assert len(result.labels) == ds.n_items
    assert result.cost <= 0.3 * ds.n_items * 0.10 + 1e-9
    assert set(result.annotations["annotator"]) <= {"small", "large", "expert"}


def test_readme_live_block_runs(shared_data_dir, tmp_path, monkeypatch) -> None:
    from live_servers.fixtures import FakeServer

    sst = pd.read_csv(shared_data_dir / "sst2_dev" / "sst2_dev.csv").head(30)
    sst.rename(columns={"idx": "item_id", "sentence": "text"})[["item_id", "text"]].to_csv(
        tmp_path / "items.csv", index=False
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "not-a-secret")
    with FakeServer(tmp_path) as srv:
        code = _python_blocks()[1].replace("http://127.0.0.1:8080/v1", srv.api_base)
        scope: dict = {"quorum": quorum}
        exec(code, scope)
        n_requests = len(srv.requests())
    summary = scope["summary"]
    assert n_requests > 0
    assert summary.spent <= 2.0
    assert summary.labelled >= 1 and summary.n_items == 30
