"""One rule for recorded answers in named loaders and folders: an answer outside the label
set is dropped and counted (meta["dropped"]); a missing or blank one is no answer."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal
from typer.testing import CliRunner

from quorum.cli.main import app
from quorum.data.io import load_folder
from quorum.data.loaders import load_dataset
from quorum.data.schema import drop_unusable
from quorum.data.writer import save_folder
from test_data_io import write_folder


def test_drop_unusable_counts_only_answers_outside_the_label_set():
    ann = pd.DataFrame(
        {
            "item_id": list("123456"),
            "annotator": ["a", "a", "a", "b", "b", "b"],
            "output": ["pos", " neg ", None, "", "maybe", 1.0],
        }
    )
    kept, dropped, examples = drop_unusable(ann, ["pos", "neg", "1"])
    # " neg " and 1.0 are in the set once normalised (as the Dataset normalises them)
    assert kept["item_id"].tolist() == ["1", "2", "6"]
    assert kept["output"].tolist() == ["pos", " neg ", 1.0]  # values untouched
    assert dropped == {"b": 1} and examples == {"b": ["maybe"]}
    # summaries: no label set, only blanks go and nothing counts as dropped
    kept, dropped, _ = drop_unusable(ann, None)
    assert len(kept) == 4 and dropped == {}


def test_folder_drops_out_of_label_answers_and_says_so(tmp_path):
    ann = "item_id,annotator,output\n1,m1,pos\n2,m1,maybe\n1,m2,neg\n2,m2,POS\n"
    task = (
        'name = "t"\ntype = "classification"\nlabels = ["pos", "neg"]\n\n'
        '[[annotators]]\nname = "m1"\nprice = 0.01\n\n[[annotators]]\nname = "m2"\nprice = 0.02\n'
    )
    ds = load_folder(write_folder(tmp_path, annotations=ann, task=task))
    assert ds.annotations[["item_id", "annotator"]].values.tolist() == [["1", "m1"], ["1", "m2"]]
    assert ds.meta["dropped"] == {"m1": 1, "m2": 1}
    note = next(n for n in ds.meta["notes"] if n.startswith("dropped"))
    assert "dropped 2 answer(s)" in note and "'maybe'" in note and "'POS'" in note
    # the count survives a save and a reload (nothing more is dropped then)
    back = load_folder(save_folder(ds, tmp_path / "again"))
    assert back.meta["dropped"] == {"m1": 1, "m2": 1}
    res = CliRunner().invoke(app, ["datasets", "show", str(tmp_path)])
    assert res.exit_code == 0 and "dropped 2 answer(s)" in res.output


def test_folder_answers_that_match_once_normalised_are_kept(tmp_path):
    write_folder(tmp_path, items="item_id,text,gold\n1,a,1\n2,b,0\n", annotations=None)
    (tmp_path / "annotations.jsonl").write_text(
        '{"item_id": "1", "annotator": "m1", "output": 1.0}\n'
        '{"item_id": "2", "annotator": "m1", "output": " 0"}\n'
        '{"item_id": "2", "annotator": "m2", "output": "zero"}\n',
        encoding="utf-8",
    )
    (tmp_path / "task.toml").write_text(
        'name = "t"\ntype = "classification"\nlabels = ["0", "1"]\n', encoding="utf-8"
    )
    ds = load_folder(tmp_path)
    assert ds.annotations["output"].tolist() == ["1", "0"]
    assert ds.meta["dropped"] == {"m2": 1}


@pytest.mark.realdata
def test_named_loader_and_folder_apply_the_same_rule(shared_data_dir, tmp_path):
    """MMLU-Redux's raw non-letter answers: the named loader and a folder holding them drop
    the same rows and count the same numbers, which match the source file."""
    raw = pd.read_csv(
        shared_data_dir / "mmlu_redux_helm/mmlu_redux_helm_predictions.csv",
        dtype=str,
        keep_default_na=False,
    )
    expected = {}
    for c in (c for c in raw if c.startswith("pred_")):
        v = raw[c].str.strip()
        n = int(((v != "") & ~v.isin(list("ABCD"))).sum())
        if n:
            expected[c.removeprefix("pred_").replace("_", "/", 1)] = n
    named = load_dataset("mmlu-redux")
    assert named.meta["dropped"] == expected
    assert expected["openai/gpt-4-1106-preview"] > 100  # the rule has something to drop

    # a folder with every raw answer (out-of-label ones included), no recorded counts
    ids = (raw["subject"] + "/" + raw["row_in_subject"]).to_numpy()
    names = [a.name for a in named.task.annotators]
    long = pd.concat(
        pd.DataFrame({"item_id": ids, "annotator": a, "output": raw["pred_" + a.replace("/", "_")]})
        for a in names
    )
    long = long.loc[long["output"].str.strip() != ""]
    save_folder(named, tmp_path / "f", fmt="parquet")
    long.to_parquet(tmp_path / "f" / "annotations.parquet", index=False)
    meta = {k: v for k, v in named.meta.items() if k != "dropped"}
    (tmp_path / "f" / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    folder = load_folder(tmp_path / "f")
    assert folder.meta["dropped"] == expected
    key = ["annotator", "item_id"]
    a = folder.annotations[[*key, "output"]].sort_values(key).reset_index(drop=True)
    b = named.annotations[[*key, "output"]].sort_values(key).reset_index(drop=True)
    assert_frame_equal(a, b)
