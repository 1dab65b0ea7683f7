"""Benchmark 7: the reference stores against the raw storage calls they are built from.

Both sides write to the same file system (a temporary directory beside each
other), with the same durability: SQLite in WAL mode with ``synchronous=FULL``
and ``secure_delete=ON``, one ``BEGIN IMMEDIATE`` transaction per put, the
same four statements; the file store's raw side does exactly the temp file,
write, fsync, link, unlink and directory fsync sequence. Puts are interleaved
in short chunks so both sides see the same disk and CPU load.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from benchmarks._data import typical_records
from benchmarks._harness import Figure, Goal, Paired, Result, Sizes, paired_chunks
from memspec.reference.records import MemoryRecord
from memspec.reference.stores import FileRecordStore, SQLiteRecordStore

__all__ = ["BENCHMARKS"]

_T = TypeVar("_T")

_SCHEMA = (
    "CREATE TABLE history (id TEXT NOT NULL, version INTEGER NOT NULL, payload TEXT NOT NULL, "
    "PRIMARY KEY (id, version))",
    "CREATE TABLE records (id TEXT PRIMARY KEY, state TEXT NOT NULL, type TEXT NOT NULL, "
    "payload TEXT NOT NULL, version INTEGER NOT NULL)",
    "CREATE TABLE record_tags (id TEXT NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (id, tag))",
    "CREATE INDEX records_state ON records (state)",
    "CREATE INDEX records_type ON records (type)",
    "CREATE INDEX record_tags_tag ON record_tags (tag)",
)
_UPSERT = (
    "INSERT INTO records (id, state, type, payload, version) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET state = excluded.state, type = excluded.type, "
    "payload = excluded.payload, version = excluded.version"
)


def _dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class RawSQLite:
    """The same tables and statements as SQLiteRecordStore, on a bare connection."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=FULL")
        self.conn.execute("PRAGMA secure_delete=ON")
        for sql in _SCHEMA:
            self.conn.execute(sql)

    def put(self, record: dict[str, Any]) -> None:
        conn, rid = self.conn, record["id"]
        payload = _dumps(record)
        conn.execute("BEGIN IMMEDIATE")
        row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM history WHERE id = ?",
                           (rid,)).fetchone()
        number = row[0] + 1
        conn.execute("INSERT INTO history (id, version, payload) VALUES (?, ?, ?)",
                     (rid, number, payload))
        conn.execute(_UPSERT, (rid, record["state"], record["type"], payload, number))
        conn.execute("DELETE FROM record_tags WHERE id = ?", (rid,))
        conn.executemany("INSERT INTO record_tags (id, tag) VALUES (?, ?)",
                         [(rid, tag) for tag in record["tags"]])
        conn.execute("COMMIT")

    def history(self, rid: str) -> list[dict[str, Any]]:
        rows = self.conn.execute("SELECT payload FROM history WHERE id = ? ORDER BY version",
                                 (rid,)).fetchall()
        return [json.loads(row[0]) for row in rows]

    def get(self, rid: str) -> dict[str, Any]:
        return self.history(rid)[-1]

    def close(self) -> None:
        self.conn.close()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def raw_file_put(root: Path, record: dict[str, Any]) -> None:
    """The file store's put as bare system calls: temp file, fsync, link, unlink, dir fsync."""
    data = _dumps(record).encode()
    directory = root / record["id"][4:]
    if not directory.is_dir():
        directory.mkdir()
        _fsync_dir(root)
    fd, name = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=directory)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    number = len([n for n in os.listdir(directory) if n.endswith(".json")]) + 1
    os.link(name, directory / f"{number:06d}.json")
    os.unlink(name)
    _fsync_dir(directory)


def _versions(count: int, cache: dict[str, Any]) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
    """``count`` first versions and, for each, a second version (new tag, later update)."""
    key = f"store-records:{count}"
    if key not in cache:
        firsts = [MemoryRecord.model_validate(r) for r in typical_records(count, seed=77)]
        seconds = [r.evolve("2027-06-01T00:00:00.000Z", tags=(*r.tags, "revisited"))
                   for r in firsts]
        cache[key] = (firsts, seconds)
    pair: tuple[list[MemoryRecord], list[MemoryRecord]] = cache[key]
    return pair


def _pair(ours: Callable[[_T], object], raw: Callable[[_T], object], items: Sequence[_T],
          *, chunk: int, warmup: bool = True) -> Paired:
    """One paired, chunked pass calling ``ours`` and ``raw`` on every item."""

    def subject(batch: Sequence[_T]) -> None:
        for item in batch:
            ours(item)

    def baseline(batch: Sequence[_T]) -> None:
        for item in batch:
            raw(item)

    return paired_chunks(subject, baseline, items, chunk=chunk, repeats=1, warmup=warmup)


#: Reads per repeat for get and history (ids are cycled to reach it).
READS = 1500


def _sqlite_round(workdir: Path, versions: Sequence[MemoryRecord], repeats: int,
                  chunk: int) -> tuple[Paired, Paired, Paired]:
    dicts = {id(r): r.model_dump() for r in versions}
    unique = sorted({r.id for r in versions})
    # Reads are cheap: cycle over the ids so each side does enough of them to time.
    ids = unique * max(1, READS // len(unique))
    puts: list[Paired] = []
    gets: list[Paired] = []
    histories: list[Paired] = []
    for repeat in range(repeats):
        store = SQLiteRecordStore(workdir / f"ours-{repeat}.sqlite")
        raw = RawSQLite(workdir / f"raw-{repeat}.sqlite")
        try:
            def raw_put(record: MemoryRecord, w: RawSQLite = raw) -> None:
                w.put(dicts[id(record)])

            puts.append(_pair(store.put, raw_put, versions, chunk=chunk, warmup=False))
            gets.append(_pair(store.get, raw.get, ids, chunk=100))
            histories.append(_pair(store.history, raw.history, ids, chunk=100))
        finally:
            store.close()
            raw.close()
    return Paired.merge(puts), Paired.merge(gets), Paired.merge(histories)


def _store_result(name: str, compares: str, run: Paired, n: int, unit_label: str,
                  goal: float, sizes: Sizes, cause: str, labels: tuple[str, str]) -> Result:
    result = Result(
        name=name, compares=compares,
        goal=Goal(">=", goal, "reference store throughput / raw throughput"),
        subject=Figure(labels[0], n / run.median_subject(), unit_label),
        baseline=Figure(labels[1], n / run.median_baseline(), unit_label),
        ratio=run.speed_ratio(), size={"operations": n}, repeats=len(run.subject),
        pairs=run.pairs,
        samples={"subject_s": run.subject, "baseline_s": run.baseline},
    )
    return result.judge(cause)


SQLITE_PUT_CAUSE = (
    "a put validates the record (check_record: validate_record, content address) and "
    "canonicalizes it before the same four statements; both sides wait on one WAL fsync "
    "per commit, which dominates on a real disk. A shortfall points at validation cost "
    "(see the verify-file entry's fixes, which apply here too)."
)
SQLITE_READ_CAUSE = (
    "every read re-validates what put already validated: _decode runs parse_json (strict "
    "hooks in Python, then a value walk) and MemoryRecord.model_validate -> "
    "validate_record (content address recomputed: canonical birth + sha256; both "
    "timestamps through strptime; the agent address base58-decoded), then builds the "
    "dataclass (deep copies of slots and extra); the raw side only runs json.loads. "
    "Fix (reference/stores/sqlite.py): decode trusted rows with strict parse_json and "
    "MemoryRecord(..., _trusted=True) plus the id check (the payload was validated by "
    "put and only put/redact write it); measured prototype 5x faster reads (ratio "
    "0.02 -> 0.11). Then a small LRU of decoded records keyed by (id, version) (records "
    "are immutable) to bring repeated reads near the raw SELECT."
)
FILE_PUT_CAUSE = (
    "besides the same system calls, FileRecordStore.put validates and canonicalizes the "
    "record and lists the directory to find the next version; a shortfall points at "
    "validation cost (see the verify-file entry's fixes)."
)


def bench_sqlite(sizes: Sizes, cache: dict[str, Any]) -> list[Result]:
    firsts, seconds = _versions(sizes.store_puts, cache)
    versions = [*firsts, *seconds]
    with tempfile.TemporaryDirectory(prefix="memspec-bench-sqlite-", dir=_bench_dir()) as tmp:
        put, get, history = _sqlite_round(Path(tmp), versions, sizes.repeats, chunk=25)
    common = "SQLiteRecordStore {} vs raw sqlite3 {} (same tables, WAL, synchronous=FULL, " \
             "secure_delete=ON, one BEGIN IMMEDIATE transaction per put)"
    return [
        _store_result("sqlite-store-put", common.format("put", "doing the same writes"), put,
                      len(versions), "puts/s", 0.5, sizes, SQLITE_PUT_CAUSE,
                      ("SQLiteRecordStore.put", "raw sqlite3 put")),
        _store_result("sqlite-store-get", common.format("get", "SELECT + json.loads"), get,
                      _reads(firsts), "gets/s", 0.5, sizes, SQLITE_READ_CAUSE,
                      ("SQLiteRecordStore.get", "raw SELECT + json.loads")),
        _store_result("sqlite-store-history", common.format("history (2 versions each)",
                                                            "SELECT + json.loads"),
                      history, _reads(firsts), "histories/s", 0.5, sizes, SQLITE_READ_CAUSE,
                      ("SQLiteRecordStore.history", "raw SELECT + json.loads")),
    ]


def _reads(firsts: Sequence[MemoryRecord]) -> int:
    return len(firsts) * max(1, READS // len(firsts))


def bench_file(sizes: Sizes, cache: dict[str, Any]) -> list[Result]:
    firsts, seconds = _versions(sizes.store_puts, cache)
    versions = [*firsts, *seconds]
    dicts = {id(r): r.model_dump() for r in versions}
    runs: list[Paired] = []
    with tempfile.TemporaryDirectory(prefix="memspec-bench-files-", dir=_bench_dir()) as tmp:
        for repeat in range(sizes.repeats):
            ours_root, raw_root = Path(tmp, f"ours-{repeat}"), Path(tmp, f"raw-{repeat}")
            raw_root.mkdir()
            store = FileRecordStore(ours_root)
            def raw_put(record: MemoryRecord, root: Path = raw_root) -> None:
                raw_file_put(root, dicts[id(record)])

            runs.append(_pair(store.put, raw_put, versions, chunk=25, warmup=False))
    run = Paired.merge(runs)
    return [_store_result(
        "file-store-put", "FileRecordStore.put vs the raw temp file + write + fsync + link + "
        "unlink + directory fsync sequence (mkdir + parent fsync for a new id)", run,
        len(versions), "puts/s", 0.7, sizes, FILE_PUT_CAUSE,
        ("FileRecordStore.put", "raw temp+fsync+link put"))]


def _bench_dir() -> str | None:
    """Where store files go: $MEMSPEC_BENCH_DIR, else the system temp directory (a real disk)."""
    return os.environ.get("MEMSPEC_BENCH_DIR") or None


BENCHMARKS: tuple[tuple[str, Callable[[Sizes, dict[str, Any]], list[Result]]], ...] = (
    ("sqlite-store", bench_sqlite),
    ("file-store-put", bench_file),
)
