"""Safe file access: paths held inside a root, no planted link followed, atomic writes.

Everything that reads or writes a file on someone else's behalf goes through here:
the MCP server's ``export``, the porcelain's ``export``/``load``, the reference file
store and search index, and the command line's ``write_output``.

- :func:`inside` turns a caller's relative path into components that stay inside a
  root: no absolute path, no ``~``, no ``..``, no empty or NUL component.
- :func:`open_dir` / :func:`walk` open directories by dir fd with ``O_NOFOLLOW`` at
  every component, so a symlink planted anywhere below the root is refused.
- :func:`read_regular` / :func:`read_regular_at` read only regular files (a FIFO or
  ``/dev/zero`` is refused after an ``O_NONBLOCK`` open and ``fstat``), with a bounded
  read that never trusts ``st_size``.
- :func:`write_atomic` / :func:`write_atomic_at` write a temp file created with
  ``O_CREAT|O_EXCL|O_NOFOLLOW`` under an unpredictable name in the target directory,
  fsync it, then link it into place (refusing an existing name) or, only when
  ``overwrite`` is asked for, rename over it; the directory is fsynced after.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from memspec._errors import LimitError, StoreError

__all__ = [
    "PathError",
    "closing_fd",
    "dir_fd",
    "fsync_dir",
    "inside",
    "lstat_at",
    "open_dir",
    "pid_alive",
    "read_regular",
    "read_regular_at",
    "remove_dead_temps",
    "remove_link_at",
    "walk",
    "write_atomic",
    "write_atomic_at",
]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _CLOEXEC
_READ_CHUNK = 1 << 20
#: The temp names :func:`write_atomic_at` makes: ``.NAME.PID-RANDOM.tmp``.
_TEMP = re.compile(r"\..+\.([0-9]+)-[0-9a-f]{16}\.tmp")


class PathError(StoreError):
    """A path that leaves its root, crosses a symlink, or names the wrong kind of file."""


def _describe(exc: OSError) -> str:
    return exc.strerror or str(exc)


def inside(user_path: str) -> tuple[str, ...]:
    """The components of ``user_path``, refused unless it stays inside its root.

    ``.`` components are dropped; an absolute path, a leading ``~``, a ``..``
    component, a NUL byte or a path naming no file at all is a :class:`PathError`.
    """
    if not isinstance(user_path, str) or not user_path:
        raise PathError("a path must be a non-empty string")
    if "\x00" in user_path:
        raise PathError("a path must not contain NUL")
    if user_path.startswith(("/", "\\")) or os.path.isabs(user_path):
        raise PathError(f"{user_path!r} is absolute: give a path inside the memory directory")
    if user_path.startswith("~"):
        raise PathError(f"{user_path!r} starts with '~': give a path inside the memory directory")
    parts = tuple(part for part in user_path.split("/") if part not in ("", "."))
    if not parts:
        raise PathError(f"{user_path!r} names no file")
    if ".." in parts:
        raise PathError(f"{user_path!r} climbs out with '..'")
    return parts


def open_dir(path: str | os.PathLike[str], *, create: bool = False,
             follow: bool = True) -> int:
    """A directory fd for ``path`` (created, parents too, when ``create``).

    ``follow=False`` refuses a symlink as the last component; the components
    before it are the caller's own choice and are followed.
    """
    target = Path(path)
    try:
        if create:
            target.mkdir(parents=True, exist_ok=True)
        return os.open(target, _DIR_FLAGS | (0 if follow else _NOFOLLOW))
    except FileExistsError as exc:
        raise PathError(f"{target} exists and is not a directory") from exc
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise PathError(f"{target} is a symlink or not a directory; refusing to follow "
                            "it") from exc
        raise StoreError(f"cannot open directory {target}: {_describe(exc)}") from exc


def dir_fd(parent: int, name: str, *, create: bool = False, mode: int = 0o755) -> int:
    """The fd of directory ``name`` inside ``parent``, never through a symlink."""
    if create:
        try:
            os.mkdir(name, mode, dir_fd=parent)
        except FileExistsError:
            pass
        except OSError as exc:
            raise StoreError(f"cannot create directory {name}: {_describe(exc)}") from exc
    try:
        return os.open(name, _DIR_FLAGS | _NOFOLLOW, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise PathError(f"{name} is a symlink or not a directory; refusing to follow "
                            "it") from exc
        raise
    # FileNotFoundError propagates: callers decide whether a missing directory matters.


def walk(root: int, parts: Sequence[str]) -> int:
    """The fd of the directory ``root/parts[0]/.../parts[-1]``, no symlink followed."""
    fd = os.dup(root)
    try:
        for part in parts:
            try:
                child = dir_fd(fd, part)
            except FileNotFoundError as exc:
                raise PathError(f"no directory {'/'.join(parts)}") from exc
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def closing_fd(fd: int) -> Iterator[int]:
    """Close ``fd`` on leaving the block."""
    try:
        yield fd
    finally:
        os.close(fd)


def fsync_dir(fd: int) -> None:
    """fsync a directory fd; best effort where the filesystem refuses it."""
    with contextlib.suppress(OSError):
        os.fsync(fd)


def lstat_at(parent: int, name: str) -> os.stat_result | None:
    """``lstat`` of ``name`` in ``parent``; None when it does not exist."""
    try:
        return os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None


def remove_link_at(parent: int, name: str) -> bool:
    """Unlink ``name`` in ``parent`` when it is anything but a regular file or directory.

    Returns whether something was removed (a symlink is removed itself, never
    its target).
    """
    info = lstat_at(parent, name)
    if info is None or stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode):
        return False
    os.unlink(name, dir_fd=parent)
    return True


def _read_fd(fd: int, label: str, limit: int) -> bytes:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise PathError(f"{label} is not a regular file")
    if info.st_size > limit:
        raise LimitError(f"{label}: {info.st_size} bytes exceed the limit of {limit}")
    chunks: list[bytes] = []
    total = 0
    # Why a bounded loop: st_size is only a hint (a file may grow while it is read).
    while total <= limit:
        chunk = os.read(fd, min(_READ_CHUNK, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if total > limit:
        raise LimitError(f"{label}: more than {limit} bytes")
    return b"".join(chunks)


def read_regular_at(parent: int, name: str, *, limit: int, label: str | None = None) -> bytes:
    """The bytes of regular file ``name`` in ``parent`` (no symlink, at most ``limit``).

    FileNotFoundError propagates; any other kind of file is a :class:`PathError`.
    """
    shown = label or name
    try:
        fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=parent)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PathError(f"{shown} is a symlink; refusing to follow it") from exc
        raise StoreError(f"cannot read {shown}: {_describe(exc)}") from exc
    with closing_fd(fd):
        return _read_fd(fd, shown, limit)


def read_regular(path: str | os.PathLike[str], *, limit: int, follow: bool = True) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them.

    A FIFO, a device or a directory is refused without blocking on it. With
    ``follow=False`` a symlink as the last component is refused too.
    FileNotFoundError propagates.
    """
    flags = os.O_RDONLY | _NONBLOCK | _CLOEXEC | (0 if follow else _NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PathError(f"{path} is a symlink; refusing to follow it") from exc
        if exc.errno == errno.EISDIR:
            raise PathError(f"{path} is not a regular file") from exc
        raise StoreError(f"cannot read {path}: {_describe(exc)}") from exc
    with closing_fd(fd):
        return _read_fd(fd, str(path), limit)


def _temp_at(parent: int, name: str, data: bytes, mode: int) -> str:
    """A fully written, fsynced temp file beside ``name``; returns its name."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    while True:
        temp = f".{name}.{os.getpid()}-{secrets.token_hex(8)}.tmp"
        try:
            fd = os.open(temp, flags, mode, dir_fd=parent)
        except FileExistsError:
            continue
        break
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=parent)
        raise
    return temp


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` may still be writing (this process, or one that exists)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_dead_temps(parent: int) -> tuple[str, ...]:
    """Remove the temp files of :func:`write_atomic_at` in ``parent`` whose writer is gone."""
    removed = []
    for name in sorted(os.listdir(parent)):
        match = _TEMP.fullmatch(name)
        if match is None or pid_alive(int(match.group(1))):
            continue
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=parent)
            removed.append(name)
    return tuple(removed)


def write_atomic_at(parent: int, name: str, data: bytes, *, mode: int = 0o644,
                    overwrite: bool = False) -> None:
    """Write ``data`` as ``name`` in directory ``parent``, all or nothing.

    Without ``overwrite`` an existing name (of any kind, a dangling symlink
    included) is refused with :class:`PathError`; with it, only a regular file
    is replaced, and a symlink in its place is replaced itself, never followed.
    A write that fails leaves no temp file behind; OSError becomes StoreError.
    """
    if not name or "/" in name or name in (".", ".."):
        raise PathError(f"{name!r} is not a file name")
    existing = lstat_at(parent, name)
    if existing is not None:
        if not overwrite:
            raise PathError(f"{name} exists; refusing to overwrite it")
        if not stat.S_ISREG(existing.st_mode):
            raise PathError(f"{name} exists and is not a regular file; refusing to replace it")
    try:
        temp = _temp_at(parent, name, data, mode)
    except OSError as exc:
        raise StoreError(f"cannot write {name}: {_describe(exc)}") from exc
    try:
        if overwrite:
            os.replace(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
        else:
            _link_new(parent, temp, name)
    except FileExistsError as exc:
        raise PathError(f"{name} exists; refusing to overwrite it") from exc
    except OSError as exc:
        raise StoreError(f"cannot write {name}: {_describe(exc)}") from exc
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=parent)
    fsync_dir(parent)


def _link_new(parent: int, temp: str, name: str) -> None:
    """Give ``temp`` the name ``name``, failing if ``name`` exists (atomically where links are)."""
    try:
        os.link(temp, name, src_dir_fd=parent, dst_dir_fd=parent, follow_symlinks=False)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV,
                             errno.EMLINK):
            raise
        # Why: a filesystem without hard links; the check and the rename are two steps.
        if lstat_at(parent, name) is not None:
            raise FileExistsError(errno.EEXIST, "exists", name) from exc
        os.rename(temp, name, src_dir_fd=parent, dst_dir_fd=parent)


def write_atomic(path: str | os.PathLike[str], data: bytes, *, mode: int = 0o644,
                 overwrite: bool = False) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`write_atomic_at`).

    The directory part of ``path`` is the caller's and is followed; the file
    name itself is never followed.
    """
    target = Path(path)
    if not target.name or target.name in (".", ".."):
        raise PathError(f"{path!s} is not a file name to write to")
    try:
        parent = os.open(target.parent, _DIR_FLAGS)
    except OSError as exc:
        raise PathError(f"cannot write {path!s}: directory {target.parent}: "
                        f"{_describe(exc)}") from exc
    with closing_fd(parent):
        write_atomic_at(parent, target.name, data, mode=mode, overwrite=overwrite)
