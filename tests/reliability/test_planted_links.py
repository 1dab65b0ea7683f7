"""Symlinks planted in a memory directory, a store or beside an output are never followed.

The attacker can write into the directory (a shared checkout, a synced folder) but
not into the victim's other files. Every planted link points at a file or directory
outside that the test then checks is untouched: the file store's ``records/``, a
record directory and a version file; ``index.sqlite`` and its WAL; the sidecars;
a SQLite store; and the temp and target names of the command line's ``write_output``
(``memspec keygen`` must never write a seed through one).
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path

import pytest

from memspec import StoreError
from memspec._safe_paths import PathError, read_regular, write_atomic
from memspec.cli import main as cli_main
from memspec.cli._io import UsageError, write_output
from memspec.reference import Memory
from memspec.reference.records import MemoryRecord
from memspec.reference.search import SQLiteSearchIndex
from memspec.reference.stores import FileRecordStore, SQLiteRecordStore

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX symlinks")


def _record(body: str, day: int = 1) -> MemoryRecord:
    return MemoryRecord.create("fact", body, {"kind": "conversation", "ref": "links"},
                               created_at=f"2026-04-{day:02d}T10:00:{day:02d}.000Z")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory of the victim's that nothing may write into."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me", encoding="utf-8")
    return victim


def _untouched(victim: Path) -> None:
    assert sorted(p.name for p in victim.iterdir()) == ["precious.txt"]
    assert (victim / "precious.txt").read_text(encoding="utf-8") == "keep me"


# -- the file store --------------------------------------------------------------------


def test_a_planted_records_directory_link_is_refused(tmp_path: Path, outside: Path) -> None:
    memory_dir = tmp_path / "memory"
    memory_dir.mkdir()
    (memory_dir / "records").symlink_to(outside, target_is_directory=True)
    with pytest.raises(StoreError, match="symlink"):
        Memory(memory_dir)
    _untouched(outside)


def test_a_planted_record_directory_link_is_refused(tmp_path: Path, outside: Path) -> None:
    store = FileRecordStore(tmp_path / "records")
    record = _record("Rosa plays the cello.")
    (tmp_path / "records" / record.id[4:]).symlink_to(outside, target_is_directory=True)
    with pytest.raises(StoreError, match="symlink"):
        store.put(record)
    assert record.id not in store
    assert store.ids() == ()
    _untouched(outside)


def test_a_planted_version_file_link_is_never_read(tmp_path: Path, outside: Path) -> None:
    store = FileRecordStore(tmp_path / "records")
    record = _record("Sam hikes the ridge.")
    directory = tmp_path / "records" / record.id[4:]
    directory.mkdir()
    elsewhere = outside / "planted.json"
    (directory / "000001.json").symlink_to(elsewhere)  # dangling: a put must not create it
    store.put(record)
    assert not elsewhere.exists()
    with pytest.raises(StoreError, match="symlink"):
        store.history(record.id)
    elsewhere.write_bytes(record.canonical_bytes())  # now a valid version, if followed
    with pytest.raises(StoreError, match="symlink"):
        store.history(record.id)


# -- the search index and the sidecars --------------------------------------------------


def _other_database(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE mine (x TEXT)")
        db.execute("INSERT INTO mine VALUES ('mine')")
    # a journal-mode database: no WAL of its own to confuse with the memory's


def _tables(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return sorted(r[0] for r in db.execute("SELECT name FROM sqlite_master"))


@pytest.mark.parametrize("name", ["index.sqlite", "index.sqlite-wal"])
def test_a_planted_index_link_is_removed_and_the_index_rebuilt(tmp_path: Path, outside: Path,
                                                               name: str) -> None:
    memory_dir = tmp_path / "memory"
    with Memory(memory_dir, auto_consolidate=False) as memory:
        kept = memory.remember("Tess knits scarves for the lifeboat crew.").record_id
    other = outside / "other.sqlite"
    _other_database(other)
    before = other.read_bytes()
    for companion in ("index.sqlite", "index.sqlite-wal", "index.sqlite-shm"):
        (memory_dir / companion).unlink(missing_ok=True)
    (memory_dir / name).symlink_to(other)
    with Memory(memory_dir, auto_consolidate=False) as memory:
        assert name in memory.repair_report.links_removed
        assert memory.recall("scarves lifeboat").ids == (kept,)
        memory.remember("Uma secret diary text about the harbour.")
    assert other.read_bytes() == before
    assert _tables(other) == ["mine"]
    assert not (memory_dir / name).is_symlink()


def test_the_search_index_refuses_a_planted_link(tmp_path: Path, outside: Path) -> None:
    other = outside / "other.sqlite"
    _other_database(other)
    (tmp_path / "index.sqlite").symlink_to(other)
    with pytest.raises(StoreError, match="symlink"):
        SQLiteSearchIndex(tmp_path / "index.sqlite")
    assert _tables(other) == ["mine"]


def test_a_sqlite_store_refuses_a_planted_link(tmp_path: Path, outside: Path) -> None:
    other = outside / "other.sqlite"
    _other_database(other)
    (tmp_path / "records.sqlite").symlink_to(other)
    with pytest.raises(StoreError, match="symlink"):
        SQLiteRecordStore(tmp_path / "records.sqlite")
    (tmp_path / "records.sqlite").unlink()
    (tmp_path / "records.sqlite-wal").symlink_to(outside / "wal")
    with pytest.raises(StoreError, match="symlink"):
        SQLiteRecordStore(tmp_path / "records.sqlite")
    assert _tables(other) == ["mine"]
    assert not (outside / "wal").exists()


def test_sidecar_links_are_neither_read_nor_written_through(tmp_path: Path,
                                                            outside: Path) -> None:
    memory_dir = tmp_path / "memory"
    with Memory(memory_dir, auto_consolidate=False) as memory:
        memory.remember("Vic keeps racing pigeons.")
    fifo = outside / "fifo"
    os.mkfifo(fifo)
    (memory_dir / "salience.json").unlink(missing_ok=True)
    (memory_dir / "salience.json").symlink_to(fifo)  # reading it would block forever
    with Memory(memory_dir, auto_consolidate=False) as memory:
        assert memory.recall("pigeons").ids
    assert not (memory_dir / "salience.json").is_symlink()
    assert sorted(p.name for p in outside.iterdir()) == ["fifo", "precious.txt"]


# -- write_output and the shared mechanism ----------------------------------------------


def test_write_output_never_follows_the_old_predictable_temp_name(tmp_path: Path,
                                                                  outside: Path) -> None:
    trap = outside / "stolen"
    trap.write_text("", encoding="utf-8")
    target = tmp_path / "agent.key"
    (tmp_path / f".agent.key.tmp-{os.getpid()}").symlink_to(trap)
    assert cli_main(["keygen", "-o", str(target)]) == 0
    assert trap.read_text(encoding="utf-8") == ""
    assert json.loads(target.read_text(encoding="utf-8"))["seed_hex"]
    assert target.stat().st_mode & 0o777 == 0o600
    assert not target.is_symlink()


@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
def test_keygen_never_writes_a_seed_through_a_planted_target(tmp_path: Path, outside: Path,
                                                             force: bool) -> None:
    trap = outside / "stolen"
    target = tmp_path / "agent.key"
    target.symlink_to(trap)  # dangling: exists() says False
    argv = ["keygen", "-o", str(target), *(["--force"] if force else [])]
    assert cli_main(argv) == 2
    assert not trap.exists()
    _untouched(outside)


def test_write_output_replaces_a_link_at_the_target_never_its_target(tmp_path: Path,
                                                                     outside: Path) -> None:
    (tmp_path / "out.json").symlink_to(outside / "precious.txt")
    with pytest.raises(UsageError, match="not a regular file"):
        write_output(str(tmp_path / "out.json"), b"{}")
    _untouched(outside)
    write_output(str(tmp_path / "fresh.json"), b"{}\n")
    assert (tmp_path / "fresh.json").read_bytes() == b"{}\n"
    assert [p.name for p in tmp_path.iterdir() if ".tmp" in p.name] == []


def test_the_mechanism_reads_regular_files_only_and_writes_without_clobbering(
        tmp_path: Path) -> None:
    with pytest.raises(PathError, match="not a regular file"):
        read_regular("/dev/zero", limit=1024)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "real").write_bytes(b"data")
    assert read_regular(tmp_path / "link", limit=16) == b"data"
    with pytest.raises(PathError, match="symlink"):
        read_regular(tmp_path / "link", limit=16, follow=False)
    write_atomic(tmp_path / "new", b"one")
    with pytest.raises(PathError, match="exists"):
        write_atomic(tmp_path / "new", b"two")
    write_atomic(tmp_path / "new", b"two", overwrite=True)
    assert (tmp_path / "new").read_bytes() == b"two"


# --------------------------------------------------------------------------- the witness


def test_a_planted_witness_lock_link_is_refused(tmp_path: Path, outside: Path) -> None:
    from memspec import FileError
    from memspec._rollback import Witness

    victim = outside / "never-created"
    target = tmp_path / "witness.json"
    (tmp_path / "witness.json.lock").symlink_to(victim)
    with pytest.raises(FileError, match="cannot lock witness"):
        Witness().save(target)
    assert not victim.exists() and not target.exists()


def test_a_planted_witness_link_or_fifo_is_not_read_or_replaced_through(
        tmp_path: Path, outside: Path) -> None:
    from memspec import FileError
    from memspec._rollback import Witness

    secret = outside / "secret.json"
    secret.write_text('{"format": "memspec-witness/1", "agents": {}}', encoding="utf-8")
    planted = tmp_path / "witness.json"
    planted.symlink_to(secret)
    with pytest.raises(FileError, match="symlink"):
        Witness.load(planted)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(FileError, match="not a regular file"):
        Witness.load(fifo)  # refused at once, never blocking on the FIFO
    saved = Witness().save(tmp_path / "fresh.json")
    assert Witness.load(tmp_path / "fresh.json") == saved
    assert oct((tmp_path / "fresh.json").stat().st_mode & 0o777) == "0o600"
