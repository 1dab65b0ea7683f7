"""The distribution ships every package and data file, and the wheel works outside the repo."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAPPING = {"src/memspec": "memspec", "conformance": "memspec.conformance",
           "reference": "memspec.reference", "schemas": "memspec.schemas",
           "spec": "memspec.spec", "vectors": "memspec.vectors"}


def _declared() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return set(config["tool"]["setuptools"]["packages"])


def test_every_package_is_declared() -> None:
    # Every folder counts, not only those with __init__.py: setuptools treats a data
    # folder as a namespace package and warns (or drops it) when it is not listed.
    found = set()
    for folder, package in MAPPING.items():
        for sub in [ROOT / folder, *(ROOT / folder).rglob("*")]:
            if not sub.is_dir() or "__pycache__" in sub.parts or sub.name.endswith(".egg-info"):
                continue
            rel = sub.relative_to(ROOT / folder)
            found.add(".".join([package, *rel.parts]))
    assert found - _declared() == set(), "packages missing from pyproject.toml"
    assert _declared() - found == set(), "pyproject.toml lists packages the tree does not have"


@pytest.mark.skipif(os.environ.get("MEMSPEC_SKIP_WHEEL") == "1", reason="MEMSPEC_SKIP_WHEEL=1")
def test_wheel_installed_outside_the_repo_certifies(tmp_path: Path) -> None:
    """Build the wheel, install it in a fresh venv, and use it from a folder outside the repo."""
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)],
                   check=True, capture_output=True)
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True, system_site_packages=True)
    python = env_dir / "bin" / "python"
    wheel = next(dist.glob("memspec-*.whl"))
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps",
                    "--force-reinstall", str(wheel)], check=True, capture_output=True)
    work = tmp_path / "elsewhere"
    work.mkdir()
    probe = (
        "import memspec, memspec.conformance, memspec.reference\n"
        "from memspec.data import json_resource, vector_files, spec_text\n"
        "from memspec._schemas import schema_names, validator_for\n"
        f"assert memspec.__file__.startswith({str(env_dir)!r}), memspec.__file__\n"
        "names = schema_names(); [validator_for(n) for n in names]\n"
        "files = vector_files(); [json_resource('vectors', f) for f in files]\n"
        "assert 'MUST' in spec_text()\n"
        "print(len(names), len(files))\n"
    )
    out = subprocess.run([str(python), "-c", probe], cwd=work, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    run = subprocess.run([str(env_dir / "bin" / "memspec"), "certify", "--engine", "reference",
                          "--report", str(work / "report.json")], cwd=work, capture_output=True,
                         text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert (work / "report.json").is_file()
