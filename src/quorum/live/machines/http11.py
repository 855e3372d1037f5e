"""A minimal HTTP/1.1 client for plain-``http://`` JSON POSTs on keep-alive connections.

A chat completion to a local or in-cluster server is one small POST and one small JSON
reply. A general client (aiohttp) builds request objects, header multidicts, cookie jars
and tracing hooks for each; here one asyncio protocol per connection writes the request
bytes and parses the status line, the headers and a ``Content-Length`` or chunked body.
Idle connections are reused; one that the server closes, or that times out, is dropped.
``https://`` stays with aiohttp (:mod:`quorum.live.machines.openai_http`).
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit


class HTTPError(Exception):
    """The connection failed or broke before a whole reply came."""


class _Conn(asyncio.Protocol):
    """One keep-alive connection; at most one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future | None = None
        self.closed = False
        self._reset()

    def _reset(self) -> None:
        self.head_end = -1
        self.status = 0
        self.headers: dict[str, str] = {}
        self.length: int | None = None
        self.chunked = False

    # -- asyncio.Protocol ----------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        self._check(eof=False)

    def eof_received(self) -> bool:
        self.closed = True
        self._check(eof=True)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        w = self.waiter
        if w is not None and not w.done():
            w.set_exception(HTTPError(f"connection lost: {exc or 'closed by the server'}"))

    # -- parsing -------------------------------------------------------------------------
    def _check(self, eof: bool) -> None:
        w = self.waiter
        if w is None or w.done():
            return
        if self.head_end < 0:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            lines = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
            try:
                self.status = int(lines[0].split(" ", 2)[1])
            except (IndexError, ValueError):
                w.set_exception(HTTPError(f"bad status line {lines[0][:80]!r}"))
                return
            for line in lines[1:]:
                k, _, v = line.partition(":")
                self.headers[k.strip().lower()] = v.strip()
            self.head_end = end + 4
            te = self.headers.get("transfer-encoding", "").lower()
            self.chunked = "chunked" in te
            if not self.chunked and "content-length" in self.headers:
                self.length = int(self.headers["content-length"])
        body = memoryview(self.buf)[self.head_end :]
        if self.chunked:
            out, rest = _dechunk(bytes(body))
            if out is None:
                return
            self._done(out, rest)
        elif self.length is not None:
            if len(body) < self.length:
                return
            self._done(bytes(body[: self.length]), bytes(body[self.length :]))
        elif eof:  # no length: the body ends with the connection
            self._done(bytes(body), b"")

    def _done(self, body: bytes, rest: bytes) -> None:
        w = self.waiter
        status, headers = self.status, self.headers
        self.buf = bytearray(rest)
        self._reset()
        if headers.get("connection", "").lower() == "close":
            self.closed = True
        if w is not None and not w.done():
            w.set_result((status, headers, body))

    async def request(self, data: bytes) -> tuple[int, dict[str, str], bytes]:
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(data)
        return await self.waiter


def _dechunk(data: bytes) -> tuple[bytes | None, bytes]:
    """(body, bytes after it) of a complete chunked body, or (None, b"") while incomplete."""
    out, pos = bytearray(), 0
    while True:
        eol = data.find(b"\r\n", pos)
        if eol < 0:
            return None, b""
        size = int(data[pos:eol].split(b";", 1)[0] or b"0", 16)
        start = eol + 2
        if size == 0:
            end = data.find(b"\r\n\r\n", eol)  # trailers, then an empty line
            if data[start : start + 2] == b"\r\n":
                return bytes(out), data[start + 2 :]
            if end < 0:
                return None, b""
            return bytes(out), data[end + 4 :]
        if len(data) < start + size + 2:
            return None, b""
        out += data[start : start + size]
        pos = start + size + 2


class HTTP11Pool:
    """POSTs to one ``http://host:port/path`` over a pool of keep-alive connections."""

    def __init__(self, url: str, headers: dict[str, str], timeout: float) -> None:
        u = urlsplit(url)
        if u.scheme != "http" or not u.hostname:
            raise ValueError(f"HTTP11Pool serves plain http:// URLs, got {url!r}")
        self.host = u.hostname
        self.port = u.port or 80
        self.timeout = timeout
        path = u.path or "/"
        if u.query:
            path += "?" + u.query
        host = self.host if u.port is None else f"{self.host}:{self.port}"
        lines = [f"POST {path} HTTP/1.1", f"Host: {host}", "Connection: keep-alive"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        self._head = ("\r\n".join(lines) + "\r\nContent-Length: ").encode("latin-1")
        self._idle: list[_Conn] = []

    async def _connect(self) -> _Conn:
        loop = asyncio.get_running_loop()
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(_Conn, self.host, self.port), self.timeout
            )
        except OSError as exc:
            raise HTTPError(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
        return conn

    async def post(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
        """(status, lower-cased headers, body); raises HTTPError or TimeoutError."""
        conn = None
        while self._idle:
            c = self._idle.pop()
            if not c.closed and c.transport is not None and not c.transport.is_closing():
                conn = c
                break
        if conn is None:
            conn = await self._connect()
        loop = asyncio.get_running_loop()
        data = self._head + str(len(body)).encode() + b"\r\n\r\n" + body
        timer = loop.call_later(self.timeout, _expire, conn)
        try:
            reply = await conn.request(data)
        except BaseException:
            if conn.transport is not None:
                conn.transport.close()
            raise
        finally:
            timer.cancel()
        if conn.closed:
            if conn.transport is not None:
                conn.transport.close()
        else:
            self._idle.append(conn)
        return reply

    def close(self) -> None:
        for c in self._idle:
            if c.transport is not None:
                c.transport.close()
        self._idle = []


def _expire(conn: _Conn) -> None:
    w = conn.waiter
    if w is not None and not w.done():
        w.set_exception(TimeoutError("no reply in time"))
