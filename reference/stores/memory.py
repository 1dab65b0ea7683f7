"""InMemoryRecordStore: the reference store, a dict of version lists behind a lock."""

from __future__ import annotations

import threading

from memspec import NotFoundError
from memspec.reference._ids import check_record, check_record_id
from memspec.reference.ports import RecordStore
from memspec.reference.records import MemoryRecord

__all__ = ["InMemoryRecordStore"]


class InMemoryRecordStore(RecordStore):
    """Every version of every record, in memory. Records are immutable, so versions are shared."""

    def __init__(self) -> None:
        self._versions: dict[str, list[MemoryRecord]] = {}
        self._lock = threading.Lock()

    def put(self, record: MemoryRecord) -> int:
        """Validate ``record`` (STORE-11) and append it as the next version of its id."""
        check_record(record)
        with self._lock:
            versions = self._versions.setdefault(record.id, [])
            versions.append(record)
            return len(versions)

    def get(self, record_id: str) -> MemoryRecord:
        """The latest version of ``record_id``."""
        return self._load(record_id)[-1]

    def history(self, record_id: str) -> tuple[MemoryRecord, ...]:
        """Every version of ``record_id``, oldest first."""
        return self._load(record_id)

    def ids(self) -> tuple[str, ...]:
        """Every stored id, ascending."""
        with self._lock:
            return tuple(sorted(self._versions))

    def redact(self, record_id: str, *, reason: str, now: str) -> MemoryRecord:
        """Replace every version of ``record_id`` with its tombstone; not part of the port."""
        with self._lock:
            versions = self._versions.get(check_record_id(record_id))
            if not versions:
                raise NotFoundError(f"no record {record_id}", requirement="STORE-4")
            latest = versions[-1]
            if latest.is_tombstone and all(v == latest for v in versions):
                return latest
            tombstone = MemoryRecord.tombstone(latest, reason=reason, now=now)
            versions[:] = [tombstone] * len(versions)
            return tombstone

    def _load(self, record_id: str) -> tuple[MemoryRecord, ...]:
        with self._lock:
            versions = self._versions.get(check_record_id(record_id))
            if not versions:
                raise NotFoundError(f"no record {record_id}", requirement="STORE-4")
            return tuple(versions)

