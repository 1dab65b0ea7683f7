"""FileRecordStore specifics: the on-disk layout, atomic linking, readers, processes."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from memspec import RecordError, StoreError
from memspec.reference.records import MemoryRecord
from memspec.reference.stores import FileRecordStore
from memspec.reference.stores import file as file_module

from .conftest import at, new_record


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_layout_is_one_directory_per_id_one_canonical_file_per_version(tmp_path: Path) -> None:
    store = FileRecordStore(tmp_path)
    record = new_record()
    evolved = record.evolve(at(2), tags=["x"])
    store.put(record)
    store.put(evolved)
    directory = record.id[4:]
    assert _files(tmp_path) == [directory, f"{directory}/000001.json",
                                f"{directory}/000002.json"]
    assert (tmp_path / directory / "000001.json").read_bytes() == record.canonical_bytes()
    assert (tmp_path / directory / "000002.json").read_bytes() == evolved.canonical_bytes()


def test_stray_temp_files_and_empty_directories_are_ignored(tmp_path: Path) -> None:
    store = FileRecordStore(tmp_path)
    record = new_record()
    store.put(record)
    directory = tmp_path / record.id[4:]
    (directory / ".tmp-crashed.part").write_bytes(b'{"half": ')
    (directory / "notes.txt").write_text("not a version")
    (directory / "1.json").write_text("{}")
    (tmp_path / ("ab" * 16)).mkdir()  # a record directory whose first write never landed
    (tmp_path / "salience.json").write_text("{}")
    assert store.history(record.id) == (record,)
    assert store.ids() == (record.id,)
    assert ("mem:" + "ab" * 16) not in store
    assert store.put(record) == 2


def test_versions_are_read_in_name_order(tmp_path: Path) -> None:
    store = FileRecordStore(tmp_path)
    versions = [new_record()] + [new_record().evolve(at(2, i), tags=[f"v{i}"])
                                 for i in range(1, 12)]
    directory = tmp_path / versions[0].id[4:]
    directory.mkdir()
    for number, version in reversed(list(enumerate(versions, start=1))):
        (directory / file_module.version_name(number)).write_bytes(version.canonical_bytes())
    assert store.history(versions[0].id) == tuple(versions)
    assert store.get(versions[0].id) == versions[-1]


def test_a_taken_version_number_is_retried_not_clobbered(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileRecordStore(tmp_path)
    record = new_record()
    store.put(record)
    directory = tmp_path / record.id[4:]
    rival = record.evolve(at(2), tags=["rival"])
    (directory / "000002.json").write_bytes(rival.canonical_bytes())
    stale = ["000001.json"]
    monkeypatch.setattr(FileRecordStore, "_version_files", staticmethod(lambda d: stale))
    mine = record.evolve(at(3), tags=["mine"])
    assert store.put(mine) == 3
    monkeypatch.undo()
    assert store.history(record.id) == (record, rival, mine)
    assert not [p for p in directory.iterdir() if p.name.startswith(".tmp-")]


def test_version_numbers_stop_at_six_digits(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(file_module, "MAX_VERSION", 2)
    store = FileRecordStore(tmp_path)
    record = new_record()
    store.put(record)
    store.put(record)
    with pytest.raises(StoreError):
        store.put(record)
    assert _files(tmp_path)[-1].endswith("000002.json")
    assert len(_files(tmp_path)) == 3


def test_corrupt_or_misplaced_version_files_are_store_errors(tmp_path: Path) -> None:
    store = FileRecordStore(tmp_path)
    a, b = new_record("A."), new_record("B.")
    store.put(a)
    store.put(b)
    (tmp_path / a.id[4:] / "000002.json").write_bytes(b'{"id": "mem:truncated')
    (tmp_path / b.id[4:] / "000002.json").write_bytes(a.canonical_bytes())
    with pytest.raises(StoreError):
        store.get(a.id)
    with pytest.raises(StoreError):
        store.history(b.id)


def test_path_traversal_never_leaves_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store = FileRecordStore(root)
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "000001.json").write_bytes(new_record().canonical_bytes())
    for bad in ("mem:../etc", "mem:../../etc", "mem:/etc", "mem:..", "mem:" + "0" * 32 + "/.."):
        with pytest.raises(RecordError):
            store.get(bad)
        with pytest.raises(RecordError):
            store.redact(bad, reason="r", now=at(3))
    assert _files(root) == []


def test_redaction_rewrites_each_version_file_atomically(tmp_path: Path) -> None:
    store = FileRecordStore(tmp_path)
    record = new_record("Secret: swordfish.")
    for version in (record, record.evolve(at(2), tags=["x"])):
        store.put(version)
    tombstone = store.redact(record.id, reason="secret", now=at(3))
    directory = tmp_path / record.id[4:]
    assert sorted(p.name for p in directory.iterdir()) == ["000001.json", "000002.json"]
    for path in directory.iterdir():
        assert path.read_bytes() == tombstone.canonical_bytes()
        assert b"swordfish" not in path.read_bytes()


def _put_many(root: str, record_json: bytes, worker: int, count: int) -> None:
    from memspec import parse_json

    store = FileRecordStore(Path(root))
    base = MemoryRecord.model_validate(parse_json(record_json))
    for i in range(count):
        store.put(base.evolve(at(2, i), tags=[f"p{worker}-{i}"]))


def test_concurrent_processes_never_lose_a_version(tmp_path: Path) -> None:
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("needs the fork start method")
    context = multiprocessing.get_context("fork")
    record = new_record()
    processes, per_process = 4, 25
    workers = [context.Process(target=_put_many,
                               args=(str(tmp_path), record.canonical_bytes(), w, per_process))
               for w in range(processes)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    directory = tmp_path / record.id[4:]
    names = sorted(os.listdir(directory))
    total = processes * per_process
    assert names == [file_module.version_name(n) for n in range(1, total + 1)]
    history = FileRecordStore(tmp_path).history(record.id)
    tags = [v.tags[0] for v in history]
    assert sorted(tags) == sorted(f"p{w}-{i}" for w in range(processes)
                                  for i in range(per_process))
    for w in range(processes):
        assert [t for t in tags if t.startswith(f"p{w}-")] == [f"p{w}-{i}"
                                                             for i in range(per_process)]
