"""A keyword SearchIndex on SQLite FTS5 (BM25 over body and tags), injection-proof."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from pathlib import Path

from memspec import StoreError
from memspec.reference.ports import SearchIndex
from memspec.reference.records import MemoryRecord
from memspec.reference.search.memory_index import check_k, check_query, rank
from memspec.reference.stores.sqlite import planted_links
from memspec.reference.text import STOPWORDS, tokenize

__all__ = ["MAX_QUERY_TOKENS", "SQLiteSearchIndex", "fts_query"]

#: Distinct query tokens used at most; the rest of a very long query is ignored.
MAX_QUERY_TOKENS = 64
_BUSY_RETRIES = 50
_MAX_LIMIT = 2**62  # SQLite integers are 64-bit; a larger k means "all matches" anyway
_BUSY_SLEEP_SECONDS = 0.01
_SCHEMA = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS record_fts USING fts5("
    "record_id UNINDEXED, body, tags, tokenize = 'unicode61')"
)
# Why: record_id is an UNINDEXED FTS5 column, so finding a record's row by it scans
# the table; this side table (written in the same transaction) finds it by rowid.
_ROWIDS = (
    "CREATE TABLE IF NOT EXISTS record_fts_rowid "
    "(record_id TEXT PRIMARY KEY, fts_rowid INTEGER NOT NULL)"
)


def fts_query(text: str) -> str:
    """The FTS5 query for raw ``text``: its distinct tokens, each quoted, OR-joined.

    Stopwords (:data:`memspec.reference.text.STOPWORDS`) are left out, since they
    match most rows and only make BM25 rank them all; a query of nothing but
    stopwords keeps them all. Tokens come from
    :func:`memspec.reference.text.tokenize`, so they hold only letters and
    digits: no quote, operator, column filter, prefix star, ``NEAR`` group or
    ``^`` can reach FTS5 syntax (SRCH-3), and words such as ``OR`` or ``NOT``
    are searched as words. An empty string means "nothing to search".
    """
    tokens = tokenize(text)
    kept = [token for token in tokens if token not in STOPWORDS] or tokens
    seen: dict[str, None] = {}
    for token in kept:
        seen.setdefault(token, None)
        if len(seen) == MAX_QUERY_TOKENS:
            break
    return " OR ".join(f'"{token}"' for token in seen)


class SQLiteSearchIndex(SearchIndex):
    """FTS5 keyword index in one SQLite file (or ``":memory:"``).

    ``candidates`` returns matches only, scored ``-bm25`` divided by the best
    match's, so the best match scores 1.0 and every score lies in (0, 1]; ties
    go by record id. Indexing a record replaces its row; a redaction tombstone
    removes it and purges its text from the file (RED-7). One lock-guarded
    connection, WAL for files, one ``BEGIN IMMEDIATE`` transaction per write
    with retry on contention. The file and its SQLite companions must not be
    symlinks (SQLite would write memory text through them): a planted link is a
    StoreError, and any fault (full disk, damage) is a StoreError, never a raw
    sqlite3 error.
    """

    def __init__(self, path: str | Path = ":memory:") -> None:
        self._path = str(path)
        self._lock = threading.Lock()
        if self._path != ":memory:":
            try:
                planted = planted_links(Path(self._path))
            except OSError as exc:
                raise StoreError(f"cannot open search index {self._path}: {exc}") from exc
            if planted:
                raise StoreError(f"search index {self._path}: {', '.join(planted)} is a "
                                 "symlink or not a regular file; refusing to follow it")
        try:
            self._db = sqlite3.connect(self._path, check_same_thread=False,
                                       isolation_level=None, timeout=5.0)
            # Why: freed pages are zeroed, so deleted (redacted) text leaves no residue.
            self._db.execute("PRAGMA secure_delete=ON")
            if self._path != ":memory:":
                self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(_SCHEMA)
            self._backfill_rowids()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open search index {self._path}: {exc}") from exc
        self._closed = False

    def index(self, record: MemoryRecord) -> None:
        """Make ``record`` findable, replacing any earlier row for its id."""
        row = None if record.is_tombstone else (record.id, record.body, " ".join(record.tags))
        with self._lock:
            self._write(record.id, row)
            if row is None:
                self._purge()

    def entries(self) -> dict[str, tuple[str, str]]:
        """Every indexed id with the ``(body, tags)`` text it is found by (tags space-joined)."""
        with self._lock:
            try:
                rows = self._open().execute(
                    "SELECT record_id, body, tags FROM record_fts").fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"search index read failed: {exc}") from exc
        return {str(rid): (str(body), str(tags)) for rid, body, tags in rows}

    def drop(self, record_id: str) -> None:
        """Forget ``record_id`` (its row and its text), as a tombstone would."""
        with self._lock:
            self._write(record_id, None)
            self._purge()

    def _backfill_rowids(self) -> None:
        """Create the rowid side table; fill it from the FTS rows when they disagree.

        Files written before the side table existed (or by a bulk loader that
        skipped it) get it rebuilt here, in one transaction, once.
        """
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(_ROWIDS)
            rows = db.execute("SELECT count(*) FROM record_fts").fetchone()[0]
            mapped = db.execute("SELECT count(*) FROM record_fts_rowid").fetchone()[0]
            if rows != mapped:
                db.execute("DELETE FROM record_fts_rowid")
                db.execute("INSERT OR REPLACE INTO record_fts_rowid (record_id, fts_rowid) "
                           "SELECT record_id, rowid FROM record_fts ORDER BY rowid")
            db.execute("COMMIT")
        except BaseException:
            _rollback(db)
            raise

    def _purge(self) -> None:
        # Why: an FTS5 delete only marks index entries as deleted; merging every
        # segment and checkpointing the WAL removes redacted tokens from disk (RED-7).
        try:
            self._db.execute("INSERT INTO record_fts(record_fts) VALUES('optimize')")
            if self._path != ":memory:":
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as exc:
            raise StoreError(f"search index purge failed: {exc}") from exc

    def _write(self, record_id: str, row: tuple[str, str, str] | None) -> None:
        for attempt in range(_BUSY_RETRIES):
            try:
                self._open().execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise StoreError(f"search index write failed: {exc}") from exc
                time.sleep(_BUSY_SLEEP_SECONDS * (attempt + 1))
                continue
            try:
                self._replace(record_id, row)
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                _rollback(self._db)
                raise StoreError(f"search index write failed: {exc}") from exc
            return
        raise StoreError("search index is busy: gave up after retries")

    def _replace(self, record_id: str, row: tuple[str, str, str] | None) -> None:
        db = self._db
        found = db.execute("SELECT fts_rowid FROM record_fts_rowid WHERE record_id = ?",
                           (record_id,)).fetchone()
        if found is not None:
            db.execute("DELETE FROM record_fts WHERE rowid = ?", (found[0],))
        if row is None:
            db.execute("DELETE FROM record_fts_rowid WHERE record_id = ?", (record_id,))
            return
        cursor = db.execute("INSERT INTO record_fts (record_id, body, tags) VALUES (?, ?, ?)",
                            row)
        db.execute("INSERT OR REPLACE INTO record_fts_rowid (record_id, fts_rowid) "
                   "VALUES (?, ?)", (record_id, cursor.lastrowid))

    def check(self) -> None:
        """Raise StoreError unless the file passes SQLite's quick check and its FTS table reads."""
        with self._lock:
            try:
                db = self._open()
                result = db.execute("PRAGMA quick_check").fetchone()
                if result is None or result[0] != "ok":
                    raise StoreError(f"search index {self._path} is damaged: {result}")
                # Why not FTS5's own integrity-check: it is issued as an INSERT, which takes
                # the write lock and would make opening wait behind every writer.
                db.execute("SELECT count(*) FROM record_fts").fetchone()
            except sqlite3.Error as exc:
                raise StoreError(f"search index {self._path} is damaged: {exc}") from exc

    def candidates(self, query: str, k: int) -> tuple[tuple[str, float], ...]:
        """Up to ``k`` ``(record id, score)`` matches, best first (SRCH-1..5)."""
        check_query(query)
        check_k(k)
        expression = fts_query(query)
        if k == 0 or not expression:
            return ()
        with self._lock:
            try:
                rows = _best(self._open(), expression, min(k, _MAX_LIMIT))
            except sqlite3.Error as exc:
                raise StoreError(f"search index query failed: {exc}") from exc
        if not rows:
            return ()
        best = max(float(score) for _, score in rows)
        if best <= 0.0:
            return rank([(str(rid), 1.0) for rid, _ in rows], k)
        return rank([(str(rid), min(1.0, max(0.0, float(s) / best))) for rid, s in rows], k)

    def _open(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreError("search index is closed")
        return self._db

    def close(self) -> None:
        """Close the connection (idempotent; a close that fails is a StoreError)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                try:
                    self._db.close()
                except sqlite3.Error as exc:
                    raise StoreError(f"closing search index {self._path}: {exc}") from exc

    def __len__(self) -> int:
        with self._lock:
            row = self._open().execute("SELECT count(*) FROM record_fts").fetchone()
        return int(row[0])


_BY_SCORE = ("SELECT record_id, -bm25(record_fts) FROM record_fts WHERE record_fts MATCH ? "
             "ORDER BY bm25(record_fts) LIMIT ?")
_AT_SCORE = ("SELECT record_id, -bm25(record_fts) FROM record_fts WHERE record_fts MATCH ? "
             "AND -bm25(record_fts) = ? ORDER BY record_id LIMIT ?")
#: Rows fetched past the k-th, so that the k-th score's ties usually end inside the window.
_SLACK = 32


def _best(db: sqlite3.Connection, expression: str, k: int) -> list[tuple[str, float]]:
    """The ``k`` best matches of ``expression`` by score descending, then record id
    ascending: ``ORDER BY score DESC, record_id ASC LIMIT k`` over every match.

    That query sorts every match with its record id, reading each one's id from the
    content table, so it grows with the matches and costs twice the BM25 pass itself.
    Here the matches are ordered by BM25 alone and only a window of ``k`` plus slack is
    read. Exact: the window holds every row scoring above its last row's score; when the
    k-th score is below that, every row tied with the k-th is in the window, and sorting
    the window by (score, id) gives the same k. When the ties may run past it, the rows
    above the k-th score are kept and the rest come from the rows at exactly that score,
    in id order (the same BM25 values: the same function over the same index).
    """
    limit = min(k + max(k, _SLACK), _MAX_LIMIT)
    rows: list[tuple[str, float]] = db.execute(_BY_SCORE, (expression, limit)).fetchall()
    if len(rows) == limit and rows[k - 1][1] == rows[-1][1]:
        edge = rows[k - 1][1]
        above = [row for row in rows if row[1] > edge]
        rows = above + db.execute(_AT_SCORE, (expression, edge, k - len(above))).fetchall()
    rows.sort(key=lambda row: (-row[1], row[0]))
    return rows[:k]


def _rollback(db: sqlite3.Connection) -> None:
    # Why suppress: after SQLITE_FULL or an I/O error SQLite may already have rolled
    # back, and "cannot rollback" must not replace the real error.
    if db.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
