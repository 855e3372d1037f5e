"""A lean client for OpenAI-compatible chat servers (``openai/NAME`` + ``api_base``).

litellm spends several milliseconds of CPU per call (request transformation, pydantic
objects, cost bookkeeping, logging hooks) on top of the OpenAI SDK's own work; at 64 calls
in flight on a small machine that, not the server, limits throughput. For the one route
where litellm only forwards the request (an ``openai/`` model at a given ``api_base``), this
client posts the same body litellm sends (``model`` without the ``openai/`` prefix,
``messages``, the parameters) over pooled keep-alive connections and reads the JSON back:
:mod:`quorum.live.machines.http11` for ``http://`` servers, aiohttp for ``https://``.

Errors become :class:`HTTPCallError` with the outcome names the ledger already uses
(``429``, ``timeout``, ``connection``, ``500``, ``auth 401``...). Set ``client: litellm`` on
an annotator to keep litellm.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

PREFIX = "openai/"


def direct_model(model: str | None, api_base: str | None) -> str | None:
    """The server-side model name when the direct client can serve this route, else None."""
    if model and api_base and model.startswith(PREFIX) and len(model) > len(PREFIX):
        return model[len(PREFIX) :]
    return None


class HTTPCallError(Exception):
    """A failed try: ``outcome`` for the ledger, ``retryable``, ``fatal`` for the endpoint,
    ``wait`` = the server's Retry-After in seconds."""

    def __init__(
        self,
        message: str,
        outcome: str,
        retryable: bool,
        fatal: bool = False,
        wait: float | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.retryable = retryable
        self.fatal = fatal
        self.wait = wait
        self.status_code = status


def check_choices(choices: Any) -> None:
    """A reply with no choice (``"choices": []``, none at all) holds no answer: a failed
    try at no cost, like a reply that is not JSON (issue 37), never a paid empty answer."""
    if not isinstance(choices, list) or not choices:
        raise HTTPCallError(
            f"reply has no choices ({'choices: []' if choices == [] else 'no choices list'})",
            "invalid response",
            True,
        )


def _retry_after(headers: Any) -> float | None:
    try:
        val = headers.get("retry-after") or headers.get("Retry-After")
        return min(60.0, float(val)) if val is not None else None
    except (TypeError, ValueError, AttributeError):
        return None


def _error_text(body: bytes) -> str:
    try:
        data = json.loads(body)
        err = data.get("error", data) if isinstance(data, dict) else data
        msg = err.get("message") if isinstance(err, dict) else err
        return str(msg)[:1500]
    except (ValueError, AttributeError):
        return body[:1500].decode("utf-8", "replace")


def classify_status(status: int, body: bytes, headers: Any) -> HTTPCallError:
    """An HTTP error status as litellm's classes would be classified (see llm._classify)."""
    text = f"HTTP {status}: {_error_text(body)}"
    if status == 429:
        return HTTPCallError(text, "429", True, wait=_retry_after(headers), status=status)
    if status in (401, 403):
        return HTTPCallError(text, f"auth {status}", False, fatal=True, status=status)
    if status == 404:
        return HTTPCallError(text, f"not found {status}", False, fatal=True, status=status)
    if status >= 500:
        return HTTPCallError(text, str(status), True, wait=_retry_after(headers), status=status)
    return HTTPCallError(text, f"bad request {status}", False, status=status)


class OpenAIHTTPClient:
    """Posts chat completions to ``{api_base}/chat/completions``; one session per loop.

    Parameters: ``api_base``; ``api_key`` (sent as a Bearer token); ``timeout`` per try in
    seconds. The session (keep-alive pool) is made on the first call, on the running loop.
    """

    def __init__(self, api_base: str, api_key: str | None, timeout: float) -> None:
        self.url = api_base.rstrip("/") + "/chat/completions"
        self.timeout = timeout
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self._session: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pool: Any = None
        self.plain = self.url.startswith("http://")

    def _get_pool(self) -> Any:
        from quorum.live.machines.http11 import HTTP11Pool

        loop = asyncio.get_running_loop()
        if self._pool is None or self._loop is not loop:
            self._loop = loop
            self._pool = HTTP11Pool(self.url, self.headers, self.timeout)
        return self._pool

    async def _post_plain(self, body: bytes) -> tuple[int, Any, bytes]:
        from quorum.live.machines.http11 import HTTPError

        try:
            return await self._get_pool().post(body)
        except TimeoutError as exc:
            msg = f"Timeout: no reply within {self.timeout} s"
            raise HTTPCallError(msg, "timeout", True) from exc
        except (HTTPError, OSError) as exc:
            raise HTTPCallError(f"Connection error: {exc}", "connection", True) from exc

    def _get_session(self) -> Any:
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            self._loop = loop
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                headers=self.headers,
                skip_auto_headers=("User-Agent",),
            )
        return self._session

    async def complete(
        self, model: str, messages: list[dict[str, str]], params: dict[str, Any]
    ) -> dict[str, Any]:
        """One try; the parsed JSON reply, or :class:`HTTPCallError`."""

        body = json.dumps({"messages": messages, "model": model, **params}).encode()
        if self.plain:
            status, headers, raw = await self._post_plain(body)
        else:
            status, headers, raw = await self._post_aiohttp(body)
        if status >= 400:
            raise classify_status(status, raw, headers)
        try:
            data = json.loads(raw)
        except ValueError as exc:
            snippet = raw[:200].decode("utf-8", "replace")
            raise HTTPCallError(f"invalid JSON reply: {snippet}", "invalid response", True) from exc
        if not isinstance(data, dict):
            raise HTTPCallError("reply is not a JSON object", "invalid response", True)
        check_choices(data.get("choices"))
        return data

    async def _post_aiohttp(self, body: bytes) -> tuple[int, Any, bytes]:
        import aiohttp

        session = self._get_session()
        try:
            async with session.post(self.url, data=body) as resp:
                raw = await resp.read()
                status = resp.status
                headers = resp.headers
        except TimeoutError as exc:  # aiohttp's total timeout and ServerTimeoutError
            msg = f"Timeout: no reply within {self.timeout} s"
            raise HTTPCallError(msg, "timeout", True) from exc
        except aiohttp.ClientError as exc:
            raise HTTPCallError(f"Connection error: {exc}", "connection", True) from exc
        except OSError as exc:
            raise HTTPCallError(f"Connection error: {exc}", "connection", True) from exc
        return status, headers, raw

    def close(self) -> None:
        """Close the session from any thread (a no-op when none was opened)."""
        s, loop, pool = self._session, self._loop, self._pool
        self._session = self._pool = None
        if pool is not None and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(pool.close)
        if s is None or s.closed or loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            loop.create_task(s.close())
        elif loop.is_running():
            asyncio.run_coroutine_threadsafe(s.close(), loop).result(timeout=10)
        else:
            loop.run_until_complete(s.close())


def reply_fields(data: dict[str, Any]) -> tuple[str | None, int | None, int | None]:
    """(content, prompt_tokens, completion_tokens) of a chat completion reply."""
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        content = None
    usage = data.get("usage") or {}
    pt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    ct = usage.get("completion_tokens") if isinstance(usage, dict) else None
    return None if content is None else str(content), token_count(pt), token_count(ct)


def token_count(n: Any) -> int | None:
    """A token count a reply reports, or None where it is not a plain count: a negative
    count (which would make a call's cost negative and the budget grow), a bool, a float
    or text, or more than a billion (issue 37). Without it the call is charged its
    reservation bound."""
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= 10**9:
        return None
    return n
