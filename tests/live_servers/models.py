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


# -- stub LLMs right with a known probability on SST-2 (issue 38's scripted team) ----------
def _sst2_gold() -> dict[str, str]:
    """SST-2 dev's gold label by sentence (the shared data folder)."""
    global _GOLD
    if _GOLD is None:
        import pandas as pd

        from quorum.data.paths import data_dir

        root = data_dir(required=True)
        df = pd.read_csv(root / "sst2_dev" / "sst2_dev.csv", dtype=str)
        _GOLD = dict(zip(df["sentence"], df["label"], strict=True))
    return _GOLD


_GOLD: dict[str, str] | None = None


def _coin(*parts: object) -> float:
    import hashlib

    h = hashlib.blake2b("\x00".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") / 2**64


def _right_with(p: float, name: str, text: str) -> str:
    y = _sst2_gold()[text]
    return y if _coin("stub", name, text) < p else ("1" if y == "0" else "0")


def right_70(text: str) -> str:
    """An SST-2 'LLM' right on about 70 % of the sentences (a fixed coin per sentence)."""
    return _right_with(0.70, "right_70", text)


def right_80(text: str) -> str:
    """An SST-2 'LLM' right on about 80 % of the sentences (a fixed coin per sentence)."""
    return _right_with(0.80, "right_80", text)


def always_negative(text: str) -> str:
    """An 'LLM' that answers negative whatever the text (issue 38's constant endpoint)."""
    return "0"
