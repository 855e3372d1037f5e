"""Loaders for the shared sets that record no annotator: AG News, SST-2, JMMLU.

Their annotators are the bundled local models (:mod:`quorum.data.loaders.zeroshot`) or,
live, the user's own endpoints; the loaders give the items, the gold and the label set.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from quorum.data.loaders._common import (
    LETTERS,
    empty_annotations,
    finalize,
    mc_text,
    read_text_csv,
    require_rows,
    source_file,
)
from quorum.data.schema import Dataset, TaskType

AG_NEWS_FILE = "ag_news_test/ag_news_test.csv"
SST2_FILE = "sst2_dev/sst2_dev.csv"
JMMLU_FILE = "jmmlu/jmmlu.csv"


def load_ag_news(root: Path, sub: str | None, name: str) -> Dataset:
    """AG News test split (4 topics), no recorded annotators."""
    path = source_file(root, AG_NEWS_FILE, name)
    df = require_rows(read_text_csv(path), name, path)
    names = df.groupby("label")["label_name"].first()
    labels = sorted(names.index, key=int)
    items = pd.DataFrame(
        {
            "item_id": df["item_index"],
            "text": df["title"].str.strip() + "\n" + df["description"].str.strip(),
            "gold": df["label"].str.strip(),
            "language": "en",
            "title": df["title"],
        }
    )
    return finalize(
        name,
        TaskType.classification,
        items,
        empty_annotations(),
        kinds={},
        sources=[path],
        labels=labels,
        label_names={k: str(names[k]) for k in labels},
        description="AG's News topic classification, test split",
        notes=["no recorded annotators; text = title + newline + description (escapes kept)"],
    )


def load_sst2(root: Path, sub: str | None, name: str) -> Dataset:
    """GLUE SST-2 dev set, no recorded annotators."""
    path = source_file(root, SST2_FILE, name)
    df = require_rows(read_text_csv(path), name, path)
    items = pd.DataFrame(
        {
            "item_id": df["idx"],
            "text": df["sentence"],
            "gold": df["label"].str.strip(),
            "language": "en",
        }
    )
    return finalize(
        name,
        TaskType.classification,
        items,
        empty_annotations(),
        kinds={},
        sources=[path],
        labels=["0", "1"],
        label_names={"0": "negative", "1": "positive"},
        description="GLUE SST-2 dev (validation) set",
        notes=["no recorded annotators; sentences are tokenised and lower-cased as in GLUE"],
    )


def load_jmmlu(root: Path, sub: str | None, name: str) -> Dataset:
    """JMMLU (Japanese MMLU, CC BY-SA part), no recorded annotators."""
    path = source_file(root, JMMLU_FILE, name)
    df = require_rows(read_text_csv(path), name, path)
    opt_cols = [c for c in LETTERS if c in df.columns]
    choices = pd.Series(df[opt_cols].to_numpy().tolist(), index=df.index).map(
        lambda cs: [str(c) for c in cs]
    )
    items = pd.DataFrame(
        {
            "item_id": df["subject"] + "/" + df["row_in_subject"],
            "text": mc_text(df["question"], choices),
            "gold": df["answer"].str.strip(),
            "choices": choices,
            "language": "ja",
            "subject": df["subject"],
            "question": df["question"],
        }
    )
    return finalize(
        name,
        TaskType.multiple_choice,
        items,
        empty_annotations(),
        kinds={},
        sources=[path],
        labels=opt_cols,
        language="ja",
        description="JMMLU: Japanese MMLU, four-choice questions",
        notes=["no recorded annotators"],
    )
