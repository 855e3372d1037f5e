"""Live LLM calls on Ray: each HTTP try runs in one of a few async Ray actors.

Only the try itself moves: retries, backoff, rate limits, the concurrency caps, the
endpoint's health, the ledger and the budget stay in the process that routes, so a run on
Ray records the same calls, answers and costs as a local one. A try that fails comes back
as (outcome, retryable, fatal, wait, message) and is raised here as
:class:`~quorum.live.openai_http.HTTPCallError`, classified as the local path would.

The API key of an annotator travels to the actors with each request (Ray's object store,
not the ledger or the logs).
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from quorum.live.openai_http import HTTPCallError

#: route = (model, api_base, api_key, timeout, server model for the lean client or None)
Route = tuple[str | None, str | None, str | None, float, str | None]


class CallWorker:
    """The actor: makes one try of a chat completion, never raises for endpoint errors."""

    def __init__(self) -> None:
        # imported now, not on the first call: an import inside a call would hold the actor's
        # event loop while other calls are in flight (and run out their timeouts)
        import aiohttp  # noqa: F401

        import quorum.live.llm
        import quorum.live.openai_http  # noqa: F401

        self.clients: dict[tuple, Any] = {}
        self._litellm: Any = None

    async def call(
        self, route: Route, messages: list[dict[str, str]], params: dict[str, Any]
    ) -> tuple:
        model, api_base, api_key, timeout, server_model = route
        try:
            if server_model is not None:
                from quorum.live.openai_http import OpenAIHTTPClient, reply_fields

                key = (api_base, api_key, timeout)
                client = self.clients.get(key)
                if client is None:
                    assert api_base is not None
                    client = self.clients[key] = OpenAIHTTPClient(api_base, api_key, timeout)
                data = await client.complete(server_model, messages, params)
                return ("ok", *reply_fields(data))
            if self._litellm is None:  # heavy import: off the event loop
                import asyncio

                from quorum.live.llm import get_litellm

                self._litellm = await asyncio.to_thread(get_litellm)
            resp = await self._litellm.acompletion(
                model=model, messages=messages, api_base=api_base, api_key=api_key,
                timeout=timeout, num_retries=0, max_retries=0, **params,
            )  # fmt: skip
            from quorum.live.llm import litellm_reply_fields

            return ("ok", *litellm_reply_fields(resp))
        except Exception as exc:
            from quorum.live.llm import _classify

            outcome, retryable, fatal, wait = _classify(exc)
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
    ) -> tuple[str | None, int | None, int | None]:
        """One try on an actor: (content, prompt tokens, completion tokens), or raises."""
        res = await self.actors[next(self._turn)].call.remote(route, messages, params)
        if res[0] == "ok":
            return res[1], res[2], res[3]
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
