"""The ``memspec`` command line.

Exit codes: 0 success, 1 the input failed a check, 2 a usage error. A
user's mistake is reported in one line, never as a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from memspec import __version__
from memspec._errors import MemspecError
from memspec.cli import _audit, _files, _keys, _kit
from memspec.cli._io import UsageError

__all__ = ["build_parser", "main"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (also used to generate the CLI reference)."""
    common = _Parser(add_help=False)
    common.add_argument("--json", action="store_true", help="machine-readable JSON output")
    parser = _Parser(
        prog="memspec",
        description="memspec: the fg-agent-memory/0.1 specification, vectors and conformance kit.",
        epilog="Run `memspec COMMAND --help` for a command's options and examples.",
    )
    parser.add_argument("--version", action="version", version=f"memspec {__version__}")
    sub: argparse._SubParsersAction[argparse.ArgumentParser] = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=_Parser)
    _files.register(sub, common)
    _keys.register(sub, common)
    _kit.register(sub, common)
    _audit.register(sub, common)
    try:
        from memspec.cli import _selftest
    except ImportError:  # pragma: no cover - only while the self-test is being built
        pass
    else:
        _selftest.register(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        code: int = args.func(args)
    except UsageError as exc:
        print(f"memspec {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"memspec {args.command}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    except MemspecError as exc:
        if getattr(args, "json", False):
            print(json.dumps({"ok": False, "error": exc.to_wire()}, indent=2))
        else:
            print(f"memspec {args.command}: {exc.code} error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
