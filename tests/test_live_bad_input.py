"""Bad input: every case gets a clear error (one line, or a list of problems) and a non-zero
exit code, never a traceback or a silent "finished".

Most cases run ``quorum`` in this process (:func:`live_servers.fixtures.quorum_here`, the
same typer app; an uncaught exception's traceback is appended to stderr, so ``_fails``
still sees it). The zero budget, the missing credentials and the cases whose message is a
log line (a dead or garbled endpoint) run the real command in a subprocess, as a user
starts it: its log goes to its own stderr whatever handlers earlier tests left in this
process."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from live_servers.fixtures import (
    SST2_TASK,
    FakeServer,
    free_port,
    quorum,
    quorum_here,
    quorum_live_logger_kept,
    sst2_items,
    write_project,
)
from quorum.errors import ConfigError
from quorum.live.project.config import load_project
from quorum.live.run.runner import annotate

KW = {"name": "kw", "kind": "model", "model": "live_servers.models:keyword_sentiment",
      "price": 0.001}  # fmt: skip


def _project(data_dir: Path, **kw) -> dict:
    p = {
        "name": "bad",
        "features": "light",
        "items": sst2_items(data_dir, 4),
        "task": SST2_TASK,
        "budget": {"limit": 1.0},
        "human_price": 0.01,
        "annotators": [KW],
    }
    p.update(kw)
    return p


def _fails(res: subprocess.CompletedProcess, *words: str) -> str:
    """The command failed with a message holding ``words`` and no traceback."""
    err = res.stderr
    assert res.returncode != 0, res.stdout + err
    assert "Traceback" not in err and "Traceback" not in res.stdout, err
    msg = [line for line in err.splitlines() if line.startswith("error:")]
    assert msg, err
    for w in words:
        assert w in err, f"{w!r} not in {err!r}"
    print(msg[0])
    return msg[0]


@pytest.mark.parametrize(
    ("template", "words"),
    [
        ("{0} {sentence}", ["items.text_template", "placeholder {0}", "not a column name"]),
        ("{sentence", ["items.text_template", "malformed template", "expected '}'"]),
    ],
)
def test_text_template(tmp_path, shared_data_dir, template, words) -> None:
    items = {**sst2_items(shared_data_dir, 4), "text_template": template}
    proj = write_project(tmp_path, _project(shared_data_dir, items=items))
    _fails(quorum_here("annotate", str(proj)), *words)


@contextlib.contextmanager
def _read_only(folder: Path):
    """Make ``folder`` read-only (root ignores the mode bits: chattr +i then)."""
    folder.chmod(0o555)
    immutable = False
    if os.geteuid() == 0:
        immutable = (
            subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0
        )
    try:
        probe = folder / ".probe"
        try:
            probe.touch()
        except OSError:
            pass
        else:
            probe.unlink()
            pytest.skip("cannot make a folder read-only here")
        yield folder
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(folder)], check=False)
        folder.chmod(0o755)


def test_read_only_project_folder(tmp_path, shared_data_dir) -> None:
    proj = write_project(tmp_path / "ro", _project(shared_data_dir))
    with _read_only(proj.parent):
        line = _fails(quorum_here("annotate", str(proj)), "cannot write the ledger", ".quorum")
    assert "writable" in line


def test_export_to_an_unwritable_path(tmp_path, shared_data_dir) -> None:
    proj = write_project(tmp_path, _project(shared_data_dir))
    assert quorum_here("annotate", str(proj), "--quiet").returncode == 0
    (tmp_path / "a-file").write_text("x")
    _fails(
        quorum_here("export", str(proj), "-o", str(tmp_path / "a-file" / "labels.csv")),
        "cannot write the export to",
        "a-file is a file, not a folder",
    )
    (tmp_path / "out").mkdir()
    with _read_only(tmp_path / "out"):
        _fails(quorum_here("export", str(proj), "-o", str(tmp_path / "out" / "labels.csv")),
               "cannot write the export to")  # fmt: skip


def test_budget_zero(tmp_path, shared_data_dir) -> None:
    proj = write_project(tmp_path, _project(shared_data_dir, budget={"limit": 0}))
    _fails(quorum("annotate", str(proj)), "budget.limit is 0")


def test_budget_below_one_call(tmp_path, shared_data_dir) -> None:
    proj = write_project(tmp_path, _project(shared_data_dir, budget={"limit": 0.0005}))
    _fails(quorum_here("annotate", str(proj)), "below the price of one call", "'kw'")


def test_the_only_llm_endpoint_is_dead(tmp_path, shared_data_dir) -> None:
    gone = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    llm = {"name": "llm", "model": "openai/x", "api_base": gone, "price": 0.001,
           "max_retries": 0, "dead_after": 1, "timeout": 2}  # fmt: skip
    proj = write_project(tmp_path, _project(shared_data_dir, annotators=[llm]))
    res = quorum("annotate", str(proj))
    _fails(res, "every machine annotator is dead (llm); ", "is unreachable")


def test_missing_credentials(tmp_path, shared_data_dir, monkeypatch) -> None:
    """No key for a hosted model: said before anything runs; a key the server refuses:
    the endpoint 'rejected the credentials', not 'unreachable'."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    hosted = {"name": "gpt", "model": "gpt-4o-mini", "price": 0.001}
    cfg = load_project(write_project(tmp_path / "a", _project(shared_data_dir,
                                                                annotators=[hosted])))  # fmt: skip
    with pytest.raises(ConfigError, match="needs an API key and OPENAI_API_KEY is not set"):
        annotate(cfg, quiet=True)
    with FakeServer(tmp_path, "--require-key", "sk-right-key", name="auth") as srv:
        llm = {"name": "llm", "model": "openai/x", "api_base": srv.api_base, "price": 0.001,
               "api_key_env": "QUORUM_TEST_KEY", "max_retries": 0}  # fmt: skip
        proj = write_project(tmp_path / "b", _project(shared_data_dir, annotators=[llm]))
        res = quorum("annotate", str(proj), extra_env={"QUORUM_TEST_KEY": "sk-wrong-key"})
    _fails(res, "rejected the credentials", "every machine annotator is dead")
    assert "unreachable" not in res.stderr
    assert "sk-wrong-key" not in res.stderr


def test_garbage_responses(tmp_path, shared_data_dir) -> None:
    """An endpoint answering HTML instead of chat completions is named for what it does."""
    with FakeServer(tmp_path, "--rate-broken", "1.0", name="html") as srv:
        llm = {"name": "llm", "model": "openai/x", "api_base": srv.api_base, "price": 0.001,
               "max_retries": 1, "backoff_base": 0.01, "dead_after": 2}  # fmt: skip
        proj = write_project(tmp_path, _project(shared_data_dir, annotators=[llm]))
        res = quorum("annotate", str(proj))
    _fails(res, "responses that are not chat completions", "every machine annotator is dead")
    assert "unreachable" not in res.stderr


def test_prompt_file_with_any_name(tmp_path, shared_data_dir) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "sst2.prompt").write_text("Review: {text}\nLabel:")
    with FakeServer(tmp_path, name="p") as srv:
        llm = {"name": "llm", "model": "openai/x", "api_base": srv.api_base, "price": 0.001,
               "prompt": "prompts/sst2.prompt"}  # fmt: skip
        proj = write_project(tmp_path, _project(shared_data_dir, annotators=[llm]))
        res = quorum_here("annotate", str(proj), "--quiet")
        assert res.returncode == 0, res.stderr
        assert [json.loads(r) for r in srv.log.read_text().splitlines()]
    con = sqlite3.connect(tmp_path / ".quorum" / "ledger.sqlite")
    sent = [r[0] for r in con.execute("SELECT prompt FROM calls WHERE annotator='llm'")]
    con.close()
    assert sent and all(p.startswith("Review: ") for p in sent)
    llm["prompt"] = "prompts/sst2.tmpl"  # a path that does not exist
    write_project(tmp_path, _project(shared_data_dir, annotators=[llm]))
    _fails(quorum_here("annotate", str(proj)), "prompt file not found", "sst2.tmpl")


def test_items_path_is_a_folder(tmp_path, shared_data_dir) -> None:
    items = {**sst2_items(shared_data_dir, 4), "path": str(shared_data_dir / "sst2_dev")}
    proj = write_project(tmp_path, _project(shared_data_dir, items=items))
    _fails(quorum_here("annotate", str(proj)), "is a folder, not a file", "sst2_dev.csv")


def test_broken_jsonl_line(tmp_path, shared_data_dir) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text('{"item_id": "a", "text": "fine"}\n{"item_id": "b", "text": "ok"}\n'
                    '{"item_id": "c", "text": "broken\n')  # fmt: skip
    items = {"path": str(path)}
    data = _project(shared_data_dir, items=items)
    data["annotators"] = [KW, {"name": "h", "kind": "human", "price": 0.1}]
    proj = write_project(tmp_path, data)
    _fails(quorum_here("annotate", str(proj)), "line 3", "not valid JSON")


def test_annotate_twice_in_one_process_logs_to_each_stderr(tmp_path, shared_data_dir) -> None:
    """The second command of a process (a notebook, typer's CliRunner) logs to its own
    stderr, not to the first one's, closed by then ("Logging error", lines lost)."""
    from typer.testing import CliRunner

    from quorum.cli.main import app

    errs = []
    with quorum_live_logger_kept() as logger:
        logger.handlers[:] = []  # as in a new process
        for name in ("one", "two"):
            proj = write_project(tmp_path / name, _project(shared_data_dir))
            res = CliRunner().invoke(app, ["annotate", str(proj)])
            assert res.exit_code == 0, res.output
            errs.append(res.stderr)
    for err in errs:
        assert "INFO quality checks:" in err and "Logging error" not in err, err
