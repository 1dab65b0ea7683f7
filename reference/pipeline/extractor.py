"""Model-free write-stage extractors: raw text in, ``create`` proposals out (spec section 8).

Extractors never create rules (WR-2): rules only come from evidence-linked
promotion during consolidation. Every record they propose is born active at
the time the write stage passes in, unlinked and unflagged (WR-3).
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from memspec import ProposalError, check_timestamp, timestamp_from_datetime
from memspec.reference.ports import Operator
from memspec.reference.proposals import Proposal, ProposalKind
from memspec.reference.records import MemoryRecord, Provenance, RecordType
from memspec.reference.text import infer_slots, tokenize

__all__ = [
    "Extractor",
    "HeuristicExtractor",
    "VerbatimExtractor",
    "classify",
    "extract_all",
    "split_sentences",
]


class Extractor(Operator):
    """A write-stage Operator whose records are born at a time it is given.

    The port method ``propose(text, provenance)`` has no clock argument, so it
    uses the ``now`` fixed at construction; the write stage calls
    :meth:`extract` with its own ``now`` instead. An extractor never reads a clock.
    """

    now: str | None = None

    @abstractmethod
    def extract(self, text: str, provenance: Provenance, *, now: str) -> tuple[Proposal, ...]:
        """``create`` proposals for ``text``, every record born at ``now``."""

    def propose(self, text: str, provenance: Provenance) -> tuple[Proposal, ...]:
        """The Operator port: :meth:`extract` at the ``now`` fixed at construction."""
        if self.now is None:
            raise ProposalError("this extractor was built without a time; "
                                "call extract(text, provenance, now=...)")
        return self.extract(text, provenance, now=self.now)


def _create(record: MemoryRecord) -> Proposal:
    return Proposal(kind=ProposalKind.CREATE, record=record)


def _check_text(text: object) -> str:
    if not isinstance(text, str):
        raise ProposalError(f"extractor input must be text, not {type(text).__name__}")
    return text


@dataclass(frozen=True)
class VerbatimExtractor(Extractor):
    """One fact per input: the text, stripped of surrounding whitespace, is the body.

    Slots come from :func:`memspec.reference.text.infer_slots`. Blank text
    proposes nothing.
    """

    confidence: float | str | Decimal = 1.0
    tags: tuple[str, ...] = ()
    now: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "tags", tuple(self.tags))

    def extract(self, text: str, provenance: Provenance, *, now: str) -> tuple[Proposal, ...]:
        """A single ``create`` proposal for the whole text, or none for blank text."""
        body = _check_text(text).strip()
        check_timestamp(now, field="now")
        if not body:
            return ()
        return (_create(MemoryRecord.create(
            RecordType.FACT, body, provenance, created_at=now, slots=infer_slots(body),
            confidence=self.confidence, tags=self.tags)),)


_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")
_QUESTION = re.compile(r"\?\s*$")
_PROCEDURE_START = re.compile(
    r"^(?:to\s+\w+[^,]*,|first\b|then\b|next\b|finally\b|step\s+\d+\b|always\b|make sure\b|"
    r"(?:run|use|install|open|click|type|restart|deploy|set|add|remove|call|create|check|"
    r"start|stop|build|configure|enable|disable|update|upgrade|press|select|copy|delete)\s)",
    re.IGNORECASE,
)
_PROCEDURE_ANY = re.compile(r"\b(?:in order to|how to|you should|you must|you need to)\b",
                            re.IGNORECASE)
_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_EVENT_MARKER = re.compile(
    r"\b(?:yesterday|today|tonight|this (?:morning|afternoon|evening|week)|"
    r"last (?:night|week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"ago|earlier|on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b",
    re.IGNORECASE,
)
_FIRST_PERSON_PAST = re.compile(r"^(?:i|we)\s+(?:\w+ed|met|went|saw|made|had|got|took|"
                                r"found|ran|wrote|shipped|fixed|broke|spoke|told)\b",
                                re.IGNORECASE)
_YESTERDAY = re.compile(r"\byesterday\b", re.IGNORECASE)
_MIN_TOKENS = 3


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``: split after ``.``, ``!`` or ``?`` followed by whitespace, and at
    line breaks; stripped, blanks dropped ("3.11" stays whole)."""
    return [part.strip() for part in _SENTENCE_BREAK.split(text) if part.strip()]


def _event_time(sentence: str, now: str) -> str | None:
    """When an episode happened: an ISO date it names (midnight UTC, never later than
    ``now``), a day before ``now`` for "yesterday", else ``now``; None when the sentence
    has no event shape."""
    date = _DATE.search(sentence)
    if date is not None:
        try:
            moment = datetime(int(date[1]), int(date[2]), int(date[3]), tzinfo=UTC)
        except ValueError:
            moment = None
        if moment is not None:
            return min(timestamp_from_datetime(moment), now)
    if _EVENT_MARKER.search(sentence) is None and _FIRST_PERSON_PAST.search(sentence) is None:
        return None
    if _YESTERDAY.search(sentence):
        base = datetime.strptime(now, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        return timestamp_from_datetime(base - timedelta(days=1))
    return now


def classify(sentence: str, now: str) -> tuple[RecordType, str | None] | None:
    """The record type a sentence shape suggests (never a rule), with an episode's event
    time; None for questions and fragments under three words."""
    if _QUESTION.search(sentence) or len(tokenize(sentence)) < _MIN_TOKENS:
        return None
    if _PROCEDURE_START.search(sentence) or _PROCEDURE_ANY.search(sentence):
        return RecordType.PROCEDURE, None
    occurred = _event_time(sentence, now)
    if occurred is not None:
        return RecordType.EPISODE, occurred
    return RecordType.FACT, None


@dataclass(frozen=True)
class HeuristicExtractor(Extractor):
    """Regex sentence shapes to fact, episode and procedure proposals; never rules.

    Each sentence (see :func:`split_sentences`) of three or more words that is
    not a question becomes one record: a *procedure* when it reads as an
    instruction (starts with an imperative verb, "to X, ...", a sequence word,
    or says "how to" / "in order to" / "you should"), an *episode* when it
    names a date or a time marker ("yesterday", "last week", "... ago") or is
    a first-person past-tense report, else a *fact*. Episodes carry
    ``occurred_at``; facts carry :func:`~memspec.reference.text.infer_slots`
    slots. Repeated sentences are proposed once.
    """

    confidence: float | str | Decimal = 0.5
    tags: tuple[str, ...] = ()
    now: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "tags", tuple(self.tags))

    def extract(self, text: str, provenance: Provenance, *, now: str) -> tuple[Proposal, ...]:
        """One ``create`` proposal per qualifying sentence, in text order."""
        check_timestamp(now, field="now")
        seen: set[str] = set()
        out: list[Proposal] = []
        for sentence in split_sentences(_check_text(text)):
            shape = classify(sentence, now)
            if shape is None or sentence in seen:
                continue
            seen.add(sentence)
            kind, occurred = shape
            slots = infer_slots(sentence) if kind is RecordType.FACT else {}
            out.append(_create(MemoryRecord.create(
                kind, sentence, provenance, created_at=now, slots=slots,
                confidence=self.confidence, tags=self.tags, occurred_at=occurred)))
        return tuple(out)


def extract_all(extractor: Operator, texts: Iterable[str], provenance: Provenance, *,
                now: str) -> tuple[Proposal, ...]:
    """Proposals for several texts in order (an :class:`Extractor` gets ``now``)."""
    out: list[Proposal] = []
    for text in texts:
        if isinstance(extractor, Extractor):
            out.extend(extractor.extract(text, provenance, now=now))
        else:
            out.extend(extractor.propose(text, provenance))
    return tuple(out)
