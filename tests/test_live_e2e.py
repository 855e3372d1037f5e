"""End to end: a real OpenAI-compatible server (llama-cpp-python + SmolLM2-135M) on
127.0.0.1, `quorum annotate` on real SST-2 items, then the ledger, status and export."""

from __future__ import annotations

import json
import sqlite3

import pandas as pd
import pytest

from live_servers.fixtures import (
    SST2_TASK,
    quorum,
    quorum_here,
    sst2_items,
    write_project,
)
from live_servers.sessions import served_since

pytestmark = [pytest.mark.slow, pytest.mark.realdata]

IN_PRICE, OUT_PRICE = 2e-8, 4e-8


@pytest.fixture(scope="module")
def smollm2(smollm2_served):
    """The process's llama.cpp server with SmolLM2 (live_servers.sessions): its API base and
    its log."""
    return smollm2_served


def test_annotate_with_a_real_llm_server(tmp_path, shared_data_dir, smollm2) -> None:
    api_base, log = smollm2
    before = served_since(log)  # the process's server: other files' requests before ours
    # SmolLM2-135M cannot follow the paper's index prompt (its answers are recorded as
    # unparseable); an edited prompt file gets usable labels from it.
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "sst2.txt").write_text(
        "Is this movie review negative or positive? Review: {text}\n"
        "Answer with one word: negative or positive."
    )
    small = {"api_base": api_base, "input_cost_per_token": IN_PRICE, "max_tokens": 8,
             "output_cost_per_token": OUT_PRICE, "temperature": 0, "seed": 0,
             "concurrency": 2, "timeout": 60, "output": "free"}  # fmt: skip
    # output "free": the free-text path and paid verbalised confidences (with the default
    # "auto" a llama.cpp server answers under a grammar and confidences come from logprobs,
    # tests/test_live_output.py)
    proj = write_project(
        tmp_path,
        {
            "name": "sst2-smollm2",
            "method": "live_servers.routers:CascadeRouter",
            "method_params": {"batch": 3, "second": 1.0},
            "features": "light",
            "items": sst2_items(shared_data_dir, 6),
            "task": SST2_TASK,
            "budget": {"limit": 0.004},
            "human_price": 0.001,
            "annotators": [
                {"name": "smollm2", "model": "openai/smollm2", "prompt": "prompts/sst2.txt",
                 **small},
                {"name": "smollm2-paper", "model": "openai/smollm2", "price": 0.0002,
                 **{k: v for k, v in small.items() if "cost" not in k}},
                {"name": "minilm", "kind": "model", "model": "zero-shot", "price": 0.0001},
            ],
        },
    )  # fmt: skip
    res = quorum("annotate", str(proj), timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "finished" in res.stdout
    n_served = served_since(log, before)

    con = sqlite3.connect(tmp_path / ".quorum" / "ledger.sqlite")
    con.row_factory = sqlite3.Row
    run = con.execute("SELECT * FROM runs").fetchone()
    assert run["status"] == "finished" and run["method"].endswith("CascadeRouter")
    calls = [dict(r) for r in con.execute("SELECT * FROM calls")]
    labels = con.execute("SELECT count(*) FROM labels").fetchone()[0]
    con.close()
    small_calls = [c for c in calls if c["annotator"] == "smollm2"]
    paper_calls = [c for c in calls if c["annotator"] == "smollm2-paper"]
    first = [c for c in small_calls if c["kind"] == "annotate"]
    assert len(first) == 6  # every item, once
    assert sum(c["status"] == "ok" for c in first) >= 3  # the edited prompt works
    assert any(c["kind"] == "confidence" for c in small_calls)
    llm = small_calls + paper_calls
    assert n_served == len(llm)  # every request the server answered is in the ledger
    for c in llm:
        assert c["status"] in ("ok", "unparseable")
        assert c["prompt"].startswith(
            ("Is this movie review", "This is a text classification task", "How likely")
        )
        assert json.loads(c["params"])["max_tokens"] == 8
        assert c["response_raw"] is not None and c["latency_s"] > 0
        assert c["prompt_tokens"] > 20 and 1 <= c["completion_tokens"] <= 8
        if c["annotator"] == "smollm2":
            want = c["prompt_tokens"] * IN_PRICE + c["completion_tokens"] * OUT_PRICE
            assert c["cost"] == pytest.approx(want) and c["cost"] <= c["reserved"]
            assert c["cost_source"].startswith("tokens x price")
        else:
            assert c["cost"] == 0.0002 and c["cost_source"] == "fixed price"
        if c["status"] == "ok" and c["kind"] == "annotate":
            assert c["output"] in ("0", "1")
        if c["status"] == "unparseable":
            assert c["output"] is None and c["parse_note"] and c["cost"] > 0
    zs = [c for c in calls if c["annotator"] == "minilm" and c["kind"] == "annotate"]
    assert zs and paper_calls  # every item got a second opinion from one of them
    assert all(c["status"] == "ok" and 0 < c["confidence"] <= 1 for c in zs)
    assert labels == 6
    assert sum(c["cost"] for c in calls) <= 0.004

    # the same command again: everything comes from the ledger, the server sees nothing
    res = quorum("annotate", str(proj), "--quiet", timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert served_since(log, before) == n_served
    st = quorum_here("status", str(proj))
    assert st.returncode == 0 and "labelled 6/6" in st.stdout, st.stdout + st.stderr
    out = tmp_path / "labels.parquet"
    ex = quorum_here("export", str(proj), "-f", "parquet", "-o", str(out))
    assert ex.returncode == 0, ex.stderr
    df = pd.read_parquet(out)
    assert len(df) == 6 and {"label", "answers", "agreement", "cost"} <= set(df.columns)
    assert df["answers"].map(lambda s: "smollm2" in json.loads(s)).all()
    print(res.stdout, st.stdout, sep="\n")
