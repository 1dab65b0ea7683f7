"""The requirements index and the kit tests page."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path
from typing import Any

from _docgen._common import (
    NO_REPORT,
    REPORT_PAGE,
    REQUIREMENTS_PAGE,
    TESTS_PAGE,
    VECTORS_INDEX,
    IdLinker,
    cell,
    first_paragraph,
    front,
    generated_note,
    rel,
    text,
)
from _docgen.spec import section_link
from _docgen.tracing import Trace
from memspec._requirements import Requirement


def render_requirements(
    reqs: list[Requirement], profiles: dict[str, Any], trace: Trace, linker: IdLinker,
    sections: dict[str, dict[str, str]],
) -> str:
    """The requirements index: every requirement with its checks, per profile."""
    page = REQUIREMENTS_PAGE
    out = [front("Requirements", "Every requirement of the specification with its level, "
                 "profile, kit tests, vectors and the reference engine's verdict."),
           generated_note("`spec/SPEC.md`, `spec/operations.json`, the kit's suites and the "
                          "vectors"), ""]
    levels = Counter(r.level for r in reqs)
    untestable = sum(1 for r in reqs if r.untestable)
    out.append(
        f"The specification has **{len(reqs)} requirements** ("
        + ", ".join(f"{n} {lvl}" for lvl, n in sorted(levels.items())) + f"); {untestable} "
        "cannot be observed through the engine interface and say why. Each id links to its "
        "text in the specification, where the box under it lists the kit tests and "
        "vectors that check it.\n")
    out.extend(["## Profiles", "",
                "| profile | title | requires | requirements | reference engine | summary |",
                "|---|---|---|---|---|---|"])
    by_profile = Counter(r.profile for r in reqs)
    for name, info in profiles.items():
        requires = ", ".join(f"[{r}](#profile-{r})" for r in info.get("requires", [])) or "—"
        found = trace.report.profiles.get(name) if trace.report else None
        shown = (NO_REPORT if trace.report is None
                 else found.verdict.value if found else "not in the report")
        out.append(
            f'| <span id="profile-{name}"></span>`{name}` | {text(info.get("title", ""))} | '
            f"{requires} | {by_profile.get(name, 0)} | {shown} | "
            f"{text(info.get('summary', ''))} |")
    out.extend(["", "## All requirements", "",
                "| id | level | profile | section | kit tests | vectors | reference engine "
                "| untestable because |",
                "|---|---|---|---|---|---|---|---|"])
    for req in reqs:
        tests = len(trace.tests_for(req.id))
        vectors = len(trace.vectors_for(req.id))
        verdict = trace.verdict(req.id) if trace.report else NO_REPORT
        if trace.report and verdict:
            verdict = f"[{verdict}]({rel(page, REPORT_PAGE + '#' + req.id)})"
        out.append(
            f'| <span id="{req.id}"></span>{linker.link(req.id, page)} | {req.level} | '
            f"[{req.profile}](#profile-{req.profile}) | "
            f"{section_link(req, page, linker, sections)} | "
            f"{tests} | {vectors} | {verdict or 'not in the report'} | "
            f"{cell(linker.text(req.untestable, page)) if req.untestable else ''} |")
    out.append("")
    uncovered = [r for r in reqs if r.level.startswith("MUST") and not r.untestable
                 and not trace.tests_for(r.id) and not trace.vectors_for(r.id)]
    out.extend(["## Coverage", ""])
    if uncovered:
        out.append("MUST-level requirements with neither a kit test nor a vector nor a reason "
                   "why they cannot be tested: "
                   + ", ".join(linker.link(r.id, page) for r in uncovered) + ".")
    else:
        out.append("Every MUST-level requirement has a kit test, a vector or a stated reason "
                   "why it cannot be tested.")
    out.append("")
    return "\n".join(out)


def _module_doc(path: Path) -> str:
    try:
        return first_paragraph(ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return ""


def render_tests(trace: Trace, linker: IdLinker, suites: Path) -> str:
    """Every kit test, per suite, with the requirements it checks."""
    page = TESTS_PAGE
    out = [front("Kit tests", "Every test of the memspec conformance kit with the "
                 "requirements it checks."),
           generated_note("a static scan of `conformance/suites/*.py` "
                          "(`@pytest.mark.requirement` markers)"), ""]
    with_report = trace.report is not None
    out.append(
        f"The kit has **{len(trace.tests)} test functions** in "
        f"{len({t.module for t in trace.tests})} suites, plus one test per vector "
        f"([vectors]({rel(page, VECTORS_INDEX)})). The last column is the outcome in "
        + (f"[the reference engine's report]({rel(page, REPORT_PAGE)})"
           if with_report else f"the reference engine's report ({NO_REPORT})") + ".\n")
    modules: dict[str, list[Any]] = {}
    for test in trace.tests:
        modules.setdefault(test.module, []).append(test)
    for module, tests in modules.items():
        out.extend([f"## `{module}`", ""])
        doc = _module_doc(suites / module)
        if doc:
            out.extend([linker.text(doc, page), ""])
        out.extend(["| test | what it checks | requirements | reference engine |",
                    "|---|---|---|---|"])
        for test in tests:
            reqs = ", ".join(linker.link(r, page) if r in linker.ids else f"`{r}`"
                             for r in test.requirements) or "—"
            outcome = trace.test_outcome(test.nodeid) if with_report else None
            shown = outcome or ("not in the report" if with_report else "—")
            kind = " (parametrized)" if test.parametrized else ""
            out.append(
                f'| <span id="{test.nodeid}"></span>`{test.name}`{kind} | '
                f"{cell(linker.text(first_paragraph(test.doc), page))} | {reqs} | {shown} |")
        out.append("")
    return "\n".join(out)
