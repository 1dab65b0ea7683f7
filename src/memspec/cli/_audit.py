"""``memspec audit PATH``: the audit report (extension profile x-audit) of a memory file or a
file-store directory, as Markdown or JSON, with its content digest."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from memspec._audit import audit_digest, audit_path, render_markdown
from memspec._canonical import canonical_json
from memspec.cli._io import UsageError, write_output

__all__ = ["cmd_audit", "register"]


def cmd_audit(args: argparse.Namespace) -> int:
    """Build the report of ``args.path`` and write it in the chosen format."""
    if not Path(args.path).exists():
        raise UsageError(f"{args.path}: no such file or directory")
    report = audit_path(args.path)
    digest = audit_digest(report)
    if args.format == "json" or args.json:
        document: dict[str, Any] = {"report": report, "digest": digest}
        data = (canonical_json(document) if args.canonical
                else json.dumps(document, indent=2, ensure_ascii=False).encode("utf-8"))
    else:
        data = render_markdown(report).encode("utf-8")
    write_output(args.output, data + (b"" if args.output else b"\n"))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser],
             common: argparse.ArgumentParser) -> None:
    """Add ``memspec audit`` to the parser."""
    help_text = ("Audit a memory file or a file-store directory: every record's lifecycle "
                 "history with reasons, the supersession changelog and redactions (that and "
                 "why, never what), content-addressed by the SHA-256 of the canonical JSON "
                 "report (spec/EXTENSIONS.md, profile x-audit).")
    parser = sub.add_parser(
        "audit", parents=[common], help=help_text, description=help_text,
        epilog="examples:\n  memspec audit memory.json\n"
               "  memspec audit ./agent-memory/records --format json -o audit.json\n",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.set_defaults(func=cmd_audit)
    parser.add_argument("path", metavar="PATH",
                        help="a memory file, or a file-store directory (every version)")
    parser.add_argument("--format", choices=("markdown", "json"), default="markdown",
                        help="output format (default: markdown; --json implies json)")
    parser.add_argument("--canonical", action="store_true",
                        help="with json: write canonical JSON bytes")
    parser.add_argument("-o", "--output", help="write the report to a file")
