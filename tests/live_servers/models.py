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
