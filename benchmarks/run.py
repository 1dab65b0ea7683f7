"""Run every memspec benchmark, print a table and write ``benchmarks/results.json``.

    python -m benchmarks.run            # full mode (several minutes)
    python -m benchmarks.run --quick    # under two minutes on a 2-core machine
    python -m benchmarks.run --only certify --update benchmarks/results.json
    python benchmarks/run.py --quick --out /tmp/results.json

Every entry compares memspec with a baseline measured in the same run and
judges the ratio against a goal; nothing here fails on timing. A benchmark
whose optional package is missing is reported as skipped, one that crashes
as an error, and the run goes on.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _codec, _neardup, _pipeline, _stores, _suite
from benchmarks._harness import Goal, Result, Sizes, Skip

__all__ = ["MODES", "SCHEMA_ID", "main", "markdown", "run", "table", "update"]

SCHEMA_ID = "https://memspec.dev/schemas/benchmark-results.json"
DEFAULT_OUT = Path(__file__).resolve().parent / "results.json"

MODES: dict[str, Sizes] = {
    "full": Sizes(
        mode="full", repeats=5, canonical_records=100_000, jcs_records=20_000,
        fingerprint_records=50_000, signed_records=10_000, schema_records=20_000,
        store_puts=300, recall_sizes=(10_000, 100_000), recall_queries=40,
        consolidation_sizes=(10_000, 100_000), consolidation_budget_s=600.0,
        consolidation_repeats=5, suite_repeats=3, suite_targets=("memspec.conformance",),
    ),
    "quick": Sizes(
        mode="quick", repeats=1, canonical_records=20_000, jcs_records=4_000,
        fingerprint_records=10_000, signed_records=1_000, schema_records=300,
        store_puts=60, recall_sizes=(2_000, 20_000), recall_queries=15,
        consolidation_sizes=(2_000, 20_000), consolidation_budget_s=8.0, consolidation_repeats=1,
        suite_repeats=2,
        suite_targets=("memspec.conformance.suites.test_protocol",),
    ),
    # Hidden: a tiny run that exercises every code path (used by the test suite).
    "smoke": Sizes(
        mode="smoke", repeats=1, canonical_records=300, jcs_records=60,
        fingerprint_records=200, signed_records=20, schema_records=60,
        store_puts=4, recall_sizes=(30, 300), recall_queries=3,
        consolidation_sizes=(60, 600), consolidation_budget_s=1.0, consolidation_repeats=1,
        suite_repeats=1,
        suite_targets=("memspec.conformance.suites.test_protocol::"
                       "test_hello_names_the_engine_its_versions_and_its_claims",),
    ),
}

_Bench = Callable[[Sizes, dict[str, Any]], "Result | list[Result]"]


def _registry() -> list[tuple[str, _Bench]]:
    return [*_codec.BENCHMARKS, *_stores.BENCHMARKS, *_pipeline.BENCHMARKS,
            *_neardup.BENCHMARKS, *_suite.BENCHMARKS]


def run(sizes: Sizes, only: Sequence[str] = (), *, echo: Callable[[str], None] = print
        ) -> dict[str, Any]:
    """Run the selected benchmarks at ``sizes``; return the results document."""
    cache: dict[str, Any] = {}
    results: list[Result] = []
    started = time.perf_counter()
    for name, bench in _registry():
        if only and not any(word in name for word in only):
            continue
        echo(f"... {name}")
        begin = time.perf_counter()
        try:
            produced = bench(sizes, cache)
            batch = produced if isinstance(produced, list) else [produced]
        except Skip as exc:
            batch = [Result(name=name, compares="(not run)", goal=Goal(">=", 0, "n/a"),
                            status="skipped", reason=str(exc))]
        except Exception as exc:  # a broken benchmark is reported, never fatal
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            batch = [Result(name=name, compares="(crashed)", goal=Goal(">=", 0, "n/a"),
                            status="error", reason=detail[:2000])]
        elapsed = time.perf_counter() - begin
        for result in batch:
            result.seconds = elapsed / len(batch)
            results.append(result)
            echo("    " + _line(result))
    return {
        "$schema": SCHEMA_ID,
        "format": "memspec-benchmark-results/1",
        "mode": sizes.mode,
        "created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "seconds": round(time.perf_counter() - started, 1),
        "environment": _environment(),
        "method": ("paired runs: subject and baseline alternate in the same process; figures "
                   "are medians over repeats, ratios medians of per-pair ratios; goals are "
                   "judged, never asserted"),
        "summary": {status: sum(r.status == status for r in results)
                    for status in ("met", "unmet", "skipped", "error")},
        "results": [r.to_json() for r in results],
    }


def update(document: dict[str, Any], partial: dict[str, Any]) -> dict[str, Any]:
    """``document`` with the entries of ``partial`` (a run of some benchmarks, same mode) in
    place of its entries of the same names; each says when it was re-measured and under
    what load, since the document's environment describes the run that made the rest."""
    if document.get("mode") != partial["mode"]:
        raise SystemExit(f"cannot update a {document.get('mode')} results file with a "
                         f"{partial['mode']} run")
    load = partial["environment"]["load_average_1m_at_end"]
    fresh = {}
    for entry in partial["results"]:
        note = (f"re-measured on its own at {partial['created_at']} (python -m benchmarks.run "
                f"--only ... --update; load average {load} at the end); the other entries "
                f"are from the run of {document['created_at']}")
        fresh[entry["name"]] = {**entry, "notes": f"{entry['notes']}; {note}"
                                if entry.get("notes") else note}
    results = [fresh.pop(entry["name"], entry) for entry in document["results"]]
    results.extend(fresh.values())
    summary = {status: sum(r["status"] == status for r in results)
               for status in ("met", "unmet", "skipped", "error")}
    return {**document, "summary": summary, "results": results}


def _environment() -> dict[str, Any]:
    versions: dict[str, str] = {}
    for dist in ("memspec", "jsonschema", "cryptography", "fg-agent-id", "rfc8785",
                 "agent-memory-contracts"):
        try:
            from importlib.metadata import version

            versions[dist] = version(dist)
        except Exception:
            versions[dist] = "not installed"
    try:
        load = os.getloadavg()[0]
    except OSError:  # pragma: no cover - not every platform has it
        load = -1.0
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count() or 0,
        "load_average_1m_at_end": round(load, 2),
        "packages": versions,
    }


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def _line(result: Result) -> str:
    if result.status in ("skipped", "error"):
        return f"{result.name}: {result.status.upper()} {result.reason}"
    assert result.subject is not None and result.baseline is not None
    return (f"{result.name}: {_fmt(result.subject.value)} vs {_fmt(result.baseline.value)} "
            f"{result.subject.unit}, ratio {_fmt(result.ratio)} (goal {result.goal.text}) "
            f"-> {result.status.upper()}")


def table(document: dict[str, Any]) -> str:
    """The results as a plain-text table (one row per entry, then the unmet details)."""
    header = ("benchmark", "memspec / subject", "baseline", "ratio", "goal", "status")
    rows = [header]
    for entry in document["results"]:
        subject, baseline = entry["subject"], entry["baseline"]
        rows.append((
            entry["name"],
            "-" if subject is None else f"{_fmt(subject['value'])} {subject['unit']}",
            "-" if baseline is None else f"{_fmt(baseline['value'])} {baseline['unit']}",
            _fmt(entry["ratio"]),
            entry["goal"]["text"] if entry["status"] not in ("skipped", "error") else "-",
            entry["status"].upper() if entry["status"] != "skipped" else entry["reason"],
        ))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
             for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for entry in document["results"]:
        if entry["status"] == "unmet":
            lines.append(f"\n{entry['name']}: {entry['gap']}\n  cause: {entry['cause']}")
        elif entry["status"] == "error":
            lines.append(f"\n{entry['name']}: ERROR {entry['reason']}")
    summary = document["summary"]
    lines.append(f"\n{document['mode']} mode, {document['seconds']} s: "
                 + ", ".join(f"{v} {k}" for k, v in summary.items()))
    return "\n".join(lines)


def markdown(document: dict[str, Any]) -> str:
    """The results as a Markdown table (for the README)."""
    lines = ["| benchmark | memspec / subject | baseline | ratio | goal | status |",
             "|---|---|---|---|---|---|"]
    for entry in document["results"]:
        subject, baseline = entry["subject"], entry["baseline"]
        lines.append("| " + " | ".join((
            f"`{entry['name']}`",
            "-" if subject is None else f"{_fmt(subject['value'])} {subject['unit']}",
            "-" if baseline is None else f"{_fmt(baseline['value'])} {baseline['unit']}",
            _fmt(entry["ratio"]),
            entry["goal"]["text"].replace("ratio ", "") if entry["ratio"] is not None else "-",
            "**unmet**" if entry["status"] == "unmet" else entry["reason"]
            if entry["status"] in ("skipped", "error") else entry["status"],
        )) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="smaller sizes and fewer repeats (under two minutes)")
    parser.add_argument("--smoke", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"where to write the results JSON (default {DEFAULT_OUT})")
    parser.add_argument("--markdown", type=Path, metavar="RESULTS",
                        help="print RESULTS (a results.json) as a Markdown table and exit")
    parser.add_argument("--only", action="append", default=[], metavar="WORD",
                        help="run only benchmarks whose name contains WORD (repeatable)")
    parser.add_argument("--update", type=Path, metavar="RESULTS",
                        help="replace the entries run in RESULTS (a results.json of the same "
                             "mode), each noted as re-measured on its own, and write it back")
    args = parser.parse_args(argv)
    if args.markdown is not None:
        print(markdown(json.loads(args.markdown.read_text(encoding="utf-8"))))
        return 0
    sizes = MODES["smoke" if args.smoke else "quick" if args.quick else "full"]
    document = run(sizes, args.only, echo=lambda line: print(line, file=sys.stderr,
                                                               flush=True))
    if args.update is not None:
        document = update(json.loads(args.update.read_text(encoding="utf-8")), document)
        args.out = args.update
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n",
                        encoding="utf-8")
    print(table(document))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
