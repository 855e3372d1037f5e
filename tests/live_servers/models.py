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


def moral_keywords(text: str) -> str:
    """A label set (``a;b``) over care / purity / non-moral by keywords (multi-label)."""
    words = set(text.lower().split())
    keys = {"care": {"help", "hurt", "care", "kind", "love"}, "purity": {"god", "pure", "gross"}}
    got = [lab for lab, k in keys.items() if words & k]
    return ";".join(got) or "non-moral"
