"""The project's money guard: no call or human task is held that the ledger cannot pay."""

from __future__ import annotations

from quorum.live.ledger import Ledger
from quorum.live.live_stats import LiveStats
from quorum.routing.budget import from_units, to_units


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
