"""A fake OpenAI-compatible chat server with fault injection (binds 127.0.0.1 only).

Answers are deterministic: ``Label: i`` with ``i = hash(model, prompt) % labels`` (or a
probability for confidence prompts, or the first words of the text for summaries), so a
re-issued call answers the same. Faults are drawn per request from a seeded generator:
429 (with Retry-After), 500, a hang longer than the client's timeout, a garbage answer,
a slow (but in-time) answer, a 200 whose body is not JSON (``broken``), and a 401 for a
request without the key given by ``--require-key``. Every request is appended to a JSONL
log *when it arrives* with its planned outcome, so a test can count how often each request
reached the server.

Run: ``python fake_openai.py --port 0 --log req.jsonl`` prints ``PORT <n>`` when ready.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import sys
import time

from aiohttp import web


def _key(model: str, messages: list[dict]) -> str:
    body = json.dumps({"model": model, "messages": messages}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


class FakeServer:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        self.log = open(args.log, "a", buffering=1) if args.log else None  # noqa: SIM115
        self.n = 0

    def _plan(self) -> str:
        a = self.args
        r = self.rng.random()
        for name, rate in (
            ("429", a.rate_429),
            ("500", a.rate_500),
            ("timeout", a.rate_timeout),
            ("garbage", a.rate_garbage),
            ("slow", a.rate_slow),
            ("echo_key", a.rate_echo_key),
            ("broken", a.rate_broken),
        ):
            if r < rate:
                return name
            r -= rate
        return "ok"

    def _answer(self, model: str, content: str) -> str:
        h = int(hashlib.sha256(f"{model}\n{content}".encode()).hexdigest(), 16)
        if content.startswith("How likely"):
            return f"{(h % 100) / 100:.2f}"
        if "summarization task" in content:
            text = content.rsplit("following text", 1)[-1]
            return " ".join(text.split()[:12])
        if "span annotation task" in content:
            return "[]"
        if self.args.mode == "first_label":
            return "Label: 0"
        return f"Label: {h % self.args.labels}"

    async def chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        model = body.get("model", "")
        messages = body.get("messages", [])
        content = messages[-1]["content"] if messages else ""
        plan = "dead" if self.args.dead else self._plan()
        key = self.args.require_key
        if key and request.headers.get("Authorization", "") != f"Bearer {key}":
            plan = "401"
        self.n += 1
        if self.log:
            rec = {"t": time.time(), "key": _key(model, messages), "model": model, "plan": plan,
                   "constrained": "grammar" in body or "response_format" in body,
                   "chars": len(content)}  # fmt: skip
            self.log.write(json.dumps(rec) + "\n")
        await asyncio.sleep(self.args.latency + self.rng.random() * self.args.jitter)
        if plan in ("500", "dead"):
            return web.json_response({"error": {"message": "injected 500"}}, status=500)
        if plan == "401":
            return web.json_response(
                {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}},
                status=401,
            )
        if plan == "broken":
            return web.Response(text="<html><body>502 proxy says hi</body></html>",
                                content_type="text/html")  # fmt: skip
        if plan == "429":
            return web.json_response(
                {"error": {"message": "rate limited", "type": "rate_limit"}},
                status=429,
                headers={"Retry-After": "0.05"},
            )
        if plan == "echo_key":
            auth = request.headers.get("Authorization", "")
            msg = f"Incorrect API key provided: {auth}"
            return web.json_response({"error": {"message": msg}}, status=500)
        if self.args.max_prompt_chars and len(content) > self.args.max_prompt_chars:
            return web.json_response(  # as llama.cpp's server: with or without a grammar
                {"error": {"message": "Requested tokens exceed context window",
                           "code": "context_length_exceeded"}}, status=400,
            )  # fmt: skip
        if plan == "timeout":
            await asyncio.sleep(self.args.hang)
        if plan == "slow":
            await asyncio.sleep(self.args.slow)
        answer = "%%%garbage%%% ???" if plan == "garbage" else self._answer(model, content)
        pt = len(content.split()) + 5
        ct = len(answer.split())
        return web.json_response(
            {
                "id": f"chatcmpl-{self.n}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": answer},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
            }
        )

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "fake", "object": "model"}]})


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--log", default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--labels", type=int, default=2)
    p.add_argument("--mode", default="hash", choices=["hash", "first_label"])
    p.add_argument("--latency", type=float, default=0.0)
    p.add_argument("--jitter", type=float, default=0.0)
    p.add_argument("--rate-429", type=float, default=0.0)
    p.add_argument("--rate-500", type=float, default=0.0)
    p.add_argument("--rate-timeout", type=float, default=0.0)
    p.add_argument("--rate-garbage", type=float, default=0.0)
    p.add_argument("--rate-slow", type=float, default=0.0)
    p.add_argument("--rate-echo-key", type=float, default=0.0)
    p.add_argument("--rate-broken", type=float, default=0.0, help="200 with an HTML body")
    p.add_argument("--require-key", default=None, help="401 unless this bearer key is sent")
    p.add_argument("--hang", type=float, default=5.0, help="seconds a 'timeout' request hangs")
    p.add_argument("--slow", type=float, default=0.3, help="extra seconds of a 'slow' answer")
    p.add_argument("--dead", action="store_true", help="answer every request with a 500")
    p.add_argument("--max-prompt-chars", type=int, default=0,
                   help="a 400 (context_length_exceeded) for a longer prompt")  # fmt: skip
    return p.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    srv = FakeServer(args)
    app = web.Application()
    app.router.add_post("/v1/chat/completions", srv.chat)
    app.router.add_post("/chat/completions", srv.chat)
    app.router.add_get("/v1/models", srv.models)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", args.port)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    while True:
        await asyncio.sleep(3600)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:  # pragma: no cover
        sys.exit(0)


if __name__ == "__main__":
    main()
