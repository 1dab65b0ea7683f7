"""Extension x-time-travel: list and recall as of a past instant (spec/EXTENSIONS.md X3)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from memspec.conformance import _builders as build
from memspec.conformance._driver import Driver
from memspec.conformance._machines import snapshot
from memspec.conformance._session import EngineSession


@dataclass(frozen=True)
class Story:
    """A store with a known past: a fact born, superseded, an archival and a late birth."""

    old: dict[str, Any]
    other: dict[str, Any]
    new: dict[str, Any]
    #: Both births; the supersession; the archival; a day after.
    t0: str
    t1: str
    t2: str
    t3: str


@pytest.fixture
def story(driver: Driver) -> Story:
    """The story, written into the store through ``driver``."""
    clock = driver.clock
    prov = {"kind": "observation", "ref": "tt-1", "agent": None}
    t0 = clock.now()
    old = build.record("fact", "the team standup is at nine", created_at=t0, provenance=prov,
                       tags=["meetings"])
    other = build.record("fact", "the team retro is on fridays", created_at=t0, provenance=prov,
                         tags=["meetings"])
    driver.engine.call("put", record=old)
    driver.engine.call("put", record=other)
    t1 = clock.advance(days=1)
    new = build.record("fact", "the team standup is at ten", created_at=t1, provenance=prov,
                       tags=["meetings"], supersedes=old["id"])
    driver.apply(build.proposal("supersede", new, target_id=old["id"], reason="moved to ten"),
                 now=t1)
    t2 = clock.advance(days=1)
    driver.archive(other["id"], "retros stopped", now=t2)
    return Story(old, other, new, t0, t1, t2, clock.advance(days=1))


def _version_at(driver: Driver, rid: str, at: str) -> dict[str, Any]:
    """The version of record ``rid`` current at ``at``."""
    return [v for v in driver.history(rid) if v["updated_at"] <= at][-1]


def _ids(records: list[dict[str, Any]]) -> list[str]:
    return [r["id"] for r in records]


@pytest.mark.requirement("XTT-1")
def test_list_as_of_shows_the_past_view(
    story: Story, driver: Driver, engine: EngineSession
) -> None:
    past = engine.call("list", as_of=story.t0)["records"]
    assert past == [_version_at(driver, i, story.t0)
                    for i in sorted([story.old["id"], story.other["id"]])], (
        f"XTT-1: list as of {story.t0} should hold the two first versions, got {_ids(past)}")
    assert all(r["state"] == "active" for r in past), "XTT-1: the past view shows later states"
    mid = engine.call("list", as_of=story.t1)["records"]
    expected = sorted([story.old["id"], story.other["id"], story.new["id"]])
    assert _ids(mid) == expected, f"XTT-1: list as of {story.t1} gave {_ids(mid)}"
    by_id = {r["id"]: r for r in mid}
    assert by_id[story.old["id"]]["state"] == "superseded", (
        "XTT-1: as of the supersession the old record is not superseded")
    assert by_id[story.other["id"]]["state"] == "active", (
        "XTT-1: the view as of t1 shows an archival made at t2")
    assert engine.call("list", as_of=story.t3)["records"] == engine.call("list")["records"], (
        "XTT-1: the view as of now differs from the latest versions")


@pytest.mark.requirement("XTT-1")
def test_list_as_of_filters_the_past_versions(story: Story, engine: EngineSession) -> None:
    active_then = engine.call("list", as_of=story.t1, state="active")["records"]
    assert _ids(active_then) == sorted([story.other["id"], story.new["id"]]), (
        f"XTT-1: state filter as of t1 gave {_ids(active_then)}")
    archived_then = engine.call("list", as_of=story.t1, state="archived")["records"]
    assert archived_then == [], "XTT-1: the state filter used the latest versions, not the view"
    before_birth = "2025-12-31T00:00:00.000Z"
    assert engine.call("list", as_of=before_birth)["records"] == [], (
        "XTT-1: records born after as_of are in the view")
    tagged = engine.call("list", as_of=story.t0, tag="meetings")["records"]
    assert len(tagged) == 2, "XTT-1: the tag filter lost records of the past view"


@pytest.mark.requirement("XTT-2")
def test_recall_as_of_returns_what_was_believed(story: Story, engine: EngineSession) -> None:
    result = engine.call("recall", query="team standup time", budget_tokens=10000,
                         now=story.t3, as_of=story.t0)
    found = {e["record"]["id"]: e["record"] for e in result["records"]}
    assert story.old["id"] in found, (
        "XTT-2: as of t0 the nine o'clock standup was believed, recall left it out")
    assert found[story.old["id"]]["state"] == "active", (
        "XTT-2: recall as of t0 returned a later version of the old record")
    assert story.new["id"] not in found, "XTT-2: recall as of t0 returned a later record"
    now_result = engine.call("recall", query="team standup time", budget_tokens=10000,
                             now=story.t3, as_of=story.t1)
    later = {e["record"]["id"] for e in now_result["records"]}
    assert story.new["id"] in later and story.old["id"] not in later, (
        f"XTT-2: as of t1 the successor replaced the old record by default (RCL-6), got "
        f"{sorted(later)}")


@pytest.mark.requirement("XTT-3")
@pytest.mark.parametrize("as_of", ["yesterday", "2026-01-01T00:00:00Z", 5])
def test_malformed_as_of_is_an_encoding_error(
    story: Story, engine: EngineSession, as_of: Any
) -> None:
    engine.reject("list", "encoding", as_of=as_of)
    engine.reject("recall", "encoding", query="standup", budget_tokens=100, now=story.t3,
                  as_of=as_of)


@pytest.mark.requirement("XTT-4")
def test_as_of_reads_write_nothing(story: Story, engine: EngineSession) -> None:
    before = snapshot(engine)
    engine.call("list", as_of=story.t1)
    engine.call("recall", query="team standup", budget_tokens=10000, now=story.t3,
                as_of=story.t1)
    assert snapshot(engine) == before, "XTT-4: an as-of read wrote a record version"
