"""Consolidation operator ports and the shipped model-free heuristics.

An operator looks at records and answers with typed proposals; it never
touches a store (OP-4). The consolidation pass validates whatever comes back
against the lifecycle machine before anything is written (CONS-2), so a
buggy or adversarial operator (an LLM, say) can only get proposals rejected.

Three ports, one per detection sub-pass:

- :class:`NearDupOperator` proposes one ``supersede`` whose merged record
  carries evidence to both sides and supersedes one of them (CONS-6).
- :class:`ContradictionOperator` proposes one ``transition`` (CONS-7).
- :class:`ResolutionOperator` names a winner for an open transition as a
  :class:`Resolution` verdict. Resolution is not one of the four proposal
  kinds (OP-1): the pass applies a verdict through the lifecycle's own
  ``resolve`` step, which checks both sides and the shared block.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from memspec import canonical_json, confidence_from_wire
from memspec.reference.proposals import Proposal, ProposalKind
from memspec.reference.records import MemoryRecord, Provenance, RecordType
from memspec.reference.text import content_words, polarity, trigram_similarity

__all__ = [
    "CONSOLIDATION_KIND",
    "CORRECTION_KINDS",
    "NEGATION_REASON",
    "ContradictionOperator",
    "HeuristicContradictionOperator",
    "HeuristicResolutionOperator",
    "NearDupOperator",
    "Resolution",
    "ResolutionOperator",
    "TrigramNearDupOperator",
    "strength_key",
]

#: Provenance kind of every record consolidation itself creates.
CONSOLIDATION_KIND = "consolidation"
#: Provenance kinds that mark an explicit user correction (beats inference outright).
CORRECTION_KINDS = frozenset({"correction", "user-correction", "user_correction"})
#: The transition reason for a polarity contradiction.
NEGATION_REASON = "one side negates the other"
_CLAIM_TYPES = frozenset({RecordType.FACT, RecordType.PROCEDURE})


@dataclass(frozen=True)
class Resolution:
    """A resolver's verdict on an open transition: who wins, who is superseded, and why."""

    winner_id: str
    loser_id: str
    reason: str


class NearDupOperator(ABC):
    """Port: propose merging two near-duplicate records, or abstain (``None``)."""

    @abstractmethod
    def propose_merge(self, a: MemoryRecord, b: MemoryRecord, *, now: str) -> Proposal | None:
        """A ``supersede`` whose record has evidence to both ``a`` and ``b``, or None."""


class ContradictionOperator(ABC):
    """Port: propose opening a transition between two contradicting records, or abstain."""

    @abstractmethod
    def propose_transition(
        self, a: MemoryRecord, b: MemoryRecord, *, now: str
    ) -> Proposal | None:
        """A ``transition`` naming ``a`` and ``b``, or None."""


class ResolutionOperator(ABC):
    """Port: name the winner of an open transition, or abstain (leave it for a human)."""

    @abstractmethod
    def propose_resolution(
        self, a: MemoryRecord, b: MemoryRecord, *, now: str
    ) -> Resolution | None:
        """A verdict on the transition ``a`` and ``b`` share, or None."""


def strength_key(record: MemoryRecord) -> tuple[Decimal, str, str]:
    """Sort key putting the strongest copy first: confidence, then earliest, then smallest id."""
    return (-Decimal(record.confidence), record.created_at, record.id)


def _slot_conflict(a: MemoryRecord, b: MemoryRecord) -> str | None:
    """The first shared slot key (sorted) whose values differ, if any."""
    for key in sorted(set(a.slots) & set(b.slots)):
        if canonical_json(a.slots[key]) != canonical_json(b.slots[key]):
            return key
    return None


def _merged_slots(first: MemoryRecord, second: MemoryRecord) -> dict[str, Any]:
    merged = dict(second.slots)
    merged.update(first.slots)
    return merged


class TrigramNearDupOperator(NearDupOperator):
    """Merge two facts (or two procedures) whose bodies' trigram Jaccard meets the threshold.

    Abstains on episodes and rules (similar text about distinct events or
    evidence sets is not duplication), on mixed types, when a shared slot
    disagrees or the bodies' polarity differs (both are contradiction
    candidates: merging them away would be a silent overwrite, CONS-12).
    The merged record keeps the stronger side's body, unions slots, tags and
    evidence, adds both sides as evidence and supersedes the stronger side.
    """

    def __init__(self, *, threshold: Decimal | str | float = Decimal("0.6")) -> None:
        self.threshold = Decimal(str(threshold))

    def propose_merge(self, a: MemoryRecord, b: MemoryRecord, *, now: str) -> Proposal | None:
        if a.type != b.type or a.type not in _CLAIM_TYPES or a.id == b.id:
            return None
        if _slot_conflict(a, b) is not None or polarity(a.body) != polarity(b.body):
            return None
        similarity = trigram_similarity(a.body, b.body)
        if Decimal(similarity) < self.threshold:
            return None
        keeper, other = sorted((a, b), key=strength_key)
        tags = list(keeper.tags) + [t for t in other.tags if t not in keeper.tags]
        evidence = sorted(set(keeper.evidence) | set(other.evidence) | {keeper.id, other.id})
        confidence = max(confidence_from_wire(keeper.confidence),
                         confidence_from_wire(other.confidence))
        merged = MemoryRecord.create(
            keeper.type,
            keeper.body,
            Provenance(kind=CONSOLIDATION_KIND, ref=f"{keeper.id} {other.id}"),
            created_at=now,
            slots=_merged_slots(keeper, other),
            confidence=confidence,
            evidence=tuple(evidence),
            supersedes=keeper.id,
            tags=tuple(tags),
        )
        reason = f"near-duplicate of {other.id} (trigram similarity {similarity:.4f})"
        return Proposal(kind=ProposalKind.SUPERSEDE, record=merged, target_id=keeper.id,
                        other_id=None, reason=reason)


def _core_overlap(a: str, b: str) -> Decimal:
    """Jaccard overlap of the two bodies' stemmed content words (negators excluded)."""
    words_a, words_b = content_words(a), content_words(b)
    union = words_a | words_b
    if not union:
        return Decimal(0)
    return Decimal(len(words_a & words_b)) / Decimal(len(union))


class HeuristicContradictionOperator(ContradictionOperator):
    """Deterministic contradiction detection over facts and procedures (never episodes or rules).

    A pair contradicts when a shared slot key carries different values, or
    when exactly one side is negated (``polarity`` differs) over a shared
    content-word core whose Jaccard overlap meets ``threshold``.
    """

    def __init__(self, *, threshold: Decimal | str | float = Decimal("0.5")) -> None:
        self.threshold = Decimal(str(threshold))

    def propose_transition(
        self, a: MemoryRecord, b: MemoryRecord, *, now: str
    ) -> Proposal | None:
        if a.type not in _CLAIM_TYPES or b.type not in _CLAIM_TYPES or a.id == b.id:
            return None
        key = _slot_conflict(a, b)
        if key is not None:
            reason = f"slot {key!r} disagrees"
        elif polarity(a.body) != polarity(b.body) and (
            _core_overlap(a.body, b.body) >= self.threshold
        ):
            reason = NEGATION_REASON
        else:
            return None
        first, second = sorted((a.id, b.id))
        return Proposal(kind=ProposalKind.TRANSITION, record=None, target_id=first,
                        other_id=second, reason=reason)


class HeuristicResolutionOperator(ResolutionOperator):
    """A cautious resolver: explicit corrections win; newer wins only between like records.

    - Exactly one side carrying a correction provenance kind wins outright.
    - Otherwise "newer wins" applies only when both sides share the same
      provenance kind and identical slot keys; times compare ``occurred_at``
      when both carry it, else ``created_at``. Equal times abstain.
    - Anything else stays transitional until someone resolves it explicitly.
    """

    def __init__(self, *, correction_kinds: frozenset[str] = CORRECTION_KINDS) -> None:
        self.correction_kinds = correction_kinds

    def propose_resolution(
        self, a: MemoryRecord, b: MemoryRecord, *, now: str
    ) -> Resolution | None:
        corrected = [r for r in (a, b) if r.provenance.kind in self.correction_kinds]
        if len(corrected) == 1:
            winner = corrected[0]
            loser = b if winner is a else a
            return Resolution(winner.id, loser.id, "explicit user correction wins")
        if a.provenance.kind != b.provenance.kind or set(a.slots) != set(b.slots):
            return None
        if a.occurred_at is not None and b.occurred_at is not None:
            time_a, time_b = a.occurred_at, b.occurred_at
        else:
            time_a, time_b = a.created_at, b.created_at
        if time_a == time_b:
            return None
        winner, loser = (a, b) if time_a > time_b else (b, a)
        return Resolution(winner.id, loser.id,
                          f"newer {winner.provenance.kind} record wins (same source and shape)")
