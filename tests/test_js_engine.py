"""The JavaScript example engine (examples/js-engine), certified by the kit as a process.

The engine was written from SPEC.md alone, in another language, with no memspec code: if the kit
certifies it for the profiles it claims (format, signing, store), "any language" holds. The kit
runs in a subprocess exactly as an engine author would run it; the assertions read its JSON
report. A second test drives the engine directly with public vectors the kit does not send
through an engine (Wycheproof and RFC 8032 Ed25519, RFC 8785 JCS).
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memspec.data import resource_text
from memspec.engine import profiles

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "examples" / "js-engine" / "engine.js"
NODE = shutil.which("node")
CLAIMED = ("format", "signing", "store")
ENGINE_NAME = "memspec-js-example"
KIT_TIMEOUT = 1800

pytestmark = pytest.mark.skipif(
    NODE is None,
    reason="node is not on PATH: the JavaScript example engine needs Node.js (20 or later)",
)


def _engine_command() -> list[str]:
    assert NODE is not None
    return [NODE, str(ENGINE)]


@pytest.fixture(scope="module")
def kit_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Run the conformance kit against the JS engine once; its JSON report."""
    workdir = tmp_path_factory.mktemp("js-kit")
    report_path = workdir / "report.json"
    command = [
        sys.executable, "-m", "pytest", "--pyargs", "memspec.conformance",
        f"--memspec-engine-cmd={shlex.join(_engine_command())}",
        f"--memspec-report={report_path}", "-q", "-p", "no:cacheprovider",
    ]
    # Run from an empty folder, as an engine author would: the kit comes from the package.
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True,
                          timeout=KIT_TIMEOUT, check=False)
    tail = "\n".join((done.stdout + done.stderr).splitlines()[-60:])
    assert report_path.exists(), f"the kit wrote no report (exit {done.returncode}):\n{tail}"
    report: dict[str, Any] = json.loads(report_path.read_text(encoding="utf-8"))
    report["_output_tail"] = tail
    report["_pytest_exit"] = done.returncode
    return report


def _requirements(report: dict[str, Any], profile: str) -> list[dict[str, Any]]:
    return [req for req in report["requirements"] if req["profile"] == profile]


def test_the_kit_talks_to_the_js_engine_over_the_process_protocol(
        kit_report: dict[str, Any]) -> None:
    engine = kit_report["engine"]
    assert kit_report["mode"] == "process"
    assert engine["name"] == ENGINE_NAME
    assert engine["spec_version"] == "fg-agent-memory/0.1"
    assert engine["protocol"] == "memspec-engine/1"
    assert sorted(engine["profiles"]) == sorted(CLAIMED)


@pytest.mark.parametrize("profile", CLAIMED)
def test_claimed_profiles_are_met_and_what_is_unjudged_is_named(
        kit_report: dict[str, Any], profile: str) -> None:
    """Nothing the engine claims fails. A profile is certified, or partial (SPEC 19.2) only
    for requirements some of whose tests need a profile this engine does not claim, and the
    verdict names exactly those requirements."""
    verdict = kit_report["profiles"][profile]
    broken, unjudged = [], []
    for req in _requirements(kit_report, profile):
        outcome = req["outcome"]
        if outcome in ("passed", "untestable"):
            continue
        if outcome == "partial" and set(req.get("needs", [])) and \
                not set(req["needs"]) & set(CLAIMED):
            unjudged.append(req["id"])
            continue
        broken.append(f"{req['id']} {outcome}: " + "; ".join(
            f"{t['nodeid']} {t['outcome']}" for t in req.get("tests", [])
            if t["outcome"] not in ("passed", "not-claimed")))
    assert not broken, (
        f"the JS engine fails {profile}:\n" + "\n".join(broken)
        + "\n--- kit output (tail) ---\n" + kit_report["_output_tail"]
    )
    binding_unjudged = {r["id"] for r in _requirements(kit_report, profile)
                        if r["id"] in unjudged and r["binding"]}
    requires = profiles()[profile].get("requires", [])
    blocked = [dep for dep in requires if kit_report["profiles"][dep]["verdict"] != "certified"]
    if binding_unjudged or blocked:
        assert verdict["verdict"] == "partial", verdict
        assert set(verdict.get("unjudged", [])) == binding_unjudged, verdict
        assert all(kit_report["profiles"][dep]["verdict"] == "partial" for dep in blocked)
    else:
        assert verdict["verdict"] == "certified", verdict
    assert verdict["claimed"] is True
    assert _requirements(kit_report, profile), f"the report lists no {profile} requirement"


def test_xext4_is_untestable_for_an_engine_claiming_no_extension(
        kit_report: dict[str, Any]) -> None:
    """The engine claims no extension profile: XEXT-4 (apply the field rules of the extension
    profiles it claims) has nothing to judge, so it is untestable (SPEC 19.2, Appendix B) and
    never one of format's unjudged requirements."""
    (entry,) = [r for r in kit_report["requirements"] if r["id"] == "XEXT-4"]
    assert entry["outcome"] == "untestable", entry
    assert "reaches only what it claims" in entry["note"]
    assert "XEXT-4" not in kit_report["profiles"]["format"].get("unjudged", [])


def test_the_readme_says_what_the_kit_reports(kit_report: dict[str, Any]) -> None:
    verdicts = {p: kit_report["profiles"][p]["verdict"] for p in ("core", *CLAIMED)}
    readme = " ".join((ENGINE.parent / "README.md").read_text(encoding="utf-8").split())
    partial = [p for p in CLAIMED if verdicts[p] == "partial"]
    assert verdicts["core"] == "certified", verdicts
    assert partial == list(CLAIMED), f"the README says the three are partial: {verdicts}"
    assert ("the summary shows `core` as `certified`, `format`, `signing` and `store` as "
            "`partial`, not certified") in readme
    # The other-language guide: pytest exits 0 (no test failed) whatever the verdict says.
    guide = " ".join((ROOT / "docs" / "guide" / "certify-other-language.md").read_text(
        encoding="utf-8").split())
    assert kit_report["_pytest_exit"] == 0, kit_report["_output_tail"]
    assert ("so pytest exits with 0, while `core` is certified, its other profiles are `partial`"
            in guide)


def test_unclaimed_profiles_are_never_run(kit_report: dict[str, Any]) -> None:
    unclaimed = sorted(set(profiles()) - set(CLAIMED) - {"core"})
    assert unclaimed, "spec/operations.json lists no other profile"
    for profile in unclaimed:
        assert kit_report["profiles"][profile]["claimed"] is False, profile
        assert kit_report["profiles"][profile]["verdict"] == "not-claimed", profile
        outcomes = {req["id"]: req["outcome"] for req in _requirements(kit_report, profile)}
        ran = {rid: outcome for rid, outcome in outcomes.items() if outcome != "not-claimed"}
        assert not ran, f"{profile} is not claimed, yet the kit judged {ran}"


def test_the_engine_breaks_no_core_requirement(kit_report: dict[str, Any]) -> None:
    # core is always checked; "not-run" there is a gap in the kit, not a fault of the engine.
    bad = {req["id"]: req["outcome"] for req in _requirements(kit_report, "core")
           if req["outcome"] in ("failed", "errored")}
    assert not bad, f"the JS engine breaks the engine protocol: {bad}"


# ----------------------------------------------------------------- public vectors, directly


@pytest.fixture(scope="module")
def js_engine() -> Iterator[Any]:
    from memspec.protocol import ProcessEngine

    engine = ProcessEngine(_engine_command(), timeout=30)
    try:
        yield engine
    finally:
        engine.close()


def _external(name: str) -> Any:
    return json.loads(resource_text("vectors", f"external/{name}"))


def _wycheproof_cases() -> list[Any]:
    data = _external("wycheproof/ed25519_test.json")
    cases = []
    for group in data["testGroups"]:
        key = (group.get("publicKey") or group["key"])["pk"]
        for test in group["tests"]:
            cases.append(pytest.param(key, test, id=f"wycheproof-{test['tcId']}"))
    return cases


@pytest.mark.parametrize(("public_key", "test"), _wycheproof_cases())
def test_wycheproof_ed25519_through_the_engine(js_engine: Any, public_key: str,
                                               test: dict[str, Any]) -> None:
    """SIG-3 names the Wycheproof verdicts; node's Ed25519 (OpenSSL) must reach every one."""
    got = js_engine.call("ed25519_verify", {"public_key_hex": public_key,
                                            "message_hex": test["msg"],
                                            "signature_hex": test["sig"]})
    assert got["valid"] is (test["result"] == "valid"), f"{test['comment']}: {got}"


def test_rfc8032_keys_and_signatures_through_the_engine(js_engine: Any) -> None:
    for vector in _external("rfc8032/rfc8032-7.1-ed25519.json")["vectors"]:
        derived = js_engine.call("derive_key", {"seed_hex": vector["secret_key"]})
        assert derived["public_key_hex"] == vector["public_key"], vector["name"]
        verdict = js_engine.call("ed25519_verify", {"public_key_hex": vector["public_key"],
                                                    "message_hex": vector["message"],
                                                    "signature_hex": vector["signature"]})
        assert verdict["valid"] is True, vector["name"]


@pytest.mark.parametrize("name", ["arrays", "french"])
def test_rfc8785_inputs_that_agree_with_canonical_json(js_engine: Any, name: str) -> None:
    text = resource_text("vectors", f"external/jcs/input/{name}.json")
    expected = resource_text("vectors", f"external/jcs/outhex/{name}.txt")
    got = js_engine.call("canonicalize", {"text": text})["hex"]
    assert got == "".join(expected.split()).lower()
