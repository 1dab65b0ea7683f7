"""Small real filesystems for the fault suites: a size-bounded tmpfs, filled or read-only.

Mounting needs root (or a user namespace the machine does not offer); where it is
impossible the fixture skips with the reason. Every mount is unmounted (lazily, so
an open handle cannot keep it) and its directory removed when the test ends.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["fill", "free", "remount_read_only", "small_tmpfs"]

_PAGE = 4096


@contextlib.contextmanager
def small_tmpfs(size: str = "1m") -> Iterator[Path]:
    """A fresh tmpfs of ``size`` mounted on a temp directory (skips where impossible)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    if shutil.which("mount") is None:
        pytest.skip("no mount command on this machine")
    point = Path(tempfile.mkdtemp(prefix="memspec-tmpfs-"))
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs",
                           str(point)], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        point.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], capture_output=True, check=False)
        with contextlib.suppress(OSError):
            point.rmdir()


def fill(mount: Path) -> Path:
    """Fill ``mount`` to the last page with one filler file; returns the filler."""
    filler = mount / "filler.bin"
    chunk = b"\0" * _PAGE
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        while True:
            os.write(fd, chunk)
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
    finally:
        os.close(fd)
    return filler


def free(filler: Path, pages: int) -> None:
    """Give back ``pages`` pages of the filler."""
    size = filler.stat().st_size
    os.truncate(filler, max(0, size - pages * _PAGE))


def remount_read_only(mount: Path) -> None:
    """Remount ``mount`` read-only."""
    done = subprocess.run(["mount", "-o", "remount,ro", str(mount)], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot remount read-only: {done.stderr.strip()}")
