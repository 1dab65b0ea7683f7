"""Text utilities: tokenizer, stemmer, content words, trigrams, polarity, slot inference."""

from __future__ import annotations

import pytest

from memspec.reference.text import (
    content_words,
    infer_slots,
    is_negated,
    polarity,
    stem,
    tokenize,
    trigram_similarity,
    trigrams,
)


def test_tokenize_lowercases_and_splits_on_non_alphanumerics() -> None:
    assert tokenize("The staging-DB is Postgres_15, isn't it?") == [
        "the", "staging", "db", "is", "postgres", "15", "isn", "t", "it",
    ]


def test_tokenize_keeps_unicode_letters_and_normalizes_to_nfc() -> None:
    decomposed = "Zu\u0308rich"
    assert tokenize(decomposed) == ["z\u00fcrich"]
    assert tokenize("naïve café 3.11") == ["naïve", "café", "3", "11"]


def test_tokenize_of_punctuation_only_is_empty() -> None:
    assert tokenize(" -- !!! __ ") == []


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("needs", "need"), ("needed", "need"), ("require", "requir"), ("required", "requir"),
        ("requires", "requir"), ("running", "run"), ("stopped", "stop"), ("falling", "fall"),
        ("missed", "miss"), ("flies", "fly"), ("boxes", "box"), ("status", "status"),
        ("analysis", "analysis"), ("quickly", "quick"), ("databases", "databas"),
        ("bus", "bus"), ("is", "is"), ("Tested", "test"),
    ],
)
def test_stem_is_light_and_deterministic(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_content_words_drop_stopwords_and_negators_and_merge_variants() -> None:
    positive = content_words("The staging database is Postgres.")
    negative = content_words("The staging databases are not Postgres!")
    assert positive == negative == frozenset({"stag", "databas", "postgr"})


def test_trigrams_are_padded_and_token_based() -> None:
    assert trigrams("a") == frozenset({" a "})
    assert trigrams("Hi, YO") == frozenset({" hi", "hi ", "i y", " yo", "yo "})
    assert trigrams("...") == frozenset()


def test_trigram_similarity_bounds_and_symmetry() -> None:
    assert trigram_similarity("Hello world", "hello, WORLD!") == 1.0
    assert trigram_similarity("abc", "xyz") == 0.0
    assert trigram_similarity("", "") == 0.0
    a, b = "the staging database is postgres", "the staging database is mysql"
    assert trigram_similarity(a, b) == trigram_similarity(b, a)
    assert 0.0 < trigram_similarity(a, b) < 1.0


@pytest.mark.parametrize(
    ("text", "negated"),
    [
        ("The staging database is Postgres.", False),
        ("The staging database is not Postgres.", True),
        ("We never deploy on Fridays.", True),
        ("There is no cache.", True),
        ("It isn't enabled", True),
        ("It doesn\u2019t matter", True),
        ("No restart needed.", True),
        ("No manual approval is required", True),
        ("Restart needed.", False),
        ("Nobody owns it", True),
        ("Notation matters", False),
        ("The cannon is loaded", False),
    ],
)
def test_polarity(text: str, negated: bool) -> None:
    assert is_negated(text) is negated
    assert polarity(text) == (-1 if negated else 1)


@pytest.mark.parametrize(
    ("body", "slots"),
    [
        ("The staging database is Postgres.", {"staging database": "postgres"}),
        ("Sandro's favorite editor is Zed.", {"sandro s favorite editor": "zed"}),
        ("Our deploy targets are eu-west-1 and us-east-2", {}),
        ("Our deploy target is eu-west-1", {"deploy target": "eu west 1"}),
        ("Python is fast", {}),
        ("The project is great", {}),
        ("The staging database is not Postgres.", {}),
        ("It is what it is", {}),
        ("The build server is down. The cache is cold.", {}),
        ("Is the staging database Postgres?", {}),
        ("The staging database runs Postgres", {}),
        ("The main staging database is a very large old slow Postgres cluster", {}),
    ],
)
def test_infer_slots_only_for_plain_equatives_with_multi_word_subjects(
    body: str, slots: dict[str, str]
) -> None:
    assert infer_slots(body) == slots
