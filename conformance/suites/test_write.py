"""The write stage (ingest), with the kit playing the extractor."""

from __future__ import annotations

from typing import Any

import pytest

from memspec import canonical_json, sign_record
from memspec.conformance import _builders as build
from memspec.conformance._builders import Keys
from memspec.conformance._clock import KitClock
from memspec.conformance._driver import Driver
from memspec.conformance._machines import attempt, describe_change, fresh_id, snapshot
from memspec.conformance._session import EngineSession


@pytest.fixture
def driver(driver: Driver) -> Driver:
    """The kit's driver; this suite's records come from conversation turns (turn-1, ...)."""
    return driver.configured(ref_prefix="turn", provenance_kind="conversation")


def _creates(*records: dict[str, Any]) -> list[dict[str, Any]]:
    """A create proposal for each record, in order."""
    return [build.proposal("create", r) for r in records]


def _rejected_indexes(report: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {r["index"]: r for r in report["rejected"]}


@pytest.mark.requirement("WR-1")
def test_only_create_proposals_are_admitted(driver: Driver, engine: EngineSession) -> None:
    a = driver.new("the staging database is Postgres")
    b = driver.new("the staging database is MySQL")
    driver.ingest(_creates(a, b))
    successor = driver.new("the staging database is Postgres 16", supersedes=a["id"])
    lifecycle = [
        build.proposal("supersede", successor, target_id=a["id"], reason="more precise"),
        build.proposal("transition", target_id=a["id"], other_id=b["id"], reason="conflict"),
        build.proposal("archive", target_id=b["id"], reason="stale"),
    ]
    before = snapshot(engine)
    report = driver.ingest(lifecycle)
    rejected = _rejected_indexes(report)
    assert sorted(rejected) == [0, 1, 2], (
        f"WR-1: the write stage did not reject every lifecycle proposal (rejected indexes "
        f"{sorted(rejected)}, accepted {report['accepted']})"
    )
    assert not report["accepted"] and not report["deduped"], (
        f"WR-1: lifecycle proposals were reported accepted or deduplicated: {report}"
    )
    codes = sorted({r["code"] for r in rejected.values()})
    assert codes == ["proposal"], f"WR-1: lifecycle proposals were rejected with {codes}, " \
                                  "expected class proposal (outside the stage's authority)"
    change = describe_change(before, snapshot(engine))
    assert not change, f"WR-1: rejected lifecycle proposals still wrote: {change}"


@pytest.mark.requirement("WR-2")
def test_extractors_never_create_rules(driver: Driver, engine: EngineSession) -> None:
    episode = driver.new("we shipped on friday", "episode", occurred_at=driver.clock.now())
    driver.ingest(_creates(episode))
    rule = driver.new("we always ship on fridays", "rule", evidence=[episode["id"]])
    fact = driver.new("the release train leaves weekly")
    report = driver.ingest(_creates(rule, fact))
    rejected = _rejected_indexes(report)
    assert 0 in rejected, (
        f"WR-2: a rule creation from an extractor was not rejected in the report: {report}"
    )
    assert rule["id"] not in report["accepted"], "WR-2: the rule was reported accepted"
    assert isinstance(rejected[0]["message"], str) and rejected[0]["message"].strip(), (
        "WR-2: the rejected rule creation carries no reason"
    )
    assert rejected[0]["code"] == "proposal", (
        f"WR-2: the rule creation was rejected with class {rejected[0]['code']!r}, not proposal"
    )
    _, error = _get(engine, rule["id"])
    assert error == "not-found", "WR-2: the rejected rule was written to the store"
    assert report["accepted"] == [fact["id"]], (
        f"WR-2: the valid fact next to the rule was not accepted: {report}"
    )


def _get(engine: EngineSession, rid: str) -> tuple[dict[str, Any] | None, str | None]:
    result, error = attempt(engine, "get", id=rid)
    return (None, error.code) if error is not None else (result, None)


@pytest.mark.requirement("WR-3")
def test_extracted_records_are_born_active_and_unlinked(
    driver: Driver, engine: EngineSession
) -> None:
    anchor = driver.new("the boiler was serviced in march")
    other = driver.new("the boiler is in the basement")
    driver.ingest(_creates(anchor, other))
    t = driver.new("the boiler is electric")
    unborn: dict[str, dict[str, Any]] = {
        "supersedes set": driver.new("the boiler was serviced in april",
                                     supersedes=anchor["id"]),
        "superseded state": {**driver.new("the boiler is gas-fired"), "state": "superseded",
                             "superseded_by": anchor["id"], "state_reason": "replaced"},
        "archived state": {**driver.new("the boiler is old"), "state": "archived",
                           "state_reason": "stale"},
        "a transition block": {**t, "state": "transitional", "transition":
                               build.transition_block(t["id"], other["id"], "conflict")},
        "flagged": {**driver.new("the boiler needs a check"), "flagged": True,
                    "flag_reason": "no evidence"},
    }
    before = snapshot(engine)
    names = list(unborn)
    report = driver.ingest(_creates(*unborn.values()))
    rejected = _rejected_indexes(report)
    for index, name in enumerate(names):
        assert index in rejected, (
            f"WR-3: an extracted record with {name} was admitted; extracted records are born "
            f"active, without lifecycle links, unflagged (report {report})"
        )
        code = "record" if name == "flagged" else "proposal"
        assert rejected[index]["code"] == code, (
            f"WR-3: the record with {name} was rejected with class {rejected[index]['code']!r}, "
            f"not {code}"
        )
    change = describe_change(before, snapshot(engine))
    assert not change, f"WR-3: rejected records were written: {change}"
    good = driver.new("the boiler pressure should be 1.5 bar", tags=["boiler"])
    report = driver.ingest(_creates(good))
    assert report["accepted"] == [good["id"]], f"WR-3: a valid new record was not accepted: " \
                                                f"{report}"
    stored = engine.call("history", id=good["id"])["records"]
    assert len(stored) == 1 and canonical_json(stored[0]) == canonical_json(good), (
        "WR-3: the accepted record was not stored exactly as proposed (born active, one version)"
    )


@pytest.mark.requirement("WR-4")
def test_known_ids_are_reinforced_not_rewritten(driver: Driver, engine: EngineSession) -> None:
    record = driver.new("the cat is called Miso", tags=["pets"])
    driver.ingest(_creates(record))
    before = snapshot(engine)
    again = {**record, "tags": ["pets", "names"], "confidence": "0.5000"}
    report = driver.ingest(_creates(record, again))
    assert report["deduped"] and set(report["deduped"]) == {record["id"]}, (
        f"WR-4: a proposal of an already stored id was not reported as deduplicated: {report}"
    )
    assert not report["accepted"], f"WR-4: a stored id was reported accepted again: {report}"
    assert not report["rejected"], (
        f"WR-4: a proposal of a stored id was rejected instead of deduplicated: {report}"
    )
    change = describe_change(before, snapshot(engine))
    assert not change, f"WR-4: deduplication re-wrote the stored record: {change}"


@pytest.mark.requirement("WR-5")
def test_report_names_every_proposal_and_rejection_is_total(driver: Driver,
                                                            engine: EngineSession) -> None:
    known = driver.new("the plant needs water on sundays")
    driver.ingest(_creates(known))
    fresh = driver.new("the plant is a monstera")
    bad_id = {**driver.new("the plant is on the sill"), "id": fresh_id("bad-id")}
    float_conf = {**driver.new("the plant is three years old"), "confidence": 0.7}
    proposals: list[Any] = [
        build.proposal("create", fresh),
        build.proposal("create", bad_id),
        build.proposal("create", known),
        build.proposal("create", float_conf),
        build.proposal("archive", target_id=known["id"], reason="stale"),
        {"kind": "create"},
        "not a proposal",
    ]
    before = snapshot(engine)
    report = driver.ingest(proposals)
    rejected = _rejected_indexes(report)
    fates = len(report["accepted"]) + len(report["deduped"]) + len(report["rejected"])
    assert fates == len(proposals), (
        f"WR-5: the report accounts for {fates} of {len(proposals)} proposals: {report}"
    )
    assert report["accepted"] == [fresh["id"]], f"WR-5: accepted should be [{fresh['id']}]: " \
                                                f"{report}"
    assert report["deduped"] == [known["id"]], f"WR-5: deduped should be [{known['id']}]: " \
                                               f"{report}"
    assert sorted(rejected) == [1, 3, 4, 5, 6], (
        f"WR-5: the report does not name every rejected proposal by index (got "
        f"{sorted(rejected)}, expected [1, 3, 4, 5, 6])"
    )
    expected_codes = {1: "record", 3: "record", 4: "proposal", 5: "proposal", 6: "proposal"}
    for index, entry in rejected.items():
        assert isinstance(entry["message"], str) and entry["message"].strip(), (
            f"WR-5: rejection of proposal {index} gives no reason"
        )
        assert entry["code"] == expected_codes[index], (
            f"WR-5: rejection of proposal {index} has error class {entry['code']!r}, expected "
            f"{expected_codes[index]!r}"
        )
    after = snapshot(engine)
    assert set(after) == set(before) | {fresh["id"]}, (
        f"WR-5: the store should gain exactly the accepted record: "
        f"{describe_change(before, after)}"
    )
    assert after[known["id"]] == before[known["id"]], (
        "WR-5: a rejected or deduplicated proposal touched the stored record"
    )


@pytest.mark.requirement("WR-4")
def test_a_record_proposed_twice_in_one_call(driver: Driver, engine: EngineSession) -> None:
    record = driver.new("the spare charger is in the top drawer")
    report = driver.ingest(_creates(record, record))
    assert report["accepted"] == [record["id"]] and report["deduped"] == [record["id"]], (
        f"WR-4: a record proposed twice in one call should be accepted once, then deduplicated: "
        f"{report}"
    )
    assert len(engine.call("history", id=record["id"])["records"]) == 1, (
        "WR-4: the second proposal of the same record wrote a second version"
    )


@pytest.mark.requirement("WR-4")
@pytest.mark.profile("decay")
def test_deduplication_reinforces_the_stored_record(driver: Driver, engine: EngineSession,
                                                    clock: KitClock) -> None:
    again = driver.new("the team lunch is on thursdays", confidence="0.5000")
    once = driver.new("the team lunch is on thursdays", confidence="0.5000")
    driver.ingest(_creates(again, once))
    driver.ingest(_creates(again))
    saliences = engine.call("decay", now=clock.advance(days=1))["saliences"]
    assert saliences[again["id"]] > saliences[once["id"]], (
        f"WR-4: a deduplicated proposal did not reinforce the stored record (salience "
        f"{saliences[again['id']]} vs {saliences[once['id']]} for an otherwise-equal record)"
    )


@pytest.mark.requirement("WR-3")
def test_extracted_records_have_the_newborn_shape(
    driver: Driver, engine: EngineSession, clock: KitClock,
    keys: Keys) -> None:
    aged = driver.new("the boiler was bled in october")
    aged = {**aged, "updated_at": clock.advance(seconds=1)}
    signed = sign_record(driver.new("the boiler manual is in the drawer"), keys.a)
    resigned_aged = sign_record({**driver.new("the boiler is twelve years old"),
                                 "updated_at": clock.advance(days=2)}, keys.a)
    good = driver.new("the boiler is serviced every autumn")
    before = snapshot(engine)
    report = driver.ingest(_creates(aged, signed, resigned_aged, good))
    rejected = _rejected_indexes(report)
    for index, what in ((0, "updated_at later than created_at"), (1, "a signature"),
                        (2, "a signature and a later updated_at")):
        assert index in rejected, (
            f"WR-3: an extracted record with {what} was admitted; a record the write stage "
            f"admits is newborn (REC-14: updated_at equal to created_at, unsigned): {report}"
        )
        assert rejected[index]["code"] == "proposal", (
            f"WR-3: the record with {what} was rejected with class "
            f"{rejected[index]['code']!r}, not proposal (a record that is not newborn)"
        )
    assert report["accepted"] == [good["id"]], f"WR-3: the newborn record was not accepted: " \
                                                f"{report}"
    change = describe_change(before, snapshot(engine))
    assert set(snapshot(engine)) - set(before) == {good["id"]}, (
        f"WR-3: records that are not newborn were written: {change}"
    )
