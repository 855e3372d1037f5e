"""Project files: TOML and YAML, validated with clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from live_servers.fixtures import SST2_TASK, sst2_items, write_project
from quorum.errors import ConfigError
from quorum.live.project.config import load_project
from quorum.live.project.items import load_items
from quorum.live.run.runner import make_method

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "live"


def _base(data_dir: Path) -> dict:
    return {
        "name": "c",
        "items": sst2_items(data_dir, 5),
        "task": SST2_TASK,
        "budget": {"limit": 1.0},
        "annotators": [{"name": "zs", "kind": "model", "model": "zero-shot"}],
    }


@pytest.mark.parametrize("name", ["sst2-local.toml", "sst2-openai.toml"])
def test_examples_are_valid(name: str) -> None:
    cfg = load_project(EXAMPLES / name)
    assert cfg.human == "expert" and cfg.budget.limit > 0
    assert cfg.path(cfg.items.path).name == "sst2_dev.csv"


def test_yaml_project_and_defaults(tmp_path, shared_data_dir) -> None:
    cfg = load_project(write_project(tmp_path, _base(shared_data_dir)))
    assert cfg.human == "gold"  # no human annotator, but a gold column
    assert cfg.method == "quorum" and cfg.seed == 0
    assert cfg.ledger_path == tmp_path / ".quorum" / "ledger.sqlite"
    items = load_items(cfg)
    assert list(items.columns) == ["item_id", "text", "gold"] and len(items) == 5


def test_every_problem_is_reported_with_its_place(tmp_path, shared_data_dir) -> None:
    data = _base(shared_data_dir)
    data["budget"] = {"limit": -1}
    data["annotators"] = [
        {"name": "a", "kind": "robot", "model": "x"},
        {"name": "b", "model": "gpt-4o-mini", "price": -0.1, "temprature": 0},
    ]
    with pytest.raises(ConfigError) as err:
        load_project(write_project(tmp_path, data))
    msg = str(err.value)
    assert "invalid project file" in msg
    assert "budget.limit" in msg and "annotators.0.kind" in msg
    assert "annotators.1.price" in msg and "annotators.1.temprature" in msg


@pytest.mark.parametrize(
    "change, match",
    [
        ({"items": {"path": "x.csv"}}, "no human arm"),
        ({"items": {"path": "x.csv"}, "human": "gold"}, "needs items.gold_column"),
        ({"task": {"type": "classification"}}, "needs a non-empty `labels`"),
        ({"annotators": [{"name": "h", "kind": "human"}]}, "needs a `price`"),
        ({"annotators": [{"name": "x", "kind": "model", "model": "nomodule"}]}, "module:function"),
        ({"annotators": [{"name": "l", "kind": "llm"}]}, "needs `model`"),
        (
            {"annotators": [{"name": "z", "kind": "model", "model": "zero-shot"}] * 2},
            "unique",
        ),
        ({"human": "bob"}, "not an annotator of kind human"),
        (
            {"annotators": [{"name": "l", "model": "m", "params": {"api_key": "sk-x"}}]},
            "params may not set",
        ),
        ({"budget": {"limit": 1, "setting": "auditor"}}, "human_limit"),
        ({"humans": {"labels_per_item": 3, "team_size": 2}}, r"team_size \(2\) is below"),
    ],
)
def test_invalid_projects(tmp_path, shared_data_dir, change, match) -> None:
    data = {**_base(shared_data_dir), **change}
    with pytest.raises(ConfigError, match=match):
        load_project(write_project(tmp_path, data))


def test_bad_files_and_columns(tmp_path, shared_data_dir) -> None:
    bad = tmp_path / "p.toml"
    bad.write_text("name = 'x'\n[items\n")
    with pytest.raises(ConfigError, match="cannot parse TOML"):
        load_project(bad)
    with pytest.raises(ConfigError, match="not found"):
        load_project(tmp_path / "missing.toml")
    (tmp_path / "p.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"\.toml, \.yaml or \.yml"):
        load_project(tmp_path / "p.json")
    data = _base(shared_data_dir)
    data["items"] = {**data["items"], "text_column": "body"}
    cfg = load_project(write_project(tmp_path, data))
    with pytest.raises(ConfigError, match="text_column 'body' not found"):
        load_items(cfg)
    with pytest.raises(ConfigError, match="unknown method"):
        make_method("no-such-method", {})
    with pytest.raises(ConfigError, match=r"quorum: unknown parameter\(s\) \['tauh'\]"):
        make_method("quorum", {"tauh": 0.5})  # method_params with a typo
