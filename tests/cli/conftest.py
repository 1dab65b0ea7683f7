from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memspec.data import json_resource

SCRIPT = Path(sys.executable).with_name("memspec")


def published() -> dict[str, Any]:
    return dict(copy.deepcopy(json_resource("vectors", "published/fg-agent-memory-0.1.json")))


@pytest.fixture
def memory_file() -> dict[str, Any]:
    """The published signed memory file (3 records, signed by key A)."""
    file: dict[str, Any] = published()["artifacts"]["memory_file"]["file"]
    return file


@pytest.fixture
def seed_a() -> str:
    return str(published()["keys"]["seed_a_hex"])


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, Any], Path]:
    def _write(name: str, value: Any) -> Path:
        path = tmp_path / name
        path.write_text(value if isinstance(value, str) else json.dumps(value), encoding="utf-8")
        return path
    return _write


class Run:
    def __init__(self, proc: subprocess.CompletedProcess[str]) -> None:
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture
def memspec() -> Callable[..., Run]:
    """Run the real console script in a subprocess."""
    def _run(*args: str | Path, stdin: str | None = None) -> Run:
        proc = subprocess.run([str(SCRIPT), *map(str, args)], input=stdin, capture_output=True,
                              text=True, timeout=120)
        assert "Traceback" not in proc.stderr, proc.stderr
        return Run(proc)
    return _run
