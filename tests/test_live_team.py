"""A human team on the file queue: k labels per item from different people, reliability,
timeouts and late answers (`humans.labels_per_item`, `humans.timeout`)."""

from __future__ import annotations

import json
import sqlite3
import time
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from live_servers.fixtures import SST2_TASK, sst2_items, write_project
from live_servers.routers import CascadeWithQuality
from live_servers.scripted_team import FileQueueTeam, append_answers
from quorum.live.outputs.export import export_frame
from quorum.live.outputs.status import status
from quorum.live.project.config import load_project
from quorum.live.run.runner import annotate

NAMES = {"0": "negative", "1": "positive"}
PRICE = Decimal("0.05")


def _project(data_dir: Path, n: int, budget: float = 3.0, **humans) -> dict:
    return {
        "name": "team",
        "method": "live_servers.routers:CascadeRouter",
        "method_params": {"human_every": 2, "confidence_every": 0},
        "features": "light",
        "items": sst2_items(data_dir, n),  # the gold column: control items for reliability
        "task": {**SST2_TASK, "instructions": "Is the review positive?"},
        # no random quality checks (on by default): these tests count the router's tasks
        "budget": {"limit": budget, "quality_checks": 0},
        "annotators": [
            {"name": "kw", "kind": "model", "model": "live_servers.models:keyword_sentiment"},
            {"name": "team", "kind": "human", "price": float(PRICE)},
        ],
        "humans": humans,
    }


def _gold(data_dir: Path) -> dict[str, str]:
    df = pd.read_csv(data_dir / "sst2_dev" / "sst2_dev.csv", dtype=str)
    return dict(zip(df["idx"], df["label"], strict=True))


def _sql(cfg, q: str) -> pd.DataFrame:
    con = sqlite3.connect(cfg.ledger_path)
    try:
        return pd.read_sql_query(q, con)
    finally:
        con.close()


class Team(FileQueueTeam):
    """Three people reading pending.csv: ann and bea give the gold label, bad the other one.
    Each item is answered by whoever is next in turn and has not labelled it yet."""

    PEOPLE = ("ann", "bea", "bad")

    def __init__(self, queue: Path, gold: dict[str, str]) -> None:
        self.gold = gold
        super().__init__(queue, self._label, self.PEOPLE)

    def _label(self, who: str, item: str) -> str:
        y = self.gold[item]
        return NAMES[y] if who != "bad" else NAMES["1" if y == "0" else "0"]


def test_team_of_three_two_labels_per_item(tmp_path, shared_data_dir) -> None:
    gold = _gold(shared_data_dir)
    data = _project(shared_data_dir, 12, labels_per_item=2, min_evidence=4)
    data["method"] = "live_servers.routers:CascadeWithQuality"
    cfg = load_project(write_project(tmp_path, data))
    assert cfg.humans.labels_per_item == 2
    CascadeWithQuality.seen.clear()
    team = Team(cfg.queue_dir, gold)
    try:
        s = annotate(cfg, quiet=True, wait=120)
    finally:
        team.close()
    assert s.status == "finished" and s.pending_humans == 0
    tasks = _sql(cfg, "SELECT * FROM human_queue")
    slots = _sql(cfg, "SELECT * FROM human_labels ORDER BY request_key, slot")
    calls = _sql(cfg, "SELECT * FROM calls WHERE annotator='team'")
    n = len(tasks)
    assert n >= 4 and (tasks["status"] == "answered").all() and (tasks["wanted"] == 2).all()
    # every label the team wrote is in the ledger with its person, once, two people per item
    assert len(slots) == 2 * n == len(team.written)
    assert (slots["status"] == "answered").all() and slots["person"].notna().all()
    assert sorted(zip(slots["item_id"], slots["person"], strict=True)) == sorted(
        (i, w) for i, w, _ in team.written
    )
    assert not slots.duplicated(["item_id", "person"]).any()
    # each label is a call paid once at the label price; nothing held, budget kept
    assert len(calls) == 2 * n and (calls["status"] == "ok").all()
    assert (calls["cost"] == float(PRICE)).all()
    assert set(slots["call_id"]) == set(calls["call_id"])
    st = status(cfg)
    assert st["held_for_humans"] == "0" and Decimal(st["spent"]) <= Decimal("3")
    assert st["human_labels"] == {"answered": 2 * n}
    # reliability: gold items check each person; bad is out-voted wherever it disagrees
    team_rel = {p["person"]: p for p in st["human_team"]}
    print(f"{n} tasks, {2 * n} labels; accuracy", {p: round(r["accuracy"], 3)
          for p, r in team_rel.items()}, "arm quality", st["human_quality"])  # fmt: skip
    assert set(team_rel) == {"ann", "bea", "bad"}
    assert team_rel["bad"]["accuracy"] < 0.5 < team_rel["ann"]["accuracy"]
    assert team_rel["bad"]["gold_correct"] == 0 and team_rel["ann"]["gold"] >= 1
    ex = export_frame(cfg).set_index("item_id")
    for r in tasks.to_dict("records"):
        iid = r["item_id"]
        assert r["label"] == gold[iid]  # the careful person wins every pair with bad
        assert ex.loc[iid, "label"] == gold[iid] and ex.loc[iid, "human"]
        got = ex.loc[iid, "human_labels"]
        assert len(got) == 2 and {g["by"] for g in got} <= set(Team.PEOPLE)
        assert 0.5 < ex.loc[iid, "human_confidence"] <= 1.0
    spent = Decimal(st["spent"])
    assert spent == sum(Decimal(str(c)) for c in ex["cost"].round(9))
    # the router got the human arm's estimated quality once enough labels were checked
    seen = [q for q in CascadeWithQuality.seen if q != 1.0]
    assert CascadeWithQuality.seen[0] == 1.0 and seen  # no evidence at first: its default
    assert seen[-1] == pytest.approx(st["human_quality"], abs=0.01) and seen[-1] < 1.0


def test_timeout_withdraws_replans_and_late_answers(tmp_path, shared_data_dir, caplog) -> None:
    """Nobody answers: each task expires after humans.timeout, its money is released and
    the router goes on without it (never sent again, never paid). A late answer is recorded,
    paid once because the budget has room, and used; one past the budget is only recorded."""
    gold = _gold(shared_data_dir)
    data = _project(shared_data_dir, 6, labels_per_item=2, timeout="1s")
    cfg = load_project(write_project(tmp_path, data))
    assert cfg.humans.timeout == 1.0
    caplog.set_level("INFO", logger="quorum.live")
    s = annotate(cfg, quiet=True, wait=30)
    assert s.status == "finished" and s.pending_humans == 0
    tasks = _sql(cfg, "SELECT * FROM human_queue")
    assert len(tasks) >= 2 and (tasks["status"] == "expired").all()
    assert "no answer within humans.timeout" in tasks["note"].iloc[0]
    calls = _sql(cfg, "SELECT * FROM calls WHERE annotator='team'")
    assert len(calls) == 2 * len(tasks) and (calls["status"] == "withdrawn").all()
    assert (calls["cost"] == 0).all()
    st = status(cfg)
    assert st["held_for_humans"] == "0" and st["human_tasks"] == {"expired": len(tasks)}
    assert (cfg.queue_dir / "pending.csv").read_text().count("\n") == 1  # header only
    assert "withdrawn, their held money released" in caplog.text
    ex = export_frame(cfg).set_index("item_id")
    assert ex["label"].notna().all() and not ex["human"].any()  # planned without humans
    # run again: expired tasks are not sent again
    annotate(cfg, quiet=True)
    assert len(_sql(cfg, "SELECT * FROM human_queue")) == len(tasks)

    # a late answer: recorded with its person, paid once (room in the budget), used
    late = tasks["item_id"].iloc[0]
    append_answers(cfg.queue_dir / "answers.csv", [[late, NAMES[gold[late]], "ann"]])
    s = annotate(cfg, quiet=True)
    slots = _sql(cfg, f"SELECT * FROM human_labels WHERE item_id='{late}'")
    assert sorted(slots["status"]) == ["late", "withdrawn"]
    assert slots.loc[slots["status"] == "late", "person"].tolist() == ["ann"]
    paid = _sql(cfg, f"SELECT * FROM calls WHERE annotator='team' AND item_id='{late}'")
    assert sorted(paid["status"]) == ["ok", "withdrawn"] and paid["cost"].sum() == float(PRICE)
    t = _sql(cfg, f"SELECT * FROM human_queue WHERE item_id='{late}'").iloc[0]
    assert t["status"] == "answered" and t["given"] == 1 and t["label"] == gold[late]
    assert "got a late answer" in caplog.text
    ex = export_frame(cfg).set_index("item_id")
    assert ex.loc[late, "label"] == gold[late] and ex.loc[late, "human"]
    annotate(cfg, quiet=True)  # read again: not paid twice
    again = _sql(cfg, f"SELECT cost FROM calls WHERE annotator='team' AND item_id='{late}'")
    assert again["cost"].sum() == float(PRICE)

    # the budget is now all but spent: a second late answer is recorded, not paid, not used
    spent = Decimal(status(cfg)["spent"])
    write_project(tmp_path, {**data, "budget": {"limit": float(spent)}})
    cfg = load_project(tmp_path / "project.yaml")
    other = tasks["item_id"].iloc[1]
    append_answers(cfg.queue_dir / "answers.csv", [[other, NAMES[gold[other]], "bea"]])
    annotate(cfg, quiet=True)
    slots = _sql(cfg, f"SELECT * FROM human_labels WHERE item_id='{other}'")
    assert "late-unpaid" in slots["status"].tolist()
    t = _sql(cfg, f"SELECT * FROM human_queue WHERE item_id='{other}'").iloc[0]
    assert t["status"] == "expired"
    assert Decimal(status(cfg)["spent"]) == spent
    assert "not paid, not used" in caplog.text


def test_partial_labels_at_timeout_close_the_task(tmp_path, shared_data_dir, caplog) -> None:
    """Two labels wanted, one came: at the timeout the task is closed with that label and
    the second label's held price is released; not silently (issue 38): a warning, and
    `quorum status` says the label rests on fewer people."""
    gold = _gold(shared_data_dir)
    cfg = load_project(
        write_project(tmp_path, _project(shared_data_dir, 4, labels_per_item=2, timeout=8))
    )
    s = annotate(cfg, quiet=True)
    assert s.status == "pending"
    (item,) = s.waiting_for
    assert Decimal(status(cfg)["held_for_humans"]) == 2 * PRICE
    pend = pd.read_csv(cfg.queue_dir / "pending.csv", dtype=str)
    assert pend.loc[0, "labels_wanted"] == "2" and pend.loc[0, "answered_by"] == "[]"
    append_answers(cfg.queue_dir / "answers.csv", [[item, NAMES[gold[item]], "ann"]])
    s = annotate(cfg, quiet=True)  # collected: one of two labels, still waiting
    assert s.status == "pending" and s.waiting_for == [item]
    pend = pd.read_csv(cfg.queue_dir / "pending.csv", dtype=str)
    assert json.loads(pend.loc[0, "answered_by"]) == ["ann"]
    assert Decimal(status(cfg)["held_for_humans"]) == PRICE
    sent = float(_sql(cfg, "SELECT submitted_at FROM human_queue").iloc[0, 0])
    time.sleep(max(0.0, sent + 8.2 - time.time()))
    caplog.set_level("INFO", logger="quorum.live")
    annotate(cfg, quiet=True, wait=20)
    t = _sql(cfg, f"SELECT * FROM human_queue WHERE item_id='{item}'").iloc[0]
    assert t["status"] == "answered" and t["label"] == gold[item] and t["answered_by"] == "ann"
    assert t["note"] == "closed at the timeout with 1 of 2 label(s)"
    loud = [r for r in caplog.records if "closed at the timeout" in r.getMessage()]
    assert loud and loud[0].levelname == "WARNING"
    assert any("closed at the timeout with fewer labels" in w for w in status(cfg)["warnings"])
    slots = _sql(cfg, f"SELECT status, person FROM human_labels WHERE item_id='{item}'")
    assert sorted(slots["status"]) == ["answered", "withdrawn"]
    calls = _sql(cfg, f"SELECT status, cost FROM calls WHERE annotator='team' AND item_id='{item}'")
    assert calls["cost"].sum() == float(PRICE)  # one label paid, the other released


def test_tasks_of_an_older_ledger_become_one_slot_each(tmp_path, shared_data_dir) -> None:
    """A ledger written before label slots existed: each task is one slot, its own call."""
    from quorum.live.ledger.store import Ledger

    gold = _gold(shared_data_dir)
    cfg = load_project(write_project(tmp_path, _project(shared_data_dir, 4)))
    (item,) = annotate(cfg, quiet=True).waiting_for
    append_answers(cfg.queue_dir / "answers.csv", [[item, NAMES[gold[item]], "ann"]])
    annotate(cfg, quiet=True)
    before = _sql(cfg, "SELECT * FROM human_labels ORDER BY request_key")
    con = sqlite3.connect(cfg.ledger_path)
    con.execute("DROP TABLE human_labels")  # as schema 2 had it
    con.commit()
    con.close()
    Ledger(cfg.ledger_path).close()  # opening it migrates
    after = _sql(cfg, "SELECT * FROM human_labels ORDER BY request_key")
    cols = ["request_key", "slot", "item_id", "call_id", "status", "person", "label", "line"]
    assert after[cols].equals(before[cols])
    assert set(after["status"]) <= {"answered", "open"} and (after["slot"] == 0).all()
