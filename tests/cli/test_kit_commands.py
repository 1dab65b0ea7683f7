"""smoke, vectors, report, audit and certify through the real console script."""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import SCRIPT, Run

ENGINE = Path(sys.executable).with_name("memspec-reference-engine")


def test_smoke_reference_in_process_and_as_process(memspec: Callable[..., Run]) -> None:
    assert memspec("smoke", "--engine", "reference").code == 0
    run = memspec("smoke", "--engine-cmd", f"{ENGINE} --store sqlite", "--json")
    assert run.code == 0, run.out + run.err
    assert run.json()["ok"] is True


def test_smoke_unknown_engine_is_typed(memspec: Callable[..., Run]) -> None:
    run = memspec("smoke", "--engine", "no-such-engine")
    assert run.code == 2  # a usage error
    assert "reference" in run.err  # the message lists the engines that exist


def test_vectors_list_and_check(memspec: Callable[..., Run]) -> None:
    run = memspec("vectors", "list", "--json")
    assert run.code == 0
    files = {row["file"] for row in run.json()["files"]}
    assert {"canonical-json.json", "records.json", "proposals.json"} <= files
    run = memspec("vectors", "check", "--engine", "reference", "--file", "timestamps", "--json")
    assert run.code == 0, run.out + run.err
    assert run.json()["selected"] > 40 and run.json()["failed"] == []
    assert memspec("vectors", "check").code == 2  # an engine is required


def test_report_renders_markdown_html_and_rejects_garbage(memspec: Callable[..., Run],
                                                          write: Callable[[str, Any], Path],
                                                          tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    run = memspec("vectors", "check", "--engine", "reference", "--file", "legality")
    assert run.code == 0
    # a real report from a certify run of a small engine subset is produced by the kit
    kit = memspec("certify", "--engine", "reference", "--report", report, "--json")
    assert kit.code == 0, kit.out[-2000:] + kit.err[-2000:]
    assert kit.json()["verdict"] == "certified"
    assert report.with_suffix(".md").is_file()
    assert report.with_name("report-badge.svg").read_text().startswith("<svg")
    endpoint = json.loads(report.with_name("report-badge.json").read_text())
    assert endpoint["schemaVersion"] == 1 and endpoint["message"].endswith(" profiles")
    markdown = memspec("report", report)
    assert markdown.code == 0 and "# Conformance report" in markdown.out
    html = memspec("report", report, "--format", "html")
    assert html.code == 0 and html.out.startswith("<!doctype html>")
    assert memspec("report", report, "--verify").code == 1  # unsigned
    assert memspec("report", write("bad.json", {"engine": 1})).code == 1


def test_audit_of_a_memory_file(memspec: Callable[..., Run], write: Callable[[str, Any], Path],
                                memory_file: dict[str, Any]) -> None:
    run = memspec("audit", write("m.json", memory_file), "--format", "json")
    assert run.code == 0, run.err
    first = json.loads(run.out)
    again = json.loads(memspec("audit", write("n.json", memory_file), "--format", "json").out)
    assert first == again  # content-addressed: the same input gives the same report


def test_certify_jobs_runs_the_kit_under_xdist(memspec: Callable[..., Run], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from memspec.cli import _kit
    from memspec.cli._io import UsageError

    assert memspec("certify", "--engine", "reference", "--jobs", "0").code == 2
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(UsageError, match="pytest-xdist"):
        _kit.jobs_args(2)
    monkeypatch.undo()
    pytest.importorskip("xdist", reason="pytest-xdist is not installed")
    report = tmp_path / "report.json"
    kit = memspec("certify", "--engine", "reference", "--jobs", "2", "--report", report, "--json")
    assert kit.code == 0, kit.out[-2000:] + kit.err[-2000:]
    assert kit.json()["verdict"] == "certified"
    assert json.loads(report.read_text())["mode"] == "in-process"


# ----------------------------------------------------------------- the documented commands

ROOT = Path(__file__).resolve().parents[2]
NODE = shutil.which("node")
JS_CMD = 'memspec {verb} --engine-cmd "node examples/js-engine/engine.js"'
DOCUMENTED = {
    "docs/guide/certify-other-language.md": [
        JS_CMD.format(verb="smoke"),
        JS_CMD.format(verb="certify") + " --report report.json",
    ],
    "examples/js-engine/README.md": [JS_CMD.format(verb="certify")],
    "docs/guide/certify-python.md": [
        "PYTHONPATH=. memspec smoke --engine mypackage.engine:create_engine",
        "memspec certify --engine mypackage.engine:create_engine --report report.json",
    ],
    "docs/guide/ci-gate.md": [
        'memspec certify --engine-cmd "./target/release/my-engine" '
        "--report conformance-report.json",
        "memspec certify --engine mypackage.engine:create_engine --report "
        "conformance-report.json",
    ],
}


def _as_written(cwd: Path, command: str, env: dict[str, str] | None = None) -> Run:
    """``command`` (a line from the docs) run by the real console script from ``cwd``."""
    argv = shlex.split(command)
    assert argv[0] == "memspec"
    proc = subprocess.run([str(SCRIPT), *argv[1:]], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env=None if env is None else {**os.environ, **env})
    assert "Traceback" not in proc.stderr, proc.stderr
    return Run(proc)


@pytest.mark.parametrize("doc", sorted(DOCUMENTED))
def test_the_documented_commands_are_in_the_docs(doc: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    for command in DOCUMENTED[doc]:
        assert command in text, f"{doc} no longer shows {command!r}: update DOCUMENTED"


@pytest.fixture
def repo_root(tmp_path: Path) -> Path:
    """A folder laid out like the repository root (examples/ as in the checkout), so the
    documented relative commands run as written without writing into the checkout."""
    (tmp_path / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    return tmp_path


@pytest.mark.skipif(NODE is None, reason="node is not on PATH (the JavaScript example needs it)")
def test_js_example_commands_run_as_written(repo_root: Path) -> None:
    smoke_line, certify_line = DOCUMENTED["docs/guide/certify-other-language.md"]
    run = _as_written(repo_root, smoke_line)
    assert run.code == 0, run.out + run.err
    vectors = JS_CMD.format(verb="vectors check") + " --file canonical-json --json"
    run = _as_written(repo_root, vectors)
    assert run.code == 0, run.out + run.err
    assert run.json()["failed"] == [] and run.json()["selected"] > 40
    run = _as_written(repo_root, certify_line)
    # The command works from where the user stands: the engine started, answered every test
    # and was judged (whether the example meets every newer vector is its own business,
    # tests/test_js_engine.py).
    assert run.code in (0, 1), run.out[-3000:] + run.err[-3000:]
    report = json.loads((repo_root / "report.json").read_text(encoding="utf-8"))
    assert report["engine"]["name"] == "memspec-js-example" and report["mode"] == "process"
    assert "fault" not in report["engine"]
    outcomes = {t["outcome"] for r in report["requirements"] for t in r["tests"]}
    assert "errored" not in outcomes and "passed" in outcomes
    assert {p for p, e in report["profiles"].items() if e["claimed"]} >= {
        "format", "signing", "store"}
    assert f"verdict: {report['verdict']}" in run.out


def test_relative_engine_command_and_pythonpath_run_as_written(repo_root: Path) -> None:
    program = repo_root / "target" / "release" / "my-engine"
    program.parent.mkdir(parents=True)
    program.write_text(f"#!/bin/sh\nexec {shlex.quote(str(ENGINE))} \"$@\"\n", encoding="utf-8")
    program.chmod(0o755)
    package = repo_root / "mypackage"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "engine.py").write_text(
        "from memspec.reference import create_engine as _reference\n\n\n"
        "def create_engine():\n    return _reference()\n", encoding="utf-8")
    process_line, python_line = DOCUMENTED["docs/guide/ci-gate.md"]
    for line, env in ((process_line, None), (python_line, {"PYTHONPATH": "."})):
        # the cheap variants of the documented certify: the same engine option, from the
        # same folder, through smoke and a vectors check
        engine_part = line.removeprefix("memspec certify ").split(" --report")[0]
        run = _as_written(repo_root, f"memspec smoke {engine_part}", env)
        assert run.code == 0, run.out + run.err
        run = _as_written(repo_root, f"memspec vectors check {engine_part} --file timestamps "
                          "--json", env)
        assert run.code == 0, run.out + run.err
        assert run.json()["failed"] == [] and run.json()["selected"] > 40
    # The Python guide's smoke, as written: PYTHONPATH=. in front, from the package's folder.
    env_part, smoke_line = DOCUMENTED["docs/guide/certify-python.md"][0].split(" ", 1)
    name, value = env_part.split("=", 1)
    run = _as_written(repo_root, smoke_line, {name: value})
    assert run.code == 0, run.out + run.err
    # Without it the module is not found, and the message says which module and why.
    run = _as_written(repo_root, smoke_line, {"PYTHONPATH": ""})
    assert run.code == 2 and "cannot import 'mypackage.engine'" in run.err, run.err


def test_an_engine_that_dies_at_start_up_stops_certify_at_once(tmp_path: Path) -> None:
    dying = tmp_path / "dying.py"
    dying.write_text("import sys\nsys.stderr.write(\"Error: Cannot find module './lib'\\n\")\n"
                     "raise SystemExit(1)\n", encoding="utf-8")
    line = f"memspec certify --engine-cmd \"{sys.executable} dying.py\" --json"
    run = _as_written(tmp_path, line)
    assert run.code == 2, run.out + run.err
    shown = run.out + run.err  # --json: the error is a JSON document on stdout
    assert "did not start" in shown and "Cannot find module './lib'" in shown
    assert not (tmp_path / "memspec-report").exists()
    smoke_run = _as_written(tmp_path, f"memspec smoke --engine-cmd \"{sys.executable} dying.py\""
                            " --json")
    assert smoke_run.code == 1
    assert smoke_run.json()["stderr"] == ["Error: Cannot find module './lib'"]
