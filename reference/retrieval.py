"""Recall: state-aware, budgeted, deterministic retrieval (spec section 7).

``score = relevance x state weight x recency x salience x confidence`` (RCL-1):

- relevance: each index's scores divided by that index's best score (so every
  index contributes on [0, 1]), then the best across indexes;
- state weight: active 1.0, transitional 0.8, superseded 0.3, archived 0.1;
- recency: ``max(0.1, 0.5 ** (days since updated_at / 30))``;
- salience: ``1 + 0.25 * log2(1 + touches)`` from the sidecar (1.0 without one);
- confidence: the record's own.

Scores are rounded to six decimals and ranked score descending, id ascending.
A record pulled in as a transition partner or a predecessor inherits the
relevance of the record that pulled it. With ``extensions`` (spec/EXTENSIONS.md)
expired records are left out unless asked for, entries carry ``x_marks``,
sourced records rank before hypotheses of equal score, and ``as_of`` recalls
from the view of the store at a past instant. Budgeting picks whole records in
rank order; a transition pair is one unit that fits entirely or not at all.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from memspec import LimitError, NotFoundError, check_timestamp, confidence_from_wire
from memspec.reference.extensions import is_expired, is_hypothesis, marks, version_as_of
from memspec.reference.pipeline.decay import SalienceScores, age_days
from memspec.reference.ports import RecordStore, SearchIndex
from memspec.reference.records import MemoryRecord, RecordState
from memspec.reference.search.memory_index import check_k, check_query

__all__ = [
    "CHARS_PER_TOKEN",
    "REASONS",
    "RECENCY_FLOOR",
    "RECENCY_HALF_LIFE_DAYS",
    "STATE_WEIGHTS",
    "TOUCH_BONUS",
    "RetrievedBlock",
    "RetrievedRecord",
    "estimate_tokens",
    "retrieve",
]

STATE_WEIGHTS: dict[RecordState, float] = {
    RecordState.ACTIVE: 1.0,
    RecordState.TRANSITIONAL: 0.8,
    RecordState.SUPERSEDED: 0.3,
    RecordState.ARCHIVED: 0.1,
}
RECENCY_HALF_LIFE_DAYS = 30.0
RECENCY_FLOOR = 0.1
TOUCH_BONUS = 0.25
CHARS_PER_TOKEN = 4
#: Inclusion reasons, in the order a record lists them (RCL-11).
REASONS = ("query-match", "transition-partner", "predecessor")
_SCORE_DIGITS = 6


def estimate_tokens(body: str) -> int:
    """Token cost of a body: ``max(1, ceil(len(body) / 4))``."""
    return max(1, math.ceil(len(body) / CHARS_PER_TOKEN))


@dataclass(frozen=True)
class RetrievedRecord:
    """One record of a recall result, with its score, token cost and inclusion reasons."""

    record: MemoryRecord
    score: float
    tokens: int
    reasons: tuple[str, ...]
    marks: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        """The record's id."""
        return self.record.id

    def model_dump(self) -> dict[str, Any]:
        """``{"record", "score", "tokens", "reasons"}``, plus ``x_marks`` when marked."""
        out: dict[str, Any] = {"record": self.record.model_dump(), "score": self.score,
                               "tokens": self.tokens, "reasons": list(self.reasons)}
        if self.marks:
            out["x_marks"] = list(self.marks)
        return out


@dataclass(frozen=True)
class RetrievedBlock:
    """A recall result: records in rank order, never more tokens than the budget."""

    query: str
    records: tuple[RetrievedRecord, ...]
    budget_tokens: int
    total_tokens: int

    @property
    def ids(self) -> tuple[str, ...]:
        """Record ids in rank order."""
        return tuple(r.record.id for r in self.records)

    def __len__(self) -> int:
        return len(self.records)

    def model_dump(self) -> dict[str, Any]:
        """The wire result ``{"records": [...], "total_tokens": n}``."""
        return {"records": [r.model_dump() for r in self.records],
                "total_tokens": self.total_tokens}


@dataclass
class _Pick:
    record: MemoryRecord
    relevance: float
    reasons: set[str]


class _Recall:
    """One retrieval's working state (kept out of ``retrieve`` to keep each step small)."""

    def __init__(self, store: RecordStore, now: str, include_archived: bool,
                 include_history: bool, touches: SalienceScores | None,
                 extensions: _Extensions | None = None) -> None:
        self.store, self.now = store, now
        self.ext = extensions
        self.include_archived, self.include_history = include_archived, include_history
        self.touches = touches
        self.matched: dict[str, float] = {}
        self.chosen: dict[str, _Pick] = {}
        self.used = 0

    def allowed(self, record: MemoryRecord) -> bool:
        if self.ext is not None and not self.ext.visible(record):
            return False
        if record.state is RecordState.ARCHIVED:
            return self.include_archived
        if record.state is RecordState.SUPERSEDED:
            return self.include_history
        return True

    def score(self, record: MemoryRecord, relevance: float) -> float:
        touches = 0 if self.touches is None else self.touches.touches(record.id)
        recency = max(RECENCY_FLOOR,
                      math.pow(0.5, age_days(record.updated_at, self.now) / RECENCY_HALF_LIFE_DAYS))
        value = (relevance * STATE_WEIGHTS[record.state] * recency
                 * (1.0 + TOUCH_BONUS * math.log2(1 + touches))
                 * confidence_from_wire(record.confidence))
        return round(value, _SCORE_DIGITS)

    def fetch(self, record_id: str) -> MemoryRecord | None:
        try:
            if self.ext is not None and self.ext.as_of is not None:
                return version_as_of(self.store, record_id, self.ext.as_of)
            return self.store.get(record_id)
        except NotFoundError:
            return None

    def unit(self, record: MemoryRecord) -> list[MemoryRecord] | None:
        """The record plus its transition partner, or None when the partner cannot be
        shown (missing or not carrying the same block): never one side alone (RCL-5)."""
        block = record.transition
        if record.state is not RecordState.TRANSITIONAL or block is None:
            return [record]
        other_id = block.sides[1] if block.sides[0] == record.id else block.sides[0]
        partner = self.fetch(other_id)
        if (partner is None or partner.state is not RecordState.TRANSITIONAL
                or partner.transition != block
                or (self.ext is not None and not self.ext.visible(partner))):
            return None
        return [record, partner]

    def admit(self, members: list[MemoryRecord], relevance: float, reasons: list[str],
              budget: int) -> bool:
        """Add ``members`` (one record or an atomic pair) if all of them fit the budget."""
        new = [m for m in members if m.id not in self.chosen]
        cost = sum(estimate_tokens(m.body) for m in new)
        if self.used + cost > budget:
            return False
        self.used += cost
        for member, reason in zip(members, reasons, strict=True):
            tags = {reason}
            value = relevance
            if member.id in self.matched:
                tags.add("query-match")
                value = max(value, self.matched[member.id])
            pick = self.chosen.setdefault(member.id, _Pick(member, value, set()))
            pick.reasons |= tags
            pick.relevance = max(pick.relevance, value)
        return True

    def history(self, start: MemoryRecord, relevance: float, budget: int) -> None:
        """Surface ``start``'s supersedes chain, nearest predecessor first (RCL-7)."""
        seen = {start.id}
        link = start.supersedes
        while link is not None and link not in seen:
            seen.add(link)
            predecessor = self.fetch(link)
            if predecessor is None:
                return
            link = predecessor.supersedes
            if not self.allowed(predecessor):
                continue
            members = self.unit(predecessor)
            if members is None:
                continue
            reasons = ["predecessor"] + ["transition-partner"] * (len(members) - 1)
            if not self.admit(members, relevance, reasons, budget):
                return


@dataclass(frozen=True)
class _Extensions:
    """What the extension profiles change in one recall (XEXP, XTT, XPROV, XHYP)."""

    at: str
    include_expired: bool
    as_of: str | None

    def visible(self, record: MemoryRecord) -> bool:
        return self.include_expired or not is_expired(record, self.at)

    def rank(self, record: MemoryRecord) -> int:
        return 1 if is_hypothesis(record) else 0


def _relevance(query: str, indexes: Sequence[SearchIndex], k: int) -> dict[str, float]:
    best: dict[str, float] = {}
    for index in indexes:
        pairs = index.candidates(query, k)
        top = max((score for _, score in pairs), default=0.0)
        if top <= 0.0:
            continue
        for record_id, score in pairs:
            value = min(1.0, max(0.0, score / top))
            if value > best.get(record_id, 0.0):
                best[record_id] = value
    return best


def _check_budget(budget_tokens: object) -> int:
    if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or budget_tokens < 0:
        raise LimitError(f"budget_tokens must be a non-negative integer, not {budget_tokens!r}",
                         requirement="RCL-12")
    return budget_tokens


def retrieve(
    query: str,
    *,
    store: RecordStore,
    indexes: Iterable[SearchIndex],
    budget_tokens: int,
    now: str,
    include_archived: bool = False,
    include_history: bool = False,
    touches: SalienceScores | None = None,
    candidates_per_index: int = 32,
    extensions: bool = False,
    include_expired: bool = False,
    as_of: str | None = None,
) -> RetrievedBlock:
    """Recall records for ``query`` within ``budget_tokens`` (spec section 7).

    Query matches come from ``indexes``; superseded records count only with
    ``include_history`` (which also surfaces each included record's
    ``supersedes`` chain, reason "predecessor"), archived ones only with
    ``include_archived``. A transitional record always comes with its partner
    (fetched from the store, reason "transition-partner") or not at all.
    Records are whole, bodies untouched, ``total_tokens <= budget_tokens``.
    Each returned record is touched in ``touches``; no record is written.
    ``extensions`` turns on the extension profiles' rules (``include_expired``
    and ``as_of`` apply only then).
    """
    check_query(query)
    budget = _check_budget(budget_tokens)
    check_k(candidates_per_index)
    check_timestamp(now, field="now")
    ext = None
    if extensions:
        if as_of is not None:
            check_timestamp(as_of, field="as_of")
        ext = _Extensions(as_of or now, include_expired, as_of)
    run = _Recall(store, now, include_archived, include_history, touches, ext)
    matches: list[tuple[float, str, MemoryRecord, float]] = []
    for record_id, relevance in _relevance(query, tuple(indexes), candidates_per_index).items():
        record = run.fetch(record_id)
        if record is not None and run.allowed(record):
            run.matched[record_id] = relevance
            matches.append((run.score(record, relevance), record_id, record, relevance))
    matches.sort(key=lambda m: (-m[0], 0 if ext is None else ext.rank(m[2]), m[1]))
    for _, record_id, record, relevance in matches:
        if record_id in run.chosen:
            continue
        members = run.unit(record)
        if members is None:
            continue
        reasons = ["query-match"] + ["transition-partner"] * (len(members) - 1)
        if run.admit(members, relevance, reasons, budget) and include_history:
            for member in members:
                run.history(member, relevance, budget)
    picked = [
        RetrievedRecord(record=p.record, score=run.score(p.record, p.relevance),
                        tokens=estimate_tokens(p.record.body),
                        reasons=tuple(r for r in REASONS if r in p.reasons),
                        marks=() if ext is None else marks(p.record, ext.at))
        for p in run.chosen.values()
    ]
    picked.sort(key=lambda r: (-r.score, 0 if ext is None else ext.rank(r.record),
                               r.record.id))
    if touches is not None:
        for item in picked:
            touches.touch(item.record.id, now)
    return RetrievedBlock(query=query, records=tuple(picked), budget_tokens=budget,
                          total_tokens=sum(r.tokens for r in picked))
