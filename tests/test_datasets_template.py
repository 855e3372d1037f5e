"""Several text fields per item: `text_template` in task.toml builds `text` from columns."""

from __future__ import annotations

import pytest

from quorum.data.io import load_folder
from quorum.data.writer import save_folder
from quorum.errors import DataValidationError
from test_data_io import TASK_TOML, write_folder

ITEMS = (
    "item_id,premise,hypothesis,gold\n"
    '1,"It rained, all day.",The street is wet.,pos\n'
    "2,The shop is shut.,,neg\n"
)
TEMPLATE = 'text_template = "Premise: {premise}\\nHypothesis: {hypothesis}"\n'


def folder(tmp_path, items=ITEMS, template=TEMPLATE):
    return write_folder(tmp_path, items=items, task=template + TASK_TOML)


def test_template_builds_the_text_and_keeps_the_columns(tmp_path):
    ds = load_folder(folder(tmp_path))
    assert ds.items["text"].tolist() == [
        "Premise: It rained, all day.\nHypothesis: The street is wet.",
        "Premise: The shop is shut.\nHypothesis: ",  # a missing value is an empty string
    ]
    assert ds.items["premise"].tolist()[1] == "The shop is shut."
    assert ds.meta["text_template"] == "Premise: {premise}\nHypothesis: {hypothesis}"


def test_a_saved_folder_has_the_text_and_loads_unchanged(tmp_path):
    ds = load_folder(folder(tmp_path / "src"))
    for fmt in ("csv", "jsonl", "parquet"):
        back = load_folder(save_folder(ds, tmp_path / fmt, fmt=fmt))
        assert back.items.equals(ds.items) and back.meta == ds.meta and back.task == ds.task


@pytest.mark.parametrize(
    ("template", "items", "message"),
    [
        ('text_template = "{premise} / {claim}"\n', ITEMS, r"column\(s\) \['claim'\] that the"),
        ('text_template = "{premise"\n', ITEMS, r"malformed text_template"),
        ('text_template = "{} and {}"\n', ITEMS, r"must name columns"),
        ('text_template = ""\n', ITEMS, r"must be a non-empty string"),
        (TEMPLATE, "item_id,text,premise,hypothesis\n1,x,a,b\n", r"has a `text` column"),
    ],
)
def test_template_errors_name_the_items_file(tmp_path, template, items, message):
    with pytest.raises(DataValidationError, match=r"items.csv: items: .*" + message):
        load_folder(folder(tmp_path, items=items, template=template))
