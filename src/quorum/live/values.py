"""Cell values read back from the ledger or a labels frame: a missing value (None, NaN)
is None, anything else its plain ``str`` or ``float``."""

from __future__ import annotations

from typing import Any


def str_or_none(x: Any) -> str | None:
    """``x`` as text; None where it is None or NaN."""
    if x is None or (isinstance(x, float) and x != x):
        return None
    return str(x)


def float_or_none(x: Any) -> float | None:
    """``x`` as a float; None where it is missing, not a number or NaN."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if v != v else v
