"""Issue 37, findings 6, 7 and 8: what an endpoint sends back, and one huge item.

- a 200 reply with ``choices: []`` is a failed try at no cost (like a reply that is not
  JSON), never a paid empty answer;
- a reply is stored up to ``max_reply_chars`` and the call says it was cut;
- one 5 MB item with token prices does not set every call's reservation: it is named, not
  sent (a failed call at no cost), and the rest of the project proceeds.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from live_servers.fixtures import write_project
from live_servers.reply_endpoint import answer as _answer
from quorum.live.project.config import load_project
from quorum.live.run.runner import annotate


def _project(folder: Path, api_base: str, texts: list[str], **llm) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = [{"id": f"i{k}", "text": t, "gold": str(k % 2)} for k, t in enumerate(texts)]
    (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return write_project(
        folder,
        {
            "name": "h37-replies",
            "method": "live_servers.routers:CascadeRouter",
            "method_params": {"confidence_every": 0, "human_every": 1000},
            "features": "light",
            "items": {"path": "items.jsonl", "id_column": "id", "gold_column": "gold"},
            "task": {"type": "classification", "labels": ["0", "1"],
                     "label_names": {"0": "negative", "1": "positive"}},
            "budget": {"limit": 1.0, "quality_checks": 0},
            "human_price": 0.5,
            "annotators": [{"name": "llm", "model": "openai/m", "api_base": api_base,
                            "output": "free", "max_retries": 1, "backoff_base": 0.01,
                            "dead_after": 100, **llm}],
        },
    )  # fmt: skip


def _calls(folder: Path) -> list[dict]:
    con = sqlite3.connect(folder / ".quorum" / "ledger.sqlite")
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute("SELECT * FROM calls WHERE annotator='llm'")]
    finally:
        con.close()


def _attempts(folder: Path) -> list[str]:
    con = sqlite3.connect(folder / ".quorum" / "ledger.sqlite")
    try:
        return [r[0] for r in con.execute("SELECT outcome FROM attempts")]
    finally:
        con.close()


def test_empty_choices_is_a_failed_try_at_no_cost(tmp_path, endpoint) -> None:
    ep = endpoint(lambda body: {"choices": [], "usage": {"prompt_tokens": 9,
                                                         "completion_tokens": 0}})  # fmt: skip
    proj = _project(tmp_path, ep.api_base, ["good", "bad", "fine"], price=0.01)
    annotate(load_project(proj), quiet=True)
    calls = _calls(tmp_path)
    assert calls and all(c["status"] == "failed" for c in calls), calls
    assert sum(c["cost"] for c in calls) == 0
    assert set(_attempts(tmp_path)) == {"invalid response"}


def test_a_huge_reply_is_stored_truncated(tmp_path, endpoint) -> None:
    big = "positive " + "x" * 5_000_000
    ep = endpoint(lambda body: _answer(big))
    proj = _project(tmp_path, ep.api_base, ["good", "bad"], price=0.01, max_reply_chars=1000)
    annotate(load_project(proj), quiet=True)
    calls = _calls(tmp_path)
    assert len(calls) == 2
    for c in calls:
        assert c["status"] == "ok" and c["output"] == "1" and c["cost"] == 0.01
        assert len(c["response_raw"]) == 1000
        assert c["error"] == f"reply truncated: {len(big)} characters, 1000 kept (max_reply_chars)"
    assert (tmp_path / ".quorum" / "ledger.sqlite").stat().st_size < 1_000_000


def test_the_default_reply_cap_is_documented() -> None:
    from quorum.live.project.annotators import AnnotatorConfig

    cap = AnnotatorConfig.model_fields["max_reply_chars"].default
    doc = (Path(__file__).resolve().parents[1] / "docs" / "live.md").read_text()
    assert f"`max_reply_chars` ({cap:,}".replace(",", "_") in doc.replace(",", "_")


def test_one_huge_item_is_named_and_does_not_block_the_rest(tmp_path, endpoint, caplog) -> None:
    ep = endpoint(lambda body: _answer("positive"))
    texts = ["good film", "bad film", "word " * 1_000_000, "fine film", "dull film"]
    proj = _project(tmp_path, ep.api_base, texts, input_cost_per_token=1e-6,
                    output_cost_per_token=2e-6, max_tokens=4)  # fmt: skip
    with caplog.at_level("WARNING", logger="quorum.live"):
        annotate(load_project(proj), quiet=True)
    assert any("item 'i2'" in r.getMessage() for r in caplog.records)
    calls = {c["item_id"]: c for c in _calls(tmp_path)}
    assert set(calls) == {"i0", "i1", "i2", "i3", "i4"}
    huge = calls.pop("i2")
    assert huge["status"] == "failed" and huge["cost"] == 0
    assert "item 'i2' not sent" in huge["error"] and "max_prompt_tokens" in huge["error"]
    assert all(c["status"] == "ok" for c in calls.values()), calls
    # the reservation is the bound of a normal item, not of the huge one
    assert max(c["reserved"] for c in calls.values()) < 0.001
    assert len(ep.bodies) == 4
