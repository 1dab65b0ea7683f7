"""Recall on the lifecycle's awkward cases: broken transition pairs, superseded records
under ``include_archived``, partners that also match the query, and reinforcement.

Section 13 step 4: a transitional candidate is shown only with its partner, and
only when that partner is stored, transitional and carries the same block; a
partner that was archived is never shown by default. Step 6 fixes the reasons;
step 7 touches every returned record (RCL-14).
"""

from __future__ import annotations

from typing import Any

import pytest

from memspec.conformance import _builders as build
from memspec.conformance._clock import KitClock
from memspec.conformance._machines import fresh_id
from memspec.conformance._session import EngineSession

BIG = 100_000


class States:
    """Records in every lifecycle situation recall has to handle."""

    def __init__(self, engine: EngineSession, clock: KitClock) -> None:
        self.engine, self.clock, self.serial = engine, clock, 0

    def put(self, body: str, **fields: Any) -> dict[str, Any]:
        self.serial += 1
        record = build.record("fact", body, created_at=self.clock.advance(hours=1),
                              provenance={"kind": "observation", "ref": f"states-{self.serial}",
                                          "agent": None}, **fields)
        self.engine.call("put", record=record)
        return record

    def apply(self, proposal: dict[str, Any]) -> None:
        self.engine.call("apply_proposal", proposal=proposal, now=self.clock.advance(seconds=1))

    def transition(self, a: dict[str, Any], b: dict[str, Any]) -> None:
        self.apply(build.proposal("transition", target_id=a["id"], other_id=b["id"],
                                  reason="they disagree"))

    def archive(self, record: dict[str, Any]) -> None:
        self.apply(build.proposal("archive", target_id=record["id"], reason="withdrawn"))

    def entries(self, query: str, **flags: bool) -> dict[str, dict[str, Any]]:
        result = self.engine.call("recall", query=query, budget_tokens=BIG,
                                  now=self.clock.advance(seconds=1), **flags)
        return {e["record"]["id"]: e for e in result["records"]}

    def touch(self, record: dict[str, Any]) -> int:
        count: int = self.engine.call("touch", id=record["id"],
                                      now=self.clock.advance(seconds=1))["count"]
        return count


@pytest.fixture
def states(engine: EngineSession, clock: KitClock) -> States:
    return States(engine, clock)


def _lone(states: States) -> dict[str, tuple[dict[str, Any], dict[str, Any] | None]]:
    """Transitional records that cannot be shown with their other side, by situation."""
    out: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {}
    side = states.put("the quarterly report goes to the auditors on friday")
    gone = states.put("nothing is sent out this quarter")
    states.transition(side, gone)
    states.archive(gone)
    out["its partner was archived"] = (side, gone)
    orphan_at = states.clock.advance(hours=1)
    orphan = build.record("fact", "the quarterly report goes to the board in person",
                          created_at=orphan_at)
    missing = fresh_id("never stored partner")
    orphan = build.evolve(orphan, states.clock.advance(seconds=1), state="transitional",
                          transition=build.transition_block(orphan["id"], missing, "disputed"))
    states.engine.call("put", record=build.record(
        "fact", "the quarterly report goes to the board in person", created_at=orphan_at))
    states.engine.call("put", record=orphan)
    out["its partner is not stored"] = (orphan, None)
    first = states.put("the quarterly report is printed on recycled paper")
    second = states.put("paper is ordered in bulk")
    third = states.put("printing happens offsite")
    states.transition(second, third)
    later = states.clock.advance(seconds=1)
    stray = build.evolve(first, later, state="transitional",
                         transition=build.transition_block(first["id"], second["id"],
                                                           "disputed"))
    states.engine.call("put", record=stray)
    out["its partner carries another block"] = (stray, second)
    return out


@pytest.mark.requirement("RCL-5")
def test_a_transitional_record_is_never_shown_without_its_other_side(states: States) -> None:
    lone = _lone(states)
    for flags in ({}, {"include_archived": True}, {"include_history": True}):
        found = states.entries("quarterly report", **flags)
        for situation, (side, partner) in lone.items():
            if side["id"] not in found:
                continue
            assert partner is not None and partner["id"] in found, (
                f"RCL-5: recall({flags}) returned the transitional record {side['id']} "
                f"(reasons {found[side['id']]['reasons']}) without its other side, although "
                f"{situation}; a side that cannot be shown with its other side is skipped "
                "(section 13 step 4)"
            )


@pytest.mark.requirement("RCL-8")
def test_an_archived_partner_is_not_pulled_in(states: States) -> None:
    side = states.put("the release train leaves every second tuesday")
    partner = states.put("trains were cancelled for good")
    states.transition(side, partner)
    states.archive(partner)
    found = states.entries("release train tuesday")
    assert partner["id"] not in found, (
        f"RCL-8: default recall returned the archived record {partner['id']} as "
        f"{found.get(partner['id'], {}).get('reasons')}: an archived record is excluded "
        "unless include_archived is true, also as a transition partner"
    )


@pytest.mark.requirement("RCL-6")
def test_include_archived_does_not_admit_superseded_records(states: States) -> None:
    old = states.put("the guest wifi password is swordfish")
    new = states.put("the guest wifi password is marlin now", supersedes=old["id"])
    states.engine.call("put", record=build.evolve(
        old, states.clock.advance(seconds=1), state="superseded", superseded_by=new["id"],
        state_reason="rotated"))
    retired = states.put("the guest wifi was switched off in winter")
    states.archive(retired)
    found = states.entries("guest wifi password", include_archived=True)
    assert retired["id"] in found, "RCL-6: include_archived left out the archived match"
    assert old["id"] not in found, (
        f"RCL-6: recall with include_archived (and without include_history) returned the "
        f"superseded record {old['id']}; only include_history admits superseded records"
    )


@pytest.mark.requirement("RCL-11")
def test_a_partner_that_also_matches_carries_both_reasons(states: States) -> None:
    strong = states.put("the staging cluster runs in frankfurt, the staging cluster")
    weak = states.put("the staging cluster moved to dublin")
    states.transition(strong, weak)
    found = states.entries("staging cluster frankfurt")
    assert {strong["id"], weak["id"]} <= set(found), "RCL-11: the pair was not recalled"
    reasons = sorted((found[strong["id"]]["reasons"], found[weak["id"]]["reasons"]), key=len)
    assert reasons == [["query-match"], ["query-match", "transition-partner"]], (
        f"RCL-11: both sides match the query; the one taken first is a query-match and the "
        f"other, pulled in as its partner, is [query-match, transition-partner] in that "
        f"order; got {found[strong['id']]['reasons']} and {found[weak['id']]['reasons']}"
    )


@pytest.mark.requirement("RCL-14")
def test_recall_touches_every_returned_record(states: States) -> None:
    side = states.put("the on-call phone is charged in the server room")
    partner = states.put("it charges at the front desk")
    states.transition(side, partner)
    old = states.put("the spare phone is in the drawer")
    new = states.put("the spare phone is in the server room", supersedes=old["id"])
    states.engine.call("put", record=build.evolve(
        old, states.clock.advance(seconds=1), state="superseded", superseded_by=new["id"],
        state_reason="moved"))
    bystander = states.put("the kettle descaler is under the sink")
    first = states.entries("phone server room", include_history=True)
    second = states.entries("phone server room", include_history=True)
    returned = [r for r in (side, partner, new, old) if r["id"] in first]
    assert set(first) == set(second) and len(returned) == 4, (
        "RCL-14: kit data: the pair, the successor and its predecessor should all be recalled"
    )
    for record in returned:
        reasons = first[record["id"]]["reasons"]
        count = states.touch(record)
        assert count == 3, (
            f"RCL-14: {record['id']} (returned twice, as {reasons}) has touch count {count} "
            "after one more touch, expected 3: every returned record is touched at now, "
            "partners and predecessors included"
        )
    assert states.touch(bystander) == 1, (
        "RCL-14: a record recall did not return was touched"
    )
