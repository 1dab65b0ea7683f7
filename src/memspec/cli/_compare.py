"""``memspec compare REPORT...``: conformance reports side by side, like Bowtie's report.

First the profiles (one row per profile, one column per report: its verdict), then every
requirement whose outcome is not the same in all reports. A terminal table by default,
``--markdown`` for a page, ``--json`` for tools. Everything a report says about its engine is
data: names and versions are shown through :mod:`memspec._display`. :func:`comparison` is the
shared model the website's Implementations page renders too.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memspec._canonical import parse_json
from memspec._display import markdown_inline, terminal
from memspec._errors import MemspecError
from memspec.cli._io import UsageError, emit, read_text
from memspec.report import MalformedReport, Report

__all__ = ["Comparison", "Engine", "comparison", "load_report", "register"]


@dataclass(frozen=True)
class Engine:
    """One report's column: who was certified, how, and with which verdict."""

    label: str
    name: str
    version: str
    mode: str
    verdict: str
    source: str


@dataclass(frozen=True)
class Comparison:
    """Profiles x engines, then the requirements whose outcomes differ between engines."""

    engines: tuple[Engine, ...]
    profiles: tuple[tuple[str, tuple[str, ...]], ...]
    requirements: tuple[tuple[str, str, str, tuple[str, ...]], ...]  # id, profile, level, outcomes

    def to_json(self) -> dict[str, Any]:
        """The JSON form of ``--json``."""
        return {
            "engines": [{"label": e.label, "name": e.name, "version": e.version, "mode": e.mode,
                         "verdict": e.verdict, "report": e.source} for e in self.engines],
            "profiles": [{"profile": name, "verdicts": list(verdicts)}
                         for name, verdicts in self.profiles],
            "differing_requirements": [
                {"id": rid, "profile": profile, "level": level, "outcomes": list(outcomes)}
                for rid, profile, level, outcomes in self.requirements],
        }


def load_report(path: str) -> Report:
    """A conformance report read from ``path`` and checked against schemas/report.json.

    A missing file raises ``UsageError``, an unreadable one ``OSError``; a file that is not a
    valid report raises :class:`~memspec.report.MalformedReport` naming the path.
    """
    try:
        wire = parse_json(read_text(path))
    except MemspecError as exc:
        raise MalformedReport(f"not a conformance report: {exc}", source=path) from exc
    return Report.from_wire(wire, source=path)


def comparison(reports: Sequence[tuple[str, Report | Mapping[str, Any]]]) -> Comparison:
    """Compare ``reports``, each given with where it came from (a path or a name); a report
    given as its wire form is read through :class:`~memspec.report.Report` first."""
    models = [(source, report if isinstance(report, Report)
               else Report.from_wire(dict(report), source=source))
              for source, report in reports]
    engines = []
    for source, report in models:
        name, version = report.engine.name, report.engine.version or ""
        mode = report.mode.value
        base = " ".join(part for part in (name, version) if part) or source
        engines.append(Engine(label=f"{base} ({mode})" if mode else base, name=name,
                              version=version, mode=mode, verdict=report.verdict.value,
                              source=source))
    labels = [e.label for e in engines]
    unique = [label if labels.count(label) == 1 else f"{label} #{i + 1}"
              for i, label in enumerate(labels)]
    engines = [Engine(label=u, name=e.name, version=e.version, mode=e.mode, verdict=e.verdict,
                      source=e.source) for u, e in zip(unique, engines, strict=True)]
    profile_names: list[str] = []
    for _, report in models:
        profile_names += [p for p in report.profiles if p not in profile_names]
    profiles = tuple(
        (name, tuple(found.verdict.value if (found := report.profiles.get(name)) else "absent"
                     for _, report in models))
        for name in profile_names)
    outcomes: dict[str, dict[int, str]] = {}
    meta: dict[str, tuple[str, str]] = {}
    for index, (_, report) in enumerate(models):
        for entry in report.requirements:
            outcomes.setdefault(entry.id, {})[index] = entry.outcome.value
            meta.setdefault(entry.id, (entry.profile, entry.level))
    differing = tuple(
        (rid, *meta[rid], row)
        for rid, by_report in outcomes.items()
        if len(set(row := tuple(by_report.get(i, "absent") for i in range(len(reports))))) > 1)
    return Comparison(engines=tuple(engines), profiles=profiles, requirements=differing)


def _grid(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True))

    return [line(header).rstrip(), "  ".join("-" * w for w in widths),
            *(line(row).rstrip() for row in rows)]


def render_terminal(result: Comparison) -> str:
    """The side-by-side table for a terminal, engine text neutralized."""
    names = [terminal(e.label, one_line=True) for e in result.engines]
    lines = [f"engine {i + 1}: {name} — {terminal(e.verdict, one_line=True)}"
             for i, (name, e) in enumerate(zip(names, result.engines, strict=True))]
    header = ["profile", *(f"[{i + 1}]" for i in range(len(names)))]
    lines += ["", *_grid(header, [[name, *verdicts] for name, verdicts in result.profiles])]
    if result.requirements:
        header = ["requirement", "profile", "level", *(f"[{i + 1}]" for i in range(len(names)))]
        lines += ["", f"{len(result.requirements)} requirements differ:",
                  *_grid(header, [[rid, profile, level, *row]
                                  for rid, profile, level, row in result.requirements])]
    else:
        lines += ["", "every requirement has the same outcome in every report"]
    return "\n".join(lines)


def render_markdown(result: Comparison) -> str:
    """The side-by-side tables as Markdown, every cell escaped."""
    names = [markdown_inline(e.label) for e in result.engines]
    lines = ["| profile | " + " | ".join(names) + " |",
             "|---|" + "---|" * len(names)]
    lines += [f"| `{name}` | " + " | ".join(markdown_inline(v) for v in verdicts) + " |"
              for name, verdicts in result.profiles]
    lines += ["", "| requirement | profile | level | " + " | ".join(names) + " |",
              "|---|---|---|" + "---|" * len(names)]
    lines += [f"| {rid} | `{profile}` | {level} | "
              + " | ".join(markdown_inline(o) for o in row) + " |"
              for rid, profile, level, row in result.requirements]
    if not result.requirements:
        lines.append("| every requirement has the same outcome in every report | | |"
                     + " |" * len(names))
    return "\n".join(lines) + "\n"


def cmd_compare(args: argparse.Namespace) -> int:
    if args.json and args.markdown:
        raise UsageError("choose one of --json and --markdown")
    reports = [(path, load_report(path)) for path in args.reports]
    result = comparison(reports)
    if args.json:
        emit(True, result.to_json(), "")
    elif args.markdown:
        print(render_markdown(result), end="")
    else:
        print(render_terminal(result))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser],
             common: argparse.ArgumentParser) -> None:
    """Add ``memspec compare`` to the command line."""
    parser = sub.add_parser(
        "compare", parents=[common], formatter_class=argparse.RawDescriptionHelpFormatter,
        help="conformance reports side by side (profiles, then differing requirements)",
        description="Show conformance reports side by side: every profile's verdict per engine, "
                    "then every requirement whose outcome differs (exit 1 when a report cannot "
                    "be read or fails its check).",
        epilog="examples:\n  memspec compare a/report.json b/report.json\n"
               "  memspec compare --markdown memspec-report/report.json fg/report.json\n"
               "  memspec compare --json */report.json")
    parser.add_argument("reports", nargs="+", metavar="REPORT", help="conformance report files")
    parser.add_argument("--markdown", action="store_true", help="Markdown tables")
    parser.set_defaults(func=cmd_compare)
