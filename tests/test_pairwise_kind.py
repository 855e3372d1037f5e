"""The pairwise kind: swap answers, a folder recognised by its columns, bad pairs, replay rows.

Synthetic data tests mechanics only (no quality claims).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from quorum.data.io import load_folder
from quorum.errors import DatasetNotFoundError, DataValidationError
from quorum.methods import get_router_class
from quorum.simulate import prepare, simulate_once
from quorum.tasks.base import ItemView
from quorum.tasks.pairwise import (
    Pairwise,
    combine_swap,
    consistency_table,
    normalise_answer,
    swap_annotators,
    swap_back,
)
from quorum.tasks.registry import kind_of


def _folder(tmp: Path, n: int = 12, *, outputs=None, gold=None, drop: str | None = None) -> Path:
    ids = [f"p{i:02d}" for i in range(n)]
    items = pd.DataFrame(
        {
            "item_id": ids,
            "instruction": [f"Write word {i}." for i in range(n)],
            "output_1": outputs[0] if outputs else [f"word {i}" for i in range(n)],
            "output_2": outputs[1] if outputs else [f"other {i} text" for i in range(n)],
            "gold": gold or ["1" if i % 2 else "2" for i in range(n)],
        }
    )
    if drop:
        items = items.drop(columns=[drop])
    rows = []
    for i, item in enumerate(ids):
        g = "1" if i % 2 else "2"
        bad = "2" if g == "1" else "1"
        # judge "cheap": consistent on even items, inconsistent on odd ones
        orig, swapped = (g, g) if i % 2 == 0 else (g, bad)
        rows += [
            (item, "cheap/orig", "cheap", "orig", orig),
            (item, "cheap/swapped", "cheap", "swapped", swapped),
            (item, "dear/orig", "dear", "orig", g),
            (item, "dear/swapped", "dear", "swapped", g),
        ]
    ans = pd.DataFrame(rows, columns=["item_id", "annotator", "judge", "order", "output"])
    tmp.mkdir(parents=True, exist_ok=True)
    items.to_parquet(tmp / "items.parquet")
    ans.to_parquet(tmp / "answers.parquet")
    return tmp


def test_swap_rules_map_back_and_combine() -> None:
    assert swap_back("1") == "2" and swap_back("2") == "1" and swap_back("tie") == "tie"
    assert combine_swap("2", "2") == ("2", True)
    assert combine_swap("2", "1") == (None, False)
    assert combine_swap("2", "1", "first") == ("2", False)
    assert combine_swap("2", "1", "tie") == ("tie", False)
    assert combine_swap(None, "1") == (None, None)
    with pytest.raises(ValueError, match="swap_rule"):
        combine_swap("1", "1", "majority")
    assert [normalise_answer(x) for x in ("A", "b", 1, 2.0, "Output (b)", "x")] == [
        "1",
        "2",
        "1",
        "2",
        "2",
        None,
    ]


def test_folder_without_task_file_is_pairwise_with_swap_annotators(tmp_path: Path) -> None:
    ds = load_folder(_folder(tmp_path / "pw"))
    assert ds.task.type.value == "pairwise" and ds.task.labels == ["1", "2"]
    text = ds.items["text"].iloc[0]
    assert "Write word 0." in text and "word 0" in text and "other 0 text" in text
    names = {a.name for a in ds.task.annotators}
    assert {"cheap", "dear", "cheap/orig", "cheap/swapped"} <= names
    cheap = ds.annotations.loc[ds.annotations["annotator"] == "cheap"]
    # inconsistent pairs (odd items) give the swap judge no answer
    assert sorted(cheap["item_id"]) == [f"p{i:02d}" for i in range(0, 12, 2)]
    gold = ds.items.set_index("item_id")["gold"]
    assert (cheap.set_index("item_id")["output"] == gold.reindex(cheap["item_id"])).all()
    assert len(ds.annotations.loc[ds.annotations["annotator"] == "dear"]) == 12


def test_consistency_table_counts_each_judge(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "pw")
    ans = pd.read_parquet(folder / "answers.parquet")
    _, cons = swap_annotators(ans)
    gold = pd.read_parquet(folder / "items.parquet").set_index("item_id")["gold"]
    t = consistency_table(cons, gold).set_index("judge")
    assert t.loc["cheap", "consistent"] == pytest.approx(0.5)
    assert t.loc["dear", "consistent"] == 1.0 and t.loc["dear", "acc_consistent"] == 1.0
    assert t.loc["cheap", "acc_first"] == 1.0  # its first order is always right here
    _, cons_first = swap_annotators(ans, "first")
    assert len(cons_first) == len(cons)


def test_bad_pairs_are_clear_errors_or_notes(tmp_path: Path) -> None:
    with pytest.raises(DataValidationError, match="two output columns"):
        load_folder(_folder(tmp_path / "a", drop="output_2"))
    with pytest.raises(DatasetNotFoundError, match="match no task kind"):
        load_folder(_folder(tmp_path / "a2", drop="instruction"))
    same = [["x"] * 12, ["x"] * 12]
    with pytest.raises(DataValidationError, match="identical outputs"):
        load_folder(_folder(tmp_path / "b", outputs=same))
    ties = load_folder(_folder(tmp_path / "c", outputs=same, gold=["tie"] * 12))
    assert ties.task.labels == ["1", "2", "tie"]
    empty = [[""] + [f"w {i}" for i in range(1, 12)], [f"v {i}" for i in range(12)]]
    ds = load_folder(_folder(tmp_path / "d", outputs=empty))
    assert "empty output" in (ds.task.description or "")


def test_task_file_wins(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "pw")
    items = pd.read_parquet(folder / "items.parquet")
    items["text"] = items["instruction"]
    items.to_parquet(folder / "items.parquet")
    (folder / "task.toml").write_text('name = "t"\ntype = "classification"\nlabels = ["1", "2"]\n')
    ds = load_folder(folder)
    assert ds.task.type.value == "classification"


def test_kind_contract() -> None:
    k = kind_of("pairwise")
    assert isinstance(k, Pairwise) and k.discrete and k.labels == ["1", "2"] and not k.ties
    assert kind_of("pairwise", ["1", "2", "tie"]).ties
    item = ItemView("p", "text")
    assert k.match_human("Output (b)", item) == "2" and k.match_human("A", item) == "1"
    assert k.match_human("neither", item) is None
    vote = k.aggregator(10.0, 1.0, 0.66)
    assert vote.vote_item({"a": "1", "b": "2", "c": "2"}, lambda a: False, None) == (
        "2",
        pytest.approx(2 / 3),
    )
    assert k.metric(pd.Series(["1", "2"]), pd.Series(["1", "1"]), "en") == 0.5
    assert get_router_class("quorum").supports(k) and get_router_class("araida").supports(k)


@pytest.mark.parametrize("method", ["quorum", "random"])
@pytest.mark.parametrize("setting", ["dollars", "auditor"])
def test_replay_rows_and_inconsistent_calls(tmp_path: Path, method: str, setting: str) -> None:
    ds = load_folder(_folder(tmp_path / "pw", n=60))
    rng = np.random.default_rng(0)
    emb = rng.standard_normal((60, 16))
    feats = SimpleNamespace(
        phi=rng.random((60, 11)), embeddings=emb / np.linalg.norm(emb, axis=1)[:, None]
    )
    prep = prepare(ds, {"cheap": 0.004, "dear": 0.04}, features=feats)
    row, res = simulate_once(prep, method, setting, 0.3, seed=1)
    for key in (
        "accuracy",
        "cost",
        "budget_limit",
        "quality_estimate",
        "quality_low",
        "quality_high",
    ):
        assert key in row
    assert 0.0 <= row["accuracy"] <= 1.0 and row["cost"] <= row["budget_limit"] + 1e-9
    ann = res.annotations
    cheap = ann.loc[ann["annotator"] == "cheap"]
    odd = cheap["item_id"].str[1:].astype(int) % 2 == 1
    # an inconsistent pair is a paid call with no vote
    assert (cheap.loc[odd, "output"].isna()).all() and (cheap.loc[odd, "cost"] > 0).all()
    assert (cheap.loc[~odd, "output"].notna()).all()
    if method == "quorum":
        assert row["quality_estimate"] is not None


def test_judge_answers_are_the_outputs_numbers_not_indices() -> None:
    k = kind_of("pairwise")
    p = k.parser()
    item = ItemView("p", "text")
    got = [
        k.parse(p, x, item).output
        for x in ("Label: 1", "Label: 2", "2", "Output (b)", "Label: Output (2)", "B")
    ]
    assert got == ["1", "2", "2", "2", "2", "2"]
    assert not k.parse(p, "Label: 0", item).ok and not k.parse(p, "Label: 3", item).ok
    assert not k.parse(p, "tie", item).ok  # not an answer of a task without ties
    assert kind_of("pairwise", ["1", "2", "tie"]).parse(None, "Label: tie", item).output == "tie"
    assert k.answer_forms(item) == ["1", "2"]


def test_the_bundled_prompt_shows_the_pair() -> None:
    from quorum.live.machines.prompts import PromptBuilder, PromptTemplate

    tmpl = PromptTemplate.resolve(None, "pairwise", Path("."), "prompt")
    conf = PromptTemplate.resolve(None, "confidence", Path("."), "confidence")
    b = PromptBuilder("pairwise", ["1", "2"], None, None, tmpl, conf)
    from quorum.tasks.pairwise import pair_text

    msg = b.annotation_messages(ItemView("p", pair_text("Say hi.", "hi", "bye")))[0]["content"]
    assert "Say hi." in msg and "Output (1):\nhi" in msg and "Output (2):\nbye" in msg
    assert "'Label: 1'" in msg


def test_a_saved_pairwise_folder_loads_back_with_its_task_file(tmp_path: Path) -> None:
    from quorum.data.writer import save_folder

    ds = load_folder(_folder(tmp_path / "pw"))
    back = load_folder(save_folder(ds, tmp_path / "saved", fmt="parquet"))
    assert back.task.type.value == "pairwise" and back.task.labels == ["1", "2"]
    assert sorted(back.annotations["annotator"].unique()) == sorted(
        ds.annotations["annotator"].unique()
    )
    assert back.items["text"].tolist() == ds.items["text"].tolist()


def test_logprob_confidence_reads_1_and_2_as_answers_not_indices() -> None:
    import math

    from quorum.live.machines.output import OutputConstraint
    from quorum.live.machines.prompts import PromptBuilder, PromptTemplate

    b = PromptBuilder(
        "pairwise", ["1", "2"], None, None,
        PromptTemplate.resolve(None, "pairwise", Path("."), "prompt"),
        PromptTemplate.resolve(None, "confidence", Path("."), "confidence"),
    )  # fmt: skip
    oc = OutputConstraint("grammar", True, b)
    assert oc.params(ItemView("p", "x"))["grammar"] == 'root ::= "1" | "2"'
    lp = [
        {"token": "1", "logprob": math.log(0.7),
         "top_logprobs": [{"token": "1", "logprob": math.log(0.7)},
                          {"token": "2", "logprob": math.log(0.3)}]},
    ]  # fmt: skip
    assert oc.confidence("1", "1", lp, ["1", "2"]) == pytest.approx(0.7)
    lp2 = [dict(lp[0], token="2")]
    assert oc.confidence("2", "2", lp2, ["1", "2"]) == pytest.approx(0.3)
