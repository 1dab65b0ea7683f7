"""Input strictness is judged apart from what an engine produces (SPEC 18.4 judges column, 19.2)."""

from __future__ import annotations

import re
from typing import Any

from memspec._errors import ERROR_CLASSES
from memspec.conformance._outcomes import (
    FAILED,
    RequirementFailed,
    catalogue,
    input_classes,
    input_only,
    judges_input,
)
from memspec.conformance._report import TestResult, build_report, check_report
from memspec.data import json_resource, spec_text


def _spec_table() -> dict[str, str]:
    text = spec_text()
    section = text[text.index("### 18.4 Error classes"):text.index("### 18.5")]
    return dict(re.findall(r"^\| `([a-z-]+)` \| (input|semantic|engine) \|", section, re.M))


def test_the_judges_column_is_data_and_agrees_with_the_spec() -> None:
    data = {c["code"]: c["judges"] for c in json_resource("spec", "error-classes.json")["classes"]}
    assert data == _spec_table()
    assert set(data) == set(ERROR_CLASSES), "every error class of SPEC 18.4 says what it judges"
    assert input_classes() == {"canonical", "limit", "encoding", "record", "file"}
    assert judges_input("record") and judges_input({"record", "encoding"})
    assert not judges_input({"record", "lifecycle"}) and not judges_input("signature")
    assert not judges_input(())


def test_input_only_of_failures() -> None:
    strict = RequirementFailed("REC-5", "accepted", strictness=True)
    assert input_only(strict) and not input_only(RequirementFailed("REC-5", "wrong id"))
    assert input_only(ExceptionGroup("g", [strict, strict]))
    assert not input_only(ExceptionGroup("g", [strict, AssertionError("x")]))
    assert not input_only(AssertionError("x"))


def _fold(claims: list[str], tests: list[TestResult]) -> dict[str, Any]:
    info = {"name": "x", "version": "1", "spec_version": "fg-agent-memory/0.1",
            "protocol": "memspec-engine/1", "profiles": claims}
    report = build_report(engine_info=info, engine_label="x", engine_fault=None,
                          mode="in-process", kit_version="0", tests=tests, digest="0" * 64,
                          started_at="2026-01-01T00:00:00.000Z",
                          finished_at="2026-01-01T00:00:01.000Z")
    check_report(report)
    return report.to_wire()


def _passing(*profiles: str, but: tuple[str, ...] = ()) -> list[TestResult]:
    return [TestResult(f"t::{r.id}", (r.id,), "passed", profiles=(r.profile,))
            for r in catalogue().values() if r.profile in (*profiles, "core") and r.id not in but]


def test_a_lenient_reader_is_certified_and_reported_lenient() -> None:
    # An engine that accepts a record missing a field, but writes and signs correctly.
    tests = _passing("format", "signing")
    tests.append(TestResult("suites/test_vectors.py::test_vector[records/missing-body]",
                            ("REC-1",), FAILED, "REC-1: accepted", ("REC-1",), ("format",),
                            strictness=True))
    report = _fold(["format", "signing"], tests)
    by_id = {r["id"]: r for r in report["requirements"]}
    assert by_id["REC-1"]["outcome"] == "failed" and by_id["REC-1"]["input_only"] is True
    failing = [t for t in by_id["REC-1"]["tests"] if t["outcome"] == "failed"]
    assert failing[0]["input_strictness"] is True
    assert report["profiles"]["format"]["verdict"] == "certified"
    assert report["profiles"]["format"]["input"] == {"verdict": "lenient",
                                                     "requirements": ["REC-1"]}
    assert report["profiles"]["signing"]["input"]["verdict"] == "strict"
    assert report["verdict"] == "certified"
    assert report["input_strictness"] == {"verdict": "lenient", "requirements": ["REC-1"]}


def test_a_wrong_output_is_never_input_strictness() -> None:
    tests = _passing("format")
    tests.append(TestResult("t::lenient", ("REC-1",), FAILED, "accepted", ("REC-1",),
                            ("format",), strictness=True))
    tests.append(TestResult("t::wrong-id", ("REC-1",), FAILED, "wrong bytes", ("REC-1",),
                            ("format",)))
    report = _fold(["format"], tests)
    by_id = {r["id"]: r for r in report["requirements"]}
    assert "input_only" not in by_id["REC-1"]
    assert report["profiles"]["format"]["verdict"] == "failed"
    assert report["input_strictness"]["verdict"] == "strict"
