"""The three reference RecordStore adapters; all pass one port-contract suite.

Each also offers ``redact(record_id, *, reason, now)`` and ``close()``. Redaction is
deliberately not on the RecordStore port (RED-6).
"""

from __future__ import annotations

from memspec.reference.stores.file import FileRecordStore
from memspec.reference.stores.memory import InMemoryRecordStore
from memspec.reference.stores.sqlite import SQLiteRecordStore

__all__ = ["FileRecordStore", "InMemoryRecordStore", "SQLiteRecordStore"]
