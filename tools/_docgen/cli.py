"""The CLI reference, generated from the real argparse parsers."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager

from _docgen._common import CLI_PAGE, cell, code, front, generated_note, md_heading, text

#: Help is formatted at this width, whatever the terminal, so the page is deterministic.
WIDTH = "100"


@contextmanager
def _fixed_width() -> Iterator[None]:
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


def subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of every subcommand, in registration order."""
    out: list[tuple[str, str, argparse.ArgumentParser]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) in seen:
                    continue
                seen.add(id(sub))
                out.append((name, str(helps.get(name, sub.description or "")), sub))
    return out


def _examples(parser: argparse.ArgumentParser) -> tuple[list[str], str]:
    """Example command lines from an ``examples:`` epilog, and any other epilog text."""
    epilog = parser.epilog or ""
    head, marker, tail = epilog.partition("examples:")
    if not marker:
        return [], epilog.strip()
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return lines, head.strip()


def _option_rows(parser: argparse.ArgumentParser) -> list[str]:
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            name = ", ".join(action.option_strings)
            takes = action.nargs != 0
            metavar = formatter._format_args(action, action.dest.upper()) if takes else ""
        else:
            name = formatter._metavar_formatter(action, action.dest)(1)[0]
            metavar = formatter._format_args(action, action.dest)
            if action.nargs in (None, 1):
                metavar = ""
        help_text = formatter._expand_help(action) if action.help else ""
        details = []
        if action.choices is not None:
            details.append("one of " + ", ".join(code(str(c)) for c in action.choices))
        default = action.default
        if (action.option_strings and default not in (None, False, argparse.SUPPRESS)
                and action.nargs != 0 and "%(default)" not in str(action.help or "")):
            details.append(f"default {code(str(default))}")
        if action.required and action.option_strings:
            details.append("required")
        described = text(help_text) + (f" ({'; '.join(details)})" if details else "")
        rows.append(f"| {code(name)} | {code(metavar) if metavar else ''} | {cell(described)} |")
    return rows


def render(parser: argparse.ArgumentParser) -> str:
    """The CLI reference page."""
    with _fixed_width():
        main_help = parser.format_help()
        commands = subcommands(parser)
        out = [front("Command line", "Every memspec subcommand with its usage, options and "
                     "examples."),
               generated_note("the argparse parsers of `memspec.cli` (`build_parser()`)"), "",
               text(parser.description or ""), "",
               "Every subcommand takes `--help`, with examples. Exit code 0 is "
               "success, 1 an input that failed a check, 2 a usage error.", "",
               "```text", main_help.rstrip(), "```", "",
               "| command | what it does |", "|---|---|"]
        for name, help_text, _ in commands:
            out.append(f"| [`memspec {name}`](#{name}) | {cell(text(help_text))} |")
        out.append("")
        for name, help_text, sub in commands:
            out.extend([md_heading(2, f"`memspec {name}`", name), ""])
            description = sub.description or help_text
            if description:
                out.extend([text(description), ""])
            out.extend(["```text", sub.format_usage().strip(), "```", ""])
            rows = _option_rows(sub)
            if rows:
                out.extend(["| argument | value | description |", "|---|---|---|", *rows, ""])
            examples, rest = _examples(sub)
            if rest:
                out.extend([text(rest), ""])
            if examples:
                out.extend(["**Examples**", "", "```text", *examples, "```", ""])
            out.extend([f'??? info "Full `memspec {name} --help` output"', "    ```text",
                        *("    " + line if line else "" for line in
                          sub.format_help().rstrip().splitlines()),
                        "    ```", ""])
    return "\n".join(out)


def build() -> dict[str, bytes]:
    """The CLI page, from ``memspec.cli.build_parser()``."""
    from memspec.cli import build_parser

    return {CLI_PAGE: render(build_parser()).encode()}
