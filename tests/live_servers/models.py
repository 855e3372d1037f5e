"""Deterministic local models for the tests (used as ``module:function`` in projects)."""

from __future__ import annotations

import json

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


#: the span types of the span tests' local models, and the words each marks
SPAN_WORDS = {"Team": ("Arsenal", "Spurs", "Chelsea", "Leeds"), "Day": ("Sunday", "Monday")}


def span_spotter(text: str) -> str:
    """Quotes every known word of the text with its type (a JSON list of quotes, as an LLM
    answers a span task), each occurrence numbered."""
    out = []
    for typ, words in SPAN_WORDS.items():
        for w in words:
            for k in range(1, text.count(w) + 1):
                out.append({"quote": w, "type": typ, "occurrence": k})
    return json.dumps(out)


def span_days_only(text: str) -> str:
    """Marks only the days, by offsets (a model that misses the teams)."""
    out = []
    for w in SPAN_WORDS["Day"]:
        at = text.find(w)
        while at >= 0:
            out.append({"start": at, "end": at + len(w), "label": "Day"})
            at = text.find(w, at + 1)
    return json.dumps(out)


def moral_keywords(text: str) -> str:
    """A label set (``a;b``) over care / purity / non-moral by keywords (multi-label)."""
    words = set(text.lower().split())
    keys = {"care": {"help", "hurt", "care", "kind", "love"}, "purity": {"god", "pure", "gross"}}
    got = [lab for lab, k in keys.items() if words & k]
    return ";".join(got) or "non-moral"


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


def span_named_types(text: str) -> str:
    """Quotes every known word typed by the *name* a prompt shows for its type
    (``label_names``: "Team name", "Day of week"), as an LLM shown those names answers."""
    names = {"Team": "Team name", "Day": "Day of week"}
    out = [{"quote": w, "type": names[typ], "occurrence": 1}
           for typ, words in SPAN_WORDS.items() for w in words if w in text]  # fmt: skip
    return json.dumps(out)


def span_unknown_type(text: str) -> str:
    """Quotes the first word with a type outside every task's span types."""
    return json.dumps([{"quote": text.split()[0], "type": "Bogus"}])


def moral_keywords_list(text: str) -> list[str]:
    """:func:`moral_keywords` as a Python list (a local multi-label model's natural form)."""
    return moral_keywords(text).split(";")


def moral_overconfident(text: str) -> tuple[str, float]:
    """:func:`moral_keywords` with a "confidence" of 7 (no probability)."""
    return moral_keywords(text), 7.0


def longer_unless_x_first(text: str) -> str:
    """Prefers the longer output, but cannot say when the output shown first starts with
    "x" (a verdict that cannot be read, in one order only)."""
    a, _ = _outputs(text)
    return "I cannot tell" if a.startswith("x") else longer_output(text)
