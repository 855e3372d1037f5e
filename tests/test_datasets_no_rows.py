"""A named loader (or a folder) that finds no items says which file and which rows."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
from typer.testing import CliRunner

from quorum.cli.main import app
from quorum.data.io import load_folder
from quorum.data.loaders import load_dataset
from quorum.errors import DataValidationError
from test_data_io import write_folder

MMLU = "mmlu_redux_helm/mmlu_redux_helm_predictions.csv"
SELFREC = "summ_selfrec_llm/selfrec_llm_summaries.parquet"


@pytest.mark.realdata
def test_header_only_file_names_the_file(shared_data_dir, tmp_path):
    (tmp_path / MMLU).parent.mkdir(parents=True)
    header = (shared_data_dir / MMLU).read_text(encoding="utf-8").split("\n", 1)[0]
    (tmp_path / MMLU).write_text(header + "\n", encoding="utf-8")
    with pytest.raises(DataValidationError) as err:
        load_dataset("mmlu-redux", data_dir=tmp_path)
    msg = str(err.value)
    assert "dataset 'mmlu-redux': no items found in" in msg
    assert str(tmp_path / MMLU) in msg and "the file has no data rows" in msg


@pytest.mark.realdata
def test_filtered_loader_says_which_rows_it_looked_for(shared_data_dir, tmp_path):
    df = pd.read_parquet(shared_data_dir / SELFREC)
    (tmp_path / SELFREC).parent.mkdir(parents=True)
    df.assign(dataset="xsum").to_parquet(tmp_path / SELFREC)
    with pytest.raises(DataValidationError, match=r"no row with dataset == 'cnndm'"):
        load_dataset("summ-selfrec-cnndm", data_dir=tmp_path)
    shutil.copy(shared_data_dir / SELFREC, tmp_path / SELFREC)  # the real file still loads
    assert load_dataset("summ-selfrec-cnndm", data_dir=tmp_path).n_items == 1000


@pytest.mark.realdata
def test_family_file_without_rows_says_so(shared_data_dir, tmp_path):
    rel = "llms_for_css/llms_for_css_predictions.csv"
    (tmp_path / rel).parent.mkdir(parents=True)
    header = (shared_data_dir / rel).read_text(encoding="utf-8").split("\n", 1)[0]
    (tmp_path / rel).write_text(header + "\n", encoding="utf-8")
    with pytest.raises(DataValidationError, match=r"'llms-for-css/flute': no rows in .*llms_for"):
        load_dataset("llms-for-css/flute", data_dir=tmp_path)


def test_folder_with_a_header_only_items_file(tmp_path):
    write_folder(tmp_path, items="item_id,text,gold\n", annotations=None)
    with pytest.raises(DataValidationError, match=r"items.csv: no items \(the file has no data"):
        load_folder(tmp_path)


def test_simulate_without_machine_answers_says_why(tmp_path):
    write_folder(tmp_path, annotations=None)  # items, one declared LLM, no answers
    (tmp_path / "task.toml").write_text(
        'name = "t"\ntype = "classification"\nlabels = ["pos", "neg"]\n', encoding="utf-8"
    )
    res = CliRunner().invoke(app, ["simulate", "-d", str(tmp_path), "--method", "random"])
    assert res.exit_code == 1
    assert "dataset 't' has no machine annotator to route to" in res.output
    assert "Random needs" not in res.output
