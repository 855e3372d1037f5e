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

    Two more bounds keep a pass to its plan (issue 38): ``cap_u``, the limit of the target
    mode's current rung (every call), and ``keep_u``, the money the pass keeps for its
    random quality checks: a call that is not a check is held only while the money the
    checks have not used yet (``keep_u`` less ``check_u``, what their tasks paid and hold)
    stays free, so that tasks sent ahead, late answers or calls of earlier passes never
    take it. Calls made while ``for_checks`` is set are the checks'.
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
        self.cap_u = self.limit_u  # the current rung's limit (target mode)
        self.keep_u = 0  # kept for the pass's random checks
        self.check_u = 0  # paid and held by the checks' tasks (whole ledger)
        self.for_checks = False  # the calls made now are the checks'
        self.sync()

    def sync(self) -> None:
        """Take the committed money from the ledger again (with the possibly billed money
        of calls a kill cut off, unless ``charge_interrupted`` is off)."""
        m = self.ledger.money_units()
        self.committed_u = m["committed"] - (0 if self.charge_interrupted else m["interrupted"])
        self.check_u = self.ledger.check_money_units()
        self.stats.committed = from_units(self.committed_u)

    def bound(self, cap: float | None = None, keep: float = 0.0) -> None:
        """The current pass's bounds: the rung's limit (None: the budget) and the money
        kept for its checks."""
        self.cap_u = self.limit_u if cap is None else min(self.limit_u, to_units(cap))
        self.keep_u = max(0, to_units(keep))

    def room(self, units: int, for_checks: bool | None = None) -> bool:
        """Whether the budget has ``units`` left beside what is paid, held and reserved
        (and, for a call that is not a check, beside the money kept for the checks)."""
        checks = self.for_checks if for_checks is None else for_checks
        keep = 0 if checks else max(0, self.keep_u - self.check_u)
        return self.committed_u + self.held_u + units + keep <= self.cap_u

    def takes_over(self, units: int) -> bool:
        """Whether a check's task that paid and holds ``units`` can become an ordinary call
        (the router asks for its item) and leave the money kept for the checks free: its
        money then stops counting as the checks'."""
        keep = max(0, self.keep_u - (self.check_u - units))
        return self.committed_u + self.held_u + keep <= self.cap_u

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

    def commit(self, units: int, for_checks: bool | None = None) -> None:
        """Count money just paid (or held by a human task)."""
        self.committed_u += units
        if self.for_checks if for_checks is None else for_checks:
            self.check_u += units
        self.stats.committed = from_units(self.committed_u)
