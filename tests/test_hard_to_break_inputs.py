"""Issue 37, bad input: labels with punctuation, item ids, ``--wait nan``, infinite money,
``"text": null``. Each case is a clear one-line error (before any ledger exists) or parses
as documented; never a traceback, never an answer paid and thrown away."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from live_servers.fixtures import write_project
from quorum.cli.main import app
from quorum.errors import ConfigError, DataValidationError, QuorumError
from quorum.live.project.config import ProjectConfig, load_project
from quorum.live.project.items import load_items
from quorum.live.run.runner import annotate
from quorum.tasks.parsing import LabelParser

KW = {"name": "kw", "kind": "model", "model": "live_servers.models:keyword_sentiment",
      "price": 0.001}  # fmt: skip
TEAM = {"name": "team", "kind": "human", "price": 0.01}


def _items(folder: Path, rows: list[dict], name: str = "items.jsonl") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def _project(folder: Path, items: Path, **kw) -> dict:
    p = {
        "name": "h37",
        "features": "light",
        "items": {"path": str(items), "id_column": "id", "text_column": "text"},
        "task": {"type": "classification", "labels": ["0", "1"]},
        "budget": {"limit": 1.0},
        "annotators": [KW, TEAM],
    }
    p.update(kw)
    return p


def _cli(*args: str):
    """The CLI in-process: (exit code, output); a traceback is a failure of the test."""
    res = CliRunner().invoke(app, list(args))
    out = res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), (
        f"{type(res.exception).__name__}: {res.exception}\n{out}"
    )
    assert "Traceback" not in out, out
    return res.exit_code, out


# -- finding 2: labels with punctuation --------------------------------------------------


@pytest.mark.parametrize("answer", ["yes!", "Yes!", "yes", "Label: yes!", "I think yes!"])
def test_label_with_punctuation_parses(answer) -> None:
    p = LabelParser(["yes!", "no?"])
    got = p.parse(answer)
    assert got.ok and got.output == "yes!", got


def test_label_names_with_punctuation_parse() -> None:
    p = LabelParser(["0", "1"], {"0": "(bad)", "1": "<good>"})
    assert p.parse("<good>").output == "1"
    assert p.parse("The review is (bad).").output == "0"


def test_labels_that_collide_after_normalisation_are_refused() -> None:
    base = _project(Path("."), Path("x.jsonl"))
    with pytest.raises(ValueError, match="the same answer"):
        ProjectConfig(**{**base, "task": {"type": "classification", "labels": ["yes!", "yes?"]}})
    with pytest.raises(ValueError, match="the same answer"):
        ProjectConfig(
            **{
                **base,
                "task": {
                    "type": "classification",
                    "labels": ["a", "b"],
                    "label_names": {"a": "Good", "b": "'good'"},
                },
            }
        )


# -- finding 3: item ids ------------------------------------------------------------------


def _load(tmp_path: Path, rows: list[dict]):
    items = _items(tmp_path, rows)
    cfg = load_project(write_project(tmp_path, _project(tmp_path, items)))
    return load_items(cfg)


def test_ids_with_outer_spaces_that_collide_are_one_clear_error(tmp_path) -> None:
    rows = [{"id": " a", "text": "good"}, {"id": "a", "text": "bad"}]
    with pytest.raises(DataValidationError, match="duplicate item id 'a' once outer spaces"):
        _load(tmp_path, rows)


def test_ids_are_stripped(tmp_path) -> None:
    df = _load(tmp_path, [{"id": " a ", "text": "good"}, {"id": "b", "text": "bad"}])
    assert df["item_id"].tolist() == ["a", "b"]


@pytest.mark.parametrize("bad", ["", "   "])
def test_an_empty_id_is_refused(tmp_path, bad) -> None:
    with pytest.raises(DataValidationError, match="item 2 has an empty id"):
        _load(tmp_path, [{"id": "a", "text": "good"}, {"id": bad, "text": "bad"}])


def test_a_null_id_is_refused_not_nan(tmp_path) -> None:
    with pytest.raises(DataValidationError, match="item 1 has no id"):
        _load(tmp_path, [{"id": None, "text": "good"}, {"id": "b", "text": "bad"}])
    with pytest.raises(DataValidationError, match="item 2 has no id"):
        _load(tmp_path, [{"id": "a", "text": "good"}, {"text": "no id at all"}])


def test_null_text_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(DataValidationError, match=r"no text .* for 1 item\(s\), e.g. \['b'\]"):
        _load(tmp_path, [{"id": "a", "text": "good"}, {"id": "b", "text": None}])


# -- finding 4: --wait nan / inf ---------------------------------------------------------


@pytest.mark.parametrize("wait", ["nan", "inf", "-1"])
def test_wait_must_be_finite(tmp_path, wait) -> None:
    items = _items(tmp_path, [{"id": "a", "text": "good"}, {"id": "b", "text": "bad"}])
    proj = write_project(tmp_path, _project(tmp_path, items))
    code, out = _cli("annotate", str(proj), "--wait", wait)
    assert code == 2 and "--wait must be a finite number" in out, out
    assert not (tmp_path / ".quorum").exists()
    with pytest.raises(ConfigError, match="finite"):
        annotate(load_project(proj), wait=float(wait))


# -- finding 5: infinite or absurd money, before any ledger ---------------------------------


@pytest.mark.parametrize(
    ("where", "value", "words"),
    [
        ("budget", math.inf, "budget.limit: Input should be a finite number"),
        ("budget", 1e300, "budget.limit: Input should be less than or equal to"),
        ("price", math.inf, "annotators.0.price: Input should be a finite number"),
        ("price", 1e300, "annotators.0.price: Input should be less than or equal to"),
        ("human_price", math.nan, "human_price: Input should be a finite number"),
        ("team", math.inf, "annotators.1.price: Input should be a finite number"),
    ],
)
def test_infinite_money_is_one_line_before_any_ledger(tmp_path, where, value, words) -> None:
    items = _items(tmp_path, [{"id": "a", "text": "good"}, {"id": "b", "text": "bad"}])
    data = _project(tmp_path, items)
    if where == "budget":
        data["budget"] = {"limit": value}
    elif where == "price":
        data["annotators"] = [{**KW, "price": value}, TEAM]
    elif where == "team":
        data["annotators"] = [KW, {**TEAM, "price": value}]
    else:
        data[where] = value
    # YAML writes .inf / .nan, which the loader reads back as floats
    proj = write_project(tmp_path, data)
    code, out = _cli("annotate", str(proj))
    assert code == 2 and words in out, out
    assert len([x for x in out.splitlines() if x.startswith("error")]) == 1, out
    assert not (tmp_path / ".quorum").exists()
    with pytest.raises(QuorumError, match=r"finite|less than"):
        load_project(proj)
