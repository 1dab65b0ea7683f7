"""Ports working together: every write keeps search and recall current (SRCH-6)."""

from __future__ import annotations

import pytest

from memspec import canonical_json
from memspec.conformance import _builders as build
from memspec.conformance._driver import Driver
from memspec.conformance._outcomes import RequirementFailed
from memspec.conformance._session import EngineSession


@pytest.fixture
def driver(driver: Driver) -> Driver:
    """The kit's driver, with this suite's provenance refs (ports-1, ports-2, ...)."""
    return driver.configured(ref_prefix="ports")


def _found(driver: Driver, query: str) -> dict[str, float]:
    """Search scores above zero, by record id."""
    return {rid: score for rid, score in driver.search(query, k=50) if score > 0}


@pytest.mark.requirement("RCL-6")
def test_a_superseded_record_leaves_default_recall(driver: Driver) -> None:
    old = driver.put("the guest wifi password is tulip42")
    successor = driver.new("the guest wifi password is orchid77", supersedes=old["id"])
    if old["id"] not in driver.entries("guest wifi password"):
        raise RequirementFailed("RCL-6", "setup: not recalled")
    driver.apply(build.proposal("supersede", successor, target_id=old["id"], reason="rotated"))
    shown = driver.entries("guest wifi password")
    if old["id"] in shown:
        raise RequirementFailed("RCL-6", "the superseded record is still recalled by default")
    if successor["id"] not in shown:
        raise RequirementFailed("RCL-6", "the successor is not recalled")


@pytest.mark.requirement("RED-7")
@pytest.mark.profile("recall")
def test_a_redacted_body_is_gone_from_search_and_recall(
    driver: Driver, engine: EngineSession
) -> None:
    secret = driver.put("the vault combination is marmoset 3344", tags=["vault"])
    driver.put("the vault is in the basement")
    if secret["id"] not in _found(driver, "marmoset"):
        raise RequirementFailed("RED-7", "setup: the secret is not findable")
    engine.call("redact", id=secret["id"], reason="a secret", now=driver.clock.advance(seconds=1))
    for query in ("marmoset", "vault combination 3344"):
        if secret["id"] in _found(driver, query):
            raise RequirementFailed(
                "RED-7", f"search({query!r}) still finds the redacted record by its former content")
        shown = driver.entries(query, include_archived=True)
        if secret["id"] in shown:
            body = shown[secret["id"]]["record"]["body"]
            if body != "[redacted]":
                raise RequirementFailed("RED-7", f"recall still shows the redacted body {body!r}")
        for entry in shown.values():
            if "marmoset" in canonical_json(entry["record"]).decode():
                raise RequirementFailed("RED-7", "recall returned the redacted content")


@pytest.mark.requirement("RCL-8")
def test_an_archived_record_leaves_recall_but_stays_gettable(driver: Driver,
                                                             engine: EngineSession) -> None:
    record = driver.put("the lab printer needs a badge")
    if record["id"] not in driver.entries("lab printer badge"):
        raise RequirementFailed("RCL-8", "setup: not recalled")
    driver.apply(build.proposal("archive", target_id=record["id"], reason="printer removed"))
    if record["id"] in driver.entries("lab printer badge"):
        raise RequirementFailed("RCL-8", "an archived record is still recalled by default")
    stored = engine.call("get", id=record["id"])["record"]
    if stored["state"] != "archived":
        raise RequirementFailed("RCL-8", "(LC-4) the archived record is not gettable as archived")
    archived = driver.entries("lab printer badge", include_archived=True)
    if record["id"] not in archived:
        raise RequirementFailed("RCL-8", "include_archived does not bring it back")
    if canonical_json(archived[record["id"]]["record"]) != canonical_json(stored):
        raise RequirementFailed("SRCH-6", "recall returned a stale version of the archived record")


@pytest.mark.requirement("SRCH-6")
@pytest.mark.profile("files")
def test_loaded_records_are_searchable(driver: Driver, engine: EngineSession) -> None:
    records = [driver.new("the pottery kiln fires on wednesdays"), driver.new("glaze dries fast")]
    engine.call("load", file=build.memory_file(records, created_at=driver.clock.now()),
                verify=False)
    assert records[0]["id"] in _found(driver, "pottery kiln"), (
        "SRCH-6: a record loaded from a file cannot be found by search"
    )


@pytest.mark.requirement("SRCH-6")
@pytest.mark.profile("files")
def test_loaded_records_are_recalled(driver: Driver, engine: EngineSession) -> None:
    record = driver.new("the pottery kiln fires on wednesdays")
    engine.call("load", file=build.memory_file([record], created_at=driver.clock.now()),
                verify=False)
    shown = driver.entries("pottery kiln")
    if record["id"] not in shown:
        raise RequirementFailed("SRCH-6", "a record loaded from a file is not recalled")
    if "query-match" not in shown[record["id"]]["reasons"]:
        raise RequirementFailed("SRCH-6", "the loaded record is not marked as a query match")


@pytest.mark.requirement("SRCH-6")
def test_put_makes_records_searchable_and_current(driver: Driver, engine: EngineSession) -> None:
    record = driver.put("the bike shed is painted green")
    assert record["id"] in _found(driver, "bike shed"), "SRCH-6: a put record cannot be found"
    newer = build.evolve(record, driver.clock.advance(seconds=1), tags=["repainted"])
    engine.call("put", record=newer)
    assert record["id"] in _found(driver, "bike shed"), (
        "SRCH-6: a record is no longer found after a new version was put"
    )


@pytest.mark.requirement("SRCH-6")
@pytest.mark.profile("lifecycle")
def test_proposals_keep_search_current(driver: Driver) -> None:
    created = driver.new("the rooftop garden has tomatoes")
    driver.apply(build.proposal("create", created))
    assert created["id"] in _found(driver, "rooftop garden"), (
        "SRCH-6: a record created by a proposal cannot be found"
    )
    successor = driver.new("the rooftop garden grows peppers", supersedes=created["id"])
    driver.apply(build.proposal("supersede", successor, target_id=created["id"],
                                reason="replanted"))
    assert successor["id"] in _found(driver, "rooftop peppers"), (
        "SRCH-6: the successor of a supersession cannot be found"
    )


@pytest.mark.requirement("SRCH-6")
@pytest.mark.profile("write")
def test_ingested_records_are_searchable(driver: Driver, engine: EngineSession) -> None:
    record = driver.new("the ferret is called Biscuit")
    engine.call("ingest", proposals=[build.proposal("create", record)],
                now=driver.clock.advance(seconds=1))
    assert record["id"] in _found(driver, "ferret Biscuit"), (
        "SRCH-6: an ingested record cannot be found by search"
    )


@pytest.mark.requirement("SRCH-6")
@pytest.mark.profile("recall")
def test_recall_sees_what_consolidation_wrote(driver: Driver, engine: EngineSession) -> None:
    a = driver.put("The staging database is Postgres.")
    b = driver.put("The staging database is not Postgres.")
    engine.call("consolidate", now=driver.clock.advance(days=1),
                config={"near_dup_threshold": "0.95", "promotion_threshold": 3})
    shown = driver.entries("staging database Postgres")
    for side in (a, b):
        stored = engine.call("get", id=side["id"])["record"]
        if not (side["id"] in shown and canonical_json(shown[side["id"]]["record"]) == \
            canonical_json(stored)):
            raise RequirementFailed(
                "SRCH-6", f"recall does not show the current version of {side['id']} after "
                "consolidation wrote it")
