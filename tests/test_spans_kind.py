"""The span kind: canonical strings, the matching rule, the span vote, quotes to offsets,
a span folder without a task file, and a replay on it (mechanics only)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from quorum.data.io import load_folder
from quorum.errors import DataValidationError
from quorum.tasks.base import ItemView
from quorum.tasks.registry import kind_of, recognise_folder
from quorum.tasks.spans import (
    Spans,
    SpanVote,
    check_spans,
    corpus_f1,
    decode_spans,
    encode_spans,
    locate_quotes,
    parse_span_answer,
    span_f1,
)

LABELS = ["Contradictory", "Misleading"]


def test_canonical_string_is_sorted_unique_and_spaceless():
    a = encode_spans([{"start": 9, "end": 12, "label": "B"}, (0, 4, "A"), [0, 4, "A"]])
    assert a == '[[0,4,"A"],[9,12,"B"]]'
    assert encode_spans(decode_spans(a)) == a
    assert encode_spans([]) == "[]"
    with pytest.raises(ValueError):
        decode_spans('{"start": 1}')
    with pytest.raises(ValueError):
        encode_spans([(0.5, 3, "A")])


def test_overlap_and_exact_f1():
    assert span_f1('[[0,5,"A"]]', '[[4,9,"A"]]') == 1.0
    assert span_f1('[[0,5,"A"]]', '[[5,9,"A"]]') == 0.0  # touching is not overlapping
    assert span_f1('[[0,5,"A"]]', '[[0,5,"B"]]') == 0.0
    assert span_f1('[[0,5,"A"]]', '[[0,5,"A"]]', "exact") == 1.0
    assert span_f1('[[0,5,"A"]]', '[[0,6,"A"]]', "exact") == 0.0
    assert span_f1("[]", "[]") == 1.0 and span_f1("[]", '[[0,1,"A"]]') == 0.0
    # two predicted spans inside one reference: P = 1, R = 1; a third elsewhere: P = 2/3
    assert span_f1('[[0,2,"A"],[3,5,"A"]]', '[[0,9,"A"]]') == 1.0
    assert span_f1('[[0,2,"A"],[3,5,"A"],[20,25,"A"]]', '[[0,9,"A"]]') == pytest.approx(0.8)
    micro = corpus_f1(['[[0,2,"A"]]', None], ['[[0,9,"A"]]', '[[1,3,"A"]]'], "overlap")
    assert micro == {"precision": 1.0, "recall": 0.5, "f1": pytest.approx(2 / 3)}


def test_bad_spans_are_named():
    probs = check_spans([(-1, 3, "A"), (5, 5, "A"), (0, 99, "A"), (1, 2, "Z")], 10, ["A"])
    assert len(probs) == 4
    assert any("outside" in p for p in probs) and any("start >= end" in p for p in probs)
    assert any("unknown type" in p for p in probs)
    assert check_spans([(0, 5, "A"), (2, 7, "A")], 10, ["A"]) == []  # overlap is allowed


def test_span_vote_keeps_what_more_than_half_the_weight_marked():
    vote = SpanVote(w_human=10.0, w_llm=1.0)
    llm = {
        "a": '[[0,5,"A"],[20,25,"B"]]',
        "b": '[[2,6,"A"]]',
        "c": '[[1,4,"A"],[30,33,"A"]]',
    }
    out, agr = vote.vote_item(llm, lambda a: False)
    spans = decode_spans(out)
    assert len(spans) == 1 and spans[0][2] == "A"  # 3/3 on the A group; B and 30-33 1/3
    assert spans[0] in {(0, 5, "A"), (2, 6, "A"), (1, 4, "A")}
    assert 0.0 < agr < 1.0
    # a human outweighs three LLMs; they then agree with it as far as their F1 goes
    with_h = {**llm, "h": '[[40,45,"B"]]'}
    out_h, _ = vote.vote_item(with_h, lambda a: a == "h")
    assert out_h == '[[40,45,"B"]]'
    same, agr_same = vote.vote_item({"a": "[]", "b": "[]"}, lambda a: False)
    assert same == "[]" and agr_same == 1.0
    assert vote.consensus(agr_same, 2) and not vote.consensus(1.0, 1)
    assert vote.delta(["[]", "[]"]) == 0.0 and vote.delta(["[]", '[[0,1,"A"]]']) == 1.0
    assert vote.similarity(None, "[]") == 0.0


def test_chained_overlaps_form_one_group_represented_by_its_medoid():
    vote = SpanVote()
    outs = {"a": '[[0,4,"A"]]', "b": '[[3,8,"A"]]', "c": '[[7,12,"A"]]'}
    out, _ = vote.vote_item(outs, lambda a: False)
    assert out == '[[3,8,"A"]]'  # overlaps both others


def test_quotes_found_ambiguous_and_unfound_are_recorded():
    text = "The team won 3-1. The team lost."
    got = locate_quotes(text, [("won 3-1", "A", None), ("nowhere", "A", None)])
    assert got.spans == ((9, 16, "A"),) and got.unfound == ("nowhere",)
    twice = locate_quotes(text, [("The team", "A", None), ("The team", "A", None)])
    assert twice.spans == ((0, 8, "A"), (18, 26, "A")) and len(twice.ambiguous) == 2
    second = locate_quotes(text, [("The team", "B", 2)])
    assert second.spans == ((18, 26, "B"),) and second.ambiguous == ()
    dropped = locate_quotes(text, [("The team", "A", None)], ambiguous="drop")
    assert dropped.spans == () and dropped.ambiguous == ("The team",)
    relaxed = locate_quotes(text, [("the  TEAM lost", "A", None)])
    assert relaxed.spans == ((18, 31, "A"),)


def test_llm_answers_parse_to_offsets_or_are_unusable():
    text = "Arsenal beat Spurs 2-0 at home."
    ok = parse_span_answer(
        'Here: [{"quote": "2-0", "type": "contradictory"}, {"quote": "xyz", "type": "Misleading"}]',
        text,
        LABELS,
    )
    assert ok.ok and decode_spans(ok.output) == ((19, 22, "Contradictory"),)
    assert "xyz" in ok.reason
    assert parse_span_answer('{"spans": []}', text, LABELS).output == "[]"
    assert not parse_span_answer('[{"quote": "2-0", "type": "Weird"}]', text, LABELS).ok
    assert not parse_span_answer("no errors found", text, LABELS).ok
    assert not parse_span_answer("", text, LABELS).ok


def test_kind_contract():
    kind = kind_of("spans", LABELS)
    assert isinstance(kind, Spans) and not kind.discrete
    item = ItemView("1", "Arsenal beat Spurs 2-0.")
    assert kind.match_human('[{"start": 0, "end": 7, "label": "Misleading"}]', item) == (
        '[[0,7,"Misleading"]]'
    )
    assert kind.match_human('[{"start": 0, "end": 99, "label": "Misleading"}]', item) is None
    assert kind.match_human('[[0,3,"Nope"]]', item) is None
    ok, raw = kind.labelstudio_raw(
        {"from_name": "spans", "value": {"start": 2, "end": 6, "labels": ["Misleading"]}},
        lambda s: s,
    )
    assert ok and json.loads(raw) == [[2, 6, "Misleading"]]
    # the span types are task data ($options), the config holds no project text
    assert kind.labelstudio_control() == '<Labels name="spans" toName="text" value="$options"/>'
    assert kind.people_choose and kind.human_options(item) == LABELS
    outs = pd.Series({"1": '[[0,3,"A"]]', "2": None, "3": "[]"})
    refs = pd.Series({"1": '[[1,2,"A"]]', "2": "[]", "3": '[[0,1,"A"]]'})
    assert kind.metric(outs, refs, "en") == pytest.approx((1.0 + 1.0 + 0.0) / 3)
    extra = kind.extra_metrics(outs, refs)
    assert extra["overlap_f1"] == pytest.approx(2 / 3, abs=1e-6) and extra["exact_f1"] == 0.0


def _folder(tmp_path, answers_extra=None, gold_bad=False):
    texts = [f"Report {i}: the home team scored {i} goals on Sunday." for i in range(24)]
    items = pd.DataFrame(
        {
            "item_id": [f"t{i}" for i in range(24)],
            "text": texts,
            "context": [json.dumps({"goals": i}) for i in range(24)],
            "gold_spans": [
                json.dumps([{"start": 10, "end": 18, "label": "Misleading"}] if i % 2 else [])
                for i in range(24)
            ],
        }
    )
    if gold_bad:
        items.loc[0, "gold_spans"] = json.dumps([{"start": 5, "end": 999, "label": "X"}])
    rows = []
    rng = np.random.default_rng(0)
    for i in range(24):
        for name in ("m1", "m2", "m3"):
            spans = [] if rng.random() < 0.5 else [{"start": 12, "end": 20, "label": "Misleading"}]
            rows.append({"item_id": f"t{i}", "annotator": name, "spans": json.dumps(spans)})
        rows.append({"item_id": f"t{i}", "annotator": "human:g0", "spans": items.gold_spans[i]})
    rows += answers_extra or []
    items.to_parquet(tmp_path / "items.parquet")
    pd.DataFrame(rows).to_parquet(tmp_path / "answers.parquet")
    return tmp_path


def test_a_span_folder_is_a_dataset_as_it_is(tmp_path):
    ds = load_folder(_folder(tmp_path))
    assert ds.task.type.value == "spans" and ds.task.labels == ["Misleading"]
    assert sorted(a.name for a in ds.task.llms) == ["m1", "m2", "m3"]  # the gold's copy left
    assert ds.items.loc[1, "gold"] == '[[10,18,"Misleading"]]' and "context" in ds.items
    assert set(ds.annotations["output"]) <= {"[]", '[[12,20,"Misleading"]]'}
    items = pd.read_parquet(tmp_path / "items.parquet")
    assert recognise_folder(items, pd.DataFrame()) is Spans


def test_a_task_file_wins_over_the_columns(tmp_path):
    _folder(tmp_path)
    (tmp_path / "task.toml").write_text('name = "x"\ntype = "summarization"\n')
    items = pd.read_parquet(tmp_path / "items.parquet").rename(columns={"gold_spans": "reference"})
    items.to_parquet(tmp_path / "items.parquet")
    (tmp_path / "answers.parquet").unlink()
    assert load_folder(tmp_path).task.type.value == "summarization"


def test_bad_offsets_in_a_folder_are_a_clear_error(tmp_path):
    with pytest.raises(DataValidationError, match=r"t0.*outside the text"):
        load_folder(_folder(tmp_path, gold_bad=True))
    bad = [{"item_id": "t3", "annotator": "m4", "spans": '[{"start": 9, "end": 9, "label": "A"}]'}]
    with pytest.raises(DataValidationError, match=r"m4.*t3.*start >= end"):
        load_folder(_folder(tmp_path, answers_extra=bad))


@pytest.mark.parametrize("method", ["quorum", "random"])
@pytest.mark.parametrize("setting", ["dollars", "auditor"])
def test_replay_rows_carry_the_span_metric_and_stay_in_budget(tmp_path, method, setting):
    from quorum.simulate import prepare, simulate_once

    ds = load_folder(_folder(tmp_path))
    phi = np.random.default_rng(1).normal(size=(ds.n_items, 4))
    feats = SimpleNamespace(phi=phi, embeddings=None, names=None, raw=None)
    prep = prepare(ds, {"m1": 0.01, "m2": 0.02, "m3": 0.03}, features=feats)
    row, result = simulate_once(prep, method, setting, 0.5, seed=0)
    assert row["metric"] == "span_f1" and 0.0 <= row["score"] <= 1.0
    assert row["score"] == row["span_f1"] and "exact_f1" in row and "overlap_f1" in row
    assert row["cost"] <= row["budget_limit"] + 1e-9
    assert set(result.labels["item_id"]) == set(ds.items["item_id"])
    for out in result.labels["output"].dropna():
        decode_spans(out)  # every final output is a span string
    if method == "quorum":
        assert row["quality_estimate"] is not None
        assert row["quality_low"] <= row["quality_estimate"] <= row["quality_high"]


def test_real_d2t_overlap_f1_matches_the_dataset_readme(shared_data_dir):
    folder = shared_data_dir / "span_d2t_eval"
    if not folder.is_dir():
        pytest.skip("span_d2t_eval not in the shared data")
    ds = load_folder(folder)
    gold = ds.items.set_index("item_id")["gold"]
    claude = ds.predictions("claude-3-7-sonnet")
    claude.index = ds.items["item_id"]
    got = corpus_f1(claude, gold, "overlap")
    assert got["f1"] == pytest.approx(0.354, abs=0.0015)  # README: 0.354 (0.370 / 0.340)
    assert got["precision"] == pytest.approx(0.370, abs=0.0015)


def test_the_span_vote_takes_the_label_votes_signature():
    vote = SpanVote()
    outs = {"h": '[[0,3,"A"]]', "a": "[]", "b": "[]"}
    out, agr = vote.vote(outs, lambda a: a == "h")  # as quorum-paper's vote log calls it
    assert out == '[[0,3,"A"]]' and agr == pytest.approx(10 / 12)
    assert vote.weighted(outs, {"h": 1.0, "a": 1.0, "b": 1.0})[0] == "[]"


def test_the_bench_plans_each_dataset_by_its_kind():
    from quorum.bench.cache import dataset_kind
    from quorum.bench.plan import _seeds, _supports
    from quorum.tasks.base import TaskType

    assert dataset_kind("span-d2t-eval").bench_few_seeds  # seeds as for summaries
    assert _supports("quorum", "span-d2t-eval") and _supports("coannotating", "span-d2t-eval")
    assert not _supports("araida", "span-d2t-eval") and not _supports("sant", "span-d2t-eval")
    # multi-label is not a label per item: the label-only baselines are not planned on it
    assert dataset_kind("mfrc").type is TaskType.multilabel
    assert _supports("random", "mfrc") and not _supports("araida", "mfrc")
    # pairwise verdicts are labels: every method runs, with the labels' seeds
    assert dataset_kind("llmbar").type is TaskType.pairwise and _supports("araida", "llmbar")
    cfg = type("Section", (), {"seeds": 5, "summarization_seeds": 2})()
    assert len(_seeds(cfg, "llmbar")) == 5 and len(_seeds(cfg, "summ-goyal22")) == 2
    assert dataset_kind("mmlu-redux").type is TaskType.multiple_choice
