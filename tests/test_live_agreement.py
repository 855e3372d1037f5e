"""Agreement figures of a live project (quorum.live.humans.agreement) against values computed by
hand on a small case: three people (one contrary), four items, one model."""

from __future__ import annotations

import pandas as pd
import pytest

from quorum.live.humans.agreement import agreement_summary, alpha, confusion, pair_agreement
from quorum.live.humans.book import HumanBook
from quorum.live.ledger.store import Ledger

#: (item, person, label); i4 has one label (not pairable)
PEOPLE = [
    ("i1", "ann", "pos"), ("i1", "bea", "pos"), ("i1", "bad", "neg"),
    ("i2", "ann", "neg"), ("i2", "bea", "neg"), ("i2", "bad", "pos"),
    ("i3", "ann", "pos"), ("i3", "bad", "neg"),
    ("i4", "bea", "neg"),
]  # fmt: skip
VOTE = {"i1": "pos", "i2": "neg", "i3": "pos", "i4": "neg"}
MODEL = {"i1": "pos", "i2": "pos", "i3": "pos", "i4": "neg", "i5": "neg"}


def _long(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["item_id", "annotator", "label"])


def test_alpha_by_hand() -> None:
    # coincidences (each unit's ordered pairs weighted 1/(m_u - 1)):
    # i1 p,p,n: o_pp 1, o_pn 1, o_np 1; i2 n,n,p: o_nn 1, o_pn 1, o_np 1; i3 p,n: o_pn 1, o_np 1
    # n = 8, n_p = n_n = 4: D_o = 6/8, D_e = 2*4*4/(8*7) = 4/7, alpha = 1 - (3/4)/(4/7) = -5/16
    assert alpha(_long(PEOPLE)) == pytest.approx(-5 / 16)
    # with the model: i1 p,p,n,p; i2 n,n,p,p; i3 p,n,p; i4 n,n (i5 alone): n = 13,
    # o_pp 11/3, o_nn 8/3, o_pn = o_np 10/3, n_p 7, n_n 6: D_o 20/39, D_e 84/156, alpha 1/21
    everyone = PEOPLE + [(i, "llm", v) for i, v in MODEL.items()]
    assert alpha(_long(everyone)) == pytest.approx(1 / 21)
    # undefined: one label value, or nothing pairable
    assert alpha(_long([("a", "x", "1"), ("a", "y", "1")])) is None
    assert alpha(_long([("a", "x", "1"), ("b", "y", "0")])) is None


def test_pairs_kappa_and_confusion_by_hand() -> None:
    long = _long(PEOPLE)
    by = {p: g.set_index("item_id")["label"] for p, g in long.groupby("annotator")}
    assert pair_agreement(by["ann"], by["bea"]) == {"items": 2, "agreement": 1.0, "kappa": 1.0}
    # ann p,n,p vs bad n,p,n: p_o 0, p_e = 2/3*1/3 + 1/3*2/3 = 4/9, kappa = -(4/9)/(5/9)
    ab = pair_agreement(by["ann"], by["bad"])
    assert ab["items"] == 3 and ab["agreement"] == 0.0 and ab["kappa"] == pytest.approx(-0.8)
    # vote p,n,p,n vs model p,p,p,n: p_o 3/4, p_e 1/2*3/4 + 1/2*1/4 = 1/2, kappa 1/2
    vm = pair_agreement(pd.Series(VOTE), pd.Series(MODEL))
    assert vm == {"items": 4, "agreement": 0.75, "kappa": pytest.approx(0.5)}
    assert confusion(pd.Series(VOTE), pd.Series(MODEL), ["neg", "pos"]) == {
        "neg": {"neg": 1, "pos": 1},
        "pos": {"neg": 0, "pos": 2},
    }


def _ledger(path) -> Ledger:
    """The small case written through the ledger's own API (tasks, slots, paid calls)."""
    led = Ledger(path)
    run = led.start_run("p", "h", "{}", "quorum", 0, 1.0)
    for item in VOTE:
        rows = [r for r in PEOPLE if r[0] == item]
        key = f"human:{item}"
        cids = [
            led.start_call(run, f"{key}#{j}", "annotate", item, "team", "human", None, None,
                           item, {}, 0.1, status="pending", cost=0.1)
            for j in range(len(rows))
        ]  # fmt: skip
        led.queue_human(key, item, "team", cids, 0.1)
        book = HumanBook(led)
        for j, (_, person, label) in enumerate(rows):
            book.fill(key, j, person, label, label, None)
        book.set_label(key, VOTE[item], ",".join(r[1] for r in rows), "", None, 0.9, "answered")
    for item, out in MODEL.items():
        cid = led.start_call(run, f"llm:{item}", "annotate", item, "llm", "llm", "m", None,
                             item, {}, 0.01)  # fmt: skip
        led.finish_call(cid, status="ok", output=out, cost=0.01)
    # a confidence call and an unparseable answer are not answers to compare
    cid = led.start_call(run, "llm:c:i1", "confidence", "i1", "llm", "llm", "m", None, "", {}, 0)
    led.finish_call(cid, status="ok", output=None, confidence=0.7)
    cid = led.start_call(run, "llm2:i1", "annotate", "i1", "llm2", "llm", "m", None, "", {}, 0)
    led.finish_call(cid, status="unparseable", output=None)
    return led


def test_agreement_summary_from_the_ledger(tmp_path) -> None:
    led = _ledger(tmp_path / "ledger.sqlite")
    try:
        ag = agreement_summary(led, ["neg", "pos"])
    finally:
        led.close()
    p = ag["people"]
    assert p["alpha"] == pytest.approx(-5 / 16)
    assert p["labels"] == 9 and p["items_with_2plus"] == 3
    pairs = {(x["a"], x["b"]): x for x in p["pairs"]}
    assert pairs[("ann", "bea")]["kappa"] == pytest.approx(1.0)
    assert pairs[("ann", "bad")]["kappa"] == pytest.approx(-0.8)
    assert pairs[("bad", "bea")]["kappa"] == pytest.approx(-1.0)
    persons = {x["person"]: x for x in p["persons"]}
    # ann: 5 labels of others on her items (i1 bea bad, i2 bea bad, i3 bad), 2 the same
    assert persons["ann"]["pairs_with_others"] == 5
    assert persons["ann"]["agree_with_others"] == pytest.approx(0.4)
    assert persons["ann"]["agreement_vote"] == 1.0 and persons["ann"]["items_vote"] == 3
    assert persons["bad"]["agree_with_others"] == 0.0 and persons["bad"]["agreement_vote"] == 0.0
    assert ag["human_votes"] == 4
    (m,) = ag["models"]  # llm2's unparseable answer and the confidence call do not count
    assert m["annotator"] == "llm" and m["answers"] == 5
    assert m["items"] == 4 and m["agreement"] == 0.75 and m["kappa"] == pytest.approx(0.5)
    assert m["confusion"] == {"neg": {"neg": 1, "pos": 1}, "pos": {"neg": 0, "pos": 2}}
    assert m["per_class"] == {
        "neg": {"items": 2, "agreement": 0.5},
        "pos": {"items": 2, "agreement": 1.0},
    }
    assert ag["everyone"]["alpha"] == pytest.approx(1 / 21)
