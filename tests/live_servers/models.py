"""Deterministic local models for the tests (used as ``module:function`` in projects)."""

from __future__ import annotations

POSITIVE = {"good", "great", "fun", "charming", "best", "love", "enjoy", "beautiful", "funny"}


def keyword_sentiment(text: str) -> str:
    """'1' (positive) if the text has a positive keyword, else '0'."""
    words = set(text.lower().split())
    return "1" if words & POSITIVE else "0"


def named_sentiment(text: str) -> tuple[str, float]:
    """Answers with label *names* and a confidence, to exercise parsing of local outputs."""
    return ("positive", 0.9) if set(text.lower().split()) & POSITIVE else ("negative", 0.6)


def broken(text: str) -> str:
    raise RuntimeError("model crashed")


# -- pairwise judges (a pair's text is quorum.tasks.pairwise.pair_text) -------------------
def _outputs(text: str) -> tuple[str, str]:
    """The two outputs of a pair's text."""
    rest = text.split("\n\nOutput (1):\n", 1)[-1]
    a, _, b = rest.partition("\n\nOutput (2):\n")
    return a, b


def longer_output(text: str) -> str:
    """Prefers the longer output, whichever place it is shown in (consistent)."""
    a, b = _outputs(text)
    return "1" if len(a) >= len(b) else "2"


def first_shown(text: str) -> str:
    """Always prefers the output shown first (position bias: never consistent)."""
    return "Output (1)"
