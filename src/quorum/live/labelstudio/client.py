"""The Label Studio REST client: JSON over HTTP with retries, and the API token.

``token`` is a legacy API token (sent as ``Token``) or a personal access token (a JWT
refresh token, exchanged for short-lived ``Bearer`` access tokens, again when one expires).
The token lives only in the client's headers, never in logs, reprs, files or exports.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import httpx

from quorum.errors import ConfigError, QuorumError

log = logging.getLogger("quorum.live")


class LabelStudioError(QuorumError):
    """Label Studio refused a request or could not be reached."""


class LabelStudioClient:
    """A small JSON client. ``token`` is a legacy API token (``Token``) or a personal access
    token (a JWT refresh token, exchanged for short-lived ``Bearer`` access tokens)."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
    ) -> None:
        if not token:
            raise ConfigError("Label Studio: empty API token")
        self.url = url.rstrip("/")
        self._token = token
        self._pat = token.count(".") == 2
        self.max_retries = max_retries
        self.backoff = backoff
        self._http = httpx.Client(base_url=self.url, timeout=timeout)
        self._auth: dict[str, str] = {}
        if not self._pat:
            self._auth = {"Authorization": f"Token {token}"}

    def __repr__(self) -> str:
        return f"LabelStudioClient(url={self.url!r})"

    def _refresh(self) -> None:
        r = self._http.post("/api/token/refresh/", json={"refresh": self._token})
        if r.status_code != 200:
            raise LabelStudioError(
                f"Label Studio {self.url}: the personal access token was refused "
                f"(HTTP {r.status_code}: {r.text[:200].replace(self._token, '***')})"
            )
        self._auth = {"Authorization": f"Bearer {r.json()['access']}"}

    def request(self, method: str, path: str, **kw: Any) -> Any:
        """One API call with retries on connection errors and 5xx; JSON back (or None)."""
        refreshed = False
        for attempt in range(self.max_retries + 1):
            try:
                if not self._auth:
                    self._refresh()
                r = self._http.request(method, path, headers=self._auth, **kw)
            except httpx.TransportError as exc:
                if attempt >= self.max_retries:
                    raise LabelStudioError(
                        f"Label Studio {self.url} unreachable ({type(exc).__name__})"
                    ) from None
                time.sleep(self.backoff * 2**attempt)
                continue
            if r.status_code == 401 and self._pat and not refreshed:
                refreshed = True
                self._auth = {}
                continue
            if r.status_code >= 500 and attempt < self.max_retries:
                time.sleep(self.backoff * 2**attempt)
                continue
            if r.status_code >= 400:
                raise LabelStudioError(
                    f"Label Studio {method} {path}: HTTP {r.status_code}: {r.text[:300]}"
                )
            return r.json() if r.content else None
        raise LabelStudioError(f"Label Studio {method} {path}: no answer")

    def close(self) -> None:
        self._http.close()


class Outage:
    """Says once per outage that the server at ``url`` does not answer, and once that it
    answers again (with how long it was away); ``since``: when it stopped answering."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.since: float | None = None

    def down(self, exc: Exception) -> None:
        """The server did not answer (the wait goes on)."""
        if self.since is None:
            self.since = time.monotonic()
            log.warning(
                "Label Studio at %s does not answer (%s); still waiting: the time counts "
                "against --wait, nothing is lost (answers are read when it is back)",
                self.url, exc,
            )  # fmt: skip

    def up(self) -> None:
        """The server answered."""
        if self.since is not None:
            log.warning(
                "Label Studio at %s answers again after %.0f s", self.url,
                time.monotonic() - self.since,
            )  # fmt: skip
            self.since = None
