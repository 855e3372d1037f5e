"""Rebuild examples/datasets/ (one small dataset folder per task type).

    .venv/bin/python scripts/make_example_datasets.py [--data-dir ../shared/data]

- csv/nli.csv: synthetic premise/hypothesis pairs with synthetic answers (ours, CC0), and
  classification/, written from it by ``quorum datasets init`` (the docs' walkthrough);
- multiple-choice/: 100 MMLU-Redux questions with 4 LLMs' HELM answers (real excerpt);
- summarization/: the 40 shortest CNN articles of Goyal et al. 2022 with 4 systems'
  summaries (real excerpt).

Output is deterministic: running it twice writes the same bytes.
"""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

import numpy as np
import pandas as pd

from quorum.data.importer import init_folder
from quorum.data.loaders._common import mc_text

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "examples" / "datasets"

# the walkthrough's command, also run by tests/test_datasets_examples.py
NLI_INIT = dict(
    task_type="classification",
    id_column="pair_id",
    text=("premise", "hypothesis"),
    gold="label",
    answers=("llm-large", "llm-medium", "llm-small", "crowd-1", "crowd-2"),
    humans=("crowd-1", "crowd-2"),
    name="nli-synthetic",
)

# ------------------------------------------------------------------ synthetic NLI
NAMES = ["Ana", "Bilal", "Chen", "Dara", "Elif", "Femi", "Greta", "Hugo", "Ines", "Jonas"]
CITIES = ["Lisbon", "Nairobi", "Osaka", "Quito", "Tartu", "Lyon", "Perth", "Accra"]
OBJECTS = [("bicycle", "bicycles"), ("laptop", "laptops"), ("guitar", "guitars"),
           ("tent", "tents"), ("camera", "cameras"), ("kettle", "kettles")]  # fmt: skip
ADJ = ["red", "second-hand", "small", "new", "heavy", "cheap"]
PLACES = ["market", "station", "harbour", "mall"]
DAYS = ["Monday", "Tuesday", "Friday", "Saturday"]
JOBS = ["nurse", "carpenter", "pilot", "teacher", "chemist", "librarian"]


#: per premise pattern: (premise, entailed hypotheses, non-entailed hypotheses); each
#: hypothesis is (template, hard), hard = a paraphrase or a high word overlap
PATTERNS = [
    (
        "{name} bought a {adj} {obj} at the {place} in {city} on {day}.",
        [("{name} bought a {obj}.", False), ("{name} was at a {place} on {day}.", True)],
        [
            ("{name} bought a {adj2} {obj}.", True),
            ("{name} bought the {obj} for a friend.", True),
            ("{name} did not buy anything in {city}.", False),
        ],
    ),
    (
        "The council of {city} said on {day} that {name} will lead its new {job} team.",
        [("{name} will lead a team.", False), ("{name} is going to be in charge.", True)],
        [
            ("{name} already leads the {job} team of {city2}.", True),
            ("The council of {city} will close the {job} team.", False),
        ],
    ),
    (
        "After the storm in {city}, {name} donated {n} {objs} to the local school.",
        [("{name} gave {objs} to a school.", True), ("There was a storm in {city}.", False)],
        [
            ("{name} sold {n} {objs} to the local school.", True),
            ("{name} donated {n} {objs} before the storm.", True),
            ("{name} lives in {city2}.", False),
        ],
    ),
    (
        "{name}, who grew up in {city}, has worked as a {job} for {years} years.",
        [("{name} is a {job}.", False), ("{name} spent their childhood in {city}.", True)],
        [
            ("{name} was born in {city}.", True),
            ("{name} has never worked as a {job}.", False),
            ("{name} grew up in {city2}.", False),
        ],
    ),
]


def _pairs(rng: np.random.Generator) -> list[dict]:
    """120 (premise, hypothesis, label, hard) rows, 30 from each pattern."""
    out = []
    for k in range(120):
        city, city2 = rng.choice(CITIES, 2, replace=False)
        adj, adj2 = rng.choice(ADJ, 2, replace=False)
        obj, objs = OBJECTS[rng.integers(len(OBJECTS))]
        slots = {
            "name": rng.choice(NAMES), "city": city, "city2": city2, "adj": adj, "adj2": adj2,
            "obj": obj, "objs": objs, "place": rng.choice(PLACES), "day": rng.choice(DAYS),
            "job": rng.choice(JOBS), "n": int(rng.integers(3, 40)),
            "years": int(rng.integers(2, 30)),
        }  # fmt: skip
        premise, yes, no = PATTERNS[k % 4]
        entails = bool(rng.random() < 0.5)
        cases = yes if entails else no
        hypothesis, hard = cases[rng.integers(len(cases))]
        out.append(
            {
                "pair_id": f"nli-{k:03d}",
                "premise": premise.format(**slots),
                "hypothesis": hypothesis.format(**slots),
                "label": "entailment" if entails else "not_entailment",
                "hard": hard,
            }
        )
    return out


#: P(correct) on easy / hard pairs; llm-small sometimes answers outside the label set
ACCURACY = {"llm-large": (0.96, 0.80), "llm-medium": (0.90, 0.62), "llm-small": (0.80, 0.45),
            "crowd-1": (0.93, 0.78), "crowd-2": (0.90, 0.72)}  # fmt: skip


def make_nli(rng: np.random.Generator) -> pd.DataFrame:
    rows = _pairs(rng)
    for r in rows:
        other = {"entailment": "not_entailment", "not_entailment": "entailment"}[r["label"]]
        for a, (easy, hard) in ACCURACY.items():
            r[a] = r["label"] if rng.random() < (hard if r["hard"] else easy) else other
        if rng.random() < 0.04:
            r["llm-small"] = "unsure"
        if rng.random() < 0.05:
            r["crowd-2"] = None  # worker skipped the pair
        del r["hard"]
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ MMLU-Redux excerpt
MMLU_MODELS = {
    "claude-3-5-sonnet": "pred_anthropic_claude-3-5-sonnet-20240620",
    "gpt-4-0613": "pred_openai_gpt-4-0613",
    "mistral-large-2407": "pred_mistralai_mistral-large-2407",
    "mixtral-8x22b": "pred_mistralai_mixtral-8x22b",
}
MMLU_SUBJECTS = ("high_school_statistics", "econometrics")
MC_TASK = """\
# A multiple-choice dataset folder written out in full: every annotator has a price and
# the panel is given, so no default applies. Questions: MMLU (Hendrycks et al. 2021, MIT);
# answers: HELM runs collected by MMLU-Redux (Gema et al. 2024, CC BY 4.0). See README.md.
name = "mmlu-stats-econ"
type = "multiple_choice"
labels = ["A", "B", "C", "D"]
language = "en"
instructions = "Answer with the letter of the correct option."
human_price = 0.10            # price of one human label ("gold" = the answer key)
# reference_llm = "claude-3-5-sonnet"   # for MCA; default: the panel's most expensive LLM
panel = ["claude-3-5-sonnet", "gpt-4-0613", "mistral-large-2407"]   # LLMs the router uses

[[annotators]]
name = "claude-3-5-sonnet"
kind = "llm"                  # llm | model | human
price = 0.05                  # per call, in the currency of human_price

[[annotators]]
name = "gpt-4-0613"
kind = "llm"
price = 0.03

[[annotators]]
name = "mistral-large-2407"
kind = "llm"
price = 0.01

[[annotators]]
name = "mixtral-8x22b"        # recorded, but not in the panel
kind = "llm"
price = 0.01
"""


def make_mmlu(data: Path, out: Path) -> None:
    df = pd.read_csv(data / "mmlu_redux_helm/mmlu_redux_helm_predictions.csv", dtype=str,
                     keep_default_na=False)  # fmt: skip
    df = pd.concat([df.loc[df["subject"] == s].head(50) for s in MMLU_SUBJECTS])
    choices = df["choices"].map(lambda s: [str(c) for c in ast.literal_eval(s)])
    items = pd.DataFrame(
        {
            "item_id": (df["subject"] + "/" + df["row_in_subject"]).to_numpy(),
            "text": mc_text(df["question"], choices).to_numpy(),
            "gold": df["answer_original"].to_numpy(),
            "choices": [json.dumps(c, ensure_ascii=False) for c in choices],
            "subject": df["subject"].to_numpy(),
        }
    )
    ann = pd.concat(
        [
            pd.DataFrame({"item_id": items["item_id"], "annotator": a, "output": df[c].to_numpy()})
            for a, c in MMLU_MODELS.items()
        ]
    )
    ann = ann.loc[ann["output"].str.strip() != ""]  # no answer recorded
    _write(out, items, ann, MC_TASK)


# ------------------------------------------------------------------ Goyal et al. excerpt
SUMM_TASK = """\
# A summarization dataset folder with no prices and no panel: the default rule ranks the
# systems by ROUGE-1 against the reference and prices them 0.05 / 0.03 / 0.01.
# Articles, references and summaries: Goyal, Li & Durrett 2022 (CC BY 4.0). See README.md.
name = "cnn-goyal22-excerpt"
type = "summarization"
language = "en"
# human = "gold": the reference summary is the perfect human label

[[annotators]]
name = "gpt3-text-davinci-002"
kind = "llm"

[[annotators]]
name = "t0"
kind = "model"

[[annotators]]
name = "pegasus"
kind = "model"

[[annotators]]
name = "brio"
kind = "model"
"""


def make_summ(data: Path, out: Path) -> None:
    path = data / "summ_goyal22_gpt3/goyal22_benchmark_summaries.parquet"
    df = pd.read_parquet(path, filters=[("dataset", "==", "cnn")])
    docs = df.drop_duplicates("doc_id")
    docs = docs.assign(n=docs["document"].str.len()).sort_values(["n", "doc_id"]).head(40)
    items = pd.DataFrame(
        {"item_id": docs["doc_id"], "text": docs["document"], "reference": docs["reference"]}
    )
    rows = df.loc[df["doc_id"].isin(items["item_id"])].sort_values(["doc_id", "system"])
    ann = rows.rename(columns={"doc_id": "item_id", "system": "annotator", "summary": "output"})
    _write(out, items, ann[["item_id", "annotator", "output"]], SUMM_TASK)


def _write(out: Path, items: pd.DataFrame, ann: pd.DataFrame, task: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "task.toml").write_text(task, encoding="utf-8")
    items.to_csv(out / "items.csv", index=False, encoding="utf-8")
    ann.to_csv(out / "annotations.csv", index=False, encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    args = ap.parse_args()
    (OUT / "csv").mkdir(parents=True, exist_ok=True)
    make_nli(np.random.default_rng(16)).to_csv(OUT / "csv" / "nli.csv", index=False)
    init_folder(OUT / "classification", OUT / "csv" / "nli.csv", overwrite=True, **NLI_INIT)
    make_mmlu(args.data_dir, OUT / "multiple-choice")
    make_summ(args.data_dir, OUT / "summarization")
    for d in ("classification", "multiple-choice", "summarization"):
        size = sum(p.stat().st_size for p in (OUT / d).iterdir())
        print(f"{OUT / d}: {size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
