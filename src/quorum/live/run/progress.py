"""The run's progress: one line (labels, the people's pending tasks, money) that both the
progress bar of ``quorum annotate`` and ``quorum status`` print."""

from __future__ import annotations

import sys
import time

from quorum.live.ledger.store import money_str
from quorum.live.machines.money_guard import LiveStats
from quorum.live.run.source import LiveSource
from quorum.progress import ProgressBar
from quorum.routing.core.base import Outcome, RoutingResult
from quorum.routing.core.budget import to_units


def progress_line(
    done: int,
    total: int,
    spent: float,
    left: float,
    provisional: int = 0,
    people_pending: int | None = None,
) -> str:
    """The one line both the progress bar and ``quorum status`` print (money exact):
    labelled items (of which ``provisional``: their human task still waits), the people's
    pending tasks, money."""
    lab = f"labelled {done}/{total}" + (f" ({provisional} provisional)" if provisional else "")
    ppl = "" if people_pending is None else f" | people: {people_pending} task(s) pending"
    return (
        f"{lab}{ppl} | spent ${money_str(to_units(spent))} | "
        f"budget left ${money_str(to_units(left))}"
    )


class Progress:
    """The run's progress: the one progress bar (terminal), else a log line every ``every`` s."""

    def __init__(self, total: int, quiet: bool = False, every: float = 5.0) -> None:
        self.quiet = quiet
        self.every = every
        self._last = 0.0
        self._bar: ProgressBar | None = ProgressBar(
            total, "annotate", enabled=not quiet
        ).__enter__()

    #: labelled items and provisional ones after the last pass, and the people's pending
    #: tasks: a pass replays from the start, so its own count starts at zero; the line
    #: shows the larger of the two and never goes backwards across passes (issue 27)
    floor: int = 0
    provisional: int = 0
    people: int | None = None

    def pass_done(self, result: RoutingResult | None, source: LiveSource) -> None:
        """A pass ended: its labels (provisional ones marked) and the people's queue."""
        if result is not None and len(result.labels):
            lab = result.labels
            self.floor = int(lab["output"].notna().sum())
            if "provisional" in lab.columns:
                self.provisional = int((lab["provisional"] & lab["output"].notna()).sum())
        if source.human is not None:
            self.people = len(source.ledger.pending_humans())
        self.update(None, source.stats, force=True)

    def update(self, _out: Outcome | None, s: LiveStats, force: bool = False) -> None:
        done = max(self.floor, len(s.items_ok))
        line = progress_line(done, s.n_items, s.committed, s.left, self.provisional, self.people)
        if self._bar is not None and self._bar.shown:
            self._bar.update(line, completed=done)
        elif not self.quiet and (force or time.monotonic() - self._last >= self.every):
            self._last = time.monotonic()
            print(line, file=sys.stderr, flush=True)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None
