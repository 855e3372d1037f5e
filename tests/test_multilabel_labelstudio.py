"""Multi-label people in Label Studio: check boxes over the options, two scripted people per
item (one noisy), their answers read back as label sets and voted; and the issue's live run:
SmolLM2 behind llama.cpp and those two people in Label Studio (k = 2), every item labelled,
the budget kept, the export read back by `datasets`."""

from __future__ import annotations

import json
import sqlite3
import time

import pandas as pd
import pytest

from quorum.data.schema import TaskType
from quorum.live.humans.queue import HumanTask
from quorum.live.labelstudio.client import LabelStudioClient
from quorum.live.labelstudio.page import label_config, shown
from quorum.live.labelstudio.queue import LabelStudioHumanQueue
from quorum.tasks.base import ItemView
from quorum.tasks.multilabel import LabelSetVote, decode
from quorum.tasks.registry import kind_of
from test_labelstudio import (  # noqa: F401 - the real Label Studio and llama.cpp fixtures
    ITEM_KEY,
    TOKEN_ENV,
    server,
    smollm2,
)

pytestmark = pytest.mark.labelstudio

LABELS = ["care", "equality", "non-moral", "purity"]


def test_label_config_is_check_boxes():
    cfg = label_config(kind_of("multilabel", LABELS))
    assert 'choice="multiple"' in cfg and 'value="$options"' in cfg


def _answer(srv, user, task_id: int, choices: list[str]) -> None:
    c = LabelStudioClient(srv.url, user.pat)
    r = {"from_name": "labels", "to_name": "text", "type": "choices",
         "value": {"choices": [shown(x) for x in choices]}}  # fmt: skip
    try:
        c.request("POST", f"/api/tasks/{task_id}/annotations/", json={"result": [r]})
    finally:
        c.close()


def test_two_people_per_item_read_back_as_sets(server):  # noqa: F811
    alice, bob = server.users
    client = LabelStudioClient(server.url, server.admin.token)
    q = LabelStudioHumanQueue(
        client, "multilabel", TaskType.multilabel, LABELS, overlap=2, check_every=0.2
    )
    gold = {"m0": ["care", "purity"], "m1": ["non-moral"]}
    q.submit([HumanTask(ItemView(i, f"text {i}"), "Tick every label that applies.", LABELS)
              for i in gold])  # fmt: skip
    tid = {i: t.task_id for i, t in q._tasks.items()}
    for i, g in gold.items():
        _answer(server, alice, tid[i], g)  # careful
        time.sleep(0.05)
        _answer(server, bob, tid[i], ["equality"])  # noisy
        time.sleep(0.05)
    assert q.wait(30) is True
    rows = q.poll_all()
    kind = kind_of("multilabel", LABELS)
    for i, g in gold.items():
        got = {a.by: a.raw for a in rows[i]}
        assert got[alice.email] == kind.encode(g)
        assert got[bob.email] == kind.encode(["equality"])
        # the careful person trusted more (a human weight against an LLM's): her set wins
        vote = LabelSetVote(tuple(LABELS), w_human=2.0, w_llm=1.0)
        y, _ = vote.vote({"alice": got[alice.email], "bob": got[bob.email]}, lambda a: a == "alice")
        assert decode(y) == set(g)
    q.close()


@pytest.mark.slow
@pytest.mark.realdata
def test_live_run_with_smollm2_and_two_people_in_label_studio(
    server,  # noqa: F811
    smollm2,  # noqa: F811
    tmp_path,
    shared_data_dir,
    monkeypatch,
):
    """The issue's done-when run: `[task] type = "multilabel"`, SmolLM2 (constrained to a
    JSON list by a grammar) and a team of two in Label Studio with two labels per item:
    alice ticks the gold set, bob always ticks purity alone; a tenth of the items are
    control items (gold), so each person's reliability per label is checked. Every item is
    labelled, the budget kept, the vote takes alice's set wherever they differ, and the
    Hugging Face export loads with `datasets` as Sequence(ClassLabel)."""
    import datasets

    from live_servers.fixtures import write_project
    from quorum.live.outputs.hf import write_hf
    from quorum.live.outputs.status import status
    from quorum.live.project.config import load_project
    from quorum.live.run.runner import annotate

    alice, bob = server.users
    monkeypatch.setenv(TOKEN_ENV, server.admin.token)
    df = pd.read_parquet(shared_data_dir / "mfrc_multilabel" / "items.parquet")
    df = df[[set(g) <= set(LABELS) and len(g) > 0 for g in df["gold"]]].head(10)
    gold = {i: sorted(g) for i, g in zip(df["item_id"], df["gold"], strict=True)}
    items = tmp_path / "items.csv"
    df.assign(gold=[";".join(g) for g in df["gold"]]).to_csv(items, index=False)
    limit = 1.2
    title = "mfrc-live"
    cfg = load_project(write_project(tmp_path, {
        "name": title, "method": "quorum", "features": "light",
        "items": {"path": str(items), "gold_column": "gold"},
        "task": {"type": "multilabel", "labels": LABELS, "min_labels": 1},
        "budget": {"limit": limit},
        "annotators": [
            {"name": "smollm2", "model": "openai/smollm2", "api_base": smollm2, "price": 0.01,
             "max_tokens": 24, "temperature": 0, "seed": 0, "timeout": 60},
            {"name": "team", "kind": "human", "price": 0.1},
        ],
        "human": "team",
        "humans": {"labels_per_item": 2, "backend": "labelstudio",
                   "labelstudio": {"url": server.url, "token_env": TOKEN_ENV, "project": title}},
    }))  # fmt: skip
    look = LabelStudioHumanQueue(
        LabelStudioClient(server.url, server.admin.token), title, TaskType.multilabel, LABELS,
        overlap=2,
    )  # fmt: skip
    s = annotate(cfg, quiet=True)
    for _ in range(30):
        if s.status == "finished":
            break
        tasks = {t["data"][ITEM_KEY]: t for t in look.project.pages("all")}
        for item in s.waiting_for:
            tid = int(tasks[item]["id"])
            done = {a["completed_by"] for a in tasks[item].get("annotations") or []}
            if alice.id not in done:
                _answer(server, alice, tid, gold[item])
            if bob.id not in done:
                _answer(server, bob, tid, ["purity"])  # noisy
        s = annotate(cfg, quiet=True)
    look.close()
    assert s.status == "finished"
    st = status(cfg)
    spent = float(st["spent"])
    assert spent <= limit + 1e-9 and float(st["held_for_humans"]) == 0
    con = sqlite3.connect(cfg.ledger_path)
    calls = pd.read_sql_query("SELECT * FROM calls", con)
    votes = pd.read_sql_query("SELECT item_id, label FROM human_queue", con)
    con.close()
    llm = calls[(calls["annotator"] == "smollm2") & (calls["kind"] == "annotate")]
    assert len(llm) >= 1 and "grammar" in json.loads(llm["params"].iloc[0])
    kind = kind_of("multilabel", LABELS, min_labels=1)
    assert len(votes) >= 2  # people were asked, two labels each
    for r in votes.itertuples():  # alice's set wins wherever bob's differs
        assert kind.label_set(r.label) == set(gold[r.item_id]), r
    out = write_hf(cfg, tmp_path / "hf")
    ds = datasets.load_from_disk(str(out))
    feat = ds.features["label"]
    assert isinstance(feat, datasets.Sequence) and feat.feature.names == LABELS
    assert len(ds) == len(gold) and all(len(v) >= 1 for v in ds["label"])  # every item
    people = {p["person"]: p for p in st["human_team"]}
    assert set(people) == {alice.email, bob.email}
    print(
        f"multilabel live: {len(ds)}/{len(gold)} items labelled, {len(votes)} human tasks x 2 "
        f"labels, {len(llm)} SmolLM2 calls ({int((llm['status'] == 'ok').sum())} parsed), "
        f"spent ${st['spent']} of ${limit}; reliability alice "
        f"{people[alice.email]['accuracy']:.3f}, bob {people[bob.email]['accuracy']:.3f}"
    )
