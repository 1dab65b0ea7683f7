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
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from memspec import confidence_from_wire
from memspec.reference.pipeline.candidates import (
    DEFAULT_MAX_BLOCK,
    CandidateGroups,
    CandidateSet,
    Pair,
    TextFeatures,
    candidate_pairs,
    cross_join,
    merge_cuts,
    shares_block,
    sorted_pairs,
)
from memspec.reference.proposals import Proposal, ProposalKind
from memspec.reference.records import MemoryRecord, Provenance, RecordType
from memspec.reference.text import jaccard

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

    def candidates(self, records: Sequence[MemoryRecord]) -> list[Pair]:
        """The pairs to ask :meth:`propose_merge` about, sorted by (a.id, b.id).

        Contract: pairs of the blocked set (:func:`candidate_pairs`) only, and
        every one of them the operator would not abstain on. The default is the
        blocked set itself; an operator that can tell cheaply where it abstains
        narrows it (the report stays the same).
        """
        return candidate_pairs(records)

    def candidate_set(self, records: Sequence[MemoryRecord]) -> CandidateSet:
        """:meth:`candidates`, plus the records whose comparisons were cut (none by default)."""
        return CandidateSet(tuple(self.candidates(records)))

    def candidate_groups(self, records: Sequence[MemoryRecord]) -> CandidateGroups | None:
        """Groups holding every pair of :meth:`candidates`, or None (the pass then uses those).

        Contract: every pair this operator would not abstain on lies inside one
        group; the pass asks about blocked pairs inside groups only, in the order
        :meth:`candidates` would list them, so the report is the same either way.
        """
        return None


class ContradictionOperator(ABC):
    """Port: propose opening a transition between two contradicting records, or abstain."""

    @abstractmethod
    def propose_transition(
        self, a: MemoryRecord, b: MemoryRecord, *, now: str
    ) -> Proposal | None:
        """A ``transition`` naming ``a`` and ``b``, or None."""

    def candidates(self, records: Sequence[MemoryRecord]) -> list[Pair]:
        """The pairs to ask :meth:`propose_transition` about (same contract as
        :meth:`NearDupOperator.candidates`)."""
        return candidate_pairs(records)

    def candidate_set(self, records: Sequence[MemoryRecord]) -> CandidateSet:
        """:meth:`candidates`, plus the records whose comparisons were cut (none by default)."""
        return CandidateSet(tuple(self.candidates(records)))

    def beyond_slot_conflicts(self, records: Sequence[MemoryRecord]) -> CandidateSet | None:
        """The pairs this operator detects beyond slot conflicts, or None (the default).

        Contract when not None: the pairs :meth:`candidates` lists are exactly every
        pair of distinct facts or procedures of ``records`` sharing a slot key whose
        values differ as canonical JSON (CONS-13), plus the pairs returned here, none
        of which has such a slot; and :meth:`propose_transition` proposes, for each
        of them, a transition naming the pair. The pass then walks slot conflicts as
        groups (one per slot key) instead of listing their pairs, and its report is
        the one the pair list would give.
        """
        return None


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


def _slot_conflict(a: MemoryRecord, b: MemoryRecord,
                   features: TextFeatures | None = None) -> str | None:
    """The first shared slot key (sorted) whose values differ, if any."""
    shared = a.slots.keys() & b.slots.keys()
    if not shared:
        return None
    features = features or TextFeatures()
    values_a, values_b = features.slot_values(a), features.slot_values(b)
    for key in sorted(shared):
        if values_a[key] != values_b[key]:
            return key
    return None


def _merged_slots(first: MemoryRecord, second: MemoryRecord) -> dict[str, Any]:
    merged = dict(second.slots)
    merged.update(first.slots)
    return merged


class TrigramNearDupOperator(NearDupOperator):
    """Merge two facts (or two procedures) with the same wording whose trigram Jaccard meets
    the threshold.

    The merge retires both sides behind a record carrying the stronger side's
    body, so it must never retire a side carrying information that body lacks:
    the operator abstains unless both bodies have the same :func:`wording` (the
    same content words, numbers, names, prepositions, modals and negators, in the
    same order; they may differ only in case, punctuation, spacing, articles and
    inflection). "Alice is allergic to pollen" and "Alice is allergic to peanuts"
    are never merged, at any threshold. It also abstains on episodes and rules
    (similar text about distinct events or evidence sets is not duplication), on
    mixed types, when a shared slot disagrees or the bodies' polarity differs
    (both are contradiction candidates: merging them away would be a silent
    overwrite, CONS-12). The merged record keeps the stronger side's body, unions
    slots, tags and evidence, adds both sides as evidence and supersedes the
    stronger side.

    Candidates are a grouping, not a join: records are grouped by type, polarity
    and wording, and only pairs inside a group are compared, so ``max_block`` (a
    cap for joins) never cuts anything here.
    """

    def __init__(self, *, threshold: Decimal | str | float = Decimal("0.6"),
                 max_block: int | None = DEFAULT_MAX_BLOCK) -> None:
        self.threshold = Decimal(str(threshold))
        self.max_block = max_block

    def similarity(self, a: MemoryRecord, b: MemoryRecord,
                   features: TextFeatures) -> float | None:
        """The trigram similarity of a pair this operator merges, None where it abstains."""
        if a.type != b.type or a.type not in _CLAIM_TYPES or a.id == b.id:
            return None
        if features.wording(a) != features.wording(b):
            return None
        if (_slot_conflict(a, b, features) is not None
                or features.polarity(a) != features.polarity(b)):
            return None
        similarity = jaccard(features.trigrams(a), features.trigrams(b))
        if Decimal(similarity) < self.threshold:
            return None
        return similarity

    def candidates(self, records: Sequence[MemoryRecord]) -> list[Pair]:
        """The pairs of :meth:`candidate_set`."""
        return list(self.candidate_set(records).pairs)

    def candidate_set(self, records: Sequence[MemoryRecord]) -> CandidateSet:
        """Exactly the blocked pairs this operator merges: the pairs inside
        :meth:`candidate_groups` that it does not abstain on. A subclass that overrides
        :meth:`propose_merge` or :meth:`similarity` gets the blocked set instead."""
        groups = self.candidate_groups(records)
        if groups is None:
            return CandidateSet(tuple(super().candidates(records)))
        features = TextFeatures()
        by_id = {r.id: r for group in groups.groups for r in group}
        found = ((a.id, b.id) for group in groups.groups
                 for i, a in enumerate(group) for b in group[i + 1:])
        return CandidateSet(tuple(
            (a, b) for a, b in sorted_pairs(by_id, found)
            if shares_block(a, b, features) and self.similarity(a, b, features) is not None))

    def candidate_groups(self, records: Sequence[MemoryRecord]) -> CandidateGroups | None:
        """Facts and procedures grouped by type, polarity and :func:`wording` (groups of two
        or more, each by id); None for a subclass that changes the verdict."""
        cls = type(self)
        if (cls.propose_merge is not TrigramNearDupOperator.propose_merge
                or cls.similarity is not TrigramNearDupOperator.similarity):
            return None
        features = TextFeatures()
        grouped: dict[tuple[str, int, tuple[str, ...]], dict[str, MemoryRecord]] = (
            defaultdict(dict))
        for record in records:
            if record.type in _CLAIM_TYPES:
                key = (record.type.value, features.polarity(record), features.wording(record))
                grouped[key][record.id] = record
        return CandidateGroups(tuple(
            tuple(group[rid] for rid in sorted(group))
            for group in grouped.values() if len(group) > 1))

    def propose_merge(self, a: MemoryRecord, b: MemoryRecord, *, now: str) -> Proposal | None:
        similarity = self.similarity(a, b, TextFeatures())
        if similarity is None:
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


def _core_overlap(words_a: frozenset[str], words_b: frozenset[str]) -> Decimal:
    """Jaccard overlap of two bodies' stemmed content words (negators excluded)."""
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

    def __init__(self, *, threshold: Decimal | str | float = Decimal("0.5"),
                 max_block: int | None = DEFAULT_MAX_BLOCK) -> None:
        self.threshold = Decimal(str(threshold))
        self.max_block = max_block
        # Why: the pass asks propose_transition about the pairs it opens or defers; the
        # features of their records were computed for the candidates already (reset
        # there, per pass).
        self._features = TextFeatures()

    def reason(self, a: MemoryRecord, b: MemoryRecord, features: TextFeatures) -> str | None:
        """Why ``a`` and ``b`` contradict, None where this operator abstains."""
        if a.type not in _CLAIM_TYPES or b.type not in _CLAIM_TYPES or a.id == b.id:
            return None
        key = _slot_conflict(a, b, features)
        if key is not None:
            return f"slot {key!r} disagrees"
        if features.polarity(a) != features.polarity(b) and (
            _core_overlap(features.words(a), features.words(b)) >= self.threshold
        ):
            return NEGATION_REASON
        return None

    def candidates(self, records: Sequence[MemoryRecord]) -> list[Pair]:
        """The pairs of :meth:`candidate_set`."""
        return list(self.candidate_set(records).pairs)

    def candidate_set(self, records: Sequence[MemoryRecord]) -> CandidateSet:
        """Exactly the blocked pairs this operator acts on: the pairs across the value
        groups of each slot key, and those of :meth:`beyond_slot_conflicts`.

        A subclass that overrides :meth:`propose_transition` or :meth:`reason` gets
        the blocked set instead.
        """
        beyond = self.beyond_slot_conflicts(records)
        features = self._features
        if beyond is None:
            return CandidateSet(tuple(super().candidates(records)))
        by_id = {r.id: r for r in records if r.type in _CLAIM_TYPES}
        found = {(a.id, b.id) for a, b in beyond.pairs}
        # Why: a slot conflict needs a shared key with two different values, so only
        # pairs across value groups of one key can have one.
        by_value: dict[str, dict[bytes, list[str]]] = defaultdict(lambda: defaultdict(list))
        for rid, record in by_id.items():
            for key, value in features.slot_values(record).items():
                by_value[key][value].append(rid)
        for groups in by_value.values():
            lists = list(groups.values())
            for i, first in enumerate(lists):
                for second in lists[i + 1:]:
                    found.update((a, b) if a < b else (b, a) for a in first for b in second)
        return CandidateSet(tuple(sorted_pairs(by_id, found)), beyond.cuts)

    def beyond_slot_conflicts(self, records: Sequence[MemoryRecord]) -> CandidateSet | None:
        """The negation pairs that share no slot key whose values differ, and the cuts.

        Negations come from a prefix-filtered join (:func:`cross_join`) over content
        words between the negated and the plain records only, each pair then checked
        with :meth:`reason` on features computed once per record. A content word held
        by more than ``max_block`` records is purged, and the records that skipped one
        are the cuts. Slot keys are never purged: the default operator finds every slot
        conflict (CONS-13). At a threshold where no filter applies, the blocked pairs
        are checked instead. None for a subclass that overrides
        :meth:`propose_transition` or :meth:`reason`.
        """
        cls = type(self)
        features = self._features = TextFeatures()
        if (cls.propose_transition is not HeuristicContradictionOperator.propose_transition
                or cls.reason is not HeuristicContradictionOperator.reason):
            return None
        by_id = {r.id: r for r in records if r.type in _CLAIM_TYPES}
        sides: dict[int, dict[str, frozenset[str]]] = {1: {}, -1: {}}
        for rid, record in by_id.items():
            sides[features.polarity(record)][rid] = features.words(record)
        join = cross_join(sides[1], sides[-1], self.threshold, self.max_block)
        if join is None:
            pairs = [(a.id, b.id) for a, b in super().candidates(list(by_id.values()))]
            cut: list[tuple[str, str, int]] = []
        else:
            pairs = list(join.pairs)
            cut = [(rid, f"content word {word!r}", join.sizes[word])
                   for rid, words in join.cut.items() for word in words]
        return CandidateSet(
            tuple((a, b) for a, b in sorted_pairs(by_id, pairs)
                  if shares_block(a, b, features) and _slot_conflict(a, b, features) is None
                  and self.reason(a, b, features) is not None),
            merge_cuts(cut, self.max_block or 0))

    def propose_transition(
        self, a: MemoryRecord, b: MemoryRecord, *, now: str
    ) -> Proposal | None:
        reason = self.reason(a, b, self._features)
        if reason is None:
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
