"""Consolidation: one deterministic pass of six sub-passes over a record store (SPEC §9).

Order (CONS-1): exact dedup -> near-dup merge -> contradiction detection ->
resolution (only with a resolver operator) -> promotion -> rule-flag sweep.
Every mutation is a typed proposal (or, for resolution, a typed verdict)
validated against the lifecycle machine before anything is written; an
illegal or out-of-authority one is rejected and logged, never repaired
(CONS-2). The report names every mutation with before/after states and a
reason, every rejection with its error class, every contradiction that had
to wait (CONS-3, CONS-8), and every record whose comparisons block purging
(``max_block``) cut. Same store, operators, config and ``now`` give
the same report (CONS-4): records are visited in id order and every record
consolidation creates is born at ``now``. The pass runs under raised, restored
collector thresholds (``consolidation_gc``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from memspec import (
    LimitError,
    MemspecError,
    NotFoundError,
    ProposalError,
    canonical_json,
    confidence_to_wire,
)
from memspec.reference.lifecycle import LIVE_STATES, refresh_rule_flag
from memspec.reference.pipeline.candidates import (
    DEFAULT_MAX_BLOCK,
    CandidateSet,
    TextFeatures,
    candidate_pairs,
    shares_block,
)
from memspec.reference.pipeline.consolidation_gc import pass_collector
from memspec.reference.pipeline.consolidation_report import (
    Action,
    ConsolidationReport,
    Deferral,
    Rejection,
)
from memspec.reference.pipeline.contradiction import contradiction_pass
from memspec.reference.pipeline.contradiction import partner as partner_of
from memspec.reference.pipeline.operators import (
    CONSOLIDATION_KIND,
    ContradictionOperator,
    HeuristicContradictionOperator,
    HeuristicResolutionOperator,
    NearDupOperator,
    Resolution,
    ResolutionOperator,
    TrigramNearDupOperator,
    strength_key,
)
from memspec.reference.ports import RecordStore
from memspec.reference.proposals import Proposal, ProposalKind, apply_proposals, resolve
from memspec.reference.records import MemoryRecord, Provenance, RecordState, RecordType

__all__ = [
    "PASSES",
    "PROMOTION_SLOT",
    "Action",
    "ConsolidationConfig",
    "ConsolidationOperators",
    "ConsolidationReport",
    "Deferral",
    "Rejection",
    "candidate_pairs",
    "consolidate",
    "default_operators",
    "promotion_signature",
]

PASSES = ("exact-dedup", "near-dup", "contradiction", "resolution", "promotion", "flag-sweep")
#: The slot in which a promoted rule records the signature it was promoted for.
PROMOTION_SLOT = "promotion_signature"


def _unit_decimal(value: object, name: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, Decimal | str | int | float):
        raise LimitError(f"{name} must be a decimal number, not {type(value).__name__}")
    try:
        number = Decimal(str(value))
    except InvalidOperation as exc:
        raise LimitError(f"{name} {value!r} is not a decimal number") from exc
    if not number.is_finite() or not Decimal(0) <= number <= Decimal(1):
        raise LimitError(f"{name} {value!r} is outside [0, 1]")
    return number


@dataclass(frozen=True)
class ConsolidationConfig:
    """The knobs of a pass; thresholds are exact decimals so the report never depends on floats."""

    near_dup_threshold: Decimal = Decimal("0.6")
    promotion_threshold: int = 3
    contradiction_threshold: Decimal = Decimal("0.5")
    #: Block-purging cap of the detection operators (see ``candidates``).
    max_block: int | None = DEFAULT_MAX_BLOCK

    def __post_init__(self) -> None:
        object.__setattr__(self, "near_dup_threshold",
                           _unit_decimal(self.near_dup_threshold, "near_dup_threshold"))
        object.__setattr__(self, "contradiction_threshold",
                           _unit_decimal(self.contradiction_threshold,
                                         "contradiction_threshold"))
        threshold = self.promotion_threshold
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
            raise LimitError(f"promotion_threshold must be a positive integer, not {threshold!r}")
        cap = self.max_block
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise LimitError(f"max_block must be a positive integer, not {cap!r}")

    @classmethod
    def from_wire(cls, config: object) -> ConsolidationConfig:
        """Build from the engine protocol's config object (decimals as strings, e.g. "0.6")."""
        if config is None:
            return cls()
        if not isinstance(config, dict):
            raise LimitError("consolidation config must be an object")
        unknown = set(config) - {"near_dup_threshold", "promotion_threshold",
                                 "contradiction_threshold", "max_block"}
        if unknown:
            raise LimitError(f"unknown consolidation config keys {sorted(unknown)}")
        if "max_block" in config and config["max_block"] is None:
            # On the wire the cap is a positive integer or absent (no cap).
            raise LimitError("max_block must be a positive integer, not None")
        return cls(**config)


@dataclass(frozen=True)
class ConsolidationOperators:
    """The operator on each detection port; without a resolver, disputes wait for a human."""

    near_dup: NearDupOperator
    contradiction: ContradictionOperator
    resolver: ResolutionOperator | None = None


def default_operators(
    config: ConsolidationConfig | None = None, *, auto_resolve: bool = False
) -> ConsolidationOperators:
    """The shipped heuristics; the auto-resolver only when asked for (``auto_resolve=True``)."""
    config = config or ConsolidationConfig()
    return ConsolidationOperators(
        near_dup=TrigramNearDupOperator(threshold=config.near_dup_threshold,
                                        max_block=config.max_block),
        contradiction=HeuristicContradictionOperator(threshold=config.contradiction_threshold,
                                                     max_block=config.max_block),
        resolver=HeuristicResolutionOperator() if auto_resolve else None,
    )


@dataclass
class _Run:
    """Mutable bookkeeping of one pass (internal; the report is built from it at the end)."""

    store: RecordStore
    now: str
    actions: list[Action] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    deferred: list[Deferral] = field(default_factory=list)
    touched: set[str] = field(default_factory=set)

    def states(self, record_ids: Sequence[str]) -> tuple[str, ...]:
        """The current states of those of ``record_ids`` that exist, in order."""
        return tuple(self.store.get(rid).state.value for rid in record_ids
                     if rid in self.store)

    def reject(self, pass_name: str, detail: str, error: MemspecError) -> None:
        self.rejections.append(Rejection(pass_name, f"{detail}: {error}", error.code))

    def attempt(
        self,
        pass_name: str,
        action: str,
        record_ids: Sequence[str],
        reason: str,
        write: Callable[[], Iterable[MemoryRecord]],
    ) -> bool:
        """Run one gated write; log an action on success and a rejection on failure."""
        before = self.states(record_ids)
        try:
            written = tuple(write())
        except MemspecError as exc:
            self.reject(pass_name, f"{action} of {', '.join(record_ids)} rejected", exc)
            return False
        self.touched.update(r.id for r in written)
        after = self.states(record_ids)
        self.actions.append(Action(pass_name, action, tuple(record_ids), before, after, reason))
        return True

    def apply(self, pass_name: str, action: str, record_ids: Sequence[str], reason: str,
              proposals: Callable[[], Sequence[Proposal]]) -> bool:
        """Gate and apply the proposals ``proposals()`` builds (all or nothing).

        Building happens inside the gate too: a proposal that cannot even be
        built (say, a version that would predate its record) is a rejection.
        """
        return self.attempt(pass_name, action, record_ids, reason,
                            lambda: apply_proposals(self.store, proposals(), now=self.now,
                                                    keeper_versions=True))


def _given(*proposals: Proposal) -> Callable[[], tuple[Proposal, ...]]:
    """A builder for proposals that already exist."""
    return lambda: proposals


def _active(store: RecordStore) -> list[MemoryRecord]:
    return list(store.list(state=RecordState.ACTIVE))


def _exact_dedup(run: _Run) -> None:
    groups: dict[bytes, list[MemoryRecord]] = defaultdict(list)
    for record in _active(run.store):
        key = canonical_json([str(record.type), record.body, dict(record.slots)])
        groups[key].append(record)
    for key in sorted(groups):
        keeper, *weaker = sorted(groups[key], key=strength_key)
        for weak in weaker:
            reason = f"exact duplicate of {keeper.id}"
            run.apply("exact-dedup", "supersede", (weak.id, keeper.id), reason,
                      _keeper_supersedes(run, keeper.id, weak.id, reason))


def _keeper_supersedes(run: _Run, keeper_id: str, weak_id: str,
                       reason: str) -> Callable[[], tuple[Proposal, ...]]:
    """Build: the keeper's next version names the weaker copy it supersedes."""

    def build() -> tuple[Proposal, ...]:
        successor = run.store.get(keeper_id).evolve(run.now, supersedes=weak_id)
        return (Proposal(kind=ProposalKind.SUPERSEDE, record=successor, target_id=weak_id,
                         reason=reason),)

    return build


def _merge_authority(proposal: Proposal, a: MemoryRecord, b: MemoryRecord) -> str | None:
    """Why a near-dup proposal oversteps CONS-6, or None when it is a proper merge."""
    pair = {a.id, b.id}
    if proposal.kind != ProposalKind.SUPERSEDE or proposal.record is None:
        return f"a near-dup operator may only propose a supersede, not {proposal.kind}"
    if proposal.target_id not in pair or proposal.record.supersedes != proposal.target_id:
        return "the merged record must supersede one side of the pair"
    if not pair <= set(proposal.record.evidence):
        return "the merged record must carry evidence links to both sides"
    if proposal.record.id in pair:
        return "the merged record must be a new record"
    return None


def _defer_cuts(run: _Run, pass_name: str, found: CandidateSet) -> None:
    """Report each record whose comparisons block purging cut (one entry per record)."""
    for cut in found.cuts:
        run.deferred.append(Deferral(pass_name, (cut.record_id,), cut.reason()))


def _try_merge(run: _Run, operator: NearDupOperator, a: MemoryRecord, b: MemoryRecord,
               merged: set[str]) -> bool:
    """Ask the operator about one pair and apply its merge through the gate; True if applied."""
    proposal = operator.propose_merge(a, b, now=run.now)
    if proposal is None:
        return False
    problem = _merge_authority(proposal, a, b)
    if problem is not None:
        run.reject("near-dup", f"merge of {a.id}, {b.id}",
                   ProposalError(problem, requirement="CONS-6"))
        return False
    assert proposal.record is not None
    other = b if proposal.target_id == a.id else a

    def build(merge: Proposal = proposal, other_id: str = other.id) -> tuple[Proposal, ...]:
        # The other side is superseded by the next version of the merged record.
        assert merge.record is not None
        follow_up = Proposal(kind=ProposalKind.SUPERSEDE,
                             record=merge.record.evolve(run.now, supersedes=other_id),
                             target_id=other_id, reason=merge.reason)
        return (merge, follow_up)

    ids = (str(proposal.target_id), other.id, proposal.record.id)
    if run.apply("near-dup", "merge", ids, proposal.reason, build):
        merged.update((a.id, b.id))
        return True
    return False


def _near_dup(run: _Run, operator: NearDupOperator) -> None:
    """Greedy merging in pair order: each record merges at most once per pass."""
    merged: set[str] = set()
    active = _active(run.store)
    grouped = operator.candidate_groups(active)
    if grouped is None:
        found = operator.candidate_set(active)
        _defer_cuts(run, "near-dup", found)
        for a, b in found.pairs:
            if a.id not in merged and b.id not in merged:
                _try_merge(run, operator, a, b, merged)
        return
    run.deferred.extend(Deferral("near-dup", (cut.record_id,), cut.reason())
                        for cut in grouped.cuts)
    # Why: the pairs in (a.id, b.id) order, restricted to one a, are a's later group
    # members in id order, and a merged record takes part in no later pair; so visiting
    # records in id order and stopping at a's first merge asks exactly what the pair list
    # would, without listing a group's pairs.
    features = TextFeatures()
    where = {r.id: (g, i) for g, group in enumerate(grouped.groups) for i, r in enumerate(group)}
    for record_id in sorted(where):
        if record_id in merged:
            continue
        g, i = where[record_id]
        group = grouped.groups[g]
        a = group[i]
        for b in group[i + 1:]:
            if b.id in merged or not shares_block(a, b, features):
                continue
            if _try_merge(run, operator, a, b, merged):
                break


def _open_pairs(store: RecordStore) -> list[tuple[MemoryRecord, MemoryRecord]]:
    pairs: dict[tuple[str, str], tuple[MemoryRecord, MemoryRecord]] = {}
    for record in store.list(state=RecordState.TRANSITIONAL):
        partner_id = partner_of(record)
        if partner_id is None or partner_id not in store:
            continue
        partner = store.get(partner_id)
        if partner.transition != record.transition:
            continue
        first, second = sorted((record, partner), key=lambda r: r.id)
        pairs[(first.id, second.id)] = (first, second)
    return [pairs[key] for key in sorted(pairs)]


def _resolution(run: _Run, resolver: ResolutionOperator) -> None:
    for a, b in _open_pairs(run.store):
        verdict = resolver.propose_resolution(a, b, now=run.now)
        if verdict is None:
            continue
        if {verdict.winner_id, verdict.loser_id} != {a.id, b.id}:
            run.reject("resolution", f"resolution of {a.id}, {b.id}",
                       ProposalError("a verdict must name the two sides of the transition",
                                     requirement="RES-1"))
            continue

        def write(v: Resolution = verdict) -> tuple[MemoryRecord, ...]:
            return resolve(run.store, winner_id=v.winner_id, loser_id=v.loser_id,
                           reason=v.reason, now=run.now)

        run.attempt("resolution", "resolve", (verdict.winner_id, verdict.loser_id),
                    verdict.reason, write)


def promotion_signature(record: MemoryRecord) -> dict[str, Any] | None:
    """An episode's promotion signature: its sorted tags, else its sorted slot keys, else None."""
    if record.tags:
        return {"tags": sorted(record.tags)}
    if record.slots:
        return {"slot_keys": sorted(record.slots)}
    return None


def _mean_confidence(records: Sequence[MemoryRecord]) -> str:
    total = sum((Decimal(r.confidence) for r in records), Decimal(0))
    return confidence_to_wire(total / len(records))


def _promoted_rule(episodes: Sequence[MemoryRecord], signature: dict[str, Any],
                   now: str) -> MemoryRecord:
    by, values = next(iter(signature.items()))
    label = ("tags " if by == "tags" else "slot keys ") + ", ".join(values)
    return MemoryRecord.create(
        RecordType.RULE,
        f"Recurring pattern across {len(episodes)} episodes sharing {label}.",
        Provenance(kind=CONSOLIDATION_KIND),
        created_at=now,
        slots={PROMOTION_SLOT: signature},
        confidence=_mean_confidence(episodes),
        evidence=tuple(sorted(e.id for e in episodes)),
        tags=tuple(values) if by == "tags" else (),
    )


def _promotion(run: _Run, threshold: int) -> None:
    groups: dict[bytes, list[MemoryRecord]] = defaultdict(list)
    signatures: dict[bytes, dict[str, Any]] = {}
    for record in run.store.list(state=RecordState.ACTIVE, type=RecordType.EPISODE):
        signature = promotion_signature(record)
        if signature is not None:
            key = canonical_json(signature)
            groups[key].append(record)
            signatures[key] = signature
    promoted = {canonical_json(r.slots[PROMOTION_SLOT]) for r in run.store.list(
        type=RecordType.RULE) if r.state != RecordState.ARCHIVED and PROMOTION_SLOT in r.slots}
    for key in sorted(groups):
        episodes = groups[key]
        if len(episodes) < threshold or key in promoted:
            continue
        rule = _promoted_rule(episodes, signatures[key], run.now)
        proposal = Proposal(kind=ProposalKind.CREATE, record=rule,
                            reason=f"{len(episodes)} active episodes share one signature")
        run.apply("promotion", "create", (rule.id,), proposal.reason, _given(proposal))


def _latest_or_none(store: RecordStore, record_id: str) -> MemoryRecord | None:
    try:
        return store.get(record_id)
    except NotFoundError:
        return None


def _flag_sweep(run: _Run) -> None:
    for rule in run.store.list(type=RecordType.RULE):
        if rule.state == RecordState.ARCHIVED:
            continue
        evidence = {eid: _latest_or_none(run.store, eid) for eid in rule.evidence}
        live = any(r is not None and r.state in LIVE_STATES for r in evidence.values())
        if live != rule.flagged:
            continue  # the flag is already right
        action = "unflag" if live else "flag"
        reason = "live evidence restored" if live else "no evidence record is live"

        def write(old: MemoryRecord = rule,
                  ev: dict[str, MemoryRecord | None] = evidence) -> tuple[MemoryRecord, ...]:
            refreshed = refresh_rule_flag(old, ev, now=run.now)
            run.store.put(refreshed)
            return (refreshed,)

        run.attempt("flag-sweep", action, (rule.id,), reason, write)


def consolidate(
    store: RecordStore,
    *,
    now: str,
    operators: ConsolidationOperators | None = None,
    config: ConsolidationConfig | None = None,
) -> ConsolidationReport:
    """Run one consolidation pass over ``store`` at time ``now`` and report it."""
    config = config or ConsolidationConfig()
    operators = operators or default_operators(config)
    run = _Run(store, now)
    with pass_collector():
        _exact_dedup(run)
        _near_dup(run, operators.near_dup)
        contradiction_pass(run, operators.contradiction)
        if operators.resolver is not None:
            _resolution(run, operators.resolver)
        _promotion(run, config.promotion_threshold)
        _flag_sweep(run)
    return ConsolidationReport(tuple(run.actions), tuple(run.rejections), tuple(run.deferred),
                               tuple(sorted(run.touched)))
