"""The kit under pytest-xdist: ``-n 2`` gives the report a one-process run gives.

Each run is a real ``python -m pytest`` subprocess on a small selection of the
kit's suites, once without xdist and once with ``-n 2``; the two JSON reports
must agree on everything but their timestamps (per-requirement outcomes and
tests, failing messages, profiles, verdict, suite digest, kit checks). One run
proves each worker starts its own engine process and the controller none; one has
a faulty engine, one an engine that kills its worker.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memspec.conformance._report import check_report

pytest.importorskip("xdist", reason="pytest-xdist is not installed (pip install pytest-xdist)")

SUITES = [f"memspec.conformance.suites.{name}" for name in (
    "test_protocol", "test_store", "test_format", "test_traceability")]
#: Deselects one test, so a deselection made on the workers must reach the report too.
SELECT = ["-k", "not history"]
TIMESTAMPS = ("started_at", "finished_at")

PID_LOGGING_ENGINE = '''
import os, runpy, sys
with open(sys.argv[1], "a", encoding="utf-8") as log:
    log.write(f"{os.getpid()}\\n")
sys.argv = sys.argv[:1]
runpy.run_module("memspec.reference", run_name="__main__")
'''

CRASHING_ENGINE = '''
import os
from pathlib import Path
from memspec.reference.engine import create_engine

MARK = Path(os.environ["CRASH_MARK"])


class Crashing:
    """The reference engine, except that the first canonicalize of the run kills the process."""

    def __init__(self):
        self.inner = create_engine()

    def describe(self):
        return self.inner.describe()

    def call(self, operation, arguments):
        if operation == "canonicalize" and not MARK.exists():
            MARK.write_text("crashed")
            os._exit(3)
        return self.inner.call(operation, arguments)

    def close(self):
        self.inner.close()


def create():
    return Crashing()
'''


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_XDIST", "PYTEST_ADDOPTS", "PYTEST_CURRENT"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))
    return {**env, **extra}


def run_kit(tmp_path: Path, name: str, *args: str, jobs: int = 0,
            env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str],
                                                        dict[str, Any]]:
    """Run the kit's selected suites in a clean subprocess; return it and its checked report."""
    scratch = tmp_path / name
    scratch.mkdir()
    (scratch / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    report = scratch / "report.json"
    command = [sys.executable, "-m", "pytest", "-c", str(scratch / "pytest.ini"),
               "--rootdir", str(scratch), "-p", "no:cacheprovider", "-q",
               "--pyargs", *SUITES, f"--memspec-report={report}", *args]
    if jobs:
        command += ["-n", str(jobs)]
    proc = subprocess.run(command, cwd=scratch, env=env or _env(tmp_path), text=True,
                          capture_output=True, timeout=300)
    assert report.is_file(), proc.stdout[-3000:] + proc.stderr[-3000:]
    data: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    check_report(data)
    return proc, data


def without_timestamps(report: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k not in TIMESTAMPS}


def test_ids(report: dict[str, Any]) -> list[str]:
    """Every test the report names, kit checks included, in report order."""
    ids = [t["nodeid"] for r in report["requirements"] for t in r["tests"]]
    return ids + [c["nodeid"] for c in report.get("kit_checks", [])]


test_ids.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test


def outcomes(report: dict[str, Any]) -> dict[str, str]:
    return {r["id"]: r["outcome"] for r in report["requirements"]}


def failures(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(t["nodeid"], t.get("message", "")) for r in report["requirements"]
            for t in r["tests"] if t["outcome"] in ("failed", "errored")]


def assert_same_report(single: dict[str, Any], distributed: dict[str, Any]) -> None:
    # The narrow comparisons first, so a difference names what differs.
    assert test_ids(distributed) == test_ids(single)
    assert failures(distributed) == failures(single)
    assert outcomes(distributed) == outcomes(single)
    assert distributed["profiles"] == single["profiles"]
    assert distributed["suite_digest"] == single["suite_digest"]
    assert without_timestamps(distributed) == without_timestamps(single)


def test_in_process_reference_gives_the_same_report(tmp_path: Path) -> None:
    engine = "--memspec-engine=reference"
    single_run, single = run_kit(tmp_path, "single", engine, *SELECT)
    xdist_run, distributed = run_kit(tmp_path, "xdist", engine, *SELECT, jobs=2)
    assert single_run.returncode == xdist_run.returncode
    assert_same_report(single, distributed)
    assert distributed["mode"] == "in-process"
    deselected = [t for r in distributed["requirements"] for t in r["tests"]
                  if t.get("message") == "deselected"]
    assert deselected and all(t["outcome"] == "not-run" for t in deselected)
    assert distributed["kit_checks"], "the traceability check ran on a worker"
    # One summary, printed by the controller, with the same content.
    assert xdist_run.stdout.count("memspec conformance") == 1
    assert xdist_run.stdout.count("report written to") == 1


def test_process_engine_gives_the_same_report_one_engine_process_per_worker(
    tmp_path: Path,
) -> None:
    script = tmp_path / "pid_logging_engine.py"
    script.write_text(PID_LOGGING_ENGINE, encoding="utf-8")
    pids = tmp_path / "pids.txt"
    command = f"--memspec-engine-cmd={shlex.join([sys.executable, str(script), str(pids)])}"
    single_run, single = run_kit(tmp_path, "single", command, *SELECT)
    started_alone = pids.read_text(encoding="utf-8").split()
    pids.unlink()
    xdist_run, distributed = run_kit(tmp_path, "xdist", command, *SELECT, jobs=2)
    started = pids.read_text(encoding="utf-8").split()
    # The pipelining test starts an engine process of its own, once in either run; the
    # controller starts none.
    assert len(set(started)) == len(started_alone) + 1, (started_alone, started)
    assert single_run.returncode == xdist_run.returncode
    assert_same_report(single, distributed)
    assert distributed["mode"] == "process"


def test_a_failure_on_a_worker_reaches_the_report_and_exit_code(tmp_path: Path) -> None:
    # The proxy serves memspec-reference-engine (the script beside sys.executable) with
    # one fault; under xdist each worker starts its own proxy and engine.
    command = shlex.join([sys.executable, "-m", "memspec.selftest.proxy",
                          "--fault", "canonical-with-spaces"])
    junit = tmp_path / "junit.xml"
    single_run, single = run_kit(tmp_path, "single", f"--memspec-engine-cmd={command}")
    xdist_run, distributed = run_kit(tmp_path, "xdist", f"--memspec-engine-cmd={command}",
                                     f"--junitxml={junit}", jobs=2)
    assert single_run.returncode == xdist_run.returncode == pytest.ExitCode.TESTS_FAILED
    assert distributed["verdict"] == "failed"
    assert outcomes(distributed)["CJ-3"] == "failed"
    assert failures(distributed), "the failing test and its message are in the report"
    assert_same_report(single, distributed)
    # The failing tests show in the controller's terminal and in its JUnit XML.
    for nodeid, _ in failures(distributed):
        name = nodeid.rsplit("::", 1)[-1]
        assert name in xdist_run.stdout
        assert name in junit.read_text(encoding="utf-8")


def test_an_engine_that_kills_its_worker_errors_that_test(tmp_path: Path) -> None:
    (tmp_path / "crashing_engine.py").write_text(CRASHING_ENGINE, encoding="utf-8")
    env = _env(tmp_path, CRASH_MARK=str(tmp_path / "crashed"))
    run, report = run_kit(tmp_path, "xdist", "--memspec-engine=crashing_engine:create",
                          "-k", "test_protocol or test_format", jobs=2, env=env)
    assert run.returncode == pytest.ExitCode.TESTS_FAILED
    errored = [t for r in report["requirements"] for t in r["tests"] if t["outcome"] == "errored"]
    assert len({t["nodeid"] for t in errored}) == 1, errored
    assert "crashed" in errored[0]["message"]
    assert report["verdict"] == "errored"
    assert "crashed while running" in run.stdout


def test_a_usage_error_on_the_workers_is_a_usage_error(tmp_path: Path) -> None:
    scratch = tmp_path / "run"
    scratch.mkdir()
    (scratch / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(scratch / "pytest.ini"), "--rootdir",
         str(scratch), "-p", "no:cacheprovider", "-q", "--pyargs", SUITES[0],
         "--memspec-engine=no-such-engine", "-n", "2"],
        cwd=scratch, env=_env(tmp_path), text=True, capture_output=True, timeout=120)
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR
    assert "no engine named 'no-such-engine'" in proc.stderr
    assert "INTERNALERROR" not in proc.stdout + proc.stderr
