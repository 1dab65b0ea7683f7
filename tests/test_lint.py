"""ruff on everything; mypy --strict on the library as it is installed, and on tools/,
benchmarks/ and tests/ against it.

The package-dir mapping (conformance/ -> memspec.conformance, ...) is invisible
to mypy in the source tree, so the strict check runs on a plain install of the
package into a scratch folder: exactly the code users get. The install is built
from a clean copy of the sources, so a stale build/ folder in the working tree
cannot leak a module that was since removed into the check.
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


# Build output, caches and local environments: never part of what a user installs.
_NOT_SOURCES = shutil.ignore_patterns(".git", ".venv", "build", "dist", "site", "*.egg-info",
                                      "__pycache__", ".mypy_cache", ".ruff_cache",
                                      ".pytest_cache", ".hypothesis", "node_modules",
                                      "memspec-report", "report")


def test_mypy_strict_on_the_installed_package(tmp_path: Path) -> None:
    _tool("mypy")
    target = tmp_path / "site"
    sources = tmp_path / "sources"
    shutil.copytree(ROOT, sources, ignore=_NOT_SOURCES)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--target", str(target), str(sources)], check=True, capture_output=True)
    run = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                          "-p", "memspec"], cwd=target, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-4000:]
    # The repository's own programs and tests, against the same installed package; tools/
    # and fuzz/ are on the path because tests import their modules (gen_docs, targets, ...)
    # as top-level ones.
    run = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                          str(ROOT / "tools"), str(ROOT / "benchmarks"), str(ROOT / "tests")],
                         cwd=target,
                         env={**os.environ,
                              "MYPYPATH": os.pathsep.join([str(target), str(ROOT / "tools"),
                                                          str(ROOT / "fuzz")])},
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-4000:]
