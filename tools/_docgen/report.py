"""The reference engine's conformance report page (from a report JSON)."""

from __future__ import annotations

import json
import re
from typing import Any

from _docgen._common import (
    GEN,
    REPORT_PAGE,
    REQUIREMENTS_PAGE,
    TESTS_PAGE,
    IdLinker,
    cell,
    code,
    front,
    generated_note,
    rel,
)
from _docgen.tracing import Trace
from memspec._display import code_fence, markdown_inline, terminal
from memspec.cli._render import test_counts

REPORT_JSON = f"{GEN}/reference-report.json"
_ADMONITION = {"certified": "success", "failed": "failure", "errored": "danger",
               "incomplete": "warning", "partial": "warning"}
_NAME = re.compile(r"[a-z][a-z0-9-]*\Z")


# Everything below that comes from the report is the engine's (or the report file's) to
# choose: it is shown as data, never as Markdown or HTML (memspec._display).
def _code(value: object) -> str:
    return code(terminal(str(value), one_line=True))


def _word(value: object) -> str:
    """A vocabulary word (an outcome, a level, a profile): shown as is only when it is one."""
    return str(value) if _NAME.match(str(value)) else markdown_inline(str(value))


def _linked(value: object, linker: IdLinker, page: str) -> str:
    """``value`` as literal text with the requirement ids in it linked."""
    return linker.literal(str(value), page, markdown_inline)


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "none"


def _test_link(nodeid: str, page: str, trace: Trace) -> str:
    """A link to the test's row on the kit tests page (or its vector), when there is one."""
    base = nodeid.split("[", 1)[0]
    if base == "suites/test_vectors.py::test_vector" and nodeid.endswith("]"):
        vid = nodeid[len(base) + 1:-1]
        case = next((v for v in trace.vectors if v.id == vid), None)
        if case is not None:
            return f"[{_code(vid)}]({rel(page, f'{GEN}/vectors/{case.file}.md#{vid}')})"
    if any(t.nodeid == base for t in trace.tests):
        return f"[{_code(nodeid)}]({rel(page, TESTS_PAGE + '#' + base)})"
    return _code(nodeid)


def render_report(report: dict[str, Any] | None, linker: IdLinker, trace: Trace) -> str:
    """The report page; a note saying how to make one when no report is given."""
    page = REPORT_PAGE
    out = [front("The reference engine's report", "What the memspec conformance kit found "
                 "about the reference engine, per profile and per requirement.")]
    if report is None:
        out.extend([
            '!!! warning "No report given"',
            "    This site was built without a conformance report, so it shows no verdicts. "
            "Make one and rebuild:",
            "",
            "    ```bash",
            "    memspec certify --engine reference --report report.json",
            "    python tools/gen_docs.py --report report.json",
            "    mkdocs build --strict",
            "    ```",
            ""])
        return "\n".join(out)
    engine = report.get("engine", {})
    kit = report.get("kit", {})
    summary = report.get("summary", {})
    verdict = str(report.get("verdict"))
    shown = verdict if verdict in _ADMONITION else "unknown"
    out.extend([generated_note("the conformance report passed to `--report`"), "",
                f'!!! {_ADMONITION.get(shown, "note")} "Verdict: {shown}"',
                f"    {markdown_inline(str(engine.get('name', '?')))} "
                f"{markdown_inline(str(engine.get('version') or ''))} against memspec kit "
                f"{markdown_inline(str(kit.get('version', '?')))} "
                f"({markdown_inline(str(report.get('spec_version', '')))}), "
                f"{markdown_inline(str(report.get('mode', '')))} mode.", "",
                f"- **engine:** {_code(engine.get('name', ''))} "
                f"{_code(engine.get('version')) if engine.get('version') else ''}",
                f"- **loaded as:** {_code(engine.get('loaded_as', '—'))}",
                f"- **protocol:** {_code(engine.get('protocol'))}",
                f"- **kit:** {_code(kit.get('version', ''))}",
                f"- **spec version:** {_code(report.get('spec_version', ''))}",
                f"- **suite digest:** {_code(report.get('suite_digest', ''))}",
                f"- **run:** {_code(report.get('started_at', ''))} to "
                f"{_code(report.get('finished_at', ''))}",
                f"- **tests:** {markdown_inline(_counts(test_counts(report)))}",
                f"- **requirements:** {markdown_inline(_counts(summary.get('requirements', {})))}",
                f"- **warnings:** {markdown_inline(str(summary.get('warnings', 0)))} "
                "(SHOULD / MAY requirements not met)",
                f"- **input strictness:** "
                f"{_word(report.get('input_strictness', {}).get('verdict', 'not judged'))}",
                f"- **download:** [reference-report.json]({rel(page, REPORT_JSON)})"])
    if engine.get("fault"):
        out.append(f"- **engine fault:** {markdown_inline(str(engine['fault']))}")
    signature = report.get("signature")
    if isinstance(signature, dict):
        out.append(f"- **signed by:** {_code(signature.get('signed_by'))}")
    out.extend(["", "## Profiles", "", "| profile | claimed | verdict | notes |",
                "|---|---|---|---|"])
    for name, info in report.get("profiles", {}).items():
        notes = "; ".join(_linked(n, linker, page) for n in info.get("notes", []))
        label = (f"[{name}]({rel(page, REQUIREMENTS_PAGE + '#profile-' + name)})"
                 if _NAME.match(str(name)) else markdown_inline(str(name)))
        out.append(f"| {label} | {'yes' if info.get('claimed') else 'no'} | "
                   f"{_word(info.get('verdict'))} | {notes} |")
    out.extend(["", "## Requirements", "",
                "| requirement | level | profile | outcome | tests passed | note |",
                "|---|---|---|---|---|---|"])
    for item in report.get("requirements", []):
        rid = str(item.get("id"))
        tests = item.get("tests", [])
        passed = sum(1 for t in tests if t.get("outcome") == "passed")
        link = (f'<span id="{rid}"></span>{linker.link(rid, page)}' if rid in linker.ids
                else _code(rid))
        out.append(f"| {link} | {_word(item.get('level'))} | "
                   f"{_word(item.get('profile'))} | **{_word(item.get('outcome'))}** | "
                   f"{passed} / {len(tests)} | "
                   f"{cell(_linked(item.get('note', ''), linker, page))} |")
    problems = [(item, t) for item in report.get("requirements", [])
                for t in item.get("tests", []) if t.get("outcome") in ("failed", "errored")]
    problems += [({"id": "kit"}, t) for t in report.get("kit_checks", [])
                 if t.get("outcome") in ("failed", "errored")]
    out.extend(["", "## Failures", ""])
    if not problems:
        out.append("No test failed or errored.")
    seen: set[str] = set()
    for item, test in problems:
        nodeid = str(test.get("nodeid"))
        if nodeid in seen:
            continue
        seen.add(nodeid)
        out.extend([f"- {_test_link(nodeid, page, trace)}: **{_word(test.get('outcome'))}** "
                    f"({_linked(item.get('id'), linker, page)})"])
        if test.get("message"):
            block = code_fence(str(test["message"]).strip("\n"), "text")
            out.extend(["", *("    " + line for line in block.splitlines()), ""])
    checks = report.get("kit_checks", [])
    if checks:
        out.extend(["", "## Kit checks", "", "| check | outcome |", "|---|---|"])
        for check in checks:
            out.append(f"| {_test_link(str(check.get('nodeid')), page, trace)} | "
                       f"{_word(check.get('outcome'))} |")
    out.append("")
    return "\n".join(out)


def build(report: dict[str, Any] | None, linker: IdLinker, trace: Trace) -> dict[str, bytes]:
    """The report page (and the report itself as a download)."""
    out = {REPORT_PAGE: render_report(report, linker, trace).encode()}
    if report is not None:
        out[REPORT_JSON] = (json.dumps(report, indent=2, ensure_ascii=False) + "\n").encode()
    return out
