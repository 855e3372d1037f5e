"""The live source and runner in-process against the fake OpenAI-compatible server."""

from __future__ import annotations

import sqlite3
import time

import pytest

from live_servers.fixtures import SST2_TASK, FakeServer, sst2_items, write_project
from quorum.errors import ConfigError
from quorum.live.ledger.store import Ledger
from quorum.live.machines.calls import Redactor
from quorum.live.outputs.export import export_frame
from quorum.live.outputs.status import status
from quorum.live.project.config import load_project
from quorum.live.project.items import item_views, load_items
from quorum.live.run.problem import build_arms, make_parser
from quorum.live.run.runner import annotate
from quorum.live.run.source import LiveSource

ROUTER = "live_servers.routers:CascadeRouter"


def _llm(name: str, api_base: str, **kw) -> dict:
    d = {"name": name, "model": f"openai/{name}", "api_base": api_base, "max_retries": 2,
         "backoff_base": 0.01, "timeout": 5}  # fmt: skip
    d.update(kw)
    return d


def _project(tmp, data_dir, api_base, n=12, budget=1.0, **kw) -> dict:
    p = {
        "name": "t",
        "method": ROUTER,
        "features": "light",
        "items": sst2_items(data_dir, n),
        "task": SST2_TASK,
        "budget": {"limit": budget},
        "human_price": 0.01,
        "annotators": [
            _llm("fake-a", api_base, price=0.002),
            _llm("fake-b", api_base, input_cost_per_token=1e-6, output_cost_per_token=2e-6),
        ],
    }
    p.update(kw)
    return p


def _calls(cfg) -> list[dict]:
    con = sqlite3.connect(cfg.ledger_path)
    con.row_factory = sqlite3.Row
    rows = [dict(r) for r in con.execute("SELECT * FROM calls ORDER BY call_id")]
    con.close()
    return rows


def test_run_records_everything_and_never_pays_twice(tmp_path, shared_data_dir) -> None:
    with FakeServer(tmp_path, "--latency", "0.02") as srv:
        cfg = load_project(
            write_project(tmp_path, _project(tmp_path, shared_data_dir, srv.api_base))
        )
        s1 = annotate(cfg, quiet=True)
        n_server = len(srv.requests())
        calls = _calls(cfg)
        assert s1.status == "finished" and s1.labelled == 12
        assert n_server == sum(1 for c in calls if c["annotator"] != "gold")
        for c in calls:
            assert c["status"] in ("ok", "unparseable")
            assert c["finished_at"] >= c["created_at"]
            if c["annotator"] == "fake-a":
                assert c["cost"] == pytest.approx(0.002) and c["cost_source"] == "fixed price"
                assert c["token_cost"] is None and c["prompt_tokens"] > 0
            if c["annotator"] == "fake-b":
                want = c["prompt_tokens"] * 1e-6 + c["completion_tokens"] * 2e-6
                assert c["cost"] == pytest.approx(want) and c["token_cost"] == pytest.approx(want)
                assert c["cost"] <= c["reserved"]  # the reservation is an upper bound
                assert c["latency_s"] > 0 and c["response_raw"].startswith(("Label", "0."))
        first = export_frame(cfg)
        # a second run (and a third) finds every call in the ledger: no request is sent
        s2 = annotate(cfg, quiet=True)
        assert len(srv.requests()) == n_server
        assert len(_calls(cfg)) == len(calls)
        assert s2.spent == pytest.approx(s1.spent)
        second = export_frame(cfg)
    assert first[["item_id", "label", "cost"]].equals(second[["item_id", "label", "cost"]])
    st = status(cfg)
    assert st["labelled"] == 12 and st["labels_final"] and st["spent"] == s1.spent_str
    assert st["line"].startswith(f"labelled 12/12 | spent ${s1.spent_str} | budget left $")


def _source(cfg, ledger) -> LiveSource:
    items = load_items(cfg)
    arms, human = build_arms(cfg, items, item_views(items), Redactor())
    run_id = ledger.start_run("t", "x", "{}", "m", 0, cfg.budget.limit)
    return LiveSource(
        task_type=cfg.task.type, items=item_views(items), annotators=arms, ledger=ledger,
        run_id=run_id, budget_limit=cfg.budget.limit, parser=make_parser(cfg), human=human,
        concurrency=cfg.concurrency,
    )  # fmt: skip


def test_a_fixed_price_run_on_its_own_server_does_not_import_litellm(
    tmp_path, shared_data_dir
) -> None:
    """An LLM at its own ``api_base`` with a fixed price never needs litellm (no cost map,
    no token count for a price bound), so ``quorum annotate`` does not import it (about 5 s
    of CPU a run); its calls have no ``token_cost``."""
    import subprocess
    import sys

    from live_servers.fixtures import ROOT, env

    data = _project(tmp_path, shared_data_dir, "http://127.0.0.1:1/v1", n=6)
    with FakeServer(tmp_path, "--latency", "0.01") as srv:
        data["annotators"] = [_llm("fake-a", srv.api_base, price=0.002)]
        path = write_project(tmp_path, data)
        code = (
            "import sys\nfrom quorum.live.project.config import load_project\n"
            "from quorum.live.run.runner import annotate\n"
            f"s = annotate(load_project({str(path)!r}), quiet=True)\n"
            "print(s.status, s.labelled, 'litellm' in sys.modules)"
        )
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env(), cwd=str(ROOT), timeout=120)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == ["finished", "6", "False"]
    calls = [c for c in _calls(load_project(path)) if c["annotator"] == "fake-a"]
    assert len(calls) >= 6 and all(c["token_cost"] is None for c in calls)
    assert all(c["cost_source"] == "fixed price" for c in calls)


def test_annotate_many_is_concurrent_and_rate_limited(tmp_path, shared_data_dir) -> None:
    with FakeServer(tmp_path, "--latency", "0.2") as srv:
        proj = _project(tmp_path, shared_data_dir, srv.api_base, n=40, concurrency=64)
        proj["annotators"][0]["concurrency"] = 20
        proj["annotators"][1]["rate_limit"] = 10.0
        cfg = load_project(write_project(tmp_path, proj))
        ledger = Ledger(cfg.ledger_path)
        src = _source(cfg, ledger)
        try:
            ids = [it for it in src.items][:40]
            src.annotate("0", "fake-a")  # warm up litellm
            t = time.monotonic()
            outs = src.annotate_many([(i, "fake-a") for i in ids])
            fast = time.monotonic() - t
            assert [o.item_id for o in outs] == ids  # request order is kept
            assert all(o.status == "ok" for o in outs)
            assert fast < 40 * 0.2 / 4  # 20 in flight: ~0.4 s; sequential would be 8 s
            t = time.monotonic()
            src.annotate_many([(i, "fake-b") for i in ids[:20]])
            limited = time.monotonic() - t
            assert limited >= 0.9  # 10/s with a burst of 10: 20 calls need >= ~1 s
            # identical requests in one batch are made once
            before = len(srv.requests())
            outs = src.annotate_many([("39", "fake-a")] * 5 + [("0", "fake-b")])
            assert len(srv.requests()) == before  # both already in the ledger
            outs = src.annotate_many([("30", "fake-b")] * 3)  # new, three times at once
            assert len(srv.requests()) == before + 1
            assert len({(o.output, o.cost) for o in outs}) == 1
        finally:
            src.close()
            ledger.close()


def test_unparseable_answers_are_paid_not_guessed(tmp_path, shared_data_dir) -> None:
    with FakeServer(tmp_path, "--rate-garbage", "1.0") as srv:
        cfg = load_project(
            write_project(tmp_path, _project(tmp_path, shared_data_dir, srv.api_base, n=4))
        )
        annotate(cfg, quiet=True)
    llm = [c for c in _calls(cfg) if c["annotator"].startswith("fake")]
    assert llm and all(c["status"] == "unparseable" and c["output"] is None for c in llm)
    assert all(c["cost"] > 0 and c["parse_note"] for c in llm if c["kind"] == "annotate")


def test_local_callable_annotators(tmp_path, shared_data_dir) -> None:
    proj = _project(tmp_path, shared_data_dir, "http://127.0.0.1:9/v1", n=6)
    proj["annotators"] = [
        {"name": "kw", "kind": "model", "model": "live_servers.models:keyword_sentiment"},
        {"name": "named", "kind": "model", "model": "live_servers.models:named_sentiment",
         "price": 0.001},
        {"name": "crash", "kind": "model", "model": "live_servers.models:broken", "price": 0.5},
    ]  # fmt: skip
    cfg = load_project(write_project(tmp_path, proj))
    s = annotate(cfg, quiet=True)
    assert s.labelled == 6
    calls = _calls(cfg)
    kw = [c for c in calls if c["annotator"] == "kw" and c["kind"] == "annotate"]
    assert kw and all(c["status"] == "ok" and c["output"] in ("0", "1") for c in kw)
    named = [c for c in calls if c["annotator"] == "named" and c["kind"] == "annotate"]
    assert all(c["output"] in ("0", "1") and c["confidence"] in (0.9, 0.6) for c in named)
    assert all(c["cost"] == pytest.approx(0.001) for c in named)
    crash = [c for c in calls if c["annotator"] == "crash"]
    assert all(c["status"] == "failed" and c["cost"] == 0 for c in crash)


def test_missing_api_key_is_a_clear_error(tmp_path, shared_data_dir, monkeypatch) -> None:
    monkeypatch.delenv("QUORUM_TEST_NO_SUCH_KEY", raising=False)
    proj = _project(tmp_path, shared_data_dir, "http://127.0.0.1:9/v1", n=2)
    proj["annotators"][0]["api_key_env"] = "QUORUM_TEST_NO_SUCH_KEY"
    cfg = load_project(write_project(tmp_path, proj))
    with pytest.raises(ConfigError, match="QUORUM_TEST_NO_SUCH_KEY is not set"):
        annotate(cfg, quiet=True)
