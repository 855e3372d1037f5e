"""Quality and cost metrics (paper, sec. 4 "Metrics").

- accuracy: share of items whose final label equals gold (an item left without a label
  counts as wrong);
- ROUGE-1 F1 for summaries, with a tokenizer that works for Spanish/Catalan (Unicode
  words) and Japanese (MeCab words via fugashi, else characters);
- Machine Cumulative Accuracy (MCA, ARAIDA): among items routed to humans, the share on
  which the reference LLM (by default the most expensive) would have been wrong.
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np
import pandas as pd

_WORD = re.compile(r"\w+", re.UNICODE)


def accuracy(outputs: pd.Series, gold: pd.Series) -> float:
    """Outputs and gold indexed by item_id; missing outputs count as wrong."""
    g = gold.dropna()
    if len(g) == 0:
        return float("nan")
    o = outputs.reindex(g.index)
    return float((o.to_numpy(dtype=object) == g.to_numpy(dtype=object)).mean())


class UnicodeTokenizer:
    """rouge-score compatible tokenizer: lower-cased Unicode words (es/ca/en)."""

    def tokenize(self, text: str) -> list[str]:
        return _WORD.findall(str(text).lower())


class JapaneseTokenizer:
    """rouge-score compatible tokenizer for Japanese: MeCab (fugashi) surface forms."""

    def __init__(self) -> None:
        try:
            import fugashi

            self._tagger = fugashi.Tagger()
        except Exception:  # pragma: no cover - fugashi is a dependency
            self._tagger = None

    def tokenize(self, text: str) -> list[str]:
        text = str(text)
        if self._tagger is None:
            return [c for c in text if not c.isspace()]
        return [w.surface for w in self._tagger(text) if w.surface.strip()]


@lru_cache(maxsize=4)
def _scorer(language: str):
    from rouge_score import rouge_scorer

    if language == "ja":
        tok = JapaneseTokenizer()
    elif language in ("en", ""):
        tok = None  # rouge-score's own (ASCII) tokenizer, as used in the literature
    else:
        tok = UnicodeTokenizer()
    return rouge_scorer.RougeScorer(["rouge1"], use_stemmer=False, tokenizer=tok)


def rouge1(outputs: pd.Series, references: pd.Series, language: str = "en") -> float:
    """Mean ROUGE-1 F1 of outputs against references (missing output scores 0)."""
    ref = references.dropna()
    if len(ref) == 0:
        return float("nan")
    out = outputs.reindex(ref.index)
    sc = _scorer(language)
    vals = [
        0.0 if not isinstance(o, str) else sc.score(r, o)["rouge1"].fmeasure
        for o, r in zip(out.to_numpy(dtype=object), ref.to_numpy(dtype=object), strict=True)
    ]
    return float(np.mean(vals))


def machine_cumulative_accuracy(
    human_items: pd.Index | list[str], reference_pred: pd.Series, gold: pd.Series
) -> float:
    """MCA = sum_{i in H} 1[y_hat_i != y_i] / |H| with y_hat the reference LLM's answer.

    An item where the reference LLM gave no usable answer counts as an LLM error.
    Returns NaN when no item went to a human.
    """
    h = pd.Index(human_items)
    if len(h) == 0:
        return float("nan")
    pred = reference_pred.reindex(h).to_numpy(dtype=object)
    g = gold.reindex(h).to_numpy(dtype=object)
    return float((pred != g).mean())
