"""The RecordStore port on data built to expose the natural wrong implementations.

Records born at distinct instants whose birth order differs from their id order
(and from the order they were put in), histories of more than nine versions,
versions sharing an ``updated_at``, ids that differ only in letter case, tags that
contain one another, and filters given together: each test is what a store that
sorts by the wrong key, compares the wrong way or drops a filter gets wrong.
"""

from __future__ import annotations

from typing import Any

import pytest

from memspec import canonical_json
from memspec.conformance import _builders as build
from memspec.conformance._clock import KitClock
from memspec.conformance._machines import attempt, snapshot
from memspec.conformance._session import EngineSession

#: How many versions a long history gets: past 9, so that names compared as text
#: (1, 10, 11, 12, 2, ...) and numbers compared as numbers disagree.
LONG = 12


def _scattered(engine: EngineSession, clock: KitClock, count: int = 8) -> list[dict[str, Any]]:
    """``count`` records born one day apart, put newest first, whose id order is
    neither their birth order, nor its reverse, nor the order they were put in."""
    born = [build.record("fact", f"scattered note {i}", created_at=clock.at(i),
                         provenance={"kind": "observation", "ref": f"scatter-{i}",
                                     "agent": None})
            for i in range(count)]
    by_id = sorted(r["id"] for r in born)
    by_birth = [r["id"] for r in born]
    # Deterministic data: the kit's own precondition, not a check of the engine.
    assert by_id not in (by_birth, by_birth[::-1]), "kit data: id order equals birth order"
    for record in reversed(born):
        engine.call("put", record=record)
    return born


@pytest.mark.requirement("STORE-5")
def test_iterate_orders_by_id_not_by_birth(engine: EngineSession, clock: KitClock) -> None:
    born = _scattered(engine, clock)
    ids = [r["id"] for r in engine.call("iterate")["records"]]
    assert ids == sorted(r["id"] for r in born), (
        f"STORE-5: iterate returned {ids}, not ascending id order; the records were born at "
        "distinct instants in an order that differs from their ids (ordering by created_at, "
        "or by insertion, is wrong)"
    )


@pytest.mark.requirement("STORE-5")
def test_list_orders_by_id_not_by_birth(engine: EngineSession, clock: KitClock) -> None:
    born = _scattered(engine, clock)
    for filters in ({}, {"type": "fact"}, {"state": "active"}):
        ids = [r["id"] for r in engine.call("list", **filters)["records"]]
        assert ids == sorted(r["id"] for r in born), (
            f"STORE-5: list({filters}) returned {ids}, not ascending id order (records born "
            "at distinct instants whose birth order differs from their id order)"
        )


@pytest.mark.requirement("STORE-2")
def test_long_history_keeps_numeric_version_order(engine: EngineSession, clock: KitClock) -> None:
    base = build.record("fact", "the thermostat is set to 19", created_at=clock.now())
    versions = [base]
    for i in range(1, LONG):
        versions.append(build.evolve(versions[-1], clock.advance(seconds=1),
                                     confidence=f"0.{(i % 9) + 1}000", tags=[f"v{i + 1}"]))
    for version in versions:
        engine.call("put", record=version)
    got = [canonical_json(v) for v in engine.call("history", id=base["id"])["records"]]
    want = [canonical_json(v) for v in versions]
    order = [want.index(v) + 1 if v in want else "?" for v in got]
    assert got == want, (
        f"STORE-2: history of a record with {LONG} versions came back in the version order "
        f"{order}, expected 1..{LONG} (version numbers compared as text sort 10 before 2)"
    )


@pytest.mark.requirement("STORE-1")
def test_versions_sharing_an_updated_at_are_both_kept(
    engine: EngineSession, clock: KitClock
) -> None:
    base = build.record("fact", "the parcel is at the front desk", created_at=clock.now())
    same = clock.advance(seconds=1)
    second = build.evolve(base, same, tags=["parcel"])
    third = build.evolve(second, same, tags=["parcel", "collected"])
    for version in (base, second, third):
        engine.call("put", record=version)
    got = [canonical_json(v) for v in engine.call("history", id=base["id"])["records"]]
    assert got == [canonical_json(v) for v in (base, second, third)], (
        f"STORE-1: two versions written with the same updated_at did not both survive: "
        f"history has {len(got)} version(s), expected 3 (a put appends, whatever the time)"
    )


@pytest.mark.requirement("STORE-10")
def test_ids_are_not_case_folded(engine: EngineSession, clock: KitClock) -> None:
    record = build.record("fact", "the router password is on the fridge",
                          created_at=clock.now())
    engine.call("put", record=record)
    digits = record["id"].removeprefix("mem:")
    assert digits != digits.upper(), "kit data: the id has no letter digit"
    for spelling in ("mem:" + digits.upper(), "MEM:" + digits, "Mem:" + digits):
        for op in ("get", "history"):
            _, error = attempt(engine, op, id=spelling)
            assert error is not None, (
                f"STORE-10: {op}({spelling!r}) answered with the record stored as "
                f"{record['id']}; ids are lowercase (REC-3) and a differently cased spelling "
                "is malformed, never folded onto a stored id"
            )
            assert error.code in ("record", "not-found"), (
                f"STORE-10: {op}({spelling!r}) failed with {error.code!r}, not record or "
                "not-found"
            )


@pytest.mark.requirement("STORE-5")
def test_tag_filter_matches_whole_tags_only(engine: EngineSession, clock: KitClock) -> None:
    tagged = {
        "ops": ["ops"],
        "devops": ["devops"],
        "op": ["op"],
        "ops-team": ["ops-team", "Ops"],
        "both": ["op", "ops"],
    }
    ids: dict[str, str] = {}
    for i, (name, tags) in enumerate(tagged.items()):
        record = build.record("fact", f"a note about {name}", created_at=clock.at(i),
                              tags=tags)
        engine.call("put", record=record)
        ids[name] = record["id"]
    for tag, wanted in (("ops", {"ops", "both"}), ("op", {"op", "both"}),
                        ("Ops", {"ops-team"}), ("ps", set()), ("ops-", set())):
        got = {r["id"] for r in engine.call("list", tag=tag)["records"]}
        expected = {ids[name] for name in wanted}
        assert got == expected, (
            f"STORE-5: list(tag={tag!r}) returned "
            f"{sorted(n for n, i in ids.items() if i in got)}, expected {sorted(wanted)}; a tag "
            "filter matches a record whose tags contain that exact tag, never a substring or "
            "a case-folded spelling"
        )


@pytest.mark.requirement("STORE-5")
def test_every_filter_applies_in_every_combination(engine: EngineSession, clock: KitClock) -> None:
    def put(kind: str, body: str, state: str, tags: list[str], day: int) -> str:
        record = build.record(kind, body, created_at=clock.at(day), tags=tags)
        engine.call("put", record=record)
        if state != "active":
            engine.call("put", record=build.evolve(record, clock.at(day + 0.5), state=state,
                                                   state_reason="kit data"))
        return str(record["id"])

    made = {
        "fact-active-a": put("fact", "the lamp is in the hall", "active", ["a"], 1),
        "fact-archived-a": put("fact", "the lamp was in the attic", "archived", ["a"], 2),
        "fact-archived-b": put("fact", "the old lamp was blue", "archived", ["b"], 3),
        "episode-archived-a": put("episode", "we bought a lamp", "archived", ["a"], 4),
        "episode-active-b": put("episode", "we moved the lamp", "active", ["b"], 5),
    }

    def matching(**want: str) -> set[str]:
        keys = {"type": 0, "state": 1, "tag": 2}
        return {rid for name, rid in made.items()
                if all(name.split("-")[keys[k]] == v for k, v in want.items())}

    cases: list[dict[str, str]] = [
        {"state": "archived", "type": "fact"}, {"type": "fact", "state": "archived"},
        {"state": "active", "type": "episode"}, {"type": "episode", "state": "archived"},
        {"state": "archived", "tag": "a"}, {"tag": "a", "state": "archived"},
        {"type": "fact", "tag": "b"}, {"tag": "b", "type": "fact"},
        {"state": "archived", "type": "fact", "tag": "a"},
        {"tag": "a", "type": "episode", "state": "archived"},
        {"state": "active", "type": "fact", "tag": "b"},
    ]
    for filters in cases:
        got = {r["id"] for r in engine.call("list", **filters)["records"]}
        expected = matching(**filters)
        assert got == expected, (
            f"STORE-5: list({filters}) returned "
            f"{sorted(n for n, i in made.items() if i in got)}, expected "
            f"{sorted(n for n, i in made.items() if i in expected)}; every filter given must "
            "hold, in whatever combination and order"
        )


@pytest.mark.requirement("STORE-11")
def test_put_refuses_a_version_with_another_occurred_at(
    engine: EngineSession, clock: KitClock
) -> None:
    born = clock.now()
    episode = build.record("episode", "the fire alarm went off during standup",
                           created_at=born, occurred_at=clock.at(-1))
    plain = build.record("fact", "the fire alarm is tested on fridays", created_at=born)
    engine.call("put", record=episode)
    engine.call("put", record=plain)
    later = clock.advance(seconds=1)
    moved = build.evolve(episode, later, occurred_at=clock.at(-2), tags=["moved"])
    dropped = build.evolve(episode, later, tags=["dropped"])
    dropped.pop("occurred_at")
    added = build.evolve(plain, later, occurred_at=clock.at(-3))
    for what, version in (("a different occurred_at", moved), ("no occurred_at", dropped),
                          ("an occurred_at its first version lacks", added)):
        before = snapshot(engine)
        _, error = attempt(engine, "put", record=version)
        assert error is not None, (
            f"STORE-11: put accepted a new version of {version['id']} with {what}; "
            "occurred_at keeps its birth value in every version (REC-7)"
        )
        assert error.code == "record", (
            f"STORE-11: put of a version with {what} failed with {error.code!r}, not record"
        )
        assert snapshot(engine) == before, f"STORE-11: the refused version with {what} was written"


@pytest.mark.requirement("FILE-8")
def test_export_orders_by_id_not_by_birth(engine: EngineSession, clock: KitClock) -> None:
    born = _scattered(engine, clock)
    exported = engine.call("export", now=clock.at(30))["file"]
    ids = [r["id"] for r in exported["records"]]
    assert ids == sorted(r["id"] for r in born), (
        f"FILE-8: export listed {ids}, not ascending id order (records born at distinct "
        "instants whose birth order differs from their id order)"
    )

