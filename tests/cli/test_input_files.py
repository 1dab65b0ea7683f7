"""Input paths are read once, as bounded regular files: a FIFO or a directory is refused at
once (exit 2), never blocked on or read without end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX FIFOs")


def _memspec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memspec", *args], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("command", ["validate", "canonicalize", "fingerprint"])
def test_a_fifo_or_directory_is_refused_without_blocking(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "input.json"
    os.mkfifo(fifo)
    folder = tmp_path / "folder.json"
    folder.mkdir()
    for path in (fifo, folder):
        run = _memspec(command, str(path))
        assert run.returncode == 2, run.stderr
        assert "not a regular file" in run.stderr and "Traceback" not in run.stderr
