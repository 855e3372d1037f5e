"""The six linguistic features on texts whose values are known by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quorum.features.linguistic import (
    LINGUISTIC_FEATURES,
    count_sentences,
    detect_language,
    flesch_difficulty,
    linguistic_features,
    normalise_language,
    split_sentences,
)

AWL, TTR, ASL, FLESCH, NOUN, VERB = range(6)


def test_names_and_shape():
    assert LINGUISTIC_FEATURES == (
        "avg_word_length",
        "type_token_ratio",
        "avg_sentence_length",
        "flesch_difficulty",
        "noun_ratio",
        "verb_ratio",
    )
    out = linguistic_features(["One text.", "Two texts here."])
    assert out.shape == (2, 6) and out.dtype == np.float64


def test_english_known_values():
    f = linguistic_features(["The cat sat. The dog ran."], "en")[0]
    assert f[AWL] == pytest.approx(3.0)  # 18 letters / 6 words
    assert f[TTR] == pytest.approx(5 / 6)  # "the" twice once lower-cased
    assert f[ASL] == pytest.approx(3.0)  # 6 words / 2 sentences
    # FRE = 206.835 - 1.015 * 3 - 84.6 * 1 = 119.19 -> clipped to 100 -> difficulty 0
    assert f[FLESCH] == pytest.approx(0.0)
    # content words cat/NOUN sat/VERB dog/NOUN ran/VERB
    assert f[NOUN] == pytest.approx(0.5)
    assert f[VERB] == pytest.approx(0.5)


def test_punctuation_is_not_a_word_and_ttr_is_lowercased():
    f = linguistic_features(["Hello, world!"])[0]
    assert f[AWL] == pytest.approx(5.0)
    assert f[ASL] == pytest.approx(2.0)
    f = linguistic_features(["The the THE cat."])[0]
    assert f[TTR] == pytest.approx(0.5)


def test_flesch_difficulty_by_hand():
    # 5 words, 1 sentence; syllables the 1, committee 3, postponed 2, the 1, decision 3 = 10
    fre = 206.835 - 1.015 * 5 - 84.6 * (10 / 5)
    got = flesch_difficulty("The committee postponed the decision.")
    assert got == pytest.approx(1 - fre / 100)
    assert 0 < got < 1
    f = linguistic_features(["The committee postponed the decision."])[0]
    assert f[FLESCH] == pytest.approx(got)


def test_flesch_is_clipped_to_unit_interval():
    hard = "Internationalization institutionalization characteristically overcomplicates."
    assert flesch_difficulty(hard) == 1.0  # FRE < 0
    assert flesch_difficulty("I go. We go. You go.") == 0.0  # FRE > 100


def test_spanish_known_values():
    text = "El niño lee un libro. La niña escribe una carta."
    f = linguistic_features([text], "es")[0]
    assert f[AWL] == pytest.approx(37 / 10)
    assert f[TTR] == pytest.approx(1.0)
    assert f[ASL] == pytest.approx(5.0)
    assert f[NOUN] == pytest.approx(4 / 6)  # niño libro niña carta
    assert f[VERB] == pytest.approx(2 / 6)  # lee escribe
    assert 0.0 <= f[FLESCH] <= 1.0


def test_spanish_flesch_uses_fernandez_huerta():
    from textstat.backend import counts

    text = "La administración gubernamental implementará modificaciones constitucionales."
    words, syl = counts.count_words(text), counts.count_syllables(text, "es")
    fre = 206.84 - 1.02 * words / 1 - 60.0 * syl / words
    assert flesch_difficulty(text, "es") == pytest.approx(1 - min(max(fre, 0), 100) / 100)
    # Catalan is read with the Spanish rules
    assert flesch_difficulty(text, "ca") == flesch_difficulty(text, "es")


def test_catalan_runs_with_spanish_pipeline():
    f = linguistic_features(["Els gossos corren pel parc. El gat dorm."], "ca")[0]
    assert f[ASL] == pytest.approx(4.0)  # 5 + 3 words, 2 sentences
    assert np.isfinite(f).all()


def test_japanese_known_values():
    # 猫/が/魚/を/食べ/た/。/犬/が/走っ/た/。 -> 10 morphemes (。 is not a word), 2 sentences
    f = linguistic_features(["猫が魚を食べた。犬が走った。"], "ja")[0]
    assert math.isnan(f[AWL]) and math.isnan(f[FLESCH])
    assert f[TTR] == pytest.approx(8 / 10)  # が and た repeat
    assert f[ASL] == pytest.approx(5.0)
    assert f[NOUN] == pytest.approx(3 / 5)  # 猫 魚 犬
    assert f[VERB] == pytest.approx(2 / 5)  # 食べ 走っ


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "!!! ...", "。"])
def test_empty_text_gives_zeros(text):
    f = linguistic_features([text], "en")[0]
    assert (f == 0).all()
    j = linguistic_features([text], "ja")[0]
    assert (j[[TTR, ASL, NOUN, VERB]] == 0).all()
    assert np.isnan(j[[AWL, FLESCH]]).all()


def test_mixed_languages_keep_row_order():
    texts = ["The cat sat. The dog ran.", "猫が魚を食べた。犬が走った。", "El niño lee un libro."]
    both = linguistic_features(texts, ["en", "ja", "es"])
    np.testing.assert_array_equal(both[0], linguistic_features(texts[:1], "en")[0])
    np.testing.assert_array_equal(both[1], linguistic_features(texts[1:2], "ja")[0])
    np.testing.assert_array_equal(both[2], linguistic_features(texts[2:], "es")[0])
    with pytest.raises(ValueError, match="languages"):
        linguistic_features(texts, ["en", "ja"])


def test_progress_callback_counts_every_text():
    seen = []
    linguistic_features(["a b.", "c d.", "猫。"], ["en", "en", "ja"], progress=seen.append)
    assert sum(seen) == 3


def test_sentence_rule():
    assert split_sentences("Wait... what? Yes!\nNo") == ["Wait", " what", " Yes", "No"]
    assert count_sentences("About 3.5 percent of firms failed (SPACE.com). Really") == 2
    assert count_sentences("猫が好き。犬も！") == 2
    assert count_sentences("") == 0


def test_language_codes():
    assert normalise_language("en-US") == "en"
    assert normalise_language("Japanese") == "ja"
    assert normalise_language("CAT") == "ca"
    with pytest.raises(ValueError, match="unsupported language"):
        normalise_language("fr")


def test_detect_language():
    texts = [
        "The cat sat on the mat and it was good.",
        "El gato se sentó y los perros corrieron con el niño.",
        "Els gossos van córrer amb els nens i les nenes.",
        "猫が好きです。",
        "ok",
    ]
    assert detect_language(texts) == ["en", "es", "ca", "ja", "en"]
    assert detect_language(["zzz"], default="es") == ["es"]


def test_spacy_processes_give_the_same_features(monkeypatch):
    import quorum.features.linguistic as ling

    texts = [f"The {w} cat sat on the mat. It was {w}!" for w in ("big", "red", "old")] * 8
    texts += ["", "Una frase corta."]
    one = ling.linguistic_features(texts, "en", batch_size=4)
    monkeypatch.setattr(ling, "_MIN_TEXTS_PER_PROCESS", 5)  # force two spaCy processes
    calls: list[int] = []
    two = ling.linguistic_features(texts, "en", batch_size=4, progress=calls.append, n_process=2)
    np.testing.assert_array_equal(one, two)
    assert sum(calls) == len(texts)
