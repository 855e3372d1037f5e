"""The human arm: tasks are ledger entries, every answer counts, waiting, parsing answers."""

from __future__ import annotations

import csv
import json
import logging
import os
import re
import sqlite3
import threading
import time
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from live_servers.fixtures import SST2_TASK, quorum, quorum_here, sst2_items, write_project
from quorum.live.outputs.export import export_frame
from quorum.live.outputs.files import export
from quorum.live.outputs.status import status
from quorum.live.project.config import load_project
from quorum.live.run.runner import annotate
from quorum.tasks.classification import match_label

NAMES = {"0": "negative", "1": "positive"}
LOCAL = [
    {"name": "kw", "kind": "model", "model": "live_servers.models:keyword_sentiment",
     "price": 0.0005},
    {"name": "named", "kind": "model", "model": "live_servers.models:named_sentiment",
     "price": 0.001},
]  # fmt: skip


def _cascade(data_dir, n=8, budget=5.0) -> dict:
    return {
        "name": "h",
        "method": "live_servers.routers:CascadeRouter",
        "method_params": {"human_every": 3},
        "features": "light",
        "items": {**sst2_items(data_dir, n), "gold_column": None},
        "task": {**SST2_TASK, "instructions": "Is the review positive?"},
        # no random quality checks (on by default): these tests count the router's tasks
        "budget": {"limit": budget, "quality_checks": 0},
        "annotators": [
            {"name": "kw", "kind": "model", "model": "live_servers.models:keyword_sentiment"},
            {"name": "alice", "kind": "human", "price": 0.5},
        ],
    }


def _gold(data_dir: Path) -> dict[str, str]:
    df = pd.read_csv(data_dir / "sst2_dev" / "sst2_dev.csv", dtype=str)
    return dict(zip(df["idx"], df["label"], strict=True))


def _write_answers(path: Path, rows, mode: str = "w") -> None:
    new = mode == "w" or not path.is_file()
    with path.open(mode, newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["item_id", "label", "annotator"])
        w.writerows(rows)


def _pending(cfg) -> list[str]:
    p = cfg.queue_dir / "pending.csv"
    return pd.read_csv(p, dtype=str)["item_id"].tolist() if p.is_file() else []


def _ledger(cfg, sql: str) -> pd.DataFrame:
    con = sqlite3.connect(cfg.ledger_path)
    try:
        return pd.read_sql_query(sql, con)
    finally:
        con.close()


def _tasks(cfg) -> pd.DataFrame:
    return _ledger(cfg, "SELECT * FROM human_queue")


def _gold_and_team(tmp_path: Path, data_dir: Path, base: dict, n: int) -> tuple[Path, Path]:
    """Two projects on the same ``n`` items: the gold column as the human answering on
    demand, and a ``team`` (price 0.02) answering from the file queue."""
    gold = write_project(tmp_path / "gold", {**base, "items": sst2_items(data_dir, n),
                                             "annotators": LOCAL})  # fmt: skip
    team = write_project(
        tmp_path / "team",
        {**base, "items": {**sst2_items(data_dir, n), "gold_column": None},
         "annotators": [*LOCAL, {"name": "team", "kind": "human", "price": 0.02}]},
    )  # fmt: skip
    return gold, team


def _human_calls(cfg) -> pd.DataFrame:
    """The ledger's calls of the human arm ``team``."""
    return _ledger(cfg, "SELECT * FROM calls WHERE annotator='team'")


class Team:
    """A scripted human team: answers what pending.csv shows (gold label names), appending
    to answers.csv; ``rounds`` is how many times it answers before it leaves (None: always)."""

    def __init__(
        self, queue: Path, gold: dict[str, str], rounds: int | None = None, delay: float = 0.0
    ) -> None:
        self.queue, self.gold, self.rounds = queue, gold, rounds
        self.delay = delay  # seconds a task is shown before its answer is written
        self.seen: dict[str, float] = {}
        self.stop = threading.Event()
        self.done: list[str] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            pend = self.queue / "pending.csv"
            if self.rounds != 0 and pend.is_file():
                ids = [i for i in pd.read_csv(pend, dtype=str)["item_id"] if i not in self.done]
                now = time.monotonic()
                ids = [i for i in ids if now - self.seen.setdefault(i, now) >= self.delay]
                if ids:
                    rows = [[i, NAMES[self.gold[i]], f"annotator-{k % 3}"] for k, i in
                            enumerate(ids, len(self.done))]  # fmt: skip
                    _write_answers(self.queue / "answers.csv", rows, mode="a")
                    self.done += ids
                    if self.rounds is not None:
                        self.rounds -= 1
            time.sleep(0.1)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)


def test_default_router_human_team_every_answer_used(tmp_path, shared_data_dir) -> None:
    """`quorum annotate` with QUORUM and a human team answering from the queue while the run
    waits; the team leaves, the run stops, the team comes back, the run resumes: every
    answer is used and paid once, nothing stays held, and the labels are those of the same
    project whose human is the gold column answering on demand."""
    base = {"name": "team", "features": "light", "seed": 3, "task": SST2_TASK,
            "budget": {"limit": 0.9}, "human_price": 0.02}  # fmt: skip
    gold_proj, team_proj = _gold_and_team(tmp_path, shared_data_dir, base, 60)
    res = quorum_here("annotate", str(gold_proj), "--quiet")
    assert res.returncode == 0, res.stderr[-3000:]
    cfg = load_project(team_proj)
    assert cfg.method == "quorum"
    team = Team(cfg.queue_dir, _gold(shared_data_dir), rounds=1)
    try:
        # the team answers the first tasks, then leaves: the run waits, then stops
        r1 = quorum("annotate", str(team_proj), "--wait", "8")
        assert r1.returncode == 0, r1.stderr[-3000:]
        first_round = len(team.done)
        assert "run 1: pending" in r1.stdout, r1.stdout
        log = r1.stderr
        # the first answers came while run 1 routed or waited; it went on, then timed out
        assert "waiting up to" in log and "time is up: human tasks waited for: 0 answered" in log, (
            log
        )
        assert set(_tasks(cfg).query("status == 'answered'")["item_id"]) == set(team.done)
        waiting = _pending(cfg)
        assert waiting and not set(waiting) & set(team.done)
        st = status(cfg)
        assert Decimal(st["held_for_humans"]) == Decimal("0.02") * len(waiting)
        assert not st["labels_final"]
        # the team is back; resume and wait
        team.rounds = None
        r2 = quorum_here("annotate", str(team_proj), "--wait", "60")
        assert r2.returncode == 0, r2.stderr[-3000:]
        assert "run 2: finished" in r2.stdout, r2.stdout
    finally:
        team.close()
    assert first_round > 0 and len(team.done) > first_round
    tasks = _tasks(cfg)
    # every answer written is attached to its task, with who gave it, and paid once
    assert sorted(tasks["item_id"]) == sorted(team.done)
    assert (tasks["status"] == "answered").all() and tasks["answered_by"].notna().all()
    human_calls = _human_calls(cfg)
    assert len(human_calls) == len(tasks) and (human_calls["status"] == "ok").all()
    assert (human_calls["cost"] == 0.02).all()
    st = status(cfg)
    assert st["held_for_humans"] == "0" and st["human_tasks"] == {"answered": len(tasks)}
    assert st["pending_humans"] == [] and _pending(cfg) == []
    assert st["labels_final"] and st["labelled"] == 60
    # the labels are those of the gold-on-demand run, and each answer is a label
    a = quorum_here("export", str(gold_proj), "-f", "jsonl", "-o", str(tmp_path / "a.jsonl"))
    b = quorum_here("export", str(team_proj), "-f", "jsonl", "-o", str(tmp_path / "b.jsonl"))
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    la = pd.read_json(tmp_path / "a.jsonl", lines=True, dtype=False).set_index("item_id")
    lb = pd.read_json(tmp_path / "b.jsonl", lines=True, dtype=False).set_index("item_id")
    assert la["label"].equals(lb["label"])
    assert la["human"].equals(lb["human"])
    gold = _gold(shared_data_dir)
    for iid in team.done:
        assert lb.loc[iid, "human"] and lb.loc[iid, "label"] == gold[iid]
        assert lb.loc[iid, "human_by"].startswith("annotator-")
    assert (lb["text"].str.len() > 0).all() and lb["final"].all()
    # status and export agree, in exact money, and both runs spent the same
    assert Decimal(st["spent"]) == Decimal(str(round(lb["cost"].sum(), 9)))
    assert st["spent"] == status(load_project(gold_proj))["spent"]


def test_pending_tasks_status_and_export_agree(tmp_path, shared_data_dir) -> None:
    cfg = load_project(write_project(tmp_path, _cascade(shared_data_dir)))
    s1 = annotate(cfg, quiet=True)
    # the test router asks humans one item at a time: the pass stops at the first task
    assert s1.status == "pending" and s1.pending_humans == 1 and len(s1.waiting_for) == 1
    pending = pd.read_csv(cfg.queue_dir / "pending.csv", dtype=str)
    assert list(pending.columns) == ["item_id", "text", "instructions", "choices"]
    assert pending["item_id"].tolist() == s1.waiting_for
    assert (pending["instructions"] == "Is the review positive?").all()
    assert pending["choices"].iloc[0] == '["negative", "positive"]'
    st = status(cfg)
    assert st["held_for_humans"] == "0.5" and st["pending_humans"] == s1.waiting_for
    assert not st["labels_final"] and st["labelled"] == s1.labelled
    ex = export_frame(cfg)
    assert ex["pending_human"].sum() == 1 and not ex["final"].any()
    assert ex.loc[ex["pending_human"], "item_id"].tolist() == s1.waiting_for
    assert int(ex["label"].notna().sum()) == st["labelled"]

    # answer whatever is asked, one run at a time, until the router is done
    gold = _gold(shared_data_dir)
    answered: dict[str, str] = {}
    for _ in range(20):
        ids = _pending(cfg)
        if not ids:
            break
        for i in ids:
            answered[i] = gold[i]
        _write_answers(cfg.queue_dir / "answers.csv", [[i, v, "bob"] for i, v in answered.items()])
        s = annotate(cfg, quiet=True)
        assert s.status in ("pending", "finished")
    assert s.status == "finished" and s.pending_humans == 0 and len(answered) >= 3
    st = status(cfg)
    assert st["held_for_humans"] == "0" and st["human_tasks"] == {"answered": len(answered)}
    assert st["spent"] == f"{0.5 * len(answered):g}"  # each answer paid once
    ex = export_frame(cfg).set_index("item_id")
    for i, v in answered.items():
        assert ex.loc[i, "label"] == v and ex.loc[i, "human"] and ex.loc[i, "human_by"] == "bob"
        assert "alice (bob)" in ex.loc[i, "labelled_by"]
    out = export(cfg, "csv", tmp_path / "labels.csv")
    df = pd.read_csv(out, dtype=str)
    assert len(df) == 8 and df["label"].notna().all() and df["text"].notna().all()


def test_wait_sleeps_until_answers_come(tmp_path, shared_data_dir, caplog) -> None:
    cfg = load_project(write_project(tmp_path, _cascade(shared_data_dir, n=6)))
    team = Team(cfg.queue_dir, _gold(shared_data_dir), delay=2.0)  # people take a moment
    caplog.set_level(logging.INFO, logger="quorum.live")
    try:
        s = annotate(cfg, quiet=True, wait=60)
    finally:
        team.close()
    assert s.status == "finished" and s.pending_humans == 0
    assert s.passes == len(team.done) + 1 and s.answers_came == len(team.done)
    msgs = [r.getMessage() for r in caplog.records]
    # one wait per task (unless its answer was already there when the pass ended)
    assert 1 <= sum(m.startswith("waiting up to") for m in msgs) <= len(team.done)
    assert sum("waited for: 1 answered (of 1)" in m for m in msgs) <= len(team.done)


def test_waiting_is_idle(tmp_path, shared_data_dir) -> None:
    """While nobody answers, --wait neither routes nor writes: one pass, then sleep."""
    cfg = load_project(write_project(tmp_path, _cascade(shared_data_dir, n=6)))

    def n_calls() -> int:
        con = sqlite3.connect(cfg.ledger_path)
        try:
            return con.execute("SELECT count(*) FROM calls").fetchone()[0]
        finally:
            con.close()

    annotate(cfg, quiet=True)
    c1 = n_calls()
    annotate(cfg, quiet=True)
    per_pass = n_calls() - c1  # e.g. a failed call is made again by each pass
    c2 = n_calls()
    t = time.monotonic()
    s = annotate(cfg, quiet=True, wait=2.0)
    assert time.monotonic() - t >= 2.0
    assert s.status == "pending" and s.passes == 1 and s.answers_came == 0
    assert n_calls() - c2 == per_pass
    con = sqlite3.connect(cfg.ledger_path)
    assert con.execute("SELECT count(DISTINCT pass) FROM labels WHERE run_id=3").fetchone()[0] == 1
    con.close()


def test_negative_wait_is_rejected(tmp_path, shared_data_dir) -> None:
    proj = write_project(tmp_path, _cascade(shared_data_dir, n=3))
    res = quorum_here("annotate", str(proj), "--wait", "-5")
    assert res.returncode != 0 and "--wait" in res.stderr and "-5" in res.stderr
    assert not (tmp_path / ".quorum").exists()


def test_tasks_no_pass_needs_are_withdrawn_or_given(tmp_path, shared_data_dir) -> None:
    """A pending task the router no longer asks for releases its money; an answer that
    comes for it later is still paid once and used as the item's label."""
    data = _cascade(shared_data_dir, n=6)
    proj = write_project(tmp_path, data)
    s1 = annotate(load_project(proj), quiet=True)
    (item,) = s1.waiting_for
    # a budget below the human's price: the router never asks a human any more
    write_project(tmp_path, {**data, "budget": {"limit": 0.4, "quality_checks": 0}})
    cfg = load_project(proj)
    s2 = annotate(cfg, quiet=True)
    assert s2.status == "finished" and s2.withdrawn == 1
    st = status(cfg)
    assert st["held_for_humans"] == "0" and st["human_tasks"] == {"withdrawn": 1}
    assert _pending(cfg) == []
    # the answer comes anyway, and the budget is back
    gold = _gold(shared_data_dir)
    _write_answers(cfg.queue_dir / "answers.csv", [[item, NAMES[gold[item]], "late"]])
    write_project(tmp_path, {**data, "method_params": {"human_every": 100}})
    cfg = load_project(proj)
    annotate(cfg, quiet=True)
    tasks = _tasks(cfg).set_index("item_id")
    assert tasks.loc[item, "status"] == "answered" and tasks.loc[item, "given"] == 1
    ex = export_frame(cfg).set_index("item_id")
    assert ex.loc[item, "label"] == gold[item] and ex.loc[item, "human"]
    con = sqlite3.connect(cfg.ledger_path)
    costs = [r[0] for r in con.execute("SELECT cost FROM calls WHERE annotator='alice'")]
    con.close()
    assert costs.count(0.5) == 1  # paid once


def test_answers_of_an_earlier_config_are_used(tmp_path, shared_data_dir) -> None:
    """Another seed takes another path: the answers it does not ask for are given to the
    router (labels), none is asked or paid twice."""
    data = _cascade(shared_data_dir, n=8)
    proj = write_project(tmp_path, data)
    gold = _gold(shared_data_dir)
    cfg = load_project(proj)
    for _ in range(20):
        s = annotate(cfg, quiet=True)
        if s.status == "finished":
            break
        ids = _pending(cfg)
        _write_answers(cfg.queue_dir / "answers.csv", [[i, gold[i]] for i in ids], mode="a")
    first = set(_tasks(cfg)["item_id"])
    write_project(tmp_path, {**data, "seed": 5})
    cfg = load_project(proj)
    for _ in range(20):
        s = annotate(cfg, quiet=True)
        if s.status == "finished":
            break
        ids = _pending(cfg)
        _write_answers(cfg.queue_dir / "answers.csv", [[i, gold[i]] for i in ids], mode="a")
    assert s.status == "finished"
    tasks = _tasks(cfg)
    assert (tasks["status"] == "answered").all() and not tasks["item_id"].duplicated().any()
    ex = export_frame(cfg).set_index("item_id")
    for i in tasks["item_id"]:
        assert ex.loc[i, "human"] and ex.loc[i, "label"] == gold[i]
    assert first <= set(tasks["item_id"])
    assert status(cfg)["held_for_humans"] == "0"


def test_answers_are_matched_exactly() -> None:
    labels, names = ["0", "1"], NAMES
    assert match_label("positive", labels, names, []) == "1"
    assert match_label(" NEGATIVE ", labels, names, []) == "0"
    assert match_label("1", labels, names, []) == "1"
    for raw in ("not positive", "positive!", "pos", "positively", "2", "-1", "maybe?"):
        assert match_label(raw, labels, names, []) is None, raw
    mc = ["A", "B", "C"]
    opts = ["Paris", "Rome", "not Rome"]
    assert match_label("rome", mc, {}, opts) == "B"
    assert match_label("not Rome", mc, {}, opts) == "C"
    assert match_label("2", mc, {}, opts) == "C" and match_label("c", mc, {}, opts) == "C"


def test_answer_rows_corrections_and_unknown_ids(tmp_path, shared_data_dir, caplog) -> None:
    cfg = load_project(write_project(tmp_path, _cascade(shared_data_dir, n=6)))
    s = annotate(cfg, quiet=True)
    (item,) = s.waiting_for
    caplog.set_level(logging.INFO, logger="quorum.live")
    path = cfg.queue_dir / "answers.csv"
    _write_answers(
        path,
        [[item, "not positive", "ann"], ["no-such-item", "positive", "ann"],
         [item, "positive", "ann"], [item, "negative", "bob"]],
    )  # fmt: skip
    annotate(cfg, quiet=True)
    msgs = "\n".join(r.getMessage() for r in caplog.records)
    assert f"line 2, item {item}: 'not positive' is not a label" in msgs
    assert "'no-such-item' (line 3) is not in the items file" in msgs
    assert f"item {item} was answered 'positive' on line 4 and 'negative' on line 5" in msgs
    task = _tasks(cfg).set_index("item_id").loc[item]
    assert task["label"] == "0" and task["answered_by"] == "bob" and task["line"] == 5
    # a later correction of an answered item replaces its label, logged, not paid again
    caplog.clear()
    _write_answers(path, [[item, "positive", "carol"]], mode="a")
    time.sleep(0.01)
    os.utime(path)
    annotate(cfg, quiet=True)
    msgs = "\n".join(r.getMessage() for r in caplog.records)
    assert f"item {item} is now 'positive' (line 6), replacing 'negative' (line 5)" in msgs
    task = _tasks(cfg).set_index("item_id").loc[item]
    assert task["label"] == "1" and task["answered_by"] == "carol"
    ex = export_frame(cfg).set_index("item_id")
    assert ex.loc[item, "label"] == "1" and ex.loc[item, "human_by"] == "carol"
    con = sqlite3.connect(cfg.ledger_path)
    n = con.execute("SELECT count(*) FROM calls WHERE annotator='alice' AND item_id=?", (item,))
    assert n.fetchone()[0] == 1
    con.close()


@pytest.mark.parametrize("bad", ["yes", "1.0", "positive negative"])
def test_garbage_answers_keep_the_task_pending(tmp_path, shared_data_dir, bad) -> None:
    cfg = load_project(write_project(tmp_path, _cascade(shared_data_dir, n=4)))
    (item,) = annotate(cfg, quiet=True).waiting_for
    _write_answers(cfg.queue_dir / "answers.csv", [[item, bad, "x"]])
    s = annotate(cfg, quiet=True)
    assert s.status == "pending" and s.waiting_for == [item]
    assert status(cfg)["held_for_humans"] == "0.5"


def test_money_is_exact_in_status_and_export(tmp_path, shared_data_dir) -> None:
    """Calls at 0.1 under a budget of 0.3: status says 0.3, never 0.30000000000000004."""
    assert sum([0.1] * 3) != 0.3  # what float sums would show
    data = {"name": "m", "method": "random", "features": "light", "seed": 1,
            "items": sst2_items(shared_data_dir, 3), "task": SST2_TASK,
            "budget": {"limit": 0.3}, "human_price": 0.1,
            "annotators": [{**LOCAL[0], "price": 0.1}]}  # fmt: skip
    proj = write_project(tmp_path, data)
    assert quorum_here("annotate", str(proj), "--quiet").returncode == 0
    res = quorum_here("status", str(proj), "--json")
    assert res.returncode == 0, res.stderr
    st = json.loads(res.stdout)
    con = sqlite3.connect(tmp_path / ".quorum" / "ledger.sqlite")
    n_paid = con.execute("SELECT count(*) FROM calls WHERE status='ok'").fetchone()[0]
    con.close()
    assert n_paid == 3
    assert st["spent"] == "0.3" and st["left"] == "0" and st["budget"] == "0.3"
    assert "spent $0.3 | budget left $0" in st["line"]
    ex = export_frame(load_project(proj))
    assert Decimal(st["spent"]) == sum(Decimal(str(c)) for c in ex["cost"])


@pytest.mark.parametrize("setting", ["dollars", "auditor"])
def test_audit_check_with_a_team_answering_while_the_run_waits(
    tmp_path, shared_data_dir, monkeypatch, setting
) -> None:
    """The default router's audit "check" (issue 14) through the live path, in both
    settings: its sample's human tasks go to a scripted team while the run waits, and the
    run decides only when the answers are in. Its labels, human items and spend equal those
    of the same project whose human is the gold column answering on demand; every answer is
    paid once."""
    import quorum.routing.quorum.router as qr

    infos: list[dict] = []
    route = qr.QuorumRouter.route

    def spy(self, *args, **kwargs):
        res = route(self, *args, **kwargs)
        infos.append(dict(res.info))
        return res

    monkeypatch.setattr(qr.QuorumRouter, "route", spy)
    # a sample of 4 humans is enough to decide here (40 by default), so 200 items do
    # the checks' share of before issue 38 (its "auto" checks take 17 of the auditor's 60
    # human labels, and the router then plans without the audit check this test is about)
    budget, limit = {"limit": 1.2, "quality_checks": 0.03}, "1.2"
    if setting == "auditor":  # 60 human labels and the cheapest LLM on every item
        budget, limit = {"setting": "auditor", "human_limit": 60, "limit": 1.3,
                         "quality_checks": 0.03}, "1.3"  # fmt: skip
    base = {"name": "chk", "features": "light", "seed": 3, "task": SST2_TASK,
            "budget": budget, "human_price": 0.02,
            # confidence 0.5: the sample is always bought (SST-2's LLM is mostly right, so
            # by default its calibration would settle the plan without one, issue 39)
            "method_params": {"dollars_strategy": "audit", "audit_check_min": 4,
                              "audit_check_confidence": 0.5}}  # fmt: skip
    gold_proj, team_proj = _gold_and_team(tmp_path, shared_data_dir, base, 200)
    s_gold = annotate(load_project(gold_proj), quiet=True)
    assert s_gold.status == "finished"
    check = infos[-1]["audit_check"]
    assert infos[-1][f"{setting}_audit_plan"] == check["plan"] and check["humans"] >= 4
    cfg = load_project(team_proj)
    team = Team(cfg.queue_dir, _gold(shared_data_dir))
    try:
        r = quorum("annotate", str(team_proj), "--wait", "90")
        assert r.returncode == 0, r.stderr[-3000:]
        assert "run 1: finished" in r.stdout, r.stdout
        # the team answered while the run went on: tasks were outstanding at some point
        # (whether the run also had to stop and wait depends on how fast the machine routes;
        # tasks are sent ahead, so under load the team can keep up and no wait is logged)
        assert re.search(r"people: [1-9]\d* task\(s\) pending", r.stderr), r.stderr[-3000:]
    finally:
        team.close()
    tasks = _tasks(cfg)
    assert len(tasks) > check["humans"] and (tasks["status"] == "answered").all()
    human_calls = _human_calls(cfg)
    assert len(human_calls) == len(tasks) and (human_calls["cost"] == 0.02).all()
    st = status(cfg)
    assert st["held_for_humans"] == "0" and st["labels_final"] and st["labelled"] == 200
    assert Decimal(st["spent"]) <= Decimal(limit)
    assert st["spent"] == status(load_project(gold_proj))["spent"]
    # the router's decision and its counts are kept with the run (provenance)
    decided = st["router_decisions"]
    assert decided[f"{setting}_audit_plan"] == check["plan"]
    assert decided["audit_check"] == check and "label_model" in decided
    assert decided["llm_sample"]["humans_only"] is False  # the sample came before the check
    la = export_frame(load_project(gold_proj)).set_index("item_id")
    lb = export_frame(cfg).set_index("item_id")
    assert la["label"].equals(lb["label"]) and la["human"].equals(lb["human"])
