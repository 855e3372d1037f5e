"""A human queue that keeps people busy (issue 27): with ``humans.queue_depth`` the router
sends tasks ahead and routes again at each answer, so a slow person holds up nobody; labels,
spend and paid-once hold."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from live_servers.fixtures import write_project
from live_servers.scripted_team import append_answers
from quorum.live.outputs.export import export_frame
from quorum.live.project.config import load_project
from quorum.live.run.runner import annotate
from test_live_team import NAMES, _gold, _project

pytestmark = [pytest.mark.realdata]


class SlowTeam:
    """ann and bea answer in 0.2 s, sam (slow) takes ``slow`` seconds a label. Each takes
    the first task in pending.csv it has not labelled that still wants labels. ``idle``:
    for ann and bea, the seconds between one of their answers and the next task they could
    take (the time the run left them without work)."""

    def __init__(self, queue: Path, gold: dict[str, str], slow: float = 3.0) -> None:
        self.queue, self.gold = queue, gold
        self.speed = {"ann": 0.2, "bea": 0.2, "sam": slow}
        self.busy_until = dict.fromkeys(self.speed, 0.0)
        self.doing: dict[str, tuple[str, float] | None] = dict.fromkeys(self.speed)
        self.labelled: dict[str, set[str]] = {p: set() for p in self.speed}
        self.idle_since: dict[str, float | None] = dict.fromkeys(self.speed)
        self.idle: dict[str, float] = dict.fromkeys(self.speed, 0.0)
        self.answers = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _open(self) -> list[dict]:
        p = self.queue / "pending.csv"
        if not p.is_file():
            return []
        try:
            return pd.read_csv(p, dtype=str).to_dict("records")
        except (pd.errors.EmptyDataError, ValueError):
            return []

    def _run(self) -> None:
        while not self.stop.is_set():
            now = time.monotonic()
            rows = self._open()
            for who in self.speed:
                job = self.doing[who]
                if job is not None and now >= job[1]:
                    item = job[0]
                    row = [item, NAMES[self.gold[item]], who]
                    append_answers(self.queue / "answers.csv", [row])
                    self.labelled[who].add(item)
                    self.doing[who] = None
                    self.answers += 1
                    self.idle_since[who] = now
                if self.doing[who] is not None:
                    continue
                for r in rows:
                    item = r["item_id"]
                    by = set(json.loads(r.get("answered_by") or "[]"))
                    mine = item in self.labelled[who] or who in by
                    others = sum(item in self.labelled[p] for p in self.speed) + sum(
                        1 for p, j in self.doing.items() if j is not None and j[0] == item
                    )
                    if mine or others >= int(r["labels_wanted"]):
                        continue
                    self.doing[who] = (item, now + self.speed[who])
                    if self.idle_since[who] is not None:
                        self.idle[who] += now - self.idle_since[who]
                        self.idle_since[who] = None
                    break
            time.sleep(0.05)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)


def _run(tmp: Path, data_dir: Path, depth: int | None) -> tuple[dict, SlowTeam, object]:
    humans = {"labels_per_item": 2}
    if depth:
        humans["queue_depth"] = depth
    data = _project(data_dir, 16, budget=3.0, **humans)
    # the random quality checks (on by default) end the run with one batch of check tasks
    # for the team, the same in both runs: off here, so idle time measures the queue depth
    data["budget"]["quality_checks"] = 0
    cfg = load_project(write_project(tmp, data))
    team = SlowTeam(cfg.queue_dir, _gold(data_dir))
    t0 = time.monotonic()
    try:
        s = annotate(cfg, quiet=True, wait=240)
    finally:
        team.close()
    wall = time.monotonic() - t0
    return {"wall": wall, "idle_fast": team.idle["ann"] + team.idle["bea"]}, team, (s, cfg)


def test_a_slow_person_holds_up_nobody(tmp_path, shared_data_dir) -> None:
    one, _, (s1, _) = _run(tmp_path / "one", shared_data_dir, None)
    six, _team, (s6, cfg) = _run(tmp_path / "six", shared_data_dir, 6)
    for s in (s1, s6):
        assert s.status == "finished" and s.labelled == 16 and not s.unlabelled
    # the fast people wait far less for work (the run's length is the slow person's 3 s
    # label either way, so wall time is no measure of it)
    assert six["idle_fast"] < 0.6 * one["idle_fast"], (one, six)
    # labels and money: each human label paid once, spend within the budget
    con = sqlite3.connect(cfg.ledger_path)
    calls = pd.read_sql_query("SELECT request_key, status, cost FROM calls", con)
    slots = pd.read_sql_query("SELECT request_key, slot, status, person FROM human_labels", con)
    con.close()
    paid = calls[calls["status"].isin(["ok", "unparseable", "pending"])]
    assert not paid["request_key"].duplicated().any()
    assert paid["cost"].sum() <= 3.0 + 1e-9
    got = slots[slots["status"] == "answered"]
    assert not got.duplicated(["request_key", "person"]).any()  # two people per task
    df = export_frame(cfg)
    assert df["final"].all() and df["label"].notna().all()
