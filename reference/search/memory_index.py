"""A vector SearchIndex held in memory (cosine over an Embedder), and the ranking helpers
every reference index shares."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from memspec import EncodingError, LimitError
from memspec.reference.ports import Embedder, SearchIndex
from memspec.reference.records import MemoryRecord
from memspec.reference.search.embedder import HashEmbedder

__all__ = ["InMemorySearchIndex", "check_k", "check_query", "rank", "record_text"]


def check_query(query: object) -> str:
    """Return ``query`` if it is a string (any content is fine: it is only ever text)."""
    if not isinstance(query, str):
        raise EncodingError(f"a query must be a string, not {type(query).__name__}")
    return query


def check_k(k: object) -> int:
    """Return ``k`` if it is a non-negative integer (LimitError otherwise)."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise LimitError(f"k must be a non-negative integer, not {k!r}", requirement="SRCH-1")
    return k


def record_text(record: MemoryRecord) -> str:
    """The text a record is found by: its body, then its tags, one per line."""
    return "\n".join((record.body, *record.tags))


def rank(scored: Iterable[tuple[str, float]], k: int) -> tuple[tuple[str, float], ...]:
    """The best ``k`` pairs: score descending, then record id ascending (SRCH-1, SRCH-4)."""
    return tuple(sorted(scored, key=lambda pair: (-pair[1], pair[0]))[:k])


class InMemorySearchIndex(SearchIndex):
    """Cosine similarity between the query's vector and each record's (body + tags) vector.

    Only candidates scoring above zero are returned, best first, ties by record
    id. Indexing a record replaces that id's entry; indexing a redaction
    tombstone drops the entry, so redacted content is gone (RED-7). Thread-safe.
    """

    def __init__(self, embedder: Embedder | None = None) -> None:
        self._embedder: Embedder = embedder if embedder is not None else HashEmbedder()
        self._vectors: dict[str, tuple[float, ...]] = {}
        self._lock = threading.Lock()

    @property
    def embedder(self) -> Embedder:
        """The embedder the vectors come from."""
        return self._embedder

    def index(self, record: MemoryRecord) -> None:
        """Make ``record`` findable, replacing any earlier entry for its id."""
        vector = None if record.is_tombstone else self._embedder.embed(record_text(record))
        with self._lock:
            if vector is None:
                self._vectors.pop(record.id, None)
            else:
                self._vectors[record.id] = vector

    def candidates(self, query: str, k: int) -> tuple[tuple[str, float], ...]:
        """Up to ``k`` ``(record id, cosine)`` pairs with cosine > 0, best first."""
        check_query(query)
        check_k(k)
        probe = self._embedder.embed(query)
        if k == 0 or not any(probe):
            return ()
        with self._lock:
            entries = list(self._vectors.items())
        scored = ((rid, _cosine(probe, vector)) for rid, vector in entries)
        return rank([(rid, score) for rid, score in scored if score > 0.0], k)

    def __len__(self) -> int:
        with self._lock:
            return len(self._vectors)


def _cosine(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    # Both vectors are L2-normalized, so the dot product is the cosine; clamped
    # because rounding can push a self-match a hair above 1.
    return min(1.0, sum(x * y for x, y in zip(a, b, strict=True)))
