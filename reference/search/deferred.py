"""DeferredIndex: a derived search index whose failed writes are retried, never fatal.

A search index is a sidecar rebuilt from the store, so a write that the store has
already taken must not fail because the index could not follow (a full disk, a busy
or damaged index file): the store answered, the record exists, and reporting an
error would say it does not (PROTO-7). The wrapper keeps the record whose indexing
failed and retries it before the next search and on :meth:`flush`; whatever is still
pending when the process ends is rebuilt when the memory is next opened.
"""

from __future__ import annotations

import threading

from memspec import StoreError
from memspec.reference.ports import Closable, SearchIndex
from memspec.reference.records import MemoryRecord

__all__ = ["DeferredIndex"]


class DeferredIndex(SearchIndex):
    """Wraps ``inner``: ``index`` never raises StoreError; failed records wait in ``pending``."""

    def __init__(self, inner: SearchIndex) -> None:
        self.inner = inner
        self._pending: dict[str, MemoryRecord] = {}
        self._lock = threading.Lock()
        self.last_error: StoreError | None = None

    @property
    def pending(self) -> tuple[str, ...]:
        """The ids whose latest indexing has not reached the inner index yet."""
        with self._lock:
            return tuple(sorted(self._pending))

    def index(self, record: MemoryRecord) -> None:
        """Index ``record`` in the inner index, or keep it for a retry if that fails."""
        with self._lock:
            self._pending.pop(record.id, None)
        try:
            self.inner.index(record)
        except StoreError as exc:
            with self._lock:
                self._pending[record.id] = record
                self.last_error = exc

    def flush(self) -> tuple[str, ...]:
        """Retry every pending record; return the ids still pending."""
        with self._lock:
            waiting = list(self._pending.values())
        for record in waiting:
            try:
                self.inner.index(record)
            except StoreError as exc:
                self.last_error = exc
                continue
            with self._lock:
                if self._pending.get(record.id) is record:
                    del self._pending[record.id]
        return self.pending

    def candidates(self, query: str, k: int) -> tuple[tuple[str, float], ...]:
        """The inner index's candidates, after retrying what is pending (best effort)."""
        if self._pending:
            self.flush()
        return self.inner.candidates(query, k)

    def close(self) -> None:
        """Close the inner index, when it can be closed."""
        if isinstance(self.inner, Closable):
            self.inner.close()
