"""The RecordStore port contract, observed through put / get / history / list / iterate."""

from __future__ import annotations

from typing import Any

import pytest

from memspec import SigningKey, canonical_json, sign_record
from memspec.conformance import _builders as build
from memspec.conformance._machines import attempt, describe_change, expect_rejected, snapshot
from memspec.conformance._outcomes import RequirementFailed


class Store:
    """The store operations with the kit's records."""

    def __init__(self, engine: Any, clock: Any) -> None:
        self.engine, self.clock, self.serial = engine, clock, 0

    def new(self, body: str = "the kettle is in the left cupboard", kind: str = "fact",
            **fields: Any) -> dict[str, Any]:
        self.serial += 1
        provenance = {"kind": "observation", "ref": f"store-{self.serial}", "agent": None}
        return build.record(kind, body, created_at=self.clock.now(), provenance=provenance,
                            **fields)

    def put(self, record: dict[str, Any]) -> Any:
        return self.engine.call("put", record=record)["version"]

    def history(self, rid: str) -> list[dict[str, Any]]:
        versions: list[dict[str, Any]] = self.engine.call("history", id=rid)["records"]
        return versions

    def get(self, rid: str) -> dict[str, Any]:
        record: dict[str, Any] = self.engine.call("get", id=rid)["record"]
        return record

    def versions_of(self, base: dict[str, Any], count: int) -> list[dict[str, Any]]:
        """``count`` successive versions of ``base`` (confidence and tags move each time)."""
        out = [base]
        for i in range(1, count):
            out.append(build.evolve(out[-1], self.clock.advance(seconds=1),
                                    confidence=f"0.{9 - i}000", tags=[f"v{i + 1}"]))
        return out


@pytest.fixture
def store(engine: Any, clock: Any) -> Store:
    return Store(engine, clock)


def _bytes(records: list[dict[str, Any]]) -> list[bytes]:
    return [canonical_json(r) for r in records]


@pytest.mark.requirement("STORE-1")
def test_put_of_an_existing_id_appends(store: Store) -> None:
    v1, v2 = store.versions_of(store.new(), 2)
    first, second = store.put(v1), store.put(v2)
    count = len(store.history(v1["id"]))
    assert count == 2, (
        f"STORE-1: put of an existing id replaced version 1 instead of appending "
        f"(history has {count} version(s), expected 2)"
    )
    assert (first, second) == (1, 2), (
        f"STORE-1: put reported version numbers {first!r}, {second!r}; expected 1, 2"
    )


@pytest.mark.requirement("STORE-2")
def test_history_is_every_version_in_write_order(store: Store) -> None:
    versions = store.versions_of(store.new(), 4)
    other = store.new("standup starts at nine")
    store.put(versions[0])
    store.put(other)
    for version in versions[1:3]:
        store.put(version)
    early = _bytes(store.history(versions[0]["id"]))
    store.put(versions[3])
    got = _bytes(store.history(versions[0]["id"]))
    assert len(got) == 4, f"STORE-2: history returned {len(got)} versions, 4 were written"
    assert got == _bytes(versions), (
        "STORE-2: history does not return the versions as written, oldest first "
        f"(confidences {[r['confidence'] for r in store.history(versions[0]['id'])]}, written "
        f"{[r['confidence'] for r in versions]})"
    )
    assert got[:3] == early, "STORE-2: a version changed after a later write"


@pytest.mark.requirement("STORE-3")
def test_get_returns_the_latest_version(store: Store) -> None:
    versions = store.versions_of(store.new(), 3)
    for version in versions:
        store.put(version)
        assert canonical_json(store.get(version["id"])) == canonical_json(version), (
            f"STORE-3: get returned version with confidence "
            f"{store.get(version['id'])['confidence']}, not the latest ({version['confidence']})"
        )


@pytest.mark.requirement("STORE-4")
def test_unknown_ids_are_not_found(store: Store, engine: Any) -> None:
    store.put(store.new())
    unknown = store.new("never stored")["id"]
    for op in ("get", "history"):
        engine.reject(op, "not-found", id=unknown)


@pytest.mark.requirement("STORE-10")
def test_malformed_ids_never_reach_the_backend(store: Store, engine: Any) -> None:
    store.put(store.new())
    before = snapshot(engine)
    for bad in ("mem:../../../etc/passwd", "mem:' OR '1'='1", "mem:*", "../mem",
                "mem:0123456789abcdef0123456789ABCDEF", "", "mem:" + "0" * 31 + "/"):
        for op in ("get", "history"):
            _, error = attempt(engine, op, id=bad)
            assert error is not None, f"STORE-10: {op} answered for the malformed id {bad!r}"
            assert error.code in ("record", "not-found"), (
                f"STORE-10: {op}({bad!r}) failed with {error.code!r} instead of a record or "
                f"not-found error: {error}"
            )
    assert snapshot(engine) == before, "STORE-10: a malformed id changed the store"


@pytest.mark.requirement("STORE-5")
def test_list_filters_latest_versions(store: Store, engine: Any) -> None:
    fact = store.new("the kettle is in the left cupboard", tags=["kitchen", "home"])
    episode = store.new("we moved the kettle on monday", "episode", tags=["kitchen"])
    procedure = store.new("descale the kettle monthly", "procedure", tags=["home"])
    archived = store.new("the old kettle leaked", tags=["kitchen"])
    for record in (fact, episode, procedure, archived):
        store.put(record)
    store.put(build.evolve(archived, store.clock.advance(seconds=1), state="archived",
                           state_reason="replaced", tags=["attic"]))
    everything = {fact["id"], episode["id"], procedure["id"], archived["id"]}
    cases: list[tuple[dict[str, str], set[str]]] = [
        ({}, everything),
        ({"state": "active"}, everything - {archived["id"]}),
        ({"state": "archived"}, {archived["id"]}),
        ({"type": "fact"}, {fact["id"], archived["id"]}),
        ({"tag": "kitchen"}, {fact["id"], episode["id"]}),
        ({"tag": "attic"}, {archived["id"]}),
        ({"type": "fact", "tag": "kitchen"}, {fact["id"]}),
        ({"state": "active", "type": "episode", "tag": "kitchen"}, {episode["id"]}),
        ({"state": "active", "type": "procedure", "tag": "kitchen"}, set()),
        ({"state": "superseded"}, set()),
        ({"tag": "nobody uses this tag"}, set()),
    ]
    for filters, expected in cases:
        listed = engine.call("list", **filters)["records"]
        ids = [r["id"] for r in listed]
        assert set(ids) == expected, (
            f"STORE-5: list({filters}) returned {sorted(ids)}, expected {sorted(expected)} "
            "(every given filter must match the latest version)"
        )
        assert ids == sorted(ids), f"STORE-5: list({filters}) is not ordered by id"
        for record in listed:
            assert canonical_json(record) == canonical_json(store.get(record["id"])), (
                f"STORE-5: list({filters}) returned a version of {record['id']} that is not "
                "the latest"
            )


@pytest.mark.requirement("STORE-5")
def test_iterate_returns_every_latest_version(store: Store, engine: Any) -> None:
    records = [store.new(f"note number {i}") for i in range(6)]
    for record in reversed(records):
        store.put(record)
    latest = {r["id"]: r for r in records}
    for record in records[::2]:
        newer = build.evolve(record, store.clock.advance(seconds=1), tags=["revised"])
        store.put(newer)
        latest[record["id"]] = newer
    shown = engine.call("iterate")["records"]
    ids = [r["id"] for r in shown]
    assert ids == sorted(latest), (
        f"STORE-5: iterate returned ids {ids}, expected every id once, ordered: "
        f"{sorted(latest)}"
    )
    for record in shown:
        assert canonical_json(record) == canonical_json(latest[record["id"]]), (
            f"STORE-5: iterate returned an old version of {record['id']}"
        )


@pytest.mark.requirement("STORE-8")
def test_records_round_trip_byte_for_byte(store: Store, keys: Any) -> None:
    signer: SigningKey = keys.a
    odd = store.new("Ünïcödé — \u00e9t\u00e9 naïve 🦉 \"quoted\" \\ back\tslash\n",
                    slots={"z": [1, -2, {"b": None, "a": True}], "é": "x", "\U0001d538": "astral"},
                    tags=["ß", "🦉"], occurred_at=store.clock.now(),
                    extra={"x_vendor": {"nested": [9007199254740991, "ok"]}})
    signed = sign_record(store.new("a signed fact", tags=["signed"]), signer)
    for record in (odd, signed):
        store.put(record)
        for where, got in (("get", store.get(record["id"])),
                           ("history", store.history(record["id"])[0]),
                           ("list", next(r for r in store.engine.call("list")["records"]
                                         if r["id"] == record["id"]))):
            assert canonical_json(got) == canonical_json(record), (
                f"STORE-8: {where} did not return {record['id']} byte for byte (stored "
                f"{canonical_json(record)[:120]!r}..., got {canonical_json(got)[:120]!r}...)"
            )


@pytest.mark.requirement("STORE-11")
def test_put_rejects_invalid_records(store: Store, engine: Any) -> None:
    stored = store.new()
    store.put(stored)
    fresh = store.new("a record that must not be stored")
    bad_versions: dict[str, dict[str, Any]] = {
        "a wrong content address": {**fresh, "id": store.new("something else")["id"]},
        "a float confidence": {**fresh, "confidence": 0.5},
        "confidence without four digits": {**fresh, "confidence": "0.5"},
        "a missing field": {k: v for k, v in fresh.items() if k != "tags"},
        "an unknown state": {**fresh, "state": "deleted"},
        "a second timestamp spelling": {**fresh, "updated_at": "2026-01-01T00:00:00Z"},
        "a rule without evidence": store.new("always lock up", "rule"),
        "a transitional record without a block": {**fresh, "state": "transitional"},
        "an active record naming a successor": {**fresh, "superseded_by": stored["id"]},
        "a new version that changes the body": {**stored, "body": "rewritten"},
        "a new version with updated_at before created_at": {
            **stored, "updated_at": "2025-12-31T23:59:59.999Z"},
        "a flagged fact": {**fresh, "flagged": True, "flag_reason": "why"},
    }
    for what, record in bad_versions.items():
        expect_rejected(engine, "put", "record", "STORE-11", f"put of a record with {what}",
                        record=record)


@pytest.mark.requirement("STORE-6")
def test_nothing_is_ever_deleted_by_store_writes(store: Store, engine: Any) -> None:
    ever: dict[str, int] = {}
    base = store.new()
    chain = [base,
             build.evolve(base, store.clock.advance(seconds=1), state="transitional",
                          transition=build.transition_block(base["id"], store.new("x")["id"],
                                                            "dispute")),
             build.evolve(base, store.clock.advance(seconds=2), state="superseded",
                          superseded_by=store.new("y")["id"], state_reason="lost"),
             build.evolve(base, store.clock.advance(seconds=3), state="archived",
                          superseded_by=store.new("y")["id"], state_reason="old")]
    others = [store.new(f"bystander {i}") for i in range(3)]
    for record in [*others, *chain]:
        before = snapshot(engine)
        store.put(record)
        ever[record["id"]] = ever.get(record["id"], 0) + 1
        after = snapshot(engine)
        for rid, versions in before.items():
            assert after.get(rid, ())[: len(versions)] == versions, (
                f"STORE-6: putting {record['id']} removed or altered stored versions: "
                f"{describe_change(before, after)}"
            )
    for rid, count in ever.items():
        assert len(store.history(rid)) == count, (
            f"STORE-6: {rid} has {len(store.history(rid))} versions, {count} were written"
        )


def _assert_grows(before: dict[str, tuple[bytes, ...]], after: dict[str, tuple[bytes, ...]],
                  requirement: str, step: str) -> None:
    for rid, versions in before.items():
        assert after.get(rid, ())[: len(versions)] == versions, (
            f"{requirement}: after {step} the store no longer holds every earlier version: "
            f"{describe_change(before, after)}"
        )


@pytest.mark.requirement("LC-4")
def test_nothing_is_deleted_by_lifecycle_changes(store: Store, engine: Any) -> None:
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
def test_nothing_is_deleted_by_redaction(store: Store, engine: Any) -> None:
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


@pytest.mark.requirement("STORE-5")
def test_list_rejects_unknown_filter_values(store: Store, engine: Any) -> None:
    store.put(store.new())
    for filters in ({"state": "deleted"}, {"type": "memory"}, {"state": "Active"}):
        expect_rejected(engine, "list", "record", "STORE-5",
                        f"list with a filter outside the vocabulary {filters}", **filters)
