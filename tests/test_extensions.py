"""The extension profiles (spec/EXTENSIONS.md): old-reader compatibility, the tables, the
reference engine and porcelain, the audit report and CLI, and the extension faults."""

from __future__ import annotations

import argparse
import copy
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import memspec
from memspec._audit import audit_digest, audit_path, build_report, render_markdown
from memspec._schemas import iter_errors, load_schema
from memspec.conformance._outcomes import catalogue
from memspec.conformance._report import _profile_verdicts
from memspec.data import json_resource
from memspec.engine import extension_profiles, operations, profiles
from memspec.reference import Memory
from memspec.reference.engine import create_engine
from memspec.selftest.faults_ext import EXTENSION_FAULTS
from memspec.selftest.faults_ext_ingest import EXTENSION_INGEST_FAULTS

#: Every fault of the extension profiles (the XEXT-4 faults live in their own module).
ALL_EXTENSION_FAULTS = (*EXTENSION_FAULTS, *EXTENSION_INGEST_FAULTS)

KEY = memspec.SigningKey(bytes(range(32)))
T0, T1, T2 = "2026-01-01T00:00:00.000Z", "2026-01-02T00:00:00.000Z", "2026-01-03T00:00:00.000Z"
NAME_RULE = re.compile(r"x_[a-z][a-z0-9_]*\Z")


def _record(body: str, *, extra: dict[str, Any] | None = None,
            ref: str | None = "doc-1") -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": "", "type": "fact", "body": body, "slots": {}, "state": "active",
        "confidence": "0.9000", "created_at": T0, "updated_at": T0,
        "provenance": {"kind": "observation", "ref": ref, "agent": None}, "evidence": [],
        "supersedes": None, "superseded_by": None, "transition": None, "state_reason": None,
        "tags": [], "flagged": False, "flag_reason": None, "signed_by": None, "signature": ""}
    record["id"] = memspec.record_id(record)
    record.update(copy.deepcopy(extra or {}))
    return record


SOURCE = _record("the rota is in the wiki")
EVERY_FIELD = {
    "x_expires_at": "2026-03-01T00:00:00.000Z",
    "x_observed_at": T0,
    "x_derivation": {"hops": 1, "from": [SOURCE["id"]]},
    "x_falsifiable": {"tag": "paradigm", "condition": "the team stops rotating"},
}


# -- old readers ------------------------------------------------------------------------------


def test_an_old_reader_validates_and_verifies_every_extension_field() -> None:
    plain = _record("the rota changes on mondays")
    extended = _record("the rota changes on mondays", extra=EVERY_FIELD)
    assert memspec.record_id(extended) == plain["id"], "XEXT-2: extension fields renamed it"
    signed = memspec.sign_record(extended, KEY)
    assert memspec.validate_record(signed) == signed
    assert memspec.verify_record(signed) is True
    memory_file = memspec.sign_file({"format": memspec.FORMAT_VERSION, "agent": None,
                                     "created_at": T1, "records": [SOURCE, signed],
                                     "signature": ""}, KEY)
    memspec.verify_file(memory_file, require_signature=True)
    assert memspec.validate_file(memory_file) == memory_file


@pytest.mark.parametrize("field", sorted(EVERY_FIELD))
def test_changing_any_extension_field_breaks_the_signature(field: str) -> None:
    signed = memspec.sign_record(_record("the rota changes on mondays", extra=EVERY_FIELD), KEY)
    tampered = copy.deepcopy(signed)
    del tampered[field]
    with pytest.raises(memspec.SignatureError):
        memspec.verify_record(tampered)
    memory_file = memspec.sign_file({"format": memspec.FORMAT_VERSION, "agent": None,
                                     "created_at": T1, "records": [signed], "signature": ""},
                                    KEY)
    memory_file["records"][0][field] = "changed"
    with pytest.raises(memspec.SignatureError):
        memspec.verify_file(memory_file, require_signature=True)


def test_extension_fields_follow_the_naming_rule() -> None:
    fields = load_schema("extensions/fields")["properties"]
    assert fields and all(NAME_RULE.match(name) for name in fields), "XEXT-1"
    text = (Path(memspec.__file__).parent.parent.parent / "spec" / "EXTENSIONS.md")
    if text.exists():
        named = set(re.findall(r"`(x_[a-z0-9_]+)`", text.read_text(encoding="utf-8")))
        assert named <= set(fields) | {"x_marks"} and set(fields) <= named
    assert iter_errors(EVERY_FIELD, "extensions/fields") == []


# -- tables and reports -------------------------------------------------------------------------


def test_extension_tables_are_merged_after_the_core() -> None:
    table = json_resource("spec", "extensions.json")
    assert iter_errors(table, "operations") == []
    core = json_resource("spec", "operations.json")
    assert not set(table["profiles"]) & set(core["profiles"])
    assert not set(table["operations"]) & set(core["operations"])
    assert list(profiles())[-len(extension_profiles()):] == list(extension_profiles())
    for name, op in table["operations"].items():
        assert operations()[name] == op
        assert f"{name}.args" in load_schema("protocol")["$defs"]
    for name, profile in table["profiles"].items():
        assert all(dep in profiles() for dep in profile["requires"]), name
        assert any(r.profile == name for r in catalogue().values()), name


def test_unclaimed_extension_profiles_are_reported_not_claimed() -> None:
    verdicts = _profile_verdicts(frozenset({"format", "signing"}), [])
    for name in extension_profiles():
        assert verdicts[name].to_wire() == {"claimed": False, "verdict": "not-claimed"}


def test_the_reference_claims_every_extension_profile() -> None:
    engine = create_engine()
    assert set(extension_profiles()) <= set(engine.describe()["profiles"])
    engine.close()


# -- the reference engine and porcelain -----------------------------------------------------------


def test_reference_rejects_malformed_extension_fields_everywhere() -> None:
    engine = create_engine()
    bad = _record("the printer is upstairs", extra={"x_expires_at": "soon"})
    create = {"kind": "create", "record": bad, "target_id": None, "other_id": None, "reason": ""}
    for op, args, error in (
            ("validate_record", {"record": bad}, memspec.RecordError),
            ("put", {"record": bad}, memspec.RecordError),
            ("index", {"record": bad}, memspec.RecordError),
            ("apply_proposal", {"now": T1, "proposal": create}, memspec.RecordError),
            ("load", {"verify": False, "file": {
                "format": memspec.FORMAT_VERSION, "agent": None, "created_at": T1,
                "records": [bad], "signature": ""}}, memspec.FileError)):
        with pytest.raises(error) as info:
            engine.call(op, args)
        assert info.value.requirement == "XEXP-1", (op, info.value)
    report = engine.call("ingest", {"now": T1, "proposals": [create]})
    assert [(r["index"], r["code"]) for r in report["rejected"]] == [(0, "record")]
    assert engine.call("iterate", {})["records"] == []
    engine.close()


def test_reference_ingest_rejects_a_malformed_restatement_of_a_stored_record() -> None:
    # XEXT-4: the field rules come before the dedup of WR-4.
    engine = create_engine()
    stored = _record("the printer is upstairs")
    engine.call("put", {"record": stored})
    restated = {**stored, "x_derivation": {"hops": 1, "from": []}}
    report = engine.call("ingest", {"now": T1, "proposals": [
        {"kind": "create", "record": restated, "target_id": None, "other_id": None,
         "reason": ""}]})
    assert report["deduped"] == [] and report["rejected"][0]["code"] == "record"
    assert engine.call("history", {"id": stored["id"]})["records"] == [stored]
    engine.close()


@pytest.mark.parametrize("extra", [{"x_expires_at": "soon"}, {"x_observed_at": 7},
                                   {"x_derivation": {"hops": -1}}, {"x_falsifiable": "never"}])
def test_an_old_reader_carries_malformed_extension_fields(extra: dict[str, Any]) -> None:
    # memspec's core claims no extension profile: to it these are unknown fields (XEXT-3).
    record = _record("the printer is upstairs", extra=extra)
    assert memspec.validate_record(copy.deepcopy(record)) == record
    assert memspec.verify_record(memspec.sign_record(record, KEY)) is True


def test_the_porcelain_hides_expired_records_and_decays_them() -> None:
    clock = iter([T0, T0, T1, T1, T2, T2, T2])
    memory = Memory(clock=lambda: next(clock), auto_consolidate=False)
    kept = memory.remember("the parking code is 4411").record_id
    record = memory.store.get(kept).model_dump()
    assert memory.recall("parking code").ids == (kept,)
    expiring = _record("the visitor parking code is 9000", extra={"x_expires_at": T1})
    memory.store.put(memspec.reference.records.MemoryRecord.model_validate(expiring))
    for index in memory.indexes:
        index.index(memory.store.get(expiring["id"]))
    assert expiring["id"] not in memory.recall("parking code").ids
    assert expiring["id"] in memory.recall("parking code", include_expired=True).ids
    report = memory.decay()
    assert expiring["id"] in report.archived
    reason = memory.store.get(expiring["id"]).state_reason
    assert reason is not None and reason.startswith("expired")
    assert memory.store.get(kept).model_dump()["body"] == record["body"]


# -- audit ----------------------------------------------------------------------------------------


def _histories() -> dict[str, list[dict[str, Any]]]:
    engine = create_engine()
    old = _record("the badge office is in room 3")
    engine.call("put", {"record": old})
    new = _record("the badge office is in room 5")
    new.update(supersedes=old["id"], created_at=T1, updated_at=T1)
    new["id"] = memspec.record_id(new)
    engine.call("apply_proposal", {"now": T1, "proposal": {
        "kind": "supersede", "record": new, "target_id": old["id"], "other_id": None,
        "reason": "moved"}})
    engine.call("redact", {"id": new["id"], "reason": "a mistake", "now": T2})
    out = {rid: engine.call("history", {"id": rid})["records"] for rid in (old["id"], new["id"])}
    audited = engine.call("audit", {})
    assert audited["report"] == build_report(out) and audited["digest"] == audit_digest(
        audited["report"])
    engine.close()
    return out


def test_audit_report_is_reproducible_and_content_free() -> None:
    histories = _histories()
    rejection = {"pass": "near-dup", "detail": "stale id", "code": "proposal"}
    report = build_report(histories, [rejection])
    assert iter_errors(report, "extensions/audit") == []
    assert build_report(copy.deepcopy(histories), report["rejections"]) == report
    assert len(report["supersessions"]) == 1 and len(report["redactions"]) == 1
    text = json.dumps(report)
    assert "room 3" not in text and "room 5" not in text
    markdown = render_markdown(report)
    assert audit_digest(report) in markdown and "a mistake" in markdown
    with pytest.raises(memspec.RecordError):
        build_report({"mem:" + "0" * 32: [{"id": "nope"}]})


def test_cli_audits_a_memory_file_and_a_file_store(tmp_path: Path) -> None:
    from memspec.cli._audit import register

    path = tmp_path / "memory"
    with Memory(path, clock=lambda: T0, auto_consolidate=False) as memory:
        first = memory.remember("the fire exit is at the back").record_id
        memory.redact(first, reason="stored by mistake")
        memory.remember("the fire drill is on fridays")
        exported = tmp_path / "memory.json"
        memory.export(exported)
    store_report = audit_path(path)
    assert [r["redacted"] for r in store_report["records"]].count(True) == 1
    assert audit_path(path / "records") == store_report
    file_report = audit_path(exported)
    assert [r["id"] for r in file_report["records"]] == [r["id"] for r in store_report["records"]]

    parser = argparse.ArgumentParser()
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true")
    register(parser.add_subparsers(dest="command"), common)
    out = tmp_path / "audit.json"
    args = parser.parse_args(["audit", str(exported), "--format", "json", "--canonical",
                              "-o", str(out)])
    assert args.func(args) == 0
    document = memspec.parse_json(out.read_bytes())
    assert document == {"report": file_report, "digest": audit_digest(file_report)}
    md = tmp_path / "audit.md"
    args = parser.parse_args(["audit", str(path), "-o", str(md)])
    assert args.func(args) == 0
    assert md.read_text(encoding="utf-8").startswith("# Memory audit")
    assert "fire exit" not in md.read_text(encoding="utf-8")


# -- the extension faults ------------------------------------------------------------------


def test_every_extension_family_has_a_fault() -> None:
    reqs = catalogue()
    families = {f.requirement.rsplit("-", 1)[0] for f in ALL_EXTENSION_FAULTS}
    assert families >= {"XEXT", "XEXP", "XTT", "XPROV", "XHYP", "XFALS", "XAUD"}
    testable = {r.id for r in reqs.values() if r.id.startswith("X") and not r.untestable}
    assert testable == {f.requirement for f in ALL_EXTENSION_FAULTS}
    for fault in ALL_EXTENSION_FAULTS:
        assert reqs[fault.requirement].profile == fault.profile, fault.name
    assert len({f.name for f in ALL_EXTENSION_FAULTS}) == len(ALL_EXTENSION_FAULTS)


SAMPLE = ("hypotheses-first", "as-of-writes", "audit-leaks-bodies",
          "ingest-skips-extension-rules", "load-extension-rule-as-record")


@pytest.mark.parametrize("name", SAMPLE)
def test_a_sample_of_extension_faults_is_caught(name: str, tmp_path: Path) -> None:
    fault = next(f for f in ALL_EXTENSION_FAULTS if f.name == name)
    module = "faults_ext" if fault in EXTENSION_FAULTS else "faults_ext_ingest"
    suites = [f"memspec.conformance.suites.{m}" for m in (
        "test_ext_expiry", "test_ext_time_travel", "test_ext_provenance", "test_ext_hypothesis",
        "test_ext_falsifiability", "test_ext_audit")]
    report = tmp_path / "report.json"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs", *suites,
         f"--memspec-engine=memspec.selftest.{module}:faulty.{name.replace('-', '_')}",
         f"--memspec-report={report}"], cwd=tmp_path, capture_output=True, check=False,
        timeout=300)
    outcomes = {r["id"]: r["outcome"] for r in json.loads(report.read_text())["requirements"]}
    assert outcomes[fault.requirement] == "failed", (name, outcomes[fault.requirement])
