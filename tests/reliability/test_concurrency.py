"""Concurrent writers (processes and threads) on one store lose and clobber nothing.

For the file store and the SQLite store: several forked processes and several
threads write versions of the same record id at once (the processes also create
records of their own), while a reader thread loops over the history of the
contended id, validating every version it reads. Afterwards every version is in
the store exactly once, at the number its ``put`` returned, each writer's versions
in the order it wrote them, and every history the reader saw was a prefix of the
final history (a version never changes, moves or appears out of order).

``MEMSPEC_LONG_KILL=1`` runs more writers and versions.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from memspec.reference.stores import FileRecordStore
from tests.reliability._workers import (
    STORE_KINDS,
    THREAD_PREFIX,
    Ack,
    Reader,
    Writer,
    base_record,
    digest,
    open_store,
    raw_versions,
    read_acks,
    spawn_writer,
    version_of,
    wait_child,
)

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")
LONG = os.environ.get("MEMSPEC_LONG_KILL") == "1"
PROCESSES = 6 if LONG else 3
THREADS = 6 if LONG else 3
PER_WRITER = 60 if LONG else 12


def _subsequence(part: tuple[str, ...], whole: list[str]) -> bool:
    remaining = iter(whole)
    return all(item in remaining for item in part)


def _thread_writer(store: object, name: str, acks: list[Ack], errors: list[str],
                   gate: threading.Barrier) -> None:
    base = base_record("hot")
    try:
        gate.wait()
        for seq in range(1, PER_WRITER + 1):
            record = version_of(base, name, seq)
            number = store.put(record)  # type: ignore[attr-defined]
            acks.append(Ack(record.id, number, digest(record)))
    except BaseException as exc:
        errors.append(f"{name}: {exc!r}")


@pytest.mark.requirement("STORE-12", "STORE-2", "STORE-7")
@pytest.mark.parametrize("kind", STORE_KINDS)
def test_concurrent_writers_same_id(kind: str, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    base = base_record("hot")
    with open_store(kind, tmp_path) as first:
        assert first.put(base) == 1
    # Fork first, then open connections and start threads: a child forked while another
    # thread holds one of SQLite's process-wide mutexes (or any lock) deadlocks on it.
    children = [spawn_writer(Writer(kind, tmp_path, f"p{i}", ("hot",), PER_WRITER,
                                    births=True, seed=i)) for i in range(PROCESSES)]
    store = open_store(kind, tmp_path)
    reader = Reader(kind, tmp_path, (base.id,))
    reader.start()
    acks: list[Ack] = [Ack(base.id, 1, digest(base))]
    errors: list[str] = []
    gate = threading.Barrier(THREADS)
    threads = [threading.Thread(target=_thread_writer, args=(store, f"t{i}", acks, errors, gate),
                                name=f"{THREAD_PREFIX}writer-{i}", daemon=True)
               for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    for pid, rfd in children:
        child_acks, markers, child_errors = read_acks(rfd)
        assert wait_child(pid) == 0, child_errors
        assert "D" in markers, f"writer {pid} did not finish: {child_errors}"
        acks.extend(child_acks)
        errors.extend(child_errors)
    reader.stop()
    assert errors == [] and reader.errors == []

    # Every version exactly once, at the number put returned: the medium holds
    # precisely the acknowledged versions.
    on_medium = {(rid, number, hashlib.sha256(data).hexdigest())
                 for rid, number, data in raw_versions(kind, tmp_path)}
    acknowledged = {(a.record_id, a.number, a.digest) for a in acks}
    assert len(acknowledged) == len(acks), "two puts were acknowledged with one number"
    assert on_medium == acknowledged

    final = [digest(v) for v in open_store(kind, tmp_path).history(base.id)]
    writers = [f"p{i}" for i in range(PROCESSES)] + [f"t{i}" for i in range(THREADS)]
    position = {d: i for i, d in enumerate(final)}
    for name in writers:
        own = [position.get(digest(version_of(base, name, seq)))
               for seq in range(1, PER_WRITER + 1)]
        written = [p for p in own if p is not None]
        assert written == sorted(written), f"{name}'s versions are out of write order"
    thread_versions = {digest(version_of(base, f"t{i}", s))
                       for i in range(THREADS) for s in range(1, PER_WRITER + 1)}
    assert thread_versions <= set(final)
    assert len(final) == len(set(final)), "a version of the contended id appears twice"

    # No reader ever saw a partial record (it validated each) or a history that is not a
    # prefix of the final one. Known bug: the file store's history can miss a version that a
    # concurrent link is adding (see test_file_store_history_never_misses_a_version below);
    # such a snapshot must still be an in-order subsequence, and is counted.
    gapped = 0
    for snapshot in reader.snapshots.get(base.id, set()):
        if list(snapshot) == final[:len(snapshot)]:
            continue
        assert kind == "file" and _subsequence(snapshot, final), (
            f"a reader saw a history of {len(snapshot)} versions that is not a prefix of "
            "the final history")
        gapped += 1

    total = len(on_medium)
    with capsys.disabled():
        print(f"\n[reliability] concurrency {kind}: {PROCESSES} processes + {THREADS} threads, "
              f"{len(acks)} versions written, {total} found ({len(final)} of the contended "
              f"id), reader: {reader.reads} histories / {reader.versions_checked} versions "
              f"validated, {gapped} histories with a missing version")
    store.close()


@pytest.mark.requirement("STORE-2")
def test_file_store_history_never_misses_a_version(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileRecordStore(tmp_path / "records")
    base = base_record("gap")
    written = [base, *(version_of(base, "w", seq) for seq in range(1, 5))]
    for record in written:
        store.put(record)
    directory = str(tmp_path / "records" / base.id[4:])
    real = os.listdir
    raced: list[bool] = []

    def racing_listdir(path: object) -> list[str]:
        names = real(path)  # type: ignore[call-overload]
        if str(path) == directory and not raced:
            raced.append(True)  # one listing raced a writer's link of version 3
            return [name for name in names if name != "000003.json"]
        return names  # type: ignore[no-any-return]

    monkeypatch.setattr(os, "listdir", racing_listdir)
    history = store.history(base.id)
    assert [v.canonical_bytes() for v in history] == [r.canonical_bytes() for r in written]
