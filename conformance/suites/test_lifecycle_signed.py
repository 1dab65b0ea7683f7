"""Lifecycle changes of signed records: every new version is unsigned (LC-6).

Judged with lifecycle operations alone (the pure ``lifecycle`` functions, and
``apply_proposal`` and ``resolve`` over the store the profile requires), so an
engine claiming ``lifecycle`` without ``signing`` is judged on it in full; the
records are signed by the kit.
"""

from __future__ import annotations

from typing import Any

import pytest

from memspec import canonical_json, sign_record, verify_record
from memspec.conformance import _builders as build
from memspec.conformance._builders import Keys
from memspec.conformance._clock import KitClock
from memspec.conformance._outcomes import check
from memspec.conformance._session import EngineSession


def _signed(clock: KitClock, keys: Keys, body: str, kind: str = "fact",
            **fields: Any) -> dict[str, Any]:
    record = build.record(kind, body, created_at=clock.advance(seconds=1), **fields)
    return sign_record(record, keys.a)


def _unsigned(version: dict[str, Any], what: str) -> None:
    assert version["signed_by"] is None and version["signature"] == "", (
        f"LC-6: {what} of a signed record kept signed_by {version['signed_by']!r} and a "
        f"signature {version['signature'][:16]!r}...; a lifecycle change writes an unsigned "
        "version (the old signature covers the old fields)"
    )


@pytest.mark.requirement("LC-6")
def test_lifecycle_functions_return_unsigned_versions(engine: EngineSession, clock: KitClock,
                                                      keys: Keys) -> None:
    old = _signed(clock, keys, "the printer is on floor two")
    successor = _signed(clock, keys, "the printer is on floor three", supersedes=old["id"])
    a = _signed(clock, keys, "the door code is 1234")
    b = _signed(clock, keys, "the door code is 4321")
    evidence = _signed(clock, keys, "the printer jammed twice")
    rule = _signed(clock, keys, "check the printer tray", "rule", evidence=[evidence["id"]])

    def run(operation: str, records: list[dict[str, Any]], **extra: Any) -> list[Any]:
        out: list[Any] = engine.call("lifecycle", operation=operation, records=records,
                                     now=clock.advance(seconds=1), **extra)["records"]
        return out

    (archived,) = run("archive", [old], reason="moved")
    _unsigned(archived, "archive")
    (superseded,) = run("supersede", [old, successor], reason="moved")
    _unsigned(superseded, "supersede")
    left, right = run("begin_transition", [a, b], reason="they disagree")
    for version in (left, right):
        _unsigned(version, "begin_transition")
    signed_left, signed_right = (sign_record(v, keys.b) for v in (left, right))
    for version in run("resolve_transition", [signed_left, signed_right], reason="checked"):
        _unsigned(version, "resolve_transition")
    (flagged,) = run("refresh_rule_flag", [rule], missing=[evidence["id"]],
                     reason="the jam report is gone")
    _unsigned(flagged, "refresh_rule_flag (flagging)")


@pytest.mark.requirement("LC-6")
def test_stored_lifecycle_versions_of_signed_records_are_unsigned(
    engine: EngineSession, clock: KitClock,
    keys: Keys) -> None:
    kept = _signed(clock, keys, "the spare key is under the blue pot")
    old = _signed(clock, keys, "the wifi is called attic")
    a = _signed(clock, keys, "standup is at nine")
    b = _signed(clock, keys, "standup is at ten")
    for record in (kept, old, a, b):
        engine.call("put", record=record)
    successor = build.record("fact", "the wifi is called cellar", created_at=clock.now(),
                             supersedes=old["id"])

    def apply(kind: str, **fields: Any) -> list[Any]:
        written: list[Any] = engine.call("apply_proposal", proposal=build.proposal(
            kind, **fields), now=clock.advance(seconds=1))["written"]
        return written

    for version in apply("archive", target_id=kept["id"], reason="retired"):
        _unsigned(version, "an archive proposal")
    for version in apply("supersede", record=successor, target_id=old["id"],
                         reason="renamed")[1:]:
        _unsigned(version, "a supersede proposal")
    for version in apply("transition", target_id=a["id"], other_id=b["id"],
                         reason="they disagree"):
        _unsigned(version, "a transition proposal")
    for version in engine.call("resolve", winner_id=a["id"], loser_id=b["id"],
                               reason="the calendar says nine",
                               now=clock.advance(seconds=1))["written"]:
        _unsigned(version, "resolve")
    for record in (kept, old, a, b):
        versions = engine.call("history", id=record["id"])["records"]
        _unsigned(versions[-1], "the latest stored version")
        check("LC-6", canonical_json(versions[0]) == canonical_json(record)
              and verify_record(versions[0]),
              f"the signed first version of {record['id']} no longer verifies in history")
