"""The contradiction sub-pass (SPEC §15.4): transitions, and CONS-8's deferrals as groups.

A record joins at most one transition per pass, so on a store where one
entity's slot holds many values most detected pairs wait: their number grows
with the square of that entity's records. The report therefore names slot
conflicts by slot key, not by pair: one deferral per slot key lists the records
holding it whose further pairs on it wait, and says how many pairs that is.
Pairs without a slot conflict (the reference's negations) are one deferral each.

Two walks give the same report. With an operator that declares its slot
conflicts (:meth:`ContradictionOperator.beyond_slot_conflicts`) the pass visits
records in id order and lets each free record open a transition with its
smallest free partner, found through one heap of value-class heads per slot key,
so no pair list is built. With any other operator it asks about every candidate
pair in id order. A free record's first detected pair in that order is the one
the heaps find, so both walks open the same transitions; the deferred slot
pairs are then counted from the value classes, or from the pairs.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from memspec import MemspecError, ProposalError
from memspec.reference.pipeline.candidates import Pair, TextFeatures
from memspec.reference.pipeline.consolidation_report import Deferral
from memspec.reference.pipeline.operators import ContradictionOperator
from memspec.reference.ports import RecordStore
from memspec.reference.proposals import Proposal, ProposalKind
from memspec.reference.records import MemoryRecord, RecordState, RecordType

__all__ = ["Gate", "SlotClasses", "contradiction_pass", "partner"]

PASS = "contradiction"
_CLAIM_TYPES = frozenset({RecordType.FACT, RecordType.PROCEDURE})


class Gate(Protocol):
    """What the sub-pass needs of the pass's bookkeeping (``consolidation._Run``)."""

    store: RecordStore
    now: str
    deferred: list[Deferral]

    def reject(self, pass_name: str, detail: str, error: MemspecError) -> None:
        """Log a rejected proposal."""

    def apply(self, pass_name: str, action: str, record_ids: Sequence[str], reason: str,
              proposals: Callable[[], Sequence[Proposal]]) -> bool:
        """Gate and apply proposals; True if they were written."""


def partner(record: MemoryRecord) -> str | None:
    """The other side of ``record``'s transition block, if it has one."""
    if record.transition is None:
        return None
    first, second = record.transition.sides
    return second if first == record.id else first


def _authority(proposal: Proposal, a: MemoryRecord, b: MemoryRecord) -> str | None:
    if proposal.kind != ProposalKind.TRANSITION:
        return f"a contradiction operator may only propose a transition, not {proposal.kind}"
    if {proposal.target_id, proposal.other_id} != {a.id, b.id}:
        return "the transition must name exactly the candidate pair"
    return None


@dataclass(frozen=True)
class SlotClasses:
    """The slot keys that claims hold with two or more distinct values (as canonical JSON).

    ``classes[key]`` lists the value classes of ``key``, each the ids holding one
    value, sorted; ``class_of[id][key]`` is the index of that id's class.
    """

    classes: Mapping[str, tuple[tuple[str, ...], ...]]
    class_of: Mapping[str, Mapping[str, int]]

    @classmethod
    def of(cls, claims: Iterable[MemoryRecord]) -> SlotClasses:
        """The classes of ``claims``' slots."""
        features = TextFeatures()
        by_value: dict[str, dict[bytes, list[str]]] = defaultdict(lambda: defaultdict(list))
        for record in claims:
            for key, value in features.slot_values(record).items():
                by_value[key][value].append(record.id)
        classes: dict[str, tuple[tuple[str, ...], ...]] = {}
        class_of: dict[str, dict[str, int]] = defaultdict(dict)
        for key in sorted(by_value):
            if len(by_value[key]) < 2:
                continue
            groups = sorted(tuple(sorted(ids)) for ids in by_value[key].values())
            classes[key] = tuple(groups)
            for index, ids in enumerate(groups):
                for rid in ids:
                    class_of[rid][key] = index
        return cls(classes, dict(class_of))

    def disagree(self, a: str, b: str) -> list[str]:
        """The slot keys, sorted, that ``a`` and ``b`` both hold with different values."""
        of_a, of_b = self.class_of.get(a), self.class_of.get(b)
        if not of_a or not of_b:
            return []
        return sorted(k for k in of_a.keys() & of_b.keys() if of_a[k] != of_b[k])


class _Heads:
    """The smallest free id above a floor in each value class of one slot key, as a heap.

    Floors only rise (records are visited in id order) and records only become
    entangled, so each class's pointer only moves forward.
    """

    def __init__(self, classes: tuple[tuple[str, ...], ...], entangled: set[str]) -> None:
        self._classes = classes
        self._entangled = entangled
        self._at = [0] * len(classes)
        self._heap = [(ids[0], index) for index, ids in enumerate(classes)]
        heapq.heapify(self._heap)

    def _settle(self, floor: str) -> None:
        heap, entangled = self._heap, self._entangled
        while heap and (heap[0][0] <= floor or heap[0][0] in entangled):
            _, index = heapq.heappop(heap)
            ids, at = self._classes[index], self._at[index] + 1
            while at < len(ids) and (ids[at] <= floor or ids[at] in entangled):
                at += 1
            self._at[index] = at
            if at < len(ids):
                heapq.heappush(heap, (ids[at], index))

    def first_outside(self, floor: str, own: int) -> str | None:
        """The smallest free id above ``floor`` whose class is not ``own``."""
        self._settle(floor)
        if not self._heap:
            return None
        if self._heap[0][1] != own:
            return self._heap[0][0]
        top = heapq.heappop(self._heap)
        self._settle(floor)
        found = self._heap[0][0] if self._heap else None
        heapq.heappush(self._heap, top)
        return found


class _Walk:
    """One contradiction sub-pass: opens transitions, defers the rest (CONS-7, CONS-8)."""

    def __init__(self, run: Gate, operator: ContradictionOperator,
                 claims: Sequence[MemoryRecord]) -> None:
        self.run, self.operator = run, operator
        self.by_id = {r.id: r for r in claims}
        self.entangled = {r.id for r in claims if r.state == RecordState.TRANSITIONAL}
        self.slots = SlotClasses.of(claims)
        # Slot-conflict pairs that were not deferred (opened, already open, rejected).
        self.settled: set[tuple[str, str]] = set()

    def _propose(self, a: MemoryRecord, b: MemoryRecord) -> Proposal | None:
        """The operator's transition for the pair, None if it abstains or oversteps."""
        proposal = self.operator.propose_transition(a, b, now=self.run.now)
        if proposal is None:
            return None
        problem = _authority(proposal, a, b)
        if problem is not None:
            self.run.reject(PASS, f"transition of {a.id}, {b.id}",
                            ProposalError(problem, requirement="CONS-2"))
            return None
        return proposal

    def _open(self, a: MemoryRecord, b: MemoryRecord, proposal: Proposal) -> bool:
        if self.run.apply(PASS, "transition", (a.id, b.id), proposal.reason,
                          lambda: (proposal,)):
            self.entangled.update((a.id, b.id))
            return True
        return False

    def _defer_pair(self, a: MemoryRecord, b: MemoryRecord, proposal: Proposal,
                    busy: Sequence[str]) -> None:
        self.run.deferred.append(Deferral(
            PASS, (a.id, b.id),
            f"{', '.join(busy)} already joined a transition ({proposal.reason})"))

    # -- any operator: every candidate pair, in id order --------------------------------

    def pairs(self, pairs: Iterable[Pair]) -> None:
        """Ask about each pair in order; count the deferred slot conflicts by key."""
        waiting: dict[str, set[str]] = defaultdict(set)
        counts: dict[str, int] = defaultdict(int)
        for a, b in pairs:
            if partner(a) == b.id:
                continue
            proposal = self._propose(a, b)
            if proposal is None:
                continue
            busy = sorted({a.id, b.id} & self.entangled)
            if not busy:
                self._open(a, b, proposal)
                continue
            keys = self.slots.disagree(a.id, b.id)
            if not keys:
                self._defer_pair(a, b, proposal, busy)
            for key in keys:
                waiting[key].update((a.id, b.id))
                counts[key] += 1
        self._report_groups(waiting, counts)

    # -- an operator that declares its slot conflicts: groups, no pair list -------------

    def grouped(self, others: Iterable[Pair]) -> None:
        """Visit records in id order; each free one opens with its smallest free partner."""
        beyond: dict[str, list[MemoryRecord]] = defaultdict(list)
        for a, b in others:
            beyond[a.id].append(b)
        heads = {key: _Heads(classes, self.entangled)
                 for key, classes in self.slots.classes.items()}
        for x in self.by_id.values():
            y = partner(x)
            if y is not None and x.id < y and y in self.by_id:
                self.settled.add((x.id, y))
        for a_id in sorted(set(self.slots.class_of) | set(beyond)):
            a = self.by_id[a_id]
            opened = (None if a_id in self.entangled
                      else self._open_first(a, heads, beyond.get(a_id, [])))
            for b in beyond.get(a_id, []):
                if partner(a) == b.id or b.id == opened or (a_id, b.id) in self.settled:
                    continue
                proposal = self._propose(a, b)
                if proposal is None:
                    continue
                # Why: the pair list reaches (a, b) before a's own transition when b < opened,
                # so a is not busy yet there (b is never ``opened``, skipped above).
                earlier = opened is not None and b.id < opened
                busy = [rid for rid in sorted((a_id, b.id))
                        if rid in self.entangled and not (earlier and rid == a_id)]
                self._defer_pair(a, b, proposal, busy)
        self._report_counted()

    def _open_first(self, a: MemoryRecord, heads: Mapping[str, _Heads],
                    beyond: Sequence[MemoryRecord]) -> str | None:
        """Open ``a``'s first transition in pair order; the partner's id, or None."""
        own = self.slots.class_of.get(a.id, {})
        found = [heads[key].first_outside(a.id, index) for key, index in own.items()]
        found.append(next((b.id for b in beyond if b.id not in self.entangled), None))
        candidate = min((f for f in found if f is not None), default=None)
        while candidate is not None:
            b = self.by_id[candidate]
            proposal = self._propose(a, b)
            if proposal is not None and self._open(a, b, proposal):
                self.settled.add((a.id, b.id))
                return b.id
            # Why: rare (a gate rejection, or an operator breaking its contract), so the
            # next partner is found by a plain scan instead of through the heaps.
            self.settled.add((a.id, b.id))
            candidate = self._next_after(a, candidate, beyond)
        return None

    def _next_after(self, a: MemoryRecord, after: str,
                    beyond: Sequence[MemoryRecord]) -> str | None:
        found = [b.id for b in beyond if b.id > after and b.id not in self.entangled]
        for key, index in self.slots.class_of.get(a.id, {}).items():
            for other, ids in enumerate(self.slots.classes[key]):
                if other == index:
                    continue
                at = bisect_right(ids, after)
                while at < len(ids) and ids[at] in self.entangled:
                    at += 1
                if at < len(ids):
                    found.append(ids[at])
        return min(found, default=None)

    def _report_counted(self) -> None:
        """Deferred slot pairs: every pair across value classes, less the settled ones."""
        settled_degree: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        settled_count: dict[str, int] = defaultdict(int)
        for x, y in self.settled:
            for key in self.slots.disagree(x, y):
                settled_degree[key][x] += 1
                settled_degree[key][y] += 1
                settled_count[key] += 1
        waiting: dict[str, set[str]] = {}
        counts: dict[str, int] = {}
        for key, classes in self.slots.classes.items():
            total = sum(len(ids) for ids in classes)
            cross = (total * total - sum(len(ids) ** 2 for ids in classes)) // 2
            counts[key] = cross - settled_count[key]
            degree = settled_degree[key]
            waiting[key] = {rid for ids in classes for rid in ids
                            if total - len(ids) - degree[rid] > 0}
        self._report_groups(waiting, counts)

    def _report_groups(self, waiting: Mapping[str, set[str]],
                       counts: Mapping[str, int]) -> None:
        for key in sorted(waiting):
            count = counts[key]
            if count <= 0:
                continue
            ids = tuple(sorted(waiting[key]))
            self.run.deferred.append(Deferral(
                PASS, ids,
                f"slot {key!r} disagrees among these {len(ids)} records and each joins at "
                f"most one transition per pass, so {count} detected "
                f"{'pair of them waits' if count == 1 else 'pairs of them wait'} "
                "for a later pass"))


def contradiction_pass(run: Gate, operator: ContradictionOperator) -> None:
    """Detect contradictions among active and transitional facts and procedures (CONS-9),
    open at most one transition per record (CONS-8) and report every further pair."""
    claims = [r for r in run.store
              if r.type in _CLAIM_TYPES
              and r.state in (RecordState.ACTIVE, RecordState.TRANSITIONAL)]
    walk = _Walk(run, operator, claims)
    beyond = operator.beyond_slot_conflicts(claims)
    found = operator.candidate_set(claims) if beyond is None else beyond
    run.deferred.extend(Deferral(PASS, (cut.record_id,), cut.reason()) for cut in found.cuts)
    if beyond is None:
        walk.pairs(found.pairs)
    else:
        walk.grouped(beyond.pairs)
