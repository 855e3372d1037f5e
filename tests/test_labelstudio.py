"""Label Studio as the human arm: a real server on 127.0.0.1 (its own venv, a temporary data
folder), annotators answering through its API as two different users and through its web page
in headless Chromium, `quorum annotate` with a local LLM server, kill -9 and resume, hostile
item text, and the API token never written anywhere.

`make test` creates ``.venv-labelstudio`` (``make labelstudio``) and installs Chromium; the
server tests are skipped where Label Studio is not installed (run ``pytest -m "not
labelstudio"`` for the quick suite).
"""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from live_servers.fixtures import (
    ROOT,
    SST2_TASK,
    FakeServer,
    env,
    sst2_items,
    write_project,
)
from live_servers.sessions import LabelStudioView, label_studio_users
from quorum.data.schema import TaskType
from quorum.errors import ConfigError
from quorum.live.humans.queue import HumanAnswer, HumanTask
from quorum.live.labelstudio.client import LabelStudioClient, LabelStudioError
from quorum.live.labelstudio.page import ITEM_KEY, label_config, project_title, shown, unshown
from quorum.live.labelstudio.queue import LabelStudioHumanQueue
from quorum.live.labelstudio.server import LabelStudioServer
from quorum.live.outputs.export import export_frame
from quorum.live.outputs.status import status
from quorum.live.project.config import load_project
from quorum.live.run.runner import annotate
from quorum.tasks.base import ItemView
from quorum.tasks.classification import match_label

pytestmark = pytest.mark.labelstudio

LABELS = ["0", "1"]
NAMES = {"0": "negative", "1": "positive"}
HOSTILE = (
    '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
    '<b id="hostile-bold">bold</b> $text &amp; {{text}} end'
)
TOKEN_ENV = "QUORUM_TEST_LS_TOKEN"
# a choice's text as a person reads it: without the word joiner after `$` and the hotkey hint
SHOWN = r"l.innerText.replace(/\u2060/g, '').replace(/\[\d+\]$/, '').trim()"


# -- no server needed -----------------------------------------------------------------
def test_label_config_holds_no_project_text() -> None:
    for tt in TaskType:
        cfg = label_config(tt, instructions=True)
        assert '<Text name="text" value="$text"/>' in cfg
        assert '<Header value="$instructions"/>' in cfg
        assert "$instructions" not in label_config(tt, instructions=False)
    assert 'value="$options"' in label_config(TaskType.classification)
    assert "<TextArea" in label_config(TaskType.summarization)
    # `$name` in an option would be read as a data reference: a word joiner keeps it as text
    assert shown("$5 or $text") != "$5 or $text" and unshown(shown("$5 or $text")) == "$5 or $text"
    assert project_title("mc") == "mc (QUORUM)" and project_title("sst2") == "sst2"
    long = [project_title("x" * 60 + s) for s in "ab"]
    assert long[0] != long[1] and all(len(t) == 50 for t in long)


def test_config_switch_and_token_from_environment(tmp_path, monkeypatch) -> None:
    data = tmp_path / "items.csv"
    pd.DataFrame({"item_id": ["a", "b"], "text": ["good", "bad"]}).to_csv(data, index=False)
    proj = write_project(
        tmp_path,
        {
            "name": "cfg",
            "items": {"path": str(data)},
            "task": SST2_TASK,
            "budget": {"limit": 1.0},
            "annotators": [
                {"name": "kw", "kind": "model", "model": "live_servers.models:keyword_sentiment"},
                {"name": "team", "kind": "human", "price": 0.1},
            ],
            "humans": {
                "backend": "labelstudio",
                "labelstudio": {"url": "http://127.0.0.1:9", "token_env": TOKEN_ENV},
            },
        },
    )
    cfg = load_project(proj)
    assert cfg.humans.backend == "labelstudio" and cfg.humans.labels_per_item == 1
    # the first names of labels_per_item and timeout are still read
    raw = yaml.safe_load(proj.read_text())
    raw["humans"]["labelstudio"].update(overlap=2, timeout=60)
    old = load_project(write_project(tmp_path / "old", raw))
    assert (old.humans.labels_per_item, old.humans.timeout) == (2, 60.0)
    raw["humans"]["labels_per_item"] = 3
    with pytest.raises(ConfigError, match="disagree"):
        load_project(write_project(tmp_path / "both", raw))
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with pytest.raises(ConfigError, match=TOKEN_ENV):
        LabelStudioHumanQueue.from_config(cfg)
    monkeypatch.setenv(TOKEN_ENV, "s3cret-token-value-xyz")
    q = LabelStudioHumanQueue.from_config(cfg)
    assert "s3cret" not in repr(q) and "s3cret" not in repr(q.client)
    assert "s3cret" not in cfg.model_dump_json()
    # an unreachable server does not stop the run: tasks wait to be pushed, no answers
    q.client.max_retries = 0
    item = ItemView("a", "good")
    q.submit([HumanTask(item, "", ["negative", "positive"])])
    assert q.poll() == [] and list(q._unsent) == ["a"]
    q.client.close()


def test_server_and_token_minter_share_one_secret_key(tmp_path, monkeypatch) -> None:
    """The server and the process that mints personal access tokens must sign with the same
    key: fixed by us, passed to both, kept in ``.env`` (0600) for a restart, and read back
    from an ``.env`` an earlier server left. (CI once ran where Label Studio could not write
    ``.env``: each process drew its own key and every token was refused.)"""
    monkeypatch.setenv("SECRET_KEY", "inherited-from-the-shell")
    monkeypatch.setenv("HEARTEX_BASE_DATA_DIR", "/elsewhere")
    a = LabelStudioServer(tmp_path / "a", executable=sys.executable)
    env_a = a._env()
    key = env_a["SECRET_KEY"]
    assert len(key) >= 40 and key != "inherited-from-the-shell"
    # offline: no look-up of the latest version on PyPI; a task someone opened and left
    # is free again after 10 minutes, not Label Studio's 24 hours (issue 38)
    assert env_a["LATEST_VERSION_CHECK"] == "false" and env_a["TASK_LOCK_TTL"] == "600"
    assert a._env()["SECRET_KEY"] == key and "HEARTEX_BASE_DATA_DIR" not in env_a
    dotenv = tmp_path / "a" / ".env"
    assert dotenv.stat().st_mode & 0o077 == 0
    assert f"SECRET_KEY={key}" in dotenv.read_text()
    # a new server object on the same folder keeps the key (its tokens stay valid)
    assert LabelStudioServer(tmp_path / "a", executable=sys.executable)._env()["SECRET_KEY"] == key
    # where .env cannot be written, the environment still carries one key to both processes
    (tmp_path / "b" / ".env").mkdir(parents=True)
    b = LabelStudioServer(tmp_path / "b", executable=sys.executable)
    assert b._env()["SECRET_KEY"] == b._env()["SECRET_KEY"] != key


# -- a real server ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(label_studio):
    """The process's shared Label Studio (live_servers.sessions) with two annotators;
    QUORUM's own token is the admin's."""
    return LabelStudioView(
        label_studio, label_studio_users(label_studio, ["alice@example.org", "bob@example.org"])
    )


@pytest.fixture(scope="module")
def browser(label_studio_browser):
    """The process's headless Chromium (live_servers.sessions)."""
    return label_studio_browser


def _queue(server, title: str, token: str | None = None, **kw) -> LabelStudioHumanQueue:
    client = LabelStudioClient(server.url, token or server.admin.token)
    tt = kw.pop("task_type", TaskType.classification)
    return LabelStudioHumanQueue(client, title, tt, kw.pop("labels", LABELS), **kw)


def _latest(answers: list[HumanAnswer]) -> dict[str, HumanAnswer]:
    """Each item's latest answer (a later row corrects an earlier one, as the ledger reads
    them)."""
    return {a.item_id: a for a in answers}


def _answer(server, user, task_id: int, choice: str | None = None, text: str | None = None):
    """Submit an annotation through the API as ``user`` (personal access token)."""
    c = LabelStudioClient(server.url, user.pat)
    if text is not None:
        r = {"from_name": "summary", "to_name": "text", "type": "textarea",
             "value": {"text": [text]}}  # fmt: skip
    else:
        r = {"from_name": "label", "to_name": "text", "type": "choices",
             "value": {"choices": [shown(choice or "")]}}  # fmt: skip
    try:
        return c.request("POST", f"/api/tasks/{task_id}/annotations/", json={"result": [r]})
    finally:
        c.close()


def _project_tasks(server, title: str, **kw) -> list[dict]:
    q = _queue(server, title, **kw)
    try:
        return list(q.project.pages("all"))
    finally:
        q.client.close()


def _login(driver, server, user) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.delete_all_cookies()
    driver.get(f"{server.url}/user/login/")
    driver.find_element(By.NAME, "email").send_keys(user.email)
    driver.find_element(By.NAME, "password").send_keys(user.password)
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    WebDriverWait(driver, 30).until(lambda d: "/user/login" not in d.current_url)


def _label_in_browser(driver, server, user, url: str, option: str, look=None):
    """Log in as ``user``, open the task page, choose ``option``, ``look(driver)``, submit."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    _login(driver, server, user)
    driver.get(url)
    wait = WebDriverWait(driver, 60)
    find = (
        f"return [...document.querySelectorAll('label')].find(l => {SHOWN} === arguments[0])"
        " || null;"
    )
    for _ in range(40):  # the page re-renders while it loads: retry stale elements
        try:
            el = wait.until(lambda d: d.execute_script(find, option))
            el.click()
            if el.find_element(By.CSS_SELECTOR, "input").is_selected():
                break
        except StaleElementReferenceException:
            pass
        time.sleep(0.5)
    else:
        raise AssertionError(f"could not choose {option!r} on {url}")
    if look is not None:
        look(driver)
    wait.until(ec.element_to_be_clickable((By.XPATH, "//button[normalize-space(.)='Submit']")))
    driver.find_element(By.XPATH, "//button[normalize-space(.)='Submit']").click()


def _wait_answers(q: LabelStudioHumanQueue, n: int, timeout: float = 60.0) -> dict:
    """Wait (on :meth:`wait`) until ``n`` items have an answer; each item's latest one."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = _latest(q.poll())
        if len(got) >= n:
            return got
        q.wait(min(2.0, max(0.0, end - time.monotonic())))
    raise AssertionError(f"{len(_latest(q.poll()))} answer(s) after {timeout} s, wanted {n}")


def _no_token(root: Path, token: str) -> None:
    needle = token.encode()
    for p in root.rglob("*"):
        if p.is_file():
            assert needle not in p.read_bytes(), f"the API token was written to {p}"


def test_hostile_text_is_shown_as_text(server, browser, tmp_path) -> None:
    alice = server.users[0]
    q = _queue(server, "hostile")
    opts = ['<i>neg</i> & "q"', "$options pos"]
    instr = '<img src=x onerror="window.__pwned=3">Is it positive?'
    q.submit([HumanTask(ItemView("h1", HOSTILE), instr, opts)])
    seen = {}

    def look(driver) -> None:
        driver.save_screenshot(str(tmp_path / "hostile.png"))
        seen.update(
            driver.execute_script(
                "return {pwned: window.__pwned === undefined ? null : window.__pwned,"
                " bold: document.getElementById('hostile-bold') !== null,"
                " text: document.body.innerText,"
                f" labels: [...document.querySelectorAll('label')].map(l => {SHOWN})}}"
            )
        )

    _label_in_browser(browser, server, alice, q.links()["h1"], "$options pos", look)
    assert seen["pwned"] is None and not seen["bold"]
    assert HOSTILE in seen["text"] and instr in seen["text"]
    assert opts[0] in seen["labels"] and opts[1] in seen["labels"]
    got = _wait_answers(q, 1)
    # the chosen option comes back as its label value (by position: never ambiguous)
    assert got["h1"].raw == "1" and got["h1"].by == alice.email
    q.close()


def test_overlap_two_annotators_and_identities(server) -> None:
    alice, bob = server.users
    q = _queue(server, "overlap", overlap=2, check_every=0.2)
    opts = ["negative", "positive"]
    q.submit([HumanTask(ItemView(f"o{k}", f"text {k}"), "", opts) for k in range(4)])
    tid = {i: t.task_id for i, t in q._tasks.items()}
    assert sorted(tid, key=tid.get) == ["o0", "o1", "o2", "o3"]  # pushed in priority order
    assert q.poll() == [] and q.wait(0.5) is False  # nothing answered: wait times out
    _answer(server, bob, tid["o1"], "positive")
    time.sleep(0.05)
    _answer(server, alice, tid["o1"], "negative")
    time.sleep(0.05)
    _answer(server, alice, tid["o2"], " Positive ")  # a label name typed through the API
    time.sleep(0.05)
    _answer(server, bob, tid["o3"], "not positive")  # not a label: returned, never guessed
    t0 = time.monotonic()
    assert q.wait(30) is True and time.monotonic() - t0 < 5
    assert q._answers == {}  # waiting read the server and remembered nothing
    rows = q.poll()  # every annotation, oldest first, with its author
    assert [(a.item_id, a.by, a.raw) for a in rows] == [
        ("o1", bob.email, "1"), ("o1", alice.email, "0"),
        ("o2", alice.email, "Positive"), ("o3", bob.email, "not positive"),
    ]  # fmt: skip
    # the source maps each row exactly, like a row of the file queue's answers.csv
    assert [match_label(a.raw, LABELS, NAMES, opts) for a in rows] == ["1", "0", "1", None]
    assert [(a.by, a.raw) for a in q.poll_all()["o1"]] == [(bob.email, "1"), (alice.email, "0")]
    assert q.poll() == rows and q.wait(0.5) is False  # read again: nothing new
    assert q.pending() == ["o0"]
    q.close()


def test_summaries_and_multiple_choice(server) -> None:
    alice, bob = server.users
    qs = _queue(server, "summaries", task_type=TaskType.summarization, labels=None)
    qs.submit([HumanTask(ItemView("s1", "A long text about <b>cats</b>."), "Summarize.", [])])
    _answer(server, bob, qs._tasks["s1"].task_id, text="Cats.")
    got = _latest(qs.poll())["s1"]
    assert (got.raw, got.by) == ("Cats.", bob.email)
    qs.close()

    mc = ["A", "B", "C"]
    qm = _queue(server, "mc", task_type=TaskType.multiple_choice, labels=mc)
    item = ItemView("m1", "2 + 2 = ?", ("3", "4", "$4 or $5"))
    qm.submit([HumanTask(item, "Pick one.", list(item.choices))])
    stored = _project_tasks(server, "mc")[0]["data"]
    assert stored[ITEM_KEY] == "m1" and [unshown(o["value"]) for o in stored["options"]] == [
        "3", "4", "$4 or $5",
    ]  # fmt: skip
    _answer(server, alice, qm._tasks["m1"].task_id, "$4 or $5")
    got = _latest(qm.poll())["m1"]
    assert got.raw == "C" and match_label(got.raw, mc, {}, list(item.choices)) == "C"
    qm.close()


def test_withdraw_unanswered_after_timeout(server) -> None:
    alice = server.users[0]
    q = _queue(server, "timeout", timeout=3.0)
    tasks = [HumanTask(ItemView(f"w{k}", f"text {k}"), "", ["negative", "positive"])
             for k in range(3)]  # fmt: skip
    t0 = time.monotonic()
    q.submit(tasks)
    t1 = time.monotonic()  # the tasks' clocks started between t0 and t1
    _answer(server, alice, q._tasks["w0"].task_id, "positive")
    early = q.withdraw_expired()
    if time.monotonic() - t0 < 3.0:  # not yet past the timeout (a loaded machine may be)
        assert early == []
    time.sleep(max(0.0, 3.5 - (time.monotonic() - t1)))
    assert sorted(early + q.withdraw_expired()) == ["w1", "w2"]
    left = {t["data"][ITEM_KEY]: t for t in _project_tasks(server, "timeout")}
    # withdrawn tasks are taken out of the label stream, not deleted (someone may have one
    # open: their submit must not meet a 404, issue 38); answered tasks stay
    assert sorted(left) == ["w0", "w1", "w2"]
    assert left["w1"]["is_labeled"] and left["w2"]["is_labeled"]
    assert _next_task(server, alice, q.project_id) is None
    assert _latest(q.poll())["w0"].by == alice.email
    # re-planned: back in the stream, never pushed twice, however often it is submitted
    q.submit(tasks)
    q.submit(tasks)
    again = _project_tasks(server, "timeout")
    assert sorted(t["data"][ITEM_KEY] for t in again) == ["w0", "w1", "w2"]
    assert not any(t["is_labeled"] for t in again if t["data"][ITEM_KEY] != "w0")
    assert _next_task(server, alice, q.project_id) is not None
    q.close()


def test_bad_token_is_refused_without_echo(server) -> None:
    bad = "not-the-token-" + "x" * 20
    with pytest.raises(LabelStudioError) as err:
        LabelStudioClient(server.url, bad).request("GET", "/api/projects/")
    assert "401" in str(err.value) and bad not in str(err.value)
    jwt = "aaaa.bbbb.cccc"
    with pytest.raises(LabelStudioError) as err:
        LabelStudioClient(server.url, jwt).request("GET", "/api/projects/")
    assert jwt not in str(err.value)


# -- quorum annotate ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def smollm2(smollm2_served):
    """The process's llama.cpp server with SmolLM2-135M on 127.0.0.1: its API base."""
    return smollm2_served[0]


def _ls_project(folder: Path, data_dir: Path, server, title: str, llm: dict, n: int, **kw) -> Path:
    (folder / "prompts").mkdir(parents=True, exist_ok=True)
    (folder / "prompts" / "sst2.txt").write_text(
        "Is this movie review negative or positive? Review: {text}\n"
        "Answer with one word: negative or positive."
    )
    return write_project(
        folder,
        {
            "name": title,
            "method": "live_servers.routers:CascadeRouter",
            "method_params": {"batch": 3, "human_every": 3, "confidence_every": 0},
            "features": "light",
            "items": {**sst2_items(data_dir, n), "gold_column": None},
            "task": {**SST2_TASK, "instructions": "Is the movie review positive?"},
            # no random quality checks (on by default): the test follows the router's tasks
            "budget": {"limit": kw.pop("limit", 1.0), "quality_checks": 0},
            "annotators": [
                {"name": "llm", "prompt": "prompts/sst2.txt", "max_tokens": 8, **llm},
                {"name": "team", "kind": "human", "price": 0.05},
            ],
            "humans": {
                "backend": "labelstudio",
                "labelstudio": {"url": server.url, "token_env": TOKEN_ENV, "project": title,
                                "predictions": True, **kw},
            },
        },
    )  # fmt: skip


def _ledger(folder: Path, sql: str) -> pd.DataFrame:
    con = sqlite3.connect(folder / ".quorum" / "ledger.sqlite")
    try:
        return pd.read_sql_query(sql, con)
    finally:
        con.close()


@pytest.mark.realdata
def test_annotate_end_to_end(
    server, browser, smollm2, tmp_path, shared_data_dir, monkeypatch, caplog, capfd
) -> None:
    alice, bob = server.users
    token = server.admin.token
    monkeypatch.setenv(TOKEN_ENV, token)
    caplog.set_level(logging.DEBUG)
    llm = {"model": "openai/smollm2", "api_base": smollm2, "price": 0.001, "temperature": 0,
           "seed": 0, "concurrency": 2, "timeout": 60}  # fmt: skip
    cfg = load_project(_ls_project(tmp_path, shared_data_dir, server, "e2e", llm, 9))

    # a pass stops at the first human task still waiting for its answer: each run pushes
    # the tasks it reached, people answer them (the first one in Chromium, the others
    # through the API as two different people), and the next run goes on
    q = _queue(server, "e2e")
    who: dict[str, tuple[str, str]] = {}
    s = annotate(cfg, quiet=True)
    assert s.status == "pending" and s.pending_humans >= 1
    assert s.queue.startswith(server.url)
    for _ in range(20):
        if s.status == "finished":
            break
        pend = _ledger(tmp_path, "SELECT item_id FROM human_queue ORDER BY submitted_at, rowid")
        tasks = sorted(_project_tasks(server, "e2e"), key=lambda t: t["id"])
        # exactly the items routed to humans, once each, in the order they were routed
        assert [t["data"][ITEM_KEY] for t in tasks] == pend["item_id"].tolist()
        new = [t for t in tasks if t["data"][ITEM_KEY] not in who]
        assert len(new) == s.pending_humans >= 1
        llm_ok = _ledger(
            tmp_path, "SELECT item_id, output FROM calls WHERE annotator='llm' AND status='ok'"
        )
        llm_out = dict(zip(llm_ok["item_id"], llm_ok["output"], strict=True))
        for t in new:  # the LLM's answer (where it gave one) as a scored pre-annotation
            out = llm_out.get(t["data"][ITEM_KEY])
            assert [p["model_version"] for p in t["predictions"]] == (["llm"] if out else [])
            if out:
                p = t["predictions"][0]
                assert 0.0 <= p["score"] <= 1.0
                assert p["result"][0]["value"]["choices"] == [NAMES[out]]
        st = status(cfg)
        assert float(st["held_for_humans"]) == pytest.approx(0.05 * len(new))
        links = q.links([t["data"][ITEM_KEY] for t in new])  # pushed by `annotate`: listed
        assert st["human_links"] == links and len(links) == len(new)
        for t in new:
            item = t["data"][ITEM_KEY]
            if not who:
                _label_in_browser(browser, server, alice, links[item], "positive")
                who[item] = (alice.email, "1")
                continue
            user, choice = (bob, "negative") if len(who) % 2 else (alice, "positive")
            _answer(server, user, t["id"], choice)
            who[item] = (user.email, "1" if choice == "positive" else "0")
        _wait_answers(q, len(who))
        s = annotate(cfg, quiet=True)
    q.close()
    assert s.status == "finished" and s.pending_humans == 0
    tasks = _project_tasks(server, "e2e")
    assert len(tasks) == len(who) >= 2  # nothing pushed twice
    hq = _ledger(tmp_path, "SELECT item_id, status, label, answered_by FROM human_queue")
    assert len(hq) == len(tasks) and (hq["status"] == "answered").all()
    assert {r.item_id: (r.answered_by, r.label) for r in hq.itertuples()} == who
    human_calls = _ledger(tmp_path, "SELECT * FROM calls WHERE annotator='team'")
    assert len(human_calls) == len(tasks) and (human_calls["status"] == "ok").all()
    assert human_calls["cost"].sum() == pytest.approx(0.05 * len(tasks))  # paid once each
    st = status(cfg)
    assert float(st["held_for_humans"]) == 0 and float(st["spent"]) <= cfg.budget.limit
    ex = export_frame(cfg).set_index("item_id")
    for item_id, (_, label) in who.items():
        assert ex.loc[item_id, "label"] == label and ex.loc[item_id, "human"]
    out = tmp_path / "labels.jsonl"
    from quorum.live.outputs.files import export

    export(cfg, "jsonl", out)
    print(f"{len(tasks)} human task(s): 1 labelled in Chromium, the rest through the API")
    # the token is nowhere: project folder (ledger, export), logs, stdout/stderr
    _no_token(tmp_path, token)
    assert token not in caplog.text
    cap = capfd.readouterr()
    assert token not in cap.out and token not in cap.err


@pytest.mark.realdata
def test_kill_and_resume_never_pushes_twice(server, tmp_path, shared_data_dir) -> None:
    alice, bob = server.users
    token = server.admin.token
    with FakeServer(tmp_path, "--labels", "2", name="llm") as fake:
        llm = {"model": "openai/fake-a", "api_base": fake.api_base, "price": 0.001,
               "timeout": 10, "max_retries": 2, "backoff_base": 0.02}  # fmt: skip
        folder = tmp_path / "proj"
        proj = _ls_project(folder, shared_data_dir, server, "killed", llm, 12)
        e = {**env(), TOKEN_ENV: token}
        log = folder / "annotate.log"
        with log.open("w") as fh:
            proc = subprocess.Popen(
                [sys.executable, "-m", "quorum.cli.main", "annotate", str(proj), "--wait", "300"],
                env=e, cwd=str(ROOT), stdout=fh, stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            # wait for the end of the first pass (its labels are written after every push)
            end = time.monotonic() + 120
            while time.monotonic() < end and proc.poll() is None and not _first_pass(folder):
                time.sleep(0.3)
            assert proc.poll() is None, log.read_text()[-3000:]
            # people answer what the waiting run pushed; it is killed while answers arrive
            q = _queue(server, "killed")
            q._ensure_listed()
            ids = sorted(q._tasks, key=lambda i: q._tasks[i].task_id)
            assert ids
            answered: dict[str, str] = {}
            for k, i in enumerate(ids):
                user = alice if k % 2 else bob
                _answer(server, user, q._tasks[i].task_id, "positive")
                answered[i] = user.email
            time.sleep(0.3)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL

        os.environ[TOKEN_ENV] = token
        try:
            cfg = load_project(proj)
            runs = 0
            while runs < 20:
                runs += 1
                s = annotate(cfg, quiet=True)
                tasks = _project_tasks(server, "killed")
                items = [t["data"][ITEM_KEY] for t in tasks]
                assert len(items) == len(set(items))  # no task pushed twice
                hq = _ledger(folder, "SELECT item_id, status, answered_by FROM human_queue")
                assert sorted(hq["item_id"]) == sorted(items)  # the ledger and the project agree
                got = hq[hq["status"] == "answered"].set_index("item_id")["answered_by"]
                # every submitted label collected, with its author
                assert got.to_dict() == answered
                assert s.pending_humans == len(items) - len(answered)
                if s.status == "finished":
                    break
                for t in tasks:
                    if t["data"][ITEM_KEY] not in answered:
                        _answer(server, alice, t["id"], "negative")
                        answered[t["data"][ITEM_KEY]] = alice.email
            assert s.status == "finished"
            print(f"killed with {len(ids)} task(s) answered; finished after {runs} more run(s)")
            human = _ledger(folder, "SELECT status, cost FROM calls WHERE annotator='team'")
            assert len(human) == len(items) and (human["status"] == "ok").all()
            assert human["cost"].sum() == pytest.approx(0.05 * len(items))  # paid once each
        finally:
            os.environ.pop(TOKEN_ENV, None)
            q.close()
    _no_token(folder, token)


def _first_pass(folder: Path) -> bool:
    p = folder / ".quorum" / "ledger.sqlite"
    if not p.is_file():
        return False
    try:
        con = sqlite3.connect(f"file:{p}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute("SELECT count(*) FROM labels").fetchone()[0] > 0
        finally:
            con.close()
    except sqlite3.OperationalError:  # not created yet
        return False


# -- k labels per item, timeouts ------------------------------------------------------------
def _team_project(folder: Path, data_dir: Path, server, title: str, n: int, **humans) -> Path:
    """A project with a local model (no LLM server) and the team in Label Studio."""
    return write_project(
        folder,
        {
            "name": title,
            "method": "live_servers.routers:CascadeRouter",
            "method_params": {"batch": 3, "human_every": 2, "confidence_every": 0},
            "features": "light",
            "items": sst2_items(data_dir, n),  # gold: control items for the reliabilities
            "task": {**SST2_TASK, "instructions": "Is the movie review positive?"},
            "budget": {"limit": 2.0, "quality_checks": 0},
            "annotators": [
                {"name": "kw", "kind": "model", "model": "live_servers.models:keyword_sentiment"},
                {"name": "team", "kind": "human", "price": 0.05},
            ],
            "humans": {
                "backend": "labelstudio",
                "labelstudio": {"url": server.url, "token_env": TOKEN_ENV, "project": title},
                **humans,
            },
        },
    )


def _next_task(server, user, project_id: int) -> int | None:
    """The task Label Studio's label stream hands ``user`` next (None: nothing left)."""
    c = LabelStudioClient(server.url, user.pat)
    try:
        t = c.request("GET", f"/api/projects/{project_id}/next")
    except LabelStudioError as exc:
        if "404" in str(exc):
            return None
        raise
    finally:
        c.close()
    return int(t["id"]) if t and t.get("id") is not None else None


@pytest.mark.realdata
def test_two_labels_per_item_from_two_users(server, tmp_path, shared_data_dir, monkeypatch) -> None:
    """humans.labels_per_item = 2 with two people: each task stays open until both have
    answered (Label Studio's stream hands it to the second person, never twice to the
    first), every label is in the ledger with its author, paid once; budget held."""
    alice, bob = server.users
    monkeypatch.setenv(TOKEN_ENV, server.admin.token)
    gold = dict(pd.read_csv(shared_data_dir / "sst2_dev" / "sst2_dev.csv", dtype=str)
                .set_index("idx")["label"])  # fmt: skip
    cfg = load_project(_team_project(tmp_path, shared_data_dir, server, "pairs", 8,
                                     labels_per_item=2))  # fmt: skip
    q = _queue(server, "pairs", overlap=2)
    pid = q.project_id
    stream_checked = 0
    s = annotate(cfg, quiet=True)
    for _ in range(20):
        if s.status == "finished":
            break
        tasks = {t["data"][ITEM_KEY]: t for t in _project_tasks(server, "pairs")}
        for item in s.waiting_for:
            tid = int(tasks[item]["id"])
            done = {a["completed_by"] for a in tasks[item].get("annotations") or []}
            if not done:
                if _next_task(server, alice, pid) == tid:
                    stream_checked += 1
                _answer(server, alice, tid, NAMES[gold[item]])
            # the task stays open for a second person: the stream hands it to bob only
            nxt_bob, nxt_alice = _next_task(server, bob, pid), _next_task(server, alice, pid)
            assert nxt_alice != tid
            if nxt_bob == tid:
                stream_checked += 1
            mid = annotate(cfg, quiet=True)  # one label of two: still waiting
            assert mid.status == "pending" and item in mid.waiting_for
            # bob disagrees on odd items: the vote goes by reliability (gold checks both)
            wrong = NAMES["0" if gold[item] == "1" else "1"]
            _answer(server, bob, tid, wrong if int(item) % 2 else NAMES[gold[item]])
        s = annotate(cfg, quiet=True)
    q.close()
    assert s.status == "finished" and stream_checked >= 2
    hq = _ledger(tmp_path, "SELECT * FROM human_queue")
    slots = _ledger(tmp_path, "SELECT * FROM human_labels ORDER BY request_key, slot")
    calls = _ledger(tmp_path, "SELECT * FROM calls WHERE annotator='team'")
    n = len(hq)
    assert n >= 2 and (hq["status"] == "answered").all() and (hq["wanted"] == 2).all()
    assert len(slots) == 2 * n and (slots["status"] == "answered").all()
    for _, g in slots.groupby("request_key"):
        assert sorted(g["person"]) == sorted([alice.email, bob.email])
    assert len(calls) == 2 * n and (calls["status"] == "ok").all()
    assert calls["cost"].sum() == pytest.approx(0.05 * 2 * n)  # each label paid once
    assert len(_project_tasks(server, "pairs")) == n  # one task per item, none pushed twice
    st = status(cfg)
    assert float(st["held_for_humans"]) == 0 and float(st["spent"]) <= cfg.budget.limit
    people = {p["person"]: p for p in st["human_team"]}
    assert set(people) == {alice.email, bob.email}
    assert people[alice.email]["gold_correct"] == people[alice.email]["gold"] == n
    ex = export_frame(cfg).set_index("item_id")
    for r in hq.itertuples():
        assert ex.loc[r.item_id, "label"] == gold[r.item_id] == r.label  # alice out-votes bob
        assert {g["by"] for g in ex.loc[r.item_id, "human_labels"]} == {alice.email, bob.email}
    print(f"{n} items x 2 labels from two users; the stream handed over {stream_checked}")


@pytest.mark.realdata
def test_timeout_closes_and_withdraws_in_label_studio(
    server, tmp_path, shared_data_dir, monkeypatch
) -> None:
    """Two labels wanted, a timeout of 6 s: a task with one label at the timeout is closed
    with it (it stays in Label Studio, whose stream then hands it to nobody); tasks nobody
    answered are taken out of Label Studio's stream (kept, for whoever has one open) and
    expire, their money released."""
    alice, bob = server.users
    monkeypatch.setenv(TOKEN_ENV, server.admin.token)
    gold = dict(pd.read_csv(shared_data_dir / "sst2_dev" / "sst2_dev.csv", dtype=str)
                .set_index("idx")["label"])  # fmt: skip
    cfg = load_project(_team_project(tmp_path, shared_data_dir, server, "expiring", 6,
                                     labels_per_item=2, timeout=6))  # fmt: skip
    s = annotate(cfg, quiet=True)
    assert s.status == "pending"
    (first,) = s.waiting_for
    # the project's own overlap (a queue with another one sets the project's, and Label
    # Studio then recounts which tasks are labelled)
    tasks = _project_tasks(server, "expiring", overlap=2)
    assert [t["data"][ITEM_KEY] for t in tasks] == [first]
    tid = int(tasks[0]["id"])
    _answer(server, alice, tid, NAMES[gold[first]])
    s = annotate(cfg, quiet=True, wait=60)  # sleeps through the timeouts, then goes on
    assert s.status == "finished"
    hq = _ledger(tmp_path, "SELECT item_id, status, label, answered_by FROM human_queue")
    hq = hq.set_index("item_id")
    assert hq.loc[first, "status"] == "answered" and hq.loc[first, "answered_by"] == alice.email
    assert hq.loc[first, "label"] == gold[first]
    others = [i for i in hq.index if i != first]
    assert others and (hq.loc[others, "status"] == "expired").all()
    left = _project_tasks(server, "expiring", overlap=2)
    assert all(t["is_labeled"] for t in left if t["data"][ITEM_KEY] != first)  # hidden
    pid = _queue(server, "expiring", overlap=2).project_id
    assert _next_task(server, bob, pid) is None  # closed
    slots = _ledger(tmp_path, "SELECT item_id, status FROM human_labels")
    assert sorted(slots.loc[slots["item_id"] == first, "status"]) == ["answered", "withdrawn"]
    st = status(cfg)
    assert float(st["held_for_humans"]) == 0
    human = _ledger(tmp_path, "SELECT status, cost FROM calls WHERE annotator='team'")
    assert human["cost"].sum() == pytest.approx(0.05)  # alice's label, once
    assert (human["status"] != "pending").all()
