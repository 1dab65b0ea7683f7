"""Memory files for the porcelain: export a store as one MemoryFile, check and load one.

``export_file`` writes latest versions by ascending id (FILE-8); ``check_file`` makes
every check a load makes before anything is written; ``load_file`` stores what passed,
skipping ids already held (FILE-9) and unvouched tombstones for free ids (FILE-12).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memspec import FORMAT_VERSION, FileError, SigningKey, sign_file, verify_file
from memspec.reference.ports import RecordStore, SearchIndex
from memspec.reference.records import MemoryRecord

__all__ = ["LoadReport", "check_file", "export_file", "load_file", "load_records"]


@dataclass(frozen=True, kw_only=True)
class LoadReport:
    """Which record ids a load wrote and which it skipped because the store had them."""

    loaded: tuple[str, ...]
    skipped: tuple[str, ...]

    def model_dump(self) -> dict[str, list[str]]:
        return {"loaded": list(self.loaded), "skipped": list(self.skipped)}


def export_file(store: RecordStore, *, now: str, identity: SigningKey | None = None
                ) -> dict[str, Any]:
    """The store as one MemoryFile: latest versions by ascending id, created at ``now``.

    Same store and ``now`` give the same bytes (FILE-8); signed by ``identity``
    (which becomes ``agent``) when given, otherwise ``agent`` is null and the
    signature empty.
    """
    memory_file: dict[str, Any] = {
        "format": FORMAT_VERSION,
        "agent": None,
        "created_at": now,
        "records": [record.model_dump() for record in store],
        "signature": "",
    }
    return sign_file(memory_file, identity) if identity is not None else memory_file


def check_file(memory_file: object, *, verify: bool = True,
               expected_agent: object = None) -> tuple[MemoryRecord, ...]:
    """The records of a MemoryFile, after every check a load makes (nothing is written).

    With ``verify`` its signature is required (FILE-5); every record naming a
    signer is verified either way (FILE-6, SIG-8); with ``expected_agent`` the
    file must be signed by that agent (FILE-11).
    """
    if not isinstance(memory_file, dict):
        raise FileError(f"a memory file is a JSON object, not {type(memory_file).__name__}",
                        requirement="FILE-1")
    verify_file(memory_file, require_signature=verify, expected_agent=expected_agent)
    return tuple(MemoryRecord.model_validate(r) for r in memory_file["records"])


def load_file(store: RecordStore, memory_file: object, *, verify: bool = True,
              indexes: Sequence[SearchIndex] = (), expected_agent: object = None) -> LoadReport:
    """Load a MemoryFile into ``store``; ids already present are skipped, never overwritten.

    The whole file is checked (:func:`check_file`) before anything is written.
    A tombstone for an id not held is skipped as well unless the caller named the
    agent whose file it is (FILE-12). Loaded records are indexed in ``indexes``.
    """
    records = check_file(memory_file, verify=verify, expected_agent=expected_agent)
    return load_records(store, records, indexes, vouched=expected_agent is not None)


def load_records(store: RecordStore, records: Sequence[MemoryRecord],
                 indexes: Sequence[SearchIndex], *, vouched: bool) -> LoadReport:
    """Store the checked ``records`` (indexed in ``indexes``); ``vouched`` when check_file
    confirmed the expected agent signed the file, the only case in which a tombstone may
    claim a free id."""
    loaded: list[str] = []
    skipped: list[str] = []
    for record in records:
        if record.id in store or (record.is_tombstone and not vouched):
            skipped.append(record.id)
            continue
        store.put(record)
        for index in indexes:
            index.index(record)
        loaded.append(record.id)
    return LoadReport(loaded=tuple(loaded), skipped=tuple(skipped))
