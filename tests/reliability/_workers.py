"""Forked writers, readers and a killer for the concurrency and crash tests.

A writer is a forked child process that opens its own store, writes record
versions and reports each *acknowledged* version (``put`` returned) to the
parent over a pipe, one short line per version::

    A <record id> <version number> <sha256 of the canonical bytes>

Lines are shorter than PIPE_BUF, so each arrives whole or not at all, even when
the writer is killed with SIGKILL in the middle of anything. The parent reads
the pipe to its end after the child is gone and checks that every acknowledged
version is in the store, byte for byte, at the number ``put`` returned.

Children are made with ``os.fork`` (cheap: the parent has memspec imported) and
always leave with ``os._exit``, so they never run the parent's pytest code. Fork only
from a single-threaded parent holding no open SQLite connection: a lock another thread
holds at the moment of the fork (SQLite's process-wide mutexes among them) stays locked
forever in the child.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import signal
import sqlite3
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from memspec import MemspecError, parse_json, validate_record
from memspec.reference.ports import RecordStore
from memspec.reference.records import MemoryRecord
from memspec.reference.stores import FileRecordStore, SQLiteRecordStore

__all__ = [
    "STORE_KINDS",
    "THREAD_PREFIX",
    "Ack",
    "KillReport",
    "Reader",
    "Writer",
    "base_record",
    "check_acks",
    "digest",
    "kill_rounds",
    "leftovers",
    "open_store",
    "raw_versions",
    "read_acks",
    "spawn_writer",
    "verify_store",
    "version_of",
    "wait_child",
]

STORE_KINDS = ("file", "sqlite")
#: Name prefix of the threads these tests start; _fork refuses to run while one is alive.
THREAD_PREFIX = "reliability-"
T0 = "2026-03-01T00:00:00.000Z"
LATER = "2026-03-02T00:00:00.000Z"
_VERSION_NAME_LENGTH = len("000001.json")


def open_store(kind: str, root: Path) -> RecordStore:
    """A store of ``kind`` ("file" or "sqlite") at ``root``, opened afresh."""
    if kind == "file":
        return FileRecordStore(root / "records")
    if kind == "sqlite":
        return SQLiteRecordStore(root / "records.sqlite", timeout=10.0, retries=400)
    raise ValueError(f"unknown store kind {kind!r}")


def base_record(name: str) -> MemoryRecord:
    """A deterministic newborn record: every process builds the same bytes for ``name``."""
    return MemoryRecord.create("fact", f"reliability record {name}",
                               {"kind": "test", "ref": name, "agent": None}, created_at=T0)


def version_of(base: MemoryRecord, writer: str, seq: int) -> MemoryRecord:
    """A later version of ``base`` that no other (writer, seq) pair produces."""
    return base.evolve(LATER, tags=(writer, f"seq-{seq}"),
                       state_reason=f"{writer} wrote version {seq}")


def digest(record: MemoryRecord) -> str:
    """sha256 of the record's canonical bytes (what identifies one version)."""
    return hashlib.sha256(record.canonical_bytes()).hexdigest()


@dataclass(frozen=True)
class Ack:
    """One version a writer saw acknowledged: ``put`` returned ``number``."""

    record_id: str
    number: int
    digest: str


# -- children ----------------------------------------------------------------------------------


def _child(body: Callable[[int], None], wfd: int) -> None:
    """Run ``body(wfd)`` in a forked child and leave the process without returning."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        body(wfd)
    except BaseException:
        code = 1
        with contextlib.suppress(OSError):
            message = traceback.format_exc().replace("\n", " | ")[-3000:]
            os.write(wfd, f"E {message}\n".encode())
    finally:
        os._exit(code)


def _fork(body: Callable[[int], None]) -> tuple[int, int]:
    """Fork a child running ``body(write_fd)``; return (pid, read_fd)."""
    alive = [t.name for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)]
    if alive:
        raise RuntimeError(f"refusing to fork while threads {alive} run (see module docstring)")
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(rfd)
        _child(body, wfd)
    os.close(wfd)
    return pid, rfd


def _ack(wfd: int, record_id: str, number: int, record: MemoryRecord) -> None:
    os.write(wfd, f"A {record_id} {number} {digest(record)}\n".encode())


@dataclass(frozen=True)
class Writer:
    """What a writer child writes: ``count`` versions (forever when None)."""

    kind: str
    root: Path
    name: str
    hot: tuple[str, ...]
    count: int | None
    births: bool = False
    seed: int = 0

    def __call__(self, wfd: int) -> None:
        rng = random.Random(self.seed)
        store = open_store(self.kind, self.root)
        os.write(wfd, b"R\n")
        hot = [base_record(name) for name in self.hot]
        mine: list[MemoryRecord] = []
        seq = 0
        while self.count is None or seq < self.count:
            seq += 1
            roll = rng.random()
            if self.births and roll < 0.3:
                record = base_record(f"{self.name}-birth-{seq}")
                mine.append(record)
            elif self.births and roll < 0.45 and mine:
                record = version_of(rng.choice(mine), self.name, seq)
            else:
                record = version_of(hot[seq % len(hot)], self.name, seq)
            number = store.put(record)
            _ack(wfd, record.id, number, record)
        store.close()
        os.write(wfd, b"D\n")


def spawn_writer(writer: Writer) -> tuple[int, int]:
    """Fork a writer child; return (pid, read end of its ack pipe)."""
    return _fork(writer)


def read_acks(rfd: int) -> tuple[list[Ack], set[str], list[str]]:
    """Read a child's pipe to its end: (acks, other markers seen, child errors)."""
    chunks = []
    with os.fdopen(rfd, "rb") as pipe:
        while chunk := pipe.read(65536):
            chunks.append(chunk)
    acks: list[Ack] = []
    markers: set[str] = set()
    errors: list[str] = []
    for line in b"".join(chunks).decode().splitlines():
        if line.startswith("A "):
            _, rid, number, sha = line.split(" ")
            acks.append(Ack(rid, int(number), sha))
        elif line.startswith("E "):
            errors.append(line[2:])
        elif line:
            markers.add(line)
    return acks, markers, errors


def wait_child(pid: int) -> int:
    """Reap a child; its exit status (negative: killed by that signal)."""
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


# -- readers -----------------------------------------------------------------------------------


@dataclass
class Reader:
    """A thread that reads histories in a loop while writers run, validating every version.

    Each distinct history it sees of each watched id is kept (as version digests), so
    the test can check that every snapshot was a prefix of the final history.
    """

    kind: str
    root: Path
    ids: tuple[str, ...]
    snapshots: dict[str, set[tuple[str, ...]]] = field(default_factory=dict)
    reads: int = 0
    versions_checked: int = 0
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _run(self) -> None:
        store = open_store(self.kind, self.root)
        try:
            while not self._stop.is_set():
                for rid in self.ids:
                    if rid not in store:
                        continue
                    try:
                        versions = store.history(rid)
                    except MemspecError as exc:
                        self.errors.append(f"{rid}: {exc}")
                        continue
                    for version in versions:
                        validate_record(version.model_dump())
                    self.reads += 1
                    self.versions_checked += len(versions)
                    self.snapshots.setdefault(rid, set()).add(
                        tuple(digest(v) for v in versions))
        except BaseException as exc:
            self.errors.append(f"reader crashed: {exc!r}")
        finally:
            store.close()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"{THREAD_PREFIX}reader")
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(timeout=60)


# -- checking a store after the fact -----------------------------------------------------------


def raw_versions(kind: str, root: Path) -> Iterator[tuple[str, int, bytes]]:
    """Every stored version straight from the medium: (id, number, stored bytes)."""
    if kind == "file":
        records = root / "records"
        for directory in sorted(records.iterdir()):
            if not directory.is_dir():
                continue
            for path in sorted(directory.iterdir()):
                if len(path.name) == _VERSION_NAME_LENGTH and path.name.endswith(".json"):
                    yield "mem:" + directory.name, int(path.name[:6]), path.read_bytes()
        return
    with contextlib.closing(sqlite3.connect(root / "records.sqlite")) as conn:
        rows = conn.execute("SELECT id, version, payload FROM history ORDER BY id, version")
        for rid, number, payload in rows.fetchall():
            yield str(rid), int(number), str(payload).encode("utf-8")


def leftovers(kind: str, root: Path) -> int:
    """Temporary files a killed file-store writer left behind (ignored by readers)."""
    if kind != "file":
        return 0
    return sum(1 for p in (root / "records").rglob(".tmp-*"))


def verify_store(kind: str, root: Path, acks: list[Ack]) -> int:
    """Check the store at ``root`` after writers died; return the number of versions in it.

    Every version on the medium parses and validates (nothing torn), version numbers
    are 1..n without gaps, the store opens and reads every history, and every
    acknowledged version is present, intact, at the number ``put`` returned.
    """
    found: dict[str, dict[int, bytes]] = {}
    for rid, number, data in raw_versions(kind, root):
        record = MemoryRecord.model_validate(parse_json(data))
        assert record.id == rid, f"version {number} under {rid} holds {record.id}"
        assert record.canonical_bytes() == data, f"{rid} v{number} is not canonical bytes"
        found.setdefault(rid, {})[number] = data
    for rid, versions in found.items():
        assert sorted(versions) == list(range(1, len(versions) + 1)), (
            f"{rid}: version numbers {sorted(versions)} have a gap")
    if kind == "sqlite":
        with contextlib.closing(sqlite3.connect(root / "records.sqlite")) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    store = open_store(kind, root)
    try:
        assert set(store.ids()) == set(found)
        for rid, versions in found.items():
            history = store.history(rid)
            assert [v.canonical_bytes() for v in history] == [
                versions[n] for n in sorted(versions)]
            assert store.get(rid).canonical_bytes() == versions[max(versions)]
    finally:
        store.close()
    for ack in acks:
        acked = found.get(ack.record_id, {}).get(ack.number)
        assert acked is not None, f"acknowledged {ack.record_id} v{ack.number} is lost"
        assert hashlib.sha256(acked).hexdigest() == ack.digest, (
            f"acknowledged {ack.record_id} v{ack.number} changed after its put returned")
    return sum(len(v) for v in found.values())


@dataclass
class KillReport:
    """Counts from a run of kill rounds against one store."""

    kind: str
    kills: int = 0
    exited_before_kill: int = 0
    acknowledged: int = 0
    found: int = 0
    leftovers: int = 0
    child_errors: list[str] = field(default_factory=list)


def _raw_version(kind: str, root: Path, record_id: str, number: int) -> bytes | None:
    if kind == "file":
        path = root / "records" / record_id[4:] / f"{number:06d}.json"
        return path.read_bytes() if path.exists() else None
    with contextlib.closing(sqlite3.connect(root / "records.sqlite")) as conn:
        row = conn.execute("SELECT payload FROM history WHERE id = ? AND version = ?",
                           (record_id, number)).fetchone()
    return None if row is None else str(row[0]).encode("utf-8")


def check_acks(kind: str, root: Path, acks: list[Ack]) -> None:
    """The store opens, each acknowledged version is on the medium intact at its number,
    and the latest version of every id they touched reads back valid."""
    for ack in acks:
        data = _raw_version(kind, root, ack.record_id, ack.number)
        assert data is not None, f"acknowledged {ack.record_id} v{ack.number} is lost"
        assert hashlib.sha256(data).hexdigest() == ack.digest, (
            f"acknowledged {ack.record_id} v{ack.number} changed after its put returned")
    store = open_store(kind, root)
    try:
        for rid in {ack.record_id for ack in acks}:
            store.get(rid)
    finally:
        store.close()


def kill_rounds(kind: str, root: Path, rounds: int, seed: int,
                max_delay: float = 0.08, full_every: int = 1) -> KillReport:
    """Start a writer, SIGKILL it at a random moment, check the store; ``rounds`` times.

    Each round checks that the store opens and holds the round's acknowledged
    versions; every ``full_every`` rounds (and at the end) the whole medium is
    checked with :func:`verify_store`.
    """
    rng = random.Random(seed)
    report = KillReport(kind)
    all_acks: list[Ack] = []
    hot = ("hot-a", "hot-b")
    for round_number in range(1, rounds + 1):
        writer = Writer(kind, root, f"k{round_number}", hot, count=None, births=True,
                        seed=rng.randrange(2**32))
        pid, rfd = spawn_writer(writer)
        time.sleep(rng.uniform(0.0, max_delay))
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        status = wait_child(pid)
        acks, _, errors = read_acks(rfd)
        if status == -signal.SIGKILL:
            report.kills += 1
        else:
            report.exited_before_kill += 1
        report.child_errors.extend(errors)
        all_acks.extend(acks)
        check_acks(kind, root, acks)
        if round_number % full_every == 0 or round_number == rounds:
            found = verify_store(kind, root, all_acks)
            # At most one version per killed writer can be written but unacknowledged.
            assert len(all_acks) <= found <= len(all_acks) + round_number, (
                f"{found} versions for {len(all_acks)} acknowledged after {round_number} kills")
            report.found = found
    report.acknowledged = len(all_acks)
    report.leftovers = leftovers(kind, root)
    return report
