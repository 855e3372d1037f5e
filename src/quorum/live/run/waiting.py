"""Waiting for people: a pass that reaches a human task without its answer is frozen
there; :func:`wait_for` sleeps until some of those answers come (or the tasks expire)."""

from __future__ import annotations

import logging
import time

from quorum.live.ledger.store import Ledger
from quorum.live.run.source import LiveSource

log = logging.getLogger("quorum.live")


def n_resolved(ledger: Ledger, keys: dict[str, str]) -> int:
    """How many of the tasks ``keys`` have their labels or expired."""
    return sum(_all_resolved(ledger, {k: v}) for k, v in keys.items())


def _all_resolved(ledger: Ledger, keys: dict[str, str]) -> bool:
    """Every task ``keys`` has its labels, or expired (the router plans it without)."""
    return all(
        (t := ledger.human_task(k)) is not None and t["status"] in ("answered", "expired")
        for k in keys
    )


def wait_for(source: LiveSource, ledger: Ledger, deadline: float) -> tuple[int, bool]:
    """Sleep until one of the tasks the pass waits for is answered (or expires), or the
    deadline.

    Returns (answers that came while waiting, whether all of them are in). Nothing is
    routed or written while it sleeps: the queue is looked at, the ledger only changes
    when an answer arrives.
    """
    keys = source.blocking
    n = len(keys)
    answered = sum(_all_resolved(ledger, {k: v}) for k, v in keys.items())
    if answered == n:
        return 0, True
    left = deadline - time.monotonic()
    assert source.human is not None
    where = source.human.queue
    folder = getattr(where, "folder", None)
    log.info(
        "waiting up to %.0f s for %d human answer(s)%s: items %s",
        left,
        n - answered,
        f" in {folder}/answers.csv" if folder is not None else "",
        ids_str([v for k, v in keys.items() if not _all_resolved(ledger, {k: v})]),
    )
    first = answered
    while answered < n:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        due = source.next_expiry()
        if not where.wait(left if due is None else min(left, due + 0.05)) and (
            due is None or due > left
        ):
            continue
        source.collect_answers()
        now = sum(_all_resolved(ledger, {k: v}) for k, v in keys.items())
        if now > answered:
            answered = now
            log.info("human tasks waited for: %s (of %d)", _came(ledger, keys), n)
            break  # route again at once: the others are still being answered
    if answered == first:
        log.info(
            "time is up: human tasks waited for: %s (of %d); run again (or with a longer "
            "--wait) to go on",
            _came(ledger, keys),
            n,
        )
    return answered - first, answered == n


def _came(ledger: Ledger, keys: dict[str, str]) -> str:
    """How the tasks ``keys`` were resolved, in words: answered ones and expired ones."""
    st = [t["status"] if (t := ledger.human_task(k)) is not None else None for k in keys]
    got, gone = st.count("answered"), st.count("expired")
    parts = [f"{got} answered"] + ([f"{gone} withdrawn unanswered (timeout)"] if gone else [])
    return ", ".join(parts)


def ids_str(ids: list[str], most: int = 10) -> str:
    """``ids`` for a log line: the first ``most`` of them, and how many more."""
    shown = ", ".join(map(str, ids[:most]))
    return shown + (f" and {len(ids) - most} more" if len(ids) > most else "")
