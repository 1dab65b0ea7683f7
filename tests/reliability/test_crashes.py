"""Writers killed with SIGKILL at random moments lose no acknowledged write and tear nothing.

For the file store and the SQLite store, a forked writer creates records and
appends versions (to two contended ids and to its own records) as fast as the
store allows, reporting each acknowledged version to the parent over a pipe. The
parent kills it with SIGKILL after a random delay, then checks that the store
opens, every version on the medium parses and validates (nothing torn or half
written), version numbers have no gaps, and every acknowledged version is
present, intact, at the number ``put`` returned. Repeated on one store: ~50 kills
per store by default, 500 with ``MEMSPEC_LONG_KILL=1``.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import re
import signal
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memspec import SigningKey, StoreError
from memspec.reference import Memory
from memspec.reference.search import SQLiteSearchIndex
from memspec.reference.stores import FileRecordStore
from tests.reliability._workers import STORE_KINDS, base_record, kill_rounds, version_of

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")
LONG = os.environ.get("MEMSPEC_LONG_KILL") == "1"
ROUNDS = 500 if LONG else 50


@pytest.mark.requirement("STORE-7", "STORE-12", "STORE-2")
@pytest.mark.parametrize("kind", STORE_KINDS)
def test_sigkilled_writers_lose_no_acknowledged_version(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = kill_rounds(kind, tmp_path, ROUNDS, seed=20260301 + len(kind),
                         full_every=10 if not LONG else 50)
    assert report.child_errors == []
    assert report.kills + report.exited_before_kill == ROUNDS
    # Writers run forever, so every round must have ended in a kill.
    assert report.kills == ROUNDS
    assert report.acknowledged > 0, "no writer got a version acknowledged before its kill"
    with capsys.disabled():
        print(f"\n[reliability] crashes {kind}: {ROUNDS} writers, {report.kills} SIGKILLs "
              f"survived, {report.acknowledged} versions acknowledged, {report.found} versions "
              f"found ({report.found - report.acknowledged} written but unacknowledged), "
              f"{report.leftovers} temp files left behind")


def test_file_store_ignores_a_torn_temp_file(tmp_path: Path) -> None:
    """A crash mid-write leaves a partial temp file: readers never see it as a version."""
    store = FileRecordStore(tmp_path / "records")
    record = base_record("torn")
    store.put(record)
    directory = tmp_path / "records" / record.id[4:]
    full = record.canonical_bytes()
    (directory / ".tmp-crash.part").write_bytes(full[: len(full) // 2])
    assert [v.canonical_bytes() for v in store.history(record.id)] == [full]
    later = version_of(record, "after-crash", 1)
    assert store.put(later) == 2
    assert store.get(record.id) == later


def test_file_store_refuses_a_torn_version_file_by_name(tmp_path: Path) -> None:
    """Were a version file ever torn (a medium fault, not a crash), reading names it."""
    store = FileRecordStore(tmp_path / "records")
    record = base_record("torn-version")
    store.put(record)
    path = tmp_path / "records" / record.id[4:] / "000001.json"
    path.write_bytes(record.canonical_bytes()[:40])
    with pytest.raises(StoreError, match=re.escape(str(path))):
        store.get(record.id)


def test_a_killed_writer_between_temp_and_link_leaves_no_version() -> None:
    """A writer killed after writing its temp file but before linking adds no version."""
    with tempfile.TemporaryDirectory() as root:
        store = FileRecordStore(Path(root) / "records")
        record = base_record("unlinked")
        store.put(record)
        directory = Path(root) / "records" / record.id[4:]
        with contextlib.suppress(FileExistsError):
            (directory / ".tmp-killed.part").write_bytes(
                version_of(record, "ghost", 1).canonical_bytes())
        assert len(store.history(record.id)) == 1
        assert store.ids() == (record.id,)


@pytest.mark.parametrize("damage", ["version-is-a-directory", "root-is-a-file"])
def test_a_damaged_file_store_is_a_store_error(tmp_path: Path, damage: str) -> None:
    if damage == "root-is-a-file":
        (tmp_path / "records").write_bytes(b"not a directory")
        with pytest.raises(StoreError):
            FileRecordStore(tmp_path / "records")
        return
    store = FileRecordStore(tmp_path / "records")
    record = base_record("damaged")
    store.put(record)
    (tmp_path / "records" / record.id[4:] / "000002.json").mkdir()
    with pytest.raises(StoreError):
        store.get(record.id)


# -- the porcelain: a remember killed half way is repaired on the next open ----------------

KEY = SigningKey(bytes(range(5, 37)))


def _die_on(cls: type, method: str, call: int) -> None:
    """In a forked child: SIGKILL this process on the ``call``-th call of ``cls.method``."""
    original = getattr(cls, method)
    calls = {"n": 0}

    def wrapper(self: object, *args: object, **kwargs: object) -> object:
        calls["n"] += 1
        if calls["n"] == call:
            os.kill(os.getpid(), signal.SIGKILL)
        return original(self, *args, **kwargs)

    setattr(cls, method, wrapper)


def _killed_child(run: Callable[[], None]) -> None:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            run()
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


@pytest.mark.parametrize("moment", ["before-index", "before-signing"])
def test_a_remember_killed_half_way_is_found_and_signed_after_the_next_open(
        tmp_path: Path, moment: str) -> None:
    path = tmp_path / "memory"
    text = "Yusuf restores stained glass in the chapel."
    with Memory(path, identity=KEY, auto_consolidate=False) as memory:
        memory.remember("Zara teaches chess at the library.")

    def child() -> None:
        if moment == "before-index":
            _die_on(SQLiteSearchIndex, "index", 1)  # the birth is stored, not yet indexed
        else:
            _die_on(FileRecordStore, "put", 2)  # the birth is stored, the signing put dies
        Memory(path, identity=KEY, auto_consolidate=False).remember(text)

    _killed_child(child)
    with Memory(path, identity=KEY, auto_consolidate=False) as memory:
        report = memory.repair_report
        (hit,) = memory.recall("stained glass chapel").records
        assert hit.record.body == text
        assert hit.record.signature and hit.record.signed_by == KEY.address
        assert report.signed == (hit.record.id,)
        assert report.journal_entries_finished == 1
        if moment == "before-index":
            assert hit.record.id in report.reindexed
        assert not list((path / "pending").iterdir())
    with Memory(path, identity=KEY, auto_consolidate=False) as again:
        assert not again.repair_report.repaired


def test_only_the_entry_agent_signs_and_loaded_records_are_never_signed(tmp_path: Path) -> None:
    path = tmp_path / "memory"
    stranger = Memory(auto_consolidate=False)
    stranger.remember("An unsigned record someone else wrote.")
    unsigned = tmp_path / "unsigned.json"
    stranger.export(unsigned)
    Memory.load(unsigned, path=path, verify=False, auto_consolidate=False).close()

    def child() -> None:
        _die_on(FileRecordStore, "put", 2)
        Memory(path, identity=KEY, auto_consolidate=False).remember("Abel carves spoons.")

    _killed_child(child)
    with Memory(path, identity=SigningKey(bytes(range(6, 38))),
                auto_consolidate=False) as other:
        assert other.repair_report.signed == ()
        assert len(other.repair_report.unsigned_pending) == 1
    with Memory(path, identity=KEY, auto_consolidate=False) as memory:
        (signed,) = memory.repair_report.signed
        records = {r.id: r for r in memory.store}
        assert records[signed].body == "Abel carves spoons."
        assert [r.signature for r in records.values() if r.id != signed] == [""]


def test_temp_files_of_dead_writers_are_removed_on_open(tmp_path: Path) -> None:
    path = tmp_path / "memory"
    with Memory(path, auto_consolidate=False) as memory:
        record_id = memory.remember("Bea breeds alpacas.").record_id
    directory = path / "records" / record_id[4:]
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child: a pid that is surely gone afterwards
        os._exit(0)
    os.waitpid(pid, 0)
    dead = directory / f".tmp-{pid}-0123456789abcdef.part"
    dead.write_bytes(b'{"half":')
    alive = directory / f".tmp-{os.getpid()}-fedcba9876543210.part"
    alive.write_bytes(b'{"in flight":')
    with Memory(path, auto_consolidate=False) as memory:
        assert memory.repair_report.temp_files_removed == (f"{record_id[4:]}/{dead.name}",)
    assert not dead.exists() and alive.exists()


def test_a_damaged_index_is_rebuilt_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "memory"
    with Memory(path, auto_consolidate=False) as memory:
        record_id = memory.remember("Cleo studies river otters.").record_id
    for name in ("index.sqlite-wal", "index.sqlite-shm"):
        (path / name).unlink(missing_ok=True)
    (path / "index.sqlite").write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    with Memory(path, auto_consolidate=False) as memory:
        assert memory.repair_report.index_rebuilt
        assert memory.recall("river otters").ids == (record_id,)


def test_sigkilled_remembers_lose_nothing_acknowledged(tmp_path: Path) -> None:
    """Writers killed at random moments: every acknowledged remember is found and signed."""
    path = tmp_path / "memory"
    Memory(path, identity=KEY).close()
    rng = random.Random(20261201)
    acknowledged: list[str] = []
    rounds = 40 if LONG else 8
    for round_number in range(rounds):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            os.close(read)
            memory = Memory(path, identity=KEY)
            for n in itertools.count():
                memory.remember(f"round {round_number} fact {n} about tern colony {n * 7}")
                os.write(write, f"{round_number} {n}\n".encode())
        os.close(write)
        time.sleep(rng.uniform(0.05, 0.4))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        with os.fdopen(read, "rb") as pipe:
            acknowledged.extend(line.decode() for line in pipe.read().splitlines())
    with Memory(path, identity=KEY, auto_consolidate=False) as memory:
        stored = {r.body: r for r in memory.store}
        assert [r for r in stored.values() if not r.signature] == []
        for line in acknowledged:
            round_text, fact = line.split()
            body = f"round {round_text} fact {fact} about tern colony {int(fact) * 7}"
            assert body in stored, f"acknowledged {body!r} is gone"
        probe = acknowledged[-1].split()
        hits = memory.recall(f"round {probe[0]} fact {probe[1]} tern colony "
                             f"{int(probe[1]) * 7}", budget_tokens=100_000)
        assert any(item.record.body.startswith(f"round {probe[0]} fact {probe[1]} ")
                   for item in hits)
        assert [p for p in path.rglob("*") if p.name.endswith((".part", ".tmp"))] == []
        assert list((path / "pending").iterdir()) == []
