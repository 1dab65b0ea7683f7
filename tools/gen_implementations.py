"""Certify every engine the project can run and keep their reports for the Implementations page.

Usage (from anywhere; paths are relative to this repository):

    python tools/gen_implementations.py [--only ID ...] [--jobs N]

Runs ``memspec certify`` once per engine of :data:`ENGINES` (the reference engine on its three
stores, in process and as a process; the JavaScript example; fg-agent-memory 0.2.0 through
memspec.peers, in process and as a process) and writes each report, slimmed to what the
Implementations page shows (every requirement's outcome, and the tests that did not pass), to
docs/data/implementations/<id>.json, with index.json listing them in order. The engines that
cannot run here (no node, no peers extra) are reported and their old reports kept. The slimmed
reports still match schemas/report.json; tests/docs checks them without certifying anything.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from memspec.report import Outcome, Report

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "data" / "implementations"
#: A message kept in a slimmed report is cut to its first line, at most this long.
MESSAGE_CHARS = 200


@dataclass(frozen=True)
class Implementation:
    """One engine the project certifies: how to run it, and how to name it on the page."""

    id: str
    title: str
    mode: str
    #: memspec certify's engine arguments; ``{python}`` and ``{bin}`` are this interpreter
    #: and its scripts folder, filled in when the engine runs.
    args: tuple[str, ...]
    #: The command as a reader would type it (no machine paths).
    shown: str
    needs: str = ""


ENGINES = (
    Implementation("reference-memory-in-process", "memspec reference, memory store", "in-process",
                   ("--engine", "reference"), "memspec certify --engine reference"),
    Implementation("reference-file-in-process", "memspec reference, file store", "in-process",
                   ("--engine", "reference-file"), "memspec certify --engine reference-file"),
    Implementation("reference-sqlite-in-process", "memspec reference, SQLite store",
                   "in-process", ("--engine", "reference-sqlite"),
                   "memspec certify --engine reference-sqlite"),
    Implementation("reference-memory-process", "memspec reference, memory store", "process",
                   ("--engine-cmd", "{bin}/memspec-reference-engine --store memory"),
                   'memspec certify --engine-cmd "memspec-reference-engine --store memory"'),
    Implementation("reference-file-process", "memspec reference, file store", "process",
                   ("--engine-cmd", "{bin}/memspec-reference-engine --store file"),
                   'memspec certify --engine-cmd "memspec-reference-engine --store file"'),
    Implementation("reference-sqlite-process", "memspec reference, SQLite store", "process",
                   ("--engine-cmd", "{bin}/memspec-reference-engine --store sqlite"),
                   'memspec certify --engine-cmd "memspec-reference-engine --store sqlite"'),
    Implementation("js-example-process", "JavaScript example engine", "process",
                   ("--engine-cmd", "node examples/js-engine/engine.js"),
                   'memspec certify --engine-cmd "node examples/js-engine/engine.js"',
                   needs="node"),
    Implementation("fg-agent-memory-in-process", "fg-agent-memory 0.2.0", "in-process",
                   ("--engine", "memspec.peers.fg_agent_memory:create_engine"),
                   "memspec certify --engine memspec.peers.fg_agent_memory:create_engine",
                   needs="fg_agent_memory"),
    Implementation("fg-agent-memory-process", "fg-agent-memory 0.2.0", "process",
                   ("--engine-cmd", "{python} -m memspec.peers.fg_agent_memory"),
                   'memspec certify --engine-cmd "python -m memspec.peers.fg_agent_memory"',
                   needs="fg_agent_memory"),
)


def _first_line(message: str | None) -> str | None:
    if message is None:
        return None
    return (message.strip().splitlines() or [""])[0][:MESSAGE_CHARS]


def slim(report: Report) -> Report:
    """``report`` with passed tests dropped, messages cut to one line and the engine option
    left out (still schema-valid)."""
    requirements = tuple(
        replace(entry, tests=tuple(replace(test, message=_first_line(test.message))
                                   for test in entry.tests
                                   if test.outcome not in (Outcome.PASSED, Outcome.NOT_CLAIMED)))
        for entry in report.requirements)
    return replace(report, requirements=requirements,
                   engine=replace(report.engine, loaded_as=None))


def _available(engine: Implementation) -> str | None:
    if engine.needs == "node" and shutil.which("node") is None:
        return "node is not installed"
    if engine.needs == "fg_agent_memory":
        try:
            __import__("fg_agent_memory")
        except ImportError:
            return "the peers extra is not installed (pip install -e '.[peers]')"
    return None


def certify(engine: Implementation, jobs: int) -> Report:
    """Run ``memspec certify`` for ``engine``; the slimmed report."""
    scripts = Path(sys.executable).parent
    args = [a.format(python=sys.executable, bin=scripts) for a in engine.args]
    with tempfile.TemporaryDirectory(prefix="memspec-impl-") as folder:
        target = Path(folder) / "report.json"
        run = subprocess.run([str(scripts / "memspec"), "certify", *args, "--report", str(target),
                              "--jobs", str(jobs)], cwd=ROOT, capture_output=True, text=True)
        if not target.is_file():
            raise SystemExit(f"gen_implementations: {engine.id} made no report (exit "
                             f"{run.returncode}):\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
        report = Report.load(target)
    return slim(report)


def _dump(value: Any) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", action="append", metavar="ID",
                        choices=[e.id for e in ENGINES], help="certify only this engine")
    parser.add_argument("--jobs", type=int, default=2, metavar="N",
                        help="kit processes per certification (default 2)")
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    for engine in ENGINES:
        if args.only and engine.id not in args.only:
            continue
        missing = _available(engine)
        if missing:
            print(f"gen_implementations: skipping {engine.id}: {missing}", file=sys.stderr)
            continue
        print(f"gen_implementations: certifying {engine.id}", file=sys.stderr)
        (OUT / f"{engine.id}.json").write_text(certify(engine, args.jobs).to_json(indent=1),
                                               encoding="utf-8")
    index = [{"id": e.id, "title": e.title, "mode": e.mode, "command": e.shown,
              "report": f"{e.id}.json"} for e in ENGINES if (OUT / f"{e.id}.json").is_file()]
    (OUT / "index.json").write_text(_dump({"engines": index}), encoding="utf-8")
    print(f"gen_implementations: {len(index)} reports in {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
