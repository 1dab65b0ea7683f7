"""The RecordStore port contract, observed through put / get / history / list / iterate.

The store profile's checks live in ``memspec.conformance._store_contract``, shared with
the public base class ``memspec.testing.StoreContract``: each test below runs one of
them, so the kit and an engine author's own suite check the same things.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis.stateful import run_state_machine_as_test

from memspec import canonical_json
from memspec.conformance import _builders as build
from memspec.conformance import _store_contract as contract
from memspec.conformance._clock import KitClock
from memspec.conformance._machines import describe_change, kit_settings, snapshot
from memspec.conformance._machines_store import STORE_MACHINE_REQUIREMENTS, StoreMachine
from memspec.conformance._outcomes import RequirementFailed
from memspec.conformance._session import EngineSession
from memspec.conformance._store_contract import StoreSteps


@pytest.fixture
def store(engine: EngineSession, clock: KitClock) -> StoreSteps:
    return StoreSteps(engine, clock)


@pytest.mark.requirement("STORE-1")
def test_put_of_an_existing_id_appends(engine: EngineSession, clock: KitClock) -> None:
    contract.put_of_an_existing_id_appends(engine, clock)


@pytest.mark.requirement("STORE-2")
def test_history_is_every_version_in_write_order(engine: EngineSession, clock: KitClock) -> None:
    contract.history_is_every_version_in_write_order(engine, clock)


@pytest.mark.requirement("STORE-3")
def test_get_returns_the_latest_version(engine: EngineSession, clock: KitClock) -> None:
    contract.get_returns_the_latest_version(engine, clock)


@pytest.mark.requirement("STORE-4")
def test_unknown_ids_are_not_found(engine: EngineSession, clock: KitClock) -> None:
    contract.unknown_ids_are_not_found(engine, clock)


@pytest.mark.requirement("STORE-10")
def test_malformed_ids_never_reach_the_backend(engine: EngineSession, clock: KitClock) -> None:
    contract.malformed_ids_never_reach_the_backend(engine, clock)


@pytest.mark.requirement("STORE-5")
def test_list_filters_latest_versions(engine: EngineSession, clock: KitClock) -> None:
    contract.list_filters_latest_versions(engine, clock)


@pytest.mark.requirement("STORE-5")
def test_iterate_returns_every_latest_version(engine: EngineSession, clock: KitClock) -> None:
    contract.iterate_returns_every_latest_version(engine, clock)


@pytest.mark.requirement("STORE-5")
def test_list_rejects_unknown_filter_values(engine: EngineSession, clock: KitClock) -> None:
    contract.list_rejects_unknown_filter_values(engine, clock)


@pytest.mark.requirement("STORE-8")
def test_records_round_trip_byte_for_byte(engine: EngineSession, clock: KitClock) -> None:
    contract.records_round_trip_byte_for_byte(engine, clock)


@pytest.mark.requirement("STORE-11")
def test_put_rejects_invalid_records(engine: EngineSession, clock: KitClock) -> None:
    contract.put_rejects_invalid_records(engine, clock)


@pytest.mark.requirement("STORE-6")
def test_nothing_is_ever_deleted_by_store_writes(engine: EngineSession, clock: KitClock) -> None:
    contract.nothing_is_ever_deleted_by_store_writes(engine, clock)


@pytest.mark.parametrize("requirement", [
    pytest.param(req, marks=pytest.mark.requirement(req), id=req)
    for req in STORE_MACHINE_REQUIREMENTS])
def test_store_state_machine(engine: EngineSession, clock: KitClock, requirement: str) -> None:
    """Random valid puts (and, for STORE-11, invalid ones) and the reads ``requirement``
    needs, checked against a model of the store: one run per requirement, so that an engine
    breaking one rule (a lenient put, an unordered iterate) is still judged on the others."""
    run_state_machine_as_test(
        lambda: StoreMachine(engine, clock, judge=(requirement,)),  # type: ignore[arg-type]
        settings=kit_settings())


def _assert_grows(before: dict[str, tuple[bytes, ...]], after: dict[str, tuple[bytes, ...]],
                  requirement: str, step: str) -> None:
    for rid, versions in before.items():
        assert after.get(rid, ())[: len(versions)] == versions, (
            f"{requirement}: after {step} the store no longer holds every earlier version: "
            f"{describe_change(before, after)}"
        )


@pytest.mark.requirement("LC-4")
def test_nothing_is_deleted_by_lifecycle_changes(store: StoreSteps, engine: EngineSession) -> None:
    a, b, c, d = (store.new(f"claim {name}") for name in "abcd")
    successor = store.new("claim a, corrected", supersedes=a["id"])
    steps: list[tuple[str, str, dict[str, Any]]] = [
        *(("create", "apply_proposal", {"proposal": build.proposal("create", r)})
          for r in (a, b, c, d)),
        ("supersede", "apply_proposal", {"proposal": build.proposal(
            "supersede", successor, target_id=a["id"], reason="corrected")}),
        ("transition", "apply_proposal", {"proposal": build.proposal(
            "transition", target_id=b["id"], other_id=c["id"], reason="conflict")}),
        ("resolve", "resolve", {"winner_id": c["id"], "loser_id": b["id"],
                                "reason": "c is right"}),
        ("archive", "apply_proposal", {"proposal": build.proposal(
            "archive", target_id=d["id"], reason="stale")}),
        ("archive of a superseded record", "apply_proposal", {"proposal": build.proposal(
            "archive", target_id=a["id"], reason="stale")}),
    ]
    for step, op, args in steps:
        before = snapshot(engine)
        engine.call(op, now=store.clock.advance(seconds=1), **args)
        _assert_grows(before, snapshot(engine), "STORE-6", step)
    for record in (a, b, c, d, successor):
        if canonical_json(store.history(record["id"])[0]) != canonical_json(record):
            raise RequirementFailed(
                "LC-4", f"{record['id']} no longer has its birth version in history")


@pytest.mark.requirement("RED-1")
def test_nothing_is_deleted_by_redaction(store: StoreSteps, engine: EngineSession) -> None:
    secret = store.new("the door code is 4711")
    versions = store.versions_of(secret, 3)
    bystander = store.new("standup starts at nine")
    for record in (*versions, bystander):
        store.put(record)
    before = snapshot(engine)
    engine.call("redact", id=secret["id"], reason="a secret", now=store.clock.advance(seconds=1))
    after = snapshot(engine)
    if set(after) != set(before):
        raise RequirementFailed(
            "STORE-6",
            f"redaction changed which ids the store holds: {describe_change(before, after)}")
    if after[bystander["id"]] != before[bystander["id"]]:
        raise RequirementFailed("RED-1", "redaction of one record changed another")
    if len(after[secret["id"]]) != 3:
        raise RequirementFailed(
            "RED-1", f"redaction left {len(after[secret['id']])} versions of a 3-version record")
