"""The private asyncio loop the live source runs its calls on (one per process)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """A private event loop in a daemon thread; sync code submits coroutines to it.

    One loop serves the whole process (:func:`shared_loop`): litellm keeps its HTTP clients
    and a logging task per loop, so the loop lives as long as the process.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="quorum-live", daemon=True
        )
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if threading.current_thread() is self.thread:
            raise RuntimeError("LiveSource calls must not be made from its own event loop")
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return fut.result()
        except BaseException:
            fut.cancel()
            raise


_SHARED: LoopThread | None = None
_SHARED_LOCK = threading.Lock()


def shared_loop() -> LoopThread:
    """The process's loop (a new one if the last one's thread died)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None or not _SHARED.thread.is_alive():
            _SHARED = LoopThread()
        return _SHARED
