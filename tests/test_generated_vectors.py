"""vectors/*.json are exactly what tools/gen_vectors.py generates."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = ROOT / "tools" / "gen_vectors.py"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("vectors")
    subprocess.run([sys.executable, str(GENERATOR), "--out", str(out)], check=True,
                   capture_output=True, text=True)
    return out


def test_same_file_set(generated: Path) -> None:
    assert sorted(p.name for p in generated.glob("*.json")) == sorted(
        p.name for p in (ROOT / "vectors").glob("*.json"))


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "vectors").glob("*.json")))
def test_byte_identical(generated: Path, name: str) -> None:
    assert (generated / name).read_bytes() == (ROOT / "vectors" / name).read_bytes(), (
        f"vectors/{name} is stale: run python tools/gen_vectors.py")


def test_check_mode_passes() -> None:
    done = subprocess.run([sys.executable, str(GENERATOR), "--check"], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
