"""quorum.replay on the frames a new user brings: labels read as numbers, blank answers,
a metadata column named like crowd-kit's, prices as numpy scalars, nothing usable. Each
either runs with the answers read by the datasets' one rule (docs/datasets.md, "Answers")
or fails with one clear line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import quorum
from quorum.errors import DataValidationError

PRICES = {"cheap": 0.01, "dear": 0.05, "expert": 0.1}


def _answers(n: int = 30) -> pd.DataFrame:
    """Three annotators on ``n`` items; the expert is always right, the others mostly."""
    rows = []
    for k in range(n):
        gold = "pos" if k % 2 else "neg"
        other = "neg" if gold == "pos" else "pos"
        rows += [
            (f"i{k}", "cheap", gold if k % 3 else other),
            (f"i{k}", "dear", gold if k % 5 else other),
            (f"i{k}", "expert", gold),
        ]
    return pd.DataFrame(rows, columns=["item_id", "annotator", "output"])


def _replay(answers: pd.DataFrame, **kw) -> quorum.RoutingResult:
    args = {"prices": PRICES, "human": "expert", "features": "light", "budget": 0.5}
    return quorum.replay(answers, **(args | kw))


def test_integer_labels_with_a_missing_answer_read_as_integers() -> None:
    """An integer column with one NaN is a float column in pandas: 1.0 is the label 1,
    as in a dataset folder, and the missing answer is no answer."""
    ints = _answers().assign(output=lambda a: a["output"].map({"neg": 0, "pos": 1}))
    floats = ints.astype({"output": float})
    floats.loc[0, "output"] = np.nan
    result = _replay(floats)
    assert set(result.labels["output"].dropna()) <= {"0", "1"}
    assert len(result.labels) == 30 and result.cost <= result.budget_limit + 1e-9
    same = _replay(ints.astype({"output": float}))
    pd.testing.assert_frame_equal(same.labels, _replay(ints).labels)


def test_blank_answers_are_no_answer_not_a_label() -> None:
    """'' and '  ' are missing answers (paid, no vote), never a label of the task."""
    answers = _answers()
    cheap = answers.index[answers["annotator"] == "cheap"]
    answers.loc[cheap[::3], "output"] = ""
    answers.loc[cheap[1::3], "output"] = "  "
    answers.loc[cheap[2::3], "output"] = " pos "
    answers.loc[answers["item_id"] == "i7", "output"] = ""  # nobody answered i7
    result = _replay(answers, budget=0.1)
    assert set(result.labels["output"].dropna()) <= {"neg", "pos"}
    assert len(result.labels) == 30  # i7 included
    paid = result.annotations
    assert not paid["output"].dropna().astype(str).str.strip().eq("").any()


def test_labels_given_as_integers_are_the_label_strings() -> None:
    ints = _answers().assign(output=lambda a: a["output"].map({"neg": 0, "pos": 1}))
    result = _replay(ints, labels=[0, 1])
    assert set(result.labels["output"].dropna()) <= {"0", "1"}
    pd.testing.assert_frame_equal(result.labels, _replay(ints, labels=["0", "1"]).labels)


def test_a_task_column_beside_item_id_is_metadata_not_crowdkit() -> None:
    """crowd-kit's names are read only where ours are absent: an ``item_id, annotator,
    output`` frame with a ``task`` (or ``label``) column keeps its own columns."""
    answers = _answers()
    want = _replay(answers).labels
    pd.testing.assert_frame_equal(_replay(answers.assign(task="flute")).labels, want)
    pd.testing.assert_frame_equal(_replay(answers.assign(label="x", worker="w")).labels, want)


@pytest.mark.parametrize("price", [np.float32(0.01), np.int64(0), np.float64(0.01)])
def test_numpy_prices_are_numbers(price) -> None:
    result = _replay(_answers(), prices=PRICES | {"cheap": price})
    assert result.cost <= result.budget_limit + 1e-9


def test_no_usable_answer_is_one_clear_line() -> None:
    answers = _answers().assign(output=np.nan)
    with pytest.raises(DataValidationError, match="no usable answer") as info:
        _replay(answers)
    assert "\n" not in str(info.value)
    blank = _answers().assign(output=" ")
    with pytest.raises(DataValidationError, match="no usable answer"):
        _replay(blank)


def test_a_task_the_spec_refuses_is_one_clear_line() -> None:
    """A multi-label replay needs its label set; pydantic's multi-line report becomes one
    DataValidationError line."""
    answers = _answers().assign(output=lambda a: '["' + a["output"] + '"]')
    with pytest.raises(DataValidationError, match="labels") as info:
        _replay(answers, task_type="multilabel")
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="task_type must be one of") as info:
        _replay(_answers(), task_type="sentiment")
    assert "\n" not in str(info.value)


def test_a_text_too_long_for_the_tagger_is_one_line_naming_the_item() -> None:
    """Past spaCy's 1,000,000 characters the full features refuse the item by name (spaCy's
    own E088 told the user to raise ``nlp.max_length``, and tagging such a text takes
    gigabytes); light features, a light profile and Japanese text are not refused."""
    from quorum.features.pipeline import MAX_TAGGED_CHARS, check_text_lengths

    answers = _answers()
    items = {f"i{k}": f"text {k}" for k in range(30)}
    items["i3"] = "word " * (MAX_TAGGED_CHARS // 5 + 1)
    with pytest.raises(DataValidationError, match=r"longer than 1,000,000.*'i3'") as info:
        _replay(answers, items=items, features="full")
    assert "\n" not in str(info.value)
    result = _replay(answers, items=items, features="light")
    assert len(result.labels) == 30
    from quorum.api import _replay_dataset

    ds = _replay_dataset(answers, PRICES, "expert", items, "classification", None, "en")
    check_text_lengths(ds, "ja")
    check_text_lengths(ds, "en", profile="fast")


def test_integer_workers_and_tasks_as_crowdkit_gives_them() -> None:
    """crowd-kit frames often hold integer task and worker ids: they name the same
    annotators as their strings, in ``prices`` and ``human`` either way."""
    answers = _answers()
    codes = {"cheap": 1, "dear": 2, "expert": 3}
    ck = pd.DataFrame(
        {
            "task": answers["item_id"].str[1:].astype(int),
            "worker": answers["annotator"].map(codes),
            "label": answers["output"],
        }
    )
    prices = {codes[a]: p for a, p in PRICES.items()}
    by_int = _replay(ck, prices=prices, human=3)
    by_str = _replay(ck, prices={str(k): p for k, p in prices.items()}, human="3")
    as_strings = ck.astype({"task": str, "worker": str})
    want = _replay(as_strings, prices={str(k): p for k, p in prices.items()}, human="3")
    for got in (by_int, by_str):
        assert got.cost == want.cost and len(got.labels) == 30
        pd.testing.assert_frame_equal(got.labels, want.labels)


@pytest.mark.parametrize("column", ["item_id", "annotator"])
def test_a_row_without_item_or_annotator_is_named(column: str) -> None:
    answers = _answers()
    answers.loc[4, column] = np.nan
    with pytest.raises(DataValidationError, match=rf"1 row\(s\) without {column}.*\[4\]"):
        _replay(answers)


def test_label_sets_given_as_lists_still_replay() -> None:
    """The blank-answer rule leaves list-valued outputs (a multi-label answer as a list or
    an array) as they are: they are answers, not unhashable labels."""
    answers = _answers()
    as_json = _replay(answers.assign(output='["' + answers["output"] + '"]'),
                      task_type="multilabel", labels=["neg", "pos"])  # fmt: skip
    for wrap in (lambda o: [o], lambda o: np.array([o], dtype=object)):
        got = _replay(answers.assign(output=answers["output"].map(wrap)),
                      task_type="multilabel", labels=["neg", "pos"])  # fmt: skip
        pd.testing.assert_frame_equal(got.labels, as_json.labels)


def test_a_human_who_answered_only_some_items_is_said_to_leave_gaps() -> None:
    """A human label bought on an item the human never answered is paid and brings none
    (replay cannot tell what they would have said): the run says so, once, and still
    keeps within its budget; a human who answered everything gets no such warning."""
    import warnings

    partial = _answers(30)
    partial = partial.loc[~((partial["annotator"] == "expert") & partial["item_id"].isin(
        [f"i{k}" for k in range(10)]
    ))]  # fmt: skip
    with pytest.warns(UserWarning, match=r"human 'expert' has no answer on 10 of 30 items"):
        r = _replay(partial)
    assert r.cost <= r.budget_limit + 1e-9
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        _replay(_answers(30))


def test_simulate_notes_a_gold_column_with_gaps(tmp_path) -> None:
    """``quorum simulate`` on a folder whose gold (the human) is missing on some items:
    one note line before the run."""
    from typer.testing import CliRunner

    from quorum.cli.main import app

    ans = _answers(30)
    items = pd.DataFrame({"item_id": [f"i{k}" for k in range(30)],
                          "text": [f"text {k}" for k in range(30)]})  # fmt: skip
    gold = ans.loc[ans["annotator"] == "expert"].set_index("item_id")["output"]
    items["gold"] = items["item_id"].map(gold).where(items.index >= 4)
    items.to_csv(tmp_path / "items.csv", index=False)
    ans.loc[ans["annotator"] != "expert"].to_csv(tmp_path / "answers.csv", index=False)
    (tmp_path / "task.toml").write_text(
        'name = "gaps"\ntype = "classification"\nlabels = ["neg", "pos"]\n'
        '[[annotators]]\nname = "cheap"\nprice = 0.01\n'
        '[[annotators]]\nname = "dear"\nprice = 0.05\n'
    )
    res = CliRunner().invoke(app, ["simulate", "-d", str(tmp_path), "--method", "random", "--json"])
    assert res.exit_code == 0, res.output
    (note,) = [ln for ln in res.output.splitlines() if "has no answer on" in ln]
    assert note.startswith("note: human 'gold' has no answer on 4 of 30 items"), note
