"""ruff on everything; mypy --strict on the library as it is installed, and on tools/ and
benchmarks/ against it.

The package-dir mapping (conformance/ -> memspec.conformance, ...) is invisible
to mypy in the source tree, so the strict check runs on a plain install of the
package into a scratch folder: exactly the code users get.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    found = shutil.which(name) or str(Path(sys.executable).with_name(name))
    if not Path(found).exists():
        pytest.skip(f"{name} is not installed (pip install -e '.[test]')")
    return found


def test_ruff_is_clean() -> None:
    run = subprocess.run([_tool("ruff"), "check", "src", "conformance", "reference", "tools",
                          "benchmarks", "tests"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-4000:]


def test_mypy_strict_on_the_installed_package(tmp_path: Path) -> None:
    _tool("mypy")
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--target", str(target), str(ROOT)], check=True, capture_output=True)
    run = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                          "-p", "memspec"], cwd=target, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-4000:]
    # The repository's own programs, against the same installed package.
    run = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                          str(ROOT / "tools"), str(ROOT / "benchmarks")], cwd=target,
                         env={**os.environ, "MYPYPATH": str(target)},
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-4000:]
