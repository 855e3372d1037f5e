"""The pieces every annotator shares: requests, responses, rate limits, health, secrets."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from quorum.tasks.base import ItemView
from quorum.tasks.parsing import Parsed

CallKind = Literal["annotate", "confidence"]
#: ``on_attempt(n, started_at, latency_s, outcome, error)``: one HTTP try, for the ledger
AttemptHook = Callable[[int, float, float, str, str | None], None]
#: the ``outcome`` an annotator that ``reports_sends`` gives ``on_attempt`` just before a
#: try's request leaves (the ledger records it first: a call a kill cuts off before its
#: request left was never billed, issue 37)
SENDING = "sending"
#: failed tries that may still have been billed (the request may have been served)
MAYBE_BILLED = ("timeout", "connection")


def request_key(payload: dict[str, Any]) -> str:
    """The cache key: a hash of (model, prompt, parameters), never of secrets."""
    body = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Request:
    key: str
    kind: CallKind
    item: ItemView
    annotator: str
    prompt: str
    params: dict[str, Any]
    reserved: float
    messages: list[dict[str, str]] | None = None
    prediction: str | None = None
    #: why this request is not sent (an item too long for the annotator): a failed call
    #: at no cost, recorded with this reason
    refuse: str | None = None

    @property
    def item_id(self) -> str:
        return self.item.item_id


@dataclass
class Response:
    """What came back from one call (after retries). ``status`` failed = no usable reply."""

    status: Literal["ok", "failed"]
    raw: str | None = None
    cost: float = 0.0
    cost_source: str = "fixed"
    token_cost: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency: float = 0.0
    attempts: int = 1
    error: str | None = None
    confidence: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Redactor:
    """Replaces secret values by ``***`` in any text bound for the ledger, logs or exports.

    Besides the keys named by ``api_key_env``, it knows the values of environment variables
    that look like credentials (``*_API_KEY``, ``*_TOKEN``, ``*SECRET*``...), which litellm may
    pick up by itself for a provider.
    """

    _ENV_HINTS = ("API_KEY", "_TOKEN", "SECRET", "PASSWORD", "ACCESS_KEY")

    def __init__(self, secrets: Iterable[str] = (), from_env: bool = True) -> None:
        found = list(secrets)
        if from_env:
            found += [
                v
                for k, v in os.environ.items()
                if any(h in k.upper() for h in self._ENV_HINTS) and len(v) >= 8
            ]
        self.secrets = sorted({s for s in found if s and len(s) >= 4}, key=len, reverse=True)

    def add(self, secret: str | None) -> None:
        if secret and len(secret) >= 4 and secret not in self.secrets:
            self.secrets = sorted([*self.secrets, secret], key=len, reverse=True)

    def __call__(self, text: str | None) -> str | None:
        if text is None:
            return None
        for s in self.secrets:
            text = text.replace(s, "***")
        return text


class TokenBucket:
    """At most ``rate`` requests per second on average, bursts up to ``burst``."""

    def __init__(self, rate: float, burst: float | None = None) -> None:
        self.rate = rate
        self.burst = max(1.0, burst if burst is not None else rate)
        self.tokens = self.burst
        self.t = time.monotonic()
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        async with self._lock:
            while True:
                now = time.monotonic()
                self.tokens = min(self.burst, self.tokens + (now - self.t) * self.rate)
                self.t = now
                if self.tokens >= 1.0:
                    self.tokens -= 1.0
                    return
                await asyncio.sleep((1.0 - self.tokens) / self.rate)


class Health:
    """Counts consecutive failed calls; past ``dead_after`` the endpoint is declared dead."""

    def __init__(self, name: str, dead_after: int) -> None:
        self.name = name
        self.dead_after = dead_after
        self.consecutive = 0
        self.dead = False
        self.reason: str | None = None

    def success(self) -> None:
        self.consecutive = 0

    def failure(self, error: str, fatal: bool = False) -> bool:
        """Record a failed call; True if this one made the endpoint dead."""
        self.consecutive += 1
        if not self.dead and (fatal or self.consecutive >= self.dead_after):
            self.dead = True
            self.reason = error
            return True
        return False


class Annotator(ABC):
    """One arm as the live source sees it."""

    name: str
    kind: str  # "llm" | "model" | "human"
    model: str | None = None
    api_base: str | None = None
    #: ``call`` tells ``on_attempt`` (outcome :data:`SENDING`) before each request leaves;
    #: False: a call counts as sent from the moment its ledger row is written
    reports_sends: bool = False

    def __init__(self) -> None:
        self.health = Health(getattr(self, "name", "?"), 3)

    @property
    def available(self) -> bool:
        return not self.health.dead

    @abstractmethod
    def price(self) -> float:
        """Upper bound of one annotation call (reserved before the call)."""

    def confidence_price(self) -> float:
        return 0.0

    @property
    def gives_confidence(self) -> bool:
        return False

    @abstractmethod
    def request(self, item: ItemView, kind: CallKind, prediction: str | None = None) -> Request:
        """Build the request (and its cache key) for one item."""

    @abstractmethod
    async def call(self, req: Request, on_attempt: AttemptHook) -> Response:
        """Make the call, with retries; never raises for endpoint errors."""

    def reads(self, req: Request, parsed: Parsed) -> Parsed:
        """The parsed answer to ``req`` as the ledger records it (the default: as parsed;
        a swap judge maps its second order's verdict back, :mod:`~quorum.live.machines.swap`)."""
        return parsed

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (threads, clients)."""


class PricedAnnotator(Annotator):
    """An :class:`~quorum.live.machines.calls.Annotator` with fixed prices: ``_price`` bounds one
    annotation call (reserved before it), ``_conf_price`` one confidence call."""

    _price: float = 0.0
    _conf_price: float = 0.0

    def price(self) -> float:
        return self._price

    def confidence_price(self) -> float:
        return self._conf_price
