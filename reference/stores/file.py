"""FileRecordStore: one directory per record id, one canonical-JSON file per version.

Layout (STORE-9)::

    <root>/<32 hex digits of the id>/000001.json
                                     000002.json ...

Each version file holds exactly the canonical JSON bytes of that version, so paths
are a pure function of the id, history is append-only on disk and diffs under
version control are pure additions. A put writes a temp file in the record's
directory, fsyncs it and hard-links it to the next free version name; ``os.link``
never replaces an existing name, so a concurrent writer (thread or process) that
loses the race gets FileExistsError and retries with the next number (STORE-7,
STORE-12). Readers only look at names of the form ``NNNNNN.json``, so a temp file
left behind by a crash is ignored.

Redaction is the one deliberate rewrite: ``redact`` replaces every version file of
an id with the tombstone, each atomically (temp file, fsync, ``os.replace``).
Destroying the old bytes on the medium (and in any version-control history) is
outside this store; see the spec's note on crypto-shredding.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memspec import MemspecError, NotFoundError, StoreError, parse_json
from memspec.reference._ids import check_record, id_hex
from memspec.reference.ports import RecordStore
from memspec.reference.records import MemoryRecord

__all__ = ["MAX_VERSION", "FileRecordStore", "version_name"]

#: The last version number a six-digit name can hold.
MAX_VERSION = 999_999
_VERSION = re.compile(r"([0-9]{6})\.json")
_RECORD_DIR = re.compile(r"[0-9a-f]{32}")


def version_name(number: int) -> str:
    """The file name of version ``number`` (1-based), e.g. ``000001.json``."""
    return f"{number:06d}.json"


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_temp(directory: Path, data: bytes) -> Path:
    """A fully written, fsynced temp file in ``directory`` holding ``data``."""
    fd, name = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)
        raise
    return Path(name)


class _Gate:
    """Many puts at once, or one redaction alone (within this process)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._puts = 0
        self._redacting = False

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._redacting)
            self._puts += 1
        try:
            yield
        finally:
            with self._cond:
                self._puts -= 1
                self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._redacting and self._puts == 0)
            self._redacting = True
        try:
            yield
        finally:
            with self._cond:
                self._redacting = False
                self._cond.notify_all()


class FileRecordStore(RecordStore):
    """A directory tree of canonical-JSON version files; safe for concurrent writers."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot use {self.root} as a file store: {exc.strerror}") from exc
        # Why: keeps redaction apart from puts of this process; puts need no lock
        # among themselves because os.link never replaces a taken version name.
        self._gate = _Gate()

    # -- port ------------------------------------------------------------------------

    def put(self, record: MemoryRecord) -> int:
        """Validate ``record`` and append it as the next version file of its id."""
        data = check_record(record).canonical_bytes()
        directory = self.root / id_hex(record.id)
        with self._gate.shared():
            if not directory.is_dir():
                directory.mkdir(exist_ok=True)
                _fsync_dir(self.root)
            temp = _write_temp(directory, data)
            try:
                number = self._link_next(temp, directory)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temp)
            _fsync_dir(directory)
        return number

    def get(self, record_id: str) -> MemoryRecord:
        """The latest version of ``record_id``."""
        paths = self._paths(record_id)
        return self._read(paths[-1], record_id)

    def history(self, record_id: str) -> tuple[MemoryRecord, ...]:
        """Every version of ``record_id``, in version-file name order."""
        return tuple(self._read(path, record_id) for path in self._paths(record_id))

    def ids(self) -> tuple[str, ...]:
        """Every id with at least one version file, ascending."""
        found = []
        with os.scandir(self.root) as entries:
            for entry in entries:
                if (_RECORD_DIR.fullmatch(entry.name) and entry.is_dir()
                        and self._version_files(Path(entry.path))):
                    found.append("mem:" + entry.name)
        return tuple(sorted(found))

    def __contains__(self, record_id: object) -> bool:
        try:
            return bool(self._version_files(self.root / id_hex(record_id)))
        except MemspecError:
            return False

    # -- redaction (not part of the port) --------------------------------------------

    def redact(self, record_id: str, *, reason: str, now: str) -> MemoryRecord:
        """Rewrite every version file of ``record_id`` as its tombstone (RED-1).

        Already fully redacted records are returned unchanged. Versions appended by
        another process while redaction runs are redacted too, up to the final scan.
        """
        with self._gate.exclusive():
            versions = self.history(record_id)
            latest = versions[-1]
            if latest.is_tombstone and all(v == latest for v in versions):
                return latest
            tombstone = MemoryRecord.tombstone(latest, reason=reason, now=now)
            data = tombstone.canonical_bytes()
            directory = self.root / id_hex(record_id)
            done: set[str] = set()
            while pending := [p for p in self._version_files(directory) if p.name not in done]:
                for path in pending:
                    os.replace(_write_temp(directory, data), path)
                    done.add(path.name)
            _fsync_dir(directory)
        return tombstone

    # -- internals -------------------------------------------------------------------

    def _link_next(self, temp: Path, directory: Path) -> int:
        existing = self._version_files(directory)
        number = int(existing[-1].name[:6]) + 1 if existing else 1
        while number <= MAX_VERSION:
            try:
                os.link(temp, directory / version_name(number))
            except FileExistsError:
                number += 1
                continue
            return number
        raise StoreError(f"{directory.name} already holds {MAX_VERSION} versions",
                         requirement="STORE-9")

    @staticmethod
    def _version_files(directory: Path) -> list[Path]:
        try:
            names = os.listdir(directory)
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [directory / name for name in sorted(names) if _VERSION.fullmatch(name)]

    def _paths(self, record_id: str) -> list[Path]:
        directory = self.root / id_hex(record_id)
        paths = self._version_files(directory)
        if not paths:
            raise NotFoundError(f"no record {record_id}", requirement="STORE-4")
        last = int(paths[-1].name[:6])
        if len(paths) != last:
            # Why: a listing that races a writer's link can miss a name; version numbers
            # on disk have no gaps (n + 1 is linked only once n exists), so name them all.
            paths = [directory / version_name(n) for n in range(1, last + 1)]
        return paths

    @staticmethod
    def _read(path: Path, record_id: str) -> MemoryRecord:
        try:
            record = MemoryRecord.model_validate(parse_json(path.read_bytes()))
        except MemspecError as exc:
            raise StoreError(f"corrupt version file {path}: {exc}") from exc
        except OSError as exc:
            raise StoreError(f"unreadable version file {path}: {exc.strerror}") from exc
        if record.id != record_id:
            raise StoreError(f"version file {path} holds {record.id}, not {record_id}")
        return record
