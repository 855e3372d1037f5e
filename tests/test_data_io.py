"""Dataset folders: round trips and every bad-input error message (no real data needed)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal
from typer.testing import CliRunner

from quorum.cli.main import app
from quorum.data.io import load_folder, read_task
from quorum.data.loaders import load_dataset
from quorum.data.writer import save_folder
from quorum.errors import DatasetNotFoundError, DataValidationError

TASK_TOML = """\
name = "t"
type = "classification"
labels = ["pos", "neg"]
human_price = 0.1

[[annotators]]
name = "m1"
kind = "llm"
price = 0.01
"""


def write_folder(
    root: Path,
    items: str | bytes = "item_id,text,gold\n1,good film,pos\n2,bad film,neg\n",
    annotations: str | bytes | None = "item_id,annotator,output\n1,m1,pos\n2,m1,pos\n",
    task: str | None = TASK_TOML,
    task_name: str = "task.toml",
) -> Path:
    """A small CSV dataset folder; each part can be replaced by bad content."""
    root.mkdir(parents=True, exist_ok=True)

    def put(name: str, content: str | bytes) -> None:
        p = root / name
        p.write_bytes(content) if isinstance(content, bytes) else p.write_text(content, "utf-8")

    put("items.csv", items)
    if annotations is not None:
        put("annotations.csv", annotations)
    if task is not None:
        put(task_name, task)
    return root


def assert_same(a, b) -> None:
    assert_frame_equal(a.items, b.items, check_dtype=True)
    assert_frame_equal(a.annotations, b.annotations, check_dtype=True)
    assert a.task == b.task
    assert a.meta == b.meta


# ------------------------------------------------------------------ round trips
@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
@pytest.mark.parametrize("task_format", ["toml", "yaml"])
def test_round_trip_preserves_everything(tiny_dataset, tmp_path, fmt, task_format):
    save_folder(tiny_dataset, tmp_path / "d", fmt=fmt, task_format=task_format)
    assert (tmp_path / "d" / f"items.{fmt}").is_file()
    assert (tmp_path / "d" / f"task.{task_format}").is_file()
    back = load_folder(tmp_path / "d")
    assert_same(tiny_dataset, back)
    assert back.items.loc[1, "item_id"] == "007"
    assert back.items.loc[1, "subject"] == "NA"  # the text "NA" is not a missing value
    assert back.items.loc[1, "choices"] == ["a", "b", "c, d"]
    assert back.annotations.loc[1, "confidence"] == 0.30000001192092896
    assert back.task.label_names["C"] == 'it "depends"\nmaybe'


def test_csv_choices_are_json_lists(tiny_dataset, tmp_path):
    save_folder(tiny_dataset, tmp_path, fmt="csv")
    raw = pd.read_csv(tmp_path / "items.csv", dtype=str)
    assert json.loads(raw.loc[0, "choices"]) == ["yes", "no", "depends"]


def test_hand_written_csv_without_dtypes_file(tmp_path):
    write_folder(
        tmp_path,
        items='item_id,text,gold,choices,year\n01,q one,pos,"[""a"", ""b""]",2020\n2,q two,neg,,\n',
        annotations="item_id,annotator,output\n01,m1,neg\n",
    )
    ds = load_folder(tmp_path)
    assert ds.items["item_id"].tolist() == ["01", "2"]
    assert ds.items.loc[0, "choices"] == ["a", "b"]
    assert ds.items.loc[1, "choices"] is None
    assert ds.items.loc[0, "year"] == 2020
    assert ds.source == str(tmp_path)


def test_no_annotations_is_a_valid_job(tmp_path):
    ds = load_folder(write_folder(tmp_path, annotations=None))
    assert ds.n_items == 2 and len(ds.annotations) == 0
    assert list(ds.annotations.columns[:3]) == ["item_id", "annotator", "output"]


def test_empty_annotations_file_is_no_annotations(tmp_path):
    assert len(load_folder(write_folder(tmp_path, annotations="")).annotations) == 0


def test_save_refuses_to_overwrite(tiny_dataset, tmp_path):
    save_folder(tiny_dataset, tmp_path, fmt="csv")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        save_folder(tiny_dataset, tmp_path, fmt="parquet")
    save_folder(tiny_dataset, tmp_path, fmt="parquet", overwrite=True)
    assert not (tmp_path / "items.csv").exists()
    assert_same(tiny_dataset, load_folder(tmp_path))


def test_load_dataset_accepts_a_folder(tiny_dataset, tmp_path):
    save_folder(tiny_dataset, tmp_path / "job", fmt="jsonl")
    assert load_dataset(tmp_path / "job").n_items == 3
    assert load_dataset(str(tmp_path / "job")).n_items == 3


# ------------------------------------------------------------------ missing things
def test_missing_folder(tmp_path):
    with pytest.raises(DatasetNotFoundError, match=re.escape(str(tmp_path / "nope"))):
        load_folder(tmp_path / "nope")


def test_missing_items_file(tmp_path):
    write_folder(tmp_path)
    (tmp_path / "items.csv").unlink()
    with pytest.raises(DatasetNotFoundError, match=r"looked for items.csv, items.jsonl"):
        load_folder(tmp_path)


def test_missing_task_file(tmp_path):
    with pytest.raises(DatasetNotFoundError, match=r"no task file found; looked for task.toml"):
        load_folder(write_folder(tmp_path, task=None))


def test_two_items_files_are_ambiguous(tmp_path):
    write_folder(tmp_path)
    (tmp_path / "items.jsonl").write_text('{"item_id": "1", "text": "x"}\n')
    with pytest.raises(DataValidationError, match="more than one file"):
        load_folder(tmp_path)


def test_unknown_name_and_no_folder(tmp_path):
    with pytest.raises(DatasetNotFoundError, match=r"unknown dataset 'imdb' .*imdb-mlapi"):
        load_dataset("imdb")


# ------------------------------------------------------------------ bad content
def test_missing_column(tmp_path):
    write_folder(tmp_path, items="item_id,gold\n1,pos\n")
    with pytest.raises(DataValidationError, match=r"items.csv: items: missing required .*'text'"):
        load_folder(tmp_path)


def test_missing_annotation_column(tmp_path):
    write_folder(tmp_path, annotations="item_id,output\n1,pos\n")
    with pytest.raises(DataValidationError, match=r"annotations.csv: .*missing .*'annotator'"):
        load_folder(tmp_path)


def test_duplicate_ids(tmp_path):
    write_folder(tmp_path, items="item_id,text,gold\n1,a,pos\n1,b,neg\n")
    with pytest.raises(DataValidationError, match=r"1 duplicate item_id\(s\), e.g. \['1'\]"):
        load_folder(tmp_path)


def test_empty_text(tmp_path):
    write_folder(tmp_path, items='item_id,text,gold\n1,a,pos\n2," ",neg\n')
    with pytest.raises(DataValidationError, match=r"1 empty text\(s\), e.g. item_id \['2'\]"):
        load_folder(tmp_path)


def test_gold_outside_label_set(tmp_path):
    write_folder(tmp_path, items="item_id,text,gold\n1,a,pos\n2,b,meh\n")
    with pytest.raises(DataValidationError, match=r"items.csv: .*outside the label set.*meh"):
        load_folder(tmp_path)


def test_output_outside_label_set_is_dropped_and_counted(tmp_path):
    # the named loaders' rule (tests/test_datasets_answer_rule.py has the details)
    ds = load_folder(write_folder(tmp_path, annotations="item_id,annotator,output\n1,m1,maybe\n"))
    assert len(ds.annotations) == 0 and ds.meta["dropped"] == {"m1": 1}


def test_annotations_for_unknown_items(tmp_path):
    write_folder(tmp_path, annotations="item_id,annotator,output\n1,m1,pos\n9,m1,pos\n")
    with pytest.raises(DataValidationError, match=r"annotations.csv: .*unknown item_id.*'9'"):
        load_folder(tmp_path)


def test_latin1_csv_names_file_and_byte_offset(tmp_path):
    body = "item_id,text,gold\n1,caf\u00e9 cr\u00e8me,pos\n"
    raw = body.encode("latin-1")
    offset = raw.index(b"\xe9")
    write_folder(tmp_path, items=raw)
    with pytest.raises(DataValidationError) as err:
        load_folder(tmp_path)
    msg = str(err.value)
    assert str(tmp_path / "items.csv") in msg
    assert f"not valid UTF-8 at byte offset {offset}" in msg


def test_non_utf8_task_file(tmp_path):
    write_folder(tmp_path, task=TASK_TOML.replace('"t"', '"caf\u00e9"').encode("cp1252"))
    with pytest.raises(DataValidationError, match=r"task.toml: not valid UTF-8 at byte offset 11"):
        load_folder(tmp_path)


def test_utf8_bom_is_accepted(tmp_path):
    write_folder(tmp_path, items="\ufeffitem_id,text,gold\n1,a,pos\n2,b,neg\n")
    assert load_folder(tmp_path).items["item_id"].tolist() == ["1", "2"]


def test_malformed_toml(tmp_path):
    write_folder(tmp_path, task='name = "t"\ntype = classification\n')
    with pytest.raises(DataValidationError, match=r"task.toml: malformed TOML: .*line 2"):
        load_folder(tmp_path)


def test_malformed_yaml(tmp_path):
    write_folder(tmp_path, task="name: t\nlabels: [pos, neg\n", task_name="task.yaml")
    with pytest.raises(DataValidationError, match=r"task.yaml: malformed YAML"):
        load_folder(tmp_path)


def test_invalid_task_spec_reports_pydantic(tmp_path):
    write_folder(tmp_path, task='name = "t"\ntype = "classification"\n')
    with pytest.raises(DataValidationError) as err:
        load_folder(tmp_path)
    msg = str(err.value)
    assert "task.toml: invalid task spec" in msg
    assert "needs a non-empty `labels` list" in msg


def test_task_spec_bad_field_and_value(tmp_path):
    task = TASK_TOML.replace("price = 0.01", "price = -1") + 'colour = "red"\n'
    write_folder(tmp_path, task=task.replace("human_price = 0.1\n", 'colour = "red"\n'))
    with pytest.raises(DataValidationError) as err:
        read_task(tmp_path / "task.toml")
    msg = str(err.value)
    assert "annotators.0.price" in msg and "greater than or equal to 0" in msg
    assert "colour" in msg and "Extra inputs are not permitted" in msg


def test_yaml_task_that_is_not_a_mapping(tmp_path):
    write_folder(tmp_path, task="- a\n- b\n", task_name="task.yaml")
    with pytest.raises(DataValidationError, match="expected a mapping of task fields, got list"):
        load_folder(tmp_path)


def test_bad_choices_json(tmp_path):
    write_folder(tmp_path, items="item_id,text,gold,choices\n1,a,pos,[oops\n")
    with pytest.raises(DataValidationError, match=r"item '1': `choices` must be a JSON list"):
        load_folder(tmp_path)


def test_malformed_jsonl_line(tmp_path):
    write_folder(tmp_path, annotations=None)
    (tmp_path / "items.csv").unlink()
    (tmp_path / "items.jsonl").write_text('{"item_id": 1, "text": "a"}\n{"item_id": 2, "text"\n')
    with pytest.raises(DataValidationError, match=r"items.jsonl: line 2: malformed JSON"):
        load_folder(tmp_path)


def test_empty_items_file(tmp_path):
    with pytest.raises(DataValidationError, match=r"items.csv: file is empty"):
        load_folder(write_folder(tmp_path, items=""))


# ------------------------------------------------------------------ CLI on a folder
def test_cli_show_a_folder(tiny_dataset, tmp_path):
    save_folder(tiny_dataset, tmp_path / "job")
    res = CliRunner().invoke(app, ["datasets", "show", str(tmp_path / "job"), "-n", "2"])
    assert res.exit_code == 0, res.output
    assert "name: tiny" in res.output and "item 007" in res.output
    assert "big/llm-1" in res.output


def test_cli_show_reports_errors(tmp_path):
    write_folder(tmp_path, items="item_id,text,gold\n1,a,pos\n1,b,neg\n")
    res = CliRunner().invoke(app, ["datasets", "show", str(tmp_path)])
    assert res.exit_code == 1
    assert "duplicate item_id" in res.output
