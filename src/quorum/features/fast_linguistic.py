"""The six linguistic features with a lighter spaCy pipeline: tokeniser + a distilled tagger.

The default pipeline runs spaCy's tok2vec + tagger over every text, and that is most of its
cost. Here every text only goes through spaCy's *tokeniser* (so word length, type-token
ratio, sentence length and Flesch are exactly the default ones), and the part-of-speech
tags behind ``noun_ratio`` and ``verb_ratio`` come from :class:`HashedTagger`, a linear
model over hashed token features (word, its neighbours, shape, prefix, suffix) trained on
the tags that the full spaCy pipeline gives a sample of the same texts:

- the sample is drawn in a fixed pseudo-random order until it holds ``sample_tokens``
  tokens, so its cost does not grow with the dataset; texts in the sample keep the full
  pipeline's tags;
- a dataset with fewer tokens than that is tagged by the full pipeline throughout, and then
  every feature equals the default one.

Measured agreement with the full tagger: ``scripts/bench_feature_profiles.py`` (in
docs/performance.md). Japanese (fugashi) is already light and is computed as by default.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from quorum.features.hashed_tagger import (
    LENGTH,
    LOWER,
    ORTH,
    TOKEN_ATTRS,
    HashedTagger,
)
from quorum.features.linguistic import (
    _CONTENT_POS,
    _HAS_WORD,
    LINGUISTIC_FEATURES,
    TEXTSTAT_LANG,
    Progress,
    _japanese_features,
    count_sentences,
    normalise_language,
    spacy_pipeline,
)


def _sample(lengths: np.ndarray, sample_tokens: int, seed: int = 0) -> np.ndarray:
    """Indices of the texts tagged by the full pipeline: a fixed pseudo-random order, cut
    once the tokens reach ``sample_tokens`` (all texts when they hold fewer)."""
    if lengths.sum() <= sample_tokens:
        return np.arange(len(lengths))
    order = np.random.default_rng(seed).permutation(len(lengths))
    cum = np.cumsum(lengths[order])
    stop = int(np.searchsorted(cum, sample_tokens)) + 1
    return np.sort(order[:stop])


class _Syllables:
    """textstat 0.7.8's syllable count of one lower-cased word (CMU dictionary, else Pyphen),
    memoised per word: :func:`flesch_difficulty_fast` gives the same numbers as textstat's
    ``flesch_reading_ease`` without counting a frequent word twice."""

    def __init__(self, lang: str) -> None:
        from textstat.backend.utils import get_cmudict, get_pyphen

        self.cmu = get_cmudict(lang)
        self.pyphen = get_pyphen(lang)
        self.memo: dict[str, int] = {}

    def __call__(self, word: str) -> int:
        n = self.memo.get(word)
        if n is None:
            try:
                n = sum(1 for p in self.cmu[word][0] if p[-1].isdigit())  # type: ignore[index]
            except (TypeError, IndexError, KeyError):
                n = len(self.pyphen.positions(word)) + 1
            self.memo[word] = n
        return n


_SYLLABLES: dict[str, _Syllables] = {}


def flesch_difficulty_fast(text: str, language: str = "en") -> float:
    """:func:`~quorum.features.linguistic.flesch_difficulty`, same value, syllables memoised."""
    from textstat.backend.metrics import words_per_sentence
    from textstat.backend.selections import list_words
    from textstat.backend.utils import get_lang_cfg, get_lang_root

    lang = normalise_language(language)
    if lang == "ja":
        return float("nan")
    if not _HAS_WORD.search(text):
        return 0.0
    tlang = TEXTSTAT_LANG[lang]
    count = _SYLLABLES.get(tlang)
    if count is None:
        count = _SYLLABLES[tlang] = _Syllables(tlang)
    sentence_length = words_per_sentence(text)
    words = list_words(text, lowercase=True)
    syllables = sum(count(w) for w in words) / len(words) if words else 0.0
    if sentence_length == 0 or syllables == 0:
        fre = 0.0
    else:
        root = get_lang_root(tlang)
        fre = (
            get_lang_cfg(root, "fre_base")
            - get_lang_cfg(root, "fre_sentence_length") * sentence_length
            - get_lang_cfg(root, "fre_syll_per_word") * syllables
        )
    return 1.0 - min(max(fre, 0.0), 100.0) / 100.0


def _table(ids: list[int]) -> np.ndarray:
    """A boolean lookup table over POS ids (spaCy's are small integers)."""
    t = np.zeros(max(ids) + 1, dtype=bool)
    t[ids] = True
    return t


def _lookup(table: np.ndarray, pos: np.ndarray) -> np.ndarray:
    p = pos.astype(np.int64)
    out = np.zeros(len(p), dtype=bool)
    ok = p < len(table)
    out[ok] = table[p[ok]]
    return out


def _tokens(texts: list[str], language: str, batch_size: int) -> tuple[list, list[np.ndarray]]:
    """spaCy tokeniser docs and their (n_tokens, 6) ``TOKEN_ATTRS`` arrays."""
    from spacy import attrs

    nlp = spacy_pipeline(language)
    ids = [getattr(attrs, a) for a in TOKEN_ATTRS]
    docs = list(nlp.tokenizer.pipe(texts, batch_size=max(batch_size, 256)))
    return docs, [d.to_array(ids).astype(np.uint64).reshape(-1, len(ids)) for d in docs]


def fit_sample(
    texts: list[str],
    lengths: np.ndarray,
    language: str,
    batch_size: int,
    sample_tokens: int,
    docs: list | None = None,
) -> tuple[dict[int, np.ndarray], HashedTagger | None]:
    """Tag the sample (:func:`_sample` of the texts' token counts) with the full spaCy
    pipeline; train a :class:`HashedTagger` on it unless it holds every text.

    Returns the full pipeline's POS ids of the sampled texts (by index) and the tagger.
    """
    from spacy import attrs

    nlp = spacy_pipeline(language)
    chosen = _sample(lengths, sample_tokens)
    if docs is not None:
        tagged = [docs[i] for i in chosen]
    else:
        tagged = list(nlp.tokenizer.pipe([texts[i] for i in chosen], batch_size=256))
    ids = [getattr(attrs, a) for a in TOKEN_ATTRS]
    arrays = [d.to_array(ids).astype(np.uint64).reshape(-1, len(ids)) for d in tagged]
    for _, proc in nlp.pipeline:
        tagged = list(proc.pipe(tagged, batch_size=batch_size))
    known = {
        int(i): d.to_array([attrs.POS]).astype(np.uint64).reshape(-1)
        for i, d in zip(chosen, tagged, strict=True)
    }
    tagger = None
    if len(chosen) < len(texts):
        tagger = HashedTagger().fit(arrays, [known[int(i)] for i in chosen])
    return known, tagger


def _pos_ids(
    arrays: list[np.ndarray],
    lengths: np.ndarray,
    known: dict[int, np.ndarray],
    tagger: HashedTagger | None,
    language: str,
) -> list[np.ndarray | None]:
    """Per text its POS ids: from ``known`` where given, else guessed by ``tagger``."""
    n = len(arrays)
    pos: list[np.ndarray | None] = [known.get(i) for i in range(n)]
    rest = [i for i in range(n) if pos[i] is None and lengths[i]]
    if rest:
        if tagger is None:
            raise RuntimeError(f"no tagger fitted for {language!r}")
        guessed = tagger.predict_many([arrays[i] for i in rest])
        for i, p in zip(rest, guessed, strict=True):
            pos[i] = p
    return pos


def _word_counts(
    strings: Any, tok: np.ndarray, doc: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per text: words, their characters, and distinct lower-cased words."""
    uniq, inv = np.unique(tok[:, ORTH], return_inverse=True)
    is_word = np.array([bool(_HAS_WORD.search(strings[int(o)])) for o in uniq], dtype=bool)
    words = is_word[inv.reshape(-1)]
    n_words = np.bincount(doc, weights=words, minlength=n)
    chars = np.bincount(doc, weights=np.where(words, tok[:, LENGTH], 0), minlength=n)
    # distinct lower-cased words per text: sort (text, form) pairs, count the changes
    wd, wl = doc[words], tok[words, LOWER]
    order = np.lexsort((wl, wd))
    wd, wl = wd[order], wl[order]
    first = np.ones(len(wd), dtype=bool)
    first[1:] = (wd[1:] != wd[:-1]) | (wl[1:] != wl[:-1])
    types = np.bincount(wd[first], minlength=n)
    return n_words, chars, types


def _pos_counts(
    tags: np.ndarray, doc: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per text: content words, nouns (and proper nouns), verbs."""
    from spacy.parts_of_speech import IDS

    content = _lookup(_table([IDS[p] for p in _CONTENT_POS]), tags)
    noun = _lookup(_table([IDS["NOUN"], IDS["PROPN"]]), tags)
    verb = _lookup(_table([IDS["VERB"]]), tags)
    n_content = np.bincount(doc, weights=content, minlength=n)
    n_noun = np.bincount(doc, weights=noun, minlength=n)
    n_verb = np.bincount(doc, weights=verb, minlength=n)
    return n_content, n_noun, n_verb


def _light_group(
    texts: list[str],
    language: str,
    arrays: list[np.ndarray],
    known: dict[int, np.ndarray],
    tagger: HashedTagger | None,
    progress: Progress | None,
) -> np.ndarray:
    """The six features of one language's texts from their token arrays; POS ids from
    ``known`` (index -> ids) where given, else from ``tagger``."""
    nlp = spacy_pipeline(language)
    n = len(texts)
    out = np.zeros((n, len(LINGUISTIC_FEATURES)), dtype=np.float64)
    lengths = np.array([len(a) for a in arrays], dtype=np.int64)
    if lengths.sum() == 0:
        if progress is not None:
            progress(n)
        return out
    pos = _pos_ids(arrays, lengths, known, tagger, language)
    # every token of every text at once; ``doc`` is the text each token belongs to
    tok = np.concatenate(arrays)
    doc = np.repeat(np.arange(n), lengths)
    tags = np.concatenate([p if p is not None else np.zeros(0, np.uint64) for p in pos])
    n_words, chars, types = _word_counts(nlp.vocab.strings, tok, doc, n)
    n_content, n_noun, n_verb = _pos_counts(tags, doc, n)

    for i in range(n):
        if progress is not None:
            progress(1)
        nw = n_words[i]
        if nw == 0:
            continue
        text = texts[i]
        out[i, 0] = chars[i] / nw
        out[i, 1] = types[i] / nw
        out[i, 2] = nw / max(count_sentences(text), 1)
        out[i, 3] = flesch_difficulty_fast(text, language)
        if n_content[i]:
            out[i, 4] = n_noun[i] / n_content[i]
            out[i, 5] = n_verb[i] / n_content[i]
    return out


def _groups(langs: Sequence[str]) -> dict[str, list[int]]:
    """Indices of the texts of each language, in order."""
    groups: dict[str, list[int]] = {}
    for i, lang in enumerate(langs):
        groups.setdefault(lang, []).append(i)
    return groups


def token_counts(texts: Sequence[str], langs: Sequence[str], batch_size: int = 64) -> np.ndarray:
    """spaCy tokens per text (0 for Japanese, which needs no sample)."""
    out = np.zeros(len(texts), dtype=np.int64)
    for lang, idx in _groups(langs).items():
        if lang != "ja":
            _, arrays = _tokens([str(texts[i]) for i in idx], lang, batch_size)
            out[idx] = [len(a) for a in arrays]
    return out


class LightLinguistic:
    """The six linguistic features through spaCy's tokeniser and a distilled tagger.

    ``sample_tokens``: tokens of each language tagged by the full pipeline to train the
    tagger (and kept as they are). After the first call, ``taggers_`` holds the tagger per
    language, reused for later texts (``transform`` of new items).
    """

    def __init__(self, sample_tokens: int = 50_000) -> None:
        self.sample_tokens = sample_tokens
        self.taggers_: dict[str, HashedTagger | None] = {}

    def __call__(
        self,
        texts: Sequence[str],
        language: str | Sequence[str] = "en",
        batch_size: int = 64,
        progress: Progress | None = None,
        n_process: int = 1,
    ) -> np.ndarray:
        """Same signature and output layout as :func:`~quorum.features.linguistic.
        linguistic_features` (``n_process`` is accepted and unused: no tagger processes)."""
        texts = [str(t) for t in texts]
        n = len(texts)
        if isinstance(language, str):
            langs = [normalise_language(language)] * n
        else:
            langs = [normalise_language(x) for x in language]
            if len(langs) != n:
                raise ValueError(f"got {len(langs)} languages for {n} texts")
        out = np.zeros((n, len(LINGUISTIC_FEATURES)), dtype=np.float64)
        for lang, idx in _groups(langs).items():
            sub = [texts[i] for i in idx]
            if lang == "ja":
                out[idx] = _japanese_features(sub, progress)
                continue
            docs, arrays = _tokens(sub, lang, batch_size)
            known: dict[int, np.ndarray] = {}
            if lang not in self.taggers_:
                lengths = np.array([len(a) for a in arrays], dtype=np.int64)
                known, tagger = fit_sample(
                    sub, lengths, lang, batch_size, self.sample_tokens, docs=docs
                )
                if tagger is not None:
                    self.taggers_[lang] = tagger
            out[idx] = _light_group(sub, lang, arrays, known, self.taggers_.get(lang), progress)
        return out

    def fit_lengths(
        self, texts: Sequence[str], langs: Sequence[str], lengths: np.ndarray, batch_size: int = 64
    ) -> dict[int, np.ndarray]:
        """Fit the taggers from token counts computed elsewhere (the Ray engine): returns
        the full pipeline's POS ids of the sampled texts, by index into ``texts``."""
        known: dict[int, np.ndarray] = {}
        for lang, idx in _groups(langs).items():
            if lang == "ja" or lang in self.taggers_:
                continue
            sub = [str(texts[i]) for i in idx]
            got, tagger = fit_sample(sub, lengths[idx], lang, batch_size, self.sample_tokens)
            if tagger is not None:
                self.taggers_[lang] = tagger
            known.update({idx[j]: p for j, p in got.items()})
        return known

    def features(
        self,
        texts: Sequence[str],
        langs: Sequence[str],
        known: dict[int, np.ndarray],
        batch_size: int = 64,
    ) -> np.ndarray:
        """The features of ``texts`` with fitted taggers and the sampled texts' POS ids
        ``known`` (by index into ``texts``): one chunk of the Ray engine."""
        texts = [str(t) for t in texts]
        out = np.zeros((len(texts), len(LINGUISTIC_FEATURES)), dtype=np.float64)
        for lang, idx in _groups(langs).items():
            sub = [texts[i] for i in idx]
            if lang == "ja":
                out[idx] = _japanese_features(sub, None)
                continue
            _, arrays = _tokens(sub, lang, batch_size)
            local = {j: known[i] for j, i in enumerate(idx) if i in known}
            out[idx] = _light_group(sub, lang, arrays, local, self.taggers_.get(lang), None)
        return out

    def spec(self) -> dict[str, Any]:
        return {"linguistic": "spacy-tokeniser+hashed-tagger/1", "tokens": self.sample_tokens}
