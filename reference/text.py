"""Deterministic, model-free text utilities shared by search, the write stage and consolidation.

Everything here is a pure function of its input text. The definitions are
pinned precisely (and tested) because the hash embedder, the near-dup and
contradiction heuristics and the extractor all build on them.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "NEGATORS",
    "STOPWORDS",
    "content_words",
    "infer_slots",
    "is_negated",
    "normalize",
    "polarity",
    "stem",
    "tokenize",
    "trigram_similarity",
    "trigrams",
]

# A token is a maximal run of characters c with c.isalnum() (Unicode letters and
# numbers); the underscore counts as a separator.
_TOKEN = re.compile(r"[^\W_]+")

#: Words that carry no topic on their own; dropped from content words.
STOPWORDS: frozenset[str] = frozenset(
    """
    a an the and or but if then else so of in on at to from by for with without into onto
    over under about as is are was were be been being am do does did done has have had
    having it its this that these those there here i me my mine we us our ours you your
    yours he him his she her hers they them their theirs what which who whom whose when
    where why how all any both each few more most other some such only own same than too
    very can could should would will shall may might must just also still yet again
    not no never none nor neither nothing nobody cannot t s d ll m re ve
    isn aren wasn weren don doesn didn hasn haven hadn won wouldn shouldn couldn mustn
    needn mightn shan ain
    """.split()
)

#: Tokens that negate the clause they appear in.
NEGATORS: frozenset[str] = frozenset(
    ["not", "no", "never", "none", "nothing", "nobody", "neither", "nor", "cannot"]
)

# "isn't", "don't", "can't", "won't": the n't clitic, with a straight or curly apostrophe.
_CLITIC = re.compile(r"[^\W_]n['\u2019]t\b", re.IGNORECASE)
# "no restart needed", "no approval is required": a polarity frame naming what is not needed.
_NEEDED_FRAME = re.compile(
    r"\bno\s+(?:[^\W_]+\s+){1,4}?(?:is\s+|are\s+)?(?:needed|required|necessary)\b",
    re.IGNORECASE,
)


def normalize(text: str) -> str:
    """NFC-normalize and lowercase ``text`` (the form every tokenizer step reads)."""
    return unicodedata.normalize("NFC", text).lower()


def tokenize(text: str) -> list[str]:
    """Lowercased word tokens of ``text``, in order, repeats kept.

    ``normalize(text)`` is split into maximal runs of characters for which
    ``str.isalnum()`` holds (Unicode letters and numbers); every other
    character, the underscore and apostrophes included, separates tokens.
    """
    return _TOKEN.findall(normalize(text))


def stem(word: str) -> str:
    """Light, deterministic suffix stripping so that plural and tense variants match.

    Applied to the lowercased word in three steps; a suffix is only removed
    when at least three characters remain (two for ``ies`` -> ``y``):

    1. plural: ``sses`` -> ``ss``; ``ies`` -> ``y``; ``es`` after ``s``, ``x``,
       ``z``, ``ch`` or ``sh`` removed; else a final ``s`` removed unless the
       word ends in ``ss``, ``us`` or ``is``;
    2. the first of ``ing``, ``edly``, ``ed``, ``ly`` that ends the word is
       removed; after ``ing``/``ed`` a doubled final consonant other than
       ``l``, ``s``, ``z`` is undoubled (``stopped`` -> ``stop``);
    3. a final ``e`` is removed (``require``, ``required``, ``requires`` all
       become ``requir``).
    """
    w = word.lower()
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ies") and len(w) >= 5:
        w = w[:-3] + "y"
    elif w.endswith("es") and len(w) >= 5 and w[:-2].endswith(_SIBILANTS):
        w = w[:-2]
    elif w.endswith("s") and len(w) >= 4 and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "edly", "ed", "ly"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            if suffix in ("ing", "ed") and w[-1] == w[-2] and w[-1] not in _UNDOUBLED:
                w = w[:-1]
            break
    if w.endswith("e") and len(w) >= 4:
        w = w[:-1]
    return w


_SIBILANTS = ("s", "x", "z", "ch", "sh")
# Consonants that stay doubled when a suffix is removed (fall, miss, buzz) and vowels.
_UNDOUBLED = frozenset("lszaeiouy")


def content_words(text: str) -> frozenset[str]:
    """Stemmed tokens of ``text`` with stopwords and negators removed.

    Negators are removed so that "X is Y" and "X is not Y" share one content core.
    """
    return frozenset(stem(t) for t in tokenize(text) if t not in STOPWORDS and t not in NEGATORS)


def trigrams(text: str) -> frozenset[str]:
    """Character trigrams of the tokens of ``text`` joined by single spaces, padded by one
    space on each side (so a one-letter text still has a trigram)."""
    tokens = tokenize(text)
    if not tokens:
        return frozenset()
    joined = " " + " ".join(tokens) + " "
    return frozenset(joined[i : i + 3] for i in range(len(joined) - 2))


def trigram_similarity(a: str, b: str) -> float:
    """Jaccard similarity of the character trigrams of ``a`` and ``b``, in [0, 1].

    Two texts with no tokens at all have similarity 0.0 (nothing to compare).
    """
    return jaccard(trigrams(a), trigrams(b))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """``|a & b| / |a | b|`` as a float; 0.0 when both sets are empty."""
    shared = len(a & b)
    union = len(a) + len(b) - shared
    if not union:
        return 0.0
    return shared / union


def is_negated(text: str) -> bool:
    """True when ``text`` carries a negation marker.

    Markers: a negator token (``not``, ``no``, ``never``, ``none``, ``nothing``,
    ``nobody``, ``neither``, ``nor``, ``cannot``), an ``n't`` clitic, or a
    "no X needed/required" frame.
    """
    if _CLITIC.search(text) or _NEEDED_FRAME.search(text):
        return True
    return any(t in NEGATORS for t in tokenize(text))


def polarity(text: str) -> int:
    """-1 when ``text`` is negated (see :func:`is_negated`), else +1."""
    return -1 if is_negated(text) else 1


_SENTENCE_BREAK = re.compile(r"[.!?;:]\s|\n|\?")
_COPULAS = frozenset(["is", "are", "was", "were"])
_DETERMINERS = frozenset(["the", "a", "an", "our", "my", "your", "their", "its", "this", "that"])
_PRONOUNS = frozenset(
    ["it", "this", "that", "there", "here", "he", "she", "they", "we", "i", "you", "what", "who"]
)
_MAX_SUBJECT_WORDS = 6
_MAX_VALUE_WORDS = 6


def infer_slots(body: str) -> dict[str, str]:
    """A coarse ``{subject: value}`` slot for an equative sentence "X is Y", else ``{}``.

    Only a single, un-negated sentence with exactly one copula (is, are, was,
    were) qualifies. The subject is its tokens before the copula without leading
    determiners, and must be two to six words, not starting with a pronoun
    (single-word subjects such as "Python is fast" are usually one claim among
    many, so they never make a slot). The value is the tokens after the copula
    (one to six words). Both are the space-joined tokens, e.g. "The staging
    database is Postgres." -> ``{"staging database": "postgres"}``.
    """
    sentence = body.strip().rstrip(".!")
    if not sentence or _SENTENCE_BREAK.search(sentence) or is_negated(sentence):
        return {}
    tokens = tokenize(sentence)
    copulas = [i for i, t in enumerate(tokens) if t in _COPULAS]
    if len(copulas) != 1:
        return {}
    at = copulas[0]
    subject = tokens[:at]
    while subject and subject[0] in _DETERMINERS:
        subject = subject[1:]
    value = tokens[at + 1 :]
    if not 2 <= len(subject) <= _MAX_SUBJECT_WORDS or subject[0] in _PRONOUNS:
        return {}
    if not 1 <= len(value) <= _MAX_VALUE_WORDS:
        return {}
    return {" ".join(subject): " ".join(value)}
