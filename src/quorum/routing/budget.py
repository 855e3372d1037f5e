"""A hard budget with reserve-then-settle accounting.

Every call is *reserved* at its maximum price before it is made and *settled* at its real
cost afterwards, so that concurrent calls can never take spending above ``limit``.
Amounts are kept in integer nano-units (1e-9) to avoid floating-point drift over many
charges; the limit is rounded down, so spending can never pass the limit given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from quorum.errors import BudgetExceededError

_SCALE = 1_000_000_000  # nano-units per currency unit


def to_units(x: float) -> int:
    return round(float(x) * _SCALE)


def from_units(u: int) -> float:
    return u / _SCALE


@dataclass
class Budget:
    """Money budget ``B`` (and optionally a cap on the number of human labels).

    ``spent`` counts settled costs, ``reserved`` the outstanding reservations.
    """

    limit: float
    human_limit: int | None = None
    _limit_u: int = field(init=False, repr=False)
    _spent_u: int = field(default=0, init=False, repr=False)
    _reserved_u: int = field(default=0, init=False, repr=False)
    human_used: int = field(default=0, init=False)
    human_reserved: int = field(default=0, init=False)
    calls: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.limit < 0:
            raise ValueError(f"budget limit must be >= 0, got {self.limit}")
        self._limit_u = math.floor(float(self.limit) * _SCALE + 1e-6)

    # -- queries -----------------------------------------------------------
    @property
    def spent(self) -> float:
        return from_units(self._spent_u)

    @property
    def reserved(self) -> float:
        return from_units(self._reserved_u)

    @property
    def remaining(self) -> float:
        """Money not yet spent nor reserved."""
        return from_units(self._limit_u - self._spent_u - self._reserved_u)

    @property
    def remaining_fraction(self) -> float:
        """``b_t``: remaining budget as a fraction of the limit."""
        return 0.0 if self._limit_u == 0 else max(0.0, self.remaining / self.limit)

    @property
    def humans_left(self) -> int | None:
        if self.human_limit is None:
            return None
        return self.human_limit - self.human_used - self.human_reserved

    def can_afford(self, cost: float, *, human: bool = False, keep: float = 0.0) -> bool:
        """True if ``cost`` fits while still keeping ``keep`` money unspent."""
        if human and self.human_limit is not None and self.humans_left < 1:
            return False
        return to_units(cost) + to_units(keep) <= self._limit_u - self._spent_u - self._reserved_u

    # -- reserve / settle --------------------------------------------------
    def reserve(self, cost: float, *, human: bool = False) -> Reservation:
        if not self.can_afford(cost, human=human):
            raise BudgetExceededError(
                f"reserving {cost:.6g} would exceed the budget: limit {self.limit:.6g}, "
                f"spent {self.spent:.6g}, reserved {self.reserved:.6g}"
                + (f", human labels left {self.humans_left}" if human else "")
            )
        u = to_units(cost)
        self._reserved_u += u
        if human:
            self.human_reserved += 1
        return Reservation(self, u, human)

    def charge(self, cost: float, *, human: bool = False) -> None:
        """Reserve and settle at once (the replay case, where the price is known)."""
        self.reserve(cost, human=human).settle(cost)


@dataclass
class Reservation:
    budget: Budget
    units: int
    human: bool
    done: bool = False

    def settle(self, actual_cost: float, *, counted: bool = True) -> float:
        """Turn the reservation into spending at ``actual_cost`` (<= the reserved amount).

        ``counted`` says whether a human label was actually obtained.
        """
        if self.done:
            raise RuntimeError("reservation already settled")
        u = to_units(actual_cost)
        if u > self.units:
            # The provider charged more than the reserved maximum. Record what was paid,
            # but never let it pass silently: the caller must reserve an upper bound.
            b = self.budget
            if b._spent_u + (b._reserved_u - self.units) + u > b._limit_u:
                raise BudgetExceededError(
                    f"actual cost {actual_cost:.6g} exceeds the reservation "
                    f"{from_units(self.units):.6g} and the budget limit"
                )
        b = self.budget
        b._reserved_u -= self.units
        b._spent_u += u
        b.calls += 1
        if self.human:
            b.human_reserved -= 1
            if counted:
                b.human_used += 1
        self.done = True
        return actual_cost

    def release(self) -> None:
        """Cancel a reservation for a call that was never made."""
        if self.done:
            return
        b = self.budget
        b._reserved_u -= self.units
        if self.human:
            b.human_reserved -= 1
        self.done = True
