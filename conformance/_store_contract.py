"""The store profile's contract checks, shared by the kit and ``memspec.testing.StoreContract``.

Each check is a function of the engine under test (anything with ``call(op, **args)``,
see :class:`~memspec.conformance._machines_observe.EngineLike`) and a deterministic
clock. It raises :class:`~memspec.conformance._outcomes.RequirementFailed` naming the one
requirement it checks. The kit's ``suites/test_store.py`` and the public base class
both call these functions, so the two cannot drift; :data:`CHECKS` lists them with
their requirement, and tests/test_testing_api.py proves both use every one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memspec import canonical_json, sign_record
from memspec.conformance import _builders as build
from memspec.conformance._machines_observe import (
    ClockLike,
    EngineLike,
    attempt,
    describe_change,
    expect_rejected,
    shorten,
    snapshot,
)
from memspec.conformance._outcomes import RequirementFailed, check

__all__ = [
    "CHECKS",
    "ContractCheck",
    "StoreSteps",
    "bad_versions",
    "get_returns_the_latest_version",
    "history_is_every_version_in_write_order",
    "iterate_returns_every_latest_version",
    "list_filters_latest_versions",
    "list_rejects_unknown_filter_values",
    "malformed_ids_never_reach_the_backend",
    "nothing_is_ever_deleted_by_store_writes",
    "put_of_an_existing_id_appends",
    "put_rejects_invalid_records",
    "records_round_trip_byte_for_byte",
    "unknown_ids_are_not_found",
]


class StoreSteps:
    """The store operations with the kit's records (distinct provenance per record)."""

    def __init__(self, engine: EngineLike, clock: ClockLike, label: str = "store") -> None:
        self.engine, self.clock, self.label, self.serial = engine, clock, label, 0

    def new(self, body: str = "the kettle is in the left cupboard", kind: str = "fact",
            **fields: Any) -> dict[str, Any]:
        """A new record born now, not yet stored."""
        self.serial += 1
        provenance = {"kind": "observation", "ref": f"{self.label}-{self.serial}",
                      "agent": None}
        return build.record(kind, body, created_at=self.clock.now(), provenance=provenance,
                            **fields)

    def put(self, record: dict[str, Any]) -> Any:
        """Store one version; the version number the engine reports."""
        return self.engine.call("put", record=record)["version"]

    def history(self, rid: str) -> list[dict[str, Any]]:
        """Every stored version of ``rid``, as the engine returns them."""
        versions: list[dict[str, Any]] = self.engine.call("history", id=rid)["records"]
        return versions

    def get(self, rid: str) -> dict[str, Any]:
        """The latest version of ``rid``, as the engine returns it."""
        record: dict[str, Any] = self.engine.call("get", id=rid)["record"]
        return record

    def versions_of(self, base: dict[str, Any], count: int) -> list[dict[str, Any]]:
        """``count`` successive versions of ``base`` (confidence and tags move each time)."""
        out = [base]
        for i in range(1, count):
            out.append(build.evolve(out[-1], self.clock.advance(seconds=1),
                                    confidence=f"0.{9 - i}000", tags=[f"v{i + 1}"]))
        return out


@dataclass(frozen=True)
class ContractCheck:
    """One store contract check: its name (the test is ``test_<name>``), the requirement
    it names, and the check itself."""

    name: str
    requirement: str
    run: Callable[[EngineLike, ClockLike], None]


_CHECKS: list[ContractCheck] = []
_Check = Callable[[EngineLike, ClockLike], None]


def _contract(requirement: str) -> Callable[[_Check], _Check]:
    """Register the decorated function as the contract check of ``requirement``."""
    def register(run: _Check) -> _Check:
        _CHECKS.append(ContractCheck(run.__name__, requirement, run))
        return run
    return register


def _bytes(records: list[dict[str, Any]]) -> list[bytes]:
    return [canonical_json(r) for r in records]


@_contract("STORE-1")
def put_of_an_existing_id_appends(engine: EngineLike, clock: ClockLike) -> None:
    """``put`` of a stored id appends a version and reports its number."""
    store = StoreSteps(engine, clock)
    v1, v2 = store.versions_of(store.new(), 2)
    first, second = store.put(v1), store.put(v2)
    count = len(store.history(v1["id"]))
    check("STORE-1", count == 2,
          f"put of an existing id replaced version 1 instead of appending "
          f"(history has {count} version(s), expected 2)")
    check("STORE-1", (first, second) == (1, 2),
          f"put reported version numbers {first!r}, {second!r}; expected 1, 2")


@_contract("STORE-2")
def history_is_every_version_in_write_order(engine: EngineLike, clock: ClockLike) -> None:
    """``history`` is every version as written, oldest first, never changed later."""
    store = StoreSteps(engine, clock)
    versions = store.versions_of(store.new(), 4)
    other = store.new("standup starts at nine")
    store.put(versions[0])
    store.put(other)
    for version in versions[1:3]:
        store.put(version)
    early = _bytes(store.history(versions[0]["id"]))
    store.put(versions[3])
    got = _bytes(store.history(versions[0]["id"]))
    check("STORE-2", len(got) == 4, f"history returned {len(got)} versions, 4 were written")
    check("STORE-2", got == _bytes(versions), lambda: (
        "history does not return the versions as written, oldest first "
        f"(confidences {[r['confidence'] for r in store.history(versions[0]['id'])]}, written "
        f"{[r['confidence'] for r in versions]})"))
    check("STORE-2", got[:3] == early, "a version changed after a later write")


@_contract("STORE-3")
def get_returns_the_latest_version(engine: EngineLike, clock: ClockLike) -> None:
    """``get`` returns the latest version."""
    store = StoreSteps(engine, clock)
    for version in store.versions_of(store.new(), 3):
        store.put(version)
        got = store.get(version["id"])
        check("STORE-3", canonical_json(got) == canonical_json(version),
              f"get returned version with confidence {got['confidence']}, not the latest "
              f"({version['confidence']})")


@_contract("STORE-4")
def unknown_ids_are_not_found(engine: EngineLike, clock: ClockLike) -> None:
    """``get`` and ``history`` of an id never stored fail with not-found."""
    store = StoreSteps(engine, clock)
    store.put(store.new())
    unknown = store.new("never stored")["id"]
    for op in ("get", "history"):
        result, error = attempt(engine, op, id=unknown)
        if error is None:
            raise RequirementFailed("STORE-4", f"{op}(id={unknown!r}) should fail with "
                                    f"'not-found' but succeeded: {shorten(result)}")
        check("STORE-4", error.code == "not-found",
              f"{op}(id={unknown!r}) should fail with 'not-found' but failed with "
              f"{error.code!r}: {error}")


@_contract("STORE-10")
def malformed_ids_never_reach_the_backend(engine: EngineLike, clock: ClockLike) -> None:
    """Ids that are not record ids are refused (record or not-found), writing
    nothing."""
    store = StoreSteps(engine, clock)
    store.put(store.new())
    before = snapshot(engine)
    for bad in ("mem:../../../etc/passwd", "mem:' OR '1'='1", "mem:*", "../mem",
                "mem:0123456789abcdef0123456789ABCDEF", "", "mem:" + "0" * 31 + "/"):
        for op in ("get", "history"):
            _, error = attempt(engine, op, id=bad)
            if error is None:
                raise RequirementFailed("STORE-10", f"{op} answered for the malformed id "
                                        f"{bad!r}")
            check("STORE-10", error.code in ("record", "not-found"),
                  f"{op}({bad!r}) failed with {error.code!r} instead of a record or "
                  f"not-found error: {error}")
    check("STORE-10", snapshot(engine) == before, "a malformed id changed the store")


@_contract("STORE-5")
def list_filters_latest_versions(engine: EngineLike, clock: ClockLike) -> None:
    """``list`` applies every given filter to the latest versions, ordered by id."""
    store = StoreSteps(engine, clock)
    fact = store.new("the kettle is in the left cupboard", tags=["kitchen", "home"])
    episode = store.new("we moved the kettle on monday", "episode", tags=["kitchen"])
    procedure = store.new("descale the kettle monthly", "procedure", tags=["home"])
    archived = store.new("the old kettle leaked", tags=["kitchen"])
    for record in (fact, episode, procedure, archived):
        store.put(record)
    store.put(build.evolve(archived, clock.advance(seconds=1), state="archived",
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
        check("STORE-5", set(ids) == expected,
              f"list({filters}) returned {sorted(ids)}, expected {sorted(expected)} "
              "(every given filter must match the latest version)")
        check("STORE-5", ids == sorted(ids), f"list({filters}) is not ordered by id")
        for record in listed:
            check("STORE-5", canonical_json(record) == canonical_json(store.get(record["id"])),
                  f"list({filters}) returned a version of {record['id']} that is not "
                  "the latest")


@_contract("STORE-5")
def iterate_returns_every_latest_version(engine: EngineLike, clock: ClockLike) -> None:
    """``iterate`` returns every id once, at its latest version, ordered by id."""
    store = StoreSteps(engine, clock)
    records = [store.new(f"note number {i}") for i in range(6)]
    for record in reversed(records):
        store.put(record)
    latest = {r["id"]: r for r in records}
    for record in records[::2]:
        newer = build.evolve(record, clock.advance(seconds=1), tags=["revised"])
        store.put(newer)
        latest[record["id"]] = newer
    shown = engine.call("iterate")["records"]
    ids = [r["id"] for r in shown]
    check("STORE-5", ids == sorted(latest),
          f"iterate returned ids {ids}, expected every id once, ordered: {sorted(latest)}")
    for record in shown:
        check("STORE-5", canonical_json(record) == canonical_json(latest[record["id"]]),
              f"iterate returned an old version of {record['id']}")


@_contract("STORE-5")
def list_rejects_unknown_filter_values(engine: EngineLike, clock: ClockLike) -> None:
    """A list filter outside the vocabulary is a record error, writing nothing."""
    store = StoreSteps(engine, clock)
    store.put(store.new())
    unknown: tuple[dict[str, Any], ...] = (
        {"state": "deleted"}, {"type": "memory"}, {"state": "Active"})
    for filters in unknown:
        expect_rejected(engine, "list", "record", "STORE-5",
                        f"list with a filter outside the vocabulary {filters}", **filters)


@_contract("STORE-8")
def records_round_trip_byte_for_byte(engine: EngineLike, clock: ClockLike) -> None:
    """``get``, ``history`` and ``list`` return a stored record byte for byte (odd Unicode,
    extension fields, a signature)."""
    store = StoreSteps(engine, clock)
    odd = store.new("Ünïcödé — \u00e9t\u00e9 naïve 🦉 \"quoted\" \\ back\tslash\n",
                    slots={"z": [1, -2, {"b": None, "a": True}], "é": "x", "\U0001d538": "astral"},
                    tags=["ß", "🦉"], occurred_at=clock.now(),
                    extra={"x_vendor": {"nested": [9007199254740991, "ok"]}})
    signed = sign_record(store.new("a signed fact", tags=["signed"]), build.fixed_keys().a)
    for record in (odd, signed):
        store.put(record)
        for where, got in (("get", store.get(record["id"])),
                           ("history", store.history(record["id"])[0]),
                           ("list", next(r for r in engine.call("list")["records"]
                                         if r["id"] == record["id"]))):
            check("STORE-8", canonical_json(got) == canonical_json(record),
                  f"{where} did not return {record['id']} byte for byte (stored "
                  f"{canonical_json(record)[:120]!r}..., got {canonical_json(got)[:120]!r}...)")


def bad_versions(store: StoreSteps, stored: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Records put must refuse, by what is wrong with them: new ones, and new versions of
    ``stored`` (already in the store)."""
    fresh = store.new("a record that must not be stored")
    return {
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


@_contract("STORE-11")
def put_rejects_invalid_records(engine: EngineLike, clock: ClockLike) -> None:
    """``put`` refuses an invalid record with a record error and writes nothing."""
    store = StoreSteps(engine, clock)
    stored = store.new()
    store.put(stored)
    for what, record in bad_versions(store, stored).items():
        expect_rejected(engine, "put", "record", "STORE-11", f"put of a record with {what}",
                        record=record)


@_contract("STORE-6")
def nothing_is_ever_deleted_by_store_writes(engine: EngineLike, clock: ClockLike) -> None:
    """No put removes or alters a stored version, whatever state it writes."""
    store = StoreSteps(engine, clock)
    ever: dict[str, int] = {}
    base = store.new()
    chain = [base,
             build.evolve(base, clock.advance(seconds=1), state="transitional",
                          transition=build.transition_block(base["id"], store.new("x")["id"],
                                                            "dispute")),
             build.evolve(base, clock.advance(seconds=2), state="superseded",
                          superseded_by=store.new("y")["id"], state_reason="lost"),
             build.evolve(base, clock.advance(seconds=3), state="archived",
                          superseded_by=store.new("y")["id"], state_reason="old")]
    others = [store.new(f"bystander {i}") for i in range(3)]
    for record in [*others, *chain]:
        before = snapshot(engine)
        store.put(record)
        ever[record["id"]] = ever.get(record["id"], 0) + 1
        after = snapshot(engine)
        for rid, versions in before.items():
            if after.get(rid, ())[: len(versions)] != versions:
                raise RequirementFailed(
                    "STORE-6", f"putting {record['id']} removed or altered stored versions: "
                    f"{describe_change(before, after)}")
    for rid, count in ever.items():
        held = len(store.history(rid))
        check("STORE-6", held == count, f"{rid} has {held} versions, {count} were written")


#: Every store contract check, in the order they are defined.
CHECKS: tuple[ContractCheck, ...] = tuple(_CHECKS)
