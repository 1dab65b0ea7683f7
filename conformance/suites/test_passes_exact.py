"""The background passes on the cases friendly data never reaches.

Every version a pass writes is stamped with the pass's ``now`` (LC-5, judged as CONS-15
and DEC-1 so that each profile's own operations judge it); the flag
sweep visits superseded rules too (CONS-11); slot values are compared as
canonical JSON, so ``1`` and ``true`` disagree (CONS-13); exact-dedup ties on
confidence fall to the earliest ``created_at``, then the smallest id (CONS-5);
a tombstone is exactly section 17's table, extension fields left out (RED-9).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from memspec import canonical_json
from memspec._record import birth_digest
from memspec.conformance import _builders as build
from memspec.conformance._clock import KitClock
from memspec.conformance._driver import Driver
from memspec.conformance._machines import attempt, fresh_id, snapshot
from memspec.conformance._session import EngineSession
from memspec.data import tombstone as tombstone_shape

STRICT = {"near_dup_threshold": "0.95", "promotion_threshold": 3}


@pytest.fixture
def driver(driver: Driver) -> Driver:
    """The kit's driver, with this suite's provenance refs (seed-1, seed-2, ...); each record
    is born 61 seconds after the one before (distinct birth times)."""
    return driver.configured(ref_prefix="seed", birth_step=61)


def _written_since(before: dict[str, Any], engine: EngineSession) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for rid, versions in snapshot(engine).items():
        out += [json.loads(v) for v in versions[len(before.get(rid, ())):]]
    return out


def _seed_every_sub_pass(driver: Driver) -> None:
    driver.put("The backup job runs at two.", confidence="0.9000")
    driver.put("The backup job runs at two.", confidence="0.7000")
    driver.put("The deploy script lives in the tools folder.")
    driver.put("The deploy script lives in the tools folder!")
    driver.put("The build cache lives on the fast disk.", slots={"cache disk": "fast"})
    driver.put("Cache files go to the archive volume.", slots={"cache disk": "archive"})
    for body in ("Standup overran because of the outage review.",
                 "Standup was cut short by a fire drill.",
                 "Standup moved to the big room on Thursday."):
        driver.put(body, "episode", tags=["standup"])
    dead = driver.put("The old VPN client needed a restart.")
    driver.put_version(dead, state="archived", state_reason="client retired")
    driver.put("Restart the VPN client whenever it hangs.", "rule", evidence=[dead["id"]])


# -- CONS-15, DEC-1: the pass's now (LC-5), on every version it writes ------------------


@pytest.mark.requirement("CONS-15")
def test_consolidation_stamps_every_write_with_its_now(driver: Driver, engine: EngineSession,
                                                       clock: KitClock) -> None:
    _seed_every_sub_pass(driver)
    before = snapshot(engine)
    now = clock.advance(days=3, hours=5, ms=123)
    engine.call("consolidate", now=now, config={"near_dup_threshold": "0.6",
                                                "promotion_threshold": 3})
    written = _written_since(before, engine)
    assert written, "CONS-15: kit data: the pass wrote nothing"
    for version in written:
        born = [version["created_at"]] if version["updated_at"] == version["created_at"] else []
        assert version["updated_at"] == now and all(b == now for b in born), (
            f"CONS-15: consolidation at {now} wrote a version of {version['id']} "
            f"({version['state']}) with updated_at {version['updated_at']}; every change is "
            "stamped with the operation's now (LC-5), never a clock of the engine's own"
        )


@pytest.mark.requirement("DEC-1")
def test_decay_stamps_every_archival_with_its_now(driver: Driver, engine: EngineSession,
                                                  clock: KitClock) -> None:
    for i in range(3):
        driver.put(f"the lobby plant number {i} was watered", confidence="0.1000")
    before = snapshot(engine)
    now = clock.advance(days=400, hours=7, ms=321)
    report = engine.call("decay", now=now)
    written = _written_since(before, engine)
    assert report["archived"] and written, "DEC-1: kit data: decay archived nothing"
    for version in written:
        assert version["updated_at"] == now, (
            f"DEC-1: decay at {now} archived {version['id']} with updated_at "
            f"{version['updated_at']}; the archival is a lifecycle change stamped with the "
            "operation's now (LC-5)"
        )


# -- CONS-11: every rule that is not archived ------------------------------------------


@pytest.mark.requirement("CONS-11")
def test_the_sweep_flags_superseded_rules_too(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    dead = driver.put("The old badge reader needed a reboot.")
    driver.put_version(dead, state="archived", state_reason="reader replaced")
    live = driver.put("The new badge reader is at the side door.")
    old_rule = driver.put("Reboot the badge reader when it beeps twice.", "rule",
                          evidence=[dead["id"]])
    new_rule = driver.put("Use the side door reader when the front one fails.", "rule",
                          evidence=[live["id"]], supersedes=old_rule["id"])
    driver.put_version(old_rule, state="superseded", superseded_by=new_rule["id"],
                       state_reason="procedure changed")
    gone_rule = driver.put("Badge in twice on Fridays.", "rule", evidence=[fresh_id("gone")])
    driver.put_version(gone_rule, state="archived", state_reason="policy dropped")
    gone_before = engine.call("history", id=gone_rule["id"])["records"]
    engine.call("consolidate", now=clock.advance(days=1), config=STRICT)
    swept = driver.get(old_rule["id"])
    assert swept["flagged"] is True and isinstance(swept["flag_reason"], str) \
        and swept["flag_reason"].strip(), (
            f"CONS-11: the superseded rule {old_rule['id']}, whose only evidence is archived, "
            f"was not flagged by the sweep (flagged={swept['flagged']!r}); the sweep covers "
            "every rule that is not archived, superseded ones included"
        )
    assert swept["state"] == "superseded", (
        f"CONS-11: flagging moved the superseded rule to {swept['state']}"
    )
    assert driver.get(new_rule["id"])["flagged"] is False, (
        "CONS-11: the successor rule with live evidence was flagged"
    )
    assert engine.call("history", id=gone_rule["id"])["records"] == gone_before, (
        "CONS-11: the sweep wrote a version of an archived rule"
    )


# -- CONS-13: canonical JSON comparison ----------------------------------------------------


@pytest.mark.requirement("CONS-13")
def test_slot_values_are_compared_as_canonical_json(driver: Driver, engine: EngineSession,
                                                    clock: KitClock) -> None:
    pairs = [
        (driver.put("Failed uploads are retried.", slots={"retry": 1}),
         driver.put("Upload failures get another attempt.", slots={"retry": True})),
        (driver.put("The cache is warmed at boot.", "procedure", slots={"warm": 0}),
         driver.put("Warming happens on startup.", "procedure", slots={"warm": False})),
        (driver.put("The port of the metrics server is fixed.", slots={"port": "9090"}),
         driver.put("Metrics are served on a well-known port.", slots={"port": 9090})),
        (driver.put("Alerts go to two channels.", slots={"alerts": {"to": ["a", "b"]}}),
         driver.put("Alerting fans out to the team.", slots={"alerts": {"to": ["b", "a"]}})),
    ]
    same = (driver.put("The audit log is kept.", slots={"audit": {"keep": True, "days": 30}}),
            driver.put("Audit entries are retained.", slots={"audit": {"days": 30,
                                                                       "keep": True}}))
    engine.call("consolidate", now=clock.advance(days=1), config=STRICT)
    for a, b in pairs:
        left, right = driver.get(a["id"]), driver.get(b["id"])
        assert left["state"] == right["state"] == "transitional" \
            and left["transition"] == right["transition"], (
                f"CONS-13: slots {a['slots']} and {b['slots']} differ as canonical JSON "
                f"but the pair was not put into one transition (states {left['state']}, "
                f"{right['state']}); a host language's equality (1 == true) is not the test"
            )
    for record in same:
        assert driver.get(record["id"])["state"] == "active", (
            f"CONS-13: slots {same[0]['slots']} and {same[1]['slots']} are equal as canonical "
            "JSON (member order does not count) but were treated as a contradiction"
        )


# -- CONS-5: ties on confidence ----------------------------------------------------------


@pytest.mark.requirement("CONS-5")
def test_dedup_ties_fall_to_the_earliest_birth_then_the_smallest_id(
        driver: Driver, engine: EngineSession, clock: KitClock) -> None:
    body, slots = "The lab door code changes monthly.", {"door": "lab"}
    late = driver.new(body, slots=slots, confidence="0.8000")
    early_at = clock.at(-5)
    twins = [build.record("fact", body, slots=slots, confidence="0.8000", created_at=early_at,
                          provenance={"kind": "observation", "ref": f"twin-{i}", "agent": None})
             for i in range(4)]
    weaker = driver.new(body, slots=slots, confidence="0.6000")
    for record in (late, *twins, weaker):
        engine.call("put", record=record)
    report = engine.call("consolidate", now=clock.advance(days=1), config=STRICT)
    keeper = min(twins, key=lambda r: r["id"])
    assert driver.get(keeper["id"])["state"] == "active", (
        f"CONS-5: of copies tied on confidence 0.8000 the keeper is the earliest created_at, "
        f"then the smallest id ({keeper['id']}); it is "
        f"{driver.get(keeper['id'])['state']}"
    )
    others = sorted((r for r in (late, *twins, weaker) if r is not keeper),
                    key=lambda r: (-float(r["confidence"]), r["created_at"], r["id"]))
    for record in others:
        now = driver.get(record["id"])
        assert now["state"] == "superseded" and now["superseded_by"] == keeper["id"], (
            f"CONS-5: copy {record['id']} is {now['state']} (superseded_by "
            f"{now['superseded_by']}), expected superseded by the keeper {keeper['id']}"
        )
    actions = [a["record_ids"] for a in report["actions"] if a["pass"] == "exact-dedup"]
    assert actions == [[r["id"], keeper["id"]] for r in others], (
        f"CONS-5: exact dedup should report one supersede per copy in keeper order "
        f"(confidence, then created_at, then id), each [copy, keeper]: {actions}"
    )


# -- RED-9: the tombstone is exactly the table -------------------------------------------


@pytest.mark.requirement("RED-9")
def test_the_tombstone_is_exactly_the_table(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    anchor = driver.put("The incident channel is #ops-bridge.")
    secret = driver.put("The root password is hunter2.", slots={"password": "hunter2"},
                        tags=["secret"], evidence=[anchor["id"]],
                        extra={"x_note": "hunter2 again", "x_meta": {"source": "chat"}})
    latest = driver.put_version(secret, tags=["secret", "checked"], confidence="0.5000")
    now = clock.advance(days=2, ms=7)
    reason = "a password was remembered by mistake"
    tombstone = engine.call("redact", id=secret["id"], reason=reason, now=now)["record"]
    expected = {
        "id": secret["id"], "type": "fact", **tombstone_shape().fixed_values(),
        "created_at": secret["created_at"], "updated_at": now,
        "evidence": latest["evidence"], "supersedes": None, "superseded_by": None,
        "transition": None, "state_reason": reason, "flagged": False,
        "flag_reason": None, "redacted": True,
        "redaction_reason": reason, "birth_digest": birth_digest(secret),
    }
    for shown in (tombstone, *engine.call("history", id=secret["id"])["records"]):
        kept = sorted(set(shown) - set(expected))
        assert not kept, (
            f"RED-9: the tombstone of {secret['id']} keeps the fields {kept}; a tombstone has "
            "no extension fields, since they may carry the destroyed content"
        )
        assert canonical_json(shown) == canonical_json(expected), (
            f"RED-9: the tombstone differs from section 17's table: "
            f"{ {k: shown.get(k) for k in expected if shown.get(k) != expected[k]} }"
        )


# -- DEC-8, CONS-16: configurations out of range ------------------------------------------


@pytest.mark.requirement("DEC-8")
def test_decay_refuses_a_configuration_out_of_range(driver: Driver, engine: EngineSession,
                                                    clock: KitClock) -> None:
    driver.put("the meeting notes are in the shared drive", confidence="0.0100")
    good = {"half_life_days": 30, "reinforcement_bonus": 0.25, "archive_threshold": 0.05}
    bad: list[tuple[str, dict[str, Any]]] = [
        ("half_life_days 0", {**good, "half_life_days": 0}),
        ("a negative half_life_days", {**good, "half_life_days": -30}),
        ("a negative reinforcement_bonus", {**good, "reinforcement_bonus": -0.25}),
        ("a negative archive_threshold", {**good, "archive_threshold": -0.01}),
        ("a boolean half_life_days", {**good, "half_life_days": True}),
        ("a string archive_threshold", {**good, "archive_threshold": "0.05"}),
        ("an unknown member", {**good, "x_half_life_hours": 3}),
    ]
    before = snapshot(engine)
    for what, config in bad:
        _, error = attempt(engine, "decay", now=clock.at(400), config=config)
        assert error is not None and error.code == "limit", (
            f"DEC-8: decay with {what} ({config}) answered "
            f"{error.code if error else 'a report'}, expected class limit"
        )
    assert snapshot(engine) == before, "DEC-8: a refused decay configuration archived records"
    for config in ({**good, "reinforcement_bonus": 0, "archive_threshold": 0},
                   {**good, "archive_threshold": 1.5, "half_life_days": 0.5}):
        _, error = attempt(engine, "decay", now=clock.at(1), config=config)
        assert error is None, f"DEC-8: decay refused the valid configuration {config}: {error}"


@pytest.mark.requirement("CONS-16")
def test_consolidation_refuses_a_configuration_out_of_range(driver: Driver, engine: EngineSession,
                                                            clock: KitClock) -> None:
    driver.put("The backup job runs at two.")
    driver.put("The backup job runs at two.")
    bad: list[tuple[str, dict[str, Any]]] = [
        ("a threshold above 1", {"near_dup_threshold": "1.5", "promotion_threshold": 3}),
        ("a negative threshold", {"near_dup_threshold": "-0.1", "promotion_threshold": 3}),
        ("promotion_threshold 0", {"near_dup_threshold": "0.6", "promotion_threshold": 0}),
        ("a boolean promotion_threshold", {"near_dup_threshold": "0.6",
                                           "promotion_threshold": True}),
        ("a fractional promotion_threshold", {"near_dup_threshold": "0.6",
                                              "promotion_threshold": 2.5}),
        ("an unknown member", {"near_dup_threshold": "0.6", "promotion_threshold": 3,
                               "x_memspec_never_defined": 1}),
    ]
    before = snapshot(engine)
    for what, config in bad:
        _, error = attempt(engine, "consolidate", now=clock.advance(days=1), config=config)
        assert error is not None and error.code == "limit", (
            f"CONS-16: consolidate with {what} ({config}) answered "
            f"{error.code if error else 'a report'}, expected class limit"
        )
    assert snapshot(engine) == before, "CONS-16: a refused configuration wrote records"
