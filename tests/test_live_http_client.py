"""The lean OpenAI-compatible client gives the same answers, costs and failures as litellm."""

from __future__ import annotations

import sqlite3

import pytest

from live_servers.fixtures import SST2_TASK, FakeServer, free_port, sst2_items, write_project
from quorum.errors import ConfigError
from quorum.live.ledger.store import Ledger
from quorum.live.machines.calls import Redactor
from quorum.live.machines.llm import LLMAnnotator
from quorum.live.machines.openai_http import classify_status, direct_model
from quorum.live.project.config import load_project
from quorum.live.project.items import item_views, load_items
from quorum.live.run.problem import build_arms, make_parser
from quorum.live.run.source import LiveSource


def _project(data_dir, api_base: str, client: str, n: int) -> dict:
    def llm(name: str, **kw) -> dict:
        return {"name": name, "model": f"openai/{name}", "api_base": api_base, "client": client,
                "max_retries": 3, "backoff_base": 0.01, "timeout": 1.0, "dead_after": 100,
                **kw}  # fmt: skip

    return {
        "name": f"t-{client}",
        "method": "random",
        "features": "light",
        "items": sst2_items(data_dir, n),
        "task": SST2_TASK,
        "budget": {"limit": 10.0},
        "human_price": 0.01,
        "annotators": [
            llm("fake-a", price=0.002),
            llm("fake-b", input_cost_per_token=1e-6, output_cost_per_token=2e-6),
        ],
    }


def _run(tmp_path, data_dir, api_base: str, client: str, n: int) -> tuple[list, list[dict]]:
    folder = tmp_path / client
    folder.mkdir()
    cfg = load_project(write_project(folder, _project(data_dir, api_base, client, n)))
    items = load_items(cfg)
    arms, human = build_arms(cfg, items, item_views(items), Redactor())
    llms = [a for a in arms.values() if isinstance(a, LLMAnnotator)]
    assert len(llms) == 2 and all((a._direct is not None) == (client == "http") for a in llms)
    ledger = Ledger(cfg.ledger_path)
    run_id = ledger.start_run("t", "x", "{}", "t", 0, cfg.budget.limit)
    src = LiveSource(
        task_type=cfg.task.type, items=item_views(items), annotators=arms, ledger=ledger,
        run_id=run_id, budget_limit=cfg.budget.limit, parser=make_parser(cfg), human=human,
        concurrency=16,
    )  # fmt: skip
    try:
        ids = list(src.items)
        outs = src.annotate_many([(i, a) for i in ids for a in ("fake-a", "fake-b")])
        outs += [src.confidence(i, "fake-b") for i in ids[:4]]
    finally:
        src.close()
        ledger.close()
    con = sqlite3.connect(cfg.ledger_path)
    con.row_factory = sqlite3.Row
    rows = [dict(r) for r in con.execute("SELECT * FROM calls ORDER BY item_id, annotator, kind")]
    con.close()
    return outs, rows


_SAME = ("item_id", "annotator", "kind", "status", "output", "confidence", "cost", "cost_source",
         "token_cost", "prompt_tokens", "completion_tokens", "response_raw")  # fmt: skip


def test_same_results_as_litellm(tmp_path, shared_data_dir):
    with FakeServer(tmp_path, "--latency", "0.01") as srv:
        a_outs, a_rows = _run(tmp_path, shared_data_dir, srv.api_base, "litellm", 12)
        b_outs, b_rows = _run(tmp_path, shared_data_dir, srv.api_base, "http", 12)
        bodies = srv.requests()
    assert len(bodies) == 2 * (24 + 4)  # each request reached the server once per client
    key = lambda o: (o.item_id, o.annotator, o.output, o.cost, o.status, o.confidence)  # noqa: E731
    assert [key(o) for o in a_outs] == [key(o) for o in b_outs]
    assert all(o.status == "ok" for o in a_outs)
    assert [{k: r[k] for k in _SAME} for r in a_rows] == [{k: r[k] for k in _SAME} for r in b_rows]
    assert any(r["token_cost"] for r in b_rows) and any(r["confidence"] for r in b_rows)
    # the server saw the same request bodies (model name and messages) from both clients
    per = {}
    for r in bodies:
        per.setdefault(r["key"], 0)
        per[r["key"]] += 1
    assert set(per.values()) == {2}


@pytest.mark.slow
def test_faults_are_classified_as_with_litellm(tmp_path, shared_data_dir):
    """429 / 500 / timeouts / a closed port give the same ledger outcomes on both paths."""
    faults = ["--rate-429", "0.2", "--rate-500", "0.2", "--rate-timeout", "0.1",
              "--hang", "1.5", "--seed", "5"]  # fmt: skip
    outcomes = {}
    with FakeServer(tmp_path, *faults) as srv:
        for client in ("litellm", "http"):
            _run(tmp_path, shared_data_dir, srv.api_base, client, 8)
            con = sqlite3.connect(tmp_path / client / ".quorum" / "ledger.sqlite")
            outcomes[client] = {r[0] for r in con.execute("SELECT outcome FROM attempts")}
            con.close()
    assert outcomes["http"] == outcomes["litellm"] >= {"429", "500", "timeout"}
    gone = f"http://127.0.0.1:{free_port()}/v1"
    for client in ("litellm", "http"):
        (tmp_path / "gone").mkdir(exist_ok=True)
        folder = tmp_path / "gone" / client
        _, rows = _run(folder.parent, shared_data_dir, gone, client, 1)
        assert {r["status"] for r in rows} == {"failed"}


def test_route_choice_and_status_classes(tmp_path, shared_data_dir):
    assert direct_model("openai/fake", "http://x/v1") == "fake"
    assert direct_model("openai/fake", None) is None
    assert direct_model("anthropic/claude", "http://x/v1") is None
    assert (
        classify_status(429, b'{"error": {"message": "slow down"}}', {"Retry-After": "2"}).wait == 2
    )
    assert classify_status(401, b"{}", {}).fatal and classify_status(404, b"", {}).fatal
    e = classify_status(503, b"oops", {})
    assert e.outcome == "503" and e.retryable and "oops" in str(e)
    assert not classify_status(400, b"{}", {}).retryable
    proj = _project(shared_data_dir, "http://127.0.0.1:9/v1", "http", 2)
    proj["annotators"][0]["model"] = "anthropic/claude-x"
    cfg = load_project(write_project(tmp_path, proj))
    items = load_items(cfg)
    with pytest.raises(ConfigError, match="client 'http' needs"):
        LLMAnnotator(cfg.annotators[0], None, item_views(items), Redactor(), 16)  # type: ignore[arg-type]


CHUNKED = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    b'3\r\n{"a\r\n5\r\n": 1}\r\n0\r\n\r\n'
)


def test_http11_chunked_close_reuse_and_timeout():
    """Mechanics of the minimal HTTP/1.1 client against a raw asyncio server."""
    import asyncio

    from quorum.live.machines.http11 import HTTP11Pool, HTTPError, _dechunk

    assert _dechunk(b"4\r\nWiki\r\n5;x=1\r\npedia\r\n0\r\n\r\nNEXT") == (b"Wikipedia", b"NEXT")
    assert _dechunk(b"4\r\nWik") == (None, b"")

    seen = {"conns": 0, "reqs": 0}

    async def handle(reader, writer):
        seen["conns"] += 1
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            n = int(
                next(h for h in lines if h.lower().startswith(b"content-length")).split(b":")[1]
            )
            body = await reader.readexactly(n)
            seen["reqs"] += 1
            if body == b"slow":
                await asyncio.sleep(1.0)
            if body == b"chunked":
                writer.write(CHUNKED)
                await writer.drain()
                writer.close()
                return
            writer.write(b"HTTP/1.1 429 Too Many\r\nRetry-After: 1\r\nContent-Length: 2\r\n\r\n{}")
            await writer.drain()

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        pool = HTTP11Pool(f"http://127.0.0.1:{port}/v1/x", {"X-A": "b"}, timeout=0.3)
        for _ in range(3):  # one keep-alive connection serves all three
            status, headers, body = await pool.post(b"{}")
            assert (status, headers["retry-after"], body) == (429, "1", b"{}")
        assert seen == {"conns": 1, "reqs": 3}
        want = {"transfer-encoding": "chunked", "connection": "close"}
        assert await pool.post(b"chunked") == (200, want, b'{"a": 1}')
        assert await pool.post(b"{}") == (429, {"retry-after": "1", "content-length": "2"}, b"{}")
        assert seen["conns"] == 2  # the closed connection was not reused
        with pytest.raises(TimeoutError):
            await pool.post(b"slow")
        pool.close()
        server.close()
        closed = HTTP11Pool(f"http://127.0.0.1:{free_port()}/v1", {}, timeout=0.5)
        with pytest.raises(HTTPError, match="cannot connect"):
            await closed.post(b"{}")

    asyncio.run(main())
