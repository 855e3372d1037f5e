"""`quorum simulate` with the options a new user mistypes, and on a folder whose metric is
not accuracy: one clear line before any loading, or the kind's own metric in the table."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import quorum.simulate as sim
from quorum.api import _light_feature_set
from quorum.cli.main import app


@pytest.fixture
def no_load(monkeypatch):
    """Loading a dataset fails the test: the option must be refused before."""
    import quorum.data.loaders as loaders

    def refuse(*args, **kwargs):
        raise AssertionError("the dataset was loaded")

    monkeypatch.setattr(loaders, "load_dataset", refuse)


def _one_error_line(res, words: str) -> None:
    assert res.exit_code == 1, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    lines = [ln for ln in res.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and words in lines[0], res.output
    assert "Traceback" not in res.output


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["-p", "nope=1"], "--param: "),
        (
            ["--method", "random", "-p", "nope=1"],
            "random: unknown parameter(s) ['nope']; known: ['llm_choice']",
        ),
    ],
)
def test_an_unknown_router_parameter_is_one_line(no_load, args, words) -> None:
    res = CliRunner().invoke(app, ["simulate", "-d", "anything", *args])
    _one_error_line(res, words)
    assert "nope" in res.output


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("m=-1", "bad price in --annotators: 'm=-1'"),
        ("m=nan", "bad price in --annotators: 'm=nan'"),
        ("m=inf", "bad price in --annotators: 'm=inf'"),
        ("m=1e300", "a price is a finite number from 0 to"),
        ("m=0.05,m=0.01", "names 'm' twice"),
    ],
)
def test_a_nonsense_panel_price_is_one_line(no_load, spec, words) -> None:
    res = CliRunner().invoke(app, ["simulate", "-d", "anything", "--annotators", spec])
    _one_error_line(res, words)


def test_a_span_folder_prints_its_table_with_span_f1(tmp_path: Path, monkeypatch) -> None:
    """The table's metric column is the kind's metric (span rows have no `accuracy`)."""
    mark = json.dumps([{"start": 0, "end": 4, "label": "Wrong"}])
    n = 12
    texts = [f"Town {i} is in the wrong country." for i in range(n)]
    pd.DataFrame(
        {"item_id": [f"t{i}" for i in range(n)], "text": texts, "gold_spans": [mark] * n}
    ).to_csv(tmp_path / "items.csv", index=False)
    pd.DataFrame(
        {
            "item_id": [f"t{i}" for i in range(n)] * 2,
            "annotator": ["m1"] * n + ["m2"] * n,
            "spans": [mark] * n + ["[]"] * n,
        }
    ).to_csv(tmp_path / "answers.csv", index=False)
    real = sim.prepare

    def light(ds, annotators=None, human="gold", features=None):
        return real(ds, annotators, human, _light_feature_set(ds.items["text"].tolist()))

    monkeypatch.setattr(sim, "prepare", light)
    res = CliRunner().invoke(app, ["simulate", "-d", str(tmp_path), "--no-quality"])
    assert res.exit_code == 0, res.output
    assert "span_f1" in res.output
    row = CliRunner().invoke(app, ["simulate", "-d", str(tmp_path), "--no-quality", "--json"])
    assert json.loads(row.stdout.splitlines()[-1])["metric"] == "span_f1"
