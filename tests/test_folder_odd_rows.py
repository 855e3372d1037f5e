"""Dataset folders without a task file (span, pairwise, multi-label) with the rows a new
user's files have: an empty text, a missing gold or answer, a gold naming no output, an
answer outside the label set, no rows at all. Each is a one-line error that names its file,
or a missing value read as none, or an answer dropped and counted (docs/datasets.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from quorum.data.io import load_folder
from quorum.errors import DataValidationError


def _spans(tmp: Path, *, text=None, gold=None, spans=None) -> Path:
    """A span folder of three items and two annotators (CSV, as a user writes it)."""
    mark = json.dumps([{"start": 0, "end": 4, "label": "Wrong"}])
    items = pd.DataFrame(
        {
            "item_id": ["t0", "t1", "t2"],
            "text": text or ["Rome is in Spain.", "Paris is in France.", "Oslo is cold."],
            "gold_spans": gold or [mark, "[]", "[]"],
        }
    )
    answers = pd.DataFrame(
        {
            "item_id": ["t0", "t1", "t2"] * 2,
            "annotator": ["m1"] * 3 + ["m2"] * 3,
            "spans": spans or [mark, "[]", "[]", mark, mark, "[]"],
        }
    )
    tmp.mkdir(parents=True, exist_ok=True)
    items.to_csv(tmp / "items.csv", index=False)
    answers.to_csv(tmp / "answers.csv", index=False)
    return tmp


def _pairs(tmp: Path, *, gold=None, outputs=None) -> Path:
    """A pairwise folder of four pairs and one judge in both orders."""
    items = pd.DataFrame(
        {
            "item_id": ["p0", "p1", "p2", "p3"],
            "instruction": [f"Name a colour ({i})." for i in range(4)],
            "output_1": ["red", "blue", "green", "pink"],
            "output_2": ["seven", "table", "run", "cloud"],
            "gold": gold or ["1", "1", "1", "1"],
        }
    )
    out = outputs or ["1", "1", "1", "2", "1", "1", "2", "2"]
    answers = pd.DataFrame(
        {
            "item_id": [f"p{i}" for i in range(4)] * 2,
            "annotator": ["j/orig"] * 4 + ["j/swapped"] * 4,
            "judge": ["j"] * 8,
            "order": ["orig"] * 4 + ["swapped"] * 4,
            "output": out,
        }
    )
    tmp.mkdir(parents=True, exist_ok=True)
    items.to_csv(tmp / "items.csv", index=False)
    answers.to_csv(tmp / "answers.csv", index=False)
    return tmp


def _one_line_about(exc: pytest.ExceptionInfo, file: Path) -> None:
    assert "\n" not in str(exc.value) and str(exc.value).startswith(str(file))


def test_a_span_folder_with_an_empty_text_names_the_item(tmp_path: Path) -> None:
    folder = _spans(tmp_path, text=["", "Paris is in France.", "Oslo is cold."])
    with pytest.raises(DataValidationError, match=r"1 empty text.*t0") as exc:
        load_folder(folder)
    _one_line_about(exc, folder / "items.csv")


def test_a_missing_gold_or_answer_in_a_span_folder_is_none(tmp_path: Path) -> None:
    mark = json.dumps([{"start": 0, "end": 4, "label": "Wrong"}])
    ds = load_folder(_spans(tmp_path / "a", gold=[mark, "", "[]"]))
    assert ds.items["gold"].isna().tolist() == [False, True, False]
    ds = load_folder(_spans(tmp_path / "b", spans=[mark, "", "[]", mark, mark, "[]"]))
    assert len(ds.annotations) == 5  # m1 gave no answer on t1
    assert not ((ds.annotations["annotator"] == "m1") & (ds.annotations["item_id"] == "t1")).any()


def test_bad_spans_name_the_answers_file(tmp_path: Path) -> None:
    bad = json.dumps([{"start": 9, "end": 4, "label": "Wrong"}])
    folder = _spans(tmp_path, spans=[bad, "[]", "[]", "[]", "[]", "[]"])
    with pytest.raises(DataValidationError, match=r"m1.*t0.*start >= end") as exc:
        load_folder(folder)
    _one_line_about(exc, folder / "answers.csv")


def test_a_pairwise_gold_naming_no_output_is_an_error(tmp_path: Path) -> None:
    folder = _pairs(tmp_path, gold=["1", "7", "1", "banana"])
    with pytest.raises(DataValidationError, match=r"2 gold value.*p1") as exc:
        load_folder(folder)
    _one_line_about(exc, folder / "items.csv")


def test_a_pairwise_answer_naming_no_output_is_dropped_and_counted(tmp_path: Path) -> None:
    ds = load_folder(_pairs(tmp_path, outputs=["1", "3", "1", "2", "1", "1", "2", "maybe"]))
    assert ds.meta["dropped"] == {"j/orig": 1, "j/swapped": 1}
    assert any("outside the label set" in n for n in ds.meta["notes"])
    assert set(ds.annotations["output"]) <= {"1", "2"}


@pytest.mark.parametrize("kind", ["spans", "pairwise"])
def test_a_folder_whose_items_file_has_no_rows_says_so(tmp_path: Path, kind: str) -> None:
    folder = _spans(tmp_path) if kind == "spans" else _pairs(tmp_path)
    items = pd.read_csv(folder / "items.csv")
    items.iloc[:0].to_csv(folder / "items.csv", index=False)
    pd.read_csv(folder / "answers.csv").iloc[:0].to_csv(folder / "answers.csv", index=False)
    with pytest.raises(DataValidationError, match="no items") as exc:
        load_folder(folder)
    _one_line_about(exc, folder / "items.csv")


@pytest.mark.parametrize("kind", ["spans", "pairwise"])
def test_init_from_a_folder_read_as_it_is_says_so(tmp_path: Path, kind: str) -> None:
    """`datasets init --from` a span or pairwise folder: it is a dataset already (one line
    pointing to show/simulate), not a missing `output` or `text` column."""
    from quorum.data.importer import init_folder

    src = _spans(tmp_path / "src") if kind == "spans" else _pairs(tmp_path / "src")
    with pytest.raises(DataValidationError, match=f"a {kind} folder is a dataset as it is") as e:
        init_folder(tmp_path / "out", src)
    assert "\n" not in str(e.value) and not (tmp_path / "out").exists()
    assert load_folder(src).task.type.value == kind  # what the message points to works


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ('human = "crowd-9"\n', "human 'crowd-9' is not one of the annotators"),
        ("human_prise = 0.2\n", "human_prise: Extra inputs are not permitted"),
        ("human_price = -1\n", "human_price: Input should be greater than or equal to 0"),
    ],
)
def test_an_invalid_task_file_is_one_line(tmp_path: Path, extra: str, words: str) -> None:
    """pydantic's report (a multi-line dump with input reprs and links) becomes
    ``task.toml: invalid task spec: where: what`` on one line (docs/datasets.md)."""
    (tmp_path / "task.toml").write_text(
        f'name = "t"\ntype = "classification"\nlabels = ["neg", "pos"]\n{extra}'
    )
    (tmp_path / "items.csv").write_text("item_id,text\na,one\nb,two\n")
    (tmp_path / "annotations.csv").write_text("item_id,annotator,output\na,m,pos\nb,m,neg\n")
    with pytest.raises(DataValidationError, match="invalid task spec") as exc:
        load_folder(tmp_path)
    assert words in str(exc.value) and "\n" not in str(exc.value)
    assert "errors.pydantic.dev" not in str(exc.value)
