"""``memspec selftest``: prove the conformance kit catches every faulty engine."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from memspec.cli._io import UsageError, write_output

__all__ = ["add_arguments", "cmd_selftest", "main", "register", "render_table"]

_DESCRIPTION = (
    "Run the conformance kit against every faulty engine (the reference engine with one "
    "deliberate bug that breaks one requirement) and against the reference engine, and show "
    "that each fault is caught on its own requirement. Exit 0 when every fault is caught and "
    "the reference engine passes everything, 1 otherwise, 2 on a usage error."
)
_EPILOG = """examples:
  memspec selftest                               every fault, in process and as a process
  memspec selftest --mode in-process --jobs 4    faster: in process only
  memspec selftest --fault put-overwrites --fault get-returns-oldest --json out.json
  memspec selftest --list                        the fault catalogue
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The selftest options (shared by ``memspec selftest`` and ``python -m memspec.selftest``)."""
    parser.add_argument("--json", dest="json_path", metavar="PATH", default=None,
                        help="also write the result as JSON (schemas/selftest.json) to PATH")
    parser.add_argument("--mode", choices=("in-process", "process", "both"), default="both",
                        help="run the faulty engines in process, as processes, or both "
                             "(default: both)")
    parser.add_argument("--fault", dest="faults", metavar="NAME", action="extend", nargs="+",
                        default=None, help="only these faults (repeatable)")
    parser.add_argument("--full", action="store_true",
                        help="run the whole kit for every fault (default: the tests of the "
                             "fault's profile and of its requirement)")
    parser.add_argument("--claim", choices=("all", "narrow", "both"), default="both",
                        help="the faulty engines claim what the reference claims (all), only "
                             "their fault's profile and the profiles it requires (narrow: "
                             "caught there too, or the requirement reported partial), or "
                             "both (default)")
    parser.add_argument("--jobs", type=int, default=2, metavar="N",
                        help="kit runs in parallel (default 2)")
    parser.add_argument("--list", dest="list_faults", action="store_true",
                        help="list the faults and exit")
    parser.set_defaults(func=cmd_selftest)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the ``selftest`` subcommand (it has its own --json PATH, so ``common`` is unused)."""
    parser = sub.add_parser("selftest", help="prove the kit catches every faulty engine",
                            description=_DESCRIPTION, epilog=_EPILOG,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)


def _modes(choice: str) -> tuple[str, ...]:
    return ("in-process", "process") if choice == "both" else (choice,)


def _list(out: TextIO) -> int:
    from memspec.selftest.faults import all_faults

    faults = all_faults()
    names = max(len(f.name) for f in faults)
    profiles = max(len(f.profile) for f in faults)
    for fault in faults:
        out.write(f"{fault.name:<{names}} {fault.requirement:<9} {fault.profile:<{profiles}} "
                  f"{fault.description}\n")
    return 0


def _ids(ids: Sequence[str], limit: int = 60) -> str:
    shown: list[str] = []
    for rid in ids:
        if shown and len(", ".join([*shown, rid])) > limit:
            break
        shown.append(rid)
    rest = len(ids) - len(shown)
    return (", ".join(shown) or "-") + (f" (+{rest} more)" if rest else "")


def render_table(result: Any) -> list[str]:
    """The result as aligned text lines: one per fault run, then the reference, then a summary.

    REPORTED FAILING leaves out requirements the reference engine fails too (in
    that mode); they are named once, after the table.
    """
    baseline = {ref.mode: set(ref.failed) for ref in result.references}
    lines = [f"{'ENGINE':<42} {'MODE':<10} {'BREAKS':<9} {'CAUGHT':<6} REPORTED FAILING"]
    for row in result.faults:
        caught = "yes" if row.caught else "NO"
        shown = [r for r in row.reported if r not in baseline.get(row.mode, set())]
        label = row.fault + (" [narrow]" if row.claim == "narrow" else "")
        lines.append(f"{label:<42} {row.mode:<10} {row.requirement:<9} {caught:<6} "
                     f"{_ids(shown)}")
        if not row.caught:
            lines.append(f"{'':<42} -> {row.message}")
    for ref in result.references:
        verdict = "passes everything" if ref.passed else "FAILS " + _ids(
            [*ref.failed, *ref.errored])
        lines.append(f"{'reference':<42} {ref.mode:<10} {'-':<9} {'-':<6} {verdict}")
        if not ref.passed:
            lines.append(f"{'':<42} -> {ref.message}")
    for mode, failing in baseline.items():
        if failing:
            lines.append(f"(left out of REPORTED in {mode} mode, the reference fails them too: "
                         f"{', '.join(sorted(failing))})")
    summary = result.summary()
    lines.append(
        f"{summary['caught']} of {summary['runs']} fault runs caught on their own requirement "
        f"({summary['faults']} faults; {summary['with_collateral']} also failed other "
        f"requirements); reference engine "
        f"{'passes everything' if summary['reference_passed'] else 'FAILS'}: "
        f"{'OK' if summary['ok'] else 'FAILED'}")
    return lines


def cmd_selftest(args: argparse.Namespace) -> int:
    """Run the selftest as the options say; print the table; return the exit code."""
    from memspec.selftest.faults import UnknownFaultError, fault_named
    from memspec.selftest.runner import SelftestError, check_result, run_selftest

    if args.list_faults:
        return _list(sys.stdout)
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    faults = None
    if args.faults:
        try:
            faults = [fault_named(name) for name in dict.fromkeys(args.faults)]
        except UnknownFaultError as exc:
            raise UsageError(str(exc)) from None
    progress = _progress if sys.stderr.isatty() else None
    try:
        result = run_selftest(faults, modes=_modes(args.mode), jobs=args.jobs, full=args.full,
                              progress=progress, claim=args.claim)
    except SelftestError as exc:
        print(f"memspec selftest: {exc}", file=sys.stderr)
        return 1
    for line in render_table(result):
        print(line)
    if args.json_path:
        document = result.to_json()
        problems = check_result(document)
        if problems:
            print(f"memspec selftest: the result does not match schemas/selftest.json: "
                  f"{problems[0]}", file=sys.stderr)
            return 1
        data = (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        try:
            write_output(args.json_path, data)
        except OSError as exc:
            raise UsageError(f"cannot write {args.json_path}: {exc}") from None
        if args.json_path != "-":
            print(f"result written to {Path(args.json_path)}")
    return 0 if result.ok else 1


def _progress(done: int, total: int, label: str, outcome: str) -> None:
    print(f"[{done}/{total}] {label}: {outcome}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m memspec.selftest``: the same as ``memspec selftest``."""
    from memspec.cli import _Parser

    parser = _Parser(prog="python -m memspec.selftest", description=_DESCRIPTION,
                     epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return cmd_selftest(args)
    except UsageError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
