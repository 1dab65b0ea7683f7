"""The lifecycle machine: the legality table from package data, and the pure functions."""

from __future__ import annotations

from typing import Any

import pytest

from memspec import LifecycleError, SigningKey
from memspec.data import json_resource
from memspec.reference.lifecycle import (
    FLAG_REASON,
    LEGAL_TRANSITIONS,
    archive,
    assert_transition,
    begin_transition,
    is_legal,
    refresh_rule_flag,
    resolve_transition,
    supersede,
)
from memspec.reference.records import MemoryRecord, RecordState, Transition

from .conftest import at, new_record, published_vectors

_TABLE: list[dict[str, Any]] = json_resource("spec", "legality.json")["transitions"]
_ILLEGAL = [(row["from"], row["to"]) for row in _TABLE if not row["legal"]]


def _pair_id(row: dict[str, Any]) -> str:
    return f"{row['from']}->{row['to']}"


def _in_state(state: str, *, body: str = "The sky is blue.") -> MemoryRecord:
    """A record in ``state`` reached through the lifecycle functions themselves."""
    record = new_record(body)
    if state == "active":
        return record
    if state == "archived":
        return archive(record, reason="stale", now=at(2))
    if state == "superseded":
        successor = new_record(body + " (revised)", supersedes=record.id)
        return supersede(record, successor, reason="revised", now=at(2))
    other = new_record("The other side.")
    return begin_transition(record, other, reason="conflict", now=at(2))[0]


def test_table_covers_all_sixteen_pairs() -> None:
    states = [s.value for s in RecordState]
    assert sorted(_pair_id(row) for row in _TABLE) == sorted(
        f"{a}->{b}" for a in states for b in states)


def test_legal_transitions_are_the_package_data_table() -> None:
    assert {(a.value, b.value) for a, b in LEGAL_TRANSITIONS} == {
        (row["from"], row["to"]) for row in _TABLE if row["legal"]}


def test_table_agrees_with_published_legality_vectors() -> None:
    published = published_vectors()["lifecycle"]["legality"]
    assert {(r["from"], r["to"]): r["legal"] for r in published} == {
        (r["from"], r["to"]): r["legal"] for r in _TABLE}


@pytest.mark.parametrize("row", _TABLE, ids=_pair_id)
def test_is_legal_and_assert_transition_follow_the_table(row: dict[str, Any]) -> None:
    assert is_legal(row["from"], row["to"]) is row["legal"]
    assert is_legal(RecordState(row["from"]), RecordState(row["to"])) is row["legal"]
    if row["legal"]:
        assert_transition(row["from"], row["to"])
    else:
        with pytest.raises(LifecycleError):
            assert_transition(row["from"], row["to"])


@pytest.mark.parametrize("pair", [("active", "deleted"), ("gone", "active")])
def test_unknown_state_names_are_rejected(pair: tuple[str, str]) -> None:
    with pytest.raises(LifecycleError):
        is_legal(*pair)


def test_archived_is_terminal() -> None:
    with pytest.raises(LifecycleError) as info:
        assert_transition("archived", "active")
    assert info.value.requirement == "LC-2"


@pytest.mark.parametrize("pair", _ILLEGAL, ids=lambda p: f"{p[0]}->{p[1]}")
def test_every_illegal_pair_is_refused_by_the_functions(pair: tuple[str, str]) -> None:
    source, target = pair
    record = _in_state(source)
    with pytest.raises(LifecycleError):
        if target == "archived":
            archive(record, reason="again", now=at(3))
        elif target == "superseded":
            supersede(record, new_record("Next.", supersedes=record.id), reason="r", now=at(3))
        elif target == "transitional":
            begin_transition(record, new_record("Other."), reason="r", now=at(3))
        else:  # -> active happens only through resolution
            resolve_transition(record, new_record("Other."), reason="r", now=at(3))


def test_supersede() -> None:
    key = SigningKey.from_hex("44" * 32)
    old = new_record().sign(key)
    successor = new_record("The sky is grey today.", supersedes=old.id)
    retired = supersede(old, successor, reason="weather changed", now=at(2))
    assert retired.id == old.id
    assert retired.state is RecordState.SUPERSEDED
    assert retired.superseded_by == successor.id
    assert retired.state_reason == "weather changed"
    assert retired.updated_at == at(2)
    assert retired.signed_by is None and retired.signature == ""
    assert old.verify() is True


def test_supersede_requires_the_successor_to_name_the_old_record() -> None:
    old = new_record()
    with pytest.raises(LifecycleError) as info:
        supersede(old, new_record("Unrelated."), reason="r", now=at(2))
    assert info.value.requirement == "SUP-1"


@pytest.mark.parametrize("reason", ["", "  "])
def test_supersede_requires_a_reason(reason: str) -> None:
    old = new_record()
    with pytest.raises(LifecycleError):
        supersede(old, new_record("Next.", supersedes=old.id), reason=reason, now=at(2))


def test_only_active_records_are_superseded_directly() -> None:
    record = _in_state("transitional")
    with pytest.raises(LifecycleError) as info:
        supersede(record, new_record("Next.", supersedes=record.id), reason="r", now=at(3))
    assert info.value.requirement == "SUP-5"


def test_begin_transition() -> None:
    a, b = new_record(), new_record("The sky is green.")
    a2, b2 = begin_transition(a, b, reason="colour conflict", now=at(2))
    block = Transition((a.id, b.id), "colour conflict")
    for before, after in ((a, a2), (b, b2)):
        assert after.id == before.id and after.updated_at == at(2)
        assert after.state is RecordState.TRANSITIONAL
        assert after.transition == block
        assert after.state_reason == before.state_reason  # the block carries the reason


def test_begin_transition_needs_two_distinct_records_and_a_reason() -> None:
    a = new_record()
    with pytest.raises(LifecycleError):
        begin_transition(a, a, reason="self", now=at(2))
    with pytest.raises(LifecycleError):
        begin_transition(a, new_record("Other."), reason="", now=at(2))


def test_resolve_transition() -> None:
    a, b = begin_transition(new_record(), new_record("The sky is green."), reason="conflict",
                            now=at(2))
    winner, loser = resolve_transition(b, a, reason="checked outside", now=at(3))
    assert winner.state is RecordState.ACTIVE and winner.transition is None
    assert winner.state_reason == "checked outside"
    assert loser.state is RecordState.SUPERSEDED and loser.transition is None
    assert loser.superseded_by == b.id and loser.state_reason == "checked outside"
    assert winner.updated_at == loser.updated_at == at(3)


def test_resolve_transition_needs_the_two_sides_of_one_block() -> None:
    a, b = begin_transition(new_record("A."), new_record("B."), reason="ab", now=at(2))
    c, _ = begin_transition(new_record("C."), new_record("D."), reason="cd", now=at(2))
    with pytest.raises(LifecycleError):
        resolve_transition(a, c, reason="mixed", now=at(3))
    with pytest.raises(LifecycleError):
        resolve_transition(a, a, reason="self", now=at(3))
    with pytest.raises(LifecycleError):
        resolve_transition(a, b, reason="", now=at(3))
    with pytest.raises(LifecycleError):
        resolve_transition(a, new_record("Active."), reason="r", now=at(3))


@pytest.mark.parametrize("state", ["active", "transitional", "superseded"])
def test_archive(state: str) -> None:
    record = _in_state(state)
    archived = archive(record, reason="decayed", now=at(4))
    assert archived.state is RecordState.ARCHIVED and archived.transition is None
    assert archived.state_reason == "decayed" and archived.id == record.id


def test_archive_requires_a_reason() -> None:
    with pytest.raises(LifecycleError):
        archive(new_record(), reason="", now=at(2))


def _rule(*evidence: MemoryRecord) -> MemoryRecord:
    return MemoryRecord.create("rule", "Check the sky before leaving.",
                               {"kind": "consolidation"}, created_at=at(1),
                               evidence=[e.id for e in evidence])


def test_rule_is_flagged_when_no_evidence_is_live() -> None:
    e1, e2 = new_record("E1."), new_record("E2.")
    rule = _rule(e1, e2)
    gone = archive(e1, reason="stale", now=at(2))
    flagged = refresh_rule_flag(rule, {e1.id: gone, e2.id: None}, now=at(3))
    assert flagged.flagged is True and flagged.flag_reason == FLAG_REASON
    assert flagged.state is rule.state and flagged.updated_at == at(3)
    cleared = refresh_rule_flag(flagged, {e1.id: gone, e2.id: e2}, now=at(4))
    assert cleared.flagged is False and cleared.flag_reason is None


def test_a_given_reason_becomes_the_flag_reason() -> None:
    e1 = new_record("E1.")
    flagged = refresh_rule_flag(_rule(e1), {e1.id: None}, now=at(2), reason="source retracted")
    assert flagged.flag_reason == "source retracted"
    again = refresh_rule_flag(flagged, {e1.id: None}, now=at(3), reason="another reason")
    assert again is flagged


def test_transitional_evidence_is_live() -> None:
    e1 = new_record("E1.")
    rule = _rule(e1)
    disputed = begin_transition(e1, new_record("Other."), reason="r", now=at(2))[0]
    assert refresh_rule_flag(rule, {e1.id: disputed}, now=at(3)) is rule


def test_flag_already_right_returns_the_same_object() -> None:
    e1 = new_record("E1.")
    rule = _rule(e1)
    assert refresh_rule_flag(rule, {e1.id: e1}, now=at(2)) is rule
    flagged = refresh_rule_flag(rule, {e1.id: None}, now=at(2))
    assert refresh_rule_flag(flagged, {e1.id: None}, now=at(3)) is flagged


def test_partial_evidence_set_is_rejected() -> None:
    e1, e2 = new_record("E1."), new_record("E2.")
    with pytest.raises(LifecycleError) as info:
        refresh_rule_flag(_rule(e1, e2), {e1.id: e1}, now=at(2))
    assert info.value.requirement == "RULE-5"


def test_evidence_given_under_the_wrong_id_is_rejected() -> None:
    e1, e2 = new_record("E1."), new_record("E2.")
    with pytest.raises(LifecycleError):
        refresh_rule_flag(_rule(e1), {e1.id: e2}, now=at(2))


def test_only_rules_carry_flags() -> None:
    with pytest.raises(LifecycleError):
        refresh_rule_flag(new_record(), {}, now=at(2))


def test_redacted_evidence_counts_as_invalidated() -> None:
    e1 = new_record("E1.")
    tomb = MemoryRecord.tombstone(e1, reason="pii", now=at(2))
    assert refresh_rule_flag(_rule(e1), {e1.id: tomb}, now=at(3)).flagged is True
