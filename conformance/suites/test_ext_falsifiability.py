"""Extension x-falsifiability: falsify retires a record through the lifecycle with the reason,
never deleting it (spec/EXTENSIONS.md section X6)."""

from __future__ import annotations

from typing import Any

import pytest

from memspec.conformance import _builders as build
from memspec.conformance._clock import KitClock
from memspec.conformance._machines import snapshot
from memspec.conformance._session import EngineSession
from memspec.conformance.suites.test_ext_expiry import ingest_rejects, load_rejects

SOURCED = {"kind": "observation", "ref": "fals-1", "agent": None}


def _falsifiable(clock: KitClock, body: str, tag: str = "temporal",
                 condition: str = "the office moves") -> dict[str, Any]:
    return build.record("fact", body, created_at=clock.now(), provenance=SOURCED,
                        extra={"x_falsifiable": {"tag": tag, "condition": condition}})


BAD: dict[str, Any] = {
    "not-an-object": "until friday",
    "unknown-tag": {"tag": "seasonal", "condition": "winter ends"},
    "blank-condition": {"tag": "temporal", "condition": "  "},
    "missing-condition": {"tag": "temporal"},
    "extra-member": {"tag": "temporal", "condition": "x", "after": "2026"},
}


@pytest.mark.requirement("XFALS-1")
@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_falsifiability_is_rejected(
    engine: EngineSession, clock: KitClock, case: str
) -> None:
    record = build.record("fact", "the staging cluster has three nodes",
                          created_at=clock.now(), extra={"x_falsifiable": BAD[case]})
    engine.reject("put", "record", record=record)
    engine.reject("validate_record", "record", record=record)


@pytest.mark.requirement("XFALS-1")
@pytest.mark.parametrize("tag", ["temporal", "paradigm", "architectural", "observational"])
def test_every_tag_is_accepted(engine: EngineSession, clock: KitClock, tag: str) -> None:
    record = _falsifiable(clock, f"the service is built as a monolith ({tag})", tag=tag)
    engine.call("put", record=record)
    assert engine.call("get", id=record["id"])["record"] == record


@pytest.mark.requirement("XFALS-2", "XFALS-4")
def test_falsify_archives_with_the_reason(engine: EngineSession, clock: KitClock) -> None:
    record = _falsifiable(clock, "the api is served by the monolith", tag="architectural",
                          condition="the api moves to its own service")
    engine.call("put", record=record)
    before = snapshot(engine)
    now = clock.advance(days=1)
    written = engine.call("falsify", id=record["id"], reason="the api service went live",
                          now=now)["record"]
    expected = {**record, "state": "archived", "updated_at": now, "signed_by": None,
                "signature": "",
                "state_reason": "falsified (architectural): the api service went live"}
    assert written == expected, f"XFALS-2: falsify wrote {written}, expected {expected}"
    history = engine.call("history", id=record["id"])["records"]
    assert history == [record, expected], (
        "XFALS-4: falsify must keep every earlier version and add exactly one")
    assert set(snapshot(engine)) == set(before), "XFALS-4: falsify deleted a record"


@pytest.mark.requirement("XFALS-3")
def test_falsify_rejections_write_nothing(engine: EngineSession, clock: KitClock) -> None:
    plain = build.record("fact", "the lobby has a piano", created_at=clock.now(),
                         provenance=SOURCED)
    live = _falsifiable(clock, "the lobby is open late")
    gone = _falsifiable(clock, "the lobby was open early")
    for record in (plain, live, gone):
        engine.call("put", record=record)
    engine.call("apply_proposal", now=clock.advance(seconds=1), proposal=build.proposal(
        "archive", target_id=gone["id"], reason="hours changed"))
    before = snapshot(engine)
    now = clock.advance(seconds=1)
    engine.reject("falsify", "not-found", id="mem:" + "cd" * 16, reason="x", now=now)
    engine.reject("falsify", "lifecycle", id=plain["id"], reason="no longer true", now=now)
    engine.reject("falsify", "lifecycle", id=gone["id"], reason="no longer true", now=now)
    engine.reject("falsify", "lifecycle", id=live["id"], reason=" ", now=now)
    engine.reject("falsify", "lifecycle", id=live["id"], reason="moved",
                  now="2025-01-01T00:00:00.000Z")
    assert snapshot(engine) == before, "XFALS-3: a rejected falsify wrote something"


@pytest.mark.requirement("XEXT-4", "XFALS-1")
@pytest.mark.profile("write")
def test_ingest_applies_the_falsifiability_rule(engine: EngineSession, clock: KitClock) -> None:
    ingest_rejects(engine, clock, "the staging cluster has three nodes",
                   {"x_falsifiable": BAD["unknown-tag"]}, "XFALS-1")


@pytest.mark.requirement("XEXT-4", "XFALS-1")
@pytest.mark.profile("files")
def test_load_applies_the_falsifiability_rule(engine: EngineSession, clock: KitClock) -> None:
    load_rejects(engine, clock, "the staging cluster has three nodes",
                 {"x_falsifiable": BAD["blank-condition"]}, "XFALS-1")
