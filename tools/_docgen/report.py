"""The reference engine's conformance report page (from a report JSON)."""

from __future__ import annotations

import json
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
    text,
)
from _docgen.tracing import Trace

REPORT_JSON = f"{GEN}/reference-report.json"
_ADMONITION = {"certified": "success", "failed": "failure", "errored": "danger",
               "incomplete": "warning", "partial": "warning"}


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "none"


def _test_link(nodeid: str, page: str, trace: Trace) -> str:
    """A link to the test's row on the kit tests page (or its vector), when there is one."""
    base = nodeid.split("[", 1)[0]
    if base == "suites/test_vectors.py::test_vector" and nodeid.endswith("]"):
        vid = nodeid[len(base) + 1:-1]
        case = next((v for v in trace.vectors if v.id == vid), None)
        if case is not None:
            return f"[{code(vid)}]({rel(page, f'{GEN}/vectors/{case.file}.md#{vid}')})"
    if any(t.nodeid == base for t in trace.tests):
        return f"[{code(nodeid)}]({rel(page, TESTS_PAGE + '#' + base)})"
    return code(nodeid)


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
    verdict = str(report.get("verdict"))
    out.extend([generated_note("the conformance report passed to `--report`"), "",
                f'!!! {_ADMONITION.get(verdict, "note")} "Verdict: {verdict}"',
                f"    {text(str(engine.get('name', '?')))} "
                f"{text(str(engine.get('version') or ''))} against memspec kit "
                f"{text(str(kit.get('version', '?')))} "
                f"({text(str(report.get('spec_version', '')))}), "
                f"{text(str(report.get('mode', '')))} mode.", "",
                f"- **engine:** {code(str(engine.get('name', '')))} "
                f"{code(str(engine.get('version'))) if engine.get('version') else ''}",
                f"- **loaded as:** {code(str(engine.get('loaded_as', '—')))}",
                f"- **protocol:** {code(str(engine.get('protocol')))}",
                f"- **kit:** {code(str(kit.get('version', '')))}",
                f"- **spec version:** {code(str(report.get('spec_version', '')))}",
                f"- **suite digest:** {code(str(report.get('suite_digest', '')))}",
                f"- **run:** {code(str(report.get('started_at', '')))} to "
                f"{code(str(report.get('finished_at', '')))}",
                f"- **tests:** {_counts(report.get('summary', {}).get('tests', {}))}",
                "- **requirements:** "
                f"{_counts(report.get('summary', {}).get('requirements', {}))}",
                f"- **warnings:** {report.get('summary', {}).get('warnings', 0)} "
                "(SHOULD / MAY requirements not met)",
                f"- **download:** [reference-report.json]({rel(page, REPORT_JSON)})"])
    if engine.get("fault"):
        out.append(f"- **engine fault:** {text(str(engine['fault']))}")
    signature = report.get("signature")
    if isinstance(signature, dict):
        out.append(f"- **signed by:** {code(str(signature.get('signed_by')))}")
    out.extend(["", "## Profiles", "", "| profile | claimed | verdict | notes |",
                "|---|---|---|---|"])
    for name, info in report.get("profiles", {}).items():
        notes = "; ".join(text(str(n)) for n in info.get("notes", []))
        out.append(f"| [{name}]({rel(page, REQUIREMENTS_PAGE + '#profile-' + name)}) | "
                   f"{'yes' if info.get('claimed') else 'no'} | {info.get('verdict')} | "
                   f"{notes} |")
    out.extend(["", "## Requirements", "",
                "| requirement | level | profile | outcome | tests passed | note |",
                "|---|---|---|---|---|---|"])
    for item in report.get("requirements", []):
        rid = str(item.get("id"))
        tests = item.get("tests", [])
        passed = sum(1 for t in tests if t.get("outcome") == "passed")
        link = linker.link(rid, page) if rid in linker.ids else code(rid)
        out.append(f'| <span id="{rid}"></span>{link} | {item.get("level")} | '
                   f"{item.get('profile')} | **{item.get('outcome')}** | "
                   f"{passed} / {len(tests)} | "
                   f"{cell(linker.text(str(item.get('note', '')), page))} |")
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
        out.extend([f"- {_test_link(nodeid, page, trace)}: **{test.get('outcome')}** "
                    f"({linker.text(str(item.get('id')), page)})"])
        if test.get("message"):
            message = str(test["message"]).strip()
            out.extend(["", "    ```text", *("    " + line for line in message.splitlines()),
                        "    ```", ""])
    checks = report.get("kit_checks", [])
    if checks:
        out.extend(["", "## Kit checks", "", "| check | outcome |", "|---|---|"])
        for check in checks:
            out.append(f"| {_test_link(str(check.get('nodeid')), page, trace)} | "
                       f"{check.get('outcome')} |")
    out.append("")
    return "\n".join(out)


def build(report: dict[str, Any] | None, linker: IdLinker, trace: Trace) -> dict[str, bytes]:
    """The report page (and the report itself as a download)."""
    out = {REPORT_PAGE: render_report(report, linker, trace).encode()}
    if report is not None:
        out[REPORT_JSON] = (json.dumps(report, indent=2, ensure_ascii=False) + "\n").encode()
    return out
