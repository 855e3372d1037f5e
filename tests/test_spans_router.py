"""QUORUM on span tasks: the audit by value picks the LLM worth most at the money left
(mechanics on synthetic answers; quality is measured on real data in benchmarks/)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from quorum.data.io import load_folder
from quorum.routing.quorum.audit.by_value import choose_llm, probe_panel
from quorum.simulate import prepare, simulate_once


def test_choose_llm_weighs_quality_against_the_humans_its_price_costs():
    acc = np.array([0.2, 0.4, 0.9])
    prices = np.array([0.01, 0.02, 0.05])
    alive = np.ones(3, dtype=bool)
    k, n_h, value = choose_llm(acc, prices, alive, 24.0, 800, 0.1, None)
    assert k == 1 and n_h == 100 and np.isnan(value[2])  # 0.05 x 800 > 24: does not fit
    # with much money the cheapest LLM leaves room for more humans and wins
    k2, _, _ = choose_llm(np.array([0.2, 0.25, 0.3]), prices, alive, 60.0, 800, 0.1, None)
    assert k2 == 0
    assert choose_llm(acc, prices, np.zeros(3, dtype=bool), 24.0, 800, 0.1, None)[0] is None
    # a human limit (auditor) caps the humans beside every LLM
    _, n_cap, _ = choose_llm(acc, prices, alive, 24.0, 800, 0.1, 10)
    assert n_cap == 10


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
