"""QUORUM on span tasks: the audit by value picks the LLM worth most at the money left
(mechanics on synthetic answers; quality is measured on real data in benchmarks/)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from quorum.data.io import load_folder
from quorum.routing.quorum.audit.by_value import (
    answer_keys,
    choose_llm,
    marks_key,
    ordered_quality,
    probe_panel,
)
from quorum.simulate import prepare, simulate_once
from quorum.tasks.spans import Spans


def test_choose_llm_weighs_quality_against_the_humans_its_price_costs():
    acc = np.array([0.2, 0.4, 0.9])
    prices = np.array([0.01, 0.02, 0.05])
    alive = np.ones(3, dtype=bool)
    k, n_h, value, marks = choose_llm(acc, prices, alive, 24.0, 800, 0.1, None)
    assert not marks  # random order unless asked
    assert k == 1 and n_h == 100 and np.isnan(value[2])  # 0.05 x 800 > 24: does not fit
    # with much money the cheapest LLM leaves room for more humans and wins
    k2, _, _, _ = choose_llm(np.array([0.2, 0.25, 0.3]), prices, alive, 60.0, 800, 0.1, None)
    assert k2 == 0
    assert choose_llm(acc, prices, np.zeros(3, dtype=bool), 24.0, 800, 0.1, None)[0] is None
    # a human limit (auditor) caps the humans beside every LLM
    _, n_cap, _, _ = choose_llm(acc, prices, alive, 24.0, 800, 0.1, 10)
    assert n_cap == 10


def test_choose_llm_margin_keeps_the_cheapest_on_a_near_tie():
    prices, alive = np.array([0.01, 0.02]), np.ones(2, dtype=bool)
    acc = np.array([0.3, 0.4])  # values 0.455 (177 humans) and 0.475 (100 humans)
    assert choose_llm(acc, prices, alive, 24.0, 800, 0.1, None)[0] == 1
    assert choose_llm(acc, prices, alive, 24.0, 800, 0.1, None, margin=0.05)[0] == 0


def test_fewest_marks_order_and_when_it_is_free():
    # an LLM that marked one span is wrong, one that marked none or three is right
    sims = np.array([[0.0], [0.0], [1.0], [1.0]])
    keys = marks_key(np.array([[1], [1], [0], [3]]))
    assert keys[:, 0].tolist() == [1.0, 1.0, np.inf, 3.0]
    assert ordered_quality(sims[:, 0], keys[:, 0], 0.5, 1.0) == 1.0  # humans fix both
    assert ordered_quality(sims[:, 0], None, 0.5, 1.0) == 0.75
    one = (np.array([0.5]), np.array([0.01]), np.ones(1, dtype=bool))
    # dollars (no human limit): the LLM under every human costs 4 humans of 40;
    # the order still wins here, so "fewest-marks" and "by-value" take it, "if-free" not
    for order, want in (("fewest-marks", True), ("by-value", True), ("if-free", False)):
        k, n_h, _, marks = choose_llm(*one, 5.0, 100, 0.1, None, 1.0, (sims, keys), order)
        assert (k, marks) == (0, want)
        assert n_h == (40 if want else 44)
    # auditor: a human limit that binds leaves the money for the LLM under the humans
    k, n_h, value, marks = choose_llm(*one, 5.0, 100, 0.1, 20, 1.0, (sims, keys), "if-free")
    assert marks and n_h == 20 and value[0] == pytest.approx(0.7)  # 0.5 + 0.2 * (1 - 0)


def _folder(tmp_path, n=300):
    rng = np.random.default_rng(0)
    text = "The forecast says rain on Monday and sun on Tuesday in the north."
    items, rows = [], []
    for i in range(n):
        gold = [[4, 12, "Contradictory"]] if rng.random() < 0.7 else []
        items.append({"item_id": f"i{i}", "text": text, "gold_spans": json.dumps(gold)})
        rows.append(
            {
                "item_id": f"i{i}",
                "annotator": "cheap",
                "spans": json.dumps([] if gold else [[20, 24, "Contradictory"]]),
            }
        )  # always wrong
        rows.append({"item_id": f"i{i}", "annotator": "good", "spans": json.dumps(gold)})
        rows.append({"item_id": f"i{i}", "annotator": "dear", "spans": json.dumps(gold)})
    pd.DataFrame(items).to_parquet(tmp_path / "items.parquet")
    pd.DataFrame(rows).to_parquet(tmp_path / "answers.parquet")
    return load_folder(tmp_path)


@pytest.mark.parametrize("setting", ["dollars", "auditor"])
def test_quorum_audits_spans_with_the_llm_worth_most(tmp_path, setting):
    ds = _folder(tmp_path)
    feats = SimpleNamespace(
        phi=np.random.default_rng(1).normal(size=(ds.n_items, 3)), embeddings=None,
        names=None, raw=None,
    )  # fmt: skip
    prep = prepare(ds, {"cheap": 0.01, "good": 0.02, "dear": 0.09}, features=feats)
    row, res = simulate_once(prep, "quorum", setting, 0.3, seed=0, params={"quality": False})
    info = res.info["audit_by_value"]
    assert info["llm"] == "good"
    assert np.isnan(info["expected"]["dear"])  # 0.09 on every item does not fit
    assert row["cost"] <= row["budget_limit"] + 1e-9
    assert row["span_f1"] > 0.95  # the right LLM labels what the humans do not
    if setting == "auditor":
        assert row["human_labels"] <= row["human_budget"]
    # the probe never paid the LLM that cannot label the items left
    probed = res.annotations.loc[res.annotations["phase"] == "calibration", "annotator"]
    assert "dear" not in set(probed) and {"cheap", "good"} <= set(probed)
    rnd, _ = simulate_once(prep, "random", setting, 0.3, seed=0)
    assert rnd["span_f1"] < 0.6  # Random audits with the cheapest (always wrong) LLM


def test_the_probe_asks_only_the_llms_that_could_label_the_rest():
    prices = np.array([0.05, 0.03, 0.02, 0.01])
    alive = np.ones(4, dtype=bool)
    # 400 items, 20 probed, money 12: o3 (19) and claude (11.4) cannot fit beside the probe
    assert probe_panel(prices, alive, 12.0, 400, 20, 0.1).tolist() == [False, False, True, True]
    # with more money every LLM fits; the probe's own price counts
    assert probe_panel(prices, alive, 40.0, 400, 20, 0.1).all()
    assert not probe_panel(prices, alive, 23.0, 400, 20, 0.1)[0]  # 19 + 20 * 0.21 > 23
    # the cheapest live LLM is always kept, even when nothing fits; dead LLMs never
    dead = np.array([True, True, True, False])
    assert probe_panel(prices, dead, 0.5, 400, 20, 0.1).tolist() == [False, False, True, False]


def _two_answer_folder(tmp_path, gold: list, wrong_answer: list, n: int = 200):
    """A folder of ``n`` items whose gold is ``gold``: "dear" is always right, "cheap"
    answers ``wrong_answer`` on the even items and the gold on the odd ones."""
    text = "The forecast says rain on Monday and sun on Tuesday in the north."
    items, rows = [], []
    for i in range(n):
        ans = wrong_answer if i % 2 == 0 else gold
        items.append({"item_id": f"i{i}", "text": text, "gold_spans": json.dumps(gold)})
        rows.append({"item_id": f"i{i}", "annotator": "cheap", "spans": json.dumps(ans)})
        rows.append({"item_id": f"i{i}", "annotator": "dear", "spans": json.dumps(gold)})
    pd.DataFrame(items).to_parquet(tmp_path / "items.parquet")
    pd.DataFrame(rows).to_parquet(tmp_path / "answers.parquet")
    return load_folder(tmp_path)


def _marks_folder(tmp_path):
    """One LLM that is wrong where it marks one span and right where it marks two."""
    gold = [[4, 12, "Contradictory"], [30, 36, "Contradictory"]]
    return _two_answer_folder(tmp_path, gold, [[40, 44, "Contradictory"]])


def _auditor_runs(ds, key: str, values: tuple[str, str]) -> tuple[dict, dict, set]:
    """QUORUM in the auditor setting at 30 % with ``key`` set to each of ``values``: each
    run's row and info, and the items the first run's humans labelled past the probe."""
    feats = SimpleNamespace(phi=np.zeros((ds.n_items, 2)), embeddings=None, names=None, raw=None)
    prep = prepare(ds, {"cheap": 0.01, "dear": 0.5}, features=feats)
    rows, infos, routed = {}, {}, set()
    for v in values:
        row, res = simulate_once(prep, "quorum", "auditor", 0.3, seed=0,
                                 params={"quality": False, key: v})  # fmt: skip
        assert row["cost"] <= row["budget_limit"] + 1e-9
        assert row["human_labels"] <= row["human_budget"]
        rows[v], infos[v] = row, res.info
        if v == values[0]:
            ann = res.annotations
            humans = set(ann.loc[ann["annotator"] == ds.task.human, "item_id"])
            routed = humans - set(ann.loc[ann["phase"] == "calibration", "item_id"])
    # the same humans, on the LLM's errors: every error the humans reach is fixed
    assert rows[values[0]]["human_labels"] == rows[values[1]]["human_labels"]
    assert rows[values[0]]["span_f1"] > rows[values[1]]["span_f1"] + 0.1
    return rows, infos, routed


def test_auditor_humans_go_where_the_llm_marked_fewest_spans(tmp_path):
    _, infos, routed = _auditor_runs(_marks_folder(tmp_path), "value_audit_order",
                                     ("if-free", "random"))  # fmt: skip
    assert infos["if-free"]["auditor_order"].startswith("fewest spans marked first")
    assert routed and all(int(t[1:]) % 2 == 0 for t in routed)  # the one-span items


@pytest.mark.parametrize("setting", ["dollars", "auditor"])
def test_the_probe_stops_once_the_choice_is_clear(tmp_path, setting):
    ds = _folder(tmp_path, 600)
    feats = SimpleNamespace(phi=np.zeros((ds.n_items, 2)), embeddings=None, names=None, raw=None)
    prep = prepare(ds, {"cheap": 0.01, "good": 0.02, "dear": 0.09}, features=feats)
    sizes = {}
    for step in (0, 8):
        params = {"quality": False, "probe_step": step}
        row, res = simulate_once(prep, "quorum", setting, 0.5, seed=0, params=params)
        assert res.info["audit_by_value"]["llm"] == "good"
        assert row["cost"] <= row["budget_limit"] + 1e-9
        sizes[step] = res.info["n_calibration"]
    # "good" is right on every item, "cheap" never: one step of 8 settles it
    assert sizes[8] == 8 < sizes[0]


def _type_folder(tmp_path):
    """One LLM that is right where it marks one span of the humans' usual type and wrong
    where it marks two spans of another type: "marks" sends the humans to its right
    answers, "top-type" to its wrong ones."""
    wrong = [[40, 44, "Other"], [50, 56, "Other"]]
    return _two_answer_folder(tmp_path, [[4, 12, "Contradictory"]], wrong)


def test_top_type_key_puts_answers_without_the_usual_type_first():
    run = SimpleNamespace(kind=Spans())
    outs = ["[]", '[[0,3,"Other"],[5,9,"Other"]]', '[[0,3,"A"]]', None, '[[0,3,"A"],[5,9,"A"]]']
    assert answer_keys(run, outs, None).tolist() == [np.inf, 2.0, 1.0, -1.0, 2.0]
    keys = answer_keys(run, outs, "A")  # spans of type A first, then all spans
    assert np.argsort(keys, kind="stable").tolist() == [3, 1, 2, 4, 0]


def test_auditor_humans_go_where_the_llm_missed_the_usual_type(tmp_path):
    _, infos, routed = _auditor_runs(_type_folder(tmp_path), "value_order_key",
                                     ("top-type", "marks"))  # fmt: skip
    assert infos["top-type"]["auditor_order"].startswith("fewest spans marked first")
    assert routed and all(int(t[1:]) % 2 == 0 for t in routed)  # every human on a wrong answer
    # "marks" sends them to the right answers: the probe values that order below random
    assert infos["marks"]["auditor_order"].startswith("random")
