"""Faults of the disk and of the store's files: typed StoreErrors, never tracebacks or torn state.

A small real tmpfs (``_disks.small_tmpfs``; skipped with the reason where it cannot
be mounted) is filled to the last page or remounted read-only, and every write path
of the porcelain, the stores, the search index and the engine is driven into it:
each refusal is a StoreError, and a refused write leaves nothing behind (no version,
no temp file, no half-written export, no advanced witness). A write the store did
take is never reported as failed because a derived index could not follow (PROTO-7).
The same holds for damage that needs no special disk: a stray ``000000.json``, a
plain file where a record directory belongs, a device or FIFO given to ``load``.
"""

from __future__ import annotations

import itertools
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memspec import (
    FileError,
    MemspecError,
    SignatureError,
    SigningKey,
    StoreError,
)
from memspec.reference import Memory, ReferenceEngine
from memspec.reference.records import MemoryRecord
from memspec.reference.search import SQLiteSearchIndex
from memspec.reference.stores import FileRecordStore, SQLiteRecordStore
from tests.reliability._disks import fill, free, remount_read_only, small_tmpfs

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the fault disks are Linux tmpfs")

KEY = SigningKey(bytes(range(1, 33)))
OTHER = SigningKey(bytes(range(2, 34)))


def _clock() -> Callable[[], str]:
    ticks = itertools.count(1)
    return lambda: f"2026-02-{1 + next(ticks) // 3600 % 28:02d}T{next(ticks) % 24:02d}:00:00.000Z"


def _record(body: str, day: int = 1) -> MemoryRecord:
    return MemoryRecord.create("fact", body, {"kind": "conversation", "ref": "disk"},
                               created_at=f"2026-03-{day:02d}T08:15:{day:02d}.000Z")


def _files(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root`` but the filler, with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.is_symlink() and p.name != "filler.bin"}


def _temps(root: Path) -> list[str]:
    return [str(p) for p in root.rglob("*") if ".tmp" in p.name]


@pytest.fixture
def disk() -> Iterator[Path]:
    with small_tmpfs("2m") as mount:
        yield mount


# -- a full disk ------------------------------------------------------------------------


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_remember_on_a_full_disk_is_a_store_error_and_writes_nothing(disk: Path,
                                                                    signed: bool) -> None:
    path = disk / "memory"
    identity = KEY if signed else None
    memory = Memory(path, identity=identity, clock=_clock(), auto_consolidate=False)
    memory.remember("Alice keeps bees behind the old mill.")
    records_before = _files(path / "records")
    filler = fill(disk)
    with pytest.raises(StoreError):
        memory.remember("Bob repairs clocks on Thursdays for the whole village.")
    assert _files(path / "records") == records_before
    assert _temps(path) == []
    free(filler, 128)
    kept = memory.remember("Carol sails to the islands every June.")
    assert memory.recall("islands June").ids == (kept.record_id,)
    memory.close()


def test_a_remember_the_store_took_is_never_reported_as_failed(disk: Path) -> None:
    """Room for the version file but not for the index: remember answers, recall finds it."""
    path = disk / "memory"
    memory = Memory(path, clock=_clock(), auto_consolidate=False)
    memory.remember("Ola restores harps in the old mill.")
    filler = fill(disk)
    free(filler, 1)
    try:
        kept = memory.remember("Pete charts tide pools along the headland.")
    except StoreError:
        kept = None  # refused at the store: then nothing may be there
    free(filler, 256)
    found = memory.recall("tide pools headland").ids
    if kept is None:
        assert found == ()
    else:
        assert found == (kept.record_id,)
    memory.close()
    with Memory(path, auto_consolidate=False) as reopened:
        assert reopened.recall("tide pools headland").ids == found


def test_close_on_a_full_disk_is_a_store_error(disk: Path) -> None:
    memory = Memory(disk / "memory", clock=_clock(), auto_consolidate=False)
    memory.remember("Dave grows tomatoes on the balcony.")
    fill(disk)
    memory.recall("tomatoes")  # a touch: the salience sidecar now has something to save
    with pytest.raises(StoreError, match="salience"):
        memory.close()
    memory.close()  # idempotent: nothing left to release


def test_a_full_index_is_a_store_error_not_a_rollback_traceback(disk: Path) -> None:
    index = SQLiteSearchIndex(disk / "index.sqlite")
    index.index(_record("Erin collects stamps from every harbour town."))
    fill(disk)
    with pytest.raises(StoreError):
        for day in range(2, 28):
            index.index(_record("Frank " + "keeps a long diary " * 4000, day))
    index.close()


def test_a_put_the_store_took_is_answered_ok_and_found_once_the_index_follows(
        disk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(disk))
    engine = ReferenceEngine("file")
    try:
        engine.call("put", {"record": _record("Gina paints lighthouses.").model_dump()})
        filler = fill(disk)
        free(filler, 1)  # room for one version file, none for the index's WAL
        record = _record("Hank restores narrowboats on the canal.", 2)
        answer = engine.call("put", {"record": record.model_dump()})
        assert answer == {"version": 1}
        assert engine.call("get", {"id": record.id})["record"] == record.model_dump()
        free(filler, 256)
        found = engine.call("search", {"query": "narrowboats canal", "k": 5})
        assert record.id in [hit["id"] for hit in found["candidates"]]
    finally:
        engine.close()


def test_a_put_refused_by_a_full_disk_changes_nothing(disk: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(disk))
    engine = ReferenceEngine("file")
    try:
        fill(disk)
        record = _record("Ivy " + "maps the caves under the hill " * 3000)
        with pytest.raises(StoreError):
            engine.call("put", {"record": record.model_dump()})
        with pytest.raises(MemspecError, match="no record"):
            engine.call("get", {"id": record.id})
    finally:
        engine.close()


@pytest.mark.parametrize("kind", ["file", "sqlite"])
def test_a_store_put_on_a_full_disk_is_a_store_error(disk: Path, kind: str) -> None:
    store = (FileRecordStore(disk / "records") if kind == "file"
             else SQLiteRecordStore(disk / "records.sqlite"))
    kept = _record("Jack tunes pianos.")
    store.put(kept)
    filler = fill(disk)
    big = _record("Kim " + "writes long letters to the editor " * 5000, 2)
    with pytest.raises(StoreError):
        store.put(big)
    free(filler, 512)
    assert store.ids() == (kept.id,)
    assert store.history(kept.id) == (kept,)
    assert _temps(disk) == []
    store.close()


def test_an_export_on_a_full_disk_keeps_the_old_file_and_the_witness(disk: Path) -> None:
    path = disk / "memory"
    memory = Memory(path, identity=KEY, clock=_clock(), auto_consolidate=False)
    memory.remember("Liam bakes rye bread on Sundays.")
    target = disk / "export.json"
    memory.export(target)
    exported, witness = target.read_bytes(), (path / "witness.json").read_bytes()
    for n in range(6):
        memory.remember(f"Mia counts {n} herons " + "along the estuary " * 200)
    filler = fill(disk)
    with pytest.raises(StoreError):
        memory.export(target, overwrite=True)
    assert target.read_bytes() == exported
    assert (path / "witness.json").read_bytes() == witness
    assert _temps(disk) == []
    free(filler, 512)
    memory.close()


# -- a read-only filesystem ---------------------------------------------------------------


def test_a_read_only_filesystem_is_a_store_error_from_every_constructor(disk: Path) -> None:
    with Memory(disk / "memory", clock=_clock()) as memory:
        memory.remember("Nina rows before dawn.")
    remount_read_only(disk)
    for build in (lambda: Memory(disk / "memory"), lambda: Memory(disk / "fresh"),
                  lambda: FileRecordStore(disk / "fresh-records"),
                  lambda: SQLiteRecordStore(disk / "fresh.sqlite")):
        with pytest.raises(StoreError):
            build()


# -- damage that needs no special disk ----------------------------------------------------


def test_a_stray_version_zero_is_a_store_error(tmp_path: Path) -> None:
    store = FileRecordStore(tmp_path / "records")
    record = _record("Owen sings in the choir.")
    store.put(record)
    directory = tmp_path / "records" / record.id[4:]
    (directory / "000000.json").write_bytes(record.canonical_bytes())
    for read in (lambda: store.get(record.id), lambda: store.history(record.id),
                 lambda: list(store)):
        with pytest.raises(StoreError, match=r"000000\.json"):
            read()
    with pytest.raises(StoreError, match=r"000000\.json"):
        Memory(tmp_path).status()


def test_a_plain_file_where_a_record_directory_belongs_is_a_store_error(tmp_path: Path) -> None:
    store = FileRecordStore(tmp_path / "records")
    record = _record("Pia climbs sea cliffs.")
    squatter = tmp_path / "records" / record.id[4:]
    squatter.write_bytes(b"not a directory")
    with pytest.raises(StoreError, match="not a directory"):
        store.put(record)
    assert squatter.read_bytes() == b"not a directory"
    assert record.id not in store


def test_load_reads_only_regular_files_and_never_blocks(tmp_path: Path) -> None:
    fifo = tmp_path / "memory.json"
    os.mkfifo(fifo)
    os.symlink("/dev/zero", tmp_path / "zero.json")
    errors: list[BaseException] = []

    def load_all() -> None:
        for source in (fifo, Path("/dev/zero"), tmp_path / "zero.json"):
            try:
                Memory.load(source, verify=False)
            except BaseException as exc:
                errors.append(exc)

    # Why a thread: a load that blocked on the FIFO must fail this test, not hang the suite.
    worker = threading.Thread(target=load_all, daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert not worker.is_alive(), "Memory.load blocked on a FIFO or a device"
    assert [type(e) for e in errors] == [FileError, FileError, FileError], errors
    assert all("not a regular file" in str(e) for e in errors)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.json", "zero.json"]


def test_a_load_refused_for_the_wrong_agent_leaves_no_store_skeleton(tmp_path: Path) -> None:
    source = Memory(identity=KEY, clock=_clock())
    source.remember("Quinn keeps a ship in a bottle.")
    exported = tmp_path / "signed.json"
    source.export(exported)
    target = tmp_path / "never-made"
    with pytest.raises((SignatureError, FileError)):
        Memory.load(exported, path=target, expected_agent=OTHER.address)
    assert not target.exists()
