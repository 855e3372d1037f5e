"""Live LLM calls on Ray: each HTTP try runs in one of a few async Ray actors.

Only the try itself moves: retries, backoff, rate limits, the concurrency caps, the
endpoint's health, the ledger and the budget stay in the process that routes, so a run on
Ray records the same calls, answers and costs as a local one. A try that fails comes back
as (outcome, retryable, fatal, wait, message) and is raised here as
:class:`~quorum.live.machines.openai_http.HTTPCallError`, classified as the local path would.

The try itself is :class:`~quorum.live.machines.chat_try.ChatTry`, the same object the local engine
uses; this module does not import :mod:`quorum.live.machines.llm` (nor it this one at import time).

The API key of an annotator travels to the actors with each request (Ray's object store,
not the ledger or the logs).
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from quorum.live.machines.chat_try import ChatTry, Reply, Route, classify
from quorum.live.machines.openai_http import HTTPCallError


class CallWorker:
    """The actor: makes one try with :class:`~quorum.live.machines.chat_try.ChatTry` (the same
    code as the local engine), never raises for endpoint errors."""

    def __init__(self) -> None:
        # imported now, not on the first call: an import inside a call would hold the actor's
        # event loop while other calls are in flight (and run out their timeouts)
        import aiohttp  # noqa: F401

        import quorum.live.machines.openai_http  # noqa: F401

        self.chat = ChatTry()
        self._litellm_ready = False

    async def call(
        self, route: Route, messages: list[dict[str, str]], params: dict[str, Any]
    ) -> tuple:
        try:
            if route[4] is None and not self._litellm_ready:  # heavy import: off the loop
                import asyncio

                from quorum.live.machines.chat_try import get_litellm

                await asyncio.to_thread(get_litellm)
                self._litellm_ready = True
            r = await self.chat(route, messages, params)
            return ("ok", r.content, r.prompt_tokens, r.completion_tokens, r.logprobs)
        except Exception as exc:
            outcome, retryable, fatal, wait = classify(exc)
            msg = str(exc) if isinstance(exc, HTTPCallError) else f"{type(exc).__name__}: {exc}"
            return ("error", outcome, retryable, fatal, wait, msg)


class RayCallPool:
    """A few :class:`CallWorker` actors, used in turn (one pool per process and address)."""

    def __init__(self, address: str | None = None, n_actors: int = 4) -> None:
        from quorum.engine import ensure_ray

        ray = ensure_ray(address)
        actor = ray.remote(num_cpus=0, max_concurrency=4096)(CallWorker)
        self.actors = [actor.remote() for _ in range(max(1, n_actors))]
        self._turn = itertools.cycle(range(len(self.actors)))

    async def call(
        self, route: Route, messages: list[dict[str, str]], params: dict[str, Any]
    ) -> Reply:
        """One try on an actor: its :class:`~quorum.live.machines.chat_try.Reply`, or raises."""
        res = await self.actors[next(self._turn)].call.remote(route, messages, params)
        if res[0] == "ok":
            return Reply(res[1], res[2], res[3], res[4])
        _, outcome, retryable, fatal, wait, msg = res
        raise HTTPCallError(msg, outcome, retryable, fatal=fatal, wait=wait)


_POOLS: dict[str | None, RayCallPool] = {}
_LOCK = threading.Lock()


def call_pool(address: str | None = None) -> RayCallPool:
    """The process-wide pool of call actors for ``address``."""
    with _LOCK:
        if address not in _POOLS:
            _POOLS[address] = RayCallPool(address)
        return _POOLS[address]
