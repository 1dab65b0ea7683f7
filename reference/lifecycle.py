"""The lifecycle state machine as pure functions over records.

The legality table is the published one (``spec/legality.json`` in memspec's package
data), never a copy. Each function checks its preconditions first and returns new
versions (same id, ``updated_at = now``, signature cleared); it never writes anything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memspec import LifecycleError, is_reason
from memspec.data import legality
from memspec.reference.records import MemoryRecord, RecordState, RecordType, Transition

__all__ = [
    "FLAG_REASON",
    "LEGAL_TRANSITIONS",
    "LIFECYCLE_STEPS",
    "LIVE_STATES",
    "LifecycleStep",
    "archive",
    "assert_transition",
    "begin_transition",
    "is_legal",
    "refresh_rule_flag",
    "resolve_transition",
    "supersede",
]

#: States whose records count as live evidence for a rule (RULE-2).
LIVE_STATES = frozenset(RecordState(s) for s in legality().live_states)
#: The flag_reason of a rule flagged without a caller-given reason.
FLAG_REASON = "every evidence record is archived, superseded or missing"


def _load_table() -> frozenset[tuple[RecordState, RecordState]]:
    return frozenset((RecordState(a), RecordState(b)) for a, b in legality().legal_pairs)


#: Every (from, to) pair the legality table allows; every other pair is rejected (LC-1).
LEGAL_TRANSITIONS: frozenset[tuple[RecordState, RecordState]] = _load_table()


def _state(value: RecordState | str) -> RecordState:
    try:
        return RecordState(value)
    except ValueError as exc:
        raise LifecycleError(f"{value!r} is not a lifecycle state", requirement="LC-1") from exc


def is_legal(current: RecordState | str, target: RecordState | str) -> bool:
    """Whether the legality table allows ``current -> target``.

    A name that is not a state raises LifecycleError rather than answering False.
    """
    return (_state(current), _state(target)) in LEGAL_TRANSITIONS


def assert_transition(current: RecordState | str, target: RecordState | str) -> None:
    """Raise LifecycleError unless ``current -> target`` is legal (LC-1, LC-2)."""
    if not is_legal(current, target):
        terminal = _state(current) is RecordState.ARCHIVED
        raise LifecycleError(
            f"{_state(current).value} -> {_state(target).value} is not in the legality table"
            + (" (archived is terminal)" if terminal else ""),
            requirement="LC-2" if terminal else "LC-1",
        )


def _reason(reason: object, requirement: str) -> str:
    if not is_reason(reason):
        raise LifecycleError("a reason is required: a string with a character other than "
                             "ASCII whitespace", requirement=requirement)
    return reason


def supersede(old: MemoryRecord, successor: MemoryRecord, *, reason: str,
              now: str) -> MemoryRecord:
    """``old`` superseded by ``successor``, which must already name it in ``supersedes``."""
    _reason(reason, "LC-3")
    if successor.id == old.id:
        raise LifecycleError("a record cannot supersede itself", requirement="SUP-4")
    if successor.supersedes != old.id:
        raise LifecycleError(
            f"successor {successor.id} does not name {old.id} in supersedes",
            requirement="SUP-1",
        )
    if old.state is not RecordState.ACTIVE:
        raise LifecycleError(
            f"only an active record can be superseded by a successor, not a {old.state.value} "
            "one (transitional records are superseded through resolution)",
            requirement="SUP-5",
        )
    assert_transition(old.state, RecordState.SUPERSEDED)
    return old.evolve(now, state=RecordState.SUPERSEDED, superseded_by=successor.id,
                      state_reason=reason)


def begin_transition(a: MemoryRecord, b: MemoryRecord, *, reason: str,
                     now: str) -> tuple[MemoryRecord, MemoryRecord]:
    """Open a contradiction: both records become transitional with the same block (TRN-3)."""
    _reason(reason, "TRN-1")
    if a.id == b.id:
        raise LifecycleError("a transition needs two distinct records", requirement="TRN-4")
    for record in (a, b):
        if record.state is not RecordState.ACTIVE:
            raise LifecycleError(
                f"only active records can open a transition; {record.id} is "
                f"{record.state.value}", requirement="TRN-4",
            )
        assert_transition(record.state, RecordState.TRANSITIONAL)
    block = Transition((a.id, b.id), reason)
    # Why: the block carries the reason; state_reason is left as it was (memspec vectors pin it).
    return (
        a.evolve(now, state=RecordState.TRANSITIONAL, transition=block),
        b.evolve(now, state=RecordState.TRANSITIONAL, transition=block),
    )


def resolve_transition(winner: MemoryRecord, loser: MemoryRecord, *, reason: str,
                       now: str) -> tuple[MemoryRecord, MemoryRecord]:
    """Settle a transition: the winner returns to active, the loser is superseded by it."""
    _reason(reason, "RES-1")
    if winner.id == loser.id:
        raise LifecycleError("resolution needs two distinct records", requirement="RES-1")
    for record in (winner, loser):
        if record.state is not RecordState.TRANSITIONAL or record.transition is None:
            raise LifecycleError(f"{record.id} is {record.state.value}, not transitional",
                                 requirement="RES-1")
    block = winner.transition
    assert block is not None
    if loser.transition != block or set(block.sides) != {winner.id, loser.id}:
        raise LifecycleError("winner and loser are not the two sides of the same transition",
                             requirement="RES-1")
    assert_transition(winner.state, RecordState.ACTIVE)
    assert_transition(loser.state, RecordState.SUPERSEDED)
    return (
        winner.evolve(now, state=RecordState.ACTIVE, transition=None, state_reason=reason),
        loser.evolve(now, state=RecordState.SUPERSEDED, transition=None,
                     superseded_by=winner.id, state_reason=reason),
    )


def archive(record: MemoryRecord, *, reason: str, now: str) -> MemoryRecord:
    """``record`` archived with a reason (terminal; content kept, unlike redaction)."""
    _reason(reason, "LC-3")
    assert_transition(record.state, RecordState.ARCHIVED)
    return record.evolve(now, state=RecordState.ARCHIVED, transition=None,
                         state_reason=reason)


def refresh_rule_flag(rule: MemoryRecord, evidence: Mapping[str, MemoryRecord | None], *,
                      now: str, reason: str | None = None) -> MemoryRecord:
    """The rule with its flag made right: flagged exactly when no evidence is live.

    ``evidence`` maps every evidence id to its latest record, or to None when the
    caller knows it is missing (missing counts as invalidated). An evidence id absent
    from the mapping is a partial evidence set and is rejected (RULE-5). A newly set
    flag carries ``reason`` as its flag_reason (a fixed default when none is given).
    Returns ``rule`` itself when its flag is already right, keeping any earlier
    flag_reason; the state never changes (RULE-6).
    """
    if rule.type is not RecordType.RULE:
        raise LifecycleError(f"only rules carry evidence flags; {rule.id} is a "
                             f"{rule.type.value}", requirement="RULE-4")
    absent = [eid for eid in rule.evidence if eid not in evidence]
    if absent:
        raise LifecycleError(f"flag evaluation over a partial evidence set: {absent} not given",
                             requirement="RULE-5")
    live = False
    for eid in rule.evidence:
        record = evidence[eid]
        if record is not None and record.id != eid:
            raise LifecycleError(f"evidence {eid} was given as record {record.id}",
                                 requirement="RULE-5")
        live = live or (record is not None and record.state in LIVE_STATES)
    if live and rule.flagged:
        return rule.evolve(now, flagged=False, flag_reason=None)
    if not live and not rule.flagged:
        flag_reason = reason if is_reason(reason) else FLAG_REASON
        return rule.evolve(now, flagged=True, flag_reason=flag_reason)
    return rule


# -- the engine operation "lifecycle": its functions by name ---------------------------


_Run = Callable[[list[MemoryRecord], str, str, list[Any]], Sequence[MemoryRecord]]


@dataclass(frozen=True)
class LifecycleStep:
    """One pure function of the ``lifecycle`` operation: how many records it takes (None:
    any number) and how it runs over (records, reason, now, missing evidence ids)."""

    arity: int | None
    run: _Run


def _one(function: Callable[..., MemoryRecord]) -> _Run:
    return lambda records, reason, now, _: [function(*records, reason=reason, now=now)]


def _pair(function: Callable[..., Sequence[MemoryRecord]]) -> _Run:
    return lambda records, reason, now, _: function(*records, reason=reason, now=now)


def _refresh(records: list[MemoryRecord], reason: str, now: str,
             missing: list[Any]) -> Sequence[MemoryRecord]:
    if not records:
        raise LifecycleError("refresh_rule_flag needs the rule as records[0]")
    evidence: dict[str, MemoryRecord | None] = {str(m): None for m in missing}
    evidence.update({r.id: r for r in records[1:]})
    return [refresh_rule_flag(records[0], evidence, now=now, reason=reason or None)]


#: The functions of the engine operation ``lifecycle`` by name: exactly the enum of
#: ``lifecycle.args``'s ``operation`` in schemas/protocol.json (a dispatch table, checked by
#: tests/reference/test_arguments.py).
LIFECYCLE_STEPS: dict[str, LifecycleStep] = {
    "supersede": LifecycleStep(2, _one(supersede)),
    "begin_transition": LifecycleStep(2, _pair(begin_transition)),
    "resolve_transition": LifecycleStep(2, _pair(resolve_transition)),
    "archive": LifecycleStep(1, _one(archive)),
    "refresh_rule_flag": LifecycleStep(None, _refresh),
}
