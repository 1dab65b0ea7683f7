"""The kit checks itself: every MUST / MUST NOT has a kit test or a stated reason it cannot."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from typing import Any

import pytest

from memspec.conformance._outcomes import Requirement, binding, catalogue
from memspec.data import json_resource, vector_files

SUITES = "memspec.conformance.suites"


def _requirement_ids(marks: Iterable[Any]) -> set[str]:
    found: set[str] = set()
    for mark in marks:
        mark = getattr(mark, "mark", mark)
        name = getattr(mark, "name", None)
        if name == "requirement":
            found.update(str(arg) for arg in mark.args)
        elif name == "parametrize" and len(mark.args) > 1:
            for value in mark.args[1]:
                found |= _requirement_ids(getattr(value, "marks", ()))
    return found


def _marks(obj: Any) -> list[Any]:
    marks = getattr(obj, "pytestmark", [])
    return list(marks) if isinstance(marks, list | tuple) else [marks]


def _tests_in(namespace: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    for name, obj in namespace.items():
        if isinstance(obj, type) and name.startswith("Test"):
            found |= _requirement_ids(_marks(obj))
            for attr in dir(obj):
                if attr.startswith("test") or attr == "runTest":
                    found |= _requirement_ids(_marks(getattr(obj, attr, None)))
        elif callable(obj) and name.startswith("test"):
            found |= _requirement_ids(_marks(obj))
    return found


def static_coverage() -> set[str]:
    """Requirement ids named by the kit's suites and its vectors, without running anything."""
    covered: set[str] = set()
    package = importlib.import_module(SUITES)
    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.startswith("test_"):
            continue
        module = importlib.import_module(f"{SUITES}.{info.name}")
        covered |= _requirement_ids(_marks(module))
        covered |= _tests_in(vars(module))
    for name in vector_files():
        data = json_resource("vectors", name)
        if not isinstance(data, dict):
            continue
        for group in data.get("groups", []):
            for case in group.get("tests", []):
                covered.update(case.get("requirements", []))
    return covered


def uncovered(requirements: Iterable[Requirement], covered: set[str]) -> list[str]:
    """Binding requirements with neither a kit test nor an untestable reason."""
    return [r.id for r in requirements
            if binding(r.level) and not r.untestable and r.id not in covered]


@pytest.mark.kit_check
def test_every_must_has_a_kit_test_or_an_untestable_reason() -> None:
    missing = uncovered(catalogue().values(), static_coverage())
    assert not missing, (
        f"{len(missing)} MUST/MUST NOT requirements have no kit test and no untestable reason: "
        + ", ".join(missing)
    )


@pytest.mark.kit_check
def test_untestable_requirements_have_reasons() -> None:
    blank = [r.id for r in catalogue().values() if r.untestable is not None
             and not r.untestable.strip()]
    assert not blank, f"untestable requirements need a reason: {blank}"
