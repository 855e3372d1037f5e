"""Local model annotators: any Python callable, or a :mod:`quorum.models` classifier.

A local annotator runs in one worker thread; requests that arrive together are answered in
one batch (``predict_many``). Its calls go through the ledger like any other, so a local job
is resumable and cached the same way.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from quorum.errors import ConfigError
from quorum.live.machines.calls import (
    AttemptHook,
    CallKind,
    Health,
    PricedAnnotator,
    Request,
    Response,
    request_key,
)
from quorum.models.classifiers import LocalModel, Prediction
from quorum.tasks.base import ItemView


class CallableAnnotator(LocalModel):
    """Wraps ``fn(text) -> label | (label, confidence) | {"output", "confidence"}``; an
    output that is a list (a label set, a span list) is read as its JSON text."""

    def __init__(self, fn: Callable[[str], Prediction], ident: str | None = None) -> None:
        self.fn = fn
        self.ident = ident or f"{fn.__module__}:{getattr(fn, '__qualname__', repr(fn))}"

    def predict_many(self, items: Sequence[ItemView]) -> list[Prediction]:
        return [self.fn(it.text) for it in items]

    @classmethod
    def from_path(cls, path: str) -> CallableAnnotator:
        mod, _, attr = path.partition(":")
        try:
            obj: Any = importlib.import_module(mod)
            for part in attr.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"cannot import local model {path!r}: {exc}") from None
        if isinstance(obj, type):
            obj = obj()
        if isinstance(obj, LocalModel):
            return obj  # type: ignore[return-value]
        if not callable(obj):
            raise ConfigError(f"local model {path!r} is not callable")
        return cls(obj, ident=path)


class LocalAnnotator(PricedAnnotator):
    """An arm backed by a :class:`LocalModel`, with a fixed price per call (default 0)."""

    kind = "model"

    def __init__(
        self,
        name: str,
        model: LocalModel,
        price: float = 0.0,
        confidence_price: float | None = None,
        kind: str = "model",
    ) -> None:
        self.name = name
        self.local = model
        self.model = model.ident
        self.kind = kind
        self._price = price
        self._conf_price = 0.0 if confidence_price is None else confidence_price
        self.health = Health(name, 1_000_000)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"quorum-{name}")
        self._queue: list[tuple[ItemView, asyncio.Future]] = []
        self._scheduled = False

    @property
    def gives_confidence(self) -> bool:
        return self.kind != "human"

    def request(self, item: ItemView, kind: CallKind, prediction: str | None = None) -> Request:
        payload = {"model": self.model, "kind": kind, "text": item.text, "choices": item.choices}
        return Request(
            key=request_key(payload),
            kind=kind,
            item=item,
            annotator=self.name,
            prompt=item.text,
            params={"model": self.model},
            reserved=self._price if kind == "annotate" else self._conf_price,
            prediction=prediction,
        )

    async def call(self, req: Request, on_attempt: AttemptHook) -> Response:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future = loop.create_future()
        self._queue.append((req.item, fut))
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(lambda: asyncio.ensure_future(self._flush()))
        started, t0 = time.time(), time.monotonic()
        try:
            pred = await fut
        except Exception as exc:
            err = f"{type(exc).__name__}: {exc}"[:2000]
            on_attempt(1, started, time.monotonic() - t0, "error", err)
            return Response(status="failed", error=err, cost=0.0, cost_source="not billed")
        latency = time.monotonic() - t0
        on_attempt(1, started, latency, "ok", None)
        output, conf = _unpack(pred)
        if req.kind == "confidence":
            if conf is None:
                return Response(
                    status="failed", error="this local model gives no confidence", cost=0.0
                )
            return Response(
                status="ok",
                raw=f"{conf:.6g}",
                cost=self._conf_price,
                cost_source="fixed price",
                latency=latency,
                confidence=conf,
            )
        raw = output if conf is None else json.dumps({"output": output, "confidence": conf})
        return Response(
            status="ok",
            raw=raw,
            cost=self._price,
            cost_source="fixed price",
            latency=latency,
            confidence=conf,
            extra={"output": output},
        )

    async def _flush(self) -> None:
        batch, self._queue, self._scheduled = self._queue, [], False
        if not batch:
            return
        loop = asyncio.get_running_loop()
        items = [it for it, _ in batch]
        try:
            preds = await loop.run_in_executor(self._pool, self.local.predict_many, items)
            if len(preds) != len(items):
                raise RuntimeError(f"predict_many returned {len(preds)} for {len(items)} items")
        except Exception as exc:
            for _, f in batch:
                if not f.done():
                    f.set_exception(exc)
            return
        for (_, f), p in zip(batch, preds, strict=True):
            if not f.done():
                f.set_result(p)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _unpack(pred: Prediction) -> tuple[str | None, float | None]:
    if pred is None:
        return None, None
    if isinstance(pred, dict):
        c = pred.get("confidence")
        return _str(pred.get("output")), None if c is None else float(c)
    if isinstance(pred, tuple):
        out, c = (*pred, None)[:2]
        return _str(out), None if c is None else float(c)
    return _str(pred), None


def _str(x: Any) -> str | None:
    """A local model's output as the text a parser reads: a list (a multi-label set, a
    span list; a NumPy array too) as JSON, not Python's repr, which no parser reads.

    >>> _str(["care", "purity"]), _str([{"start": 0, "end": 3, "label": "T"}]), _str(2.0)
    ('["care", "purity"]', '[{"start": 0, "end": 3, "label": "T"}]', '2')
    """
    if x is None:
        return None
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    if hasattr(x, "tolist") and not isinstance(x, (str, bytes)):
        x = x.tolist()
    if isinstance(x, list):
        try:
            return json.dumps(x, ensure_ascii=False, default=_json_scalar)
        except (TypeError, ValueError):
            return str(x)
    return str(x)


def _json_scalar(x: Any) -> Any:
    """A NumPy scalar inside a list as the Python value JSON writes."""
    if hasattr(x, "item"):
        return x.item()
    raise TypeError(f"{type(x).__name__} is not JSON")
