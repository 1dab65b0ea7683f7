"""Ports working together: every write keeps search and recall current (SRCH-6)."""

from __future__ import annotations

from typing import Any

import pytest

from memspec import canonical_json
from memspec.conformance import _builders as build
from memspec.conformance._clock import KitClock
from memspec.conformance._outcomes import RequirementFailed
from memspec.conformance._session import EngineSession

BIG = 100_000


class Ports:
    """Writes through one port, reads through another."""

    def __init__(self, engine: EngineSession, clock: KitClock) -> None:
        self.engine, self.clock, self.serial = engine, clock, 0

    def new(self, body: str, kind: str = "fact", **fields: Any) -> dict[str, Any]:
        self.serial += 1
        provenance = {"kind": "observation", "ref": f"ports-{self.serial}", "agent": None}
        return build.record(kind, body, created_at=self.clock.now(), provenance=provenance,
                            **fields)

    def put(self, body: str, **fields: Any) -> dict[str, Any]:
        record = self.new(body, **fields)
        self.engine.call("put", record=record)
        return record

    def apply(self, proposal: dict[str, Any]) -> None:
        self.engine.call("apply_proposal", proposal=proposal, now=self.clock.advance(seconds=1))

    def found(self, query: str) -> dict[str, float]:
        found = self.engine.call("search", query=query, k=50)["candidates"]
        return {c["id"]: c["score"] for c in found if c["score"] > 0}

    def recalled(self, query: str, **flags: bool) -> dict[str, dict[str, Any]]:
        result = self.engine.call("recall", query=query, budget_tokens=BIG,
                                  now=self.clock.now(), **flags)
        return {e["record"]["id"]: e for e in result["records"]}


@pytest.fixture
def ports(engine: EngineSession, clock: KitClock) -> Ports:
    return Ports(engine, clock)


@pytest.mark.requirement("RCL-6")
def test_a_superseded_record_leaves_default_recall(ports: Ports) -> None:
    old = ports.put("the guest wifi password is tulip42")
    successor = ports.new("the guest wifi password is orchid77", supersedes=old["id"])
    if old["id"] not in ports.recalled("guest wifi password"):
        raise RequirementFailed("RCL-6", "setup: not recalled")
    ports.apply(build.proposal("supersede", successor, target_id=old["id"], reason="rotated"))
    shown = ports.recalled("guest wifi password")
    if old["id"] in shown:
        raise RequirementFailed("RCL-6", "the superseded record is still recalled by default")
    if successor["id"] not in shown:
        raise RequirementFailed("RCL-6", "the successor is not recalled")


@pytest.mark.requirement("RED-7")
@pytest.mark.profile("recall")
def test_a_redacted_body_is_gone_from_search_and_recall(
    ports: Ports, engine: EngineSession
) -> None:
    secret = ports.put("the vault combination is marmoset 3344", tags=["vault"])
    ports.put("the vault is in the basement")
    if secret["id"] not in ports.found("marmoset"):
        raise RequirementFailed("RED-7", "setup: the secret is not findable")
    engine.call("redact", id=secret["id"], reason="a secret", now=ports.clock.advance(seconds=1))
    for query in ("marmoset", "vault combination 3344"):
        if secret["id"] in ports.found(query):
            raise RequirementFailed(
                "RED-7", f"search({query!r}) still finds the redacted record by its former content")
        shown = ports.recalled(query, include_archived=True)
        if secret["id"] in shown:
            body = shown[secret["id"]]["record"]["body"]
            if body != "[redacted]":
                raise RequirementFailed("RED-7", f"recall still shows the redacted body {body!r}")
        for entry in shown.values():
            if "marmoset" in canonical_json(entry["record"]).decode():
                raise RequirementFailed("RED-7", "recall returned the redacted content")


@pytest.mark.requirement("RCL-8")
def test_an_archived_record_leaves_recall_but_stays_gettable(ports: Ports,
                                                             engine: EngineSession) -> None:
    record = ports.put("the lab printer needs a badge")
    if record["id"] not in ports.recalled("lab printer badge"):
        raise RequirementFailed("RCL-8", "setup: not recalled")
    ports.apply(build.proposal("archive", target_id=record["id"], reason="printer removed"))
    if record["id"] in ports.recalled("lab printer badge"):
        raise RequirementFailed("RCL-8", "an archived record is still recalled by default")
    stored = engine.call("get", id=record["id"])["record"]
    if stored["state"] != "archived":
        raise RequirementFailed("RCL-8", "(LC-4) the archived record is not gettable as archived")
    archived = ports.recalled("lab printer badge", include_archived=True)
    if record["id"] not in archived:
        raise RequirementFailed("RCL-8", "include_archived does not bring it back")
    if canonical_json(archived[record["id"]]["record"]) != canonical_json(stored):
        raise RequirementFailed("SRCH-6", "recall returned a stale version of the archived record")


@pytest.mark.requirement("SRCH-6")
@pytest.mark.profile("files")
def test_loaded_records_are_searchable(ports: Ports, engine: EngineSession) -> None:
    records = [ports.new("the pottery kiln fires on wednesdays"), ports.new("glaze dries fast")]
    engine.call("load", file=build.memory_file(records, created_at=ports.clock.now()),
                verify=False)
    assert records[0]["id"] in ports.found("pottery kiln"), (
        "SRCH-6: a record loaded from a file cannot be found by search"
    )


@pytest.mark.requirement("SRCH-6")
@pytest.mark.profile("files")
def test_loaded_records_are_recalled(ports: Ports, engine: EngineSession) -> None:
    record = ports.new("the pottery kiln fires on wednesdays")
    engine.call("load", file=build.memory_file([record], created_at=ports.clock.now()),
                verify=False)
    shown = ports.recalled("pottery kiln")
    if record["id"] not in shown:
        raise RequirementFailed("SRCH-6", "a record loaded from a file is not recalled")
    if "query-match" not in shown[record["id"]]["reasons"]:
        raise RequirementFailed("SRCH-6", "the loaded record is not marked as a query match")


@pytest.mark.requirement("SRCH-6")
def test_put_makes_records_searchable_and_current(ports: Ports, engine: EngineSession) -> None:
    record = ports.put("the bike shed is painted green")
    assert record["id"] in ports.found("bike shed"), "SRCH-6: a put record cannot be found"
    newer = build.evolve(record, ports.clock.advance(seconds=1), tags=["repainted"])
    engine.call("put", record=newer)
    assert record["id"] in ports.found("bike shed"), (
        "SRCH-6: a record is no longer found after a new version was put"
    )


@pytest.mark.requirement("SRCH-6")
@pytest.mark.profile("lifecycle")
def test_proposals_keep_search_current(ports: Ports) -> None:
    created = ports.new("the rooftop garden has tomatoes")
    ports.apply(build.proposal("create", created))
    assert created["id"] in ports.found("rooftop garden"), (
        "SRCH-6: a record created by a proposal cannot be found"
    )
    successor = ports.new("the rooftop garden grows peppers", supersedes=created["id"])
    ports.apply(build.proposal("supersede", successor, target_id=created["id"],
                               reason="replanted"))
    assert successor["id"] in ports.found("rooftop peppers"), (
        "SRCH-6: the successor of a supersession cannot be found"
    )


@pytest.mark.requirement("SRCH-6")
@pytest.mark.profile("write")
def test_ingested_records_are_searchable(ports: Ports, engine: EngineSession) -> None:
    record = ports.new("the ferret is called Biscuit")
    engine.call("ingest", proposals=[build.proposal("create", record)],
                now=ports.clock.advance(seconds=1))
    assert record["id"] in ports.found("ferret Biscuit"), (
        "SRCH-6: an ingested record cannot be found by search"
    )


@pytest.mark.requirement("SRCH-6")
@pytest.mark.profile("recall")
def test_recall_sees_what_consolidation_wrote(ports: Ports, engine: EngineSession) -> None:
    a = ports.put("The staging database is Postgres.")
    b = ports.put("The staging database is not Postgres.")
    engine.call("consolidate", now=ports.clock.advance(days=1),
                config={"near_dup_threshold": "0.95", "promotion_threshold": 3})
    shown = ports.recalled("staging database Postgres")
    for side in (a, b):
        stored = engine.call("get", id=side["id"])["record"]
        if not (side["id"] in shown and canonical_json(shown[side["id"]]["record"]) == \
            canonical_json(stored)):
            raise RequirementFailed(
                "SRCH-6", f"recall does not show the current version of {side['id']} after "
                "consolidation wrote it")
