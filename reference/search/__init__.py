"""Search: the default embedder and the two reference SearchIndex implementations."""

from __future__ import annotations

from memspec.reference.search.embedder import DEFAULT_DIMENSIONS, HashEmbedder
from memspec.reference.search.memory_index import InMemorySearchIndex
from memspec.reference.search.sqlite_index import SQLiteSearchIndex, fts_query

__all__ = [
    "DEFAULT_DIMENSIONS",
    "HashEmbedder",
    "InMemorySearchIndex",
    "SQLiteSearchIndex",
    "fts_query",
]
