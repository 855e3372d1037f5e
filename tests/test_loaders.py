"""Named loaders on the real shared files (skipped when the data dir is absent), and the CLI."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal
from typer.testing import CliRunner

from quorum.cli.main import app
from quorum.data.io import load_folder
from quorum.data.loaders import list_datasets, load_dataset
from quorum.data.schema import Dataset, TaskType
from quorum.data.writer import save_folder
from quorum.errors import DatasetNotFoundError

pytestmark = pytest.mark.realdata

FIXED = [
    "mmlu-redux",
    "imdb-mlapi",
    "sentimp-en",
    "coannotating-stance/es",
    "coannotating-stance/cat",
    "ag-news",
    "sst2",
    "jmmlu",
    "summ-selfrec-cnndm",
    "summ-summeval",
    "summ-zhang23",
    "llmbar",
    "mfrc",
    "span-d2t-eval",
]


@cache
def load(name: str) -> Dataset:
    return load_dataset(name)


@pytest.fixture(scope="module", autouse=True)
def root(shared_data_dir) -> Path:
    """Every test here needs the real files: skip the module cleanly without them."""
    return shared_data_dir


def csv(root: Path, rel: str) -> pd.DataFrame:
    return pd.read_csv(root / rel, dtype=str, keep_default_na=False)


# ------------------------------------------------------------------ discovery
def test_list_discovers_every_name(root):
    names = list_datasets()
    css = sorted(csv(root, "llms_for_css/llms_for_css_predictions.csv")["task"].unique())
    goyal = pd.read_parquet(root / "summ_goyal22_gpt3/goyal22_benchmark_summaries.parquet")
    assert set(FIXED) <= set(names)
    assert [n for n in names if n.startswith("llms-for-css/")] == [f"llms-for-css/{t}" for t in css]
    assert sorted(n for n in names if n.startswith("summ-goyal22/")) == sorted(
        f"summ-goyal22/{s}" for s in goyal["dataset"].unique()
    )
    assert len(names) == len(FIXED) + len(css) + goyal["dataset"].nunique()


def test_every_named_dataset_loads(root):
    for name in list_datasets():
        ds = load(name)
        assert ds.n_items > 0, name
        assert ds.items["item_id"].is_unique, name
        assert ds.task.name == name
        assert set(ds.meta) >= {"source", "panel", "notes", "unparseable"}, name
        assert all(Path(p).is_file() for p in ds.meta["source"]), name
        assert set(ds.meta["panel"]) <= {a.name for a in ds.task.annotators}, name
        assert ds.items["language"].eq(ds.task.language).all(), name
        assert ds.task.human_price == 0.10


def test_labels_are_normalised_once_per_distinct_value(monkeypatch):
    """What keeps big answer frames fast to load (imdb-mlapi: 100,000 answers): a label's
    canonical form is computed once per distinct value, not once per answer. (No timing
    assertion: speed is for benchmark scripts, not unit tests on a shared machine.)"""
    import quorum.data.schema as schema

    calls = 0
    real = schema._label_str

    def counting(x):
        nonlocal calls
        calls += 1
        return real(x)

    monkeypatch.setattr(schema, "_label_str", counting)
    ds = load_dataset("imdb-mlapi")
    assert len(ds.annotations) >= 50_000
    assert 0 < calls < 1_000


# ------------------------------------------------------------------ per dataset
def test_mmlu_redux(root):
    df = csv(root, "mmlu_redux_helm/mmlu_redux_helm_predictions.csv")
    ds = load("mmlu-redux")
    preds = [c for c in df if c.startswith("pred_")]
    assert ds.n_items == len(df)
    assert len(ds.task.annotators) == len(preds)
    assert ds.task.type is TaskType.multiple_choice and ds.task.labels == list("ABCD")
    first = ds.items.iloc[0]
    assert first["text"].startswith(df.loc[0, "question"].rstrip())
    assert "\nA. " in first["text"] and "\nD. " in first["text"]
    assert len(first["choices"]) == 4 and first["subject"] == df.loc[0, "subject"]
    acc = ds.annotator_accuracy()
    claude = "anthropic/claude-3-5-sonnet-20240620"
    expect = (df["pred_anthropic_claude-3-5-sonnet-20240620"] == df["answer_original"]).mean()
    assert acc[claude] == pytest.approx(expect, abs=1e-9)
    # README: .865 over the full 5,700 rows; this copy holds 4,500 of them
    assert acc[claude] == pytest.approx(0.865, abs=0.01)
    assert ds.meta["panel"][0] == claude
    bad = (~df["pred_openai_gpt-4-1106-preview"].isin(list("ABCD"))).sum()
    assert ds.meta["unparseable"]["openai/gpt-4-1106-preview"] == bad


def test_mmlu_panel_and_prices():
    ds = load("mmlu-redux")
    acc = ds.annotator_accuracy()
    ranked = sorted(acc, key=lambda a: (-acc[a], a))  # all have >= 90 % coverage
    n = len(ranked)
    assert ds.meta["panel"] == [ranked[0], ranked[n // 3], ranked[2 * n // 3]]
    prices = {a.name: a.price for a in ds.task.annotators}
    assert [prices[a] for a in ds.meta["panel"]] == [0.05, 0.03, 0.01]
    assert set(prices.values()) == {0.05, 0.03, 0.01}
    assert ds.task.mca_reference == ranked[0]


def test_llms_for_css_matches_tasks_json(root):
    df = csv(root, "llms_for_css/llms_for_css_predictions.csv")
    tasks = json.loads((root / "llms_for_css/tasks.json").read_text())
    for task, info in tasks.items():
        ds = load(f"llms-for-css/{task}")
        assert ds.n_items == (df["task"] == task).sum() == info["n_items"]
        assert ds.task.labels[: len(info["options"])] == list(info["options"])
        acc = ds.annotator_accuracy()
        for model, a in info["accuracy_vs_gold"].items():
            if info["parsed"][model] == 0:
                assert model not in acc  # no answers at all: not an annotator here
                continue
            assert acc[model] == pytest.approx(a, abs=0.005), (task, model)
            assert ds.meta["unparseable"][model] == info["n_items"] - info["parsed"][model]
        assert "raw" in ds.annotations.columns


def test_llms_for_css_caveats():
    ied = load("llms-for-css/indian_english_dialect")
    assert "W" in ied.task.labels and ied.task.label_names["W"] == "None of the Above"
    assert any("'W'" in n and "117 of 266" in n for n in ied.meta["notes"])
    raop = load("llms-for-css/raop")
    assert "text-ada-001" not in {a.name for a in raop.task.annotators}
    wiki = load("llms-for-css/wiki_corpus")
    assert wiki.task.instructions is None and wiki.items["prompt"].nunique() > 1
    assert "Which of the following" in load("llms-for-css/ibc").task.instructions


def test_imdb(root):
    df = pd.read_parquet(root / "imdb_mlapi/imdb_test_mlapi_predictions.parquet")
    ds = load("imdb-mlapi")
    assert ds.n_items == len(df) and len(ds.annotations) == 4 * len(df)
    acc = ds.annotator_accuracy()
    for api, a in {"google": 0.864, "baidu": 0.516, "amazon": 0.791, "vader": 0.693}.items():
        assert acc[api] == pytest.approx(a, abs=0.005), api
    prices = {a.name: a.price for a in ds.task.annotators}
    assert prices == pytest.approx(
        {"google": 2.5e-4, "baidu": 3.5e-4, "amazon": 7.5e-5, "vader": 1e-7}
    )
    assert ds.meta["panel"] == ["google", "amazon", "vader", "baidu"]
    assert ds.task.label_names == {"0": "positive", "1": "negative"}
    conf = ds.annotations["confidence"]
    assert conf.notna().all() and conf.between(0, 1).all()


def test_sentimp(root):
    df = csv(root, "sentimp21/sentimp_uk_extended_without_discarded.csv")
    ds = load("sentimp-en")
    assert ds.n_items == len(df) == 480
    assert ds.items["gold"].value_counts().to_dict() == {"1": 245, "-1": 134, "0": 101}
    assert [(a.name, a.kind, a.price) for a in ds.task.annotators] == [
        (f"labeller_{k}", "human", 0.10) for k in (1, 2, 3)
    ] + [("zeroshot-minilm", "model", 0.01)]  # computed locally (tests/test_zeroshot_annotator)
    assert ds.meta["panel"] == ["zeroshot-minilm"]
    acc = ds.annotator_accuracy()
    assert acc["labeller_1"] == pytest.approx((df["label_1"] == df["final_label"]).mean())


@pytest.mark.parametrize(("sub", "lang"), [("es", "es"), ("cat", "ca")])
def test_stance(root, sub, lang):
    df = csv(root, f"coannotating_catalan_stance/stance_{sub.upper()}_gpt4omini_11prompts.csv")
    ds = load(f"coannotating-stance/{sub}")
    assert ds.n_items == len(df) and ds.task.language == lang
    names = [a.name for a in ds.task.annotators]
    assert names == [f"gpt-4o-mini/p{k}" for k in range(1, 12)]
    assert {a.price for a in ds.task.annotators} == {0.01}
    assert sorted(ds.meta["panel"]) == ["gpt-4o-mini/p1", "gpt-4o-mini/p2", "gpt-4o-mini/p3"]
    acc = ds.annotator_accuracy()
    assert min(acc.values()) >= 0.42 - 0.005 and max(acc.values()) <= 0.57 + 0.005  # README
    assert [acc[p] for p in ds.meta["panel"]] == sorted(
        (acc[p] for p in acc if p in ds.meta["panel"]), reverse=True
    )
    c = ds.annotations["confidence"]
    assert c.notna().all() and c.between(0, 1).all()
    assert set(ds.items["gold"]) <= {"0", "1", "2"}


def test_no_prediction_sets(root):
    for name, rel, n_labels in [
        ("ag-news", "ag_news_test/ag_news_test.csv", 4),
        ("sst2", "sst2_dev/sst2_dev.csv", 2),
        ("jmmlu", "jmmlu/jmmlu.csv", 4),
    ]:
        ds = load(name)
        assert ds.n_items == len(csv(root, rel)), name
        assert len(ds.annotations) == 0 and ds.task.annotators == [] and ds.meta["panel"] == []
        assert len(ds.task.labels) == n_labels
    assert load("ag-news").task.label_names["2"] == "Sports"
    j = load("jmmlu")
    assert j.task.language == "ja" and "\nA. " in j.items.loc[0, "text"]


def test_goyal22(root):
    df = pd.read_parquet(root / "summ_goyal22_gpt3/goyal22_benchmark_summaries.parquet")
    readme = {  # mean unigram F1 vs reference from the README (2 decimals, rough tokeniser)
        "cnn": {"gpt3-text-davinci-002": 0.30, "t0": 0.34, "pegasus": 0.34, "brio": 0.37},
        "dm": {"gpt3-text-davinci-002": 0.37, "t0": 0.41, "pegasus": 0.44, "brio": 0.48},
        "xsum": {"gpt3-text-davinci-002": 0.27, "t0": 0.42, "pegasus": 0.46, "brio": 0.48},
        "newsroom": {"gpt3-text-davinci-002": 0.26, "t0": 0.25, "pegasus": 0.39},
    }
    for src, want in readme.items():
        ds = load(f"summ-goyal22/{src}")
        sub = df[df["dataset"] == src]
        docs = sub.drop_duplicates("doc_id")
        assert ds.n_items == (docs["document"].str.strip() != "").sum()
        assert ds.task.type is TaskType.summarization and ds.task.labels is None
        assert sorted(a.name for a in ds.task.annotators) == sorted(sub["system"].unique())
        kinds = {a.name: a.kind for a in ds.task.annotators}
        assert kinds["gpt3-text-davinci-002"] == "llm" and kinds["pegasus"] == "model"
        assert ds.items["reference"].notna().all()
        for system, r1 in want.items():
            assert ds.meta["scores"][system] == pytest.approx(r1, abs=0.01), (src, system)
    assert load("summ-goyal22/xsum").n_items == 499  # xsum-39563665 has an empty document


def test_other_summarization_sets(root):
    sr = load("summ-selfrec-cnndm")
    assert sr.n_items == 1000 and len(sr.task.annotators) == 4
    assert {a.kind for a in sr.task.annotators} == {"llm"}
    se = load("summ-summeval")
    assert se.n_items == 100 and len(se.task.annotators) == 12
    assert "expert_relevance" in se.annotations.columns
    assert min(se.meta["scores"].values()) == pytest.approx(0.30, abs=0.01)  # GPT-2
    assert max(se.meta["scores"].values()) == pytest.approx(0.47, abs=0.01)  # T5 / Pegasus


def test_zhang23(root):
    df = pd.read_parquet(root / "summ_zhang23_writers/zhang23_writer_and_davinci_summaries.parquet")
    ds = load("summ-zhang23")
    first = df[(df["system"] == "human_writer") & (df["writer_idx"] == 1)].set_index("doc_id")
    assert ds.n_items == df["doc_id"].nunique() == len(first)
    ref = ds.items.set_index("item_id")["reference"]
    assert (ref == first["summary"].reindex(ref.index)).all()
    kinds = {a.name: a.kind for a in ds.task.annotators}
    assert kinds.pop("gpt3-text-davinci-002") == "llm"
    assert (
        kinds and set(kinds.values()) == {"human"} and all(k.startswith("writer_") for k in kinds)
    )
    n_writers = int(((df["system"] == "human_writer") & (df["writer_idx"] > 1)).sum())
    assert (ds.annotations["annotator"].str.startswith("writer_")).sum() == n_writers
    assert ds.meta["unparseable"]["gpt3-text-davinci-002"] == ds.n_items - 76


# ------------------------------------------------------------------ errors and round trip
def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(DatasetNotFoundError) as err:
        load_dataset("imdb-mlapi", data_dir=tmp_path)
    assert str(tmp_path / "imdb_mlapi/imdb_test_mlapi_predictions.parquet") in str(err.value)
    with pytest.raises(DatasetNotFoundError, match=r"file not found: .*llms_for_css_predictions"):
        load_dataset("llms-for-css/ibc", data_dir=tmp_path)


def test_family_names_need_a_known_sub(root):
    with pytest.raises(DatasetNotFoundError, match=r"needs a sub-name; .*llms-for-css/ibc"):
        load_dataset("llms-for-css")
    with pytest.raises(DatasetNotFoundError, match=r"has no 'nope'; .*summ-goyal22/cnn"):
        load_dataset("summ-goyal22/nope")


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("llms-for-css/indian_english_dialect", "csv"),
        ("coannotating-stance/cat", "jsonl"),
        ("summ-zhang23", "csv"),
        ("mmlu-redux", "parquet"),
    ],
)
def test_export_then_load_is_identical(tmp_path, name, fmt):
    ds = load(name)
    back = load_folder(save_folder(ds, tmp_path / "x", fmt=fmt))
    assert_frame_equal(ds.items, back.items)
    assert_frame_equal(ds.annotations, back.annotations)
    assert back.task == ds.task and back.meta == ds.meta


# ------------------------------------------------------------------ CLI
def test_cli_list_json(root):
    res = CliRunner().invoke(app, ["datasets", "list", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["errors"] == {}
    rows = {r["name"]: r for r in out["datasets"]}
    assert set(rows) == set(list_datasets())
    imdb = rows["imdb-mlapi"]
    assert imdb["items"] == 25000 and imdb["panel"][0] == "google"
    google = next(a for a in imdb["annotators"] if a["name"] == "google")
    assert google["score"] == pytest.approx(0.864, abs=0.005) and google["in_panel"]
    assert rows["summ-summeval"]["metric"] == "rouge1_f"


def test_cli_list_table_show_and_export(root, tmp_path):
    runner = CliRunner()
    res = runner.invoke(app, ["datasets", "list"])
    assert res.exit_code == 0, res.output
    assert "mmlu-redux" in res.output and "llms-for-css/ibc" in res.output
    res = runner.invoke(app, ["datasets", "show", "sentimp-en"])
    assert res.exit_code == 0, res.output
    assert "labeller_1" in res.output and "gold: " in res.output
    res = runner.invoke(app, ["datasets", "export", "sst2", str(tmp_path / "s"), "-f", "jsonl"])
    assert res.exit_code == 0, res.output
    back = load_folder(tmp_path / "s")
    assert_frame_equal(back.items, load("sst2").items)
    res = runner.invoke(app, ["datasets", "export", "sst2", str(tmp_path / "s")])
    assert res.exit_code == 1 and "--overwrite" in res.output
    res = runner.invoke(app, ["datasets", "export", "sst2", str(tmp_path / "t"), "-f", "xls"])
    assert res.exit_code == 1 and "unknown format" in res.output
