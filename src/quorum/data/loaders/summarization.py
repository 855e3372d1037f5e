"""Loaders for the news-summarization sets: each system is an annotator, output = summary."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from quorum.data.loaders._common import finalize, require_rows, source_file
from quorum.data.schema import Dataset, TaskType
from quorum.errors import DatasetNotFoundError

GOYAL_FILE = "summ_goyal22_gpt3/goyal22_benchmark_summaries.parquet"
SELFREC_FILE = "summ_selfrec_llm/selfrec_llm_summaries.parquet"
SUMMEVAL_FILE = "summ_summeval/summeval_abstractive12.parquet"
ZHANG_FILE = "summ_zhang23_writers/zhang23_writer_and_davinci_summaries.parquet"

_LLM = re.compile(r"gpt|davinci|claude|llama|gemini|palm|mistral|qwen", re.I)


def system_kind(system: str) -> str:
    """'llm' for prompted LLMs (GPT-3, Claude, Llama, GPT-2 zero-shot...), else 'model'."""
    return "llm" if _LLM.search(system) else "model"


def _long(df: pd.DataFrame, extra: list[str] | None = None) -> pd.DataFrame:
    cols = {"doc_id": "item_id", "system": "annotator", "summary": "output"}
    keep = list(cols) + [c for c in extra or [] if c in df.columns]
    return df[keep].rename(columns=cols).reset_index(drop=True)


def _items(df: pd.DataFrame, meta_cols: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """One row per document; documents with an empty text are dropped (and reported)."""
    docs = df.drop_duplicates("doc_id")
    cols = ["doc_id", "document", "reference", *[c for c in meta_cols if c in docs.columns]]
    items = docs[cols].rename(columns={"doc_id": "item_id", "document": "text"})
    items.insert(3, "language", "en")
    empty = items["text"].isna() | (items["text"].astype("str").str.strip() == "")
    notes = []
    if empty.any():
        dropped = items.loc[empty, "item_id"].tolist()
        notes.append(f"dropped {len(dropped)} document(s) with an empty text: {dropped}")
    return items.loc[~empty].reset_index(drop=True), notes


def _kinds(ann: pd.DataFrame) -> dict[str, str]:
    return {s: system_kind(s) for s in ann["annotator"].drop_duplicates()}


# ------------------------------------------------------------------------ Goyal et al. 2022
def goyal_sources(root: Path) -> list[str]:
    path = Path(root) / GOYAL_FILE
    return sorted(pd.read_parquet(path, columns=["dataset"])["dataset"].unique())


def load_goyal22(root: Path, sub: str | None, name: str) -> Dataset:
    """Goyal et al. 2022: GPT-3 davinci-002, T0, PEGASUS, BRIO on one news source."""
    path = source_file(root, GOYAL_FILE, name)
    df = pd.read_parquet(path, filters=[("dataset", "==", sub)])
    if df.empty:
        raise DatasetNotFoundError(
            f"{name!r}: no dataset {sub!r} in {path}; found: {goyal_sources(root)}"
        )
    items, notes = _items(df, ["dataset", "source_id"])
    ann = _long(df.loc[df["doc_id"].isin(items["item_id"])])
    notes.append("PEGASUS and BRIO are fine-tuned on the matching dataset; T0 and GPT-3 are not")
    if sub == "newsroom":
        notes.append("BRIO has no Newsroom outputs in the source")
    return finalize(
        name,
        TaskType.summarization,
        items,
        ann,
        kinds=_kinds(ann),
        sources=[path],
        description=f"Goyal, Li & Durrett 2022, {sub} test articles",
        notes=notes,
    )


# ------------------------------------------------------------------------ self-recognition
def load_selfrec(root: Path, sub: str | None, name: str) -> Dataset:
    """Panickssery et al. 2024: 4 LLMs summarise CNN/DM train articles."""
    path = source_file(root, SELFREC_FILE, name)
    df = pd.read_parquet(path, filters=[("dataset", "==", "cnndm")])
    require_rows(df, name, path, "no row with dataset == 'cnndm'")
    items, notes = _items(df, ["dataset", "split"])
    ann = _long(df.loc[df["doc_id"].isin(items["item_id"])])
    notes.append("train-split articles: models may have seen them")
    return finalize(
        name,
        TaskType.summarization,
        items,
        ann,
        kinds=_kinds(ann),
        sources=[path],
        description="Panickssery et al. 2024: 4 LLM summarisers on CNN/DM (train split)",
        notes=notes,
        empty_reason="every document with dataset == 'cnndm' has an empty text",
    )


# ------------------------------------------------------------------------ SummEval
def load_summeval(root: Path, sub: str | None, name: str) -> Dataset:
    """SummEval's 12 abstractive systems on 100 CNN/DM test articles, with ratings."""
    path = source_file(root, SUMMEVAL_FILE, name)
    df = require_rows(pd.read_parquet(path), name, path)
    items, notes = _items(df, ["dataset", "references_all"])
    ratings = [c for c in df.columns if c.startswith(("expert_", "turker_"))]
    ann = _long(df.loc[df["doc_id"].isin(items["item_id"])], ["system_id", *ratings])
    notes += [
        "system summaries are lower-cased and tokenised (as in SummEval); references are not",
        "annotations carry SummEval's mean expert/crowd ratings (expert_*, turker_*)",
    ]
    return finalize(
        name,
        TaskType.summarization,
        items,
        ann,
        kinds=_kinds(ann),
        sources=[path],
        description="SummEval (Fabbri et al. 2021): 12 abstractive systems, CNN/DM test",
        notes=notes,
    )


# ------------------------------------------------------------------------ Zhang et al. 2023
def load_zhang23(root: Path, sub: str | None, name: str) -> Dataset:
    """Zhang et al. 2023: freelance writers vs GPT-3 davinci-002.

    No dataset reference exists: writer 1's summary is the reference; writers 2..k are
    human annotators ``writer_2``..; davinci-002 is the only LLM.
    """
    path = source_file(root, ZHANG_FILE, name)
    df = require_rows(pd.read_parquet(path), name, path)
    human = df["system"] == "human_writer"
    ref = df.loc[human & (df["writer_idx"] == 1)].drop_duplicates("doc_id")
    docs = df.drop_duplicates("doc_id")[["doc_id", "document", "has_davinci"]]
    docs = docs.merge(ref[["doc_id", "summary", "writer_id"]], on="doc_id", how="inner")
    docs = docs.rename(columns={"summary": "reference", "writer_id": "reference_writer_id"})
    items, notes = _items(docs, ["has_davinci", "reference_writer_id"])
    rest = df.loc[df["doc_id"].isin(items["item_id"]) & ~(human & (df["writer_idx"] == 1))].copy()
    is_w = rest["system"] == "human_writer"
    rest.loc[is_w, "system"] = "writer_" + rest.loc[is_w, "writer_idx"].astype("str")
    extra = ["writer_id", "pairwise_n"] + [c for c in df if c.startswith("pairwise_overall_")]
    ann = _long(rest, extra)
    kinds = {s: ("human" if s.startswith("writer_") else system_kind(s)) for s in ann["annotator"]}
    kinds = dict(sorted(kinds.items(), key=lambda kv: (kv[1] == "human", kv[0])))
    n_no_ref = df["doc_id"].nunique() - len(docs)
    notes += [
        "no dataset reference: writer 1's summary is items.reference (our choice); "
        "writers 2..4 are human annotators writer_2..writer_4 (per article, not the same person)",
    ]
    if n_no_ref:
        notes.append(f"{n_no_ref} article(s) without a writer-1 summary were left out")
    return finalize(
        name,
        TaskType.summarization,
        items,
        ann,
        kinds=kinds,
        sources=[path],
        description="Zhang et al. 2023: freelance-writer summaries vs GPT-3 text-davinci-002",
        notes=notes,
        empty_reason="no article with a writer-1 summary (system 'human_writer', writer_idx 1) "
        "and a non-empty document",
    )
