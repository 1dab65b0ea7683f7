"""Extension x-expiry: expired records leave default recall and are archived by decay, never
deleted (spec/EXTENSIONS.md section X2)."""

from __future__ import annotations

from typing import Any

import pytest

from memspec.conformance import _builders as build
from memspec.conformance._clock import KitClock
from memspec.conformance._driver import Driver
from memspec.conformance._machines import snapshot
from memspec.conformance._session import EngineSession

#: Decay settings under which nothing decays by salience: only expiry archives.
GENTLE = {"half_life_days": 100000, "reinforcement_bonus": 0, "archive_threshold": 0.0001}


@pytest.fixture
def driver(driver: Driver) -> Driver:
    """The kit's driver, with this suite's provenance refs (exp-1, exp-2, ...)."""
    return driver.configured(ref_prefix="exp")


def _put(driver: Driver, body: str, *, expires: str | None = None, **fields: Any
         ) -> dict[str, Any]:
    """A fact put into the store, with ``x_expires_at`` when ``expires`` is given."""
    extra = {"x_expires_at": expires} if expires is not None else None
    return driver.put(body, extra=extra, **fields)


@pytest.mark.requirement("XEXP-1")
@pytest.mark.parametrize("value", ["tomorrow", "2026-01-02T00:00:00Z", 1767312000, None])
def test_malformed_expiry_is_rejected(driver: Driver, engine: EngineSession, value: Any) -> None:
    record = build.record("fact", "the visitor badge is valid", created_at=driver.clock.now(),
                          extra={"x_expires_at": value})
    engine.reject("put", "record", record=record)
    engine.reject("validate_record", "record", record=record)
    assert engine.call("iterate")["records"] == [], "XEXP-1: a rejected put wrote a record"


@pytest.mark.requirement("XEXP-2", "XEXP-6")
def test_expired_records_leave_default_recall(driver: Driver, clock: KitClock) -> None:
    now = clock.at(10)
    gone = _put(driver, "the parking garage code is 4411", expires=clock.at(5))
    edge = _put(driver, "the parking garage code was 4412", expires=now)
    later = _put(driver, "the parking garage code will be 4413", expires=clock.at(20))
    plain = _put(driver, "the parking garage closes at ten")
    found = driver.entries("parking garage code", now=now)
    for rec in (gone, edge):
        assert rec["id"] not in found, (
            f"XEXP-2: {rec['id']} expired at {rec['x_expires_at']} (now {now}) but was recalled")
    for rec in (later, plain):
        assert rec["id"] in found, (
            f"XEXP-6: {rec['id']} is not expired at {now} but recall left it out")
    assert "expired" not in found[later["id"]].get("x_marks", []), (
        "XEXP-6: a record that is not yet expired is marked expired")
    explicit = driver.entries("parking garage code", now=now, include_expired=False)
    assert explicit.keys() == found.keys()


@pytest.mark.requirement("XEXP-2")
def test_an_expired_partner_takes_its_pair_out(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    a = _put(driver, "the ferry leaves from pier four", expires=clock.at(2))
    b = _put(driver, "the ferry leaves from pier five")
    engine.call("apply_proposal", now=clock.advance(seconds=1), proposal=build.proposal(
        "transition", target_id=a["id"], other_id=b["id"], reason="two answers"))
    found = driver.entries("ferry pier five", now=clock.at(3))
    assert a["id"] not in found and b["id"] not in found, (
        f"XEXP-2: the partner of an expired transitional record must be left out with it "
        f"(RCL-5), recall returned {sorted(found)}")


@pytest.mark.requirement("XEXP-3")
def test_include_expired_shows_and_marks_them(driver: Driver, clock: KitClock) -> None:
    now = clock.at(10)
    gone = _put(driver, "the wifi password is swordfish", expires=clock.at(1))
    plain = _put(driver, "the wifi network is called office")
    found = driver.entries("wifi password network", now=now, include_expired=True)
    assert gone["id"] in found, "XEXP-3: include_expired did not bring back the expired record"
    assert found[gone["id"]].get("x_marks") == ["expired"], (
        f"XEXP-3: the expired entry is marked {found[gone['id']].get('x_marks')}, "
        "not ['expired']")
    assert "expired" not in found[plain["id"]].get("x_marks", []), (
        "XEXP-3: a record without expiry is marked expired")


@pytest.mark.requirement("XEXP-3")
def test_include_expired_keeps_the_state_filters(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    gone = _put(driver, "the office plant is a ficus", expires=clock.at(1))
    engine.call("apply_proposal", now=clock.advance(seconds=1), proposal=build.proposal(
        "archive", target_id=gone["id"], reason="moved away"))
    found = driver.entries("office plant ficus", now=clock.at(5), include_expired=True)
    assert gone["id"] not in found, (
        "XEXP-3: include_expired also brought back an archived record (RCL-8 still applies)")


@pytest.mark.requirement("XEXP-4", "XEXP-5")
def test_decay_archives_expired_records_with_the_reason(driver: Driver, engine: EngineSession,
                                                        clock: KitClock) -> None:
    gone = _put(driver, "the conference room is booked until friday", expires=clock.at(3),
                confidence="1.0000")
    kept = _put(driver, "the conference room has a projector", expires=clock.at(30),
                confidence="1.0000")
    before = snapshot(engine)
    now = clock.at(4)
    report = engine.call("decay", now=now, config=GENTLE)
    assert gone["id"] in report["archived"], (
        f"XEXP-4: decay at {now} did not archive a record expired at {gone['x_expires_at']} "
        f"(archived {report['archived']})")
    assert kept["id"] not in report["archived"], "XEXP-6: decay archived an unexpired record"
    latest = engine.call("get", id=gone["id"])["record"]
    assert latest["state"] == "archived" and latest["updated_at"] == now, (
        f"XEXP-4: the expired record is stored {latest['state']} at {latest['updated_at']}")
    reason = latest["state_reason"] or ""
    assert reason.startswith("expired") and gone["x_expires_at"] in reason, (
        f"XEXP-4: the archival reason {reason!r} must begin with 'expired' and name "
        f"{gone['x_expires_at']}")
    assert latest.get("x_expires_at") == gone["x_expires_at"], (
        "XEXP-5: the archived version lost or changed x_expires_at")
    after = snapshot(engine)
    assert set(after) == set(before), "XEXP-5: expiry deleted a record"
    assert after[gone["id"]][:-1] == before[gone["id"]], (
        "XEXP-5: expiry rewrote an earlier version instead of adding one")
    assert engine.call("history", id=gone["id"])["records"][0]["state"] == "active"


@pytest.mark.requirement("XEXP-4")
def test_protections_still_apply_to_expired_records(driver: Driver, engine: EngineSession,
                                                    clock: KitClock) -> None:
    a = _put(driver, "the build server is jenkins", expires=clock.at(1))
    b = _put(driver, "the build server is not jenkins")
    engine.call("apply_proposal", now=clock.advance(seconds=1), proposal=build.proposal(
        "transition", target_id=a["id"], other_id=b["id"], reason="dispute"))
    report = engine.call("decay", now=clock.at(5), config=GENTLE)
    assert a["id"] not in report["archived"], "XEXP-4: decay archived an expired transitional"
    protected = {p["id"]: p["protection"] for p in report["protected"]}
    assert protected.get(a["id"]) == "transitional", (
        f"XEXP-4: an expired transitional record must be reported protected (DEC-5), "
        f"got {report['protected']}")


# -- every entry point applies the field rules (XEXT-4) ----------------------------------------


def ingest_rejects(
    engine: EngineSession, clock: KitClock, body: str, bad: dict[str, Any], rule: str
) -> None:
    """``ingest`` lists a record breaking ``rule`` (its fields ``bad``) as rejected, class
    ``record``, also when its id is stored, writes nothing for it and admits the others."""
    stored = build.record("fact", f"{body}, as stored", created_at=clock.now())
    engine.call("put", record=stored)
    fresh = build.record("fact", f"{body}, as proposed", created_at=clock.now(), extra=bad)
    good = build.record("fact", f"{body}, well formed", created_at=clock.now())
    before = engine.snapshot()
    proposals = [build.proposal("create", r) for r in (fresh, good, {**stored, **bad})]
    result = engine.call("ingest", proposals=proposals, now=clock.advance(seconds=1))
    got = [(r.get("index"), r.get("code")) for r in result["rejected"]]
    assert got == [(0, "record"), (2, "record")], (
        f"XEXT-4: ingest must reject proposals 0 and 2 (malformed {sorted(bad)}, {rule}) with "
        f"class record, the stored id included, but rejected {got}")
    assert result["accepted"] == [good["id"]] and result["deduped"] == [], (
        f"XEXT-4: ingest accepted {result['accepted']} and deduplicated {result['deduped']}; "
        "only the well-formed record should be accepted")
    after = engine.snapshot()
    if before is not None and after is not None:
        kept = {"records": [r for r in after["records"] if r["id"] != good["id"]],
                "versions": {k: v for k, v in after["versions"].items() if k != good["id"]}}
        assert kept == before, "XEXT-4: a rejected ingest proposal changed the store"


def load_rejects(
    engine: EngineSession, clock: KitClock, body: str, bad: dict[str, Any], rule: str
) -> None:
    """``load`` rejects a file holding a record breaking ``rule`` with class ``file``."""
    good = build.record("fact", f"{body}, well formed", created_at=clock.now())
    broken = build.record("fact", f"{body}, as loaded", created_at=clock.now(), extra=bad)
    memory_file = build.memory_file([good, broken], created_at=clock.advance(seconds=1))
    before = engine.snapshot()
    engine.reject("load", "file", file=memory_file, verify=False)
    assert engine.snapshot() == before, (
        f"XEXT-4: a rejected load of a file breaking {rule} wrote records")


@pytest.mark.requirement("XEXT-4", "XEXP-1")
@pytest.mark.profile("write")
def test_ingest_applies_the_expiry_rule(engine: EngineSession, clock: KitClock) -> None:
    ingest_rejects(engine, clock, "the badge reader is at the side door",
                   {"x_expires_at": "2026-03-01T00:00:00Z"}, "XEXP-1")


@pytest.mark.requirement("XEXT-4", "XEXP-1")
@pytest.mark.profile("files")
def test_load_applies_the_expiry_rule(engine: EngineSession, clock: KitClock) -> None:
    load_rejects(engine, clock, "the badge reader is at the side door",
                 {"x_expires_at": "next week"}, "XEXP-1")
