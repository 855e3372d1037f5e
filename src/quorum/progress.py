"""One progress display for long loops: a rich bar on stderr, or nothing.

The bar shows only when it is enabled, has work (``total > 0``) and stderr is a terminal,
so files, CI logs and worker processes get no control characters. Disabled, every method is
a no-op, so callers need no ``if``.

Examples
--------
>>> with ProgressBar(3, "demo", enabled=False) as bar:
...     for _ in range(3):
...         bar.advance()
>>> bar.shown
False
"""

from __future__ import annotations

import sys
from typing import Any


class ProgressBar:
    """``label`` | bar | done/total | elapsed | remaining | ``description``.

    ``transient`` removes the bar when it stops (for sub-steps of a longer command).
    """

    def __init__(
        self, total: int, label: str = "", *, enabled: bool = True, transient: bool = False
    ) -> None:
        self.total = int(total)
        self.shown = bool(enabled) and self.total > 0 and sys.stderr.isatty()
        self._prog: Any = None
        self._task: Any = None
        if self.shown:
            from rich.console import Console
            from rich.markup import escape
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._prog = Progress(
                SpinnerColumn(),
                TextColumn(f"[bold]{escape(label)}[/]"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                TextColumn("{task.description}"),
                console=Console(stderr=True),
                transient=transient,
            )
            self._task = self._prog.add_task("", total=self.total)

    def __enter__(self) -> ProgressBar:
        if self._prog is not None:
            self._prog.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._prog is not None:
            self._prog.stop()

    def advance(self, n: int = 1) -> None:
        """``n`` more units done."""
        if self._prog is not None:
            self._prog.advance(self._task, n)

    def update(
        self, description: str | None = None, advance: int = 0, *, completed: int | None = None
    ) -> None:
        """Set the text after the bar (what runs now) and advance, or set ``completed``."""
        if self._prog is not None:
            kw: dict[str, Any] = {"advance": advance}
            if completed is not None:
                kw = {"completed": int(completed)}
            if description is not None:
                kw["description"] = description
            self._prog.update(self._task, **kw)
