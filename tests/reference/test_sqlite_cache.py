"""SQLiteRecordStore reads: trusted decoding and the cache of decoded versions.

Rows are decoded without re-running every record rule (put validated them), and
decoded versions are cached by (id, version). These tests pin what that must not
change: callers cannot reach the cached value, redaction (in this store or in
another one on the same file) is never hidden by the cache, other writers are
seen, and a damaged row is a StoreError, never a bare KeyError or TypeError.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memspec import StoreError, canonical_json, parse_json
from memspec.reference.records import MemoryRecord
from memspec.reference.stores import SQLiteRecordStore

from .conftest import at, new_record


def _nested() -> MemoryRecord:
    return new_record("The deploy runbook has steps.", type="procedure",
                      slots={"deploy runbook": ["build", {"then": "ship"}]},
                      extra={"x_note": {"k": [1, 2]}}, tags=["ops"])


def _flat() -> MemoryRecord:
    return new_record("The staging database is Postgres.",
                      slots={"staging database": "postgres"}, tags=["infra"])


def _rewrite(path: Path, record_id: str, payload: str) -> None:
    with sqlite3.connect(path, isolation_level=None) as conn:
        conn.execute("UPDATE history SET payload = ? WHERE id = ?", (payload, record_id))
        conn.execute("UPDATE records SET payload = ? WHERE id = ?", (payload, record_id))


@pytest.mark.parametrize("make", [_flat, _nested], ids=["flat", "nested"])
def test_callers_cannot_change_a_cached_version(make: Any, tmp_path: Path) -> None:
    store = SQLiteRecordStore(tmp_path / "s.sqlite")
    record = make()
    store.put(record)
    expected = record.canonical_bytes()
    read: Callable[[], MemoryRecord]
    for read in (lambda: store.get(record.id), lambda: store.history(record.id)[0],
                 lambda: store.list()[0], lambda: next(iter(store))):
        got = read()
        for value in [*got.slots.values(), *got.extra.values()]:
            if isinstance(value, list | dict):
                value.clear()
        got.slots.clear()  # type: ignore[attr-defined]
        got.extra["x_injected"] = True  # type: ignore[index]
    for read in (lambda: store.get(record.id), lambda: store.history(record.id)[0],
                 lambda: store.list()[0], lambda: next(iter(store))):
        assert read().canonical_bytes() == expected
    store.close()


def test_two_reads_are_equal_but_distinct_objects(tmp_path: Path) -> None:
    store = SQLiteRecordStore(tmp_path / "s.sqlite")
    record = _nested()
    store.put(record)
    first, second = store.get(record.id), store.get(record.id)
    assert first == second == record
    assert first.slots is not second.slots
    assert first.extra is not second.extra
    store.close()


def test_redaction_is_never_hidden_by_the_cache(tmp_path: Path) -> None:
    store = SQLiteRecordStore(tmp_path / "s.sqlite")
    record = _flat()
    store.put(record)
    store.put(record.evolve(at(2), tags=["later"]))
    assert store.get(record.id).body == record.body  # cached now
    assert [v.body for v in store.history(record.id)] == [record.body] * 2
    store.list()
    store.redact(record.id, reason="user asked", now=at(3))
    reads = [store.get(record.id), *store.history(record.id), *store.list(), *store]
    assert all(r.is_tombstone and r.body == MemoryRecord.REDACTED_BODY for r in reads)
    store.close()


def test_redaction_by_another_store_on_the_same_file_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    reader, writer = SQLiteRecordStore(path), SQLiteRecordStore(path)
    record = _flat()
    reader.put(record)
    assert reader.get(record.id).body == record.body
    assert reader.list()[0].body == record.body
    writer.redact(record.id, reason="user asked", now=at(3))
    assert reader.get(record.id).is_tombstone
    assert [v.is_tombstone for v in reader.history(record.id)] == [True]
    assert [r.is_tombstone for r in reader.list()] == [True]
    assert [r.is_tombstone for r in reader] == [True]
    reader.close()
    writer.close()


def test_versions_written_by_another_store_are_seen(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    reader, writer = SQLiteRecordStore(path), SQLiteRecordStore(path)
    record = _flat()
    reader.put(record)
    assert reader.get(record.id).tags == ("infra",)
    assert reader.list(tag="infra")[0].id == record.id
    writer.put(record.evolve(at(2), tags=["later"]))
    assert reader.get(record.id).tags == ("later",)
    assert [v.tags for v in reader.history(record.id)] == [("infra",), ("later",)]
    assert reader.list(tag="infra") == ()
    assert [r.tags for r in reader.list()] == [("later",)]
    assert [r.tags for r in reader] == [("later",)]
    reader.close()
    writer.close()


def test_the_cache_is_bounded_and_can_be_turned_off(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    records = [new_record(f"Fact number {n}.") for n in range(6)]
    small = SQLiteRecordStore(path, cache_size=2)
    for record in records:
        small.put(record)
    for record in records:
        assert small.get(record.id) == record
    assert len(small._cache._entries) == 2
    small.close()
    off = SQLiteRecordStore(path, cache_size=0)
    assert [off.get(r.id) for r in records] == records
    assert len(off._cache._entries) == 0
    off.close()


def _damaged(record: MemoryRecord) -> dict[str, str]:
    data = record.model_dump()
    without_state = {k: v for k, v in data.items() if k != "state"}
    return {
        "not-json": "{not json",
        "not-an-object": "[1, 2]",
        "missing-field": canonical_json(without_state).decode(),
        "wrong-type": canonical_json({**data, "tags": 7}).decode(),
        "bad-state": canonical_json({**data, "state": "sleeping"}).decode(),
        "bad-provenance": canonical_json({**data, "provenance": "me"}).decode(),
        "other-id": canonical_json({**data, "id": "mem:" + "0" * 32}).decode(),
        "birth-edited": canonical_json({**data, "body": "Edited at rest."}).decode(),
        "float": canonical_json(data).decode().replace('"flagged":false', '"flagged":1.5'),
    }


@pytest.mark.parametrize("damage", sorted(_damaged(new_record())))
@pytest.mark.parametrize("warm", [False, True], ids=["cold", "cached"])
def test_a_damaged_row_is_a_store_error(damage: str, warm: bool, tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    store = SQLiteRecordStore(path)
    record = _flat()
    store.put(record)
    if warm:
        store.get(record.id)
        store.list()
    _rewrite(path, record.id, _damaged(record)[damage])
    for read in (lambda: store.get(record.id), lambda: store.history(record.id),
                 lambda: store.list(), lambda: list(store)):
        with pytest.raises(StoreError) as info:
            read()
        assert record.id in str(info.value)
    store.close()


def test_a_row_is_decoded_to_the_record_put_wrote(tmp_path: Path) -> None:
    store = SQLiteRecordStore(tmp_path / "s.sqlite")
    for record in (_flat(), _nested()):
        store.put(record)
        got = store.get(record.id)
        assert got == record
        assert got.canonical_bytes() == record.canonical_bytes()
        assert MemoryRecord.model_validate(parse_json(got.canonical_bytes())) == got
    store.close()
