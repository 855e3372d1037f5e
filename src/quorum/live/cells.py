"""Table cells as the ledger stores them and as they are read back: missing values (None,
NaN) become NULL, or None."""

from __future__ import annotations

from typing import Any


def text_or_none(x: Any) -> str | None:
    """``x`` as text; None for None or NaN."""
    if x is None or (isinstance(x, float) and x != x):
        return None
    return str(x)


def float_or_none(x: Any) -> float | None:
    """``x`` as a float; None for what is not a number, or NaN."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if v != v else v


def int_or_none(x: Any) -> int | None:
    """``x`` as an integer (truncated); None for what is not a number, or NaN."""
    v = float_or_none(x)
    return None if v is None else int(v)
