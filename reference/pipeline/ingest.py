"""The write stage: create-only ingestion with content-address dedup (spec section 8)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from memspec import MemspecError, ProposalError, canonical_json, check_timestamp
from memspec.reference.extensions import check_fields
from memspec.reference.pipeline.decay import SalienceScores
from memspec.reference.pipeline.extractor import VerbatimExtractor, extract_all
from memspec.reference.ports import Operator, RecordStore, SearchIndex
from memspec.reference.proposals import Proposal, ProposalKind, apply_proposal
from memspec.reference.records import MemoryRecord, Provenance, RecordState, RecordType

__all__ = [
    "DEFAULT_SOURCE_KIND",
    "IngestRejection",
    "IngestReport",
    "check_admissible",
    "ingest",
    "render_event",
]

#: Provenance kind of text ingested without an explicit provenance.
DEFAULT_SOURCE_KIND = "conversation"


@dataclass(frozen=True)
class IngestRejection:
    """A proposal the write stage refused: its position, error class and reason."""

    index: int
    code: str
    message: str

    def model_dump(self) -> dict[str, Any]:
        """``{"index": i, "code": <error class>, "message": ...}``."""
        return {"index": self.index, "code": self.code, "message": self.message}


@dataclass(frozen=True)
class IngestReport:
    """Every proposal's fate (WR-5): ids accepted and deduplicated, rejections with reasons.

    ``written`` holds the record versions the pass stored, in write order.
    """

    accepted: tuple[str, ...] = ()
    deduped: tuple[str, ...] = ()
    rejected: tuple[IngestRejection, ...] = ()
    written: tuple[MemoryRecord, ...] = ()

    def model_dump(self) -> dict[str, Any]:
        """The wire report ``{accepted, deduped, rejected}``."""
        return {"accepted": list(self.accepted), "deduped": list(self.deduped),
                "rejected": [r.model_dump() for r in self.rejected]}


def render_event(event: Mapping[str, Any]) -> str:
    """A structured event as text: ``key: value`` lines sorted by key.

    String values are written as they are; any other value as its canonical JSON.
    """
    lines = []
    for key in sorted(event):
        if not isinstance(key, str):
            raise ProposalError(f"event keys must be strings, not {type(key).__name__}")
        value = event[key]
        text = value if isinstance(value, str) else canonical_json(value).decode("utf-8")
        lines.append(f"{key}: {text}")
    return "\n".join(lines)


def check_admissible(proposal: Proposal) -> MemoryRecord:
    """The record of a proposal the write stage may admit, else ProposalError.

    Only ``create`` (WR-1), never a rule (WR-2), born active with no
    ``supersedes``, ``superseded_by`` or ``transition`` and unflagged (WR-3).
    The lifecycle gate then checks the rest of REC-14 and OP-6.
    """
    if proposal.kind is not ProposalKind.CREATE:
        raise ProposalError(f"the write stage admits only create proposals, not "
                            f"{proposal.kind.value}", requirement="WR-1")
    record = proposal.record
    if record is None:
        raise ProposalError("a create proposal carries the new record", requirement="OP-1")
    if record.type is RecordType.RULE:
        raise ProposalError("an extractor never creates rules; rules come only from "
                            "evidence-linked promotion", requirement="WR-2")
    linked = [name for name in ("supersedes", "superseded_by", "transition")
              if getattr(record, name) is not None]
    if record.state is not RecordState.ACTIVE or linked or record.flagged:
        detail = f"state {record.state.value}" if record.state is not RecordState.ACTIVE else (
            f"links {linked}" if linked else "a flag")
        raise ProposalError(f"an extracted record is born active, unlinked and unflagged; "
                            f"this one has {detail}", requirement="WR-3")
    return record


def _proposals(source: object, extractor: Operator | None, provenance: Provenance | None,
               now: str) -> list[object]:
    if isinstance(source, str | Mapping):
        text = source if isinstance(source, str) else render_event(source)
        return list(extract_all(extractor or VerbatimExtractor(), [text],
                                provenance or Provenance(DEFAULT_SOURCE_KIND), now=now))
    if isinstance(source, Iterable) and not isinstance(source, bytes | bytearray):
        return list(source)
    raise ProposalError("ingest takes text, a structured event or a list of proposals, "
                        f"not {type(source).__name__}")


def ingest(
    proposals_or_source: str | Mapping[str, Any] | Iterable[Proposal | Mapping[str, Any]],
    *,
    store: RecordStore,
    now: str,
    extractor: Operator | None = None,
    provenance: Provenance | None = None,
    scores: SalienceScores | None = None,
    indexes: Iterable[SearchIndex] = (),
    extensions: bool = False,
) -> IngestReport:
    """Run the write stage over proposals, or over text / a structured event (rendered by
    :func:`render_event`) that ``extractor`` (default :class:`VerbatimExtractor`, source
    ``provenance`` default kind "conversation") turns into proposals.

    Each proposal, in order, is rejected (:func:`check_admissible`, then the
    lifecycle gate) or, when its record id is already stored, deduplicated: a
    touch in ``scores`` and no write (WR-4); otherwise it is written and indexed
    in ``indexes``. A rejection writes nothing (WR-5); the report names every
    proposal's fate. ``extensions`` applies the field rules of the extension
    profiles (spec/EXTENSIONS.md, XEXT-4) before the dedup, so a malformed
    extension field is rejected with class ``record`` even for a stored id.
    """
    check_timestamp(now, field="now")
    targets = tuple(indexes)
    accepted: list[str] = []
    deduped: list[str] = []
    rejected: list[IngestRejection] = []
    written: list[MemoryRecord] = []
    for position, item in enumerate(_proposals(proposals_or_source, extractor, provenance, now)):
        try:
            proposal = Proposal.model_validate(item)
            record = check_admissible(proposal)
            if extensions:
                check_fields(record)
            if record.id in store:
                if scores is not None:
                    scores.touch(record.id, now)
                deduped.append(record.id)
                continue
            versions = apply_proposal(store, proposal, now=now)
        except MemspecError as exc:
            rejected.append(IngestRejection(position, exc.code, str(exc)))
            continue
        for version in versions:
            for index in targets:
                index.index(version)
        accepted.append(record.id)
        written.extend(versions)
    return IngestReport(accepted=tuple(accepted), deduped=tuple(deduped),
                        rejected=tuple(rejected), written=tuple(written))
