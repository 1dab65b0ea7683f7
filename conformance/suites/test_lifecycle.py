"""Lifecycle behaviour through the store: proposals, resolution and rule flags.

A hypothesis state machine drives random legal and illegal steps against a model
(``memspec.conformance._machines.LifecycleMachine``); the example tests below pin
each requirement on its own so a faulty engine fails the test naming it.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis.stateful import run_state_machine_as_test

from memspec import is_reason
from memspec.conformance import _builders as build
from memspec.conformance._clock import KitClock
from memspec.conformance._driver import Driver
from memspec.conformance._machines import (
    LEGAL_TRANSITIONS,
    LifecycleMachine,
    attempt,
    canon,
    check_version,
    expect_rejected,
    fresh_id,
    kit_settings,
    version_problems,
)
from memspec.conformance._outcomes import RequirementFailed
from memspec.conformance._session import EngineSession
from memspec.data import record_states

_STATES = record_states()


# -- the state machine ------------------------------------------------------------------


@pytest.mark.requirement("LC-1", "LC-2", "LC-4", "OP-2", "OP-3")
def test_lifecycle_state_machine(engine: EngineSession, clock: KitClock) -> None:
    """Random legal and illegal steps: legal ones applied exactly, illegal ones write nothing.

    The machine checks every lifecycle requirement and its failure message names the one
    broken; the test is marked with the requirements it is the main evidence for (legal
    moves only, archived terminal, nothing deleted, nothing written or repaired for an
    invalid step), and the example tests below mark the rest one by one.
    """
    # hypothesis takes any factory of machines; its annotation names only classes.
    run_state_machine_as_test(lambda: LifecycleMachine(engine, clock),  # type: ignore[arg-type]
                              settings=kit_settings())


# -- legality ----------------------------------------------------------------------------


@pytest.mark.requirement("LC-1", "LC-2")
def test_is_legal_matches_the_table(engine: EngineSession) -> None:
    for old in _STATES:
        for new in _STATES:
            answer = engine.call("is_legal", **{"from": old, "to": new})["legal"]
            expected = (old, new) in LEGAL_TRANSITIONS
            if answer is not expected:
                raise RequirementFailed("LC-2" if old == "archived" else "LC-1",
                                        f"is_legal({old} -> {new}) answered {answer!r}, the "
                                        f"legality table says {expected}")


@pytest.mark.requirement("LC-2")
def test_archived_is_terminal(driver: Driver, engine: EngineSession, clock: KitClock) -> None:
    gone = driver.create()
    other = driver.create("standup starts at nine")
    driver.archive(gone["id"])
    now = clock.advance(seconds=1)
    successor = driver.new("the kettle is back", supersedes=gone["id"])
    cases = {
        "archive of an archived record": build.proposal("archive", target_id=gone["id"],
                                                        reason="again"),
        "supersede of an archived record": build.proposal("supersede", successor,
                                                          target_id=gone["id"],
                                                          reason="it came back"),
        "transition with an archived record": build.proposal(
            "transition", target_id=gone["id"], other_id=other["id"], reason="conflict"),
    }
    for what, proposal in cases.items():
        expect_rejected(engine, "apply_proposal", "lifecycle", "LC-2", what,
                        proposal=proposal, now=now)
    assert driver.get(gone["id"])["state"] == "archived", "LC-2: an archived record left archived"


@pytest.mark.requirement("LC-3")
def test_every_state_change_needs_a_reason(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    old = driver.create()
    other = driver.create("standup starts at nine")
    now = clock.advance(seconds=1)
    for reason in ("", "   "):
        successor = driver.new("the kettle moved", supersedes=old["id"])
        for what, proposal in {
            "supersede": build.proposal("supersede", successor, target_id=old["id"],
                                        reason=reason),
            "archive": build.proposal("archive", target_id=old["id"], reason=reason),
            "transition": build.proposal("transition", target_id=old["id"],
                                         other_id=other["id"], reason=reason),
        }.items():
            expect_rejected(engine, "apply_proposal", "proposal", "LC-3",
                            f"{what} with reason {reason!r}", proposal=proposal, now=now)
    a, b = driver.pair()
    expect_rejected(engine, "resolve", "lifecycle", "LC-3",
                    "resolution with an empty reason", winner_id=a["id"], loser_id=b["id"],
                    reason="", now=clock.advance(seconds=1))


@pytest.mark.requirement("LC-3", "LC-5", "SUP-2")
def test_supersede_writes_the_exact_versions(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    old = driver.create()
    successor = driver.new("the kettle is in the right cupboard", supersedes=old["id"])
    now = clock.advance(seconds=1)
    written = engine.call("apply_proposal", proposal=build.proposal(
        "supersede", successor, target_id=old["id"], reason="the kettle moved"), now=now)
    by_id = {w["id"]: w for w in written["written"]}
    if set(by_id) != {old["id"], successor["id"]}:
        raise RequirementFailed(
            "LC-5", f"supersede should write the successor and a new version of the old record, "
            f"wrote {list(by_id)}")
    if canon(by_id[successor["id"]]) != canon(successor):
        raise RequirementFailed("OP-3", "the successor was written altered")
    problems = version_problems(old, driver.get(old["id"]), now, {
        "state": ("superseded", "SUP-2"), "superseded_by": (successor["id"], "SUP-2"),
        "state_reason": ("the kettle moved", "LC-3")})
    check_version("the new version", problems)
    if driver.get(successor["id"])["supersedes"] != old["id"]:
        raise RequirementFailed(
            "SUP-1", "the stored successor does not name the old record in supersedes")


@pytest.mark.requirement("SUP-1")
def test_supersede_without_back_reference_is_rejected(driver: Driver, engine: EngineSession,
                                                      clock: KitClock) -> None:
    old = driver.create()
    elsewhere = driver.create("standup starts at nine")
    now = clock.advance(seconds=1)
    for link in (None, elsewhere["id"]):
        successor = driver.new("the kettle moved", supersedes=link)
        expect_rejected(engine, "apply_proposal", "lifecycle", "SUP-1",
                        f"a successor whose supersedes is {link!r} instead of the old record",
                        proposal=build.proposal("supersede", successor, target_id=old["id"],
                                                reason="moved"), now=now)
    assert driver.get(old["id"])["state"] == "active", "SUP-1: the old record was superseded"


@pytest.mark.requirement("OP-6", "SUP-1")
def test_a_successor_must_be_a_new_record(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    old = driver.create()
    stored = driver.create("the kettle is in the right cupboard")
    for what, successor in (
            ("an already stored record", {**stored, "supersedes": old["id"]}),
            ("a new version of an already stored record",
             build.evolve(stored, clock.advance(seconds=1), supersedes=old["id"]))):
        expect_rejected(engine, "apply_proposal", "proposal", "OP-6",
                        f"a supersede whose successor is {what}",
                        proposal=build.proposal("supersede", successor, target_id=old["id"],
                                                reason="moved"), now=clock.advance(seconds=1))


@pytest.mark.requirement("SUP-5", "LC-1")
def test_only_active_records_are_superseded(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    a, _ = driver.pair()
    gone = driver.create("standup starts at nine")
    driver.supersede(gone, "standup starts at ten", "moved")
    for target, state in ((a, "transitional"), (gone, "superseded")):
        successor = driver.new(f"a successor of a {state} record", supersedes=target["id"])
        expect_rejected(engine, "apply_proposal", "lifecycle", "SUP-5",
                        f"supersede of a {state} record",
                        proposal=build.proposal("supersede", successor, target_id=target["id"],
                                                reason="newer"),
                        now=clock.advance(seconds=1))


@pytest.mark.requirement("TRN-3", "LC-5")
def test_transition_marks_both_sides(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    a = driver.create("the staging database is Postgres")
    b = driver.create("the staging database is not Postgres")
    now = clock.advance(seconds=1)
    result = engine.call("apply_proposal", proposal=build.proposal(
        "transition", target_id=a["id"], other_id=b["id"], reason="they disagree"), now=now)
    if sorted(w["id"] for w in result["written"]) != sorted([a["id"], b["id"]]):
        raise RequirementFailed("TRN-3", "a transition should write a new version of both sides")
    block = build.transition_block(a["id"], b["id"], "they disagree")
    for side in (a, b):
        problems = version_problems(side, driver.get(side["id"]), now, {
            "state": ("transitional", "TRN-3"), "transition": (block, "TRN-3")})
        check_version("the new version", problems)


@pytest.mark.requirement("TRN-4")
def test_transition_needs_two_distinct_active_records(driver: Driver, engine: EngineSession,
                                                      clock: KitClock) -> None:
    a = driver.create()
    b, _ = driver.pair()
    gone = driver.create("tea before coffee")
    driver.archive(gone["id"])
    for what, other in (("itself", a), ("a transitional record", b),
                        ("an archived record", gone)):
        expect_rejected(engine, "apply_proposal", "lifecycle", "TRN-4",
                        f"transition of an active record with {what}",
                        proposal=build.proposal("transition", target_id=a["id"],
                                                other_id=other["id"], reason="conflict"),
                        now=clock.advance(seconds=1))


@pytest.mark.requirement("RES-1")
def test_resolution_names_the_two_sides_of_one_transition(driver: Driver, engine: EngineSession,
                                                          clock: KitClock) -> None:
    a, b = driver.pair()
    c = driver.create("the kettle is in the left cupboard")
    d = driver.create("the kettle is not in the left cupboard")
    driver.apply(build.proposal("transition", target_id=c["id"], other_id=d["id"],
                                reason="kettle dispute"))
    active = driver.create("standup starts at nine")
    for what, winner, loser in (("sides of two different transitions", a, c),
                                ("a record and itself", a, a),
                                ("an active record", active, a)):
        expect_rejected(engine, "resolve", "lifecycle", "RES-1", f"resolution of {what}",
                        winner_id=winner["id"], loser_id=loser["id"], reason="settled",
                        now=clock.advance(seconds=1))
    assert driver.get(b["id"])["state"] == "transitional", "RES-1: a rejected resolution wrote"


@pytest.mark.requirement("RES-2", "RES-3", "LC-4")
def test_resolution_outcome_and_loser_history(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    a, b = driver.pair()
    won_before, lost_before = driver.get(a["id"]), driver.get(b["id"])
    now = clock.advance(seconds=1)
    result = engine.call("resolve", winner_id=a["id"], loser_id=b["id"],
                         reason="the config file says Postgres", now=now)
    if sorted(w["id"] for w in result["written"]) != sorted([a["id"], b["id"]]):
        raise RequirementFailed(
            "RES-2", "resolution should write one new version of the winner and of the loser")
    problems = version_problems(won_before, driver.get(a["id"]), now, {
        "state": ("active", "RES-2"), "transition": (None, "RES-2"),
        "state_reason": ("the config file says Postgres", "RES-2")})
    problems += version_problems(lost_before, driver.get(b["id"]), now, {
        "state": ("superseded", "RES-2"), "transition": (None, "RES-2"),
        "superseded_by": (a["id"], "RES-2"),
        "state_reason": ("the config file says Postgres", "RES-2")})
    check_version("the new version", problems)
    states = [v["state"] for v in driver.history(b["id"])]
    if states != ["active", "transitional", "superseded"]:
        raise RequirementFailed(
            "RES-3",
            f"the loser's history should be active, transitional, superseded; it is {states}")
    if canon(driver.history(b["id"])[0]) != canon(b):
        raise RequirementFailed(
            "RES-3", "the loser's first version is no longer the record as born")


@pytest.mark.requirement("LC-4", "LC-5")
def test_superseded_and_archived_records_keep_their_history(
    driver: Driver, engine: EngineSession
) -> None:
    old = driver.create()
    successor = driver.supersede(old)
    driver.archive(old["id"], "old news")
    driver.archive(successor["id"], "kettle sold")
    for record, states in ((old, ["active", "superseded", "archived"]),
                           (successor, ["active", "archived"])):
        versions = driver.history(record["id"])
        if [v["state"] for v in versions] != states:
            raise RequirementFailed(
                "LC-4", f"history of {record['id']} is {[v['state'] for v in versions]}, "
                f"expected {states}")
        if canon(versions[0]) != canon(record):
            raise RequirementFailed("LC-4", "the birth version was altered")
        if not all(v["id"] == record["id"] for v in versions):
            raise RequirementFailed("LC-5", "a version changed its id")
        stamps = [v["updated_at"] for v in versions]
        if not (stamps == sorted(stamps) and len(set(stamps)) == len(stamps)):
            raise RequirementFailed(
                "LC-5", f"updated_at does not move forward with each change: {stamps}")


# -- proposals ---------------------------------------------------------------------------


@pytest.mark.requirement("OP-1")
def test_unknown_proposal_kinds_are_rejected(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    target = driver.create()
    for kind in ("delete", "redact", "update", "merge", "resolve", "CREATE", ""):
        expect_rejected(engine, "apply_proposal", "proposal", "OP-1",
                        f"a proposal of kind {kind!r}",
                        proposal=build.proposal(kind, target_id=target["id"], reason="x"),
                        now=clock.advance(seconds=1))


@pytest.mark.requirement("OP-2", "OP-3")
def test_invalid_proposals_are_not_repaired(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    old = driver.create()
    other = driver.create("standup starts at nine")
    unlinked = driver.new("the kettle moved")
    now = clock.advance(seconds=1)
    cases: list[tuple[str, str | tuple[str, ...], dict[str, Any]]] = [
        ("a supersede whose successor does not name the old record", "lifecycle",
         build.proposal("supersede", unlinked, target_id=old["id"], reason="moved")),
        ("a supersede without a reason", "proposal",
         build.proposal("supersede", driver.new("moved", supersedes=old["id"]),
                        target_id=old["id"])),
        ("an archive without a reason", "proposal",
         build.proposal("archive", target_id=old["id"])),
        ("a transition naming one record twice", "lifecycle",
         build.proposal("transition", target_id=other["id"], other_id=other["id"],
                        reason="conflict")),
        ("a create of a rule without evidence", "record",
         build.proposal("create", driver.new("always do this", "rule"))),
    ]
    for what, classes, proposal in cases:
        expect_rejected(engine, "apply_proposal", classes, "OP-3", what, proposal=proposal,
                        now=now)
    if [driver.get(r["id"])["state"] for r in (old, other)] != ["active", "active"]:
        raise RequirementFailed("OP-3", "an invalid proposal changed a record")
    # A create of a record that is not newborn: refusing it is OP-6's (its own test and
    # vectors); writing it altered, made newborn, is a repair, and OP-3's alone.
    born_archived = {**driver.new("the old office closed"), "state": "archived",
                     "state_reason": "the office closed"}
    result, _ = attempt(engine, "apply_proposal",
                        proposal=build.proposal("create", born_archived),
                        now=clock.advance(seconds=1))
    for written in (result or {}).get("written", []):
        if written.get("id") == born_archived["id"] and canon(written) != canon(born_archived):
            raise RequirementFailed("OP-3", f"a create of an archived record was repaired and "
                                    f"applied: it wrote state {written.get('state')!r}")


@pytest.mark.requirement("OP-6")
def test_create_needs_a_new_record_born_active(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    stored = driver.create()
    now = clock.advance(seconds=1)
    expect_rejected(engine, "apply_proposal", "proposal", "OP-6",
                    "a create of an id already in the store",
                    proposal=build.proposal("create", stored), now=now)
    not_born: dict[str, dict[str, Any]] = {
        "state superseded": {"state": "superseded", "superseded_by": fresh_id("s"),
                             "state_reason": "old"},
        "state archived": {"state": "archived", "state_reason": "old"},
        "updated_at after created_at": {"updated_at": clock.at(400)},
        "a transition block": {"state": "transitional", "transition": build.transition_block(
            fresh_id("t"), fresh_id("u"), "x")},
    }
    for what, changes in not_born.items():
        record = {**driver.new("the kettle is here"), **changes}
        if "transition" in changes:
            record["transition"]["sides"][0] = record["id"]
        expect_rejected(engine, "apply_proposal", "proposal", "OP-6",
                        f"a create of a record not born active ({what})",
                        proposal=build.proposal("create", record), now=now)


@pytest.mark.requirement("OP-6")
def test_rule_without_evidence_is_rejected(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    # RULE-1 itself is a format rule, judged by the record vectors; here it is the create
    # proposal's record that must be valid (OP-6), judged with lifecycle operations.
    expect_rejected(engine, "apply_proposal", "record", "OP-6",
                    "a create of a rule with empty evidence",
                    proposal=build.proposal("create", driver.new("always lock the door", "rule")),
                    now=clock.advance(seconds=1))


# -- rule flags (the pure refresh operation) ----------------------------------------------


def _refresh(
    engine: EngineSession, clock: KitClock, rule: dict[str, Any], evidence: list[dict[str, Any]],
    missing: list[str]) -> dict[str, Any]:
    result = engine.call("lifecycle", operation="refresh_rule_flag",
                         records=[rule, *evidence], missing=missing, now=clock.advance(seconds=1))
    (refreshed,) = result["records"]
    assert isinstance(refreshed, dict)
    return refreshed


@pytest.mark.requirement("RULE-2", "RULE-6")
def test_rule_flagged_when_no_evidence_is_live(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    e1 = driver.create("standup ran long on monday")
    e2 = driver.create("standup ran long on friday")
    driver.supersede(e1, "standup ran long on monday and tuesday", "more detail")
    driver.archive(e2["id"])
    ghost = fresh_id("missing-evidence")
    rule = driver.new("standups run long", "rule", evidence=[e1["id"], e2["id"], ghost])
    for state_changes in ({}, {"state": "transitional"}):
        subject = dict(rule)
        if state_changes:
            subject = {**rule, "state": "transitional", "transition": build.transition_block(
                rule["id"], fresh_id("other-side"), "dispute")}
        refreshed = _refresh(engine, clock, subject, [driver.get(e1["id"]), driver.get(e2["id"])],
                             [ghost])
        if refreshed["flagged"] is not True:
            raise RequirementFailed(
                "RULE-2",
                "a rule whose evidence is superseded, archived or missing was not flagged")
        if not is_reason(refreshed["flag_reason"]):
            raise RequirementFailed("RULE-2", "a flagged rule carries no flag_reason")
        if refreshed["state"] != subject["state"]:
            raise RequirementFailed(
                "RULE-6",
                f"flagging moved the rule from {subject['state']} to {refreshed['state']}")


@pytest.mark.requirement("RULE-3")
def test_rule_flag_cleared_when_evidence_is_live(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    live = driver.create("standup ran long on monday")
    dead = driver.create("standup ran long on friday")
    driver.archive(dead["id"])
    flagged = {**driver.new("standups run long", "rule", evidence=[live["id"], dead["id"]]),
               "flagged": True, "flag_reason": "evidence was invalidated"}
    a, _ = driver.pair()
    for evidence in (driver.get(live["id"]), driver.get(a["id"])):
        rule = {**flagged, "evidence": [evidence["id"], dead["id"]]}
        refreshed = _refresh(engine, clock, rule, [evidence, driver.get(dead["id"])], [])
        assert refreshed["flagged"] is False and refreshed["flag_reason"] is None, (
            f"RULE-3: a flagged rule with {evidence['state']} evidence kept flagged="
            f"{refreshed['flagged']!r}, flag_reason={refreshed['flag_reason']!r}"
        )


@pytest.mark.requirement("RULE-5")
def test_partial_evidence_set_is_rejected(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    e1 = driver.create("standup ran long on monday")
    e2 = driver.create("standup ran long on friday")
    rule = driver.new("standups run long", "rule", evidence=[e1["id"], e2["id"]])
    expect_rejected(engine, "lifecycle", "lifecycle", "RULE-5",
                    "flag evaluation given one of two evidence records",
                    operation="refresh_rule_flag", records=[rule, e1], missing=[],
                    now=clock.advance(seconds=1))


@pytest.mark.requirement("RULE-4")
@pytest.mark.profile("lifecycle")
def test_only_rules_are_flagged(driver: Driver, engine: EngineSession, clock: KitClock) -> None:
    fact = driver.create("standup ran long on monday")
    expect_rejected(engine, "lifecycle", "lifecycle", "RULE-4",
                    "flag evaluation of a fact (only rules carry flags)",
                    operation="refresh_rule_flag", records=[fact], missing=[],
                    now=clock.advance(seconds=1))
