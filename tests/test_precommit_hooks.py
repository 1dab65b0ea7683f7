"""The pre-commit hooks (``.pre-commit-hooks.yaml``): well formed, and each hook's command,
run exactly as pre-commit runs it (the entry split like a shell would, then the hook's args,
then the matching file names), passes a good memory file and fails a broken one.

``pre-commit try-repo`` itself builds the hook's environment with pip from the package
index, so that end-to-end run is opt-in: set ``MEMSPEC_TEST_PRECOMMIT=1`` (network needed).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memspec.data import json_resource

ROOT = Path(__file__).resolve().parents[1]
HOOKS_FILE = ROOT / ".pre-commit-hooks.yaml"
HOOK_IDS = ("memspec-validate", "memspec-verify")
SCRIPT = Path(sys.executable).with_name("memspec")


# -- reading the hooks file ----------------------------------------------------------------


def _scalar(text: str) -> Any:
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        return [_scalar(item) for item in text[1:-1].split(",") if item.strip()]
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return {"true": True, "false": False}.get(text, text)


def _parse_flat_list(text: str) -> list[dict[str, Any]]:
    """The subset of YAML the hooks file uses: a list of flat ``key: value`` mappings."""
    hooks: list[dict[str, Any]] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith("- "):
            hooks.append({})
            line = "  " + line[2:]
        assert hooks and line.startswith("  ") and ": " in line, f"unexpected line: {raw!r}"
        key, value = line.strip().split(": ", 1)
        hooks[-1][key] = _scalar(value)
    return hooks


def load_hooks() -> list[dict[str, Any]]:
    """The hooks file, read with PyYAML when it is installed, else with the flat parser."""
    text = HOOKS_FILE.read_text(encoding="utf-8")
    if importlib.util.find_spec("yaml") is None:
        return _parse_flat_list(text)
    import yaml  # type: ignore[import-untyped, unused-ignore]

    hooks = yaml.safe_load(text)
    assert hooks == _parse_flat_list(text), "the hooks file left the flat subset"
    assert isinstance(hooks, list)
    return hooks


def hook(hook_id: str) -> dict[str, Any]:
    (found,) = [h for h in load_hooks() if h["id"] == hook_id]
    return found


def test_the_hooks_file_declares_both_hooks() -> None:
    hooks = load_hooks()
    assert [h["id"] for h in hooks] == list(HOOK_IDS)
    for declared in hooks:
        assert {"id", "name", "entry", "language"} <= declared.keys()
        assert declared["language"] == "python"
        assert declared.get("pass_filenames", True) is True
        assert shlex.split(declared["entry"])[0] == "memspec"
    assert hook("memspec-validate")["entry"] == "memspec validate"
    assert hook("memspec-verify")["entry"] == "memspec verify"


@pytest.mark.parametrize("hook_id", HOOK_IDS)
def test_the_files_pattern_picks_memory_files(hook_id: str) -> None:
    pattern = re.compile(hook(hook_id)["files"])
    for path in ("memory/agent.json", "records.jsonl", "a/b/memory-file.json"):
        assert pattern.search(path), path
    for path in ("README.md", "memory/notes.txt", "agent.json.bak", "src/x.py"):
        assert not pattern.search(path), path


# -- running each hook as pre-commit would ---------------------------------------------------


def _memory_file() -> dict[str, Any]:
    """The published signed memory file (three records, signed by key A)."""
    published = json_resource("vectors", "published/fg-agent-memory-0.1.json")
    return copy.deepcopy(published["artifacts"]["memory_file"]["file"])


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """A good memory file, a JSONL stream of its records, and two broken memory files."""
    good = _memory_file()
    altered = _memory_file()
    altered["records"][1]["body"] = "The staging database is not Postgres."
    stripped = dict(_memory_file(), signature="")
    written = {
        "good": (json.dumps(good), "memory/agent.json"),
        "jsonl": ("\n".join(json.dumps(r) for r in good["records"]) + "\n",
                  "memory/records.jsonl"),
        "altered": (json.dumps(altered), "memory/altered.json"),
        "unsigned": (json.dumps(stripped), "memory/unsigned.json"),
        "garbage": ('{"format": "fg-agent-memory/0.1", "records": [', "memory/garbage.json"),
    }
    paths: dict[str, Path] = {}
    for name, (text, rel) in written.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        paths[name] = path
    return paths


def run_hook(hook_id: str, filenames: list[Path], *, args: tuple[str, ...] = (),
             cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The hook's entry + args + the file names its ``files`` pattern matches."""
    declared = hook(hook_id)
    command = [*shlex.split(declared["entry"]), *args]
    pattern = re.compile(declared["files"])
    matching = [str(f) for f in filenames if pattern.search(f.as_posix())]
    assert matching, "no file would be passed"
    # Why the console script next to this interpreter: it is what `memspec` is on the
    # hook environment's PATH; `python -m memspec` stands in when it is not installed.
    program = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "memspec"]
    proc = subprocess.run([*program, *command[1:], *matching], capture_output=True, text=True,
                          timeout=120, cwd=cwd)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_validate_passes_good_memory(files: dict[str, Path]) -> None:
    proc = run_hook("memspec-validate", [files["good"], files["jsonl"], files["unsigned"]])
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("broken", ["altered", "garbage"])
def test_validate_fails_broken_memory(files: dict[str, Path], broken: str) -> None:
    proc = run_hook("memspec-validate", [files["good"], files[broken]])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert files[broken].name in proc.stdout + proc.stderr


def test_verify_passes_signed_memory(files: dict[str, Path]) -> None:
    proc = run_hook("memspec-verify", [files["good"]])
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("broken", ["altered", "unsigned"])
def test_verify_fails_broken_memory(files: dict[str, Path], broken: str) -> None:
    proc = run_hook("memspec-verify", [files["good"], files[broken]])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert files[broken].name in proc.stdout + proc.stderr


def test_verify_args_allow_unsigned(files: dict[str, Path]) -> None:
    proc = run_hook("memspec-verify", [files["good"], files["unsigned"]],
                    args=("--allow-unsigned",))
    assert proc.returncode == 0, proc.stdout + proc.stderr


# -- pre-commit itself (opt-in) ----------------------------------------------------------------

_SOURCES = ("pyproject.toml", "README.md", "LICENSE", ".pre-commit-hooks.yaml", "src",
            "reference", "conformance", "schemas", "spec", "vectors")


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=memspec tests", "-c", "user.email=tests@memspec.dev",
                    "-c", "commit.gpgsign=false", *args], cwd=cwd, check=True,
                   capture_output=True, timeout=120)


@pytest.mark.skipif(os.environ.get("MEMSPEC_TEST_PRECOMMIT") != "1",
                    reason="pre-commit builds the hook environment with pip from the package "
                           "index (network); set MEMSPEC_TEST_PRECOMMIT=1 to run it")
def test_pre_commit_try_repo(tmp_path: Path, files: dict[str, Path]) -> None:
    pre_commit = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))
    if not Path(pre_commit).exists() or shutil.which("git") is None:
        pytest.skip("pre-commit and git are needed (pip install pre-commit)")
    # try-repo wants the hooks file committed: a throwaway repository holding the sources.
    hooks_repo = tmp_path / "hooks-repo"
    hooks_repo.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in _SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, hooks_repo / name, ignore=ignore)
        else:
            shutil.copy2(source, hooks_repo / name)
    _git("init", "-q", cwd=hooks_repo)
    _git("add", "-A", cwd=hooks_repo)
    _git("commit", "-q", "-m", "memspec hooks", cwd=hooks_repo)
    project = files["good"].parents[1]  # the folder holding memory/
    _git("init", "-q", cwd=project)
    _git("add", "-A", cwd=project)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}

    def try_repo(hook_id: str, *names: str) -> subprocess.CompletedProcess[str]:
        rels = [files[n].relative_to(project).as_posix() for n in names]
        return subprocess.run([pre_commit, "try-repo", str(hooks_repo), hook_id, "--files",
                               *rels], cwd=project, env=env, capture_output=True, text=True,
                              timeout=1800)

    ok = try_repo("memspec-validate", "good", "jsonl")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    broken = try_repo("memspec-validate", "good", "altered")
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "altered.json" in broken.stdout
    assert try_repo("memspec-verify", "good").returncode == 0
    assert try_repo("memspec-verify", "good", "unsigned").returncode == 1
