"""LLM annotators through litellm: any provider it supports, or an OpenAI-compatible server.

Retries with exponential backoff (and ``Retry-After``) on 429, 5xx, connection errors and
timeouts; litellm's and the OpenAI client's own retries are switched off so that every
HTTP try is ours and is logged. A call that still fails costs 0 (providers do not bill
errors); after ``dead_after`` consecutive failed calls, or at once on an authentication or
unknown-model error, the endpoint is declared dead.

Cost: the configured ``price`` per call; or, with no price, the real token usage times the
per-token prices (from the config, else litellm's cost map). Both are recorded per call.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from collections.abc import Sequence

from quorum.errors import ConfigError
from quorum.live.machines.calls import (
    SENDING,
    AttemptHook,
    CallKind,
    Health,
    PricedAnnotator,
    Redactor,
    Request,
    Response,
    TokenBucket,
    request_key,
)
from quorum.live.machines.chat_try import ChatTry, Reply, classify, get_litellm
from quorum.live.machines.openai_http import HTTPCallError, direct_model
from quorum.live.machines.output import CONSTRAINT_KEYS, OutputConstraint, detect_output
from quorum.live.machines.prompts import PromptBuilder
from quorum.live.project.annotators import AnnotatorConfig
from quorum.tasks.base import ItemView

log = logging.getLogger("quorum.live")


class TokenPrices:
    """Per-token prices of a model: from the config, else from litellm's cost map.

    The cost map is not read for an annotator with a fixed ``price`` at its own
    ``api_base``: there its token prices would only fill the ledger's informational
    ``token_cost``, and a list price of the model's name says nothing of what a self-hosted
    or proxy server charges. Reading it means importing litellm (5 s of CPU alone, about
    1.2 s beside QUORUM's own imports), which every ``quorum annotate`` against a local
    server paid for nothing. Our choice (docs/live.md, "Cost"); per-token prices in the
    config still fill ``token_cost``."""

    def __init__(self, cfg: AnnotatorConfig) -> None:
        self.input = cfg.input_cost_per_token
        self.output = cfg.output_cost_per_token
        self.source = "config"
        own_server_fixed_price = cfg.price is not None and bool(cfg.api_base)
        if (self.input is None or self.output is None) and not own_server_fixed_price:
            info = None
            try:
                info = get_litellm().get_model_info(cfg.model)
            except Exception:
                info = None
            if info:
                self.input = (
                    self.input if self.input is not None else info.get("input_cost_per_token")
                )
                self.output = (
                    self.output if self.output is not None else info.get("output_cost_per_token")
                )
                self.source = "litellm cost map"

    @property
    def known(self) -> bool:
        return self.input is not None and self.output is not None

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        if not self.known:
            return None
        return prompt_tokens * self.input + completion_tokens * self.output


class LLMAnnotator(PricedAnnotator):
    kind = "llm"
    reports_sends = True  # each try's request is recorded as sent before it leaves

    def __init__(
        self,
        cfg: AnnotatorConfig,
        builder: PromptBuilder,
        items: Sequence[ItemView],
        redactor: Redactor,
        default_max_tokens: int,
        engine: str = "local",
        ray_address: str | None = None,
    ) -> None:
        self.cfg = cfg
        self.engine = engine
        self.ray_address = ray_address
        self.name = cfg.name
        self.model = cfg.model
        self.api_base = cfg.api_base
        self.builder = builder
        self.redact = redactor
        self.max_tokens = cfg.max_tokens or default_max_tokens
        self.health = Health(cfg.name, cfg.dead_after)
        self.api_key = self._api_key()
        if self.cfg.api_key_env:
            redactor.add(self.api_key)
        self.prices = TokenPrices(cfg)
        if cfg.price is None and not self.prices.known:
            raise ConfigError(
                f"annotator {cfg.name!r}: no `price` given and litellm has no per-token price "
                f"for model {cfg.model!r}; set `price` (per call) or `input_cost_per_token` "
                "and `output_cost_per_token`"
            )
        self.params = {"temperature": cfg.temperature, "max_tokens": self.max_tokens}
        if cfg.seed is not None:
            self.params["seed"] = cfg.seed
        self.params.update(cfg.params)
        #: items whose prompt is longer than ``max_prompt_tokens`` (token prices): not sent
        self.too_long: dict[str, int] = {}
        self._price = self._bound(items, "annotate")
        self._conf_price = (
            cfg.confidence_price
            if cfg.confidence_price is not None
            else self._bound(items, "confidence")
        )
        self._sem: asyncio.Semaphore | None = None
        self._bucket: TokenBucket | None = None
        #: the server model for the lean client, None for litellm
        self._direct = self._direct_client()
        self._chat = ChatTry()
        #: how answers are constrained to a label (``output``; issue 27)
        self.output: OutputConstraint = detect_output(cfg, builder, self._direct, self.api_key)

    def _direct_client(self) -> str | None:
        """The server-side model name when the lean HTTP client serves this annotator
        (``client: auto`` or ``http`` with ``openai/NAME`` at an ``api_base``), else None
        (litellm)."""
        choice = getattr(self.cfg, "client", "auto")
        name = direct_model(self.model, self.api_base)
        if choice == "litellm" or (choice == "auto" and name is None):
            return None
        if name is None:
            raise ConfigError(
                f"annotator {self.name!r}: client 'http' needs an 'openai/NAME' model and an "
                "api_base (an OpenAI-compatible server); use client 'litellm' otherwise"
            )
        return name

    # -- secrets -----------------------------------------------------------
    def _api_key(self) -> str | None:
        var = self.cfg.api_key_env
        if var:
            key = os.environ.get(var)
            if not key:
                raise ConfigError(
                    f"annotator {self.name!r}: environment variable {var} is not set "
                    "(it must hold the API key)"
                )
            return key
        if self.cfg.api_base:
            return "no-key"
        try:
            missing = get_litellm().validate_environment(self.model).get("missing_keys") or []
        except Exception:
            missing = []
        keys = [k for k in missing if k.endswith("_KEY")]
        if keys:
            raise ConfigError(
                f"annotator {self.name!r}: model {self.model!r} needs an API key and "
                f"{' or '.join(keys)} is not set; set it, or name the variable that holds "
                "the key with api_key_env (or point api_base at an OpenAI-compatible server)"
            )
        return None

    # -- prices ------------------------------------------------------------
    def _bound(self, items: Sequence[ItemView], kind: CallKind) -> float:
        """Reservation price: the fixed price, or max prompt tokens (with a margin) times the
        input price plus ``max_tokens`` times the output price."""
        if self.cfg.price is not None:
            return float(self.cfg.price)
        lit = get_litellm()
        most = 0
        for it in items:
            if kind == "annotate":
                msgs = self.builder.annotation_messages(it)
            else:
                msgs = self.builder.confidence_messages(it, "x " * self.max_tokens)
            try:
                n = lit.token_counter(model=self.model, messages=msgs)
            except Exception:
                n = sum(len(m["content"]) for m in msgs) // 2
            if n > self.cfg.max_prompt_tokens:  # one huge item must not price every call
                if it.item_id not in self.too_long:
                    log.warning(
                        "item %r: its prompt is about %d tokens, above max_prompt_tokens %d "
                        "of annotator %r; it is not sent to it (a failed call at no cost)",
                        it.item_id, n, self.cfg.max_prompt_tokens, self.name,
                    )  # fmt: skip
                self.too_long[it.item_id] = n
                continue
            most = max(most, n)
        pt = int(most * self.cfg.prompt_token_margin) + 16
        return float(self.prices.cost(pt, self.max_tokens + 1))

    @property
    def gives_confidence(self) -> bool:
        return True

    # -- requests ----------------------------------------------------------
    def request(self, item: ItemView, kind: CallKind, prediction: str | None = None) -> Request:
        if kind == "annotate":
            msgs = self.builder.annotation_messages(item)
            reserved = self._price
        else:
            msgs = self.builder.confidence_messages(item, prediction or "")
            reserved = self._conf_price
        params = dict(self.params)
        if kind == "annotate":
            params.update(self.output.params(item))  # constrained output (issue 27)
        payload = {"model": self.model, "api_base": self.api_base, "messages": msgs}
        payload["params"] = params
        n_long = self.too_long.get(item.item_id)
        return Request(
            key=request_key(payload),
            kind=kind,
            item=item,
            annotator=self.name,
            prompt=msgs[-1]["content"],
            params=params,
            reserved=reserved,
            messages=msgs,
            prediction=prediction,
            refuse=None
            if n_long is None
            else f"item {item.item_id!r} not sent: its prompt is about {n_long} tokens, above "
            f"max_prompt_tokens {self.cfg.max_prompt_tokens} of annotator {self.name!r}",
        )

    # -- calls -------------------------------------------------------------
    def _limits(self) -> tuple[asyncio.Semaphore, TokenBucket | None]:
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.cfg.concurrency)
            if self.cfg.rate_limit:
                self._bucket = TokenBucket(self.cfg.rate_limit)
        return self._sem, self._bucket

    async def _try_once(self, req: Request, params: dict) -> Reply:
        """One HTTP try (:class:`~quorum.live.machines.chat_try.ChatTry`, here or on a Ray actor);
        raises on failure."""
        route = (self.model, self.api_base, self.api_key, self.cfg.timeout, self._direct)
        if self.engine == "ray":
            from quorum.live.machines.ray_calls import call_pool

            return await call_pool(self.ray_address).call(route, req.messages or [], params)
        return await self._chat(route, req.messages or [], params)

    async def call(self, req: Request, on_attempt: AttemptHook) -> Response:
        sem, bucket = self._limits()
        tries = self.cfg.max_retries + 1
        error = "not attempted"
        outcome = "error"
        fatal = False
        t_first = time.monotonic()
        params = req.params
        dropped: bool | None = None  # this call dropped its constraint on a 400 (True: and
        # switched the annotator to free text): a second 400 says the constraint was not why
        n = 0
        while n < tries:
            n += 1
            if self.health.dead:
                error = f"endpoint declared dead: {self.health.reason}"
                break
            if bucket is not None:
                await bucket.acquire()
            async with sem:
                started, t0 = time.time(), time.monotonic()
                on_attempt(n, started, 0.0, SENDING, None)  # recorded before it leaves
                try:
                    reply = await self._try_once(req, params)
                except Exception as exc:  # classified below; never propagates
                    latency = time.monotonic() - t0
                    outcome, retryable, fatal, wait = classify(exc)
                    if isinstance(exc, HTTPCallError):
                        error = self.redact(str(exc))[:2000]
                    else:
                        error = self.redact(f"{type(exc).__name__}: {exc}")[:2000]
                    on_attempt(n, started, latency, outcome, error)
                    if dropped is None and outcome.startswith("bad request"):
                        switched = not self.output.refused
                        if self._refuses(params, error):
                            params = {k: v for k, v in params.items() if k not in CONSTRAINT_KEYS}
                            n -= 1  # a refused constraint is not a try of the call
                            dropped = switched
                            continue
                    elif dropped and outcome.startswith("bad request"):
                        self._unrefuse(error)
                    if not retryable or n == tries:
                        break
                    backoff = min(self.cfg.backoff_max, self.cfg.backoff_base * 2 ** (n - 1))
                    await asyncio.sleep(max(wait or 0.0, backoff * (0.5 + random.random())))
                    continue
                latency = time.monotonic() - t0
            on_attempt(n, started, latency, "ok", None)
            self.health.success()
            return self._response(req, params, reply, n, time.monotonic() - t_first)
        if self.health.failure(error, fatal=fatal):
            log.error(
                "annotator %r (%s%s) %s (%d consecutive failed call(s)); removed from the "
                "arm set for the rest of this run. Last error: %s",
                self.name,
                self.model,
                f" at {self.api_base}" if self.api_base else "",
                why_dead(outcome),
                self.health.consecutive,
                error,
            )
        return Response(
            status="failed",
            error=error,
            cost=0.0,
            cost_source="not billed (failed)",
            latency=time.monotonic() - t_first,
            attempts=n,
        )

    def _refuses(self, params: dict, error: str) -> bool:
        """The endpoint refused a constrained request (HTTP 400): switch this annotator to
        free text for the rest of the run (True: try the call again without it)."""
        if not any(k in params for k in CONSTRAINT_KEYS):
            return False
        if not self.output.refused:
            self.output.refused = True
            log.warning(
                "annotator %r refused constrained output %s (%s); its answers are free text "
                "for the rest of this run: set `output = \"free\"` to stop asking",
                self.name, self.output.mode, error[:200],
            )  # fmt: skip
        return True

    def _unrefuse(self, error: str) -> None:
        """The request was refused without its constraint too (a prompt longer than the
        model's context, say): the constraint was not why, so it is asked for again."""
        self.output.refused = False
        log.warning(
            "annotator %r: the request was refused without constrained output too (%s); "
            "constrained output stays on for its other calls", self.name, error[:200],
        )  # fmt: skip

    def _response(self, req: Request, params: dict, reply: Reply, n: int, total: float) -> Response:
        content, pt, ct = reply.content, reply.prompt_tokens, reply.completion_tokens
        extra: dict = {}
        cap = self.cfg.max_reply_chars
        if content is not None and len(content) > cap:  # stored and read up to the cap
            extra["truncated"] = len(content)
            content = content[:cap]
        conf = None
        if req.kind == "annotate" and content is not None:
            answer = self.output.answer(content, params)
            if answer is not None and answer != content:
                extra["output"] = answer
            if reply.logprobs:
                conf = self.output.confidence(
                    content, answer, reply.logprobs, self.output.options(req.item)
                )
        token_cost = self.prices.cost(pt, ct) if pt is not None and ct is not None else None
        if self.cfg.price is not None:
            cost, source = float(self.cfg.price), "fixed price"
        elif token_cost is not None:
            cost, source = float(token_cost), f"tokens x price ({self.prices.source})"
        else:
            cost, source = req.reserved, "reserved bound (no token usage returned)"
        if req.kind == "confidence" and self.cfg.confidence_price is not None:
            cost, source = float(self.cfg.confidence_price), "fixed confidence price"
        return Response(
            status="ok",
            raw=self.redact(content) if content is not None else None,
            cost=cost,
            cost_source=source,
            token_cost=token_cost,
            prompt_tokens=pt,
            completion_tokens=ct,
            latency=total,
            attempts=n,
            confidence=conf,
            extra=extra,
        )

    def close(self) -> None:
        self._chat.close()


def why_dead(outcome: str) -> str:
    """What the last failed try says about an endpoint, in words."""
    if outcome.startswith("auth"):
        return (
            "rejected the credentials (check the key in the variable named by api_key_env, "
            "or set api_key_env)"
        )
    if outcome.startswith("not found"):
        return "does not know this model or path (HTTP 404)"
    if outcome in ("connection", "timeout"):
        return "is unreachable" if outcome == "connection" else "does not answer in time"
    if outcome == "invalid response":
        return (
            "answers with responses that are not chat completions (is api_base an "
            "OpenAI-compatible endpoint?)"
        )
    if outcome == "429":
        return "rate-limits every try (lower rate_limit or concurrency)"
    if outcome[:1] == "5":
        return f"keeps failing with server errors (HTTP {outcome})"
    return "keeps failing"
