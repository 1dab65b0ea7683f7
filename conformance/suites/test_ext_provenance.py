"""Extension x-provenance: observation time, derivation depth, unattributable marks and the
observe operation (spec/EXTENSIONS.md section X4)."""

from __future__ import annotations

from typing import Any

import pytest

from memspec.conformance import _builders as build
from memspec.conformance._builders import Keys
from memspec.conformance._clock import KitClock
from memspec.conformance._driver import Driver
from memspec.conformance._machines import snapshot
from memspec.conformance._session import EngineSession
from memspec.conformance.suites.test_ext_expiry import ingest_rejects, load_rejects

SOURCED = {"kind": "observation", "ref": "prov-1", "agent": None}


def _derived(clock: KitClock, body: str, sources: list[str], hops: int = 1,
             **extra: Any) -> dict[str, Any]:
    return build.record("fact", body, created_at=clock.now(), provenance=SOURCED,
                        extra={"x_derivation": {"hops": hops, "from": sources}, **extra})


BAD: dict[str, dict[str, Any]] = {
    "observed-not-a-timestamp": {"x_observed_at": "last week"},
    "observed-before-birth": {"x_observed_at": "2025-06-01T00:00:00.000Z"},
    "observed-after-update": {"x_observed_at": "2027-01-01T00:00:00.000Z"},
    "derivation-not-object": {"x_derivation": 2},
    "derivation-extra-member": {"x_derivation": {"hops": 1, "from": [], "why": "x"}},
    "derivation-negative-hops": {"x_derivation": {"hops": -1, "from": []}},
    "derivation-hops-without-sources": {"x_derivation": {"hops": 2, "from": []}},
    "derivation-sources-without-hops": {
        "x_derivation": {"hops": 0, "from": ["mem:" + "0" * 32]}},
    "derivation-bad-id": {"x_derivation": {"hops": 1, "from": ["memory-7"]}},
}


@pytest.mark.requirement("XPROV-1")
@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_provenance_fields_are_rejected(
    engine: EngineSession, clock: KitClock, case: str
) -> None:
    record = build.record("fact", "the printer is on floor two", created_at=clock.now(),
                          extra=BAD[case])
    engine.reject("put", "record", record=record)
    engine.reject("validate_record", "record", record=record)


@pytest.mark.requirement("XPROV-1")
def test_wellformed_provenance_fields_are_accepted(engine: EngineSession, clock: KitClock) -> None:
    base = build.record("fact", "the printer is on floor two", created_at=clock.now())
    derived = _derived(clock, "the printer is near the kitchen", [base["id"]], hops=2,
                       x_observed_at=clock.now())
    assert engine.call("validate_record", record=derived)["record"] == derived
    engine.call("put", record=derived)
    assert engine.call("get", id=derived["id"])["record"] == derived


@pytest.mark.requirement("XPROV-2")
def test_recall_marks_derived_unobserved_records(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    base = build.record("fact", "the lab door code is 1234", created_at=clock.now(),
                        provenance=SOURCED)
    guess = _derived(clock, "the lab door code is probably still 1234", [base["id"]])
    checked = _derived(clock, "the lab door code was checked as 1234", [base["id"]],
                       x_observed_at=clock.now())
    for record in (base, guess, checked):
        engine.call("put", record=record)
    found = driver.entries("lab door code 1234", now=clock.advance(hours=1))
    assert guess["id"] in found, "XPROV-2: recall left out the derived record"
    assert "unattributable" in found[guess["id"]].get("x_marks", []), (
        f"XPROV-2: a derived, never observed record is marked "
        f"{found[guess['id']].get('x_marks')}, not unattributable")
    for rid in (base["id"], checked["id"]):
        assert "unattributable" not in found.get(rid, {}).get("x_marks", []), (
            f"XPROV-2: {rid} is an observation or was observed, yet is marked unattributable")


@pytest.mark.requirement("XPROV-3", "XPROV-2")
def test_observe_writes_one_neutral_version(
    driver: Driver, engine: EngineSession, clock: KitClock, keys: Keys
) -> None:
    base = build.record("fact", "the server room is cold", created_at=clock.now(),
                        provenance=SOURCED)
    guess = _derived(clock, "the server room needs a jacket", [base["id"]])
    signed = engine.call("sign_record", record=guess, seed_hex=keys.a.seed.hex())["record"]
    engine.call("put", record=base)
    engine.call("put", record=signed)
    before = snapshot(engine)
    now = clock.advance(days=2)
    observed = engine.call("observe", id=guess["id"], now=now)["record"]
    expected = {**signed, "x_observed_at": now, "updated_at": now, "signed_by": None,
                "signature": ""}
    assert observed == expected, (
        f"XPROV-3: observe must change only x_observed_at, updated_at and the signature; "
        f"got {observed}")
    after = snapshot(engine)
    assert after[guess["id"]][:-1] == before[guess["id"]] and (
        len(after[guess["id"]]) == len(before[guess["id"]]) + 1), (
        "XPROV-3: observe must append exactly one version")
    assert engine.call("history", id=guess["id"])["records"][-1] == observed
    assert engine.call("get", id=guess["id"])["record"] == observed
    found = driver.entries("server room jacket", now=clock.advance(hours=1))
    assert guess["id"] in found, "XPROV-3: the observed version is not found by recall"
    assert "unattributable" not in found[guess["id"]].get("x_marks", []), (
        "XPROV-2: an observed record is still marked unattributable")


@pytest.mark.requirement("XPROV-3")
def test_observe_keeps_a_transitional_state(engine: EngineSession, clock: KitClock) -> None:
    a = build.record("fact", "the gate opens at six", created_at=clock.now(), provenance=SOURCED)
    b = build.record("fact", "the gate opens at seven", created_at=clock.now(),
                     provenance=SOURCED)
    engine.call("put", record=a)
    engine.call("put", record=b)
    engine.call("apply_proposal", now=clock.advance(seconds=1), proposal=build.proposal(
        "transition", target_id=a["id"], other_id=b["id"], reason="two answers"))
    current = engine.call("get", id=a["id"])["record"]
    now = clock.advance(seconds=1)
    observed = engine.call("observe", id=a["id"], now=now)["record"]
    assert observed == {**current, "x_observed_at": now, "updated_at": now}, (
        "XPROV-3: observe changed the state or transition of a transitional record")


@pytest.mark.requirement("XPROV-4")
def test_observe_rejections_write_nothing(engine: EngineSession, clock: KitClock) -> None:
    live = build.record("fact", "the cafe opens at eight", created_at=clock.now(),
                        provenance=SOURCED)
    gone = build.record("fact", "the cafe opened at seven", created_at=clock.now(),
                        provenance=SOURCED)
    engine.call("put", record=live)
    engine.call("put", record=gone)
    engine.call("apply_proposal", now=clock.advance(seconds=1), proposal=build.proposal(
        "archive", target_id=gone["id"], reason="closed"))
    before = snapshot(engine)
    engine.reject("observe", "not-found", id="mem:" + "ab" * 16, now=clock.advance(seconds=1))
    engine.reject("observe", "lifecycle", id=gone["id"], now=clock.advance(seconds=1))
    engine.reject("observe", "lifecycle", id=live["id"], now="2025-01-01T00:00:00.000Z")
    assert snapshot(engine) == before, "XPROV-4: a rejected observe wrote something"


@pytest.mark.requirement("XEXT-4", "XPROV-1")
@pytest.mark.profile("write")
@pytest.mark.parametrize("case", ["derivation-hops-without-sources", "observed-before-birth"])
def test_ingest_applies_the_provenance_rules(
    engine: EngineSession, clock: KitClock, case: str
) -> None:
    ingest_rejects(engine, clock, "the printer is on floor two", BAD[case], "XPROV-1")


@pytest.mark.requirement("XEXT-4", "XPROV-1")
@pytest.mark.profile("files")
def test_load_applies_the_provenance_rules(engine: EngineSession, clock: KitClock) -> None:
    load_rejects(engine, clock, "the printer is on floor two",
                 BAD["derivation-negative-hops"], "XPROV-1")
