"""The RecordStore port contract, run against every store (the `store` fixture)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from memspec import (
    MemspecError,
    NotFoundError,
    RecordError,
    SigningKey,
    birth_digest,
    validate_record,
)
from memspec.reference.ports import RecordStore
from memspec.reference.records import MemoryRecord, RecordState

from .conftest import ConcreteStore, at, new_record, snapshot

UNKNOWN = "mem:" + "0" * 32
BAD_IDS = [
    "mem:../../etc/passwd", "mem:../" + "0" * 29, "mem:'; DROP TABLE history; --",
    "mem:" + "0" * 31 + "' OR '1'='1", "MEM:" + "0" * 32, "mem:" + "A" * 32, "mem:" + "0" * 33,
    "mem:" + "0" * 32 + "\n", "", "mem:", "/etc/passwd", "0" * 32, 7, None,
]


def _versions(record: MemoryRecord, count: int) -> list[MemoryRecord]:
    return [record] + [record.evolve(at(2, i), tags=[f"v{i}"]) for i in range(1, count)]


def test_put_appends_versions(store: RecordStore) -> None:
    versions = _versions(new_record(), 3)
    assert [store.put(v) for v in versions] == [1, 2, 3]
    assert store.history(versions[0].id) == tuple(versions)
    assert store.get(versions[0].id) == versions[-1]


def test_put_never_overwrites(store: RecordStore) -> None:
    record = new_record()
    assert store.put(record) == 1
    assert store.put(record) == 2
    assert store.history(record.id) == (record, record)


def test_versions_never_change_after_write(store: RecordStore) -> None:
    versions = _versions(new_record(), 4)
    store.put(versions[0])
    first = store.history(versions[0].id)[0].canonical_bytes()
    for version in versions[1:]:
        store.put(version)
    assert store.history(versions[0].id)[0].canonical_bytes() == first


def test_round_trip_is_byte_identical_with_signatures_and_extras(store: RecordStore) -> None:
    key = SigningKey.from_hex("55" * 32)
    record = new_record("Café naïve 🙂", slots={"ünïcode": ["x", 1, None, True]},
                        occurred_at=at(1), extra={"x_ext": {"k": "v"}}).sign(key)
    store.put(record)
    stored = store.get(record.id)
    assert stored.canonical_bytes() == record.canonical_bytes()
    assert stored.verify() is True


@pytest.mark.parametrize("method", ["get", "history"])
def test_unknown_ids_fail_with_not_found(store: RecordStore, method: str) -> None:
    store.put(new_record())
    with pytest.raises(NotFoundError):
        getattr(store, method)(UNKNOWN)
    assert UNKNOWN not in store


@pytest.mark.parametrize("bad", BAD_IDS, ids=repr)
def test_malformed_ids_are_refused_before_the_backend(store: ConcreteStore, bad: object) -> None:
    record = new_record()
    store.put(record)
    before = snapshot(store)
    for call in (store.get, store.history):
        with pytest.raises((RecordError, NotFoundError)):
            call(bad)  # type: ignore[arg-type]
    redact = store.redact
    with pytest.raises((RecordError, NotFoundError)):
        redact(bad, reason="r", now=at(3))  # type: ignore[arg-type]  # a malformed id
    assert bad not in store
    assert snapshot(store) == before


def test_put_validates_and_writes_nothing_on_failure(store: RecordStore) -> None:
    record = new_record()
    store.put(record)
    before = snapshot(store)
    forged = new_record("Forged.")
    object.__setattr__(forged, "id", record.id)  # birth no longer matches the id
    tampered = new_record("Tampered.")
    object.__setattr__(tampered, "state", RecordState.SUPERSEDED)  # no successor, no reason
    for bad in (forged, tampered, record.model_dump(), "record", None):
        with pytest.raises(RecordError):
            store.put(bad)  # type: ignore[arg-type]
    assert snapshot(store) == before


def _populate(store: RecordStore) -> dict[str, MemoryRecord]:
    fact = new_record("Fact one.", tags=["a", "b"])
    fact2 = new_record("Fact two.", tags=["a"])
    episode = new_record("Episode.", type="episode", tags=["b"])
    procedure = new_record("Procedure.", type="procedure", tags=["a"])
    gone = new_record("Archived.", tags=["a", "b"])
    for record in (fact, fact2, episode, procedure, gone):
        store.put(record)
    store.put(gone.evolve(at(2), state="archived", state_reason="stale"))
    store.put(fact2.evolve(at(2), tags=["c"]))  # the latest version drops tag a
    return {"fact": fact, "fact2": fact2, "episode": episode, "procedure": procedure,
            "gone": gone}


@pytest.mark.parametrize("filters, expected", [
    ({}, ["fact", "fact2", "episode", "procedure", "gone"]),
    ({"state": "active"}, ["fact", "fact2", "episode", "procedure"]),
    ({"state": RecordState.ARCHIVED}, ["gone"]),
    ({"type": "fact"}, ["fact", "fact2", "gone"]),
    ({"tag": "a"}, ["fact", "procedure", "gone"]),
    ({"tag": "c"}, ["fact2"]),
    ({"state": "active", "tag": "b"}, ["fact", "episode"]),
    ({"state": "active", "type": "fact", "tag": "b"}, ["fact"]),
    ({"state": "superseded"}, []),
    ({"tag": "x' OR '1'='1"}, []),
])
def test_list_filters_latest_versions_conjunctively(
        store: RecordStore, filters: dict[str, str], expected: list[str]) -> None:
    records = _populate(store)
    listed = store.list(**filters)
    assert [r.id for r in listed] == sorted(records[name].id for name in expected)
    assert all(r == store.get(r.id) for r in listed)


@pytest.mark.parametrize("filters", [{"state": "deleted"}, {"type": "opinion"}, {"tag": 3}])
def test_list_rejects_unknown_filter_values(store: RecordStore, filters: dict[str, object]) -> None:
    with pytest.raises(RecordError):
        store.list(**filters)  # type: ignore[arg-type]


def test_iteration_and_ids_give_latest_versions_by_id(store: RecordStore) -> None:
    records = _populate(store)
    ids = sorted(r.id for r in records.values())
    assert store.ids() == tuple(ids)
    assert [r.id for r in store] == ids
    assert [r.updated_at for r in store] == [store.get(i).updated_at for i in ids]
    assert all(i in store for i in ids)


def test_empty_store(store: RecordStore) -> None:
    assert store.ids() == () and list(store) == [] and store.list() == ()


def test_no_store_offers_deletion(store: RecordStore) -> None:
    forbidden = {"delete", "remove", "discard", "pop", "clear", "drop", "purge", "truncate",
                 "__delitem__", "delete_record", "overwrite"}
    assert not forbidden & set(dir(store))
    assert not forbidden & set(dir(RecordStore))


def test_redaction_is_not_on_the_port(store: ConcreteStore) -> None:
    assert not hasattr(RecordStore, "redact")
    assert callable(store.redact)


def test_redact_replaces_every_version_with_the_tombstone(store: ConcreteStore) -> None:
    key = SigningKey.from_hex("66" * 32)
    other = new_record("Other.")
    secret = new_record("The code is 1234.", slots={"code": "1234"}, tags=["secret"],
                        evidence=[other.id], extra={"x_hint": "1234"}).sign(key)
    store.put(other)
    for version in _versions(secret, 3):
        store.put(version)
    tombstone = store.redact(secret.id, reason="contains a code", now=at(9))
    history = store.history(secret.id)
    assert len(history) == 3
    assert all(v == tombstone for v in history)
    assert store.get(secret.id) == tombstone
    wire = tombstone.model_dump()
    validate_record(wire)
    assert wire["body"] == "[redacted]" and wire["evidence"] == [other.id]
    assert wire["birth_digest"] == birth_digest(secret.model_dump())
    assert "x_hint" not in wire and wire["updated_at"] == at(9)
    assert "1234" not in tombstone.canonical_bytes().decode()
    assert store.list(tag="secret") == ()
    assert store.get(other.id) == other


def test_redact_is_idempotent(store: ConcreteStore) -> None:
    record = new_record()
    store.put(record)
    redact = store.redact
    first = redact(record.id, reason="pii", now=at(3))
    before = snapshot(store)
    assert redact(record.id, reason="pii again", now=at(4)) == first
    assert snapshot(store) == before


@pytest.mark.parametrize("reason, now", [("", at(4)), ("pii", "not a time"), ("pii", at(2))])
def test_invalid_redaction_changes_nothing(store: ConcreteStore, reason: str, now: str) -> None:
    record = new_record(created_at=at(3))  # a redaction "before" its birth is invalid too
    store.put(record)
    before = snapshot(store)
    with pytest.raises(MemspecError):
        store.redact(record.id, reason=reason, now=now)
    assert snapshot(store) == before


def test_redact_unknown_id_is_not_found(store: ConcreteStore) -> None:
    with pytest.raises(NotFoundError):
        store.redact(UNKNOWN, reason="pii", now=at(3))


def test_concurrent_puts_from_threads_keep_every_version(store: RecordStore) -> None:
    base = new_record()
    threads, per_thread = 6, 12
    versions = {t: [base.evolve(at(2, i), tags=[f"t{t}-{i}"]) for i in range(per_thread)]
                for t in range(threads)}
    numbers: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def writer(t: int) -> None:
        start.wait()
        for version in versions[t]:
            number = store.put(version)
            with lock:
                numbers.append(number)

    workers = [threading.Thread(target=writer, args=(t,)) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    history = store.history(base.id)
    assert sorted(numbers) == list(range(1, threads * per_thread + 1))
    assert len(history) == threads * per_thread
    written = sorted(v.canonical_bytes() for vs in versions.values() for v in vs)
    assert sorted(v.canonical_bytes() for v in history) == written
    for t in range(threads):  # each thread's own versions appear in its write order
        mine = [v.tags[0] for v in history if v.tags[0].startswith(f"t{t}-")]
        assert mine == [f"t{t}-{i}" for i in range(per_thread)]
    assert store.get(base.id) == history[-1]


def test_data_survives_reopening(store: RecordStore,
                                 reopen: Callable[[], RecordStore]) -> None:
    records = _populate(store)
    expected = snapshot(store)
    store.close()
    again = reopen()
    try:
        assert snapshot(again) == expected
        assert again.put(records["fact"].evolve(at(3), tags=["z"])) == 2
    finally:
        again.close()
