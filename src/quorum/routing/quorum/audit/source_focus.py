"""Source focus (ours, issue 39): how closely a cheap LLM's summary of a source should
follow a human's, read from the source text alone, before any call.

Five signals of a source x_t, each higher where the cheapest LLM's summary was closer to
the human one on the bench's dev summary sets (docs/router.md, "Summaries at equal spend:
the least focused sources first"):

- centrality: ROUGE-1 F1 of its lead (first ``k`` sentences) against the rest;
- lead coverage: the share of its ``N_SALIENT`` most frequent content words (not in
  ``STOP_WORDS``, at least 3 characters) that occur in the lead;
- spread: the mean share of its sentences in which each of those words occurs;
- repetition: 1 − the type/token ratio of its first ``REPETITION_WINDOW`` words;
- names: the share of its words after the first that start with a capital.

The focus of a set of sources is the sum of the five signals' ranks among them (ties
averaged); a summary audit gives the humans the least focused sources first.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
from scipy.stats import rankdata

__all__ = [
    "N_SALIENT",
    "REPETITION_WINDOW",
    "SENTENCE_END",
    "STOP_WORDS",
    "focus_signals",
    "lead_sentences",
    "source_focus",
]

#: the source's most frequent content words read by lead coverage and spread
N_SALIENT = 10
#: the words read by repetition (a fixed window, so that it does not fall with length)
REPETITION_WINDOW = 200
#: a word: ASCII letters, digits and apostrophes (the signals were chosen on English news)
_WORD = re.compile(r"[A-Za-z0-9']+")
#: words that are never salient: English function words and news reporting words. Ours,
#: short on purpose: the focus was chosen and confirmed with this list; scikit-learn's
#: longer ``ENGLISH_STOP_WORDS`` moves the dev cells by up to 0.4 point either way
#: (docs/router.md).
# fmt: off
STOP_WORDS = frozenset({
    "the", "a", "an", "and", "or", "of", "to", "in", "on", "for", "with", "at", "by", "from",
    "as", "is", "was", "were", "be", "been", "are", "it", "its", "this", "that", "these",
    "those", "he", "she", "they", "his", "her", "their", "them", "we", "you", "i", "but",
    "not", "have", "has", "had", "will", "would", "can", "could", "said", "says", "after",
    "over", "into", "about", "than", "who", "which", "what", "when", "where", "also", "more",
    "one", "two", "new", "up", "out",
})
# fmt: on

#: a sentence ends at . ! ? followed by white space, or at a full-width 。！？
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


def lead_sentences(text: str, n: int) -> tuple[str, str]:
    """``text``'s first ``n`` sentences and the rest (all of it and "" when it has fewer).

    >>> lead_sentences("One. Two! Three? Four.", 2)
    ('One. Two!', 'Three? Four.')
    """
    parts = SENTENCE_END.split(text.strip(), maxsplit=n)
    return " ".join(parts[:n]), " ".join(parts[n:])


def focus_signals(text: str, k: int, score: Callable[[str, str], float]) -> np.ndarray:
    """The five signals of one source (centrality, lead coverage, spread, repetition,
    names), each higher for a more focused source; 0 where a signal has nothing to read.

    >>> s = focus_signals("Rain in Oslo. Rain again. Oslo wet.", 1, lambda a, b: 0.5)
    >>> [round(float(v), 2) for v in s]
    [0.5, 0.5, 0.5, 0.29, 0.43]
    """
    words = _WORD.findall(text)
    lower = [w.lower() for w in words]
    lead, rest = lead_sentences(text, k)
    central = score(lead, rest) if lead and rest else 0.0
    counts = Counter(w for w in lower if len(w) > 2 and w not in STOP_WORDS)
    salient = [w for w, _ in counts.most_common(N_SALIENT)]
    sentences = [set(_WORD.findall(s.lower())) for s in SENTENCE_END.split(text.strip()) if s]
    lead_words = set(_WORD.findall(lead.lower()))
    coverage = float(np.mean([w in lead_words for w in salient])) if salient else 0.0
    spread = (
        float(np.mean([np.mean([w in s for s in sentences]) for w in salient]))
        if salient and sentences
        else 0.0
    )
    window = lower[:REPETITION_WINDOW]
    repetition = 1.0 - len(set(window)) / len(window) if window else 0.0
    names = sum(w[0].isupper() for w in words[1:]) / len(words) if words else 0.0
    return np.array([central, coverage, spread, repetition, names])


def source_focus(texts: Sequence[str], k: int, score: Callable[[str, str], float]) -> np.ndarray:
    """The focus of each source among ``texts``: the sum of its five signals' ranks
    (:func:`focus_signals`; ties averaged). Higher, more focused.

    >>> t = ["Rain in Oslo. Rain again. Oslo wet.", "Sun in Rome. Wind at sea. Snow."]
    >>> source_focus(t, 1, lambda a, b: 0.5).tolist()
    [9.0, 6.0]
    """
    if not len(texts):
        return np.zeros(0)
    signals = np.array([focus_signals(t, k, score) for t in texts])
    return np.sum([rankdata(col) for col in signals.T], axis=0)
