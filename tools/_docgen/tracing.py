"""Traceability data: kit tests (a static scan), vectors and report outcomes per requirement."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _docgen._common import DocgenError, read_json
from memspec.report import Outcome, Report, RequirementOutcome


@dataclass(frozen=True)
class KitTest:
    """One test function of the kit's suites, found without importing it."""

    nodeid: str  # kit-relative, e.g. suites/test_store.py::test_put_appends
    module: str  # e.g. test_store.py
    name: str  # e.g. test_put_appends or TestX::test_y
    doc: str
    requirements: tuple[str, ...]
    parametrized: bool


@dataclass(frozen=True)
class VectorCase:
    """One case of a vectors file."""

    id: str
    file: str  # file stem, e.g. records
    group: str
    operation: str
    profile: str
    result: str
    flags: tuple[str, ...]
    requirements: tuple[str, ...]


#: A parametrized test's outcome is the first of these that any of its cases has.
_WORST_FIRST = (Outcome.FAILED, Outcome.ERRORED, Outcome.NOT_RUN, Outcome.SKIPPED,
                Outcome.NOT_CLAIMED, Outcome.UNTESTABLE)


@dataclass(frozen=True)
class Trace:
    """Everything the docs know about the checks of the requirements."""

    tests: tuple[KitTest, ...]
    vectors: tuple[VectorCase, ...]
    report: Report | None
    outcomes: dict[str, RequirementOutcome] = field(default_factory=dict)
    test_outcomes: dict[str, Outcome] = field(default_factory=dict)

    def tests_for(self, rid: str) -> list[KitTest]:
        """Kit tests marked with ``rid``, in suite order."""
        return [t for t in self.tests if rid in t.requirements]

    def vectors_for(self, rid: str) -> list[VectorCase]:
        """Vector cases listing ``rid``, in file order."""
        return [v for v in self.vectors if rid in v.requirements]

    def verdict(self, rid: str) -> str | None:
        """The report's outcome for ``rid`` (None without a report or when it is absent)."""
        found = self.outcomes.get(rid)
        return found.outcome.value if found else None

    def test_outcome(self, nodeid: str) -> str | None:
        """The report's outcome of one test; for a parametrized test, the worst of its cases."""
        if nodeid in self.test_outcomes:
            return self.test_outcomes[nodeid].value
        seen = [o for n, o in self.test_outcomes.items() if n.startswith(nodeid + "[")]
        if not seen:
            return None
        for worst in _WORST_FIRST:
            if worst in seen:
                return worst.value
        return seen[0].value


# -- the kit's suites, scanned statically ------------------------------------------------


def _is_requirement_mark(node: ast.expr) -> bool:
    """``pytest.mark.requirement`` / ``mark.requirement`` (the callee of a marker call)."""
    return isinstance(node, ast.Attribute) and node.attr == "requirement" and (
        (isinstance(node.value, ast.Attribute) and node.value.attr == "mark")
        or (isinstance(node.value, ast.Name) and node.value.id == "mark")
    )


def _mark_ids(node: ast.expr | None) -> list[str]:
    """Requirement ids of a marker expression (a call, or a list/tuple of them)."""
    if node is None:
        return []
    if isinstance(node, ast.List | ast.Tuple):
        return [rid for item in node.elts for rid in _mark_ids(item)]
    if isinstance(node, ast.Call) and _is_requirement_mark(node.func):
        return [a.value for a in node.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return []


def _is_parametrize(node: ast.expr) -> bool:
    func = node.func if isinstance(node, ast.Call) else node
    return isinstance(func, ast.Attribute) and func.attr == "parametrize"


def _pytestmark(body: list[ast.stmt]) -> list[str]:
    ids: list[str] = []
    for stmt in body:
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in stmt.targets
        ):
            ids.extend(_mark_ids(stmt.value))
        elif (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
              and stmt.target.id == "pytestmark"):
            ids.extend(_mark_ids(stmt.value))
    return ids


def _functions(
    body: list[ast.stmt], prefix: str, inherited: list[str]
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, list[str]]]:
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name.startswith(
            "test"
        ):
            ids = [*inherited, *(r for d in stmt.decorator_list for r in _mark_ids(d))]
            yield prefix + stmt.name, stmt, ids
        elif isinstance(stmt, ast.ClassDef) and stmt.name.startswith("Test"):
            marks = [*inherited, *(r for d in stmt.decorator_list for r in _mark_ids(d)),
                     *_pytestmark(stmt.body)]
            yield from _functions(stmt.body, f"{prefix}{stmt.name}::", marks)


def _unique(ids: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(ids))


def scan_suites(suites: Path) -> tuple[KitTest, ...]:
    """Every test of ``conformance/suites/test_*.py`` with its requirement markers."""
    found: list[KitTest] = []
    for path in sorted(suites.glob("test_*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except (OSError, SyntaxError, UnicodeDecodeError) as exc:
            raise DocgenError(f"cannot scan {path}: {exc}") from exc
        module_marks = _pytestmark(tree.body)
        for name, func, ids in _functions(tree.body, "", module_marks):
            found.append(KitTest(
                nodeid=f"suites/{path.name}::{name}",
                module=path.name,
                name=name,
                doc=ast.get_docstring(func) or "",
                requirements=_unique(ids),
                parametrized=any(_is_parametrize(d) for d in func.decorator_list),
            ))
    return tuple(found)


# -- vectors -----------------------------------------------------------------------------


def load_vector_files(folder: Path) -> list[tuple[str, dict[str, Any]]]:
    """``(stem, document)`` of every normative vectors file, sorted by name."""
    out: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(folder.glob("*.json")):
        doc = read_json(path)
        if not isinstance(doc, dict) or not isinstance(doc.get("groups"), list):
            raise DocgenError(f"{path} is not a vectors file (no groups)")
        out.append((path.stem, doc))
    return out


def vector_cases(files: list[tuple[str, dict[str, Any]]]) -> tuple[VectorCase, ...]:
    """Every case of the vectors files, in file order."""
    cases: list[VectorCase] = []
    for stem, doc in files:
        for group in doc["groups"]:
            for case in group.get("tests", []):
                cases.append(VectorCase(
                    id=str(case["id"]), file=stem, group=str(group["id"]),
                    operation=str(group.get("operation", "")),
                    profile=str(group.get("profile", "")),
                    result=str(case.get("result", "")),
                    flags=tuple(case.get("flags", [])),
                    requirements=tuple(case.get("requirements", [])),
                ))
    return tuple(cases)


# -- a conformance report ----------------------------------------------------------------


def report_outcomes(report: Report) -> tuple[dict[str, RequirementOutcome],
                                            dict[str, Outcome]]:
    """Outcome per requirement id and per test node id, from a report."""
    per_req = {item.id: item for item in report.requirements}
    per_test = {test.nodeid: test.outcome for item in report.requirements for test in item.tests}
    for check in report.kit_checks or ():
        per_test[check.nodeid] = check.outcome
    return per_req, per_test


def load_report(path: Path | None) -> Report | None:
    """A conformance report, checked against schemas/report.json; None when not given.

    A file that is not JSON raises DocgenError, one that is not a report
    :class:`~memspec.report.MalformedReport` naming the path and the offending member.
    """
    if path is None:
        return None
    return Report.from_wire(read_json(path), source=str(path))


def build_trace(root: Path, report: Report | None) -> Trace:
    """The trace of the checkout at ``root`` (with a report's outcomes when given)."""
    tests = scan_suites(root / "conformance" / "suites")
    vectors = vector_cases(load_vector_files(root / "vectors"))
    outcomes, test_outcomes = report_outcomes(report) if report else ({}, {})
    return Trace(tests, vectors, report, outcomes, test_outcomes)
