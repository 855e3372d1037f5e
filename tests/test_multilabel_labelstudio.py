"""Multi-label people in Label Studio: check boxes over the options, two scripted people per
item (one noisy), their answers read back as label sets and voted."""

from __future__ import annotations

import time

import pytest

from quorum.data.schema import TaskType
from quorum.live.humans.queue import HumanTask
from quorum.live.labelstudio.client import LabelStudioClient
from quorum.live.labelstudio.page import label_config, shown
from quorum.live.labelstudio.queue import LabelStudioHumanQueue
from quorum.tasks.base import ItemView
from quorum.tasks.multilabel import LabelSetVote, decode
from quorum.tasks.registry import kind_of
from test_labelstudio import server  # noqa: F401 - the real Label Studio fixture

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
