"""`quorum datasets init`: a dataset folder from a CSV/JSONL of items and answers, or a
commented template; the folder written loads and says which defaults it got."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from quorum.cli.main import app
from quorum.data.importer import init_folder
from quorum.data.io import load_folder
from quorum.errors import DataValidationError

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "datasets"
#: the command of docs/datasets.md's walkthrough
WALKTHROUGH = [
    "--from", str(EXAMPLES / "csv" / "nli.csv"),
    "--id", "pair_id",
    "--text", "premise,hypothesis",
    "--gold", "label",
    "--answers", "llm-large,llm-medium,llm-small,crowd-1,crowd-2",
    "--humans", "crowd-1,crowd-2",
    "--name", "nli-synthetic",
]  # fmt: skip


def invoke(*args: str):
    return CliRunner().invoke(app, ["datasets", "init", *args])


def test_walkthrough_writes_the_shipped_classification_example(tmp_path):
    res = invoke(str(tmp_path / "nli"), *WALKTHROUGH)
    assert res.exit_code == 0, res.output
    assert "120 items" in res.output and "default panel" in res.output
    shipped = EXAMPLES / "classification"
    assert sorted(p.name for p in (tmp_path / "nli").iterdir()) == sorted(
        p.name for p in shipped.iterdir()
    )
    for p in shipped.iterdir():
        assert (tmp_path / "nli" / p.name).read_bytes() == p.read_bytes(), p.name
    ds = load_folder(tmp_path / "nli")
    src = pd.read_csv(EXAMPLES / "csv" / "nli.csv", dtype=str)
    assert ds.n_items == len(src) and ds.items["item_id"].tolist() == src["pair_id"].tolist()
    assert (
        ds.items["text"][0] == f"premise: {src['premise'][0]}\nhypothesis: {src['hypothesis'][0]}"
    )
    assert {a.name: a.kind for a in ds.task.annotators}["crowd-1"] == "human"
    n_answers = int(
        src[["llm-large", "llm-medium", "llm-small", "crowd-1", "crowd-2"]].notna().sum().sum()
    )
    assert len(ds.annotations) + sum(ds.meta["dropped"].values()) == n_answers
    # the same folder again: refused without --overwrite
    res = invoke(str(tmp_path / "nli"), *WALKTHROUGH)
    assert res.exit_code == 1 and "--overwrite" in res.output


def test_long_answers_in_crowdkit_columns_and_a_given_price(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text(
        "".join(
            json.dumps({"id": f"t{i}", "text": f"tweet {i}", "gold": str(i % 3)}) + "\n"
            for i in range(6)
        ),
        encoding="utf-8",
    )
    rows = [(f"t{i}", w, str((i + k) % 3)) for i in range(6) for k, w in enumerate(["w1", "m"])]
    pd.DataFrame(rows, columns=["task", "worker", "label"]).to_csv(tmp_path / "a.csv", index=False)
    ds = init_folder(
        tmp_path / "out",
        items,
        id_column="id",
        answers_file=tmp_path / "a.csv",
        humans=["w1"],
        prices={"m": 0.002},
        fmt="jsonl",
    )
    assert ds.task.labels == ["0", "1", "2"]
    assert {a.name: (a.kind, a.price) for a in ds.task.annotators} == {
        "w1": ("human", 0.10),
        "m": ("llm", 0.002),
    }
    assert ds.meta["defaults"]["prices"] == {"w1": 0.10}
    assert (tmp_path / "out" / "items.jsonl").is_file()


def test_multiple_choice_with_option_columns_and_index_gold(tmp_path):
    src = tmp_path / "mc.csv"
    pd.DataFrame(
        {
            "question": ["2+2?", "Capital of Peru?"],
            "A": ["3", "Lima"],
            "B": ["4", "Cusco"],
            "C": ["5", "Quito"],
            "answer": ["1", "0"],
            "llm": ["B", "(A)"],
        }
    ).to_csv(src, index=False)
    ds = init_folder(
        tmp_path / "out",
        src,
        task_type="multiple_choice",
        text=["question"],
        choices=["A", "B", "C"],
        gold="answer",
        answers=["llm"],
    )
    assert ds.task.labels == ["A", "B", "C"]
    assert ds.items["gold"].tolist() == ["B", "A"]
    assert ds.items["text"][0] == "2+2?\nA. 3\nB. 4\nC. 5"
    assert ds.items["choices"][1] == ["Lima", "Cusco", "Quito"]
    assert ds.meta["dropped"] == {"llm": 1}  # "(A)" is not a label
    assert any("0-based option indices" in n for n in ds.meta["notes"])


def test_summaries_gold_is_the_reference(tmp_path):
    src = tmp_path / "s.csv"
    pd.DataFrame(
        {
            "doc": ["a long text", "another text"],
            "ref": ["short", "brief"],
            "sys1": ["s1", "s2"],
            "sys2": ["t1", None],
        }
    ).to_csv(src, index=False)
    ds = init_folder(
        tmp_path / "o",
        src,
        task_type="summarization",
        text=["doc"],
        gold="ref",
        answers=["sys1", "sys2"],
    )
    assert ds.items["reference"].tolist() == ["short", "brief"] and ds.task.labels is None
    assert len(ds.annotations) == 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"answers": ["gpt"]}, r"answer column 'gpt' not found; columns: \['id', 'text'"),
        ({"id_column": "nope"}, r"id column 'nope' not found"),
        ({"humans": ["x"], "answers": ["m"]}, r"annotator\(s\) \['x'\] have no answers"),
    ],
)
def test_errors_name_the_file_and_the_columns(tmp_path, kwargs, message):
    src = tmp_path / "t.csv"
    src.write_text("id,text,m\n1,a,pos\n", encoding="utf-8")
    with pytest.raises(DataValidationError, match=message):
        init_folder(tmp_path / "o", src, **kwargs)


def test_bad_price_option():
    res = invoke("x", "--from", "y.csv", "--price", "gpt")
    assert res.exit_code != 0 and "NAME=PRICE" in res.output


@pytest.mark.parametrize("task_type", ["classification", "multiple_choice", "summarization"])
def test_template_folder_loads_and_documents_every_key(tmp_path, task_type):
    res = invoke(str(tmp_path / "t"), "--type", task_type)
    assert res.exit_code == 0, res.output
    ds = load_folder(tmp_path / "t")
    assert ds.task.type.value == task_type and ds.meta["panel"] == ["llm-a", "llm-b"]
    toml = (tmp_path / "t" / "task.toml").read_text()
    for key in ("text_template", "panel", "human_price", "reference_llm", "# price = "):
        assert key in toml
