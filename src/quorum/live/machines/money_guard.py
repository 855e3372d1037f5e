"""The project's money guard: no call or human task is held that the ledger cannot pay,
and the running counts it keeps up to date (what the progress bar shows)."""

from __future__ import annotations

from dataclasses import dataclass, field

from quorum.live.ledger.store import Ledger
from quorum.routing.core.base import Outcome
from quorum.routing.core.budget import from_units, to_units


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


class MoneyGuard:
    """The money of a project as the live source holds it, in integer nano-units.

    ``committed_u`` is what the whole ledger has paid and holds for pending human tasks,
    ``held_u`` the reservations of calls in flight, ``limit_u`` the project's budget; a call
    is held only while their sum stays within the limit. ``stats.committed`` follows
    ``committed_u`` (for the progress bar).
    """

    def __init__(
        self, ledger: Ledger, limit: float, stats: LiveStats, charge_interrupted: bool = True
    ) -> None:
        self.ledger = ledger
        self.stats = stats
        self.limit_u = to_units(limit)
        #: money of calls a kill cut off counts (``budget.charge_interrupted``, default)
        self.charge_interrupted = charge_interrupted
        self.committed_u = to_units(stats.committed)
        self.held_u = 0  # reservations of calls in flight
        self.sync()

    def sync(self) -> None:
        """Take the committed money from the ledger again (with the possibly billed money
        of calls a kill cut off, unless ``charge_interrupted`` is off)."""
        m = self.ledger.money_units()
        self.committed_u = m["committed"] - (0 if self.charge_interrupted else m["interrupted"])
        self.stats.committed = from_units(self.committed_u)

    def room(self, units: int) -> bool:
        """Whether the budget has ``units`` left beside what is paid, held and reserved."""
        return self.committed_u + self.held_u + units <= self.limit_u

    def hold(self, amount: float) -> bool:
        """Reserve ``amount`` for a call (False, and nothing held: no room for it)."""
        u = to_units(amount)
        if not self.room(u):
            return False
        self.held_u += u
        return True

    def release(self, amount: float) -> None:
        """Give back a reservation (the call was not made)."""
        self.held_u -= to_units(amount)

    def settle(self, reserved: float, cost: float) -> None:
        """A call held ``reserved`` and cost ``cost``."""
        self.held_u -= to_units(reserved)
        self.commit(to_units(cost))

    def commit(self, units: int) -> None:
        """Count money just paid."""
        self.committed_u += units
        self.stats.committed = from_units(self.committed_u)
