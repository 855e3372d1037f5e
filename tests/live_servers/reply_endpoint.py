"""An OpenAI-compatible chat endpoint in a thread whose every reply a test writes, for
what an endpoint may send back (issue 37): empty choices, huge replies, odd usage."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Callable, Iterator

import pytest


class Endpoint:
    """An OpenAI-compatible chat server in a thread whose reply ``reply(body)`` makes."""

    def __init__(self, reply: Callable[[dict], dict]) -> None:
        self.bodies: list[dict] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                data = json.dumps({"data": [{"id": "m", "owned_by": "someone"}]}).encode()
                self._send(data)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.bodies.append(body)
                self._send(json.dumps(reply(body)).encode())

            def _send(self, data: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.api_base = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def answer(text: str, pt: int = 20, ct: int = 2) -> dict:
    """A chat completion whose message is ``text``, with its token usage."""
    return {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": pt, "completion_tokens": ct},
    }


@pytest.fixture
def endpoint() -> Iterator[Callable[[Callable[[dict], dict]], Endpoint]]:
    """``endpoint(reply)`` starts an :class:`Endpoint`; all are closed after the test."""
    made: list[Endpoint] = []

    def make(reply: Callable[[dict], dict]) -> Endpoint:
        made.append(Endpoint(reply))
        return made[-1]

    yield make
    for e in made:
        e.close()
