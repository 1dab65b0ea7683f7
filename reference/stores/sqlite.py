"""SQLiteRecordStore: a single-file SQLite store with an append-only history table.

Tables: ``history(id, version, payload)`` holds every version and is authoritative;
``records(id, state, type, payload, version)`` and ``record_tags(id, tag)`` are the
latest-version projection, rewritten in the same transaction as each history row.
History wins (STORE-8): ``get``, iteration and ``list`` all read the latest history
rows, so a lost or stale projection row never hides a record. ``payload`` is
the record's canonical JSON text, so a row's UTF-8 bytes are exactly the record's
canonical bytes, signatures included.

Each put is one ``BEGIN IMMEDIATE`` transaction (STORE-7) in WAL mode; a busy
database is retried with backoff. One connection is shared by the store's threads
behind a lock (``check_same_thread=False``); other processes open their own stores
on the same file. Record ids are checked before any SQL runs, and every value is
bound as a parameter (STORE-10). The database file and its ``-wal``/``-shm``/``-journal``
companions must not be symlinks (SQLite would write through them): a planted link
is a StoreError.
"""

from __future__ import annotations

import contextlib
import copy
import sqlite3
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from memspec import (
    OPTIONAL_FIELDS,
    RECORD_FIELDS,
    MemspecError,
    NotFoundError,
    StoreError,
    is_tombstone,
    parse_json,
    unknown_fields,
)
from memspec import record_id as memspec_record_id
from memspec.reference._ids import check_record, check_record_id, is_record_id
from memspec.reference.ports import RecordStore, list_filters, record_matches
from memspec.reference.records import MemoryRecord, RecordState, RecordType

__all__ = ["SQLiteRecordStore"]

_T = TypeVar("_T")
#: Decoded versions kept per store (see _DecodedCache).
CACHE_SIZE = 1024
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS history (id TEXT NOT NULL, version INTEGER NOT NULL, "
    "payload TEXT NOT NULL, PRIMARY KEY (id, version))",
    "CREATE TABLE IF NOT EXISTS records (id TEXT PRIMARY KEY, state TEXT NOT NULL, "
    "type TEXT NOT NULL, payload TEXT NOT NULL, version INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS record_tags (id TEXT NOT NULL, tag TEXT NOT NULL, "
    "PRIMARY KEY (id, tag))",
    "CREATE INDEX IF NOT EXISTS records_state ON records (state)",
    "CREATE INDEX IF NOT EXISTS records_type ON records (type)",
    "CREATE INDEX IF NOT EXISTS record_tags_tag ON record_tags (tag)",
)
_BUSY = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}
#: The latest history row of every id.
_LATEST = ("SELECT h.id, h.version, h.payload FROM history h JOIN "
           "(SELECT id, MAX(version) AS version FROM history GROUP BY id) m "
           "ON h.id = m.id AND h.version = m.version")
#: SQLite's companion files of a database, which it opens by name.
COMPANIONS = ("", "-wal", "-shm", "-journal")
_UPSERT = (
    "INSERT INTO records (id, state, type, payload, version) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET state = excluded.state, type = excluded.type, "
    "payload = excluded.payload, version = excluded.version"
)


def planted_links(path: Path) -> tuple[str, ...]:
    """The names among ``path`` and its SQLite companions that are not regular files."""
    found = []
    for suffix in COMPANIONS:
        candidate = path.with_name(path.name + suffix)
        try:
            mode = candidate.lstat().st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            found.append(candidate.name)
    return tuple(found)


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _BUSY
    message = str(exc).lower()
    return "locked" in message or "busy" in message


def _decode(payload: object, record_id: str) -> MemoryRecord:
    """Rebuild a stored version without re-running every record rule.

    Only ``put`` (which validates first) and ``redact`` (which writes a tombstone
    the core built) write rows, so a row that parses strictly is trusted, except
    for what an edit at rest would break: the row must hold the id it is stored
    under, and that id must be the content address of its birth fields (ID-2;
    tombstones have no birth left to check). A damaged row surfaces as StoreError.
    """
    try:
        if not isinstance(payload, str):
            raise StoreError(f"payload for {record_id} is not text")
        data = parse_json(payload.encode("utf-8"))
        if not isinstance(data, dict):
            raise StoreError(f"payload for {record_id} is not a JSON object")
        if data.get("id") != record_id:
            raise StoreError(f"payload stored under {record_id} holds {data.get('id')!r}")
        if not is_tombstone(data) and memspec_record_id(data) != record_id:
            raise StoreError(f"id {record_id} is not the content address of its birth fields",
                             requirement="ID-2")
        fields = {name: data[name] for name in RECORD_FIELDS}
        fields.update({name: data[name] for name in OPTIONAL_FIELDS if name in data})
        record = MemoryRecord(**fields, extra=unknown_fields(data), _trusted=True)
    except StoreError:
        raise
    except MemspecError as exc:
        raise StoreError(f"corrupt payload for {record_id}: {exc}") from exc
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise StoreError(f"corrupt payload for {record_id}: {exc!r}") from exc
    return record


def _thaw(value: Any) -> Any:
    """A private copy of a JSON value (dicts and lists copied, scalars shared)."""
    if type(value) is dict:
        return {key: _thaw(item) for key, item in value.items()}
    if type(value) is list:
        return [_thaw(item) for item in value]
    return value


def _handout(record: MemoryRecord) -> MemoryRecord:
    """A copy of a cached record whose mutable members (slots, extra) are its own."""
    clone = copy.copy(record)
    object.__setattr__(clone, "slots", _thaw(record.slots))
    object.__setattr__(clone, "extra", _thaw(record.extra))
    return clone


class _DecodedCache:
    """A bounded LRU of decoded versions keyed by (id, version), checked against the row.

    Versions never change except through redaction, which rewrites a row in place
    (possibly from another process): an entry is only served while the row's
    payload text is still the one it was decoded from. Callers get copies.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[tuple[str, int], tuple[str, MemoryRecord]] = OrderedDict()
        self._lock = threading.Lock()

    def decode(self, record_id: str, version: object, payload: object) -> MemoryRecord:
        """The record a row holds, from the cache when its payload is unchanged."""
        if self._size <= 0 or not isinstance(version, int) or not isinstance(payload, str):
            return _decode(payload, record_id)
        key = (record_id, version)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[0] == payload:
                self._entries.move_to_end(key)
                return _handout(entry[1])
        record = _decode(payload, record_id)
        with self._lock:
            self._entries[key] = (payload, record)
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return _handout(record)

    def forget(self, record_id: str) -> None:
        """Drop every cached version of ``record_id``."""
        with self._lock:
            for key in [k for k in self._entries if k[0] == record_id]:
                del self._entries[key]


class SQLiteRecordStore(RecordStore):
    """Records in one SQLite file (WAL); thread-safe, and safe across processes."""

    def __init__(self, path: Path | str, *, timeout: float = 5.0, retries: int = 60,
                 cache_size: int = CACHE_SIZE) -> None:
        self.path = Path(path)
        self._cache = _DecodedCache(cache_size)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            planted = planted_links(self.path)
        except OSError as exc:
            raise StoreError(f"cannot use {self.path}: {exc.strerror or exc}") from exc
        if planted:
            raise StoreError(f"{', '.join(planted)} beside {self.path} is a symlink or not a "
                             "regular file; refusing to open the store through it")
        self._retries = retries
        self._lock = threading.RLock()
        try:
            self._conn: sqlite3.Connection | None = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        self._query("PRAGMA journal_mode=WAL")
        self._query("PRAGMA synchronous=FULL")
        # Why: redaction must not leave destroyed content in freed pages.
        self._query("PRAGMA secure_delete=ON")
        self._transaction(lambda conn: [conn.execute(sql) for sql in _SCHEMA])

    # -- port ------------------------------------------------------------------------

    def put(self, record: MemoryRecord) -> int:
        """Validate ``record`` and append it as the next version, in one transaction."""
        rid = check_record(record).id
        payload = record.canonical_bytes().decode("utf-8")
        tags = [(rid, tag) for tag in record.tags]

        def work(conn: sqlite3.Connection) -> int:
            row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM history WHERE id = ?",
                               (rid,)).fetchone()
            number = int(row[0]) + 1
            conn.execute("INSERT INTO history (id, version, payload) VALUES (?, ?, ?)",
                         (rid, number, payload))
            conn.execute(_UPSERT, (rid, record.state.value, record.type.value, payload, number))
            conn.execute("DELETE FROM record_tags WHERE id = ?", (rid,))
            conn.executemany("INSERT INTO record_tags (id, tag) VALUES (?, ?)", tags)
            return number

        return self._transaction(work)

    def get(self, record_id: str) -> MemoryRecord:
        """The latest version of ``record_id`` (from the history table)."""
        return self.history(record_id)[-1]

    def history(self, record_id: str) -> tuple[MemoryRecord, ...]:
        """Every version of ``record_id``, oldest first."""
        rid = check_record_id(record_id)
        rows = self._query("SELECT version, payload FROM history WHERE id = ? ORDER BY version",
                           (rid,))
        if not rows:
            raise NotFoundError(f"no record {rid}", requirement="STORE-4")
        return tuple(self._cache.decode(rid, version, payload) for version, payload in rows)

    def ids(self) -> tuple[str, ...]:
        """Every stored id, ascending."""
        rows = self._query("SELECT DISTINCT id FROM history ORDER BY id")
        return tuple(str(row[0]) for row in rows)

    def list(
        self,
        *,
        state: RecordState | str | None = None,
        type: RecordType | str | None = None,
        tag: str | None = None,
    ) -> tuple[MemoryRecord, ...]:
        """Latest versions matching every given filter, ordered by id."""
        filters = list_filters(state, type, tag)
        state_value, type_value, _ = filters
        clauses = []
        params: list[object] = []
        # Why from history: the projection may have lost or mis-stated a row, and history
        # wins (STORE-8); the latest payload is narrowed in SQL, then checked in full.
        for clause, value in (("json_extract(l.payload, '$.state') = ?", state_value),
                              ("json_extract(l.payload, '$.type') = ?", type_value)):
            if value is not None:
                clauses.append(clause)
                params.append(value)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._query(f"SELECT l.id, l.version, l.payload FROM ({_LATEST}) l{where} "
                           "ORDER BY l.id", tuple(params))
        # The payload has the last word (STORE-8); tags come from it, never from record_tags.
        records = (self._cache.decode(str(rid), version, payload)
                   for rid, version, payload in rows)
        return tuple(record for record in records if record_matches(record, *filters))

    def __iter__(self) -> Iterator[MemoryRecord]:
        """The latest version of every record, from history (STORE-8), ordered by id."""
        rows = self._query(f"{_LATEST} ORDER BY h.id")
        return iter(tuple(self._cache.decode(str(rid), version, payload)
                          for rid, version, payload in rows))

    def __contains__(self, record_id: object) -> bool:
        if not is_record_id(record_id):
            return False
        return bool(self._query("SELECT 1 FROM history WHERE id = ? LIMIT 1", (record_id,)))

    def close(self) -> None:
        """Close the connection; later calls raise StoreError."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- redaction (not part of the port) --------------------------------------------

    def redact(self, record_id: str, *, reason: str, now: str) -> MemoryRecord:
        """Replace every version of ``record_id`` with its tombstone in one transaction."""
        rid = check_record_id(record_id)

        def work(conn: sqlite3.Connection) -> MemoryRecord:
            rows = conn.execute("SELECT payload FROM history WHERE id = ? ORDER BY version",
                                (rid,)).fetchall()
            if not rows:
                raise NotFoundError(f"no record {rid}", requirement="STORE-4")
            versions = [_decode(row[0], rid) for row in rows]
            latest = versions[-1]
            if latest.is_tombstone and all(v == latest for v in versions):
                return latest
            tombstone = MemoryRecord.tombstone(latest, reason=reason, now=now)
            payload = tombstone.canonical_bytes().decode("utf-8")
            conn.execute("UPDATE history SET payload = ? WHERE id = ?", (payload, rid))
            conn.execute("UPDATE records SET state = ?, type = ?, payload = ? WHERE id = ?",
                         (tombstone.state.value, tombstone.type.value, payload, rid))
            conn.execute("DELETE FROM record_tags WHERE id = ?", (rid,))
            return tombstone

        tombstone = self._transaction(work)
        # Why: the cache checks payloads anyway; dropping the originals also frees them.
        self._cache.forget(rid)
        self._checkpoint()
        return tombstone

    # -- internals -------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"store {self.path} is closed")
        return self._conn

    def _retry(self, attempt: Callable[[], _T]) -> _T:
        delay = 0.002
        for _ in range(self._retries):
            try:
                return attempt()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise StoreError(f"sqlite error: {exc}") from exc
            except sqlite3.Error as exc:
                raise StoreError(f"sqlite error: {exc}") from exc
            time.sleep(delay)
            delay = min(delay * 2, 0.25)
        raise StoreError(f"database {self.path} stayed busy", requirement="STORE-12")

    def _transaction(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        def attempt() -> _T:
            with self._lock:
                conn = self._connection()
                conn.execute("BEGIN IMMEDIATE")
                try:
                    result = work(conn)
                    conn.execute("COMMIT")
                except BaseException:
                    # Why suppress: after SQLITE_FULL or an I/O error SQLite may already have
                    # rolled back, and "cannot rollback" must not replace the real error.
                    if conn.in_transaction:
                        with contextlib.suppress(sqlite3.Error):
                            conn.execute("ROLLBACK")
                    raise
                return result

        return self._retry(attempt)

    def _query(self, sql: str,
               params: tuple[object, ...] = ()) -> tuple[tuple[object, ...], ...]:
        def attempt() -> tuple[tuple[object, ...], ...]:
            with self._lock:
                return tuple(self._connection().execute(sql, params).fetchall())

        return self._retry(attempt)

    def _checkpoint(self) -> None:
        # Why: pull redacted pages out of the WAL file; best effort (readers may hold it).
        try:
            self._query("PRAGMA wal_checkpoint(TRUNCATE)")
        except StoreError:
            pass
