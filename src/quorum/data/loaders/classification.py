"""Loaders for the classification and multiple-choice sets that record annotators' answers."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pandas as pd

from quorum.data.loaders._common import (
    LETTERS,
    blank_to_na,
    finalize,
    mc_text,
    read_text_csv,
    require_rows,
    source_file,
    wide_to_long,
)
from quorum.data.loaders.zeroshot import zero_shot_annotations
from quorum.data.schema import Dataset, TaskType
from quorum.errors import DatasetNotFoundError

MMLU_FILE = "mmlu_redux_helm/mmlu_redux_helm_predictions.csv"
CSS_FILE = "llms_for_css/llms_for_css_predictions.csv"
CSS_TASKS_FILE = "llms_for_css/tasks.json"
IMDB_FILE = "imdb_mlapi/imdb_test_mlapi_predictions.parquet"
SENTIMP_FILE = "sentimp21/sentimp_uk_extended_without_discarded.csv"
STANCE_FILES = {
    "es": "coannotating_catalan_stance/stance_ES_gpt4omini_11prompts.csv",
    "cat": "coannotating_catalan_stance/stance_CAT_gpt4omini_11prompts.csv",
}

#: FrugalML meta.csv, USD per 10,000 texts (quoted in imdb_mlapi/README.md)
IMDB_PRICE_PER_10K = {"google": 2.5, "baidu": 3.5, "amazon": 0.75, "vader": 0.001}


def _letters(n: int) -> list[str]:
    return list(LETTERS[:n])


# ------------------------------------------------------------------------ MMLU-Redux
def load_mmlu_redux(root: Path, sub: str | None, name: str) -> Dataset:
    """MMLU-Redux questions with the HELM answers of up to 20 LLMs."""
    path = source_file(root, MMLU_FILE, name)
    df = require_rows(read_text_csv(path), name, path)
    choices = df["choices"].map(lambda s: [str(c) for c in ast.literal_eval(s)])
    labels = _letters(int(choices.map(len).max()))
    items = pd.DataFrame(
        {
            "item_id": df["subject"] + "/" + df["row_in_subject"],
            "text": mc_text(df["question"], choices),
            "gold": df["answer_original"].str.strip(),
            "choices": choices,
            "language": "en",
            "subject": df["subject"],
            "question": df["question"],
        }
    )
    for c in ("error_type", "redux_error_type", "redux_correct_answer", "redux_source"):
        items[c] = blank_to_na(df[c])
    items["redux_potential_reason"] = blank_to_na(df["redux_potential_reason"])
    # pred_<org>_<model> -> "<org>/<model>" (HELM naming)
    cols = {c.removeprefix("pred_").replace("_", "/", 1): c for c in df if c.startswith("pred_")}
    ann = wide_to_long(items["item_id"], {a: blank_to_na(df[c]) for a, c in cols.items()})
    n_wrong = int((items["error_type"] == "wrong_groundtruth").sum())
    notes = [
        f"{items['subject'].nunique()} subjects x up to 100 questions",
        "gold is the original MMLU key; MMLU-Redux marks "
        f"{n_wrong} of {len(items)} keys as wrong_groundtruth (items.error_type)",
        "answers that are not a letter A-D (e.g. 'The', 'i', '') count as unparseable",
    ]
    return finalize(
        name,
        TaskType.multiple_choice,
        items,
        ann,
        kinds={a: "llm" for a in cols},
        sources=[path],
        labels=labels,
        description="MMLU-Redux (Gema et al. 2024) with HELM answers of LLMs; gold = MMLU key",
        notes=notes,
    )


# ------------------------------------------------------------------------ LLMs for CSS
def css_tasks(root: Path) -> list[str]:
    path = Path(root) / CSS_FILE
    return sorted(pd.read_csv(path, usecols=["task"], dtype=str)["task"].unique())


def _css_labels(
    df: pd.DataFrame, gold: pd.Series, preds: dict[str, pd.Series], options: dict[str, str]
) -> tuple[list[str], dict[str, str] | None, list[str]]:
    """The label set (the prompt's options in order, then gold labels the prompt does not
    offer), their names, and a note per such gold label."""
    seen = set(gold) | {v for s in preds.values() for v in s.dropna().unique()}
    labels = list(options) or sorted(seen)
    extra = sorted(set(gold) - set(labels))
    labels += extra
    label_names = dict(options) if options else None
    notes = []
    for lab in extra:
        raw = df.loc[gold == lab, "gold_raw"].unique()
        if label_names is not None and len(raw) == 1:
            label_names[lab] = str(raw[0])
        notes.append(
            f"gold label {lab!r} ({', '.join(map(str, raw))}) on {int((gold == lab).sum())} of "
            f"{len(df)} items is not an option in the prompt: no model can output it"
        )
    return labels, label_names, notes


def load_llms_for_css(root: Path, sub: str | None, name: str) -> Dataset:
    """One task of Ziems et al. 2023 (LLMs for CSS) with 13 LLMs' zero-shot labels."""
    path = source_file(root, CSS_FILE, name)
    all_rows = read_text_csv(path)
    df = all_rows.loc[all_rows["task"] == sub].reset_index(drop=True)
    if df.empty:
        found = sorted(all_rows["task"].unique())
        raise DatasetNotFoundError(f"{name!r}: no task {sub!r} in {path}; tasks found: {found}")
    tasks_path = Path(root) / CSS_TASKS_FILE
    options: dict[str, str] = {}
    sources = [path]
    if tasks_path.is_file():
        options = json.loads(tasks_path.read_text(encoding="utf-8")).get(sub, {}).get("options", {})
        sources.append(tasks_path)
    gold = df["gold"].str.strip()
    models = [c.removeprefix("pred_") for c in df if c.startswith("pred_")]
    preds = {m: blank_to_na(df[f"pred_{m}"]) for m in models}
    labels, label_names, notes = _css_labels(df, gold, preds, options)
    prompts = df["prompt"].unique()
    items = pd.DataFrame(
        {
            "item_id": df["item_id"],
            "text": df["text"],
            "gold": gold,
            "language": "en",
            "task": df["task"],
            "item_index": pd.to_numeric(df["item_index"]),
            "prompt": df["prompt"],
            "gold_raw": df["gold_raw"],
        }
    )
    if sub == "implicit_hate":
        notes.append("the prompt allows several options; only the first letter was kept")
    raw = {m: blank_to_na(df[f"raw_{m}"]) for m in models if f"raw_{m}" in df}
    ann = wide_to_long(items["item_id"], preds, raw=raw)
    return finalize(
        name,
        TaskType.classification,
        items,
        ann,
        kinds={m: "llm" for m in models},
        sources=sources,
        labels=labels,
        label_names=label_names,
        instructions=prompts[0].strip() if len(prompts) == 1 else None,
        description=f"LLMs for CSS (Ziems et al. 2023), task {sub}",
        notes=notes,
    )


# ------------------------------------------------------------------------ IMDB
def load_imdb_mlapi(root: Path, sub: str | None, name: str) -> Dataset:
    """IMDB test reviews with 4 sentiment APIs (FrugalML) and their real prices."""
    path = source_file(root, IMDB_FILE, name)
    df = require_rows(pd.read_parquet(path), name, path)
    apis = [c.removeprefix("pred_") for c in df if c.startswith("pred_")]
    names = df.groupby("gold")["gold_sentiment"].first()
    items = pd.DataFrame(
        {
            "item_id": df["file"].str.removesuffix(".txt"),
            "text": df["text"],
            "gold": df["gold"].astype("str"),
            "language": "en",
            "rating": df["rating"],
            "file": df["file"],
        }
    )
    ann = wide_to_long(
        items["item_id"],
        {a: df[f"pred_{a}"].astype("str") for a in apis},
        confidence={a: df[f"conf_{a}"] for a in apis if f"conf_{a}" in df},
    )
    prices = {a: IMDB_PRICE_PER_10K.get(a, 0.0) / 10_000 for a in apis}
    acc = {a: float((df[f"pred_{a}"] == df["gold"]).mean()) for a in apis}
    panel = sorted(apis, key=lambda a: (-acc[a], a))
    share0 = {a: float((df[f"pred_{a}"] == 0).mean()) for a in apis}
    notes = [
        "prices are the real per-call API prices from FrugalML meta.csv (USD per 10k / 10,000)",
        "human_price 0.10 is our default; it is ~400x Google's per-call price",
    ]
    notes += [
        f"{a} predicts class 0 ({names.get(0, '0')}) for {share0[a]:.0%} of items"
        for a in apis
        if share0[a] > 0.9
    ]
    missing = sorted(set(apis) - set(IMDB_PRICE_PER_10K))
    if missing:
        notes.append(f"no known price for {missing}; priced 0")
    return finalize(
        name,
        TaskType.classification,
        items,
        ann,
        kinds={a: "model" for a in apis},
        sources=[path],
        labels=[str(k) for k in sorted(names.index)],
        label_names={str(k): str(v) for k, v in names.items()},
        description="IMDB test set with Google/Baidu/Amazon/Vader sentiment APIs (FrugalML)",
        prices=prices,
        panel=panel,
        notes=notes,
    )


# ------------------------------------------------------------------------ SentiMP-En
SENTIMP_LABEL_NAMES = {"-1": "negative", "0": "neutral", "1": "positive"}
#: the local machine annotator added to SentiMP-En (it records no LLM answers)
SENTIMP_MACHINE = "zeroshot-minilm"
#: local compute costs ~nothing; priced like the paper's cheapest LLM (0.01) so that budgets
#: stay comparable with the other datasets
SENTIMP_MACHINE_PRICE = 0.01
#: label strings for the zero-shot classifier, chosen a priori (not tuned on gold)
SENTIMP_DESCRIPTIONS = {
    "-1": "negative sentiment",
    "0": "neutral sentiment",
    "1": "positive sentiment",
}


def load_sentimp_en(root: Path, sub: str | None, name: str) -> Dataset:
    """SentiMP-21 UK tweets: three human labellers, gold, and a local zero-shot annotator.

    The file records no machine answers; ``zeroshot-minilm`` is computed here (MiniLM
    zero-shot, see :mod:`quorum.data.loaders.zeroshot`) and cached on disk.
    """
    path = source_file(root, SENTIMP_FILE, name)
    df = require_rows(read_text_csv(path), name, path)
    label_cols = sorted(
        (c for c in df if re.fullmatch(r"label_\d+", c)), key=lambda c: int(c.split("_")[1])
    )
    items = pd.DataFrame(
        {
            "item_id": df["tweet_id"],
            "text": df["full_text"],
            "gold": df["final_label"].str.strip(),
            "language": "en",
        }
    )
    for c in ("mp_party", "mp_name", "created_at", "majority_vote", "tie_break"):
        if c in df:
            items[c] = blank_to_na(df[c])
    outs = {f"labeller_{c.split('_')[1]}": blank_to_na(df[c]) for c in label_cols}
    labels = list(SENTIMP_LABEL_NAMES)
    machine = zero_shot_annotations(items, labels, SENTIMP_DESCRIPTIONS, SENTIMP_MACHINE)
    ann = pd.concat([wide_to_long(items["item_id"], outs), machine], ignore_index=True)
    n_tie = int((df.get("majority_vote", pd.Series(dtype=str)) == "TIE").sum())
    descs = ", ".join(f"{k}={v!r}" for k, v in SENTIMP_DESCRIPTIONS.items())
    return finalize(
        name,
        TaskType.classification,
        items,
        ann,
        kinds={**dict.fromkeys(outs, "human"), SENTIMP_MACHINE: "model"},
        sources=[path],
        labels=labels,
        label_names=SENTIMP_LABEL_NAMES,
        description=(
            "SentiMP-En: UK MPs' tweets, 3 human labellers, gold = final_label, plus a local "
            "zero-shot MiniLM annotator"
        ),
        prices={**dict.fromkeys(outs, 0.10), SENTIMP_MACHINE: SENTIMP_MACHINE_PRICE},
        panel=[SENTIMP_MACHINE],
        notes=[
            "the recorded annotators are humans (0.10 each); the file has no LLM answers",
            f"{SENTIMP_MACHINE} is computed locally, not recorded: zero-shot MiniLM "
            f"(all-MiniLM-L6-v2, cosine similarity to {descs}, descriptions chosen a priori, "
            "not tuned on gold; confidence = softmax, temperature 0.05); cached on disk",
            f"{SENTIMP_MACHINE} is priced {SENTIMP_MACHINE_PRICE} like the paper's cheapest "
            "LLM (local compute is ~free) so budgets stay comparable",
            f"{n_tie} items had no majority (TIE) and were resolved by tie_break",
        ],
    )


# ------------------------------------------------------------------------ stance
STANCE_NAMES = {"0": "AGAINST", "1": "IN FAVOUR", "2": "NEUTRAL"}


def _label_int(s: pd.Series) -> pd.Series:
    """'2.0' -> '2'; blanks and junk -> NA."""
    v = pd.to_numeric(s.astype("str").str.strip(), errors="coerce")
    out = v.astype("Int64").astype("str")
    return out.where(v.notna() & (v == v.round()))


def load_stance(root: Path, sub: str | None, name: str) -> Dataset:
    """Catalonia-independence stance: GPT-4o-mini under 11 prompts, with confidences."""
    path = source_file(root, STANCE_FILES[str(sub)], name)
    df = require_rows(read_text_csv(path), name, path)
    ks = sorted(int(m.group(1)) for c in df if (m := re.fullmatch(r"parsed_response(\d+)", c)))
    items = pd.DataFrame(
        {
            "item_id": df["id"],
            "text": df["text"],
            "gold": _label_int(df["gold"]),
            "language": {"es": "es", "cat": "ca"}[str(sub)],
            "majority_vote": _label_int(df["majority_vote"]),
            "entropy": pd.to_numeric(df["entropy"], errors="coerce"),
        }
    )
    outs = {f"gpt-4o-mini/p{k}": _label_int(df[f"parsed_response{k}"]) for k in ks}
    conf = {
        f"gpt-4o-mini/p{k}": df[f"confidence_response{k}"]
        for k in ks
        if f"confidence_response{k}" in df
    }
    ann = wide_to_long(items["item_id"], outs, confidence=conf)
    acc = {a: float((o == items["gold"]).mean()) for a, o in outs.items()}
    panel = sorted(list(outs)[:3], key=lambda a: (-acc[a], a))
    return finalize(
        name,
        TaskType.classification,
        items,
        ann,
        kinds={a: "llm" for a in outs},
        sources=[path],
        labels=list(STANCE_NAMES),
        label_names=STANCE_NAMES,
        language={"es": "es", "cat": "ca"}[str(sub)],
        description=(
            f"Catalonia independence stance ({str(sub).upper()}): one LLM (GPT-4o-mini) "
            f"under {len(ks)} prompts, verbalised confidence"
        ),
        prices={a: 0.01 for a in outs},
        panel=panel,
        notes=[
            f"one model under {len(ks)} prompt formulations: each prompt is an annotator, "
            "all priced 0.01 (our choice); the panel is prompts p1-p3 (our choice)",
            "confidences are self-reported by the model",
        ],
    )


MFRC_DIR = "mfrc_multilabel"
MFRC_FILE = f"{MFRC_DIR}/items.parquet"
#: MFRC's panel and prices (cheapest to dearest in the source's order of quality: LLaMA-2
#: zero-shot, GPT-3.5 few-shot, fine-tuned GPT-3.5); the other models keep the folder
#: rule's prices and can be chosen with --annotators
MFRC_PANEL = {
    "llama2-luna-uncensored-gptq4bit:zeroshot": 0.01,
    "gpt-3.5-turbo-0301:fewshot-binary": 0.03,
    "gpt-3.5-turbo-0613-ft": 0.05,
}


def load_mfrc(root: Path, sub: str | None, name: str) -> Dataset:
    """MFRC moral foundations, a multi-label task (a set of 8 labels per item): 2,983
    Reddit comments, 7 models and 6 people (``annotator_kind``), gold = the people's
    majority. Read as the folder it is (:mod:`quorum.tasks.multilabel` recognises it)."""
    from quorum.data.io import load_folder

    folder = root / MFRC_DIR
    source_file(root, MFRC_FILE, name)
    ds = load_folder(folder)
    specs = [
        a.model_copy(update={"price": MFRC_PANEL[a.name]}) if a.name in MFRC_PANEL else a
        for a in ds.task.annotators
    ]
    task = ds.task.with_annotators(specs, name="mfrc")
    items = ds.items.assign(language=task.language)
    score = task.kind.scorer(task.language)
    gold = dict(zip(items["item_id"], items["gold"], strict=True))
    ann = ds.annotations
    per = pd.Series(
        [score(o, gold[i]) for i, o in zip(ann["item_id"], ann["output"], strict=True)],
        index=ann.index,
    ).groupby(ann["annotator"].to_numpy())
    n = len(items)
    meta = {
        "scores": {str(a): float(v / n) for a, v in per.sum().items()},  # mean Jaccard
        "coverage": {str(a): float(v / n) for a, v in per.size().items()},
        **ds.meta,
        "panel": list(MFRC_PANEL),
        "source": [str(folder / "items.parquet"), str(folder / "answers.parquet")],
        "unparseable": dict(ds.meta.get("dropped") or {}),
    }
    return Dataset(task, items, ds.annotations, source=str(folder), meta=meta)
