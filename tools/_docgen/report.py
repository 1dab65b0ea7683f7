"""The reference engine's conformance report page (from a report JSON)."""

from __future__ import annotations

import re

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
from memspec.report import Outcome, Report

REPORT_JSON = f"{GEN}/reference-report.json"
_ADMONITION = {"certified": "success", "failed": "failure", "errored": "danger",
               "incomplete": "warning", "partial": "warning"}
_NAME = re.compile(r"[a-z][a-z0-9-]*\Z")
_NOT_MET = (Outcome.FAILED, Outcome.ERRORED)


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


def render_report(report: Report | None, linker: IdLinker, trace: Trace) -> str:
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
    engine = report.engine
    summary = report.summary
    verdict = report.verdict.value
    shown = verdict if verdict in _ADMONITION else "unknown"
    strictness = report.input_strictness.verdict if report.input_strictness else "not judged"
    out.extend([generated_note("the conformance report passed to `--report`"), "",
                f'!!! {_ADMONITION.get(shown, "note")} "Verdict: {shown}"',
                f"    {markdown_inline(engine.name)} "
                f"{markdown_inline(engine.version or '')} against memspec kit "
                f"{markdown_inline(report.kit.version)} "
                f"({markdown_inline(report.spec_version)}), "
                f"{markdown_inline(report.mode.value)} mode.", "",
                f"- **engine:** {_code(engine.name)} "
                f"{_code(engine.version) if engine.version else ''}",
                f"- **loaded as:** "
                f"{_code(engine.loaded_as if engine.loaded_as is not None else '—')}",
                f"- **protocol:** {_code(engine.protocol)}",
                f"- **kit:** {_code(report.kit.version)}",
                f"- **spec version:** {_code(report.spec_version)}",
                f"- **suite digest:** {_code(report.suite_digest)}",
                f"- **run:** {_code(report.started_at)} to {_code(report.finished_at)}",
                f"- **tests:** {markdown_inline(_counts(test_counts(report)))}",
                f"- **requirements:** {markdown_inline(_counts(dict(summary.requirements)))}",
                f"- **warnings:** {markdown_inline(str(summary.warnings))} "
                "(SHOULD / MAY requirements not met)",
                f"- **input strictness:** {_word(strictness)}",
                f"- **download:** [reference-report.json]({rel(page, REPORT_JSON)})"])
    if engine.fault:
        out.append(f"- **engine fault:** {markdown_inline(engine.fault)}")
    if report.signature is not None:
        out.append(f"- **signed by:** {_code(report.signature.signed_by)}")
    out.extend(["", "## Profiles", "", "| profile | claimed | verdict | notes |",
                "|---|---|---|---|"])
    for name, info in report.profiles.items():
        notes = "; ".join(_linked(n, linker, page) for n in info.notes)
        label = (f"[{name}]({rel(page, REQUIREMENTS_PAGE + '#profile-' + name)})"
                 if _NAME.match(name) else markdown_inline(name))
        out.append(f"| {label} | {'yes' if info.claimed else 'no'} | "
                   f"{_word(info.verdict)} | {notes} |")
    out.extend(["", "## Requirements", "",
                "| requirement | level | profile | outcome | tests passed | note |",
                "|---|---|---|---|---|---|"])
    for item in report.requirements:
        rid = item.id
        passed = sum(1 for t in item.tests if t.outcome == Outcome.PASSED)
        link = (f'<span id="{rid}"></span>{linker.link(rid, page)}' if rid in linker.ids
                else _code(rid))
        out.append(f"| {link} | {_word(item.level)} | "
                   f"{_word(item.profile)} | **{_word(item.outcome)}** | "
                   f"{passed} / {len(item.tests)} | "
                   f"{cell(_linked(item.note or '', linker, page))} |")
    problems = [(item.id, t) for item in report.requirements
                for t in item.tests if t.outcome in _NOT_MET]
    problems += [("kit", t) for t in report.kit_checks or () if t.outcome in _NOT_MET]
    out.extend(["", "## Failures", ""])
    if not problems:
        out.append("No test failed or errored.")
    seen: set[str] = set()
    for rid, test in problems:
        if test.nodeid in seen:
            continue
        seen.add(test.nodeid)
        out.extend([f"- {_test_link(test.nodeid, page, trace)}: **{_word(test.outcome)}** "
                    f"({_linked(rid, linker, page)})"])
        if test.message:
            block = code_fence(test.message.strip("\n"), "text")
            out.extend(["", *("    " + line for line in block.splitlines()), ""])
    if report.kit_checks:
        out.extend(["", "## Kit checks", "", "| check | outcome |", "|---|---|"])
        for check in report.kit_checks:
            out.append(f"| {_test_link(check.nodeid, page, trace)} | "
                       f"{_word(check.outcome)} |")
    out.append("")
    return "\n".join(out)


def build(report: Report | None, linker: IdLinker, trace: Trace) -> dict[str, bytes]:
    """The report page (and the report itself as a download)."""
    out = {REPORT_PAGE: render_report(report, linker, trace).encode()}
    if report is not None:
        out[REPORT_JSON] = report.to_json().encode()
    return out
