"""Verdicts: a failure lands on the requirement its check names, and "passed" means judged."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from memspec._errors import EngineError
from memspec.conformance import plugin
from memspec.conformance._outcomes import (
    ERRORED,
    FAILED,
    WARNING,
    RequirementFailed,
    blame,
    blamed_requirements,
    catalogue,
    check,
    logged_outcome,
    mark_report,
)
from memspec.conformance._report import TestResult, build_report, check_report
from memspec.protocol import EngineFault

pytest_plugins = ["pytester"]

FORMAT_ONLY = "--memspec-engine=tests.kit.engines:format_only"


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


def _by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in report["requirements"]}


# --------------------------------------------------------------------------- the helpers


def test_check_and_blame_name_one_requirement() -> None:
    check("SIG-7", True, "never shown")
    with pytest.raises(RequirementFailed) as caught:
        check("SIG-7", False, lambda: "signed_by is wrong")
    assert caught.value.requirements == ("SIG-7",) and str(caught.value).startswith("SIG-7: ")
    with pytest.raises(RequirementFailed) as blamed:
        with blame("REC-2"):
            raise AssertionError("a field was dropped")
    assert blamed.value.requirement == "REC-2" and "a field was dropped" in str(blamed.value)
    with pytest.raises(RequirementFailed) as rejected:
        with blame("SIG-7"):
            raise EngineError("encoding", "bad timestamp")
    assert rejected.value.requirement == "SIG-7" and "encoding" in str(rejected.value)
    with pytest.raises(RequirementFailed) as inner:  # the innermost name wins
        with blame("REC-2"):
            check("SIG-8", False, "does not verify")
    assert inner.value.requirement == "SIG-8"
    with pytest.raises(EngineFault):  # a fault is not a verdict: it passes through
        with blame("SIG-7"):
            raise EngineFault("engine died")
    copy = pickle.loads(pickle.dumps(RequirementFailed(("CJ-6", "REC-1"), "x")))
    assert copy.requirements == ("CJ-6", "REC-1")


def test_blamed_requirements_of_groups() -> None:
    one = RequirementFailed("LC-1", "a")
    two = RequirementFailed("OP-2", "b")
    assert blamed_requirements(ExceptionGroup("g", [one, two])) == ("LC-1", "OP-2")
    assert blamed_requirements(ExceptionGroup("g", [one, AssertionError("x")])) == ()
    assert blamed_requirements(AssertionError("x")) == ()


class _Report:
    """The few attributes of a pytest TestReport that mark_report reads and sets."""

    def __init__(self, outcome: str, when: str = "call") -> None:
        self.outcome = outcome
        self.when = when
        self.sections: list[tuple[str, str]] = []
        self.longrepr = None
        self.longreprtext = ""

    @property
    def failed(self) -> bool:
        return self.outcome == "failed"

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    @property
    def skipped(self) -> bool:
        return self.outcome == "skipped"


def _marked(exc: BaseException, requirements: tuple[str, ...],
            when: str = "call") -> tuple[Any, Any]:
    report = _Report("failed", when)
    levels = tuple(catalogue()[r].level for r in requirements)
    mark_report(report, exc, levels, [])
    return report, logged_outcome(report, None)


def test_a_wrong_answer_is_failed_and_a_fault_is_errored() -> None:
    # SPEC 18.4 / 19.2: an engine that answered is judged; errored is for no verdict.
    _, logged = _marked(AssertionError("echoed the bad input back"), ("REC-5",))
    assert logged.outcome == FAILED and logged.blamed == ()
    _, logged = _marked(RequirementFailed("REC-5", "accepted"), ("REC-5", "ID-1"))
    assert logged.outcome == FAILED and logged.blamed == ("REC-5",)
    _, logged = _marked(EngineFault("the engine crashed"), ("REC-5",))
    assert logged.outcome == ERRORED
    mixed = ExceptionGroup("g", [EngineFault("hang"), RequirementFailed("REC-5", "wrong")])
    _, logged = _marked(mixed, ("REC-5",))
    assert logged.outcome == FAILED
    _, logged = _marked(AssertionError("reset failed"), ("REC-5",), when="setup")
    assert logged.outcome == ERRORED


def test_a_blamed_should_is_a_warning_a_blamed_must_is_not() -> None:
    report, _ = _marked(RequirementFailed("REC-13", "no occurred_at"), ("REC-4", "REC-13"))
    assert report.memspec_outcome == WARNING
    report, logged = _marked(RequirementFailed("REC-4", "wrong"), ("REC-4", "REC-13"))
    assert getattr(report, "memspec_outcome", None) is None and logged.outcome == FAILED


def test_a_check_naming_an_unknown_requirement_is_a_kit_bug() -> None:
    report, logged = _marked(RequirementFailed("NOPE-6", "x"), ("SIG-8",))
    assert logged.blamed == () and "kit bug" in report.memspec_message


def test_a_shared_check_may_name_a_requirement_beyond_the_markers() -> None:
    # expect_rejected: a rejection that still wrote breaks PROTO-7, in whichever test.
    _, logged = _marked(RequirementFailed("PROTO-7", "wrote"), ("LC-2",))
    assert logged.blamed == ("PROTO-7",)
    tests = _passing("format", "store", "lifecycle")
    tests.append(TestResult("t::lc2", ("LC-2",), FAILED, "PROTO-7: wrote", ("PROTO-7",),
                            ("lifecycle",)))
    by_id = _by_id(_fold(["format", "store", "lifecycle"], tests))
    assert by_id["PROTO-7"]["outcome"] == "failed" and by_id["LC-2"]["outcome"] == "partial"


# --------------------------------------------------------------------------- folding


def test_a_named_failure_fails_only_its_requirement() -> None:
    # One timestamp bug used to fail every requirement of the test that met it.
    tests = _passing("format", "signing", but=("SIG-7", "REC-2"))
    tests.append(TestResult("t::prop", ("SIG-7", "REC-2"), FAILED, "SIG-7: wrong signature",
                            ("SIG-7",), ("format", "signing")))
    tests.append(TestResult("t::rec2", ("REC-2",), "passed", profiles=("format",)))
    report = _fold(["format", "signing"], tests)
    by_id = _by_id(report)
    assert by_id["SIG-7"]["outcome"] == "failed"
    assert by_id["REC-2"]["outcome"] == "partial"
    (view,) = [t for t in by_id["REC-2"]["tests"] if t["nodeid"] == "t::prop"]
    assert view["outcome"] == "inconclusive" and view["blamed"] == ["SIG-7"]
    failed = [rid for rid, e in by_id.items() if e["outcome"] == "failed"]
    assert failed == ["SIG-7"]
    assert report["profiles"]["signing"]["verdict"] == "failed"
    assert report["profiles"]["format"]["verdict"] == "partial"
    assert report["profiles"]["format"]["unjudged"] == ["REC-2"]


def test_an_unnamed_failure_fails_every_requirement_of_its_test() -> None:
    tests = _passing("format", but=("REC-4", "REC-5"))
    tests.append(TestResult("t::both", ("REC-4", "REC-5"), FAILED, "broke"))
    by_id = _by_id(_fold(["format"], tests))
    assert by_id["REC-4"]["outcome"] == by_id["REC-5"]["outcome"] == "failed"


def test_a_requirement_whose_deciding_test_needs_an_unclaimed_profile_is_partial() -> None:
    # Issue 20: a narrow claim must not report passed what the kit never checked.
    tests = _passing("format")
    tests.append(TestResult("t::needs-store", ("REC-4",), "not-claimed",
                            "x does not claim profile store", profiles=("format", "store")))
    report = _fold(["format"], tests)
    entry = _by_id(report)["REC-4"]
    assert entry["outcome"] == "partial" and entry["needs"] == ["store"]
    assert "need profile store" in entry["note"]
    assert report["profiles"]["format"]["verdict"] == "partial"
    assert report["verdict"] == "partial"
    assert "REC-4" in report["profiles"]["format"]["notes"][-1]
    listed = {e["id"]: e for e in report["needs_other_profiles"]}
    assert listed["REC-4"]["needs"] == ["store"] and listed["REC-4"]["tests"] == ["t::needs-store"]


def test_an_unclaimed_vector_leaves_out_only_what_it_decides() -> None:
    # A vector listing REC-4 and XEXP-1 that decides XEXP-1 could never fail REC-4: not
    # running it for want of x-expiry leaves REC-4 judged by its own tests (SPEC 19.2).
    tests = _passing("format")
    for decides in (("XEXP-1",), ("REC-4",)):
        vector = TestResult("t::vector", ("REC-4", "XEXP-1"), "not-claimed",
                            "x does not claim profile x-expiry",
                            profiles=("format", "x-expiry"), decides=decides)
        report = _fold(["format"], [*tests, vector])
        entry = _by_id(report)["REC-4"]
        if decides == ("XEXP-1",):
            assert entry["outcome"] == "passed", entry
            assert "REC-4" not in {e["id"] for e in report["needs_other_profiles"]}
        else:
            assert entry["outcome"] == "partial" and entry["needs"] == ["x-expiry"]


def test_a_failed_vector_fails_what_it_decides_and_is_inconclusive_for_the_rest() -> None:
    tests = _passing("format")
    tests.append(TestResult("t::vector", ("REC-4", "REC-5"), FAILED, "REC-5: wrong answer",
                            ("REC-5",), profiles=("format",), decides=("REC-5",)))
    entries = _by_id(_fold(["format"], tests))
    assert entries["REC-5"]["outcome"] == "failed"
    assert entries["REC-4"]["outcome"] == "partial"


def test_a_requirement_with_only_unclaimed_tests_is_partial_not_passed() -> None:
    tests = _passing("format", but=("REC-4",))
    tests.append(TestResult("t::needs-store", ("REC-4",), "not-claimed", "",
                            profiles=("format", "store")))
    entry = _by_id(_fold(["format"], tests))["REC-4"]
    assert entry["outcome"] == "partial" and entry["note"].startswith("not judged")


def test_a_partial_should_never_keeps_a_profile_from_certification() -> None:
    tests = _passing("format")
    tests.append(TestResult("t::needs-store", ("REC-13",), "not-claimed", "",
                            profiles=("format", "store")))
    report = _fold(["format"], tests)
    assert _by_id(report)["REC-13"]["outcome"] == "partial"
    assert report["profiles"]["format"]["verdict"] == "certified"


def _ext_ingest(ext: str, rule: str, outcome: str, blamed: tuple[str, ...] = ()) -> TestResult:
    """An XEXT-4 test of ``ext``'s field rule on ingest (it needs ``write`` too)."""
    message = f"x does not claim profile {ext}" if outcome == "not-claimed" else None
    return TestResult(f"t::ingest-{ext}", ("XEXT-4", rule), outcome, message, blamed,
                      profiles=("format", "write", ext),
                      needs=(ext,) if outcome == "not-claimed" else ())


EXTENSION_RULES = (("x-expiry", "XEXP-1"), ("x-provenance", "XPROV-1"),
                   ("x-falsifiability", "XFALS-1"))


def test_a_claim_conditional_requirement_is_untestable_over_what_is_not_claimed() -> None:
    # XEXT-4 ranges over the extension profiles an engine claims (Appendix B): an engine
    # claiming none has no field rule to apply, so its tests are untestable, never left out.
    assert catalogue()["XEXT-4"].claim_conditional
    assert catalogue()["PROTO-7"].claim_conditional and not catalogue()["REC-4"].claim_conditional
    claims = ["format", "store", "lifecycle", "write"]
    tests = [*_passing(*claims, but=("XEXT-4",)),
             *(_ext_ingest(ext, rule, "not-claimed") for ext, rule in EXTENSION_RULES)]
    report = _fold(claims, tests)
    entry = _by_id(report)["XEXT-4"]
    assert entry["outcome"] == "untestable", entry
    assert "reaches only what it claims" in entry["note"]
    assert "3 test(s) need profile x-expiry, x-falsifiability, x-provenance" in entry["note"]
    assert {t["outcome"] for t in entry["tests"]} == {"untestable"}
    assert not entry.get("needs")
    assert "XEXT-4" not in {e["id"] for e in report["needs_other_profiles"]}
    assert report["profiles"]["format"]["verdict"] == "certified"
    # A requirement that is not claim-conditional is still left partial by the same test.
    partial = _by_id(_fold(claims, [*tests, TestResult(
        "t::rec4", ("REC-4",), "not-claimed", "x does not claim profile x-expiry",
        profiles=("format", "x-expiry"), needs=("x-expiry",))]))["REC-4"]
    assert partial["outcome"] == "partial"


def test_a_claim_conditional_requirement_is_judged_over_what_is_claimed() -> None:
    claims = ["format", "store", "lifecycle", "write", "x-expiry"]
    base = _passing(*claims, but=("XEXT-4",))
    for outcome, want in (("passed", "passed"), ("failed", "failed")):
        tests = [*base, _ext_ingest("x-expiry", "XEXP-1", outcome,
                                    ("XEXT-4",) if outcome == "failed" else ()),
                 *(_ext_ingest(ext, rule, "not-claimed") for ext, rule in EXTENSION_RULES[1:])]
        report = _fold(claims, tests)
        by_id = _by_id(report)
        assert by_id["XEXT-4"]["outcome"] == want, by_id["XEXT-4"]
        assert report["profiles"]["format"]["verdict"] == (
            "certified" if want == "passed" else "failed")
    # What it also needs, unclaimed, takes nothing away: an engine without files has no load.
    tests = [*base, _ext_ingest("x-expiry", "XEXP-1", "passed"), TestResult(
        "t::load-x-expiry", ("XEXT-4", "XEXP-1"), "not-claimed", "x does not claim profile files",
        profiles=("files", "format", "x-expiry"), needs=("files",))]
    assert _by_id(_fold(claims, tests))["XEXT-4"]["outcome"] == "passed"


def test_findings_fail_their_requirement_once() -> None:
    from memspec.conformance._session import Finding

    info = {"name": "x", "version": "1", "spec_version": "fg-agent-memory/0.1",
            "protocol": "memspec-engine/1", "profiles": ["format"]}
    report = build_report(engine_info=info, engine_label="x", engine_fault=None,
                          mode="process", kit_version="0", tests=_passing("format"),
                          digest="0" * 64, started_at="2026-01-01T00:00:00.000Z",
                          finished_at="2026-01-01T00:00:01.000Z",
                          findings=[Finding("PROTO-1", "stdout", "a diagnostic line")])
    check_report(report)
    entry = _by_id(report.to_wire())["PROTO-1"]
    assert entry["outcome"] == "failed"
    assert [t["nodeid"] for t in entry["tests"] if t["outcome"] == "failed"] == [
        "finding:PROTO-1:stdout"]


# --------------------------------------------------------------------------- through pytest

KIT_TESTS = '''
import pytest
from memspec.conformance._outcomes import check

@pytest.mark.requirement("REC-4", "REC-5")
def test_two_requirements_one_breaks(engine):
    check("REC-4", True, "fine")
    check("REC-5", False, "the id is wrong")
'''


def test_the_plugin_fails_only_the_named_requirement(pytester: pytest.Pytester,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugin, "suites_dir", lambda: pytester.path.resolve())
    pytester.makepyfile(test_kit=KIT_TESTS)
    out = pytester.path / "report.json"
    result = pytester.runpytest(FORMAT_ONLY, f"--memspec-report={out}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    report = json.loads(Path(out).read_text(encoding="utf-8"))
    by_id = _by_id(report)
    assert by_id["REC-5"]["outcome"] == "failed"
    assert by_id["REC-4"]["outcome"] == "partial"
    assert by_id["REC-4"]["tests"][0]["outcome"] == "inconclusive"
    result.stdout.fnmatch_lines(["*REC-5*failed*the id is wrong*"])


XEXT_ENGINES = '''
from memspec.selftest.engines import FaultyEngine, reference_engine
from memspec.selftest.faults import fault_named

BASE = ("format", "signing", "store", "lifecycle", "search", "recall", "decay", "write", "files")


def _faulty(*extensions):
    fault = fault_named("ingest-skips-extension-rules")
    return FaultyEngine(reference_engine(), fault, (*BASE, *extensions))


def no_extension():
    return _faulty()


def expiry_only():
    return _faulty("x-expiry")
'''

XEXT_SUITES = [f"memspec.conformance.suites.test_ext_{name}"
               for name in ("expiry", "provenance", "falsifiability")]


@pytest.mark.parametrize(("factory", "want"), [("no_extension", "untestable"),
                                               ("expiry_only", "failed")])
def test_xext4_through_the_kit_follows_the_claim(pytester: pytest.Pytester, factory: str,
                                                 want: str) -> None:
    """The fault ingest-skips-extension-rules: with x-expiry claimed, XEXT-4 fails on the
    expiry ingest test alone; with no extension claimed, XEXT-4 has nothing to judge and is
    untestable (SPEC 19.2, Appendix B), never partial."""
    pytester.makepyfile(xext_engines=XEXT_ENGINES)
    pytester.syspathinsert()
    out = pytester.path / "report.json"
    pytester.runpytest("--pyargs", *XEXT_SUITES, "-k", "applies",
                       f"--memspec-engine=xext_engines:{factory}", f"--memspec-report={out}")
    entry = _by_id(json.loads(out.read_text(encoding="utf-8")))["XEXT-4"]
    assert entry["outcome"] == want, entry
    failing = [t["nodeid"] for t in entry["tests"] if t["outcome"] == "failed"]
    if want == "failed":
        assert failing == ["suites/test_ext_expiry.py::test_ingest_applies_the_expiry_rule"]
        judged = {t["nodeid"].split("::")[0] for t in entry["tests"]
                  if t["outcome"] not in ("untestable", "failed")}
        assert judged == {"suites/test_ext_expiry.py"}, entry["tests"]
    else:
        assert not failing and {t["outcome"] for t in entry["tests"]} == {"untestable"}


@pytest.mark.parametrize(("fault", "broken"), [("put-accepts-float-confidence", "STORE-11"),
                                               ("iterate-orders-by-birth", "STORE-5")])
def test_one_broken_store_rule_leaves_the_others_judged(pytester: pytest.Pytester, fault: str,
                                                        broken: str) -> None:
    """The store machine runs once per requirement: a lenient put (STORE-11) or an unordered
    iterate (STORE-5), as fg-agent-memory has both, fails that run alone, and every other
    requirement's run judges and passes it, never inconclusive."""
    out = pytester.path / "report.json"
    engine = f"memspec.selftest.engines:faulty.{fault.replace('-', '_')}"
    pytester.runpytest("--pyargs", "memspec.conformance.suites.test_store", "-k", "state_machine",
                       f"--memspec-engine={engine}", f"--memspec-report={out}")
    by_id = _by_id(json.loads(out.read_text(encoding="utf-8")))
    machine = {rid: [t["outcome"] for t in by_id[rid]["tests"]
                     if "test_store_state_machine" in t["nodeid"]]
               for rid in ("STORE-1", "STORE-2", "STORE-3", "STORE-4", "STORE-5", "STORE-6",
                           "STORE-11")}
    assert machine == {rid: ["failed" if rid == broken else "passed"] for rid in machine}, machine
    (run,) = [t for t in by_id[broken]["tests"] if "test_store_state_machine" in t["nodeid"]]
    assert run["message"].startswith(f"RequirementFailed: {broken}: "), run["message"]
