"""The pytest plugin: inert without options, usage errors, outcomes, the summary and the report."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import hypothesis  # noqa: F401  (pytester's in-process runs reuse it instead of re-importing)
import pytest

from memspec.conformance import plugin
from memspec.conformance._builders import fixed_keys
from memspec.conformance._outcomes import catalogue
from memspec.conformance._report import (
    TestResult,
    build_report,
    check_report,
    sign_report,
    verify_report,
)

pytest_plugins = ["pytester"]

ENGINES = str(Path(__file__).with_name("engines.py"))
ROOT = Path(__file__).resolve().parents[2]
FORMAT_ONLY = "--memspec-engine=tests.kit.engines:format_only"


@pytest.fixture
def kit_dir(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """Make pytester's folder count as the kit's suites folder, so its tests are kit tests."""
    monkeypatch.setattr(plugin, "suites_dir", lambda: pytester.path.resolve())
    return pytester


def test_plugin_is_inert_without_options(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_ok():\n    assert True\n")
    result = pytester.runpytest("-q")
    result.assert_outcomes(passed=1)
    assert "memspec conformance" not in result.stdout.str()


def test_help_lists_the_options(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    for option in ("--memspec-engine", "--memspec-engine-cmd", "--memspec-report",
                   "--memspec-timeout", "--memspec-thorough", "--memspec-report-channel"):
        result.stdout.fnmatch_lines([f"*{option}*"])


def test_suites_without_an_engine_are_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--pyargs", "memspec.conformance.suites.test_protocol")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*need an engine*--memspec-engine=NAME*"])


def test_unknown_engine_is_a_usage_error_listing_engines(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--pyargs", "memspec.conformance.suites.test_protocol",
                                "--memspec-engine=no-such-engine")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no engine named 'no-such-engine'*installed engines*"])


def test_not_an_engine_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--pyargs", "memspec.conformance.suites.test_protocol",
                                "--memspec-engine=tests.kit.engines:not_an_engine")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*returned object*describe()*"])


def _report(path: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    check_report(report)
    return report


def test_format_only_engine_run_and_report(pytester: pytest.Pytester) -> None:
    out = pytester.path / "report.json"
    result = pytester.runpytest("--pyargs", "memspec.conformance.suites.test_protocol",
                                FORMAT_ONLY, f"--memspec-report={out}", "-v")
    text = result.stdout.str()
    assert "NOT CLAIMED" in text and "memspec conformance" in text
    report = _report(out)
    assert report["mode"] == "in-process"
    assert report["engine"]["profiles"] == ["format"]
    assert report["profiles"]["format"]["claimed"] is True
    assert report["profiles"]["store"] == {"claimed": False, "verdict": "not-claimed"}
    outcomes = {t["nodeid"].split("::")[-1]: t["outcome"]
                for r in report["requirements"] for t in r["tests"]}
    # Not claimed for want of store, which for PROTO-6, claim-conditional, counts as untestable.
    assert outcomes["test_reset_leaves_an_empty_store"] == "untestable"
    assert outcomes["test_hello_names_the_engine_its_versions_and_its_claims"] == "passed"
    assert outcomes["test_process_answers_pipelined_requests_in_order"] == "untestable"
    by_id = {r["id"]: r for r in report["requirements"]}
    assert by_id["STORE-1"]["outcome"] == "not-claimed"
    assert by_id["PROTO-6"]["outcome"] == "untestable"
    assert by_id["PROTO-2"]["outcome"] == "passed"
    # evolve_record is not implemented by this engine: PROTO-5 fails, so core and format fail.
    assert by_id["PROTO-5"]["outcome"] == "failed"
    assert report["verdict"] == "failed"
    assert len(report["suite_digest"]) == 64


def test_process_engine_that_hangs_still_completes(pytester: pytest.Pytester) -> None:
    out = pytester.path / "report.json"
    result = pytester.runpytest(
        "--pyargs", "memspec.conformance.suites.test_protocol",
        f"--memspec-engine-cmd={sys.executable} {ENGINES} hang", "--memspec-timeout=0.3",
        f"--memspec-report={out}",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    report = _report(out)
    assert report["mode"] == "process"
    assert report["summary"]["tests"].get("errored", 0) >= 1
    assert report["verdict"] in ("errored", "failed")
    messages = [t.get("message", "") for r in report["requirements"] for t in r["tests"]]
    assert any("within 0.3s" in m for m in messages)


def test_process_engine_without_handshake_stops_the_run_at_once(
        pytester: pytest.Pytester) -> None:
    out = pytester.path / "report.json"
    result = pytester.runpytest(
        "--pyargs", "memspec.conformance.suites.test_protocol",
        f"--memspec-engine-cmd={sys.executable} {ENGINES} no-handshake",
        f"--memspec-report={out}",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the engine under test did not start*hello*"])
    assert not out.exists()


def test_engine_dying_at_start_up_shows_its_stderr(pytester: pytest.Pytester) -> None:
    dying = pytester.path / "dying.py"
    dying.write_text("import sys\nsys.stderr.write(\"Error: Cannot find module 'x'\\n\")\n"
                     "raise SystemExit(1)\n", encoding="utf-8")
    result = pytester.runpytest("--pyargs", "memspec.conformance.suites.test_protocol",
                                f"--memspec-engine-cmd={sys.executable} {dying}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*did not start*", "*Cannot find module 'x'*"])


KIT_TESTS = '''
import pytest
from memspec.protocol import EngineFault

@pytest.mark.requirement("REC-13")
def test_should_level_miss(engine):
    assert False, "episodes lack occurred_at"

@pytest.mark.requirement("REC-5")
def test_fault(engine):
    raise EngineFault("engine wrote garbage")

@pytest.mark.requirement("STORE-1")
def test_unclaimed(engine):
    engine.call("put", record={})

@pytest.mark.requirement("REC-3")
def test_uses_unclaimed_operation(engine):
    engine.call("iterate")

@pytest.mark.requirement("REC-4")
def test_passes(engine, clock, keys):
    assert clock.now() == "2026-01-01T00:00:00.000Z"
    assert keys.a.address.startswith("amp:key:FAe4sisG95")
    assert engine.claims("format") and not engine.claims("store")
'''


def test_outcomes_in_the_terminal_and_report(kit_dir: pytest.Pytester) -> None:
    kit_dir.makepyfile(test_kit=KIT_TESTS)
    out = kit_dir.path / "out" / "report.json"
    result = kit_dir.runpytest(FORMAT_ONLY, f"--memspec-report={out}", "-v")
    result.stdout.fnmatch_lines([
        "*test_should_level_miss SHOULD WARNING*",
        "*test_fault ERRORED*",
        "*test_unclaimed NOT CLAIMED*",
        "*test_uses_unclaimed_operation NOT CLAIMED*",
        "*test_passes PASSED*",
    ])
    # The fault fails the run; the SHOULD miss alone would not.
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    report = _report(out)
    by_id = {r["id"]: r for r in report["requirements"]}
    assert by_id["REC-13"]["outcome"] == "failed" and by_id["REC-13"]["binding"] is False
    assert by_id["REC-5"]["outcome"] == "errored"
    assert by_id["STORE-1"]["outcome"] == "not-claimed"
    # REC-3 is format's, which is claimed; its one test needs store: not judged, not passed.
    assert by_id["REC-3"]["outcome"] == "partial" and by_id["REC-3"]["needs"] == ["store"]
    assert by_id["REC-3"]["tests"][0]["needs"] == ["store"]
    assert by_id["REC-4"]["outcome"] == "passed"
    assert report["summary"]["warnings"] == 1
    assert report["profiles"]["format"]["verdict"] == "errored"
    assert "REC-3" in report["profiles"]["format"]["unjudged"]


def test_a_should_miss_alone_does_not_fail_the_run(kit_dir: pytest.Pytester) -> None:
    kit_dir.makepyfile(test_kit='''
import pytest

@pytest.mark.requirement("REC-13")
def test_should_level_miss(engine):
    assert False

@pytest.mark.requirement("REC-4")
def test_passes(engine):
    pass
''')
    result = kit_dir.runpytest(FORMAT_ONLY)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*1 passed*1 should-warning*"])


def test_kit_test_without_requirement_is_a_usage_error(kit_dir: pytest.Pytester) -> None:
    kit_dir.makepyfile(test_kit="def test_unmarked(engine):\n    pass\n")
    result = kit_dir.runpytest(FORMAT_ONLY)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*must carry @pytest.mark.requirement*test_unmarked*"])


def test_kit_test_with_unknown_requirement_is_a_usage_error(kit_dir: pytest.Pytester) -> None:
    kit_dir.makepyfile(test_kit='''
import pytest

@pytest.mark.requirement("NOPE-1")
def test_x(engine):
    pass
''')
    result = kit_dir.runpytest(FORMAT_ONLY)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*NOPE-1*"])


def test_the_report_channel_hands_over_the_kits_report(monkeypatch: pytest.MonkeyPatch) -> None:
    from memspec.cli import _kit

    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("PYTHONPATH", ".")
    code, report, output = _kit.run_kit(
        [FORMAT_ONLY], ["--pyargs", "memspec.conformance.suites.test_protocol"],
        show_output=False)
    assert report is not None, output[-2000:]
    check_report(report)
    assert report.engine.name == "kit-format-only" and code == 1
    assert report.signature is None  # the kit never signs: certify does, itself


def test_the_report_channel_takes_only_what_the_key_vouches_for() -> None:
    from memspec.conformance._channel import ChannelError, ReportChannel, read_key, send_report

    channel = ReportChannel()
    key_fd, report_fd = channel.child_fds
    key = read_key(key_fd)  # what the kit child does first
    forged = {"verdict": "certified"}
    os.write(report_fd, b"memspec-report " + b"0" * 64 + b" " + json.dumps(forged).encode()
             + b"\n")  # what an engine writing into the pipe could do
    send_report(report_fd, key, {"verdict": "failed"})
    assert channel.receive() == {"verdict": "failed"} and channel.tampered

    channel = ReportChannel()
    key_fd, report_fd = channel.child_fds
    os.close(key_fd)
    send_report(report_fd, b"k" * 32, forged)  # a frame under any other key
    assert channel.receive() is None and channel.tampered

    channel = ReportChannel()
    key_fd, report_fd = channel.child_fds
    send_report(report_fd, read_key(key_fd), None)
    assert channel.receive() is None and not channel.tampered  # the kit stopped early

    empty_read, empty_write = os.pipe()
    os.close(empty_write)
    with pytest.raises(ChannelError, match="did not carry a key"):
        read_key(empty_read)


def test_the_report_channel_option_is_checked(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--pyargs", "memspec.conformance.suites.test_protocol",
                                FORMAT_ONLY, "--memspec-report-channel=nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--memspec-report-channel=nope*not the pipes*"])


def test_sign_report_round_trip() -> None:
    report = {"verdict": "certified", "engine": {"name": "x"}}
    signed = sign_report(report, fixed_keys().b)
    assert verify_report(signed) and not verify_report(report)


# --------------------------------------------------------------------------- folding rules


def _fold(claims: list[str], tests: list[TestResult]) -> dict[str, Any]:
    info = {"name": "x", "version": "1", "spec_version": "fg-agent-memory/0.1",
            "protocol": "memspec-engine/1", "profiles": claims}
    report = build_report(engine_info=info, engine_label="x", engine_fault=None,
                          mode="in-process", kit_version="0", tests=tests, digest="0" * 64,
                          started_at="2026-01-01T00:00:00.000Z",
                          finished_at="2026-01-01T00:00:01.000Z")
    check_report(report)
    return report.to_wire()


def _passing(profile: str) -> list[TestResult]:
    return [TestResult(f"t::{r.id}", (r.id,), "passed") for r in catalogue().values()
            if r.profile in (profile, "core")]


def test_all_passing_format_engine_is_certified_for_format() -> None:
    report = _fold(["format"], _passing("format"))
    assert report["verdict"] == "certified"
    assert report["profiles"]["format"]["verdict"] == "certified"
    assert report["profiles"]["store"]["verdict"] == "not-claimed"


def test_should_failure_is_a_warning_not_a_failure() -> None:
    tests = [t for t in _passing("format") if t.requirements != ("REC-13",)]
    tests.append(TestResult("t::should", ("REC-13",), "failed", "no occurred_at"))
    report = _fold(["format"], tests)
    assert report["verdict"] == "certified" and report["summary"]["warnings"] == 1


def test_untested_must_makes_the_profile_incomplete() -> None:
    tests = [t for t in _passing("format") if t.requirements != ("REC-5",)]
    report = _fold(["format"], tests)
    by_id = {r["id"]: r for r in report["requirements"]}
    assert by_id["REC-5"]["outcome"] == "not-run"
    assert report["profiles"]["format"]["verdict"] == "incomplete"


def test_claim_without_its_required_profile_fails() -> None:
    report = _fold(["signing"], _passing("signing"))
    assert report["profiles"]["signing"]["verdict"] == "failed"
    assert "does not claim" in report["profiles"]["signing"]["notes"][0]


def test_errored_test_makes_the_requirement_errored() -> None:
    tests = [t for t in _passing("format") if t.requirements != ("REC-5",)]
    tests.append(TestResult("t::fault", ("REC-5",), "errored", "EngineFault: garbage"))
    report = _fold(["format"], tests)
    assert report["verdict"] == "errored"


# --------------------------------------------------------------------------- xdist hand-over


def test_kit_item_crosses_as_json_and_rejects_anything_else() -> None:
    from memspec._errors import MemspecError
    from memspec.conformance._outcomes import KitItem

    item = KitItem("suites/test_x.py::test_y", ("REC-4",), ("format",), ("MUST",), False)
    assert KitItem.from_wire(json.loads(json.dumps(item.to_wire()))) == item
    bad: object
    for bad in (None, [], {"kit_id": 1}, {**item.to_wire(), "levels": [1]}):
        with pytest.raises(MemspecError, match="xdist worker"):
            KitItem.from_wire(bad)


def test_engine_states_of_workers_merge_to_one() -> None:
    from memspec._errors import MemspecError
    from memspec.conformance._session import EngineState

    info = {"name": "x", "profiles": ["format"]}
    idle = EngineState(None, None, "process")  # a worker that ran no test
    good = EngineState(info, None, "process")
    broken = EngineState(info, "engine abandoned after 3 consecutive faults", "process")
    assert EngineState.merge([]) is None
    assert EngineState.merge([idle, good]) == good
    assert EngineState.merge([good, broken]) == broken
    assert EngineState.from_wire(json.loads(json.dumps(broken.to_wire()))) == broken
    other = EngineState({**info, "profiles": []}, None, "process")
    merged = EngineState.merge([good, other])
    assert merged is not None and merged.info == info
    assert merged.fault is not None and "differently" in merged.fault
    with pytest.raises(MemspecError):
        EngineState.from_wire({"info": None, "fault": None, "mode": "remote"})
