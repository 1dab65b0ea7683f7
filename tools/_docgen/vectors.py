"""Vector pages: every file by group and flag, each test an anchor; raw copies."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from _docgen._common import (
    GEN,
    NO_REPORT,
    RAW_VECTORS,
    REPORT_PAGE,
    VECTORS_INDEX,
    IdLinker,
    code,
    front,
    generated_note,
    indent,
    json_block,
    md_heading,
    paragraph_id,
    plural,
    rel,
    text,
)
from _docgen.tracing import Trace

VECTOR_NODE = "suites/test_vectors.py::test_vector[{}]"


def page_of(stem: str) -> str:
    """The docs page of vectors file ``stem``."""
    return f"{GEN}/vectors/{stem}.md"


def _case_body(case: dict[str, Any]) -> str:
    parts = []
    if case.get("setup"):
        parts.extend([f"**Setup** ({plural(len(case['setup']), 'record')} put into a fresh "
                      "store first):", "", json_block(case["setup"], lang="text"), ""])
    parts.extend(["**Arguments:**", "", json_block(case.get("args", {}), lang="text"), ""])
    if case.get("result") == "valid":
        parts.extend(["**Expected** (each key equals the result's):", "",
                      json_block(case.get("expected", {}), lang="text"), ""])
    else:
        parts.append(f"**Expected error class:** `{case.get('error')}`")
    return "\n".join(parts).rstrip("\n")


def render_file(stem: str, doc: dict[str, Any], trace: Trace, linker: IdLinker) -> str:
    """The page of one vectors file."""
    page = page_of(stem)
    groups = doc.get("groups", [])
    cases = [case for g in groups for case in g.get("tests", [])]
    valid = sum(1 for c in cases if c.get("result") == "valid")
    out = [front(f"Vectors: {stem}", doc.get("description")),
           generated_note(f"`vectors/{stem}.json`"), ""]
    if doc.get("description"):
        out.extend([linker.text(str(doc["description"]), page), ""])
    schema_uri = str(doc.get("schema", ""))
    schema_link = code(schema_uri)
    if schema_uri.startswith("https://memspec.dev/schemas/"):
        name = schema_uri[len("https://memspec.dev/schemas/"):].removesuffix(".json")
        schema_link = f"[{name}]({rel(page, f'{GEN}/schemas/{name}.md')})"
    operations = sorted({str(g.get("operation")) for g in groups})
    out.extend([
        f"- **tests:** {len(cases)} ({valid} valid, {len(cases) - valid} invalid)",
        f"- **operations:** {', '.join(code(o) for o in operations)}",
        f"- **schema:** {schema_link}",
        f"- **download:** [{stem}.json]({rel(page, f'{RAW_VECTORS}/{stem}.json')})",
        "",
    ])
    notes: dict[str, str] = doc.get("notes", {})
    by_flag: dict[str, list[str]] = {flag: [] for flag in notes}
    for case in cases:
        for flag in case.get("flags", []):
            by_flag.setdefault(flag, []).append(str(case["id"]))
    out.extend(["## Flags", "", "| flag | meaning | tests |", "|---|---|---|"])
    for flag, ids in by_flag.items():
        meaning = linker.text(notes[flag], page) if flag in notes else "*(not explained)*"
        out.append(f'| <span id="flag-{flag}"></span>`{flag}` | {meaning} | {len(ids)} |')
    out.append("")
    for flag, ids in by_flag.items():
        if not ids:
            continue
        links = ", ".join(f"[{i.split('/', 1)[-1]}](#{i})" for i in ids)
        out.extend([f'??? abstract "Tests flagged `{flag}` ({len(ids)})"', f"    {links}", ""])
    out.extend(["## Groups", ""])
    for group in groups:
        gid = str(group["id"])
        tests = group.get("tests", [])
        out.extend([md_heading(3, text(gid), f"group-{gid}"), ""])
        if group.get("comment"):
            out.extend([linker.text(str(group["comment"]), page), ""])
        out.extend([f"Operation `{group.get('operation')}` · profile `{group.get('profile')}` "
                    f"· {plural(len(tests), 'test')}", ""])
        for case in tests:
            out.extend(_render_case(case, trace, linker, page))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).rstrip("\n") + "\n"


def _render_case(case: dict[str, Any], trace: Trace, linker: IdLinker, page: str) -> list[str]:
    cid = str(case["id"])
    flags = ", ".join(f"[{f}](#flag-{f})" for f in case.get("flags", [])) or "—"
    reqs = ", ".join(linker.link(r, page) if r in linker.ids else code(r)
                     for r in case.get("requirements", [])) or "—"
    result = str(case.get("result"))
    if result == "invalid":
        result = f"invalid (`{case.get('error')}`)"
    if trace.report is not None:
        outcome = trace.test_outcomes.get(VECTOR_NODE.format(cid), "not in the report")
        verdict = f" · reference engine: [{outcome}]({rel(page, REPORT_PAGE)})"
    else:
        verdict = ""
    prefix, attrs = paragraph_id(cid, ".memspec-vector")
    return [
        f"{prefix}**`{cid}`** · {result} · flags: {flags} · requirements: {reqs}{verdict}  ",
        linker.text(str(case.get("comment", "")), page) or "&nbsp;",
        attrs,
        "",
        '??? example "Arguments and expected result"',
        indent(_case_body(case)),
        "",
    ]


def render_index(files: list[tuple[str, dict[str, Any]]], readme: str | None,
                 linker: IdLinker, trace: Trace) -> str:
    """The vectors overview: files, flags across files, and the vectors README."""
    page = VECTORS_INDEX
    total = sum(len(g.get("tests", [])) for _, d in files for g in d.get("groups", []))
    out = [front("Vectors", "memspec's normative golden vectors, valid and invalid, "
                 "browsable by file, group and flag."),
           generated_note("`vectors/*.json`"), "",
           f"**{total} vectors** in {len(files)} files. Every vector is an anchor "
           "(`#records/missing-id`); every flag is explained on its file's page. A vector runs "
           "as: reset the engine, put each `setup` record, call the group's operation with "
           "`args`; a valid vector must answer every `expected` key with an equal value, an "
           "invalid one must be rejected with its error class and change nothing.", ""]
    if trace.report is None:
        out.extend([f"Reference engine outcomes: {NO_REPORT}.", ""])
    out.extend(["| file | tests | valid | invalid | operations | profiles | download |",
                "|---|---|---|---|---|---|---|"])
    for stem, doc in files:
        cases = [c for g in doc.get("groups", []) for c in g.get("tests", [])]
        valid = sum(1 for c in cases if c.get("result") == "valid")
        ops = sorted({str(g.get("operation")) for g in doc.get("groups", [])})
        profiles = sorted({str(g.get("profile")) for g in doc.get("groups", [])})
        out.append(f"| [{stem}]({rel(page, page_of(stem))}) | {len(cases)} | {valid} | "
                   f"{len(cases) - valid} | {', '.join(code(o) for o in ops)} | "
                   f"{', '.join(profiles)} | "
                   f"[{stem}.json]({rel(page, f'{RAW_VECTORS}/{stem}.json')}) |")
    out.extend(["", "## Flags across files", "", "| flag | used in |", "|---|---|"])
    flags: dict[str, list[str]] = {}
    for stem, doc in files:
        used = {f for g in doc.get("groups", []) for c in g.get("tests", [])
                for f in c.get("flags", [])}
        for flag in sorted(set(doc.get("notes", {})) | used):
            flags.setdefault(flag, []).append(
                f"[{stem}]({rel(page, page_of(stem) + '#flag-' + flag)})")
    for flag in sorted(flags):
        out.append(f"| `{flag}` | {', '.join(flags[flag])} |")
    out.append("")
    if readme:
        out.extend(["## About the vectors", "",
                    "*From `vectors/README.md`:*", "", _demote(readme), ""])
    return "\n".join(out)


def _demote(markdown: str) -> str:
    """A README's body under this page's headings: its title dropped, headings one deeper."""
    lines = markdown.splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    out = []
    fence = False
    for line in lines:
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        if not fence and re.match(r"#{1,5} ", line):
            line = "#" + line
        out.append(line)
    return "\n".join(out).strip("\n")


def build(folder: Path, files: list[tuple[str, dict[str, Any]]], trace: Trace,
          linker: IdLinker) -> dict[str, bytes]:
    """Vector pages, the index and raw copies (with the published vectors)."""
    readme_path = folder / "README.md"
    readme = readme_path.read_text(encoding="utf-8") if readme_path.exists() else None
    out: dict[str, bytes] = {VECTORS_INDEX: render_index(files, readme, linker, trace).encode()}
    for stem, doc in files:
        out[page_of(stem)] = render_file(stem, doc, trace, linker).encode()
        out[f"{RAW_VECTORS}/{stem}.json"] = (folder / f"{stem}.json").read_bytes()
    published = folder / "published"
    if published.is_dir():
        for path in sorted(published.iterdir()):
            if path.is_file() and not path.name.startswith("."):
                out[f"{RAW_VECTORS}/published/{path.name}"] = path.read_bytes()
    return out
