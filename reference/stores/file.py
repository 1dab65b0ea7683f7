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
left behind by a crash is ignored, and :meth:`FileRecordStore.remove_temp_files`
clears those of writers that are gone.

Nothing below the root is reached through a symlink: the store holds a directory
fd for its root and opens every record directory and version file relative to it
with ``O_NOFOLLOW`` (``memspec._safe_paths``), reading regular files only. A
planted link, a plain file where a record directory belongs, a stray
``000000.json``, a full or read-only disk: each is a StoreError, and a put that
fails leaves no version and no temp file behind.

Redaction is the one deliberate rewrite: ``redact`` replaces every version file of
an id with the tombstone, each atomically (temp file, fsync, ``os.replace``).
Destroying the old bytes on the medium (and in any version-control history) is
outside this store; see the spec's note on crypto-shredding.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memspec import DEFAULT_LIMITS, MemspecError, NotFoundError, StoreError, parse_json
from memspec._safe_paths import (
    PathError,
    closing_fd,
    dir_fd,
    fsync_dir,
    open_dir,
    pid_alive,
    read_regular_at,
)
from memspec.reference._ids import check_record, id_hex
from memspec.reference.ports import RecordStore
from memspec.reference.records import MemoryRecord

__all__ = ["MAX_VERSION", "FileRecordStore", "version_name"]

#: The last version number a six-digit name can hold.
MAX_VERSION = 999_999
_VERSION = re.compile(r"([0-9]{6})\.json")
_RECORD_DIR = re.compile(r"[0-9a-f]{32}")
#: Temp files of this store: ``.tmp-<pid>-<random>.part`` (older writers: ``.tmp-<random>.part``).
_TEMP = re.compile(r"\.tmp-(?:([0-9]+)-)?[A-Za-z0-9_]+\.part")
_WRITE_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                | getattr(os, "O_CLOEXEC", 0))


def version_name(number: int) -> str:
    """The file name of version ``number`` (1-based), e.g. ``000001.json``."""
    return f"{number:06d}.json"



def _write_temp(directory: int, data: bytes) -> str:
    """A fully written, fsynced temp file in ``directory`` holding ``data``; its name."""
    while True:
        name = f".tmp-{os.getpid()}-{secrets.token_hex(8)}.part"
        try:
            fd = os.open(name, _WRITE_FLAGS, 0o644, dir_fd=directory)
        except FileExistsError:
            continue
        break
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=directory)
        raise
    return name


def _os_error(action: str, exc: OSError) -> StoreError:
    if exc.errno == errno.ENOSPC:
        detail = "no space left on the device"
    elif exc.errno == errno.EROFS:
        detail = "the filesystem is read-only"
    else:
        detail = exc.strerror or str(exc)
    return StoreError(f"cannot {action}: {detail}")


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
    """A directory tree of canonical-JSON version files; safe for concurrent writers.

    ``follow_root=False`` refuses a symlink as the root's own last component (the
    porcelain's ``records/``); everything below the root is never followed.
    """

    def __init__(self, root: Path | str, *, follow_root: bool = True) -> None:
        self.root = Path(root)
        try:
            self._root_fd = open_dir(self.root, create=True, follow=follow_root)
        except StoreError as exc:
            raise StoreError(f"cannot use {self.root} as a file store: {exc.message}") from exc
        self._closer = weakref.finalize(self, os.close, self._root_fd)
        # Why: keeps redaction apart from puts of this process; puts need no lock
        # among themselves because os.link never replaces a taken version name.
        self._gate = _Gate()

    # -- port ------------------------------------------------------------------------

    def put(self, record: MemoryRecord) -> int:
        """Validate ``record`` and append it as the next version file of its id."""
        data = check_record(record).canonical_bytes()
        name = id_hex(record.id)
        with self._gate.shared():
            try:
                try:
                    directory = dir_fd(self._root(), name)
                except FileNotFoundError:
                    with contextlib.suppress(FileExistsError):  # a concurrent first put
                        os.mkdir(name, 0o755, dir_fd=self._root())
                        fsync_dir(self._root())
                    directory = dir_fd(self._root(), name)
            except PathError as exc:
                raise StoreError(f"record directory {self.root / name}: {exc.message}") from exc
            except OSError as exc:
                raise _os_error(f"create {self.root / name}", exc) from exc
            with closing_fd(directory):
                return self._put_in(directory, data)

    def _put_in(self, directory: int, data: bytes) -> int:
        try:
            temp = _write_temp(directory, data)
        except OSError as exc:
            raise _os_error("write a version file", exc) from exc
        try:
            number = self._link_next(temp, directory)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp, dir_fd=directory)
        fsync_dir(directory)
        return number

    def get(self, record_id: str) -> MemoryRecord:
        """The latest version of ``record_id``."""
        with self._open_record(record_id) as (directory, names):
            return self._read(directory, names[-1], record_id)

    def history(self, record_id: str) -> tuple[MemoryRecord, ...]:
        """Every version of ``record_id``, in version-file name order."""
        with self._open_record(record_id) as (directory, names):
            return tuple(self._read(directory, name, record_id) for name in names)

    def ids(self) -> tuple[str, ...]:
        """Every id with at least one version file, ascending."""
        found = []
        with os.scandir(self._root()) as entries:
            for entry in entries:
                if (_RECORD_DIR.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False)
                        and self._has_versions(entry.name)):
                    found.append("mem:" + entry.name)
        return tuple(sorted(found))

    def __contains__(self, record_id: object) -> bool:
        try:
            return self._has_versions(id_hex(record_id))
        except MemspecError:
            return False

    def close(self) -> None:
        """Release the root directory handle (idempotent); later calls raise StoreError."""
        self._closer()

    # -- maintenance (not part of the port) ------------------------------------------

    def remove_temp_files(self) -> tuple[str, ...]:
        """Remove temp files left by writers that are gone; returns their paths.

        A temp file names its writer's process id; one whose process still runs
        is left alone (it is about to be linked or removed by that writer).
        """
        removed: list[str] = []
        with os.scandir(self._root()) as entries:
            names = [e.name for e in entries
                     if _RECORD_DIR.fullmatch(e.name) and e.is_dir(follow_symlinks=False)]
        for name in sorted(names):
            try:
                directory = dir_fd(self._root(), name)
            except (OSError, StoreError):
                continue
            with closing_fd(directory):
                for entry in sorted(os.listdir(directory)):
                    match = _TEMP.fullmatch(entry)
                    if match is None or (match.group(1) and pid_alive(int(match.group(1)))):
                        continue
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(entry, dir_fd=directory)
                        removed.append(f"{name}/{entry}")
        return tuple(removed)

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
            with closing_fd(self._record_dir(id_hex(record_id))) as directory:
                done: set[str] = set()
                try:
                    while pending := [n for n in self._version_files(directory)
                                      if n not in done]:
                        for name in pending:
                            temp = _write_temp(directory, data)
                            os.replace(temp, name, src_dir_fd=directory, dst_dir_fd=directory)
                            done.add(name)
                except OSError as exc:
                    raise _os_error(f"redact {record_id}", exc) from exc
                fsync_dir(directory)
        return tombstone

    # -- internals -------------------------------------------------------------------

    def _root(self) -> int:
        if not self._closer.alive:
            raise StoreError(f"store {self.root} is closed")
        return self._root_fd

    def _record_dir(self, name: str) -> int:
        try:
            return dir_fd(self._root(), name)
        except PathError as exc:
            raise StoreError(f"record directory {self.root / name}: {exc.message}") from exc
        except OSError as exc:
            raise _os_error(f"open {self.root / name}", exc) from exc

    def _has_versions(self, name: str) -> bool:
        try:
            directory = dir_fd(self._root(), name)
        except (FileNotFoundError, PathError):
            return False
        with closing_fd(directory):
            return bool(self._version_files(directory))

    def _link_next(self, temp: str, directory: int) -> int:
        existing = self._version_files(directory)
        number = int(existing[-1][:6]) + 1 if existing else 1
        while number <= MAX_VERSION:
            try:
                os.link(temp, version_name(number), src_dir_fd=directory,
                        dst_dir_fd=directory, follow_symlinks=False)
            except FileExistsError:
                number += 1
                continue
            except OSError as exc:
                raise _os_error("link a version file", exc) from exc
            return number
        raise StoreError(f"a record directory already holds {MAX_VERSION} versions",
                         requirement="STORE-9")

    @staticmethod
    def _version_files(directory: int) -> list[str]:
        return [name for name in sorted(os.listdir(directory)) if _VERSION.fullmatch(name)]

    @contextmanager
    def _open_record(self, record_id: str) -> Iterator[tuple[int, list[str]]]:
        """The record's directory fd and its version names, 000001 up to the last."""
        name = id_hex(record_id)
        try:
            directory = dir_fd(self._root(), name)
        except FileNotFoundError:
            raise NotFoundError(f"no record {record_id}", requirement="STORE-4") from None
        except PathError as exc:
            raise StoreError(f"record directory {self.root / name}: {exc.message}") from exc
        with closing_fd(directory):
            names = self._version_files(directory)
            if not names:
                raise NotFoundError(f"no record {record_id}", requirement="STORE-4")
            if names[0] == version_name(0):
                raise StoreError(f"stray version file {self.root / name / names[0]}: version "
                                 "numbers start at 000001", requirement="STORE-9")
            last = int(names[-1][:6])
            if len(names) != last:
                # Why: a listing that races a writer's link can miss a name; version numbers
                # on disk have no gaps (n + 1 is linked only once n exists), so name them all.
                names = [version_name(n) for n in range(1, last + 1)]
            yield directory, names

    def _read(self, directory: int, name: str, record_id: str) -> MemoryRecord:
        path = self.root / id_hex(record_id) / name
        try:
            data = read_regular_at(directory, name, limit=DEFAULT_LIMITS.max_text_bytes,
                                   label=str(path))
            record = MemoryRecord.model_validate(parse_json(data))
        except StoreError as exc:
            raise StoreError(f"unreadable version file {path}: {exc.message}") from exc
        except MemspecError as exc:
            raise StoreError(f"corrupt version file {path}: {exc}") from exc
        except OSError as exc:
            raise StoreError(f"unreadable version file {path}: {exc.strerror}") from exc
        if record.id != record_id:
            raise StoreError(f"version file {path} holds {record.id}, not {record_id}")
        return record
