"""examples/datasets/: one folder per task type, each loading and running as shipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from quorum.cli.main import app
from quorum.data.loaders import load_dataset

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "datasets"
FOLDERS = {
    "classification": ("classification", 120, "rule"),
    "multiple-choice": ("multiple_choice", 100, None),
    "summarization": ("summarization", 40, "rule"),
}


@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_example_loads_with_its_documented_defaults(folder):
    ttype, n, panel_default = FOLDERS[folder]
    ds = load_dataset(EXAMPLES / folder)
    assert ds.task.type.value == ttype and ds.n_items == n
    assert ds.meta.get("defaults", {}).get("panel") == panel_default
    assert len(ds.meta["panel"]) == 3 and set(ds.meta["panel"]) <= {a.name for a in ds.task.llms}
    assert ds.has_gold or "reference" in ds.items.columns
    assert sum(p.stat().st_size for p in (EXAMPLES / folder).iterdir()) < 128 * 1024
    assert folder in (EXAMPLES / "README.md").read_text()  # source and licence noted


def test_classification_example_shows_each_folder_feature():
    ds = load_dataset(EXAMPLES / "classification")
    assert ds.items["text"][0].startswith("premise: ") and "\nhypothesis: " in ds.items["text"][0]
    assert ds.meta["dropped"] == {"llm-small": 7}
    assert set(ds.meta["defaults"]["prices"]) == {a.name for a in ds.task.annotators}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("folder", "setting"),
    [("classification", "dollars"), ("multiple-choice", "auditor"), ("summarization", "dollars")],
)
def test_quorum_simulate_runs_each_example_as_is(folder, setting):
    res = CliRunner().invoke(
        app,
        ["simulate", "--dataset", str(EXAMPLES / folder), "--setting", setting,
         "--budget", "0.3", "--method", "quorum", "--json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    row = json.loads(res.stdout.strip().splitlines()[-1])
    assert row["n_items"] == FOLDERS[folder][1]
    assert 0 < row["cost"] <= row["budget_limit"] + 1e-9
    assert row["human_labels"] > 0
