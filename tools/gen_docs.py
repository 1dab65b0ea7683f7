"""Generate the spec website's normative pages from the repository's data.

Usage (from anywhere; paths are relative to this repository):

    python tools/gen_docs.py [--report PATH] [--selftest PATH] [--out docs/generated]
    mkdocs build --strict
    python tools/gen_docs.py --record-selftest [--changed]   (docs/assets/selftest-result.json)

Writes Markdown pages into --out (default docs/generated/) and, beside it,
the raw downloads MkDocs copies into the site at their URL paths:
docs/schemas/ (each schema at the path of its $id), docs/vectors/ and
docs/spec/. All four folders are generated and never edited by hand; they are
wiped and rewritten on every run. The same inputs always give the same bytes.

Inputs: spec/SPEC.md and spec/EXTENSIONS.md (with spec/requirements.json, which
must be current), spec/legality.json, spec/operations.json, spec/extensions.json,
schemas/, vectors/, the kit's
suites (scanned statically), memspec.cli.build_parser(), the packages'
__all__, an optional conformance report (--report, written by
`memspec certify --engine reference --report PATH`) and an optional selftest
result (--selftest, written by `memspec selftest --json PATH`). Mermaid comes
from the pinned npm package (fetched once with `npm pack` into a cache outside
the repository) or from --mermaid.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _docgen import (
    api,
    assets,
    benchmarks,
    cli,
    implementations,
    kitpower,
    lifecycle,
    report,
    schemas,
    selftest_record,
    spec,
    vectors,
)
from _docgen._common import (
    EXTENSIONS_PAGE,
    GEN,
    LIFECYCLE_PAGE,
    OPERATIONS_PAGE,
    RAW_SCHEMAS,
    RAW_SPEC,
    RAW_VECTORS,
    REQUIREMENTS_PAGE,
    ROOT,
    SELFTEST_RESULT,
    SPEC_PAGE,
    TESTS_PAGE,
    DocgenError,
    IdLinker,
    read_json,
)
from _docgen.traceability import render_requirements, render_tests
from _docgen.tracing import build_trace, load_report, load_vector_files

from memspec._errors import MemspecError
from memspec._requirements import parse_requirements

#: Marker file in every folder this tool owns: it refuses to wipe a folder without one.
MARKER = ".generated-by-gen_docs"
RAW_SPEC_FILES = ("requirements.json", "legality.json", "operations.json", "extensions.json")
#: The normative documents: (source, page, page description).
DOCUMENTS = (
    ("spec/SPEC.md", SPEC_PAGE, "The normative text of fg-agent-memory/0.1 as memspec "
     "standardizes it, with every requirement's kit tests, vectors and reference verdict."),
    ("spec/EXTENSIONS.md", EXTENSIONS_PAGE, "memspec's optional extension profiles for "
     "fg-agent-memory/0.1, with every requirement's kit tests and reference verdict."),
)
NO_EXTENSIONS = "# Extension profiles\n\nThis version of memspec defines no extension profiles.\n"


def _stale_check(root: Path) -> None:
    """Refuse to document a requirements.json that no longer matches its sources."""
    import gen_requirements

    current = (root / "spec" / "requirements.json").read_text(encoding="utf-8")
    if root.resolve() == gen_requirements.ROOT.resolve() and current != gen_requirements.render():
        raise DocgenError("spec/requirements.json is stale: run python tools/gen_requirements.py")


def _documents(root: Path, profiles: list[str]) -> list[tuple[spec.Document, list[Any], str]]:
    """(document, its requirements, page description) of SPEC.md and EXTENSIONS.md."""
    found = []
    for source, page, description in DOCUMENTS:
        path = root / source
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        doc = spec.Document(page, source, text, spec.section_anchors(text))
        found.append((doc, parse_requirements(text, profiles), description))
    return found


def generate(
    root: Path = ROOT,
    report_path: Path | None = None,
    selftest_path: Path | None = None,
    mermaid: dict[str, bytes] | None = None,
) -> dict[str, bytes]:
    """Every generated file, keyed by its path relative to the docs folder."""
    operations: dict[str, Any] = read_json(root / "spec" / "operations.json")
    extension_table = root / "spec" / "extensions.json"
    extensions: dict[str, Any] = (read_json(extension_table) if extension_table.is_file()
                                  else {"profiles": {}, "operations": {}})
    profiles: dict[str, Any] = {**operations.get("profiles", {}),
                                **extensions.get("profiles", {})}
    _stale_check(root)
    documents = _documents(root, list(profiles))
    reqs = [r for _, found, _ in documents for r in found]
    linker = IdLinker({r.id: doc.page for doc, found, _ in documents for r in found})
    sections = {doc.page: doc.sections for doc, _, _ in documents}
    spec_sections = sections.get(SPEC_PAGE, {})
    conformance = load_report(report_path)
    trace = build_trace(root, conformance)
    files = load_vector_files(root / "vectors")
    legality = read_json(root / "spec" / "legality.json")

    out: dict[str, bytes] = {}
    for doc, found, description in documents:
        out[doc.page] = spec.render(doc, found, trace, linker, spec_sections,
                                    description).encode()
    if EXTENSIONS_PAGE not in out:
        out[EXTENSIONS_PAGE] = NO_EXTENSIONS.encode()
    out[REQUIREMENTS_PAGE] = render_requirements(
        sorted(reqs, key=lambda r: r.sort_key()), profiles, trace, linker, sections).encode()
    out[TESTS_PAGE] = render_tests(trace, linker, root / "conformance" / "suites").encode()
    out[LIFECYCLE_PAGE] = lifecycle.render_lifecycle(legality, linker).encode()
    merged = {**operations, "profiles": profiles,
              "operations": {**operations.get("operations", {}),
                             **extensions.get("operations", {})}}
    out[OPERATIONS_PAGE] = lifecycle.render_operations(merged, linker).encode()
    out.update(schemas.build(root / "schemas", linker, files))
    out.update(vectors.build(root / "vectors", files, trace, linker))
    out.update(report.build(conformance, linker, trace))
    if selftest_path is None and (root / SELFTEST_RESULT).is_file():
        selftest_path = root / SELFTEST_RESULT  # the committed result of SELFTEST_COMMAND
    selftest = read_json(selftest_path) if selftest_path is not None else None
    out.update(kitpower.build(selftest, linker, set(profiles)))
    out.update(benchmarks.build(benchmarks.load(root)))
    out.update(cli.build())
    out.update(api.build(linker))
    out.update(implementations.build(root, linker))
    for name in RAW_SPEC_FILES:
        if (root / "spec" / name).is_file():
            out[f"{RAW_SPEC}/{name}"] = (root / "spec" / name).read_bytes()
    if mermaid is not None:
        out.update(mermaid)
    return out


def _owned_folders(docs: Path, out: Path) -> list[Path]:
    return [out, docs / RAW_SCHEMAS, docs / RAW_VECTORS, docs / RAW_SPEC]


def _wipe(folder: Path) -> None:
    """Empty a folder this tool owns (one with the marker, or an empty one)."""
    if not folder.exists():
        return
    if any(folder.iterdir()) and not (folder / MARKER).is_file():
        raise DocgenError(f"{folder} exists and was not written by gen_docs (no {MARKER}); "
                          "refusing to delete it")
    import shutil

    shutil.rmtree(folder)


def write(files: dict[str, bytes], out: Path) -> int:
    """Replace the generated folders with ``files``; returns how many files were written."""
    docs = out.parent
    for folder in _owned_folders(docs, out):
        _wipe(folder)
    for folder in _owned_folders(docs, out):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / MARKER).write_text("Generated by tools/gen_docs.py; do not edit.\n",
                                     encoding="utf-8")
    for rel_path, data in sorted(files.items()):
        if rel_path.startswith(GEN + "/"):
            target = out / rel_path[len(GEN) + 1:]
        else:
            target = docs / rel_path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return len(files)


def record_selftest(target: Path, *, changed: bool = False) -> int:
    """Run the fault catalogue in both modes and write the result the site shows; with
    ``changed``, run only the faults ``target`` does not record as they are now (and the
    reference engine) and merge them into it."""
    from memspec.selftest.runner import check_result, run_selftest

    names: list[str] | None = None
    old: dict[str, Any] | None = None
    if changed:
        try:
            old = kitpower.check_result(read_json(target))
            stale = selftest_record.staleness(old, selftest_record.catalogue())
        except MemspecError as exc:
            print(f"gen_docs: cannot bring {target} current: {exc}", file=sys.stderr)
            return 1
        if stale.current:
            print(f"gen_docs: {target} already records every fault of the catalogue as it is")
            return 0
        for line in stale.explain():
            print(f"gen_docs: {line}")
        names = list(stale.to_run)
        modes = tuple(old["modes"])
    else:
        modes = ("in-process", "process")
    def progress(done: int, total: int, label: str, outcome: str) -> None:
        print(f"gen_docs: [{done}/{total}] {label}: {outcome}", flush=True)

    result = run_selftest(names, modes=modes, jobs=2, scope="requirement", progress=progress)
    document = result.to_json()
    if old is not None:
        document = selftest_record.merge(old, document, selftest_record.catalogue())
    problems = check_result(document)
    if problems:
        print(f"gen_docs: the selftest result is malformed: {problems[0]}", file=sys.stderr)
        return 1
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n",
                      encoding="utf-8")
    summary = document["summary"]
    ran = f" ({len(names)} faults run again)" if names is not None else ""
    print(f"gen_docs: {summary['caught']} of {summary['runs']} fault runs caught{ran}; "
          f"written to {target}")
    return 0 if summary["ok"] else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  python tools/gen_docs.py\n"
               "  python tools/gen_docs.py --report report.json --selftest selftest.json\n"
               "  python tools/gen_docs.py --record-selftest --changed   after adding a fault")
    parser.add_argument("--report", type=Path, metavar="PATH",
                        help="the reference engine's conformance report JSON")
    parser.add_argument("--selftest", type=Path, metavar="PATH",
                        help="a selftest result JSON (memspec selftest --json PATH; default "
                             f"the committed {SELFTEST_RESULT})")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / GEN, metavar="DIR",
                        help="folder of the generated pages (default docs/generated); raw "
                             "downloads go beside it")
    parser.add_argument("--mermaid", type=Path, metavar="PATH",
                        help="a mermaid.min.js to use instead of the pinned npm package")
    parser.add_argument("--cache", type=Path, metavar="DIR",
                        help="where the mermaid npm package is cached (default "
                             "$MEMSPEC_DOCS_CACHE or ~/.cache/memspec-docs)")
    parser.add_argument("--record-selftest", action="store_true",
                        help=f"run the selftest (every fault, both modes, each fault against "
                             f"the kit tests naming its requirement) and write {SELFTEST_RESULT}, "
                             "the result the site is built with; slow (about 50 minutes)")
    parser.add_argument("--changed", action="store_true",
                        help="with --record-selftest: run only the faults the committed result "
                             "lacks or records otherwise than they are now (and the reference "
                             "engine), and merge them into it; minutes")
    args = parser.parse_args(argv)
    if args.changed and not args.record_selftest:
        parser.error("--changed goes with --record-selftest")
    if args.record_selftest:
        return record_selftest(ROOT / SELFTEST_RESULT, changed=args.changed)
    try:
        mermaid = (assets.mermaid_from_file(args.mermaid) if args.mermaid
                   else assets.mermaid_files(args.cache))
        files = generate(ROOT, args.report, args.selftest, mermaid)
        count = write(files, args.out.resolve())
    except MemspecError as exc:
        print(f"gen_docs: {exc}", file=sys.stderr)
        return 1
    print(f"gen_docs: wrote {count} files under {args.out} and its raw download folders")
    return 0


if __name__ == "__main__":
    sys.exit(main())
