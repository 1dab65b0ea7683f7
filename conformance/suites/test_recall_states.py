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
from memspec.conformance._driver import Driver
from memspec.conformance._machines import fresh_id


@pytest.fixture
def driver(driver: Driver) -> Driver:
    """The kit's driver, with this suite's provenance refs (states-1, ...); each record is
    born an hour after the one before."""
    return driver.configured(ref_prefix="states", birth_step=3600)


def _entries(driver: Driver, query: str, **flags: bool) -> dict[str, dict[str, Any]]:
    """Recall entries by record id, a second after the last step."""
    return driver.entries(query, now=driver.clock.advance(seconds=1), **flags)


def _lone(driver: Driver) -> dict[str, tuple[dict[str, Any], dict[str, Any] | None]]:
    """Transitional records that cannot be shown with their other side, by situation."""
    out: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {}
    side = driver.put("the quarterly report goes to the auditors on friday")
    gone = driver.put("nothing is sent out this quarter")
    driver.transition(side, gone)
    driver.archive(gone["id"], "withdrawn")
    out["its partner was archived"] = (side, gone)
    orphan_at = driver.clock.advance(hours=1)
    orphan = build.record("fact", "the quarterly report goes to the board in person",
                          created_at=orphan_at)
    missing = fresh_id("never stored partner")
    orphan = build.evolve(orphan, driver.clock.advance(seconds=1), state="transitional",
                          transition=build.transition_block(orphan["id"], missing, "disputed"))
    driver.engine.call("put", record=build.record(
        "fact", "the quarterly report goes to the board in person", created_at=orphan_at))
    driver.engine.call("put", record=orphan)
    out["its partner is not stored"] = (orphan, None)
    first = driver.put("the quarterly report is printed on recycled paper")
    second = driver.put("paper is ordered in bulk")
    third = driver.put("printing happens offsite")
    driver.transition(second, third)
    later = driver.clock.advance(seconds=1)
    stray = build.evolve(first, later, state="transitional",
                         transition=build.transition_block(first["id"], second["id"],
                                                           "disputed"))
    driver.engine.call("put", record=stray)
    out["its partner carries another block"] = (stray, second)
    return out


@pytest.mark.requirement("RCL-5")
def test_a_transitional_record_is_never_shown_without_its_other_side(driver: Driver) -> None:
    lone = _lone(driver)
    for flags in ({}, {"include_archived": True}, {"include_history": True}):
        found = _entries(driver, "quarterly report", **flags)
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
def test_an_archived_partner_is_not_pulled_in(driver: Driver) -> None:
    side = driver.put("the release train leaves every second tuesday")
    partner = driver.put("trains were cancelled for good")
    driver.transition(side, partner)
    driver.archive(partner["id"], "withdrawn")
    found = _entries(driver, "release train tuesday")
    assert partner["id"] not in found, (
        f"RCL-8: default recall returned the archived record {partner['id']} as "
        f"{found.get(partner['id'], {}).get('reasons')}: an archived record is excluded "
        "unless include_archived is true, also as a transition partner"
    )


@pytest.mark.requirement("RCL-6")
def test_include_archived_does_not_admit_superseded_records(driver: Driver) -> None:
    old = driver.put("the guest wifi password is swordfish")
    new = driver.put("the guest wifi password is marlin now", supersedes=old["id"])
    driver.engine.call("put", record=build.evolve(
        old, driver.clock.advance(seconds=1), state="superseded", superseded_by=new["id"],
        state_reason="rotated"))
    retired = driver.put("the guest wifi was switched off in winter")
    driver.archive(retired["id"], "withdrawn")
    found = _entries(driver, "guest wifi password", include_archived=True)
    assert retired["id"] in found, "RCL-6: include_archived left out the archived match"
    assert old["id"] not in found, (
        f"RCL-6: recall with include_archived (and without include_history) returned the "
        f"superseded record {old['id']}; only include_history admits superseded records"
    )


@pytest.mark.requirement("RCL-11")
def test_a_partner_that_also_matches_carries_both_reasons(driver: Driver) -> None:
    strong = driver.put("the staging cluster runs in frankfurt, the staging cluster")
    weak = driver.put("the staging cluster moved to dublin")
    driver.transition(strong, weak)
    found = _entries(driver, "staging cluster frankfurt")
    assert {strong["id"], weak["id"]} <= set(found), "RCL-11: the pair was not recalled"
    reasons = sorted((found[strong["id"]]["reasons"], found[weak["id"]]["reasons"]), key=len)
    assert reasons == [["query-match"], ["query-match", "transition-partner"]], (
        f"RCL-11: both sides match the query; the one taken first is a query-match and the "
        f"other, pulled in as its partner, is [query-match, transition-partner] in that "
        f"order; got {found[strong['id']]['reasons']} and {found[weak['id']]['reasons']}"
    )


@pytest.mark.requirement("RCL-14")
def test_recall_touches_every_returned_record(driver: Driver) -> None:
    side = driver.put("the on-call phone is charged in the server room")
    partner = driver.put("it charges at the front desk")
    driver.transition(side, partner)
    old = driver.put("the spare phone is in the drawer")
    new = driver.put("the spare phone is in the server room", supersedes=old["id"])
    driver.engine.call("put", record=build.evolve(
        old, driver.clock.advance(seconds=1), state="superseded", superseded_by=new["id"],
        state_reason="moved"))
    bystander = driver.put("the kettle descaler is under the sink")
    first = _entries(driver, "phone server room", include_history=True)
    second = _entries(driver, "phone server room", include_history=True)
    returned = [r for r in (side, partner, new, old) if r["id"] in first]
    assert set(first) == set(second) and len(returned) == 4, (
        "RCL-14: kit data: the pair, the successor and its predecessor should all be recalled"
    )
    for record in returned:
        reasons = first[record["id"]]["reasons"]
        count = driver.touch(record["id"])
        assert count == 3, (
            f"RCL-14: {record['id']} (returned twice, as {reasons}) has touch count {count} "
            "after one more touch, expected 3: every returned record is touched at now, "
            "partners and predecessors included"
        )
    assert driver.touch(bystander["id"]) == 1, (
        "RCL-14: a record recall did not return was touched"
    )
