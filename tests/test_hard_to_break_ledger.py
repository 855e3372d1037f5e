"""Issue 37, findings 5 and 9: a damaged ledger is one clear line that says it is damaged
(not "make its folder writable"), for ``annotate``, ``status``, ``export`` and ``report``;
``export`` of a damaged ledger never succeeds silently. And the money of calls a kill cut
off (finding 1) as the ledger counts it: possibly billed where the request left, nothing
where it never did."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from live_servers.fixtures import write_project
from quorum.cli.main import app
from quorum.live.ledger.store import Ledger
from quorum.live.project.config import load_project
from quorum.live.run.runner import annotate

KW = {"name": "kw", "kind": "model", "model": "live_servers.models:keyword_sentiment",
      "price": 0.001}  # fmt: skip


def _project(folder: Path, n: int = 6) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = [{"id": f"i{k}", "text": "good fun" if k % 2 else "dull", "gold": str(k % 2)}
            for k in range(n)]  # fmt: skip
    (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return write_project(
        folder,
        {
            "name": "h37-ledger",
            "method": "random",
            "features": "light",
            "items": {"path": "items.jsonl", "id_column": "id", "gold_column": "gold"},
            "task": {"type": "classification", "labels": ["0", "1"]},
            "budget": {"limit": 0.05},
            "human_price": 0.01,
            "annotators": [KW],
        },
    )


def _cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output, res.output
    return res.exit_code, res.output


@pytest.fixture
def run_project(tmp_path):
    proj = _project(tmp_path / "p")
    annotate(load_project(proj), quiet=True)
    return proj, tmp_path / "p" / ".quorum" / "ledger.sqlite"


def _garble(path: Path, at: int, n: int = 4096) -> None:
    data = bytearray(path.read_bytes())
    data[at : at + n] = b"\xa5" * min(n, len(data) - at)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["whole", "pages"])
def test_a_damaged_ledger_is_said_so_everywhere(run_project, how) -> None:
    proj, path = run_project
    for side in path.parent.glob("ledger.sqlite-*"):
        side.unlink()
    if how == "whole":
        path.write_bytes(b"this is not a database " * 200)
    else:  # the header is fine, the pages after it are not (a torn or garbled file)
        _garble(path, 4096, n=len(path.read_bytes()))
    for cmd in (["status"], ["export", "-f", "csv"], ["report"], ["annotate"]):
        code, out = _cli(cmd[0], str(proj), *cmd[1:])
        assert code == 2, (cmd, out)
        assert "is damaged" in out, (cmd, out)
        assert "writable" not in out, (cmd, out)
    assert not list(proj.parent.glob("*.csv"))  # export wrote nothing


def test_charged_interrupted_money_counts_as_spent(tmp_path) -> None:
    """A call a kill cut off after its request left costs its reservation (spent, so the
    guard and the router count it); one that never left costs nothing."""
    led = Ledger(tmp_path / "l.sqlite")
    run = led.start_run("p", "h", "{}", "random", 0, 1.0)
    sent = led.start_call(run, "k1", "annotate", "a", "llm", "llm", "m", None, "p", {}, 0.2,
                          sent=False)  # fmt: skip
    led.mark_sent(sent)
    led.start_call(run, "k2", "annotate", "b", "llm", "llm", "m", None, "p", {}, 0.3,
                   sent=False)  # fmt: skip
    led.start_call(run, "k3", "annotate", "c", "kw", "model", None, None, "p", {}, 0.1)
    n, amount = led.mark_interrupted()
    assert (n, round(amount, 9)) == (2, 0.3)
    money = led.money()
    assert round(money["committed"], 9) == 0.3
    assert money["interrupted_calls"] == 3  # all of them; the money only of those sent
    rows = dict(led.query("SELECT item_id, cost_source FROM calls"))
    assert rows == {"a": "reserved (possibly billed)", "b": "never sent",
                    "c": "reserved (possibly billed)"}  # fmt: skip
    led.close()


def test_an_error_reply_is_not_counted_as_sent(tmp_path) -> None:
    """A try answered with an HTTP error (not billed) clears the mark; a timeout keeps it."""
    led = Ledger(tmp_path / "l.sqlite")
    run = led.start_run("p", "h", "{}", "random", 0, 1.0)
    cid = led.start_call(run, "k", "annotate", "a", "llm", "llm", "m", None, "p", {}, 0.2,
                         sent=False)  # fmt: skip
    led.mark_sent(cid)
    led.mark_sent(cid, sent=False)
    assert led.mark_interrupted() == (0, 0.0)
    led.close()


def test_an_old_ledger_keeps_its_inflight_calls_charged(tmp_path) -> None:
    """A ledger written before ``sent_at`` existed: its calls count as sent."""
    path = tmp_path / "old.sqlite"
    led = Ledger(path)
    run = led.start_run("p", "h", "{}", "random", 0, 1.0)
    led.start_call(run, "k", "annotate", "a", "llm", "llm", "m", None, "p", {}, 0.2)
    led.close()
    con = sqlite3.connect(path)
    con.execute("ALTER TABLE calls DROP COLUMN sent_at")
    con.commit()
    con.close()
    led = Ledger(path)
    assert led.mark_interrupted() == (1, 0.2)
    led.close()
