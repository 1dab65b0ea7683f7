"""Opening a memory directory safely: the pending-write journal and the repair report.

The porcelain's directory holds one authority, the record store (``records/``), and
derived sidecars: the keyword index (``index.sqlite``) and the salience scores. A
writer killed mid-``remember`` can leave records stored but not indexed, births
stored but not yet signed in a signing memory, and temp files. On every open the
porcelain repairs what is derived and finishes what the journal says was begun,
and reports it in a :class:`RepairReport`:

- the journal: before ``remember`` writes, it records the ids it may create, with
  the agent that will sign them, as one file ``pending/<pid>-<token>.json``; the file
  is removed once every record is stored, signed and indexed. An entry whose writer
  is gone is finished on open: each of its records that exists and was never signed
  is signed by the memory's identity, when it is the entry's agent (a record loaded
  from somebody else's file is never signed: only ids this memory began are);
- the index: every record is compared with its index row (body and tags) and
  re-indexed where they differ; rows for ids the store does not hold are dropped; an
  index that cannot be opened or fails SQLite's check is rebuilt from the store;
- planted links: a symlink (or any non-regular file) named like one of the index's
  SQLite files is removed (the link, never its target) before SQLite opens it;
- temp files of writers that are gone are removed from the store.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memspec import DEFAULT_LIMITS, MemspecError, SigningKey, StoreError, canonical_json, parse_json
from memspec._safe_paths import (
    closing_fd,
    dir_fd,
    pid_alive,
    read_regular_at,
    remove_dead_temps,
    write_atomic_at,
)
from memspec.reference.ports import RecordStore, SearchIndex
from memspec.reference.search.sqlite_index import SQLiteSearchIndex

__all__ = ["JOURNAL_DIR", "Journal", "RepairReport", "finish_pending", "read_sidecar",
           "reconcile_index"]

JOURNAL_DIR = "pending"
_ENTRY = re.compile(r"([0-9]+)-[0-9a-f]{16}\.json")
_JOURNAL_LIMIT = 16 * 1024 * 1024
# Entry names begun by this process and not yet finished (any Memory in it).
_IN_FLIGHT: set[str] = set()
_IN_FLIGHT_LOCK = threading.Lock()


@dataclass(frozen=True, kw_only=True)
class RepairReport:
    """What opening (or :meth:`Memory.repair`) found and repaired; empty when all was well."""

    reindexed: tuple[str, ...] = ()
    unindexed: tuple[str, ...] = ()
    signed: tuple[str, ...] = ()
    unsigned_pending: tuple[str, ...] = ()
    journal_entries_finished: int = 0
    temp_files_removed: tuple[str, ...] = ()
    links_removed: tuple[str, ...] = ()
    index_rebuilt: str | None = None

    @property
    def repaired(self) -> bool:
        """Whether anything was repaired."""
        return bool(self.reindexed or self.unindexed or self.signed
                    or self.journal_entries_finished or self.temp_files_removed
                    or self.links_removed or self.index_rebuilt)

    def model_dump(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        return {
            "reindexed": list(self.reindexed),
            "unindexed": list(self.unindexed),
            "signed": list(self.signed),
            "unsigned_pending": list(self.unsigned_pending),
            "journal_entries_finished": self.journal_entries_finished,
            "temp_files_removed": list(self.temp_files_removed),
            "links_removed": list(self.links_removed),
            "index_rebuilt": self.index_rebuilt,
        }



class Journal:
    """The ``pending/`` directory of a memory: one file per write in progress."""

    def __init__(self, memory_dir: int) -> None:
        self._parent = memory_dir

    def _dir(self) -> int:
        return dir_fd(self._parent, JOURNAL_DIR, create=True, mode=0o700)

    def begin(self, ids: Sequence[str], agent: str | None) -> str:
        """Record that ``ids`` may be written (and signed by ``agent``); returns the entry."""
        name = f"{os.getpid()}-{secrets.token_hex(8)}.json"
        data = canonical_json({"agent": agent, "ids": sorted(set(ids))})
        with _IN_FLIGHT_LOCK:
            _IN_FLIGHT.add(name)
        try:
            with closing_fd(self._dir()) as directory:
                write_atomic_at(directory, name, data, mode=0o600)
        except BaseException:
            with _IN_FLIGHT_LOCK:
                _IN_FLIGHT.discard(name)
            raise
        return name

    def release(self, name: str) -> None:
        """Leave an unfinished entry on disk for a later repair (its write failed)."""
        with _IN_FLIGHT_LOCK:
            _IN_FLIGHT.discard(name)

    def finish(self, name: str) -> None:
        """Remove a finished entry."""
        try:
            with closing_fd(self._dir()) as directory, contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=directory)
        except OSError as exc:
            raise StoreError(f"cannot clear journal entry {name}: {exc.strerror}") from exc
        finally:
            with _IN_FLIGHT_LOCK:
                _IN_FLIGHT.discard(name)

    def abandoned(self) -> list[tuple[str, str | None, tuple[str, ...]]]:
        """``(entry, agent, ids)`` of every entry whose writer is gone."""
        try:
            directory = dir_fd(self._parent, JOURNAL_DIR)
        except FileNotFoundError:
            return []
        found: list[tuple[str, str | None, tuple[str, ...]]] = []
        with closing_fd(directory):
            for name in sorted(os.listdir(directory)):
                match = _ENTRY.fullmatch(name)
                if match is None:
                    continue
                pid = int(match.group(1))
                with _IN_FLIGHT_LOCK:
                    in_flight = name in _IN_FLIGHT
                if in_flight or (pid != os.getpid() and pid_alive(pid)):
                    continue
                try:
                    value = parse_json(read_regular_at(directory, name, limit=_JOURNAL_LIMIT))
                except (OSError, MemspecError):
                    value = None
                if not isinstance(value, dict) or not isinstance(value.get("ids"), list):
                    # A torn entry (killed mid-write) names nothing that was written yet.
                    found.append((name, None, ()))
                    continue
                agent = value.get("agent")
                ids = tuple(i for i in value["ids"] if isinstance(i, str))
                found.append((name, agent if isinstance(agent, str) else None, ids))
        return found

    def remove_temps(self) -> tuple[str, ...]:
        """Remove the temp files of entries whose writer died mid-write."""
        try:
            directory = dir_fd(self._parent, JOURNAL_DIR)
        except FileNotFoundError:
            return ()
        with closing_fd(directory):
            return tuple(f"{JOURNAL_DIR}/{name}" for name in remove_dead_temps(directory))

    def remove(self, name: str) -> None:
        """Remove an abandoned entry."""
        with closing_fd(dir_fd(self._parent, JOURNAL_DIR)) as directory, \
                contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=directory)


def finish_pending(journal: Journal, store: RecordStore, identity: SigningKey | None
                   ) -> tuple[tuple[str, ...], tuple[str, ...], int]:
    """Sign what abandoned entries began; returns ``(signed, unsigned_pending, finished)``."""
    signed: list[str] = []
    waiting: list[str] = []
    finished = 0
    for name, agent, ids in journal.abandoned():
        if agent is not None and (identity is None or identity.address != agent):
            waiting.extend(ids)  # only the agent the entry names may sign its records
            continue
        for record_id in ids:
            if identity is None or agent is None or record_id not in store:
                continue
            history = store.history(record_id)
            latest = history[-1]
            if latest.is_tombstone or any(version.signature for version in history):
                continue
            store.put(latest.sign(identity))
            signed.append(record_id)
        journal.remove(name)
        finished += 1
    return tuple(signed), tuple(sorted(set(waiting))), finished


def reconcile_index(store: RecordStore, index: SQLiteSearchIndex,
                    also: Sequence[SearchIndex] = ()) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Make ``index`` agree with ``store``; returns ``(reindexed, unindexed)`` ids."""
    entries = index.entries()
    reindexed: list[str] = []
    for record in store:
        expected = None if record.is_tombstone else (record.body, " ".join(record.tags))
        actual = entries.pop(record.id, None)
        if actual == expected:
            continue
        index.index(record)
        for other in also:
            other.index(record)
        reindexed.append(record.id)
    for record_id in sorted(entries):
        index.drop(record_id)
    return tuple(reindexed), tuple(sorted(entries))


def read_sidecar(memory_dir: int, name: str) -> object:
    """A sidecar's JSON value, or None when it is missing, not a regular file or corrupt."""
    try:
        return parse_json(read_regular_at(memory_dir, name,
                                          limit=DEFAULT_LIMITS.max_text_bytes))
    except (OSError, MemspecError):
        return None
