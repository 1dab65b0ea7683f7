"""Typed proposals and the validation gate every mutation passes through.

An operator asks for a change by returning a :class:`Proposal`; nothing else may
change the store. :func:`validate_proposal` checks a proposal against the store and
the lifecycle machine and computes every version it would write, without writing;
:func:`apply_proposal` writes only what validation computed (OP-2, OP-3). Invalid
proposals are rejected, never repaired.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from memspec import LifecycleError, NotFoundError, ProposalError, check_timestamp, is_reason
from memspec.reference import lifecycle
from memspec.reference._ids import is_record_id
from memspec.reference.ports import RecordStore
from memspec.reference.records import MemoryRecord, RecordState

__all__ = [
    "Proposal",
    "ProposalKind",
    "apply_proposal",
    "apply_proposals",
    "resolve",
    "validate_proposal",
]

_WIRE_KEYS = frozenset({"kind", "record", "target_id", "other_id", "reason"})


class ProposalKind(StrEnum):
    """The only mutations an operator may request (OP-1)."""

    CREATE = "create"
    SUPERSEDE = "supersede"
    TRANSITION = "transition"
    ARCHIVE = "archive"


@dataclass(frozen=True)
class Proposal:
    """One requested mutation; which fields it needs depends on ``kind``."""

    kind: ProposalKind
    record: MemoryRecord | None = None
    target_id: str | None = None
    other_id: str | None = None
    reason: str = ""

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "kind", ProposalKind(self.kind))
        except ValueError as exc:
            raise ProposalError(f"{self.kind!r} is not a proposal kind "
                                f"{[k.value for k in ProposalKind]}", requirement="OP-1") from exc
        if self.record is not None and not isinstance(self.record, MemoryRecord):
            raise ProposalError("proposal.record must be a MemoryRecord", requirement="OP-1")
        for name in ("target_id", "other_id"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ProposalError(f"proposal.{name} must be a record id or null",
                                    requirement="OP-1")
        if not isinstance(self.reason, str):
            raise ProposalError("proposal.reason must be a string", requirement="OP-1")

    def model_dump(self) -> dict[str, Any]:
        """The wire form ``{kind, record, target_id, other_id, reason}``."""
        return {
            "kind": self.kind.value,
            "record": None if self.record is None else self.record.model_dump(),
            "target_id": self.target_id,
            "other_id": self.other_id,
            "reason": self.reason,
        }

    @classmethod
    def model_validate(cls, data: object) -> Proposal:
        """Build from the wire form; a bad embedded record raises RecordError."""
        if isinstance(data, Proposal):
            return data
        if not isinstance(data, Mapping) or "kind" not in data:
            raise ProposalError("a proposal is an object with a kind", requirement="OP-1")
        unknown = sorted(set(data) - _WIRE_KEYS)
        if unknown:
            raise ProposalError(f"proposal has unknown keys {unknown}", requirement="OP-1")
        raw = data.get("record")
        if raw is not None and not isinstance(raw, Mapping):
            raise ProposalError(f"proposal.record must be a record object or null, not "
                                f"{type(raw).__name__}", requirement="OP-1")
        record = None if raw is None else MemoryRecord.model_validate(raw)
        return cls(kind=data["kind"], record=record, target_id=data.get("target_id"),
                   other_id=data.get("other_id"), reason=data.get("reason", ""))


class _Overlay(RecordStore):
    """The store as it would look after the planned writes; never writes through."""

    def __init__(self, base: RecordStore) -> None:
        self._base = base
        self.planned: list[MemoryRecord] = []
        self._latest: dict[str, MemoryRecord] = {}

    def put(self, record: MemoryRecord) -> int:
        self.planned.append(record)
        self._latest[record.id] = record
        return 0

    def get(self, record_id: str) -> MemoryRecord:
        if record_id in self._latest:
            return self._latest[record_id]
        return self._base.get(record_id)

    def history(self, record_id: str) -> tuple[MemoryRecord, ...]:
        stored = self._base.history(record_id) if record_id in self._base else ()
        versions = stored + tuple(r for r in self.planned if r.id == record_id)
        if not versions:
            raise NotFoundError(f"no record {record_id}", requirement="STORE-4")
        return versions

    def ids(self) -> tuple[str, ...]:
        return tuple(sorted(set(self._base.ids()) | set(self._latest)))


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ProposalError(message, requirement="OP-1")


def _fetch(store: RecordStore, record_id: str | None, role: str) -> MemoryRecord:
    _require(record_id is not None, f"this proposal needs {role}")
    if not is_record_id(record_id):
        raise ProposalError(f"{role} {record_id!r} is not a record id", requirement="OP-1")
    assert record_id is not None
    return store.get(record_id)


def _check_born(record: MemoryRecord, role: str) -> None:
    """REC-14: a new record is born active, unchanged since birth, unlinked, unflagged, unsigned."""
    born = (record.state is RecordState.ACTIVE and record.updated_at == record.created_at
            and record.superseded_by is None and record.transition is None
            and not record.flagged and record.signed_by is None and not record.is_tombstone)
    if not born:
        raise ProposalError(f"the {role} must be a newly born active record (active, "
                            "updated_at = created_at, unlinked, unflagged, unsigned)",
                            requirement="OP-6")


def _plan_create(store: RecordStore, proposal: Proposal) -> tuple[MemoryRecord, ...]:
    record = proposal.record
    _require(record is not None, "a create proposal carries the new record")
    _require(proposal.target_id is None and proposal.other_id is None,
             "a create proposal names no target_id or other_id")
    assert record is not None
    _check_born(record, "created record")
    if record.id in store:
        raise ProposalError(f"{record.id} is already in the store", requirement="OP-6")
    return (record,)


def _plan_supersede(store: RecordStore, proposal: Proposal, now: str,
                    keeper_versions: bool) -> tuple[MemoryRecord, ...]:
    successor = proposal.record
    _require(successor is not None, "a supersede proposal carries the successor record")
    _require(proposal.other_id is None, "a supersede proposal names no other_id")
    assert successor is not None
    old = _fetch(store, proposal.target_id, "target_id")
    if successor.id in store:
        if not keeper_versions:
            raise ProposalError(f"successor {successor.id} is already stored: a supersede's "
                                "successor is a newborn record", requirement="OP-6")
        # Pipeline code only (exact dedup, a merge's follow-up): the successor is the
        # next version of a stored, active keeper. Operators never get this path.
        current = store.get(successor.id)
        if current.state is not RecordState.ACTIVE or successor.state is not RecordState.ACTIVE:
            raise LifecycleError(f"successor {successor.id} exists and is not active",
                                 requirement="SUP-5")
    else:
        _check_born(successor, "successor")
    return (successor, lifecycle.supersede(old, successor, reason=proposal.reason, now=now))


def _plan_transition(store: RecordStore, proposal: Proposal,
                     now: str) -> tuple[MemoryRecord, ...]:
    _require(proposal.record is None, "a transition proposal carries no record")
    a = _fetch(store, proposal.target_id, "target_id")
    b = _fetch(store, proposal.other_id, "other_id")
    return lifecycle.begin_transition(a, b, reason=proposal.reason, now=now)


def _plan_archive(store: RecordStore, proposal: Proposal, now: str) -> tuple[MemoryRecord, ...]:
    _require(proposal.record is None and proposal.other_id is None,
             "an archive proposal carries only target_id and reason")
    target = _fetch(store, proposal.target_id, "target_id")
    return (lifecycle.archive(target, reason=proposal.reason, now=now),)


def validate_proposal(store: RecordStore, proposal: Proposal, *, now: str,
                      keeper_versions: bool = False) -> tuple[MemoryRecord, ...]:
    """Every version ``proposal`` would write, in write order; nothing is written.

    ``keeper_versions`` lets a supersede's successor be the next version of a
    stored active record: the consolidation passes' own construction (CONS-5,
    CONS-6), never what an operator or a caller of ``apply_proposal`` may send.

    Raises ProposalError (malformed, out of authority, or a create / successor
    record that is not newly born), LifecycleError (illegal change), RecordError (a
    bad embedded record, raised while parsing it) or NotFoundError (unknown id).
    """
    if not isinstance(proposal, Proposal):
        raise ProposalError("not a Proposal", requirement="OP-1")
    check_timestamp(now, field="now")
    if proposal.kind is not ProposalKind.CREATE and not is_reason(proposal.reason):
        raise ProposalError(f"a {proposal.kind.value} proposal needs a reason (a character "
                            "other than ASCII whitespace)",
                            requirement="LC-3")
    if proposal.kind is ProposalKind.CREATE:
        return _plan_create(store, proposal)
    if proposal.kind is ProposalKind.SUPERSEDE:
        return _plan_supersede(store, proposal, now, keeper_versions)
    if proposal.kind is ProposalKind.TRANSITION:
        return _plan_transition(store, proposal, now)
    return _plan_archive(store, proposal, now)


def _write(store: RecordStore, records: Iterable[MemoryRecord]) -> tuple[MemoryRecord, ...]:
    written = tuple(records)
    for record in written:
        store.put(record)
    return written


def apply_proposal(store: RecordStore, proposal: Proposal, *,
                   now: str) -> tuple[MemoryRecord, ...]:
    """Validate ``proposal`` fully, then write its versions; return them in write order."""
    return _write(store, validate_proposal(store, proposal, now=now))


def apply_proposals(store: RecordStore, proposals: Iterable[Proposal], *, now: str,
                    keeper_versions: bool = False) -> tuple[MemoryRecord, ...]:
    """Validate every proposal (each seeing the ones before it), then write all or nothing."""
    overlay = _Overlay(store)
    for proposal in proposals:
        for record in validate_proposal(overlay, proposal, now=now,
                                        keeper_versions=keeper_versions):
            overlay.put(record)
    return _write(store, overlay.planned)


def resolve(store: RecordStore, *, winner_id: str, loser_id: str, reason: str,
            now: str) -> tuple[MemoryRecord, MemoryRecord]:
    """Settle a transition pair naming the winner; writes ``(winner', loser')`` in that order."""
    check_timestamp(now, field="now")
    for name, value in (("winner_id", winner_id), ("loser_id", loser_id)):
        if not is_record_id(value):
            raise ProposalError(f"{name} {value!r} is not a record id", requirement="RES-1")
    if winner_id == loser_id:
        raise LifecycleError("resolution needs two distinct records", requirement="RES-1")
    winner, loser = store.get(winner_id), store.get(loser_id)
    planned = lifecycle.resolve_transition(winner, loser, reason=reason, now=now)
    _write(store, planned)
    return planned

