"""The live source's running counts (what the progress bar shows)."""

from __future__ import annotations

from dataclasses import dataclass, field

from quorum.routing.base import Outcome


@dataclass
class LiveStats:
    """Running counts for the progress bar (this process)."""

    n_items: int
    budget: float
    committed: float = 0.0  # paid + held for pending humans, whole ledger
    calls: int = 0
    cached: int = 0
    new_calls: int = 0
    failed: int = 0
    unparseable: int = 0
    pending: int = 0
    items_ok: set[str] = field(default_factory=set)

    @property
    def left(self) -> float:
        return max(0.0, self.budget - self.committed)

    def count(self, out: Outcome) -> None:
        """Count one outcome the source handed to the router."""
        self.calls += 1
        if out.status == "ok" and out.output is not None:
            self.items_ok.add(out.item_id)
        elif out.status == "failed":
            self.failed += 1
        elif out.status == "unparseable":
            self.unparseable += 1
        elif out.status == "pending":
            self.pending += 1
