"""The typed report model (memspec.report): the wire form round-trips byte for byte, a
malformed report is one typed error naming where and why, and the enums are the schema's
words."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import memspec
from memspec.conformance._builders import fixed_keys
from memspec.conformance._outcomes import FAILED, NOT_CLAIMED, PASSED, SKIPPED, catalogue
from memspec.conformance._report import TestResult, build_report, sign_report, verify_report
from memspec.conformance._session import Finding
from memspec.report import (
    InputStrictness,
    MalformedReport,
    Mode,
    Outcome,
    Report,
    TestOutcome,
    Verdict,
    validate_wire,
)

ROOT = Path(__file__).resolve().parents[1]
KEPT = ROOT / "docs" / "data" / "implementations"


def _kept() -> list[Path]:
    index = json.loads((KEPT / "index.json").read_text(encoding="utf-8"))
    return [KEPT / entry["report"] for entry in index["engines"]]


@pytest.mark.parametrize("path", _kept(), ids=lambda p: p.stem)
def test_every_kept_report_round_trips_byte_for_byte(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    report = Report.load(path)
    assert report.to_json(indent=1) == text
    assert Report.from_wire(report.to_wire()) == report


def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = memspec.load_schema("report.json")
    return schema


def test_the_enums_are_the_schemas_words() -> None:
    schema = _schema()
    props = schema["properties"]
    tests = set(schema["$defs"]["test"]["properties"]["outcome"]["enum"])
    requirements = set(props["requirements"]["items"]["properties"]["outcome"]["enum"])
    assert {o.value for o in Outcome} == tests | requirements
    profile = props["profiles"]["additionalProperties"]["properties"]["verdict"]["enum"]
    assert [v.value for v in Verdict] == profile
    assert set(props["verdict"]["enum"]) == {v.value for v in Verdict} - {"not-claimed"}
    assert [m.value for m in Mode] == props["mode"]["enum"]
    assert [s.value for s in InputStrictness] == props["input_strictness"]["properties"][
        "verdict"]["enum"]
    # StrEnum: the wire words, in JSON and in comparisons.
    assert json.dumps([Outcome.NOT_CLAIMED, Verdict.CERTIFIED]) == '["not-claimed", "certified"]'
    # mypy calls an enum member and a str literal non-overlapping; a StrEnum equals its word.
    assert Outcome.PASSED == "passed"  # type: ignore[comparison-overlap]
    assert f"{Mode.IN_PROCESS}" == "in-process"


def test_the_kits_outcome_words_are_the_models_as_plain_strings() -> None:
    # They ride on pytest reports across pytest-xdist's execnet, which carries no enums.
    from memspec.conformance import _outcomes, _report

    for name in ("PASSED", "FAILED", "ERRORED", "NOT_CLAIMED", "UNTESTABLE", "SKIPPED",
                 "INCONCLUSIVE"):
        word = getattr(_outcomes, name)
        assert type(word) is str and word == Outcome[name]
    for name in ("NOT_RUN", "PARTIAL"):
        word = getattr(_report, name)
        assert type(word) is str and word == Outcome[name]


def _adversarial() -> Report:
    """A report with every optional member the kit writes: failures blamed on one of two
    requirements (the other inconclusive), input-strictness failures, not-claimed tests with
    the profiles they need, a skipped test, a finding and kit checks."""
    reqs = [r for r in catalogue().values() if r.profile in ("core", "format", "signing")]
    two = next(r for r in reqs if r.profile == "format")
    sig = next(r for r in reqs if r.profile == "signing")
    half = next(r for r in reqs if r.profile == "format" and r.id != two.id and r.binding)
    tests = [TestResult(f"suites/t.py::test_{i}_{r.id}", (r.id,), PASSED, profiles=(r.profile,))
             for i, r in enumerate(reqs)]
    tests += [
        TestResult("suites/t.py::test_blamed", (two.id, sig.id), FAILED, "wrong\nsecond line",
                   (sig.id,), ("format", "signing")),
        TestResult("suites/t.py::test_strict", (two.id,), FAILED, "accepted bad input", (two.id,),
                   ("format",), strictness=True),
        TestResult("suites/t.py::test_needs", (two.id,), NOT_CLAIMED, "needs store",
                   profiles=("format",), needs=("store",)),
        TestResult("suites/t.py::test_skip", (sig.id,), SKIPPED, "skipped: no key"),
        TestResult("suites/t.py::test_half", (half.id,), SKIPPED, "skipped: half judged"),
    ]
    info = {"name": "adv\x1b[31m", "version": "9", "spec_version": "fg-agent-memory/0.1",
            "protocol": "memspec-engine/1", "profiles": ["format", "signing"]}
    return build_report(
        engine_info=info, engine_label="pkg.mod:create", engine_fault="it hung\nonce",
        mode="process", kit_version="0.1.0", tests=tests, digest="ab" * 32,
        started_at="2026-01-01T00:00:00.000Z", finished_at="2026-01-01T00:00:07.250Z",
        findings=[Finding("PROTO-1", "stdout", "a diagnostic line", call="put")],
        kit_checks=[TestOutcome("suites/test_traceability.py::test_a", Outcome.PASSED),
                    TestOutcome("suites/test_traceability.py::test_b", Outcome.FAILED)])


def test_a_folded_report_round_trips_through_its_wire_form() -> None:
    report = _adversarial()
    wire = report.to_wire()
    validate_wire(wire)
    again = Report.from_wire(json.loads(json.dumps(wire)))
    assert again == report and again.to_json() == report.to_json()
    # every optional member the kit writes is there, so the round trip covers them all
    text = report.to_json()
    for member in ('"blamed"', '"input_strictness": true', '"input_only": true', '"needs"',
                   '"note"', '"unjudged"', '"notes"', '"fault"', '"loaded_as"', '"kit_checks"',
                   '"needs_other_profiles"'):
        assert member in text, member
    assert report.verdict in (Verdict.FAILED, Verdict.PARTIAL, Verdict.ERRORED)
    assert any(t.outcome is Outcome.INCONCLUSIVE for r in report.requirements for t in r.tests)


def test_reading_helpers() -> None:
    report = _adversarial()
    failed = report.ids(Outcome.FAILED)
    assert failed and all(report.requirement(rid).outcome is Outcome.FAILED  # type: ignore[union-attr]
                          for rid in failed)
    assert report.requirement("NOPE-1") is None
    assert [r.id for r in report.with_outcome(Outcome.FAILED)] == list(failed)


def test_signing_the_model_is_signing_its_wire_form() -> None:
    report = _adversarial()
    key = fixed_keys().b
    signed = report.signed(key)
    assert signed.signature is not None and signed.signature.signed_by == key.address
    assert signed.to_wire() == sign_report(report.to_wire(), key)
    assert signed.verify() and verify_report(signed.to_wire()) and not report.verify()
    assert signed.unsigned() == report
    forged = Report.from_wire({**signed.to_wire(), "verdict": "certified"})
    with pytest.raises(memspec.SignatureError):
        forged.verify()


def _wire() -> dict[str, Any]:
    return _adversarial().to_wire()


@pytest.mark.parametrize(("change", "pointer", "words"), [
    (lambda w: w.pop("summary"), "", "'summary' is a required property"),
    (lambda w: w.update(verdict="great"), "/verdict", "'great' is not one of"),
    (lambda w: w["requirements"][3].update(outcome="fine"), "/requirements/3/outcome", "'fine'"),
    (lambda w: w["profiles"].update({"a/b~c": {"claimed": True, "verdict": "good"}}),
     "/profiles/a~1b~0c/verdict", "'good'"),
    (lambda w: w["engine"].update(extra=1), "/engine", "'extra' was unexpected"),
    (lambda w: w["summary"].update(warnings=-1), "/summary/warnings", "minimum"),
])
def test_a_malformed_report_names_its_pointer_and_reason(change: Any, pointer: str,
                                                         words: str) -> None:
    wire = copy.deepcopy(_wire())
    change(wire)
    with pytest.raises(MalformedReport) as caught:
        Report.from_wire(wire, source="r.json")
    error = caught.value
    assert error.pointer == pointer and words in error.reason
    assert str(error).startswith("r.json: conformance report does not match report.json at ")
    # the CLI reports it as before: "memspec compare: error error: ...", exit 1
    assert isinstance(error, memspec.MemspecError) and error.code == "error"


def test_not_an_object_and_not_json(tmp_path: Path) -> None:
    with pytest.raises(MalformedReport, match="is a JSON object") as caught:
        Report.from_wire(["a", "list"])
    assert caught.value.pointer == "" and caught.value.source is None
    path = tmp_path / "r.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(MalformedReport, match=r"r\.json: not a conformance report"):
        Report.load(path)
    with pytest.raises(OSError):
        Report.load(tmp_path / "absent.json")


def test_importing_the_model_loads_no_validator_and_no_crypto() -> None:
    probe = ("import sys, json, memspec.report\n"
             "print(json.dumps([m for m in ('jsonschema', 'referencing', 'cryptography')"
             " if m in sys.modules]))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True)
    assert json.loads(run.stdout) == []


def test_a_fresh_kit_report_round_trips_and_signs(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # The report file the plugin writes, read back: the same bytes. Then certify's path: the
    # report over the kit's channel, signed, written, verified from the file.
    from memspec.cli import _kit

    monkeypatch.chdir(ROOT)
    path = tmp_path / "report.json"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "--pyargs", "memspec.conformance.suites.test_protocol",
                          "--memspec-engine=reference", f"--memspec-report={path}"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert path.is_file(), run.stdout[-2000:]
    text = path.read_text(encoding="utf-8")
    report = Report.load(path)
    assert report.to_json() == text and report.mode is Mode.IN_PROCESS
    code, fresh, output = _kit.run_kit(["--memspec-engine=reference"],
                                       ["--pyargs", "memspec.conformance.suites.test_protocol"],
                                       show_output=False)
    assert fresh is not None and code == 0, output[-2000:]
    signed = fresh.signed(fixed_keys().a)
    (tmp_path / "signed.json").write_text(signed.to_json(), encoding="utf-8")
    loaded = Report.load(tmp_path / "signed.json")
    assert loaded == signed and loaded.verify()
    assert verify_report(json.loads((tmp_path / "signed.json").read_text(encoding="utf-8")))
