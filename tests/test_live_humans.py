"""The human arm: file queue out, answers back in, pending items, --wait."""

from __future__ import annotations

import csv
import threading
import time

import pandas as pd

from live_servers.fixtures import SST2_TASK, sst2_items, write_project
from quorum.live.config import load_project
from quorum.live.runner import annotate, export, export_frame, status


def _project(tmp, data_dir, n=8) -> dict:
    return {
        "name": "h",
        "method": "live_servers.routers:CascadeRouter",
        "method_params": {"human_every": 3},
        "features": "light",
        "items": {**sst2_items(data_dir, n), "gold_column": None},
        "task": {**SST2_TASK, "instructions": "Is the review positive?"},
        "budget": {"limit": 5.0},
        "annotators": [
            {"name": "kw", "kind": "model", "model": "live_servers.models:keyword_sentiment"},
            {"name": "alice", "kind": "human", "price": 0.5},
        ],
    }


def _write_answers(path, rows) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["item_id", "label", "annotator"])
        w.writerows(rows)


def test_queue_pending_then_answers(tmp_path, shared_data_dir) -> None:
    cfg = load_project(write_project(tmp_path, _project(tmp_path, shared_data_dir)))
    s1 = annotate(cfg, quiet=True)
    assert s1.status == "pending" and s1.pending_humans == 3
    pending = pd.read_csv(cfg.queue_dir / "pending.csv", dtype=str)
    assert list(pending.columns) == ["item_id", "text", "instructions", "choices"]
    assert len(pending) == 3
    assert (pending["instructions"] == "Is the review positive?").all()
    assert pending["choices"].iloc[0] == '["negative", "positive"]'
    st = status(cfg)
    assert st["held_for_humans"] == 1.5 and len(st["pending_humans"]) == 3
    ex = export_frame(cfg)
    assert ex["pending_human"].sum() == 3

    ids = pending["item_id"].tolist()
    _write_answers(
        cfg.queue_dir / "answers.csv",
        [[ids[0], "positive", "ann"], [ids[1], "0", ""], [ids[2], "maybe?", "bob"]],
    )
    s2 = annotate(cfg, quiet=True)
    assert s2.status == "pending" and s2.pending_humans == 1  # "maybe?" is not a label
    left = pd.read_csv(cfg.queue_dir / "pending.csv", dtype=str)
    assert left["item_id"].tolist() == [ids[2]]
    ex = export_frame(cfg).set_index("item_id")
    assert ex.loc[ids[0], "label"] == "1" and ex.loc[ids[0], "human"]
    assert ex.loc[ids[1], "label"] == "0"
    assert ex.loc[ids[2], "pending_human"]
    # money: answered and pending human calls both cost their price, once
    assert status(cfg)["spent"] == 1.5

    _write_answers(cfg.queue_dir / "answers.csv", [[ids[2], "negative", "bob"]])
    s3 = annotate(cfg, quiet=True)
    assert s3.status == "finished" and s3.pending_humans == 0
    out = export(cfg, "csv", tmp_path / "labels.csv")
    df = pd.read_csv(out, dtype=str)
    assert len(df) == 8 and df["label"].notna().all()


def test_wait_polls_for_answers(tmp_path, shared_data_dir) -> None:
    cfg = load_project(write_project(tmp_path, _project(tmp_path, shared_data_dir, n=6)))
    result = {}

    def run() -> None:
        result["s"] = annotate(cfg, quiet=True, wait=60, poll_every=0.2)

    th = threading.Thread(target=run)
    th.start()
    pend = cfg.queue_dir / "pending.csv"
    end = time.monotonic() + 60
    while time.monotonic() < end and not pend.is_file():
        time.sleep(0.1)
    ids = pd.read_csv(pend, dtype=str)["item_id"].tolist()
    assert ids
    _write_answers(cfg.queue_dir / "answers.csv", [[i, "1", "carol"] for i in ids])
    th.join(timeout=90)
    assert not th.is_alive()
    s = result["s"]
    assert s.status == "finished" and s.passes >= 2 and s.pending_humans == 0
