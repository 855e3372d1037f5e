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

#: the largest price per call a replay takes (``quorum.replay``'s prices, ``quorum simulate
#: --annotators``; the live project files' bound too): beyond it sums of prices overflow
#: the nano-units
MAX_PRICE = 1e9


#: amounts already converted (prices and reserves repeat); cleared when it grows large
_UNITS: dict[float, int] = {}


def to_units(x: float) -> int:
    """``round(x * 1e9)``; memoised, since the same prices are converted again and again."""
    u = _UNITS.get(x)
    if u is None:
        u = round(float(x) * _SCALE)
        if len(_UNITS) >= 65536:
            _UNITS.clear()
        _UNITS[x] = u
    return u


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
    def limit_units(self) -> int:
        """The limit B in the Budget's integer nano-units (0: no money at all)."""
        return self._limit_u

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
    def remaining_units(self) -> int:
        """:attr:`remaining` in nano-units (exact)."""
        return self._limit_u - self._spent_u - self._reserved_u

    def units_state(self) -> tuple[int, int, int]:
        """(money left in nano-units, human labels left, 1 if there is a human limit),
        the money as the compiled loops keep it (0 labels left where there is no limit)."""
        left = self.humans_left
        return self.remaining_units, 0 if left is None else left, 0 if left is None else 1

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
        u = to_units(cost) + (to_units(keep) if keep else 0)  # to_units(0.0) is 0
        return u <= self._limit_u - self._spent_u - self._reserved_u

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

    def can_afford_many(self, units: int, n_humans: int) -> bool:
        """True if calls costing ``units`` nano-units in all, ``n_humans`` of them human
        labels, fit together."""
        short = self.human_limit is not None and n_humans > self.humans_left
        return units <= self.remaining_units and not short

    def charge_many(self, units: int, n_calls: int, n_humans: int) -> None:
        """``n_calls`` calls of known cost (``units`` nano-units in all, ``n_humans``
        human labels among them) reserved and settled at once: what charging them one by
        one leaves, when each fits in turn (it does when they all fit, since a replay
        call's cost is its price). Raises, charging nothing, when they do not all fit."""
        if not self.can_afford_many(units, n_humans):
            short = self.human_limit is not None and n_humans > self.humans_left
            raise BudgetExceededError(
                f"charging {from_units(units):.6g} for {n_calls} calls ({n_humans} human) "
                f"would exceed the budget: left {from_units(self.remaining_units):.6g}"
                + (f", human labels left {self.humans_left}" if short else "")
            )
        self._spent_u += units
        self.calls += n_calls
        self.human_used += n_humans


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


@dataclass
class SpendingPlan:
    """Phase 2's plan of the money, item by item, ahead of the calls (ours).

    Phase 2 routes a batch of items before the batch is paid for, so its b_t and its
    limits come from *planned* prices, not from outcomes: ``left`` starts at the money
    the :class:`Budget` has when phase 2 starts and drops by each planned price. Every
    item keeps the cheapest price c_min; what an arm costs above it is drawn from a pool
    paced over the ``n_items`` items (``pacing``): item j may use ``pool (j + 1) / n``
    minus what earlier items drew. The Budget still reserves every real call.

    >>> plan = SpendingPlan(left=10.0, floor_price=0.01, n_items=100)
    >>> plan.allowance(0, pool=2.0), plan.fits(0.05, 0, plan.allowance(0, pool=2.0))
    (0.02, False)
    >>> plan.take(0.01); round(plan.left, 2)
    9.99
    """

    left: float
    floor_price: float
    n_items: int
    pacing: bool = True
    extra_spent: float = 0.0

    def allowance(self, j: int, pool: float) -> float:
        """What item j (0-based) may spend above c_min, out of ``pool``."""
        paced = pool * (j + 1) / self.n_items if self.pacing else pool
        return paced - self.extra_spent

    def keep(self, j: int) -> float:
        """Money kept so that every item after item j still gets c_min."""
        return (self.n_items - j - 1) * self.floor_price

    def fits(self, price: float, j: int, allowance: float) -> bool:
        """True if item j may take an arm at ``price`` under ``allowance``."""
        return (
            price - self.floor_price <= allowance + _PLAN_EPS
            and self.left - price >= self.keep(j) - _PLAN_EPS
        )

    def covers_floor(self, j: int) -> bool:
        """True if item j can still get the cheapest arm."""
        return self.left - self.floor_price >= self.keep(j) - _PLAN_EPS

    def take(self, price: float) -> None:
        """Item routed to an arm at ``price``."""
        self.left -= price
        self.extra_spent += price - self.floor_price


_PLAN_EPS = 1e-9


def budget_for_setting(
    setting: str,
    fraction: float,
    n_items: int,
    human_price: float,
    cheapest_price: float = 0.0,
    extra: float = 0.0,
) -> tuple[Budget, int | None]:
    """The paper's budget fraction as money: (Budget, number of human labels or None).

    - dollars: limit = fraction * T * c_H, a share of labelling every item by humans;
    - auditor: B = round(fraction * T) human labels; limit = B c_H + T c_min + ``extra``,
      the cost of the paper's allocation plus what a method's uncertainty estimation
      needs (``Router.extra_cost_estimate``).

    >>> budget_for_setting("dollars", 0.3, 100, 0.1)[0].limit
    3.0
    >>> b, n_h = budget_for_setting("auditor", 0.1, 100, 0.1, 0.01); (n_h, round(b.limit, 6))
    (10, 2.0)
    """
    if setting == "auditor":
        n_h = round(fraction * n_items)
        limit = n_h * human_price + n_items * cheapest_price + extra
        return Budget(limit=limit, human_limit=n_h), n_h
    if setting == "dollars":
        return Budget(limit=fraction * n_items * human_price), None
    raise ValueError(f"setting must be 'dollars' or 'auditor', got {setting!r}")


def cap_humans(n: int, humans_left: int | None) -> int:
    """``n`` human labels, at most the ``humans_left`` a human limit allows (None: no limit).

    >>> cap_humans(12, 5), cap_humans(12, None)
    (5, 12)
    """
    return n if humans_left is None else min(n, humans_left)


def affordable_count(money: float, price: float) -> int:
    """How many calls at ``price`` ``money`` pays for (a float error never loses one).

    >>> affordable_count(0.3, 0.1)  # 0.3 / 0.1 is 2.9999999999999996
    3
    """
    return int(money / price + _PLAN_EPS)


def first_answer_reserve(n_unanswered: int, t_unanswered: bool, c_min: float) -> float:
    """Money phase 3 keeps, while it annotates item t, for a first answer (the cheapest
    LLM) on every *other* open item that has none: ``n_unanswered`` open items have none,
    t among them when ``t_unanswered``. Counting t itself, as before, kept its own first
    answer twice and could close the last unanswered item with money left.

    Examples
    --------
    >>> first_answer_reserve(2, True, 0.01)  # t and one other item: 0.01 for the other
    0.01
    >>> first_answer_reserve(2, False, 0.01)  # two other items
    0.02
    """
    return float(n_unanswered - int(bool(t_unanswered))) * c_min
