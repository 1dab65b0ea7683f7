"""Subcommands that run the conformance kit: certify, smoke, report, vectors."""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, NoReturn

from memspec._canonical import parse_json
from memspec._display import terminal
from memspec._errors import MemspecError
from memspec._keyfile import load_key
from memspec.cli._io import UsageError, emit, read_text, write_output
from memspec.cli._render import badge_endpoint, badge_svg, report_html, report_markdown
from memspec.data import VectorCase, vector_files, vectors
from memspec.report import Report, Verdict

__all__ = ["engine_options", "jobs_args", "register", "run_kit"]


def engine_options(parser: argparse.ArgumentParser) -> None:
    """--engine / --engine-cmd / --timeout, shared by the kit's subcommands."""
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--engine", metavar="NAME|MODULE:CALLABLE",
                       help="an in-process engine: an entry point of the memspec.engines group "
                       "(e.g. reference) or module:callable")
    which.add_argument("--engine-cmd", metavar="COMMAND",
                       help="an engine process speaking the memspec-engine/1 protocol")
    parser.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                        help="per-request timeout for a process engine (default 10)")


def _kit_args(args: argparse.Namespace) -> list[str]:
    out = [f"--memspec-timeout={args.timeout}"]
    if args.engine:
        out.append(f"--memspec-engine={args.engine}")
    else:
        if not shlex.split(args.engine_cmd):
            raise UsageError("--engine-cmd is empty")
        out.append(f"--memspec-engine-cmd={args.engine_cmd}")
    return out


def jobs_args(jobs: int | None) -> list[str]:
    """pytest's ``-n N`` for ``--jobs N`` (pytest-xdist); UsageError when xdist is missing."""
    if jobs is None:
        return []
    if jobs < 1:
        raise UsageError(f"--jobs must be a whole number of processes, at least 1 (got {jobs})")
    if importlib.util.find_spec("xdist") is None:
        raise UsageError("--jobs runs the kit in parallel with pytest-xdist, which is not "
                         "installed here: pip install pytest-xdist (or leave out --jobs)")
    return ["-n", str(jobs)]


def run_kit(kit_args: list[str], targets: list[str], *,
            show_output: bool) -> tuple[int, Report | None, str]:
    """Run pytest on the kit in a clean subprocess; return (exit code, report, output).

    The child runs in the caller's working directory, so an engine command or a
    ``PYTHONPATH`` relative to where the user stands means what it says; the kit's
    own ini file and rootdir live in a scratch directory, and no ``conftest.py`` of
    the caller's (``--noconftest``) nor the caller's directory on ``sys.path``
    (``-P``) can change how the kit judges. The report comes back over the kit's
    report channel (:mod:`memspec.conformance._channel`), never from a file an
    engine could rewrite, and is checked against schemas/report.json
    (:class:`~memspec.report.MalformedReport` if it does not match); None when the kit
    made none.
    """
    from memspec.conformance._channel import ReportChannel

    channel = ReportChannel()
    try:
        with tempfile.TemporaryDirectory(prefix="memspec-kit-") as scratch:
            ini = Path(scratch) / "pytest.ini"
            ini.write_text("[pytest]\n", encoding="utf-8")
            command = [sys.executable, "-P", "-m", "pytest", *targets, "-c", str(ini),
                       "--rootdir", scratch, "--noconftest", "-p", "no:cacheprovider", "-q",
                       channel.option, *kit_args]
            if sys.stdout.isatty() and show_output:
                command.append("--color=yes")
            env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
            proc = subprocess.Popen(command, cwd=os.getcwd(), env=env, text=True,
                                    stdin=subprocess.DEVNULL,
                                    stdout=None if show_output else subprocess.PIPE,
                                    stderr=subprocess.STDOUT if not show_output else None,
                                    pass_fds=channel.child_fds)
            channel.started()
            output, _ = proc.communicate()
        report = channel.receive()
        if channel.tampered:
            print("memspec: warning: something other than the kit wrote into the kit's report "
                  "channel (the engine under test?); it was ignored", file=sys.stderr)
    finally:
        channel.close()
    return (proc.returncode, Report.from_wire(report) if report is not None else None,
            output or "")


#: pytest's exit status for a usage error: the kit stopped before any test ran (a bad
#: option, an engine that cannot be loaded or does not start).
_PYTEST_USAGE_ERROR = 4


def _no_report(code: int, output: str) -> NoReturn:
    """Raise the error for a kit run that made no report (``output``: what it printed, if
    captured)."""
    shown = terminal(output[-4000:]).strip()
    if code == _PYTEST_USAGE_ERROR:
        raise UsageError("the kit stopped before running any test"
                         + (f":\n{shown}" if shown else " (see its message above)"))
    raise MemspecError(f"the kit did not produce a report (exit {code})"
                       + (f":\n{shown}" if shown else "; see the output above"))


def cmd_certify(args: argparse.Namespace) -> int:
    out_dir = Path(args.out_dir).resolve()
    report_path = Path(args.report).resolve() if args.report else out_dir / "report.json"
    kit_args = _kit_args(args) + jobs_args(args.jobs)
    if args.thorough:
        kit_args.append("--memspec-thorough")
    # The signing key never leaves this process: not on the kit's command line, not in
    # its environment. Read it first, so that a bad key file is refused before the run.
    key = load_key(args.sign_key) if args.sign_key else None
    code, report, output = run_kit(kit_args, ["--pyargs", "memspec.conformance"],
                                   show_output=not args.json)
    if report is None:
        # Nothing was written: the report's directory is made only for a report.
        _no_report(code, output)
    assert report is not None
    if key is not None:
        report = report.signed(key)
    # Every file, and the verdict printed, come from this in-memory report: the one the
    # kit made and vouched for over its channel, signed here after the engine is gone.
    report_path.parent.mkdir(parents=True, exist_ok=True)
    summary = out_dir / "report.md" if not args.report else report_path.with_suffix(".md")
    badge = out_dir / "badge.svg" if not args.report else report_path.with_name(
        report_path.stem + "-badge.svg")
    write_output(str(report_path), report.to_json().encode("utf-8"))
    write_output(str(summary), report_markdown(report).encode("utf-8"))
    write_output(str(badge), badge_svg(report).encode("utf-8"))
    endpoint = badge.with_suffix(".json")  # a shields.io endpoint badge document
    write_output(str(endpoint), badge_endpoint(report).encode("utf-8"))
    verdict = report.verdict.value
    emit(args.json, {"verdict": verdict, "report": str(report_path),
                     "summary": str(summary), "badge": str(badge),
                     "badge_endpoint": str(endpoint), "signed": report.signature is not None,
                     "profiles": {n: e.verdict.value for n, e in report.profiles.items()}},
         terminal(f"\nverdict: {verdict}\nreport: {report_path}\nsummary: {summary}\n"
                  f"badge: {badge} (shields.io endpoint: {endpoint})"))
    return 0 if report.verdict == Verdict.CERTIFIED and code == 0 else 1


def cmd_smoke(args: argparse.Namespace) -> int:
    from memspec.conformance import load_engine, process_engine, smoke

    engine = (load_engine(args.engine) if args.engine else
              process_engine(args.engine_cmd, timeout=args.timeout))
    try:
        result = smoke(engine)
    finally:
        engine.close()
    emit(args.json, {"ok": result.ok, "engine": result.engine,
                     "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail}
                                for c in result.checks],
                     "stderr": list(result.stderr)},
         "\n".join(result.lines()) + f"\nadapter wiring: {'ok' if result.ok else 'BROKEN'}")
    return 0 if result.ok else 1


def cmd_report(args: argparse.Namespace) -> int:
    from memspec.conformance import verify_report

    wire = parse_json(read_text(args.path))
    report = Report.from_wire(wire, source=args.path)
    if args.verify:
        if report.signature is None:
            raise MemspecError(f"{args.path}: the report is not signed")
        verify_report(wire)  # over the members as read, not as the model writes them
    text = report_html(report) if args.format == "html" else report_markdown(report)
    if args.json:
        emit(True, {"verdict": report.verdict.value, "signed": report.signature is not None},
             "")
    else:
        write_output(args.output, text.encode("utf-8"))
    return 0


def _case_index() -> list[VectorCase]:
    return [case for name in vector_files() for case in vectors(name).cases()]


def cmd_vectors(args: argparse.Namespace) -> int:
    cases = _case_index()
    known = {case.file.removesuffix(".json") for case in cases}
    unknown = sorted(set(args.file or ()) - known)
    if unknown:
        raise UsageError(f"no vectors file named {', '.join(map(repr, unknown))}; the files "
                         f"are: {', '.join(sorted(known))}")
    chosen = [
        case for case in cases
        if (not args.file or case.file.removesuffix(".json") in args.file)
        and (not args.group or case.group in args.group)
        and (not args.flag or set(args.flag) & set(case.flags))
        and (not args.id or case.id in args.id)
    ]
    if not chosen:
        raise UsageError("no vector matches the selection")
    if args.action == "list":
        files = Counter(case.file for case in chosen)
        rows: list[dict[str, Any]] = [{"file": name, "tests": n,
                 "valid": sum(1 for c in chosen if c.file == name and c.valid),
                 "groups": sorted({c.group for c in chosen if c.file == name}),
                 "flags": sorted({fl for c in chosen if c.file == name for fl in c.flags})}
                for name, n in sorted(files.items())]
        emit(args.json, {"files": rows, "tests": len(chosen)}, "\n".join(
            f"{r['file']:<24} {r['tests']:>4} tests ({r['valid']} valid)  groups: "
            f"{', '.join(r['groups'])}" for r in rows) + f"\n{len(chosen)} tests")
        return 0
    if not (args.engine or args.engine_cmd):
        raise UsageError("vectors check needs --engine or --engine-cmd")
    import memspec.conformance.suites as suites

    module = Path(suites.__file__).with_name("test_vectors.py")
    nodes = [f"{module}::test_vector[{case.id}]" for case in chosen]
    code, report, output = run_kit(_kit_args(args), nodes, show_output=not args.json)
    outcomes: dict[str, str] = {}
    for entry in report.requirements if report is not None else ():
        for test in entry.tests:
            outcomes[test.nodeid.rsplit("[", 1)[-1].rstrip("]")] = test.outcome.value
    if not outcomes:
        _no_report(code, output)
    failed = sorted(i for i, o in outcomes.items() if o in ("failed", "errored"))
    emit(args.json, {"selected": len(chosen), "failed": failed, "outcomes": outcomes},
         f"\n{len(chosen)} vectors, {len(failed)} failed" +
         "".join(f"\n  {i}" for i in failed))
    return 1 if failed else 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser],
             common: argparse.ArgumentParser) -> None:
    """Add the kit's subcommands to the parser."""
    def add(name: str, func: Any, help_text: str, examples: str) -> argparse.ArgumentParser:
        parser = sub.add_parser(name, parents=[common], help=help_text, description=help_text,
                                epilog="examples:\n" + examples,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
        parser.set_defaults(func=func)
        return parser

    p = add("certify", cmd_certify, "Run the conformance kit against an engine and write the "
            "JSON report, a Markdown summary and an SVG badge (exit 0 only when certified).",
            "  memspec certify --engine reference\n"
            "  memspec certify --engine mypkg.engine:create --report out/report.json\n"
            "  memspec certify --engine-cmd \"node engine.js\" --out-dir certification\n"
            "  memspec certify --engine reference --jobs 4")
    engine_options(p)
    p.add_argument("--out-dir", default="memspec-report",
                   help="where report.json, report.md and badge.svg go (default memspec-report)")
    p.add_argument("--report", help="write the JSON report here instead (summary and badge "
                   "beside it)")
    p.add_argument("--thorough", action="store_true",
                   help="many more property-based examples (slower)")
    p.add_argument("--sign-key", metavar="KEYFILE",
                   help="sign the report with a key from memspec keygen")
    p.add_argument("--jobs", type=int, metavar="N",
                   help="run the kit in N processes with pytest-xdist (installed separately); "
                   "each loads its own engine (starts its own engine process), and the "
                   "report is the same as a one-process run's")
    p = add("smoke", cmd_smoke, "Check that an engine adapter is wired right (handshake, reset, "
            "every claimed operation answers) before compliance is judged.",
            "  memspec smoke --engine mypkg.engine:create\n"
            "  memspec smoke --engine-cmd \"./my-engine --stdio\"")
    engine_options(p)
    p = add("report", cmd_report, "Render a conformance report as Markdown or HTML.",
            "  memspec report memspec-report/report.json\n"
            "  memspec report report.json --format html -o report.html\n"
            "  memspec report report.json --verify")
    p.add_argument("path", metavar="PATH")
    p.add_argument("--format", choices=("markdown", "html"), default="markdown")
    p.add_argument("--verify", action="store_true", help="require and check the report signature")
    p.add_argument("-o", "--output", help="write here (default stdout)")
    p = add("vectors", cmd_vectors, "List the golden vectors, or check an engine against a chosen "
            "subset.",
            "  memspec vectors list\n  memspec vectors list --file records --json\n"
            "  memspec vectors check --engine reference --file canonical-json\n"
            "  memspec vectors check --engine-cmd \"node engine.js\" --flag nfc")
    p.add_argument("action", choices=("list", "check"))
    p.add_argument("--file", action="append", metavar="NAME", help="a vectors file (repeatable)")
    p.add_argument("--group", action="append", metavar="ID", help="a group id (repeatable)")
    p.add_argument("--flag", action="append", metavar="FLAG", help="a flag (repeatable)")
    p.add_argument("--id", action="append", metavar="ID", help="a test id (repeatable)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--engine", metavar="NAME|MODULE:CALLABLE")
    which.add_argument("--engine-cmd", metavar="COMMAND")
    p.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS")
