"""Proposals and the validation gate: validate everything first, write all or nothing."""

from __future__ import annotations

from typing import Any

import pytest

from memspec import (
    LifecycleError,
    MemspecError,
    NotFoundError,
    ProposalError,
    RecordError,
    SigningKey,
)
from memspec.reference.lifecycle import begin_transition
from memspec.reference.ports import RecordStore
from memspec.reference.proposals import (
    Proposal,
    ProposalKind,
    apply_proposal,
    apply_proposals,
    resolve,
    validate_proposal,
)
from memspec.reference.records import MemoryRecord, RecordState

from .conftest import at, new_record, snapshot

NOW = at(5)
KEY = SigningKey.from_hex("88" * 32)
UNKNOWN = "mem:" + "f" * 32


def _seed(store: RecordStore, *bodies: str) -> list[MemoryRecord]:
    records = [new_record(body) for body in bodies]
    for record in records:
        store.put(record)
    return records


def _transition_pair(store: RecordStore) -> tuple[MemoryRecord, MemoryRecord]:
    a, b = _seed(store, "The meeting is on Monday.", "The meeting is on Tuesday.")
    apply_proposal(store, Proposal(ProposalKind.TRANSITION, target_id=a.id, other_id=b.id,
                                   reason="day conflict"), now=at(2))
    return store.get(a.id), store.get(b.id)


# -- wire form ---------------------------------------------------------------------------

@pytest.mark.parametrize("proposal", [
    Proposal(ProposalKind.CREATE, record=new_record()),
    Proposal(ProposalKind.SUPERSEDE, record=new_record("B.", supersedes="mem:" + "a" * 32),
             target_id="mem:" + "a" * 32, reason="newer"),
    Proposal(ProposalKind.TRANSITION, target_id="mem:" + "a" * 32,
             other_id="mem:" + "b" * 32, reason="conflict"),
    Proposal(ProposalKind.ARCHIVE, target_id="mem:" + "a" * 32, reason="stale"),
], ids=lambda p: p.kind.value)
def test_wire_form_round_trips(proposal: Proposal) -> None:
    wire = proposal.model_dump()
    assert set(wire) == {"kind", "record", "target_id", "other_id", "reason"}
    assert Proposal.model_validate(wire) == proposal


@pytest.mark.parametrize("wire, error", [
    ({"kind": "delete", "target_id": UNKNOWN, "reason": "r"}, ProposalError),
    ({"kind": "redact", "target_id": UNKNOWN, "reason": "r"}, ProposalError),
    ({"target_id": UNKNOWN}, ProposalError),
    ({"kind": "archive", "target_id": UNKNOWN, "reason": "r", "force": True}, ProposalError),
    ({"kind": "archive", "target_id": 7, "reason": "r"}, ProposalError),
    ({"kind": "archive", "target_id": UNKNOWN, "reason": None}, ProposalError),
    ({"kind": "create", "record": {"id": "mem:1"}}, RecordError),
    ("create", ProposalError),
])
def test_malformed_wire_proposals_are_rejected(wire: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        Proposal.model_validate(wire)


# -- each kind ---------------------------------------------------------------------------

def test_create(store: RecordStore) -> None:
    record = new_record()
    written = apply_proposal(store, Proposal(ProposalKind.CREATE, record=record), now=NOW)
    assert written == (record,)
    assert store.history(record.id) == (record,)


def test_supersede_writes_successor_then_old(store: RecordStore) -> None:
    (old,) = _seed(store, "The office is on floor 3.")
    successor = new_record("The office is on floor 4.", supersedes=old.id)
    written = apply_proposal(store, Proposal(ProposalKind.SUPERSEDE, record=successor,
                                             target_id=old.id, reason="moved"), now=NOW)
    assert [w.id for w in written] == [successor.id, old.id]
    retired = store.get(old.id)
    assert retired.state is RecordState.SUPERSEDED and retired.superseded_by == successor.id
    assert retired.state_reason == "moved" and retired.updated_at == NOW
    assert store.get(successor.id) == successor
    assert len(store.history(old.id)) == 2


def test_supersede_by_a_new_version_of_a_stored_record(store: RecordStore) -> None:
    keeper, copy = _seed(store, "Keeper.", "Copy.")
    keeper2 = keeper.evolve(NOW, supersedes=copy.id)
    proposal = Proposal(ProposalKind.SUPERSEDE, record=keeper2, target_id=copy.id,
                        reason="duplicate")
    with pytest.raises(ProposalError):  # OP-6: through the gate a successor is newborn
        apply_proposal(store, proposal, now=NOW)
    assert store.history(keeper.id) == (keeper,)
    # Exact dedup's own construction (CONS-5) may supersede by the keeper's next version.
    written = apply_proposals(store, [proposal], now=NOW, keeper_versions=True)
    assert written == (keeper2, store.get(copy.id))
    assert store.history(keeper.id) == (keeper, keeper2)
    assert store.get(copy.id).superseded_by == keeper.id


def test_transition(store: RecordStore) -> None:
    a, b = _transition_pair(store)
    assert a.state is b.state is RecordState.TRANSITIONAL
    assert a.transition == b.transition and a.transition is not None
    assert a.transition.sides == (a.id, b.id)


def test_archive(store: RecordStore) -> None:
    (record,) = _seed(store, "Old news.")
    written = apply_proposal(store, Proposal(ProposalKind.ARCHIVE, target_id=record.id,
                                             reason="stale"), now=NOW)
    assert written == (store.get(record.id),)
    assert written[0].state is RecordState.ARCHIVED and written[0].state_reason == "stale"


def test_resolve(store: RecordStore) -> None:
    a, b = _transition_pair(store)
    winner, loser = resolve(store, winner_id=b.id, loser_id=a.id, reason="confirmed", now=NOW)
    assert (store.get(b.id), store.get(a.id)) == (winner, loser)
    assert winner.state is RecordState.ACTIVE and loser.state is RecordState.SUPERSEDED
    assert loser.superseded_by == b.id
    assert len(store.history(a.id)) == 3


def test_validate_proposal_writes_nothing(store: RecordStore) -> None:
    (old,) = _seed(store, "Before.")
    successor = new_record("After.", supersedes=old.id)
    before = snapshot(store)
    planned = validate_proposal(store, Proposal(ProposalKind.SUPERSEDE, record=successor,
                                                target_id=old.id, reason="r"), now=NOW)
    assert [p.id for p in planned] == [successor.id, old.id]
    assert snapshot(store) == before


# -- the gate: invalid proposals write nothing -------------------------------------------

def _invalid_cases(store: RecordStore) -> list[tuple[Proposal, type[MemspecError]]]:
    active, other, archived_rec = _seed(store, "Active one.", "Active two.", "Archived one.")
    apply_proposal(store, Proposal(ProposalKind.ARCHIVE, target_id=archived_rec.id,
                                   reason="stale"), now=at(2))
    a, b = begin_transition(new_record("Side A."), new_record("Side B."), reason="r",
                            now=at(2))
    for record in (new_record("Side A."), new_record("Side B."), a, b):
        store.put(record)
    evolved = new_record("Fresh.").evolve(at(2), tags=["x"])
    next_ = new_record("Successor.", supersedes=active.id)
    return [
        (Proposal(ProposalKind.CREATE, record=active), ProposalError),
        (Proposal(ProposalKind.CREATE, record=evolved), ProposalError),
        (Proposal(ProposalKind.CREATE, record=new_record("Signed.").sign(KEY)), ProposalError),
        (Proposal(ProposalKind.CREATE, record=archived_rec), ProposalError),
        (Proposal(ProposalKind.SUPERSEDE, record=evolved.evolve(at(3), supersedes=active.id),
                  target_id=active.id, reason="r"), ProposalError),
        (Proposal(ProposalKind.CREATE), ProposalError),
        (Proposal(ProposalKind.CREATE, record=new_record("X."), target_id=active.id),
         ProposalError),
        (Proposal(ProposalKind.SUPERSEDE, record=new_record("Unlinked."), target_id=active.id,
                  reason="r"), LifecycleError),
        (Proposal(ProposalKind.SUPERSEDE, record=next_, target_id=active.id), ProposalError),
        (Proposal(ProposalKind.SUPERSEDE, record=new_record("S.", supersedes=a.id),
                  target_id=a.id, reason="r"), LifecycleError),
        (Proposal(ProposalKind.SUPERSEDE, record=new_record("S.", supersedes=UNKNOWN),
                  target_id=UNKNOWN, reason="r"), NotFoundError),
        (Proposal(ProposalKind.SUPERSEDE, record=next_, target_id="mem:../../etc",
                  reason="r"), ProposalError),
        (Proposal(ProposalKind.TRANSITION, target_id=active.id, other_id=active.id,
                  reason="r"), LifecycleError),
        (Proposal(ProposalKind.TRANSITION, target_id=active.id, other_id=archived_rec.id,
                  reason="r"), LifecycleError),
        (Proposal(ProposalKind.TRANSITION, target_id=active.id, other_id=other.id),
         ProposalError),
        (Proposal(ProposalKind.TRANSITION, target_id=active.id, other_id=UNKNOWN,
                  reason="r"), NotFoundError),
        (Proposal(ProposalKind.ARCHIVE, target_id=archived_rec.id, reason="again"),
         LifecycleError),
        (Proposal(ProposalKind.ARCHIVE, target_id=active.id, reason=" "), ProposalError),
        (Proposal(ProposalKind.ARCHIVE, record=active, target_id=active.id, reason="r"),
         ProposalError),
    ]


def test_every_invalid_proposal_is_rejected_and_writes_nothing(store: RecordStore) -> None:
    cases = _invalid_cases(store)
    before = snapshot(store)
    for proposal, error in cases:
        with pytest.raises(error):
            apply_proposal(store, proposal, now=NOW)
        assert snapshot(store) == before, proposal


def test_a_bad_now_is_rejected_before_writing(store: RecordStore) -> None:
    (record,) = _seed(store, "Old news.")
    before = snapshot(store)
    with pytest.raises(MemspecError):
        apply_proposal(store, Proposal(ProposalKind.ARCHIVE, target_id=record.id,
                                       reason="stale"), now="yesterday")
    assert snapshot(store) == before


def test_apply_proposals_is_all_or_nothing(store: RecordStore) -> None:
    (active,) = _seed(store, "Active.")
    before = snapshot(store)
    batch = [Proposal(ProposalKind.CREATE, record=new_record("New.")),
             Proposal(ProposalKind.ARCHIVE, target_id=active.id, reason="stale"),
             Proposal(ProposalKind.ARCHIVE, target_id=active.id, reason="twice")]
    with pytest.raises(LifecycleError):
        apply_proposals(store, batch, now=NOW)
    assert snapshot(store) == before


def test_apply_proposals_sees_earlier_proposals(store: RecordStore) -> None:
    a, b = new_record("A."), new_record("B.")
    written = apply_proposals(store, [
        Proposal(ProposalKind.CREATE, record=a),
        Proposal(ProposalKind.CREATE, record=b),
        Proposal(ProposalKind.TRANSITION, target_id=a.id, other_id=b.id, reason="conflict"),
    ], now=NOW)
    assert [w.id for w in written] == [a.id, b.id, a.id, b.id]
    assert store.get(a.id).state is RecordState.TRANSITIONAL
    assert [len(store.history(r.id)) for r in (a, b)] == [2, 2]


def test_apply_proposals_rejects_a_duplicate_create_in_one_batch(store: RecordStore) -> None:
    record = new_record()
    with pytest.raises(ProposalError):
        apply_proposals(store, [Proposal(ProposalKind.CREATE, record=record)] * 2, now=NOW)
    assert snapshot(store) == {}


@pytest.mark.parametrize("case", ["same", "unknown", "malformed", "not-a-pair", "no-reason"])
def test_invalid_resolution_writes_nothing(store: RecordStore, case: str) -> None:
    a, b = _transition_pair(store)
    (plain,) = _seed(store, "Unrelated.")
    winner, loser, reason = {
        "same": (a.id, a.id, "r"), "unknown": (a.id, UNKNOWN, "r"),
        "malformed": (a.id, "mem:'; DROP TABLE history; --", "r"),
        "not-a-pair": (a.id, plain.id, "r"), "no-reason": (a.id, b.id, ""),
    }[case]
    before = snapshot(store)
    with pytest.raises(MemspecError):
        resolve(store, winner_id=winner, loser_id=loser, reason=reason, now=NOW)
    assert snapshot(store) == before


def test_the_gate_validates_before_the_first_write(store: RecordStore) -> None:
    """The successor is valid and would be written first; the target check fails later."""
    a, _ = _transition_pair(store)
    puts: list[str] = []
    original_put = store.put

    def spying_put(record: MemoryRecord) -> int:
        puts.append(record.id)
        return original_put(record)

    store.put = spying_put  # type: ignore[method-assign]
    with pytest.raises(LifecycleError):
        apply_proposal(store, Proposal(ProposalKind.SUPERSEDE,
                                       record=new_record("Next.", supersedes=a.id),
                                       target_id=a.id, reason="r"), now=NOW)
    assert puts == []
