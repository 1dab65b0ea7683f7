"""Redaction: every version becomes the tombstone; existence, history length and links survive."""

from __future__ import annotations

from typing import Any

import pytest

from memspec import (
    REDACTED_BODY,
    birth_digest,
    canonical_json,
    sign_record,
)
from memspec.conformance import _builders as build
from memspec.conformance._builders import Keys
from memspec.conformance._driver import Driver
from memspec.conformance._machines import (
    attempt,
    describe_change,
    expect_rejected,
    fresh_id,
    snapshot,
)
from memspec.conformance._outcomes import RequirementFailed
from memspec.conformance._session import EngineSession
from memspec.data import tombstone as tombstone_shape

SECRET = "the door code is 4711 and the alarm PIN is zebraquokka"


@pytest.fixture
def driver(driver: Driver) -> Driver:
    """The kit's driver; this suite's records come from conversations (chat-1, chat-2, ...)."""
    return driver.configured(ref_prefix="chat", provenance_kind="conversation")


def _seed(driver: Driver, keys: Keys) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A signed, tagged, slotted rule with evidence and links, in three versions."""
    evidence = driver.new("the office has a keypad")
    older = driver.new("the door code was 1234")
    driver.engine.call("put", record=evidence)
    driver.engine.call("put", record=older)
    born = sign_record(driver.new(SECRET, "rule", slots={"code": "4711"}, tags=["access"],
                                  evidence=[evidence["id"]], supersedes=older["id"],
                                  occurred_at=driver.clock.now()), keys.a)
    v2 = build.evolve(born, driver.clock.advance(seconds=1), tags=["access", "office"])
    v3 = build.evolve(v2, driver.clock.advance(seconds=1), state="superseded",
                      superseded_by=fresh_id("newer-code"), state_reason="code changed")
    for version in (born, v2, v3):
        driver.engine.call("put", record=version)
    return born, [born, v2, v3]


@pytest.mark.requirement("RED-1")
def test_every_version_becomes_the_tombstone(
    driver: Driver, engine: EngineSession, keys: Keys
) -> None:
    born, versions = _seed(driver, keys)
    bystander_before = snapshot(engine)
    tombstone = driver.redact(born["id"])
    history = engine.call("history", id=born["id"])["records"]
    assert len(history) == len(versions), (
        f"RED-1: redaction changed the version count from {len(versions)} to {len(history)}"
    )
    for i, version in enumerate(history):
        assert canonical_json(version) == canonical_json(tombstone), (
            f"RED-1: version {i + 1} of {born['id']} is not the tombstone (body "
            f"{version.get('body')!r})"
        )
    latest = engine.call("get", id=born["id"])["record"]
    assert canonical_json(latest) == canonical_json(tombstone), "RED-1: get is not the tombstone"
    after = snapshot(engine)
    for rid, stored in bystander_before.items():
        if rid != born["id"]:
            assert after[rid] == stored, f"RED-1: redaction changed another record {rid}"
    again = driver.redact(born["id"], "redacted twice")
    assert canonical_json(again) == canonical_json(tombstone) and snapshot(engine) == after, (
        "RED-1: redacting a record that is already a tombstone changed it; it returns the "
        "tombstone as it is"
    )


@pytest.mark.requirement("RED-2")
def test_tombstone_keeps_identity_and_links(driver: Driver, keys: Keys) -> None:
    born, versions = _seed(driver, keys)
    tombstone = driver.redact(born["id"])
    latest = versions[-1]
    for field in ("id", "type", "created_at", "evidence", "supersedes", "superseded_by"):
        assert tombstone.get(field) == latest[field], (
            f"RED-2: the tombstone's {field} is {tombstone.get(field)!r}, the record had "
            f"{latest[field]!r} (ids are not content; the link graph must not dangle)"
        )


@pytest.mark.requirement("RED-3", "RED-4", "RED-5")
@pytest.mark.profile("redaction")
def test_tombstone_destroys_content_and_explains_the_id(driver: Driver, engine: EngineSession,
                                                        keys: Keys) -> None:
    born, _ = _seed(driver, keys)
    reason = "personal data remembered by mistake"
    now = driver.clock.advance(seconds=1)
    tombstone = engine.call("redact", id=born["id"], reason=reason, now=now)["record"]
    expected: dict[str, Any] = tombstone_shape().fixed_values()
    for field, value in expected.items():
        if tombstone.get(field) != value:
            raise RequirementFailed(
                "RED-3", f"the tombstone's {field} is {tombstone.get(field)!r}, expected {value!r}")
    for field in tombstone_shape().absent:
        if field in tombstone:
            raise RequirementFailed("RED-3", f"the tombstone still carries {field}")
    if tombstone.get("redacted") is not True:
        raise RequirementFailed("RED-4", "the tombstone lacks redacted: true")
    if tombstone.get("redaction_reason") != reason:
        raise RequirementFailed(
            "RED-4",
            f"redaction_reason is {tombstone.get('redaction_reason')!r}, not the reason given")
    if tombstone.get("birth_digest") != birth_digest(born):
        raise RequirementFailed(
            "RED-4", "birth_digest is not the sha256 of the original birth content")
    if tombstone["id"] != "mem:" + tombstone["birth_digest"][:32]:
        raise RequirementFailed("RED-5", "the tombstone's id is not the prefix of its birth_digest")
    # The whole tombstone, every field against section 17's table, is RED-9's
    # (test_the_tombstone_is_exactly_the_table), and a field off the record rules is the
    # result schema's finding on that field's requirement: here only RED-3 to RED-5 are
    # judged, so a tombstone wrong elsewhere leaves them judged, not inconclusive.
    text = canonical_json(tombstone).decode()
    for fragment in ("4711", "zebraquokka", "chat-"):
        if fragment in text:
            raise RequirementFailed("RED-3", f"the tombstone still contains {fragment!r}")


@pytest.mark.requirement("RED-4")
@pytest.mark.profile("redaction")
def test_redaction_needs_a_reason(driver: Driver, engine: EngineSession, keys: Keys) -> None:
    born, _ = _seed(driver, keys)
    for reason in ("", "   "):
        expect_rejected(engine, "redact", "record", "RED-4",
                        f"a redaction with reason {reason!r}", id=born["id"], reason=reason,
                        now=driver.clock.advance(seconds=1))
    expect_rejected(engine, "redact", "not-found", "RED-4", "a redaction of an unknown id",
                    id=fresh_id("never-stored"), reason="x", now=driver.clock.advance(seconds=1))



@pytest.mark.requirement("RED-6")
def test_the_store_port_cannot_redact(driver: Driver, engine: EngineSession, keys: Keys) -> None:
    born, versions = _seed(driver, keys)
    fake = {**versions[-1], "body": REDACTED_BODY, "slots": {}, "tags": [], "state": "archived",
            "provenance": {"kind": "redaction", "ref": None, "agent": None},
            "confidence": "0.0000", "signed_by": None, "signature": "", "transition": None,
            "flagged": False, "flag_reason": None, "redacted": True,
            "redaction_reason": "through put", "birth_digest": birth_digest(born)}
    fake.pop("occurred_at", None)
    _, error = attempt(engine, "put", record=fake)
    accepted = error is None
    history = engine.call("history", id=born["id"])["records"]
    assert len(history) == len(versions) + accepted, (
        f"RED-6: put of a tombstone-shaped version left {len(history)} versions; the store port "
        "only ever appends"
    )
    assert canonical_json(history[0]) == canonical_json(born), (
        "RED-6: a put through the store port destroyed earlier versions; redaction must not be "
        "part of the RecordStore port"
    )


@pytest.mark.requirement("RED-6")
def test_no_proposal_reaches_redaction(driver: Driver, engine: EngineSession, keys: Keys) -> None:
    born, versions = _seed(driver, keys)
    tomb_like = {**versions[0], "body": REDACTED_BODY, "redacted": True,
                 "redaction_reason": "by proposal", "birth_digest": birth_digest(born)}
    now = driver.clock.advance(seconds=1)
    for kind in ("redact", "redaction", "delete", "tombstone"):
        expect_rejected(engine, "apply_proposal", "proposal", "RED-6",
                        f"a {kind!r} proposal", proposal=build.proposal(
                            kind, target_id=born["id"], reason="destroy it"), now=now)
    before = snapshot(engine)
    attempt(engine, "apply_proposal", proposal=build.proposal("create", tomb_like), now=now)
    after = snapshot(engine)
    if after[born["id"]] != before[born["id"]]:
        raise RequirementFailed(
            "RED-6", f"a proposal changed the stored versions of {born['id']}: "
            f"{describe_change(before, after)}")


@pytest.mark.requirement("RED-7")
@pytest.mark.profile("search")
def test_redacted_content_leaves_the_search_index(
    driver: Driver, engine: EngineSession, keys: Keys
) -> None:
    born, _ = _seed(driver, keys)
    found = [c["id"] for c in engine.call("search", query="zebraquokka", k=10)["candidates"]]
    assert born["id"] in found, "RED-7: the secret was not findable before redaction (setup)"
    driver.redact(born["id"])
    for query in ("zebraquokka", "door code 4711", "alarm PIN", "access"):
        hits = {c["id"]: c["score"] for c in engine.call("search", query=query,
                                                         k=10)["candidates"]}
        assert born["id"] not in hits or hits[born["id"]] <= 0, (
            f"RED-7: after redaction search({query!r}) still finds {born['id']} "
            f"(score {hits.get(born['id'])}); redacted content must leave every index"
        )


@pytest.mark.requirement("RED-8")
def test_rule_with_redacted_evidence_is_flagged(driver: Driver, engine: EngineSession) -> None:
    evidence = driver.new("the visitor badge number is 5521")
    rule = driver.new("visitors always get a numbered badge", "rule", evidence=[evidence["id"]])
    engine.call("put", record=evidence)
    engine.call("put", record=rule)
    driver.redact(evidence["id"])
    engine.call("consolidate", now=driver.clock.advance(days=1),
                config={"near_dup_threshold": "0.95", "promotion_threshold": 3})
    swept = engine.call("get", id=rule["id"])["record"]
    if swept["flagged"] is not True:
        raise RequirementFailed(
            "RED-8", "a rule whose only evidence was redacted was not flagged by the sweep")


@pytest.mark.requirement("LC-3")
@pytest.mark.profile("redaction")
def test_a_tombstone_is_archived_with_the_redaction_reason(driver: Driver, engine: EngineSession,
                                                           keys: Keys) -> None:
    """A tombstone is an archived record, so it carries a reason: the redaction's."""
    born, _ = _seed(driver, keys)
    reason = "the door code was remembered by mistake"
    shown = {"redact": driver.redact(born["id"], reason),
             "get": engine.call("get", id=born["id"])["record"]}
    for i, version in enumerate(engine.call("history", id=born["id"])["records"]):
        shown[f"history version {i}"] = version
    for where, tombstone in shown.items():
        if tombstone.get("state") == "archived" and tombstone.get("state_reason") != reason:
            raise RequirementFailed(
                "LC-3", f"the tombstone ({where}) is archived with state_reason "
                        f"{tombstone.get('state_reason')!r}, not the redaction reason {reason!r}")
