"""What a team trial found a live run said falsely, each fixed and checked (issue 28).

Items with a live path of their own (a real llama.cpp SmolLM2 server, a real Label Studio)
are in ``test_labelstudio_trial.py``; these run on the file queue, local models and the
fault-injection OpenAI server.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from live_servers.fixtures import SST2_TASK, FakeServer, env, sst2_items, write_project
from live_servers.scripted_team import append_answers
from quorum.cli.main import app
from quorum.data.schema import TaskType
from quorum.errors import ConfigError
from quorum.live.labelstudio.client import LabelStudioClient
from quorum.live.labelstudio.queue import LabelStudioHumanQueue
from quorum.live.machines.prompts import PromptBuilder, PromptTemplate
from quorum.live.outputs.export import export_frame
from quorum.live.outputs.status import status
from quorum.live.project.config import load_project
from quorum.live.run.runner import annotate
from quorum.tasks.base import ItemView

NAMES = {"0": "negative", "1": "positive"}
KW = {"name": "kw", "kind": "model", "model": "live_servers.models:keyword_sentiment"}


def _sql(cfg, q: str) -> pd.DataFrame:
    con = sqlite3.connect(cfg.ledger_path)
    try:
        return pd.read_sql_query(q, con)
    finally:
        con.close()


def _gold(data_dir: Path) -> dict[str, str]:
    df = pd.read_csv(data_dir / "sst2_dev" / "sst2_dev.csv", dtype=str)
    return dict(zip(df["idx"], df["label"], strict=True))


# -- 1. the prompt sent is the prompt written -------------------------------------------
def test_written_prompt_is_sent_as_written() -> None:
    written = PromptTemplate("Review: {text}\nAnswer negative or positive.", name="mine")
    bundled = PromptTemplate.resolve(None, "classification", Path("."), "p")
    conf = PromptTemplate.resolve(None, "confidence", Path("."), "c")
    item = ItemView("a", "a fine film")

    def sent(tmpl: PromptTemplate, mode: str = "auto") -> str:
        b = PromptBuilder(TaskType.classification, ["0", "1"], NAMES, "Is it positive?", tmpl,
                          conf, instructions_in_prompt=mode)  # fmt: skip
        return b.annotation_messages(item)[-1]["content"]

    assert sent(written) == "Review: a fine film\nAnswer negative or positive."
    assert sent(written, "always").startswith("Is it positive?\n\nReview:")
    assert sent(bundled).startswith("Is it positive?\n\n") and "a fine film" in sent(bundled)
    assert not sent(bundled, "never").startswith("Is it positive?")
    placed = PromptTemplate("{instructions} | {text}", name="placed")
    assert sent(placed) == "Is it positive? | a fine film"


@pytest.mark.realdata
def test_unparseable_answers_are_a_loud_warning(tmp_path, shared_data_dir, caplog) -> None:
    """The ledger holds the prompt as written; `plan` shows it as sent and says what is
    added; a run whose LLM answers mostly cannot be read ends with a warning and the fix,
    and `quorum status` repeats it."""
    (tmp_path / "p.txt").write_text("Review: {text}\nAnswer with one word.")
    with FakeServer(tmp_path, "--rate-garbage", "0.8") as fake:
        proj = write_project(tmp_path, {
            "name": "garbled", "method": "live_servers.routers:CascadeRouter",
            "method_params": {"human_every": 1000, "confidence_every": 0, "second": 0.0},
            "features": "light", "items": sst2_items(shared_data_dir, 20),
            "task": {**SST2_TASK, "instructions": "Is the movie review positive?"},
            "budget": {"limit": 1.0}, "human": "gold",
            "annotators": [{"name": "llm", "model": "openai/fake", "api_base": fake.api_base,
                            "price": 0.001, "prompt": "p.txt"}],
        })  # fmt: skip
        cfg = load_project(proj)
        caplog.set_level(logging.INFO, logger="quorum.live")
        annotate(cfg, quiet=True)
    prompts = _sql(cfg, "SELECT prompt FROM calls WHERE annotator='llm'")["prompt"]
    assert len(prompts) == 20 and all(p.startswith("Review: ") for p in prompts)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("could not be read as a label" in w and "'llm'" in w for w in warned), warned
    st = status(cfg)
    assert len(st["warnings"]) == 1 and "instructions_in_prompt" in st["warnings"][0]
    out = CliRunner().invoke(app, ["status", str(proj)]).output
    assert "warning: annotator 'llm'" in out
    res = CliRunner().invoke(app, ["plan", str(proj)])
    assert res.exit_code == 0, res.output
    assert "added to it: nothing (task.instructions are not sent" in res.output
    assert "Review: " in res.output and "Is the movie review positive?" not in res.output


# -- 3. the router never plans money the ledger has spent --------------------------------
@pytest.mark.realdata
def test_router_never_plans_money_the_ledger_spent(tmp_path, shared_data_dir, caplog) -> None:
    """The second run's router takes another path (a new seed): the money the first run
    spent on calls it does not reuse is not its to plan. Before: it planned them and the
    project guard refused them ("project budget reached" calls in the ledger)."""
    data = {
        "name": "sunk", "method": "live_servers.routers:CascadeRouter",
        "method_params": {"batch": 2, "human_every": 1000, "confidence_every": 0},
        "features": "light", "items": sst2_items(shared_data_dir, 30),
        "task": SST2_TASK, "budget": {"limit": 0.1}, "human": "gold", "human_price": 0.5,
        "annotators": [{**KW, "price": 0.01},
                       {"name": "named", "kind": "model",
                        "model": "live_servers.models:named_sentiment", "price": 0.01}],
    }  # fmt: skip
    cfg = load_project(write_project(tmp_path, data))
    annotate(cfg, quiet=True)
    assert _sql(cfg, "SELECT sum(cost) AS s FROM calls")["s"].iloc[0] == pytest.approx(0.1)
    caplog.set_level(logging.INFO, logger="quorum.live")
    cfg = load_project(write_project(tmp_path, {**data, "seed": 7}))
    s = annotate(cfg, quiet=True)
    refused = _sql(cfg, "SELECT * FROM calls WHERE error LIKE 'project budget reached%'")
    assert refused.empty, refused[["item_id", "annotator", "error"]]
    assert "are given to the router (their cost charged" in caplog.text
    assert s.status == "finished" and s.spent <= 0.1 + 1e-12
    last = _sql(cfg, f"SELECT * FROM decisions WHERE run_id={s.run_id} AND pass={s.passes}")
    assert len(last) and (last["status"] != "failed").all()  # the last pass planned no call
    assert (last["phase"] == "prior").sum() >= 1  # ...it was given the paid answers first
    ex = export_frame(cfg)
    assert ex["label"].notna().sum() >= 10  # the labels it had bought are still used


# -- 5, 6. labels, names or prices changed between runs ----------------------------------
@pytest.mark.realdata
def test_label_and_price_changes_between_runs_are_refused(tmp_path, shared_data_dir, caplog):
    data = {
        "name": "changed", "method": "live_servers.routers:CascadeRouter",
        "method_params": {"human_every": 1000, "confidence_every": 0},
        "features": "light", "items": sst2_items(shared_data_dir, 6), "task": SST2_TASK,
        "budget": {"limit": 1.0}, "human": "gold",
        "annotators": [{"name": "named", "kind": "model",
                        "model": "live_servers.models:named_sentiment", "price": 0.01}],
    }  # fmt: skip
    cfg = load_project(write_project(tmp_path, data))
    annotate(cfg, quiet=True)
    before = export_frame(cfg).set_index("item_id")["label_name"].to_dict()
    swapped = {**SST2_TASK, "label_names": {"0": "positive", "1": "negative"}}
    with pytest.raises(ConfigError, match=r"task.label_names was .* and is now .*new path"):
        annotate(load_project(write_project(tmp_path, {**data, "task": swapped})), quiet=True)
    # nothing was exported with the other meaning: the labels are those of the first run
    assert export_frame(cfg).set_index("item_id")["label_name"].to_dict() == before
    three = {**SST2_TASK, "labels": ["0", "1", "2"]}
    with pytest.raises(ConfigError, match=r"task\.labels was"):
        annotate(load_project(write_project(tmp_path, {**data, "task": three})), quiet=True)
    dearer = {**data, "annotators": [{**data["annotators"][0], "price": 0.02}]}
    with pytest.raises(ConfigError, match=r"price changed .*'named': price 0.01 -> 0.02"):
        annotate(load_project(write_project(tmp_path, dearer)), quiet=True)
    # accepted on request: logged, old calls keep their recorded cost
    caplog.set_level(logging.WARNING, logger="quorum.live")
    ok = {**dearer, "budget": {"limit": 1.0, "price_change": "accept"}}
    annotate(load_project(write_project(tmp_path, ok)), quiet=True)
    assert "price changed since the last run: annotator 'named'" in caplog.text
    assert set(_sql(cfg, "SELECT cost FROM calls WHERE annotator='named'")["cost"]) == {0.01}
    # the new price is now the recorded one: the next run goes on without a word
    annotate(load_project(write_project(tmp_path, dearer)), quiet=True)


# -- 7. a read-only folder -----------------------------------------------------------------
@pytest.fixture
def open_tmp():
    """A temporary folder other users can read (pytest's own is private to its user)."""
    p = Path(tempfile.mkdtemp(prefix="quorum-ro-"))
    p.chmod(0o755)
    yield p
    for q in [p, *p.rglob("*")]:
        q.chmod(0o755 if q.is_dir() else 0o644)
    shutil.rmtree(p, ignore_errors=True)


@pytest.mark.realdata
def test_status_and_export_in_a_read_only_folder(open_tmp, shared_data_dir) -> None:
    tmp_path = open_tmp
    data = {
        "name": "ro", "method": "live_servers.routers:CascadeRouter",
        "method_params": {"human_every": 1000, "confidence_every": 0},
        "features": "light", "items": sst2_items(shared_data_dir, 5), "task": SST2_TASK,
        "budget": {"limit": 1.0}, "human": "gold", "annotators": [{**KW, "price": 0.01}],
    }  # fmt: skip
    folder = tmp_path / "proj"
    proj = write_project(folder, data)
    annotate(load_project(proj), quiet=True)
    for p in [folder, *folder.rglob("*")]:
        p.chmod(0o555 if p.is_dir() else 0o444)
    os.chmod(tmp_path, 0o755)
    cmd = [sys.executable, "-m", "quorum.cli.main"]
    if os.geteuid() == 0:  # root writes anywhere: run as nobody
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv")
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
        # nobody must read the data and the code
        for p in (tmp_path, *tmp_path.parents):
            if not os.stat(p).st_mode & 0o005:
                pytest.skip(f"{p} is not readable by other users")
    e = {**env(), "QUORUM_DATA_DIR": str(shared_data_dir), "HOME": str(tmp_path)}
    try:
        st = subprocess.run([*cmd, "status", str(proj)], capture_output=True, text=True,
                            env=e, timeout=120, cwd="/")  # fmt: skip
        assert st.returncode == 0, st.stderr[-2000:]
        assert "labelled 5/5" in st.stdout and "Traceback" not in st.stderr
        ex = subprocess.run([*cmd, "export", str(proj)], capture_output=True, text=True,
                            env=e, timeout=120, cwd="/")  # fmt: skip
        assert ex.returncode == 2 and "Traceback" not in ex.stderr
        lines = [x for x in ex.stderr.splitlines() if x.strip()]
        assert len(lines) == 1 and "cannot write the export" in lines[0], ex.stderr
        out = tmp_path / "out"
        out.mkdir(mode=0o777)
        out.chmod(0o777)
        to = str(out / "l.csv")
        ex = subprocess.run([*cmd, "export", str(proj), "-o", to], capture_output=True,
                            text=True, env=e, timeout=120, cwd="/")  # fmt: skip
        assert ex.returncode == 0, ex.stderr[-2000:]
        assert len(pd.read_csv(out / "l.csv")) == 5
    finally:
        for p in [folder, *folder.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)


# -- 8. a one-label task, in every spelling --------------------------------------------------
@pytest.mark.parametrize(
    "task",
    [
        {"type": "classification", "labels": ["1"]},
        {"type": "classification", "labels": ["1"], "label_names": {"1": "positive"}},
        {"type": "classification", "labels": [1]},
        {"type": "classification", "labels": ["pos", "Pos"]},
        {"type": "classification", "labels": ["0", "1"],
         "label_names": {"0": "positive", "1": " Positive"}},
        {"type": "multiple_choice", "labels": ["A"]},
    ],
)  # fmt: skip
def test_one_label_tasks_are_refused_in_every_spelling(tmp_path, task) -> None:
    data = tmp_path / "items.csv"
    pd.DataFrame({"item_id": ["a", "b"], "text": ["x", "y"]}).to_csv(data, index=False)
    proj = write_project(tmp_path, {
        "name": "one", "items": {"path": str(data)}, "task": task, "budget": {"limit": 1},
        "annotators": [{**KW, "price": 0.01}, {"name": "p", "kind": "human", "price": 0.1}],
    })  # fmt: skip
    with pytest.raises(ConfigError, match=r"at least two labels|are the same answer"):
        load_project(proj)


# -- 9. k is a hard cap on what a task pays ---------------------------------------------------
@pytest.mark.realdata
def test_a_label_beyond_k_is_recorded_not_paid(tmp_path, shared_data_dir, caplog) -> None:
    """Three people answer a task that wants two (a web queue can hand it out once too
    often): two labels are paid and voted, the third is recorded with its author, cost 0."""
    gold = _gold(shared_data_dir)
    data = {
        "name": "k", "method": "live_servers.routers:CascadeRouter",
        "method_params": {"human_every": 2, "confidence_every": 0},
        "features": "light", "items": sst2_items(shared_data_dir, 4),
        "task": SST2_TASK, "budget": {"limit": 3.0},
        "annotators": [KW, {"name": "team", "kind": "human", "price": 0.05}],
        "humans": {"labels_per_item": 2},
    }  # fmt: skip
    cfg = load_project(write_project(tmp_path, data))
    caplog.set_level(logging.INFO, logger="quorum.live")
    s = annotate(cfg, quiet=True)
    assert s.status == "pending"
    item = _sql(cfg, "SELECT item_id FROM human_queue")["item_id"].iloc[0]
    y = NAMES[gold[item]]
    append_answers(
        cfg.queue_dir / "answers.csv", [[item, y, "ann"], [item, y, "bea"], [item, y, "cat"]]
    )
    annotate(cfg, quiet=True)
    slots = _sql(cfg, f"SELECT * FROM human_labels WHERE item_id='{item}' ORDER BY slot")
    assert slots["person"].tolist() == ["ann", "bea", "cat"]
    assert slots["status"].tolist() == ["answered", "answered", "extra"]
    paid = _sql(cfg, f"SELECT * FROM calls WHERE annotator='team' AND item_id='{item}'")
    assert paid["cost"].sum() == pytest.approx(0.10) and len(paid) == 2
    assert "beyond the 2 wanted" in caplog.text
    ex = export_frame(cfg).set_index("item_id")
    assert [h["status"] for h in ex.loc[item, "human_labels"]] == ["answered", "answered", "extra"]
    annotate(cfg, quiet=True)  # read again: still not paid
    again = _sql(cfg, f"SELECT sum(cost) AS s FROM calls WHERE item_id='{item}' AND "
                 "annotator='team'")  # fmt: skip
    assert again["s"].iloc[0] == pytest.approx(0.10)


# -- 10. how much the reliabilities rest on ---------------------------------------------------
@pytest.mark.realdata
def test_reliability_says_how_much_evidence_it_has(tmp_path, shared_data_dir) -> None:
    gold = _gold(shared_data_dir)
    base = {
        "name": "ev", "method": "live_servers.routers:CascadeRouter",
        "method_params": {"human_every": 1, "confidence_every": 0},
        "features": "light", "task": SST2_TASK, "budget": {"limit": 5.0},
        "annotators": [KW, {"name": "team", "kind": "human", "price": 0.05}],
        "humans": {"labels_per_item": 2, "min_evidence": 3},
    }  # fmt: skip

    def run(folder: Path, items: dict) -> dict:
        cfg = load_project(write_project(folder, {**base, "items": items}))
        done: set[str] = set()
        for _ in range(12):
            if annotate(cfg, quiet=True).status == "finished":
                break
            asked = set(_sql(cfg, "SELECT item_id FROM human_queue")["item_id"]) - done
            rows = [[i, NAMES[gold[i]], p] for i in sorted(asked) for p in ("ann", "bob")]
            append_answers(cfg.queue_dir / "answers.csv", rows)
            done |= asked
        return status(cfg)["human_evidence"]

    blind = run(tmp_path / "a", {**sst2_items(shared_data_dir, 5), "gold_column": None})
    assert blind["dependable"] is False and "control items" in blind["why"]
    assert blind["gold_labels"] == {"ann": 0, "bob": 0}
    assert blind["checked_labels"]["ann"] >= 3
    checked = run(tmp_path / "b", sst2_items(shared_data_dir, 5))
    assert checked["dependable"] is True and checked["gold_labels"]["ann"] >= 3


# -- 12. the log says what happened ------------------------------------------------------------
@pytest.mark.realdata
def test_wait_log_tells_answers_from_timeouts(tmp_path, shared_data_dir, caplog) -> None:
    """Nobody answers and the tasks time out: the log does not say they 'came'."""
    data = {
        "name": "quiet", "method": "live_servers.routers:CascadeRouter",
        "method_params": {"human_every": 2, "confidence_every": 0},
        "features": "light", "items": sst2_items(shared_data_dir, 4), "task": SST2_TASK,
        "budget": {"limit": 3.0},
        "annotators": [KW, {"name": "team", "kind": "human", "price": 0.05}],
        "humans": {"timeout": "1s"},
    }  # fmt: skip
    cfg = load_project(write_project(tmp_path, data))
    caplog.set_level(logging.INFO, logger="quorum.live")
    annotate(cfg, quiet=True, wait=20)
    assert "answer(s) came" not in caplog.text
    assert re.search(r"human tasks waited for: 0 answered, \d+ withdrawn unanswered", caplog.text)


def test_label_studio_outage_is_logged_while_waiting(caplog) -> None:
    q = LabelStudioHumanQueue(
        LabelStudioClient("http://127.0.0.1:9", "t0ken-for-a-server-that-is-not-there",
                          max_retries=0),
        "down", TaskType.classification, ["0", "1"], check_every=0.2,
    )  # fmt: skip
    caplog.set_level(logging.INFO, logger="quorum.live")
    assert q.wait(1.0) is False
    down = [r for r in caplog.records if "does not answer" in r.getMessage()]
    assert len(down) == 1 and down[0].levelno == logging.WARNING  # once per outage
    assert "counts against --wait" in down[0].getMessage()
    q.client.close()


def test_project_yaml_roundtrip_of_new_fields(tmp_path) -> None:
    data = tmp_path / "items.csv"
    pd.DataFrame({"item_id": ["a"], "text": ["x"]}).to_csv(data, index=False)
    raw = {
        "name": "f", "items": {"path": str(data)},
        "task": {**SST2_TASK, "instructions_in_prompt": "always"},
        "budget": {"limit": 1, "price_change": "accept"},
        "annotators": [{**KW, "price": 0.01}, {"name": "p", "kind": "human", "price": 0.1}],
    }  # fmt: skip
    cfg = load_project(write_project(tmp_path, raw))
    assert cfg.task.instructions_in_prompt == "always" and cfg.budget.price_change == "accept"
    raw["task"]["instructions_in_prompt"] = "sometimes"
    with pytest.raises(ConfigError, match="instructions_in_prompt"):
        load_project(write_project(tmp_path, raw))
    assert yaml.safe_load((tmp_path / "project.yaml").read_text())["name"] == "f"
