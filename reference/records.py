"""MemoryRecord as a typed, immutable value whose ``model_dump()`` is the wire record.

Every rule of the record format is checked by the core (``memspec.validate_record``)
when a record is built, so a ``MemoryRecord`` that exists is a valid record. Ids,
canonical bytes and signatures come from the core too; this module only maps the
wire dict to typed fields and back, byte for byte.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import InitVar, dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any, ClassVar, TypeVar

from memspec import (
    OPTIONAL_FIELDS,
    RECORD_FIELDS,
    REDACTED_BODY,
    MemspecError,
    RecordError,
    SigningKey,
    birth_digest,
    canonical_json,
    confidence_from_wire,
    confidence_to_wire,
    is_reason,
    record_id,
    sign_record,
    unknown_fields,
    validate_record,
    verify_record,
)
from memspec.data import tombstone as tombstone_shape

__all__ = [
    "REDACTED_BODY",
    "MemoryRecord",
    "Provenance",
    "RecordState",
    "RecordType",
    "Transition",
    "confidence_from_wire",
    "confidence_to_wire",
]

_DEFINED = frozenset(RECORD_FIELDS) | frozenset(OPTIONAL_FIELDS)
#: Fields fixed at birth (plus the id derived from them and the event time).
_IMMUTABLE = frozenset({"id", "type", "body", "slots", "provenance", "created_at", "occurred_at"})
#: Fields only the signing and redaction paths may set.
_RESERVED = frozenset({"updated_at", "signed_by", "signature", "redacted", "redaction_reason",
                       "birth_digest"})


class RecordType(StrEnum):
    """The four kinds of memory."""

    FACT = "fact"
    EPISODE = "episode"
    PROCEDURE = "procedure"
    RULE = "rule"


class RecordState(StrEnum):
    """The four lifecycle states."""

    ACTIVE = "active"
    TRANSITIONAL = "transitional"
    SUPERSEDED = "superseded"
    ARCHIVED = "archived"


_E = TypeVar("_E", bound=StrEnum)


def _enum(cls: type[_E], value: object, name: str) -> _E:
    if isinstance(value, str):
        try:
            return cls(value)
        except ValueError:
            pass
    choices = [m.value for m in cls]
    raise RecordError(f"{name} {value!r} is not one of {choices}", pointer=f"/{name}",
                      requirement="REC-4")


@dataclass(frozen=True)
class Provenance:
    """Where a memory came from: source kind, optional source reference, optional writer."""

    kind: str
    ref: str | None = None
    agent: str | None = None

    def model_dump(self) -> dict[str, Any]:
        """The wire object (always all three keys)."""
        return {"kind": self.kind, "ref": self.ref, "agent": self.agent}

    @classmethod
    def model_validate(cls, data: object) -> Provenance:
        """Build from the wire object; exactly the keys kind, ref and agent."""
        if isinstance(data, Provenance):
            return data
        if not isinstance(data, Mapping) or not set(data) <= {"kind", "ref", "agent"}:
            raise RecordError("provenance is an object with keys kind, ref and agent",
                              pointer="/provenance", requirement="REC-6")
        kind, ref, agent = data.get("kind"), data.get("ref"), data.get("agent")
        if not isinstance(kind, str) or not kind:
            raise RecordError("provenance.kind must be a non-empty string",
                              pointer="/provenance/kind", requirement="REC-6")
        if ref is not None and not isinstance(ref, str):
            raise RecordError("provenance.ref must be a string or null",
                              pointer="/provenance/ref", requirement="REC-6")
        if agent is not None and not isinstance(agent, str):
            raise RecordError("provenance.agent must be an address or null",
                              pointer="/provenance/agent", requirement="REC-6")
        return cls(kind, ref, agent)


@dataclass(frozen=True)
class Transition:
    """The block both sides of an open contradiction carry."""

    sides: tuple[str, str]
    reason: str

    def model_dump(self) -> dict[str, Any]:
        """The wire object ``{"sides": [a, b], "reason": ...}``."""
        return {"sides": list(self.sides), "reason": self.reason}

    @classmethod
    def model_validate(cls, data: object) -> Transition:
        """Build from the wire object (shape only; the record rules check the rest)."""
        if isinstance(data, Transition):
            return data
        if not isinstance(data, Mapping) or set(data) != {"sides", "reason"}:
            raise RecordError("a transition block has exactly the keys sides and reason",
                              pointer="/transition", requirement="TRN-1")
        sides, reason = data["sides"], data["reason"]
        if not isinstance(sides, list | tuple) or len(sides) != 2:
            raise RecordError("transition.sides must name exactly two record ids",
                              pointer="/transition/sides", requirement="TRN-1")
        if not isinstance(reason, str):
            raise RecordError("transition.reason must be a string",
                              pointer="/transition/reason", requirement="TRN-1")
        return cls((sides[0], sides[1]), reason)


def _wire_confidence(value: object) -> str:
    if isinstance(value, str):
        confidence_from_wire(value)
        return value
    return confidence_to_wire(value)


def _string_tuple(value: object, name: str, requirement: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise RecordError(f"{name} must be an array of strings", pointer=f"/{name}",
                          requirement=requirement)
    items = tuple(value)
    if not all(isinstance(item, str) for item in items):
        raise RecordError(f"{name} must be an array of strings", pointer=f"/{name}",
                          requirement=requirement)
    return items


def _json_object(value: object, name: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise RecordError(f"{name} must be an object", pointer=f"/{name}", requirement="REC-5")
    return copy.deepcopy(dict(value))


@dataclass(frozen=True, kw_only=True)
class MemoryRecord:
    """One version of a memory record.

    Built records are always valid: construction runs every per-record rule of the
    core. ``slots`` and ``extra`` are private copies; treat them as read-only and use
    :meth:`evolve` for a new version. ``confidence`` is kept as its wire string.
    """

    REDACTED_BODY: ClassVar[str] = REDACTED_BODY

    id: str
    type: RecordType
    body: str
    slots: Mapping[str, Any] = field(default_factory=dict)
    state: RecordState = RecordState.ACTIVE
    confidence: str = "1.0000"
    created_at: str
    updated_at: str
    provenance: Provenance
    evidence: tuple[str, ...] = ()
    supersedes: str | None = None
    superseded_by: str | None = None
    transition: Transition | None = None
    state_reason: str | None = None
    tags: tuple[str, ...] = ()
    flagged: bool = False
    flag_reason: str | None = None
    signed_by: str | None = None
    signature: str = ""
    occurred_at: str | None = None
    redacted: bool | None = None
    redaction_reason: str | None = None
    birth_digest: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    _trusted: InitVar[bool] = False

    def __post_init__(self, _trusted: bool) -> None:
        # Why: accept wire-shaped values (plain strings, lists, dicts) from callers,
        # and keep private copies so no caller can change a built record.
        setattr_ = object.__setattr__
        setattr_(self, "type", _enum(RecordType, self.type, "type"))
        setattr_(self, "state", _enum(RecordState, self.state, "state"))
        setattr_(self, "slots", _json_object(self.slots, "slots"))
        setattr_(self, "extra", _json_object(self.extra, "extra"))
        setattr_(self, "provenance", Provenance.model_validate(self.provenance))
        if self.transition is not None:
            setattr_(self, "transition", Transition.model_validate(self.transition))
        setattr_(self, "evidence", _string_tuple(self.evidence, "evidence", "REC-8"))
        setattr_(self, "tags", _string_tuple(self.tags, "tags", "REC-10"))
        setattr_(self, "confidence", _wire_confidence(self.confidence))
        clash = sorted(_DEFINED & set(self.extra))
        if clash:
            raise RecordError(f"extension fields {clash} collide with defined fields",
                              pointer=f"/{clash[0]}", requirement="REC-12")
        if not _trusted:
            validate_record(self.model_dump())

    def __hash__(self) -> int:
        return hash((self.id, self.updated_at, self.state, self.signature))

    # -- wire form -------------------------------------------------------------------

    def model_dump(self) -> dict[str, Any]:
        """The wire record: every required field, optional fields only when set, extras."""
        out: dict[str, Any] = {
            "id": self.id,
            "type": self.type.value,
            "body": self.body,
            "slots": copy.deepcopy(dict(self.slots)),
            "state": self.state.value,
            "confidence": self.confidence,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "provenance": self.provenance.model_dump(),
            "evidence": list(self.evidence),
            "supersedes": self.supersedes,
            "superseded_by": self.superseded_by,
            "transition": None if self.transition is None else self.transition.model_dump(),
            "state_reason": self.state_reason,
            "tags": list(self.tags),
            "flagged": self.flagged,
            "flag_reason": self.flag_reason,
            "signed_by": self.signed_by,
            "signature": self.signature,
        }
        for name in OPTIONAL_FIELDS:
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        out.update(copy.deepcopy(dict(self.extra)))
        return out

    @classmethod
    def model_validate(cls, data: object) -> MemoryRecord:
        """Build from a wire record, checking every format rule (RecordError otherwise)."""
        if isinstance(data, MemoryRecord):
            return data
        if not isinstance(data, dict):
            raise RecordError(f"a record is a JSON object, not {type(data).__name__}",
                              requirement="REC-1")
        validate_record(data)
        fields: dict[str, Any] = {name: data[name] for name in RECORD_FIELDS}
        fields.update({name: data[name] for name in OPTIONAL_FIELDS if name in data})
        return cls(**fields, extra=unknown_fields(data), _trusted=True)

    def canonical_bytes(self) -> bytes:
        """The canonical JSON bytes of the wire record (what stores persist)."""
        return canonical_json(self.model_dump())

    # -- construction and versions ---------------------------------------------------

    @classmethod
    def create(
        cls,
        type: RecordType | str,
        body: str,
        provenance: Provenance | Mapping[str, Any],
        *,
        created_at: str,
        slots: Mapping[str, Any] | None = None,
        confidence: float | str | Decimal = 1.0,
        evidence: Iterable[str] = (),
        supersedes: str | None = None,
        tags: Iterable[str] = (),
        occurred_at: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> MemoryRecord:
        """A new record born active at ``created_at`` (REC-14), its id the content address."""
        prov = Provenance.model_validate(provenance)
        kind = _enum(RecordType, type, "type")
        slot_map = _json_object({} if slots is None else slots, "slots")
        try:
            rid = record_id({"type": kind.value, "body": body, "slots": slot_map,
                             "provenance": prov.model_dump(), "created_at": created_at})
        except MemspecError as exc:
            raise RecordError(exc.message, pointer=exc.pointer,
                              requirement=exc.requirement or "REC-1") from exc
        return cls(
            id=rid, type=kind, body=body, slots=slot_map, state=RecordState.ACTIVE,
            confidence=_wire_confidence(confidence), created_at=created_at,
            updated_at=created_at, provenance=prov,
            evidence=_string_tuple(evidence, "evidence", "REC-8"),
            supersedes=supersedes, tags=_string_tuple(tags, "tags", "REC-10"),
            occurred_at=occurred_at,
            extra={} if extra is None else extra,
        )

    def evolve(self, now: str, **changes: Any) -> MemoryRecord:
        """A new version with ``changes`` applied, ``updated_at = now`` and the signature cleared.

        Birth fields, the id, ``occurred_at`` and the fields owned by signing and
        redaction cannot be changed (RecordError). Values may be typed or wire-shaped.
        """
        names = set(changes)
        fixed = sorted(names & _IMMUTABLE)
        if fixed:
            raise RecordError(f"{fixed} are fixed at birth and cannot change",
                              pointer=f"/{fixed[0]}", requirement="ID-3")
        reserved = sorted(names & _RESERVED)
        if reserved:
            raise RecordError(f"{reserved} cannot be set by evolve", pointer=f"/{reserved[0]}",
                              requirement="SIG-9")
        unknown = sorted(names - _DEFINED - {"extra"})
        if unknown:
            raise RecordError(f"{unknown} are not record fields (use extra=)",
                              pointer=f"/{unknown[0]}", requirement="REC-1")
        return dataclasses.replace(self, **changes, updated_at=now, signed_by=None,
                                   signature="")

    @classmethod
    def tombstone(cls, original: MemoryRecord, *, reason: str, now: str) -> MemoryRecord:
        """The redaction tombstone of ``original`` (spec section 11): content gone, links kept.

        Extension fields are dropped because they may be content. Re-redacting a
        tombstone keeps its ``birth_digest`` (the original birth is already gone).
        """
        if not is_reason(reason):
            raise RecordError("a redaction needs a reason (a character other than ASCII "
                              "whitespace)",
                              pointer="/redaction_reason", requirement="RED-4")
        digest = original.birth_digest if original.redacted else birth_digest(
            original.model_dump())
        fixed = tombstone_shape().fixed_values()  # RED-3: schemas/record.json's tombstone
        return cls(
            id=original.id, type=original.type, body=fixed["body"], slots=fixed["slots"],
            state=RecordState(fixed["state"]), confidence=fixed["confidence"],
            created_at=original.created_at, updated_at=now,
            provenance=Provenance.model_validate(fixed["provenance"]),
            evidence=original.evidence, supersedes=original.supersedes,
            superseded_by=original.superseded_by, transition=None, state_reason=reason,
            tags=tuple(fixed["tags"]), flagged=False, flag_reason=None,
            signed_by=fixed["signed_by"], signature=fixed["signature"], redacted=True,
            redaction_reason=reason, birth_digest=digest,
        )

    @property
    def is_tombstone(self) -> bool:
        """True for a redaction tombstone."""
        return self.redacted is True

    # -- signatures ------------------------------------------------------------------

    def sign(self, key: SigningKey) -> MemoryRecord:
        """This version signed by ``key`` (SIG-7); tombstones cannot be signed."""
        return MemoryRecord.model_validate(sign_record(self.model_dump(), key))

    def verify(self) -> bool:
        """True when validly signed, False when unsigned; SignatureError when invalid."""
        return verify_record(self.model_dump())
