"""Issue 28's live paths, live: a real Label Studio (one server for the module, three scripted
people answering through its API) and the real llama.cpp SmolLM2 server.

- an answer outside the label set ("neutral") does not hold its task past humans.timeout;
- k = humans.labels_per_item caps what a task pays: a third person's label is recorded,
  not paid;
- `quorum labelstudio users` creates annotator accounts and tokens on a running server;
- the annotators' task list hides QUORUM's bookkeeping columns;
- the prompt SmolLM2 is sent is the prompt written (task.instructions are not added).
"""

from __future__ import annotations

import csv
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

import httpx
import pandas as pd
import pytest

from live_servers.fixtures import (
    SST2_TASK,
    quorum,
    sst2_items,
    write_project,
)
from quorum.data.schema import TaskType
from quorum.live.humans.queue import HumanTask
from quorum.live.labelstudio.client import LabelStudioClient, LabelStudioError
from quorum.live.labelstudio.page import HIDDEN_COLUMNS, ITEM_KEY, TASK_LIST_TITLE, shown
from quorum.live.labelstudio.queue import LabelStudioHumanQueue
from quorum.live.labelstudio.server import LabelStudioServer, find_label_studio
from quorum.live.outputs.export import export_frame
from quorum.live.outputs.status import status
from quorum.live.project.config import load_project
from quorum.live.run.runner import annotate
from quorum.tasks.base import ItemView

pytestmark = [pytest.mark.labelstudio, pytest.mark.realdata]

TOKEN_ENV = "QUORUM_TEST_LS_TOKEN"
NAMES = {"0": "negative", "1": "positive"}
#: seconds a task someone opened stays locked to them (Label Studio's TASK_LOCK_TTL)
LOCK_TTL = 8


@pytest.fixture(scope="module")
def server():
    if find_label_studio() is None:
        pytest.skip("Label Studio is not installed: run `make labelstudio`")
    data = Path(tempfile.mkdtemp(prefix="quorum-labelstudio-trial-"))
    srv = LabelStudioServer(data, lock_ttl=LOCK_TTL)
    try:
        srv.start()
        srv.users = srv.create_users(["ann@example.org", "bea@example.org", "cat@example.org"])
        yield srv
    finally:
        srv.stop()
        shutil.rmtree(data, ignore_errors=True)


def _answer(server, user, task_id: int, choice: str) -> None:
    c = LabelStudioClient(server.url, user.pat)
    r = {"from_name": "label", "to_name": "text", "type": "choices",
         "value": {"choices": [shown(choice)]}}  # fmt: skip
    try:
        c.request("POST", f"/api/tasks/{task_id}/annotations/", json={"result": [r]})
    finally:
        c.close()


def _tasks(server, title: str) -> dict[str, dict]:
    q = LabelStudioHumanQueue(LabelStudioClient(server.url, server.admin.token), title,
                              TaskType.classification, ["0", "1"])  # fmt: skip
    try:
        return {t["data"][ITEM_KEY]: t for t in q.project.pages("all")}
    finally:
        q.client.close()


def _sql(cfg, q: str) -> pd.DataFrame:
    con = sqlite3.connect(cfg.ledger_path)
    try:
        return pd.read_sql_query(q, con)
    finally:
        con.close()


def _project(folder: Path, data_dir: Path, server, title: str, n: int, **humans) -> Path:
    return write_project(folder, {
        "name": title, "method": "live_servers.routers:CascadeRouter",
        "method_params": {"batch": 3, "human_every": 2, "confidence_every": 0},
        "features": "light", "items": sst2_items(data_dir, n),
        "task": {**SST2_TASK, "instructions": "Is the movie review positive?"},
        "budget": {"limit": 2.0, "quality_checks": 0},
        "annotators": [
            {"name": "kw", "kind": "model", "model": "live_servers.models:keyword_sentiment"},
            {"name": "team", "kind": "human", "price": 0.05},
        ],
        "humans": {"backend": "labelstudio",
                   "labelstudio": {"url": server.url, "token_env": TOKEN_ENV, "project": title},
                   **humans},
    })  # fmt: skip


def test_an_answer_outside_the_labels_does_not_hold_the_timeout(
    server, tmp_path, shared_data_dir, monkeypatch, caplog
) -> None:
    """Item 4: a person posts "neutral" (Label Studio takes it); QUORUM says it is not a
    label and, at humans.timeout, expires the task like an unanswered one. Before, the task
    stayed pending past the timeout, across runs, until a valid label came."""
    ann = server.users[0]
    monkeypatch.setenv(TOKEN_ENV, server.admin.token)
    cfg = load_project(_project(tmp_path, shared_data_dir, server, "neutral", 6, timeout="4s"))
    s = annotate(cfg, quiet=True)
    assert s.status == "pending"
    (first,) = s.waiting_for
    _answer(server, ann, int(_tasks(server, "neutral")[first]["id"]), "neutral")
    caplog.set_level("INFO", logger="quorum.live")
    t0 = time.monotonic()
    s = annotate(cfg, quiet=True, wait=90)
    assert "'neutral' is not a label" in caplog.text
    hq = _sql(cfg, "SELECT item_id, status, note FROM human_queue").set_index("item_id")
    assert hq.loc[first, "status"] == "expired", hq
    assert "humans.timeout" in hq.loc[first, "note"]
    assert s.status == "finished" and s.pending_humans == 0
    assert time.monotonic() - t0 < 80
    assert (_sql(cfg, "SELECT cost FROM calls WHERE annotator='team'")["cost"] == 0).all()
    assert status(cfg)["held_for_humans"] == "0"


def test_k_caps_what_a_task_pays(server, tmp_path, shared_data_dir, monkeypatch, caplog) -> None:
    """Item 9: Label Studio lets three people annotate a task of maximum_annotations = 2
    (it happened within a second in the trial); the third label is recorded, not paid."""
    ann, bea, cat = server.users
    monkeypatch.setenv(TOKEN_ENV, server.admin.token)
    cfg = load_project(_project(tmp_path, shared_data_dir, server, "three", 4,
                                labels_per_item=2))  # fmt: skip
    s = annotate(cfg, quiet=True)
    (first,) = s.waiting_for
    tid = int(_tasks(server, "three")[first]["id"])
    for who in (ann, bea, cat):
        _answer(server, who, tid, "positive")
    caplog.set_level("INFO", logger="quorum.live")
    annotate(cfg, quiet=True)
    slots = _sql(cfg, f"SELECT * FROM human_labels WHERE item_id='{first}' ORDER BY slot")
    assert slots["person"].tolist() == [u.email for u in (ann, bea, cat)]
    assert slots["status"].tolist() == ["answered", "answered", "extra"]
    paid = _sql(cfg, f"SELECT cost FROM calls WHERE annotator='team' AND item_id='{first}'")
    assert paid["cost"].sum() == pytest.approx(0.10)
    assert "beyond the 2 wanted" in caplog.text and "is paid and used" not in caplog.text
    ex = export_frame(cfg).set_index("item_id")
    assert [h["by"] for h in ex.loc[first, "human_labels"]] == slots["person"].tolist()


def test_users_command_and_task_list_columns(server, tmp_path) -> None:
    """Item 11: `quorum labelstudio users` makes annotator accounts with tokens on the
    running server; the project's task list hides QUORUM's bookkeeping columns."""
    out = tmp_path / "people.csv"
    res = quorum("labelstudio", "users", "dan@example.org", "eve@example.org", "--data-dir",
                 str(server.data_dir), "--url", server.url, "--out", str(out))  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    assert out.stat().st_mode & 0o077 == 0
    rows = list(csv.DictReader(out.open()))
    assert [r["email"] for r in rows] == ["dan@example.org", "eve@example.org"]
    for r in rows:
        assert r["personal_access_token"] not in res.stdout + res.stderr
        c = LabelStudioClient(server.url, r["personal_access_token"])
        assert c.request("GET", "/api/current-user/whoami")["email"] == r["email"]
        c.close()
        login = httpx.Client(base_url=server.url, follow_redirects=True, timeout=30)
        page = login.get("/user/login/")
        csrf = login.cookies.get("csrftoken")
        done = login.post("/user/login/", data={"email": r["email"], "password": r["password"],
                                                "csrfmiddlewaretoken": csrf},
                          headers={"Referer": f"{server.url}/user/login/"})  # fmt: skip
        assert page.status_code == 200 and "/user/login" not in str(done.url)
        login.close()
    bad = quorum("labelstudio", "users", "x@example.org", "--data-dir", str(tmp_path))
    assert bad.returncode == 2 and "no Label Studio database" in bad.stderr
    assert "Traceback" not in bad.stderr

    # an account the command made can be QUORUM's own (the lead's token, issue 38): it
    # creates the project and its task list
    lead = rows[0]["personal_access_token"]
    q = LabelStudioHumanQueue(LabelStudioClient(server.url, lead), "columns",
                              TaskType.classification, ["0", "1"])  # fmt: skip
    q.submit([HumanTask(ItemView("l1", "the lead's token"), "", ["negative", "positive"])])
    assert "l1" in q._tasks
    views = q.client.request("GET", "/api/dm/views/", params={"project": q.project_id})
    ours = [v for v in views if v["data"].get("title") == TASK_LIST_TITLE]
    assert len(ours) == 1
    hidden = ours[0]["data"]["hiddenColumns"]["explore"]
    assert {f"tasks:data.{c}" for c in HIDDEN_COLUMNS} <= set(hidden)
    assert "tasks:data.text" not in hidden
    q2 = LabelStudioHumanQueue(LabelStudioClient(server.url, server.admin.token), "columns",
                               TaskType.classification, ["0", "1"])  # fmt: skip
    assert q2.project_id == q.project_id  # found again: no second tab
    views = q2.client.request("GET", "/api/dm/views/", params={"project": q.project_id})
    assert len([v for v in views if v["data"].get("title") == TASK_LIST_TITLE]) == 1
    q.client.close()
    q2.client.close()


# -- issue 38: nobody's work lost, nobody held up --------------------------------------------
def _next(server, user, project_id: int) -> dict | None:
    """The task Label Studio's label stream hands ``user`` (and locks to them), or None."""
    c = LabelStudioClient(server.url, user.pat)
    try:
        t = c.request("GET", f"/api/projects/{project_id}/next")
    except LabelStudioError as exc:
        if "404" in str(exc):
            return None
        raise
    finally:
        c.close()
    return t if t and t.get("id") is not None else None


def test_a_withdrawn_task_keeps_the_work_of_whoever_has_it_open(
    server, tmp_path, shared_data_dir, monkeypatch, caplog
) -> None:
    """A person opens a task; QUORUM withdraws it at humans.timeout while they work. The
    task is taken out of the label stream, not deleted: their submit is taken (before:
    "404 No Task matches", the work lost), and QUORUM records it as a late answer, paid
    and used."""
    ann, bea, _cat = server.users
    monkeypatch.setenv(TOKEN_ENV, server.admin.token)
    cfg = load_project(_project(tmp_path, shared_data_dir, server, "withdrawn", 6, timeout="3s"))
    s = annotate(cfg, quiet=True)
    (first,) = s.waiting_for
    pid = LabelStudioHumanQueue(LabelStudioClient(server.url, server.admin.token), "withdrawn",
                                TaskType.classification, ["0", "1"]).project_id  # fmt: skip
    opened = _next(server, ann, pid)
    assert opened is not None and opened["data"][ITEM_KEY] == first
    time.sleep(3.5)
    annotate(cfg, quiet=True)  # past the timeout: withdrawn, the item planned without
    hq = _sql(cfg, "SELECT item_id, status FROM human_queue").set_index("item_id")
    assert hq.loc[first, "status"] == "expired"
    kept = _tasks(server, "withdrawn")
    assert first in kept and kept[first]["is_labeled"]  # out of the stream, not deleted
    nxt = _next(server, bea, pid)
    assert nxt is None or nxt["data"][ITEM_KEY] != first
    _answer(server, ann, int(opened["id"]), "positive")  # no 404: her label is taken
    caplog.set_level("INFO", logger="quorum.live")
    annotate(cfg, quiet=True)
    slots = _sql(cfg, f"SELECT person, status FROM human_labels WHERE item_id='{first}'")
    late = slots[slots["status"] == "late"]
    assert late["person"].tolist() == [ann.email], slots
    assert "is paid and used" in caplog.text


def test_an_abandoned_task_is_handed_on_after_the_lock_ttl(
    server, tmp_path, shared_data_dir, monkeypatch
) -> None:
    """Two labels wanted, three people: ann opens the task and walks away, bea labels it.
    Label Studio keeps it locked to ann for TASK_LOCK_TTL (24 h unless set: the trial's
    two others sat idle); the servers QUORUM starts set it (here 8 s), after which cat gets
    the task and the item has its two labels."""
    ann, bea, cat = server.users
    monkeypatch.setenv(TOKEN_ENV, server.admin.token)
    cfg = load_project(_project(tmp_path, shared_data_dir, server, "abandoned", 4,
                                labels_per_item=2))  # fmt: skip
    s = annotate(cfg, quiet=True)
    (first,) = s.waiting_for
    q = LabelStudioHumanQueue(LabelStudioClient(server.url, server.admin.token), "abandoned",
                              TaskType.classification, ["0", "1"], overlap=2)  # fmt: skip
    pid = q.project_id
    held = _next(server, ann, pid)
    assert held is not None and held["data"][ITEM_KEY] == first
    t0 = time.monotonic()
    got = _next(server, bea, pid)
    assert got is not None and int(got["id"]) == int(held["id"])
    _answer(server, bea, int(got["id"]), "positive")
    assert _next(server, cat, pid) is None  # ann's lock and bea's label fill the two
    time.sleep(max(0.0, LOCK_TTL + 1 - (time.monotonic() - t0)))
    again = _next(server, cat, pid)
    assert again is not None and int(again["id"]) == int(held["id"])
    _answer(server, cat, int(again["id"]), "positive")
    annotate(cfg, quiet=True)
    slots = _sql(cfg, f"SELECT person, status FROM human_labels WHERE item_id='{first}'")
    assert sorted(slots.loc[slots["status"] == "answered", "person"]) == sorted(
        [bea.email, cat.email]
    )


def test_a_check_that_wants_a_third_label_is_handed_to_a_third_person(server) -> None:
    """A random check whose two labels disagree asks one more person: its task's overlap
    is raised, so the label stream hands it to the third person (before: nobody)."""
    ann, bea, cat = server.users
    q = LabelStudioHumanQueue(LabelStudioClient(server.url, server.admin.token), "third",
                              TaskType.classification, ["0", "1"], overlap=2)  # fmt: skip
    task = HumanTask(ItemView("c1", "a check"), "", ["negative", "positive"], wanted=2)
    q.submit([task])
    tid = q._tasks["c1"].task_id
    _answer(server, ann, tid, "positive")
    _answer(server, bea, tid, "negative")
    assert _next(server, cat, q.project_id) is None
    q.submit([HumanTask(task.item, "", task.choices, wanted=3,
                        answered_by=(ann.email, bea.email))])  # fmt: skip
    nxt = _next(server, cat, q.project_id)
    assert nxt is not None and int(nxt["id"]) == tid
    _answer(server, cat, tid, "positive")
    assert sorted(a.by for a in q.poll() if a.item_id == "c1") == sorted(
        u.email for u in (ann, bea, cat)
    )
    q.client.close()


# -- the prompt SmolLM2 is sent ------------------------------------------------------------
@pytest.fixture(scope="module")
def smollm2(smollm2_served):
    """The process's llama.cpp server with SmolLM2 (live_servers.sessions): its API base."""
    return smollm2_served[0]


def test_smollm2_is_sent_the_prompt_as_written(smollm2, tmp_path, shared_data_dir) -> None:
    """Item 1: task.instructions (the Label Studio header) are not put before a prompt the
    user wrote; SmolLM2 answers that prompt (the trial's 63% unreadable answers came with
    the added header; 40 of 40 were read without it)."""
    written = ("Is this movie review negative or positive? Review: {text}\n"
               "Answer with one word: negative or positive.")  # fmt: skip
    (tmp_path / "p.txt").write_text(written)
    cfg = load_project(write_project(tmp_path, {
        "name": "prompted", "method": "live_servers.routers:CascadeRouter",
        "method_params": {"batch": 3, "human_every": 1000, "confidence_every": 0,
                          "second": 0.0},
        "features": "light", "items": sst2_items(shared_data_dir, 12),
        "task": {**SST2_TASK, "instructions": "Is the movie review positive?"},
        "budget": {"limit": 1.0}, "human": "gold",
        "annotators": [{"name": "smol", "model": "openai/smollm2", "api_base": smollm2,
                        "price": 0.001, "temperature": 0, "seed": 0, "max_tokens": 8,
                        "prompt": "p.txt", "concurrency": 2, "timeout": 180,
                        "dead_after": 10}],
    }))  # fmt: skip
    annotate(cfg, quiet=True)
    calls = _sql(cfg, "SELECT item_id, prompt, status, error FROM calls WHERE annotator='smol'")
    assert (calls["status"] != "failed").all(), calls["error"].tolist()
    texts = pd.read_csv(shared_data_dir / "sst2_dev" / "sst2_dev.csv", dtype=str)
    text = dict(zip(texts["idx"], texts["sentence"], strict=True))
    assert len(calls) == 12
    for r in calls.itertuples():
        assert r.prompt == written.format(text=text[r.item_id])  # nothing added
    ok = (calls["status"] == "ok").mean()
    print(f"SmolLM2 with the prompt as written: {ok:.0%} of {len(calls)} answers parsed")
    assert ok >= 0.8
