"""The ``memspec`` command line.

Exit codes: 0 success, 1 the input failed a check, 2 a usage error (a bad option
or value, a file that cannot be read or written, an engine that cannot be
found). A user's mistake is reported in one line, never as a traceback; with
``--json`` it is reported as JSON on stdout, ``{"ok": false, "error": {...}}``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import NoReturn

from memspec import __version__
from memspec._display import terminal
from memspec._errors import MemspecError
from memspec.cli import _audit, _compare, _files, _keys, _kit, _new, _selftest
from memspec.cli._io import UsageError

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "build_parser", "main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class ArgumentsError(UsageError):
    """The command line itself does not parse; carries the parser's usage line."""

    def __init__(self, message: str, prog: str, usage: str) -> None:
        super().__init__(message)
        self.prog = prog
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ArgumentsError(message, self.prog, self.format_usage())


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (also used to generate the CLI reference)."""
    common = _Parser(add_help=False)
    common.add_argument("--json", action="store_true", help="machine-readable JSON output")
    parser = _Parser(
        prog="memspec",
        description="memspec: the fg-agent-memory/0.1 specification, vectors and conformance kit.",
        epilog="Run `memspec COMMAND --help` for a command's options and examples. Exit codes: "
               "0 success, 1 an input that failed a check, 2 a usage error.",
    )
    parser.add_argument("--version", action="version", version=f"memspec {__version__}")
    sub: argparse._SubParsersAction[argparse.ArgumentParser] = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=_Parser)
    _files.register(sub, common)
    _new.register(sub, common)
    _keys.register(sub, common)
    _kit.register(sub, common)
    _audit.register(sub, common)
    _compare.register(sub, common)
    _selftest.register(sub, common)
    return parser


def _wants_json(argv: Sequence[str]) -> bool:
    """Whether the (possibly unparsable) command line asked for JSON output.

    ``selftest --json PATH`` names a file, not an output format.
    """
    words = list(argv)
    return "--json" in words and "selftest" not in words[:words.index("--json")]


def _report(as_json: bool, command: str, code: str, message: str,
            requirement: str | None = None, usage: str = "") -> None:
    if as_json:
        error = {"code": code, "message": message}
        if requirement:
            error["requirement"] = requirement
        print(json.dumps({"ok": False, "error": error}, indent=2, ensure_ascii=False))
        return
    if usage:
        print(terminal(usage.rstrip()), file=sys.stderr)
    print(terminal(f"{command}: {code} error: {message}"), file=sys.stderr)


def _os_message(exc: OSError) -> str:
    where = f"{exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or exc}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    as_json = _wants_json(words)
    parser = build_parser()
    try:
        args = parser.parse_args(words)
    except ArgumentsError as exc:
        _report(as_json, exc.prog, "usage", str(exc),
                usage="" if as_json else exc.usage)
        return EXIT_USAGE
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    as_json = getattr(args, "json", False) is True
    command = f"memspec {args.command}"
    try:
        code: int = args.func(args)
    except UsageError as exc:
        _report(as_json, command, "usage", str(exc))
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_OK
    except OSError as exc:
        _report(as_json, command, "usage", _os_message(exc))
        return EXIT_USAGE
    except MemspecError as exc:
        _report(as_json, command, exc.code, str(exc), exc.requirement)
        return EXIT_USAGE if exc.code == "usage" else EXIT_FAILED
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
