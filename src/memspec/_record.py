"""The MemoryRecord wire format: field rules, content address, signatures, tombstones.

Records here are plain wire JSON (``dict``); engines are free to model them
however they like, as long as what crosses the wire passes these checks.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Any, TypeGuard

from memspec._canonical import (
    DEFAULT_LIMITS,
    Limits,
    _canonical_checked,
    _canonical_nfc,
    canonical_json,
    check_json_value,
)
from memspec._encoding import (
    check_timestamp,
    confidence_from_wire,
    decode_signature,
    public_key_from_address,
)
from memspec._errors import EncodingError, MemspecError, RecordError, SignatureError
from memspec._signing import CONTEXT_RECORD, SigningKey, _verify_checked, verify_by_address
from memspec.data import record_states, record_types
from memspec.data import tombstone as _tombstone_shape

__all__ = [
    "BIRTH_FIELDS",
    "OPTIONAL_FIELDS",
    "RECORD_FIELDS",
    "RECORD_STATES",
    "RECORD_TYPES",
    "REDACTED_BODY",
    "birth",
    "birth_digest",
    "is_reason",
    "is_tombstone",
    "record_id",
    "sign_record",
    "signed_payload",
    "unknown_fields",
    "validate_record",
    "verify_record",
]

RECORD_TYPES = record_types()
RECORD_STATES = record_states()
BIRTH_FIELDS = ("type", "body", "slots", "provenance", "created_at")
#: Fields every record carries, in the order memspec emits them.
RECORD_FIELDS = (
    "id", "type", "body", "slots", "state", "confidence", "created_at", "updated_at",
    "provenance", "evidence", "supersedes", "superseded_by", "transition", "state_reason",
    "tags", "flagged", "flag_reason", "signed_by", "signature",
)
#: Fields emitted only when set.
OPTIONAL_FIELDS = ("occurred_at", "redacted", "redaction_reason", "birth_digest")
REDACTED_BODY: str = _tombstone_shape().fixed["body"]
REDACTION_KIND: str = _tombstone_shape().fixed["provenance"]["kind"]
_DEFINED = frozenset(RECORD_FIELDS) | frozenset(OPTIONAL_FIELDS)
_FIELD_SET = frozenset(RECORD_FIELDS)
_PROVENANCE_KEYS = frozenset({"kind", "ref", "agent"})
_ID = re.compile(r"mem:[0-9a-f]{32}\Z")
_DIGEST = re.compile(r"[0-9a-f]{64}\Z")
#: The only characters that count as blank in a reason: ASCII whitespace, U+0009-U+000D and U+0020.
_BLANK = frozenset("\t\n\x0b\x0c\r ")


def _fail(message: str, requirement: str, pointer: str = "") -> RecordError:
    return RecordError(message, pointer=pointer or None, requirement=requirement)


def birth(record: dict[str, Any]) -> dict[str, Any]:
    """The immutable birth content a record's id is computed over."""
    try:
        return {name: record[name] for name in BIRTH_FIELDS}
    except KeyError as exc:
        raise _fail(f"record lacks birth field {exc.args[0]!r}", "REC-1",
                    f"/{exc.args[0]}") from exc
    except TypeError as exc:
        raise _fail(f"a record is a JSON object, not {type(record).__name__}", "REC-1") from exc


def birth_digest(record: dict[str, Any]) -> str:
    """Full SHA-256 hex of the canonical birth content."""
    return hashlib.sha256(canonical_json(birth(record))).hexdigest()


def record_id(record: dict[str, Any]) -> str:
    """The content address ``mem:`` + first 32 hex digits of the birth digest."""
    return "mem:" + birth_digest(record)[:32]


def is_tombstone(record: dict[str, Any]) -> bool:
    """True when the record is a redaction tombstone (it carries ``redacted``)."""
    return "redacted" in record or "birth_digest" in record or "redaction_reason" in record


def unknown_fields(record: dict[str, Any]) -> dict[str, Any]:
    """The extension fields a record carries (preserved and signed, never interpreted)."""
    return {k: v for k, v in record.items() if k not in _DEFINED}


def _check_id(value: object, pointer: str, requirement: str = "REC-3") -> str:
    if not isinstance(value, str) or not _ID.match(value):
        raise _fail(f"{value!r} is not a record id (mem: + 32 lowercase hex)", requirement,
                    pointer)
    return value


def is_reason(value: object) -> TypeGuard[str]:
    """Whether ``value`` is a reason: a string with a character other than ASCII whitespace.

    Only U+0009-U+000D and U+0020 are blank (SPEC.md section 1.2); any other
    character, U+00A0 and every other Unicode space included, makes a reason.
    """
    return isinstance(value, str) and any(char not in _BLANK for char in value)


def _check_reason(value: object, pointer: str, requirement: str) -> None:
    if not is_reason(value):
        raise _fail("a reason is required: a string with a character other than ASCII "
                    "whitespace", requirement, pointer)


def _check_address(value: object, pointer: str) -> None:
    try:
        public_key_from_address(value)
    except EncodingError as exc:
        raise _fail(exc.message, "ENC-1", pointer) from exc


def _check_provenance(value: object, tombstone: bool) -> None:
    if not isinstance(value, dict):
        raise _fail("provenance must be an object", "REC-6", "/provenance")
    if value.keys() != _PROVENANCE_KEYS:
        raise _fail("provenance must have exactly the keys kind, ref and agent "
                    f"(has {sorted(value)})", "REC-6", "/provenance")
    kind = value.get("kind")
    if not isinstance(kind, str) or not kind:
        raise _fail("provenance.kind must be a non-empty string", "REC-6", "/provenance/kind")
    ref = value.get("ref")
    if ref is not None and not isinstance(ref, str):
        raise _fail("provenance.ref must be a string or null", "REC-6", "/provenance/ref")
    agent = value.get("agent")
    if agent is not None:
        _check_address(agent, "/provenance/agent")
    if tombstone and (kind != REDACTION_KIND or ref is not None or agent is not None):
        raise _fail("a tombstone's provenance is {kind: redaction} with no ref or agent",
                    "RED-3", "/provenance")


def _check_transition(record: dict[str, Any]) -> None:
    block = record["transition"]
    if record["state"] == "transitional":
        if not isinstance(block, dict):
            raise _fail("a transitional record must carry a transition block", "TRN-2",
                        "/transition")
        if set(block) != {"sides", "reason"}:
            raise _fail("a transition block has exactly the keys sides and reason", "TRN-1",
                        "/transition")
        sides = block["sides"]
        if not isinstance(sides, list) or len(sides) != 2:
            raise _fail("transition.sides must name exactly two record ids", "TRN-1",
                        "/transition/sides")
        for i, side in enumerate(sides):
            _check_id(side, f"/transition/sides/{i}", "TRN-1")
        if sides[0] == sides[1]:
            raise _fail("transition.sides must name two distinct records", "TRN-1",
                        "/transition/sides")
        if record["id"] not in sides:
            raise _fail("transition.sides must include the carrying record's own id", "TRN-1",
                        "/transition/sides")
        _check_reason(block["reason"], "/transition/reason", "TRN-1")
    elif block is not None:
        raise _fail(f"a {record['state']} record must not carry a transition block", "TRN-2",
                    "/transition")


def _check_signature_fields(record: dict[str, Any]) -> None:
    signed_by, signature = record["signed_by"], record["signature"]
    if not isinstance(signature, str):
        raise _fail("signature must be a string (empty when unsigned)", "SIG-6", "/signature")
    if signed_by is None:
        if signature != "":
            raise _fail("a signature without signed_by cannot be attributed", "SIG-6",
                        "/signature")
        return
    _check_address(signed_by, "/signed_by")
    if signature == "":
        raise _fail("signed_by names a signer but the signature is empty", "SIG-6",
                    "/signature")
    try:
        decode_signature(signature)
    except EncodingError as exc:
        raise _fail(exc.message, "ENC-3", "/signature") from exc


def validate_record(record: object, limits: Limits = DEFAULT_LIMITS, *,
                    _walked: bool = False) -> dict[str, Any]:
    """Check a wire record against every per-record rule of the format; return it.

    Signatures are checked for shape here; :func:`verify_record` checks them
    cryptographically.
    """
    # _walked (internal, validate_file): check_json_value already passed, at ``limits``,
    # over a value holding the record, which checked it more strictly (deeper); only that
    # walk is left out. Every field rule still runs, in the same order, with the same errors.
    if not isinstance(record, dict):
        raise _fail(f"a record is a JSON object, not {type(record).__name__}", "REC-1")
    if not _walked:
        try:
            check_json_value(record, limits)
        except MemspecError as exc:
            raise RecordError(exc.message, pointer=exc.pointer,
                              requirement=exc.requirement) from exc
    return _validate_fields(record, limits)


def _validate_fields(record: dict[str, Any], limits: Limits) -> dict[str, Any]:
    if not record.keys() >= _FIELD_SET:
        missing = [name for name in RECORD_FIELDS if name not in record]
        raise _fail(f"record lacks required fields {missing}", "REC-1", f"/{missing[0]}")
    tombstone = is_tombstone(record)
    rid = _check_id(record["id"], "/id")
    if record["type"] not in RECORD_TYPES:
        raise _fail(f"type {record['type']!r} is not one of {list(RECORD_TYPES)}", "REC-4",
                    "/type")
    body = record["body"]
    if not isinstance(body, str) or not body:
        raise _fail("body must be a non-empty string", "REC-5", "/body")
    if len(body) > limits.max_body_chars:
        raise _fail(f"body of {len(body)} characters exceeds the limit of "
                    f"{limits.max_body_chars}", "REC-5", "/body")
    if not isinstance(record["slots"], dict):
        raise _fail("slots must be an object", "REC-5", "/slots")
    state = record["state"]
    if state not in RECORD_STATES:
        raise _fail(f"state {state!r} is not one of {list(RECORD_STATES)}", "REC-4", "/state")
    confidence_from_wire(record["confidence"])
    for name in ("created_at", "updated_at", "occurred_at"):
        if name in record:
            try:
                check_timestamp(record[name], field=name)
            except EncodingError as exc:
                raise _fail(exc.message, "REC-7", f"/{name}") from exc
    if record["updated_at"] < record["created_at"]:
        raise _fail("updated_at precedes created_at", "REC-7", "/updated_at")
    _check_provenance(record["provenance"], tombstone)
    evidence = record["evidence"]
    if not isinstance(evidence, list):
        raise _fail("evidence must be an array of record ids", "REC-8", "/evidence")
    for i, ref in enumerate(evidence):
        _check_id(ref, f"/evidence/{i}", "REC-8")
    if len(set(evidence)) != len(evidence):
        raise _fail("evidence lists a record id twice", "REC-8", "/evidence")
    if rid in evidence:
        raise _fail("a record cannot be its own evidence", "REC-8", "/evidence")
    if record["type"] == "rule" and not evidence:
        raise _fail("a rule must carry non-empty evidence", "RULE-1", "/evidence")
    for name in ("supersedes", "superseded_by"):
        link = record[name]
        if link is not None:
            _check_id(link, f"/{name}", "SUP-4")
            if link == rid:
                raise _fail(f"{name} names the record itself", "SUP-4", f"/{name}")
    if record["superseded_by"] is not None and state in ("active", "transitional"):
        raise _fail(f"an {state} record must not carry superseded_by", "SUP-3",
                    "/superseded_by")
    if state == "superseded" and record["superseded_by"] is None:
        raise _fail("a superseded record must name its successor in superseded_by", "SUP-2",
                    "/superseded_by")
    _check_transition(record)
    reason = record["state_reason"]
    if reason is not None and not isinstance(reason, str):
        raise _fail("state_reason must be a string or null", "REC-9", "/state_reason")
    if state in ("superseded", "archived"):
        _check_reason(reason, "/state_reason", "LC-3")
    tags = record["tags"]
    if not isinstance(tags, list) or not all(isinstance(t, str) and t for t in tags):
        raise _fail("tags must be an array of non-empty strings", "REC-10", "/tags")
    if len({unicodedata.normalize("NFC", tag) for tag in tags}) != len(tags):
        raise _fail("tags lists a tag twice (tags are compared in NFC)", "REC-10", "/tags")
    flagged, flag_reason = record["flagged"], record["flag_reason"]
    if type(flagged) is not bool:
        raise _fail("flagged must be a boolean", "RULE-4", "/flagged")
    if flagged and record["type"] != "rule":
        raise _fail("only a rule may be flagged", "RULE-4", "/flagged")
    if flagged:
        _check_reason(flag_reason, "/flag_reason", "RULE-4")
    elif flag_reason is not None:
        raise _fail("an unflagged record must not carry flag_reason", "RULE-4", "/flag_reason")
    _check_signature_fields(record)
    if tombstone:
        _check_tombstone(record)
    else:
        address = _checked_record_id(record, limits)
        if rid != address:
            raise _fail(f"id {rid} is not the content address of the record's birth fields "
                        f"({address})", "ID-2", "/id")
    return record


def _within_defaults(limits: Limits) -> bool:
    """Whether a value checked at ``limits`` also passes check_json_value at DEFAULT_LIMITS."""
    return (limits.max_depth <= DEFAULT_LIMITS.max_depth
            and limits.max_string_chars <= DEFAULT_LIMITS.max_string_chars)


def _checked_record_id(record: dict[str, Any], limits: Limits) -> str:
    """record_id of a record check_json_value passed at ``limits``, without a second walk.

    Under looser limits the public path runs instead, so that what it would reject
    (at DEFAULT_LIMITS) is still rejected the same way.
    """
    if not _within_defaults(limits):
        return record_id(record)
    return "mem:" + hashlib.sha256(_canonical_checked(birth(record))).hexdigest()[:32]


def _check_tombstone(record: dict[str, Any]) -> None:
    if record.get("redacted") is not True:
        raise _fail("a record carrying redaction fields must carry redacted: true", "RED-4",
                    "/redacted")
    _check_reason(record.get("redaction_reason"), "/redaction_reason", "RED-4")
    digest = record.get("birth_digest")
    if not isinstance(digest, str) or not _DIGEST.match(digest):
        raise _fail("birth_digest must be 64 lowercase hex characters", "RED-4",
                    "/birth_digest")
    if record["id"] != "mem:" + digest[:32]:
        raise _fail("a tombstone's id must be the prefix of its birth_digest", "RED-5", "/id")
    shape = _tombstone_shape()
    for name, value in shape.fixed_values().items():
        if record[name] != value:
            raise _fail(f"a tombstone's {name} must be {value!r}", "RED-3", f"/{name}")
    for name in shape.absent:
        if name in record:
            raise _fail(f"a tombstone must not carry {name}", "RED-3", f"/{name}")


def signed_payload(record: dict[str, Any], signer: str) -> dict[str, Any]:
    """The payload a record signature covers: the record sans signature, signed_by set."""
    if type(record) is dict:  # a C copy, then the one key out: same keys, same order
        payload = record.copy()
        payload.pop("signature", None)
    else:
        payload = {k: v for k, v in record.items() if k != "signature"}
    payload["signed_by"] = signer
    return payload


def sign_record(record: dict[str, Any], key: SigningKey) -> dict[str, Any]:
    """A copy of ``record`` signed by ``key`` (signed_by is the key's address)."""
    if not isinstance(record, dict):
        raise RecordError(f"a record is a JSON object, not {type(record).__name__}",
                          requirement="REC-1")
    if is_tombstone(record):
        raise SignatureError("a redaction tombstone cannot be signed", requirement="RED-3")
    payload = signed_payload(record, key.address)
    return {**payload, "signature": key.sign(CONTEXT_RECORD, payload)}


def verify_record(record: dict[str, Any]) -> bool:
    """Verify a record's signature; False when it is unsigned, SignatureError when invalid."""
    if not isinstance(record, dict):
        raise RecordError(f"a record is a JSON object, not {type(record).__name__}",
                          requirement="REC-1")
    signer, signature = record.get("signed_by"), record.get("signature")
    if signer is None and signature in ("", None):
        return False
    if signer is None or not signature:
        raise SignatureError("signed_by and signature must be set together",
                             requirement="SIG-6")
    verify_by_address(signer, CONTEXT_RECORD, signed_payload(record, signer), signature)
    return True


def _verify_validated(record: dict[str, Any]) -> bool:
    """:func:`verify_record` for a record validate_record passed at DEFAULT_LIMITS (or
    stricter): its signature fields are consistent, so only the payload's walk is saved."""
    return _verify_validated_nfc(record)[0]


def _verify_validated_nfc(record: dict[str, Any]) -> tuple[bool, bool]:
    """:func:`_verify_validated`, and whether every string of the record is known to be in
    NFC (its signed payload's were, and the signature is base64); (False, False) unsigned."""
    signer = record["signed_by"]
    if signer is None:
        return False, False
    canonical, nfc = _canonical_nfc(signed_payload(record, signer))
    _verify_checked(signer, CONTEXT_RECORD, canonical, record["signature"])
    return True, nfc
