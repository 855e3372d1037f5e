"""One HTTP try of a chat completion: the one implementation both engines use.

:class:`ChatTry` makes a single try (no retry) on a :data:`Route`: the lean client
(:mod:`quorum.live.machines.openai_http`) for an ``openai/NAME`` model at an ``api_base``, litellm
otherwise (with its own retries off). It returns a :class:`Reply` or raises; callers
classify what it raised with :func:`classify`. The local engine
(:class:`~quorum.live.machines.llm.LLMAnnotator`) calls it in the routing process; the Ray engine
(:mod:`quorum.live.machines.ray_calls`) calls the same object inside an actor. Neither module
imports the other for it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from quorum.live.machines.openai_http import (
    HTTPCallError,
    OpenAIHTTPClient,
    check_choices,
    reply_fields,
    token_count,
)

__all__ = ["ChatTry", "Reply", "Route", "classify", "get_litellm", "litellm_reply_fields"]

#: route = (model, api_base, api_key, timeout, server model for the lean client or None)
Route = tuple[str | None, str | None, str | None, float, str | None]

_litellm = None


def get_litellm():
    """Import litellm once, quietly and offline (local cost map)."""
    global _litellm
    if _litellm is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.suppress_debug_info = True
        litellm.telemetry = False
        litellm.drop_params = True
        _litellm = litellm
    return _litellm


@dataclass(frozen=True)
class Reply:
    """What one successful try returned: the message text, token usage and, where asked
    for and given, the per-token logprobs (OpenAI's ``choices[0].logprobs.content``)."""

    content: str | None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    logprobs: list[dict[str, Any]] | None = None


def _logprobs_of(data: Any) -> list[dict[str, Any]] | None:
    try:
        lp = data["choices"][0].get("logprobs")
        content = lp.get("content") if isinstance(lp, dict) else None
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
    return content if isinstance(content, list) else None


def http_reply(data: dict[str, Any]) -> Reply:
    """A :class:`Reply` of the lean client's JSON."""
    return Reply(*reply_fields(data), logprobs=_logprobs_of(data))


def litellm_reply_fields(resp: Any) -> tuple[str | None, int | None, int | None]:
    """(content, prompt tokens, completion tokens) of a litellm completion response."""
    try:
        content = resp.choices[0].message.content
    except (AttributeError, IndexError, KeyError):
        content = None
    usage = getattr(resp, "usage", None)
    pt = getattr(usage, "prompt_tokens", None) if usage is not None else None
    ct = getattr(usage, "completion_tokens", None) if usage is not None else None
    return content, token_count(pt), token_count(ct)


def litellm_reply(resp: Any) -> Reply:
    """A :class:`Reply` of a litellm response (logprobs as plain dicts)."""
    lp = None
    try:
        raw = resp.choices[0].logprobs
        content = getattr(raw, "content", None) if raw is not None else None
        if content is None and isinstance(raw, dict):
            content = raw.get("content")
        if content is not None:
            lp = [c if isinstance(c, dict) else c.model_dump() for c in content]
    except (AttributeError, IndexError, KeyError, TypeError):
        lp = None
    return Reply(*litellm_reply_fields(resp), logprobs=lp)


class ChatTry:
    """Makes one try of a chat completion on a route; keeps one lean client per
    (api_base, key, timeout) for the process (or actor) that holds it."""

    def __init__(self) -> None:
        self.clients: dict[tuple, OpenAIHTTPClient] = {}

    async def __call__(
        self, route: Route, messages: list[dict[str, str]], params: dict[str, Any]
    ) -> Reply:
        model, api_base, api_key, timeout, server_model = route
        if server_model is not None:
            assert api_base is not None
            key = (api_base, api_key, timeout)
            client = self.clients.get(key)
            if client is None:
                client = self.clients[key] = OpenAIHTTPClient(api_base, api_key, timeout)
            return http_reply(await client.complete(server_model, messages, params))
        resp = await get_litellm().acompletion(
            model=model, messages=messages, api_base=api_base, api_key=api_key,
            timeout=timeout, num_retries=0, max_retries=0, **params,
        )  # fmt: skip
        check_choices(list(getattr(resp, "choices", None) or []))
        return litellm_reply(resp)

    def close(self) -> None:
        for c in self.clients.values():
            c.close()
        self.clients.clear()


def classify(exc: BaseException) -> tuple[str, bool, bool, float | None]:
    """(outcome, retryable, fatal for the endpoint, server-asked wait in seconds)."""
    if isinstance(exc, HTTPCallError):
        return exc.outcome, exc.retryable, exc.fatal, exc.wait
    lit = get_litellm()
    status = getattr(exc, "status_code", None)
    wait = _retry_after(exc)
    if "invalid response from LLM endpoint" in str(exc) or "Invalid JSON" in str(exc):
        return "invalid response", True, False, None
    if isinstance(exc, lit.Timeout):
        return "timeout", True, False, None
    if isinstance(exc, lit.RateLimitError) or status == 429:
        return "429", True, False, wait
    if isinstance(exc, lit.AuthenticationError | lit.PermissionDeniedError):
        return f"auth {status}", False, True, None
    if isinstance(exc, lit.NotFoundError):
        return f"not found {status}", False, True, None
    if isinstance(exc, lit.ContextWindowExceededError | lit.BadRequestError):
        return f"bad request {status}", False, False, None
    if isinstance(exc, lit.APIConnectionError) or "Connection error" in str(exc):
        return "connection", True, False, None
    if isinstance(status, int) and status >= 500:
        return f"{status}", True, False, wait
    if isinstance(
        exc,
        lit.InternalServerError | lit.ServiceUnavailableError | lit.BadGatewayError,
    ):
        return f"{status or '5xx'}", True, False, wait
    return f"error {type(exc).__name__}", False, False, None


def _retry_after(exc: BaseException) -> float | None:
    resp = getattr(exc, "response", None)
    headers = getattr(resp, "headers", None) or {}
    try:
        val = headers.get("retry-after") or headers.get("Retry-After")
        return min(60.0, float(val)) if val is not None else None
    except (TypeError, ValueError, AttributeError):
        return None
