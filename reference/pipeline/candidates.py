"""Candidate pairs for the detection sub-passes: blocking, per-pass text features, prefix filter.

Comparing every pair of records is quadratic, so the near-dup and contradiction
sub-passes only ask their operator about *candidate* pairs. The default is
blocking: pairs sharing a stemmed content word or a slot key. An operator whose
verdict needs a minimum set similarity can do much better with an exact prefix
filter (:func:`similar_pairs`), which never drops a pair reaching the threshold.

Block purging bounds the work on skewed data: a feature shared by more than
``max_block`` records is not used to generate candidates, and every record whose
generation skipped one is returned as a :class:`Cut`, for the pass to report as
deferred. Below the cap nothing changes.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, getcontext
from itertools import combinations

from memspec import canonical_json
from memspec.reference.records import MemoryRecord
from memspec.reference.text import content_words, polarity, stem, tokenize, trigrams

__all__ = [
    "ARTICLES",
    "DEFAULT_MAX_BLOCK",
    "CandidateGroups",
    "CandidateSet",
    "Cut",
    "Join",
    "Pair",
    "TextFeatures",
    "block_keys",
    "candidate_pairs",
    "cross_join",
    "merge_cuts",
    "prefix_join",
    "shares_block",
    "similar_pairs",
    "sorted_pairs",
    "wording",
]

Pair = tuple[MemoryRecord, MemoryRecord]
#: Slack below a threshold: the operators compare a rounded ratio (a float, or a
#: Decimal quotient), which may land a hair above the exact one.
_MARGIN = Decimal("1e-9")
#: Below this Decimal precision a quotient's rounding could exceed the margin.
_MIN_PRECISION = 20
#: Default block-purging cap: none. Why: a cap small enough to bound the work on skewed
#: data (300 made 10k -> 100k records grow 4.1x on the benchmark corpus) deferred 70% of
#: the records at 100k, so detection stays exact unless the caller opts in.
DEFAULT_MAX_BLOCK: int | None = None


@dataclass(frozen=True)
class Cut:
    """A record whose candidate generation skipped purged features: ``(label, block size)``."""

    record_id: str
    features: tuple[tuple[str, int], ...]
    max_block: int

    def reason(self, *, shown: int = 3) -> str:
        """A bounded description: the largest ``shown`` purged features and how many more."""
        named = ", ".join(f"{label} ({size} records)" for label, size in self.features[:shown])
        more = len(self.features) - shown
        extra = f" and {more} more" if more > 0 else ""
        return (f"not compared through {named}{extra}: features shared by more than "
                f"{self.max_block} records are not used for candidates (block purging)")


@dataclass(frozen=True)
class CandidateSet:
    """An operator's candidate pairs (sorted by id) and the records whose generation was cut."""

    pairs: tuple[Pair, ...]
    cuts: tuple[Cut, ...] = ()


@dataclass(frozen=True)
class CandidateGroups:
    """Records grouped so that every pair an operator acts on lies inside one group.

    Each group is sorted by id and holds at least two records; a record is in at
    most one group. A pass walks the groups instead of a list of pairs, so a
    group of ``m`` records costs what its merges cost, not its ``m²`` pairs.
    """

    groups: tuple[tuple[MemoryRecord, ...], ...]
    cuts: tuple[Cut, ...] = ()


@dataclass(frozen=True)
class Join:
    """A prefix join's candidate id pairs and, per record key, the purged features it skipped."""

    pairs: frozenset[tuple[str, str]]
    cut: Mapping[str, frozenset[str]]
    sizes: Mapping[str, int]


def merge_cuts(found: Iterable[tuple[str, str, int]], max_block: int) -> tuple[Cut, ...]:
    """Cuts from ``(record id, feature label, block size)`` triples, by id, largest block first."""
    per_record: dict[str, set[tuple[str, int]]] = defaultdict(set)
    for record_id, label, size in found:
        per_record[record_id].add((label, size))
    return tuple(Cut(rid, tuple(sorted(per_record[rid], key=lambda f: (-f[1], f[0]))),
                     max_block) for rid in sorted(per_record))


def block_keys(record: MemoryRecord) -> set[str]:
    """The blocking keys of ``record``: its stemmed content words and its slot keys."""
    keys = {f"w:{word}" for word in content_words(record.body)}
    keys.update(f"s:{key}" for key in record.slots)
    return keys


def candidate_pairs(records: Sequence[MemoryRecord]) -> list[Pair]:
    """Pairs sharing a stemmed content word or a slot key, in id order (blocking)."""
    by_id = {r.id: r for r in records}
    blocks: dict[str, list[str]] = defaultdict(list)
    for record in sorted(by_id.values(), key=lambda r: r.id):
        for key in block_keys(record):
            blocks[key].append(record.id)
    pairs: set[tuple[str, str]] = set()
    for ids in blocks.values():
        for i, first in enumerate(ids):
            pairs.update((first, second) for second in ids[i + 1:])
    return [(by_id[a], by_id[b]) for a, b in sorted(pairs)]


#: The only tokens whose presence or absence a near-duplicate may differ in.
ARTICLES = frozenset({"a", "an", "the"})


def wording(text: str) -> tuple[str, ...]:
    """What a near-duplicate must share with its keeper: the tokens of ``text``, in order,
    without the articles ``a``, ``an``, ``the``, each alphabetic token stemmed.

    Two texts with the same wording differ only in case, punctuation, spacing,
    Unicode composition, articles and inflection (``month``/``months``): no content
    word, number, name, preposition, modal or negator is in one and not the other,
    and the words stand in the same order ("Alice owes Bob" is not "Bob owes Alice").
    Numbers are kept as written (``1990s`` is not ``1990``).
    """
    return tuple(stem(token) if token.isalpha() else token
                 for token in tokenize(text) if token not in ARTICLES)


class TextFeatures:
    """The text features of records, each computed once per body for one pass."""

    def __init__(self) -> None:
        self._trigrams: dict[str, frozenset[str]] = {}
        self._words: dict[str, frozenset[str]] = {}
        self._polarity: dict[str, int] = {}
        self._wording: dict[str, tuple[str, ...]] = {}
        self._slots: dict[str, tuple[MemoryRecord, dict[str, bytes]]] = {}

    def slot_values(self, record: MemoryRecord) -> dict[str, bytes]:
        """``record.slots`` with each value as canonical JSON (held per record object)."""
        held = self._slots.get(record.id)
        if held is None or held[0] is not record:
            held = self._slots[record.id] = (
                record, {key: canonical_json(value) for key, value in record.slots.items()})
        return held[1]

    def wording(self, record: MemoryRecord) -> tuple[str, ...]:
        """:func:`wording` of ``record.body``."""
        found = self._wording.get(record.body)
        if found is None:
            found = self._wording[record.body] = wording(record.body)
        return found

    def trigrams(self, record: MemoryRecord) -> frozenset[str]:
        """``text.trigrams(record.body)``."""
        found = self._trigrams.get(record.body)
        if found is None:
            found = self._trigrams[record.body] = trigrams(record.body)
        return found

    def words(self, record: MemoryRecord) -> frozenset[str]:
        """``text.content_words(record.body)``."""
        found = self._words.get(record.body)
        if found is None:
            found = self._words[record.body] = content_words(record.body)
        return found

    def polarity(self, record: MemoryRecord) -> int:
        """``text.polarity(record.body)``."""
        found = self._polarity.get(record.body)
        if found is None:
            found = self._polarity[record.body] = polarity(record.body)
        return found


def shares_block(a: MemoryRecord, b: MemoryRecord, features: TextFeatures) -> bool:
    """Whether blocking (:func:`candidate_pairs`) would pair ``a`` and ``b``."""
    return (not features.words(a).isdisjoint(features.words(b))
            or not a.slots.keys().isdisjoint(b.slots.keys()))


def sorted_pairs(by_id: Mapping[str, MemoryRecord], pairs: Iterable[tuple[str, str]]) -> list[Pair]:
    """The id pairs as record pairs, each ordered and the list sorted by (a.id, b.id)."""
    ordered = sorted({(a, b) if a < b else (b, a) for a, b in pairs if a != b})
    return [(by_id[a], by_id[b]) for a, b in ordered]


def _usable(threshold: Decimal) -> Decimal | None:
    low = threshold - _MARGIN
    if low <= 0 or getcontext().prec < _MIN_PRECISION:
        return None
    return low


def similar_pairs(sets: Mapping[str, frozenset[str]],
                  threshold: Decimal) -> set[tuple[str, str]] | None:
    """Every pair of keys whose sets may have Jaccard similarity >= ``threshold``.

    :func:`prefix_join` without a cap; None when no filter applies.
    """
    join = prefix_join(sets, threshold)
    return None if join is None else set(join.pairs)


def prefix_join(sets: Mapping[str, frozenset[str]], threshold: Decimal,
                max_block: int | None = None) -> Join | None:
    """Every pair of keys whose sets may have Jaccard similarity >= ``threshold``, and the cuts.

    Exact prefix filtering (the AllPairs join): tokens are ordered rarest first
    over all the sets, sets are visited by increasing size, and a pair is a
    candidate only if the probe prefix of the larger set (the first
    ``|x| - ceil(t|x|) + 1`` tokens) meets the index prefix of the smaller one
    (the first ``|y| - ceil(2t/(1+t)|y|) + 1``) and ``|y| >= t|x|``. A pair
    reaching the threshold always passes: its rarest common token lies in both
    prefixes. Returns None when no filter applies (a threshold at or near 0, where
    pairs sharing nothing qualify); the caller then falls back to blocking.

    With ``max_block``, a token in more than ``max_block`` sets is purged: neither
    indexed nor probed. A pair reaching the threshold is then missed only if its
    rarest common token is purged, and that token lies in both sets' prefixes, so
    both keys are in ``cut`` (which maps each key to the purged tokens of its
    prefixes; ``sizes`` gives each purged token's block size).
    """
    low = _usable(threshold)
    if low is None:
        return None
    mid = 2 * low / (1 + low)
    frequency = Counter(token for tokens in sets.values() for token in tokens)
    purged = ({token: count for token, count in frequency.items() if count > max_block}
              if max_block is not None else {})
    sizes: dict[str, list[int]] = {}
    keys: dict[str, list[str]] = {}
    starts: dict[str, int] = {}
    pairs: set[tuple[str, str]] = set()
    cut: dict[str, frozenset[str]] = {}
    for size, key in sorted((len(tokens), key) for key, tokens in sets.items() if tokens):
        ordered = sorted(sets[key], key=lambda token: (frequency[token], token))
        smallest = math.ceil(low * size)
        probe = ordered[:size - smallest + 1]
        # Why: mid is a rounded quotient; the slack can only lengthen the index prefix.
        index = ordered[:size - math.ceil(mid * size - _MARGIN) + 1]
        if purged:
            skipped = frozenset(t for t in (probe if len(probe) >= len(index) else index)
                                if t in purged)
            if skipped:
                cut[key] = skipped
                probe = [t for t in probe if t not in purged]
                index = [t for t in index if t not in purged]
        found: set[str] = set()
        for token in probe:
            if token not in keys:
                continue
            # Why: sizes only grow, so sets too small for this one are too small for all later.
            start = bisect_left(sizes[token], smallest, starts[token])
            starts[token] = start
            found.update(keys[token][start:])
        for token in index:
            if token not in keys:
                sizes[token], keys[token], starts[token] = [], [], 0
            sizes[token].append(size)
            keys[token].append(key)
        pairs.update((other, key) if other < key else (key, other) for other in found)
    return Join(frozenset(pairs), cut, purged)


def cross_join(left: Mapping[str, frozenset[str]], right: Mapping[str, frozenset[str]],
               threshold: Decimal, max_block: int | None = None) -> Join | None:
    """Every (left key, right key) pair, as an ordered id pair, whose sets may have Jaccard
    similarity >= ``threshold``: :func:`prefix_join` across two collections.

    Pairs within one side are never candidates, so a join of a few negated
    records against many plain ones costs what the few cost. Without a cap the
    candidates share a combination of prefix tokens and each is verified exactly
    (:func:`_signature_join`), so the pairs returned are those reaching the threshold.
    With one, the filter is the plain prefix filter: tokens ordered rarest first over
    both sides, a set's prefix is its first ``|x| - ceil(t|x|) + 1`` tokens, and a pair reaching the
    threshold shares its rarest common token in both prefixes (the overlap is at
    least ``t * max(|x|, |y|)``); a size filter (``t|x| <= |y| <= |x|/t``) drops the
    rest, and so does a float Jaccard check with a little slack (the pairs returned are
    nearly all true ones). The smaller side is indexed. ``max_block`` purges as in
    :func:`prefix_join`.
    None when no filter applies (a threshold at or near 0).
    """
    low = _usable(threshold)
    if low is None:
        return None
    frequency = Counter(token for sets in (left, right) for tokens in sets.values()
                        for token in tokens)
    purged = ({token: count for token, count in frequency.items() if count > max_block}
              if max_block is not None else {})
    cut: dict[str, frozenset[str]] = {}

    def prefix(key: str, tokens: frozenset[str]) -> list[str]:
        ordered = sorted(tokens, key=lambda token: (frequency[token], token))
        head = ordered[:len(ordered) - math.ceil(low * len(ordered)) + 1]
        if purged:
            skipped = frozenset(t for t in head if t in purged)
            if skipped:
                cut[key] = skipped
                head = [t for t in head if t not in purged]
        return head

    indexed, probed = (left, right) if len(left) <= len(right) else (right, left)
    if not purged:
        return Join(frozenset(_signature_join(indexed, probed, frequency, low)), cut, purged)
    postings: dict[str, list[str]] = defaultdict(list)
    for key, tokens in indexed.items():
        if tokens:
            for token in prefix(key, tokens):
                postings[token].append(key)
    pairs: set[tuple[str, str]] = set()
    for key, tokens in probed.items():
        if tokens:
            found = {other for token in prefix(key, tokens) for other in postings.get(token, ())}
            pairs.update(_verified(key, tokens, found, indexed, low))
    return Join(frozenset(pairs), cut, purged)


def _verified(key: str, tokens: frozenset[str], found: Iterable[str],
              indexed: Mapping[str, frozenset[str]], low: Decimal) -> Iterator[tuple[str, str]]:
    """The pairs of ``key`` with the candidates ``found`` that pass the size filter and a
    float Jaccard check, each as an ordered pair."""
    size = len(tokens)
    least, most = low * size, size / low
    # Why: a float Jaccard with this slack never drops a pair whose exact similarity
    # reaches the threshold (sets are small, so the float is off by far less).
    floor = float(low) - 1e-9
    for other in found:
        other_tokens = indexed[other]
        if not least <= len(other_tokens) <= most:
            continue
        shared = len(tokens & other_tokens)
        if shared / (size + len(other_tokens) - shared) >= floor:
            yield (other, key) if other < key else (key, other)


#: The widest token combinations :func:`_signature_join` keys on. Why 3: where the
#: vocabulary is fixed, two shared prefix tokens (one two-word value, a name and a
#: value) still pair a fixed share of the records, most of which then fail the
#: verification (5.1M candidates for 37k pairs at 100k benchmark records); three give
#: 1.6M, at a few more signatures per record.
SIGNATURE_WIDTH = 3


def _signature_join(indexed: Mapping[str, frozenset[str]],
                    probed: Mapping[str, frozenset[str]], frequency: Mapping[str, int],
                    low: Decimal, width: int = SIGNATURE_WIDTH) -> set[tuple[str, str]]:
    """:func:`cross_join` without a cap, through combinations of prefix tokens.

    Where every token is common (a fixed vocabulary, a hot entity), one shared
    prefix token pairs a fixed share of all records, which is quadratic; several
    shared prefix tokens are far rarer. Why it loses nothing: a pair reaching the
    threshold overlaps in ``o >= m(x) = ceil(t * |x|)`` tokens for either set ``x``.
    When ``o >= w`` (the width), its ``w`` rarest common tokens lie within the first
    ``|x| - o + w`` tokens of each set (at least ``o - w`` common tokens follow
    them), so both sets' signatures, the ``w``-combinations of their first
    ``|x| - max(w, m(x)) + w`` tokens, share those ``w`` tokens. When ``o = k < w``,
    both sets have ``m <= k``, and the ``k``-combinations of such sets (all their
    tokens) share the ``k`` common ones. Signatures of different widths are tuples
    of different lengths, so they never collide in one index.

    Each candidate is then verified exactly on bit sets: the indexed side's tokens
    are numbered, most frequent first, a set is the integer with its tokens' bits
    (a probed token no indexed set holds cannot be shared and has none), and a pair
    is kept when its overlap (the popcount of the two integers' AND) reaches the
    least one the threshold allows, ``o >= t (|x| + |y|) / (1 + t)``, which is
    Jaccard ``>= t`` restated. Why bits: where a hot entity's pairs grow with the
    square of its records, their verification dominates the join, and one AND and
    popcount cost less than a set intersection (on the same inputs, the join at
    100k benchmark records took 2.2 to 3.1 s with a positional filter and a set
    intersection, 1.4 to 1.7 s with this).
    Why most frequent first: an integer is as wide as its highest bit, so where the
    vocabulary is large (34,024 words at 100k agent-shaped records) the common
    words keep most integers short; numbered rarest first, verifying the same
    candidates took six times as long.
    """
    rank = {token: index for index, token in
            enumerate(sorted(frequency, key=lambda token: (frequency[token], token)))}
    largest = max((len(tokens) for sets in (indexed, probed) for tokens in sets.values()),
                  default=0)
    # needed[n]: the least overlap two sets of n tokens together need (never more).
    needed = [math.ceil(low * total / (1 + low) - _MARGIN) for total in range(2 * largest + 1)]

    def signatures(line: list[int]) -> list[tuple[int, ...]]:
        need = math.ceil(low * len(line))
        found: list[tuple[int, ...]] = []
        for k in range(1, width + 1):
            if k == width or need <= k:
                found.extend(combinations(line[:len(line) - max(k, need) + k], k))
        return found

    held = Counter(token for tokens in indexed.values() for token in tokens)
    bit = {token: 1 << index for index, (token, _) in enumerate(held.most_common())}

    def bits(tokens: frozenset[str]) -> int:
        value = 0
        for token in tokens:
            value |= bit.get(token, 0)
        return value

    keys: list[str] = []
    masks: list[int] = []
    sizes: list[int] = []
    by_signature: dict[tuple[int, ...], list[int]] = {}
    for key, tokens in indexed.items():
        if tokens:
            line = sorted(map(rank.__getitem__, tokens))
            number = len(keys)
            keys.append(key)
            masks.append(bits(tokens))
            sizes.append(len(line))
            for signature in signatures(line):
                postings = by_signature.get(signature)
                if postings is None:
                    by_signature[signature] = [number]
                else:
                    postings.append(number)
    look_up = by_signature.get
    pairs: set[tuple[str, str]] = set()
    for key, tokens in probed.items():
        if not tokens:
            continue
        line = sorted(map(rank.__getitem__, tokens))
        found: set[int] = set()
        for signature in signatures(line):
            postings = look_up(signature)
            if postings is not None:
                found.update(postings)
        if not found:
            continue
        mask, need = bits(tokens), needed[len(line):]
        for number in found:
            if (mask & masks[number]).bit_count() >= need[sizes[number]]:
                other = keys[number]
                pairs.add((other, key) if other < key else (key, other))
    return pairs
