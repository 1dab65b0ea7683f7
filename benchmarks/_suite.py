"""Benchmark 10: the conformance kit's own cost, in-process and over the process protocol.

Each run is a separate ``pytest --pyargs memspec.conformance`` subprocess in
an empty working directory (so no project configuration applies). Its wall
time is measured around the subprocess; its CPU time and peak resident
memory come from ``resource.getrusage(RUSAGE_CHILDREN)`` read by a small
launcher interpreter that starts only that one pytest (so the figure covers
pytest and the engine process it waits for, and nothing else this benchmark
started).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks._harness import Figure, Goal, Result, Sizes, Skip

__all__ = ["BENCHMARKS", "engine_command"]

_SUMMARY = re.compile(r"^=*\s*(\d+ (passed|failed|errored|error).*?)\s*=*$", re.MULTILINE)


@dataclass(frozen=True)
class SuiteRun:
    """One kit run: wall and CPU seconds, peak RSS in MiB, exit code and pytest's summary."""

    wall: float
    cpu: float
    max_rss_mib: float
    exit_code: int
    summary: str


def engine_command() -> str:
    """The process-engine command: the installed script beside this Python, else ``-m``."""
    script = Path(sys.executable).with_name("memspec-reference-engine")
    if script.exists():
        return shlex.quote(str(script))
    found = shutil.which("memspec-reference-engine")
    if found:
        return shlex.quote(found)
    return f"{shlex.quote(sys.executable)} -m memspec.reference"


#: Runs one command and reports its children's resource usage as JSON on stdout. It runs in
#: a small, fresh interpreter because Linux carries a process's peak RSS across fork and
#: exec: measured from this (large) benchmark process, a child would inherit its peak.
_LAUNCHER = """
import json, resource, subprocess, sys, time
log = open(sys.argv[1], "wb")
start = time.perf_counter()
code = subprocess.call(sys.argv[2:], stdout=log, stderr=subprocess.STDOUT,
                       stdin=subprocess.DEVNULL)
wall = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
                  "max_rss_kib": usage.ru_maxrss, "code": code}))
"""


def run_kit(targets: tuple[str, ...], engine_args: list[str]) -> SuiteRun:
    """Run the kit once in a subprocess (through the launcher) and measure it."""
    with tempfile.TemporaryDirectory(prefix="memspec-bench-kit-") as tmp:
        log = Path(tmp, "pytest.log")
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "--pyargs", *targets, *engine_args]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        done = subprocess.run([sys.executable, "-c", _LAUNCHER, str(log), *command], cwd=tmp,
                              env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, check=True)
        usage = json.loads(done.stdout.strip().splitlines()[-1])
        text = log.read_text(encoding="utf-8", errors="replace")
    found = _SUMMARY.findall(text)
    summary = found[-1][0] if found else text.strip().splitlines()[-1:][0] if text.strip() else ""
    # ru_maxrss is in KiB on Linux.
    return SuiteRun(usage["wall"], usage["cpu"], usage["max_rss_kib"] / 1024, usage["code"],
                    summary)


def bench_suite(sizes: Sizes, cache: dict[str, Any]) -> Result:
    try:
        import memspec.conformance
        import memspec.reference  # noqa: F401
    except ImportError as exc:  # pragma: no cover - both ship with memspec
        raise Skip(f"skipped: {exc.name} not importable") from exc
    modes = {"in-process": ["--memspec-engine=reference"],
             "process": [f"--memspec-engine-cmd={engine_command()}"]}
    runs: dict[str, list[SuiteRun]] = {mode: [] for mode in modes}
    for repeat in range(sizes.suite_repeats):
        order = list(modes) if repeat % 2 == 0 else list(reversed(modes))
        for mode in order:
            runs[mode].append(run_kit(sizes.suite_targets, modes[mode]))
    inproc, process = runs["in-process"], runs["process"]
    wall_in = statistics.median(r.wall for r in inproc)
    wall_proc = statistics.median(r.wall for r in process)
    ratio = statistics.median(p.wall / i.wall for i, p in zip(inproc, process, strict=True))
    what = ("the default kit run" if sizes.suite_targets == ("memspec.conformance",)
            else "a subset of the kit (" + ", ".join(t.rsplit(".", 1)[-1]
                                                     for t in sizes.suite_targets) + ")")
    result = Result(
        name="conformance-suite-process-overhead",
        compares=f"wall time of {what} against the reference engine as a process engine "
                 "(memspec-reference-engine over the process protocol) vs in-process",
        goal=Goal("<=", 3.0, "process-engine wall time / in-process wall time"),
        subject=Figure("kit run, process engine", wall_proc, "s"),
        baseline=Figure("kit run, in-process engine", wall_in, "s"),
        ratio=ratio, size={"runs_per_mode": sizes.suite_repeats},
        repeats=sizes.suite_repeats,
        samples={"in_process_wall_s": [r.wall for r in inproc],
                 "process_wall_s": [r.wall for r in process],
                 "in_process_cpu_s": [r.cpu for r in inproc],
                 "process_cpu_s": [r.cpu for r in process]},
        extra=[
            Figure("peak RSS, in-process kit run", max(r.max_rss_mib for r in inproc), "MiB"),
            Figure("peak RSS, process kit run (largest of pytest and engine)",
                   max(r.max_rss_mib for r in process), "MiB"),
            Figure("CPU time, in-process kit run", statistics.median(r.cpu for r in inproc),
                   "s"),
            Figure("CPU time, process kit run (pytest + engine)",
                   statistics.median(r.cpu for r in process), "s"),
        ],
        notes=f"targets: {' '.join(sizes.suite_targets)}; engine command: {engine_command()}; "
              f"kit outcome in-process: {inproc[-1].summary or inproc[-1].exit_code}; "
              f"process: {process[-1].summary or process[-1].exit_code} (timing does not "
              "depend on the outcome)",
    )
    return result.judge(
        "every request crosses a pipe as JSON (encode, write, read, decode on both ends) "
        "and the kit resets the engine process per test; the in-process run pays none of "
        "that.")


BENCHMARKS: tuple[tuple[str, Callable[[Sizes, dict[str, Any]], Result]], ...] = (
    ("conformance-suite-process-overhead", bench_suite),
)
