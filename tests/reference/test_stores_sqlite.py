"""SQLiteRecordStore specifics: exact payload bytes, schema, WAL, contention, injection."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from memspec import RecordError, SigningKey, StoreError, canonical_json, parse_json
from memspec.reference.records import MemoryRecord
from memspec.reference.stores import SQLiteRecordStore

from .conftest import at, new_record


def _raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def test_payload_is_the_canonical_json_of_the_record(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    store = SQLiteRecordStore(path)
    record = new_record("Grüße, 世界 🙂", slots={"ключ": "значение"}, tags=["ü"],
                        extra={"x_ext": [1, "two"]}).sign(SigningKey.from_hex("77" * 32))
    evolved = record.evolve(at(2), tags=["later"])
    store.put(record)
    store.put(evolved)
    with _raw(path) as conn:
        rows = conn.execute("SELECT version, payload FROM history WHERE id = ? "
                            "ORDER BY version", (record.id,)).fetchall()
        latest = conn.execute("SELECT state, type, payload, version FROM records "
                              "WHERE id = ?", (record.id,)).fetchone()
        tags = conn.execute("SELECT tag FROM record_tags WHERE id = ?", (record.id,)).fetchall()
    assert [(n, p.encode("utf-8")) for n, p in rows] == [
        (1, canonical_json(record.model_dump())), (2, canonical_json(evolved.model_dump()))]
    assert latest == ("active", "fact", rows[1][1], 2)
    assert tags == [("later",)]
    assert store.history(record.id)[0].verify() is True
    store.close()


def test_wal_mode_and_schema(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    SQLiteRecordStore(path).close()
    with _raw(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        columns = {table: [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
                   for table in ("records", "record_tags", "history")}
    assert columns == {"records": ["id", "state", "type", "payload", "version"],
                       "record_tags": ["id", "tag"],
                       "history": ["id", "version", "payload"]}


def test_sql_injection_strings_touch_nothing(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    store = SQLiteRecordStore(path)
    record = new_record()
    store.put(record)
    for bad in ("mem:'; DROP TABLE history; --", "mem:0' OR '1'='1", "x\x00y"):
        with pytest.raises(RecordError):
            store.get(bad)
        with pytest.raises(RecordError):
            store.redact(bad, reason="r", now=at(3))
        assert bad not in store
    assert store.list(tag="a' OR 1=1 --") == ()
    assert store.history(record.id) == (record,)
    store.close()


def test_projection_never_overrules_the_payload(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    store = SQLiteRecordStore(path)
    record = new_record()
    store.put(record)
    with _raw(path) as conn:
        conn.execute("UPDATE records SET state = 'archived' WHERE id = ?", (record.id,))
    assert store.list(state="archived") == ()
    assert store.get(record.id) == record
    store.close()


def test_a_busy_database_is_retried(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    store = SQLiteRecordStore(path, timeout=0.001, retries=200)
    blocker = _raw(path)
    blocker.execute("BEGIN IMMEDIATE")
    record = new_record()
    outcome: list[object] = []
    writer = threading.Thread(target=lambda: outcome.append(store.put(record)))
    writer.start()
    time.sleep(0.05)  # let the writer hit the held lock at least once
    blocker.execute("COMMIT")
    writer.join(timeout=60)
    blocker.close()
    assert outcome == [1]
    assert store.history(record.id) == (record,)
    store.close()


def test_a_database_that_stays_busy_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    store = SQLiteRecordStore(path, timeout=0.001, retries=2)
    blocker = _raw(path)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError):
            store.put(new_record())
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert store.ids() == ()
    store.close()


def test_a_closed_store_refuses_work(tmp_path: Path) -> None:
    store = SQLiteRecordStore(tmp_path / "store.sqlite")
    store.close()
    store.close()
    with pytest.raises(StoreError):
        store.put(new_record())
    with pytest.raises(StoreError):
        store.ids()


def test_redaction_leaves_no_trace_of_the_content_in_the_files(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    store = SQLiteRecordStore(path)
    secret = new_record("The vault code is zebra-4471.", tags=["zebra-4471"])
    store.put(secret)
    store.put(secret.evolve(at(2), state="archived", state_reason="old"))
    tombstone = store.redact(secret.id, reason="secret", now=at(3))
    store.close()
    with _raw(path) as conn:
        payloads = [row[0] for row in conn.execute("SELECT payload FROM history")]
        assert conn.execute("SELECT COUNT(*) FROM record_tags").fetchone() == (0,)
    assert payloads == [tombstone.canonical_bytes().decode()] * 2
    for name in (path.name, path.name + "-wal"):
        if (tmp_path / name).exists():
            assert b"zebra-4471" not in (tmp_path / name).read_bytes()


def _put_many(path: str, record_json: bytes, worker: int, count: int) -> None:
    store = SQLiteRecordStore(Path(path))
    base = MemoryRecord.model_validate(parse_json(record_json))
    for i in range(count):
        store.put(base.evolve(at(2, i), tags=[f"p{worker}-{i}"]))
    store.close()


def test_concurrent_processes_never_lose_a_version(tmp_path: Path) -> None:
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("needs the fork start method")
    context = multiprocessing.get_context("fork")
    path = tmp_path / "store.sqlite"
    SQLiteRecordStore(path).close()
    record = new_record()
    workers = [context.Process(target=_put_many,
                               args=(str(path), record.canonical_bytes(), w, 25))
               for w in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    store = SQLiteRecordStore(path)
    tags = sorted(v.tags[0] for v in store.history(record.id))
    assert tags == sorted(f"p{w}-{i}" for w in range(4) for i in range(25))
    store.close()


@pytest.mark.parametrize("damage", ["deleted-row", "stale-row", "wrong-state", "lost-tags"])
def test_history_wins_over_a_damaged_projection(tmp_path: Path, damage: str) -> None:
    """STORE-8: iterate, export and list read what history says, whatever the projection."""
    from memspec.reference.memory import export_file

    path = tmp_path / "store.sqlite"
    store = SQLiteRecordStore(path)
    keep, victim = new_record("Kept."), new_record("Victim.", created_at=at(1, 9))
    store.put(keep)
    store.put(victim)
    latest = victim.evolve(at(2), tags=["tagged"])
    store.put(latest)
    with _raw(path) as raw:
        if damage == "deleted-row":
            raw.execute("DELETE FROM records WHERE id = ?", (victim.id,))
        elif damage == "stale-row":
            raw.execute("UPDATE records SET payload = ?, version = 1 WHERE id = ?",
                        (victim.canonical_bytes().decode(), victim.id))
        elif damage == "wrong-state":
            raw.execute("UPDATE records SET state = 'archived' WHERE id = ?", (victim.id,))
        else:
            raw.execute("DELETE FROM record_tags WHERE id = ?", (victim.id,))
    reopened = SQLiteRecordStore(path)
    assert reopened.get(victim.id) == latest
    assert {r.id: r for r in reopened}[victim.id] == latest
    exported = export_file(reopened, now=at(3))
    assert latest.model_dump() in exported["records"]
    assert latest in reopened.list(state="active")
    assert latest in reopened.list(tag="tagged")
    assert latest in reopened.list(type="fact", state="active", tag="tagged")
    assert keep in reopened.list(state="active")
