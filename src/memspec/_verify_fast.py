"""verify_file's fast path: one pass that only ever answers "everything passed" or "ask".

The precise path (memspec._file._verify_file) checks a file in the order its
errors are reported: every signature's spelling, the header, the walk of the
whole file, each record's field rules, the duplicate ids, each record's
signature, the file's signature. Only it words errors. This path checks the
same rules in whatever order is cheapest, each record once, and returns False
at the first doubt; verify_file then runs the precise path, which raises the
first error (or passes, where this path was merely cautious). So a passing
file costs one pass, and a failing file's error is the precise path's.

A record in the common shape (signed, not a tombstone, no transition block,
no extension fields, every value of its exact JSON type) is checked here by
:func:`_plain_record_passes`, which writes the field rules of
memspec._record._validate_fields out for that shape, with the walk folded in
(only ``slots`` holds arbitrary JSON). Any other record is checked by the
precise per-record functions. Encodings are memspec._canonical's
(:func:`_canonical_of_nfc` once every string is known NFC), with or without
the accelerator. tests/test_verify_fast.py holds the two paths
together: on valid and on corrupted files (re-signed, so that each corruption
meets its own rule rather than a broken signature), this path never passes
what the precise path refuses.
"""

from __future__ import annotations

import binascii
import hashlib
import unicodedata
from typing import Any

from memspec._canonical import (
    DEFAULT_LIMITS,
    _canonical_nfc,
    _canonical_of_nfc,
    _dict_ok,
    _fast_check,
)
from memspec._encoding import (
    _CONFIDENCE,
    _TIMESTAMP,
    _calendar_day,
    decode_signature,
    public_key_from_address,
)
from memspec._record import (
    _FIELD_SET,
    _ID,
    _PROVENANCE_KEYS,
    RECORD_STATES,
    RECORD_TYPES,
    _verify_validated_nfc,
    is_reason,
    validate_record,
)
from memspec._signing import (
    _SMALL_ORDER_Y,
    _TAGS,
    CONTEXT_MEMORY_FILE,
    CONTEXT_RECORD,
    _key_object,
    _verify_checked,
    weak_point,
)

__all__ = ["file_passes", "file_signature_passes", "header_passes", "records_pass"]

_PLAIN = frozenset(_FIELD_SET)
_PLAIN_OCCURRED = _PLAIN | {"occurred_at"}
_TYPES = frozenset(RECORD_TYPES)
_STATES = frozenset(RECORD_STATES)
_MAX_BODY = DEFAULT_LIMITS.max_body_chars
_MAX_CHARS = DEFAULT_LIMITS.max_string_chars
_MAX_DEPTH = DEFAULT_LIMITS.max_depth
_RECORD_TAG = _TAGS[CONTEXT_RECORD]
_ID_MATCH = _ID.match
_CONFIDENCE_MATCH = _CONFIDENCE.match
_TIMESTAMP_MATCH = _TIMESTAMP.match
#: Every 32-byte encoding weak_point calls "a small-order point": each y of _SMALL_ORDER_Y
#: with the sign bit clear or set (all of them are below 2**255).
_SMALL_ORDER_R = frozenset((y | sign << 255).to_bytes(32, "little")
                           for y in _SMALL_ORDER_Y for sign in (0, 1))
#: A record's depth in the walk of its file (file, records, record), for its own walk.
_RECORD_DEPTH = 2
#: Keys whose weak-point check passed: a file names one signer over and over.
_SOUND_KEYS: set[bytes] = set()
_SOUND_KEYS_MAX = 1024


def _nfc(text: str) -> bool:
    return text.isascii() or unicodedata.is_normalized("NFC", text)


def _timestamp(value: object) -> bool:
    """memspec._encoding.check_timestamp's verdict on an exact str, without its error."""
    if type(value) is not str or _TIMESTAMP_MATCH(value) is None:
        return False
    if value[11:13] > "23" or value[14:16] > "59" or value[17:19] > "59":
        return False
    _calendar_day(value[:10])  # raises ValueError for a day that does not exist
    return True


def _signature_bytes(text: str) -> bytes:
    """memspec._encoding.decode_signature for an exact str: the decoding re-encodes to the
    very text, so it is 88 characters of canonical padded base64 (else it raises)."""
    raw = binascii.a2b_base64(text, strict_mode=True)
    if len(raw) != 64 or binascii.b2a_base64(raw, newline=False) != text.encode("ascii"):
        raise ValueError("not a canonical signature")
    return raw


def _optional_id(value: object, rid: str) -> bool:
    return value is None or (type(value) is str and _ID_MATCH(value) is not None
                             and value != rid)


def _plain_record_passes(record: dict[str, Any]) -> bool:
    """Whether a record in the common shape passes every check the precise path makes of
    it (walk, field rules, content address, signature), its strings all NFC; False
    where it fails or is not in that shape."""
    keys = record.keys()
    if keys != _PLAIN and keys != _PLAIN_OCCURRED:
        return False
    rid = record["id"]
    kind = record["type"]
    body = record["body"]
    state = record["state"]
    slots = record["slots"]
    if (type(rid) is not str or _ID_MATCH(rid) is None
            or type(kind) is not str or kind not in _TYPES
            or type(body) is not str or not body or len(body) > _MAX_BODY
            or type(slots) is not dict or not _dict_ok(slots, _RECORD_DEPTH + 1, _MAX_DEPTH,
                                                        _MAX_CHARS)
            or type(state) is not str or state not in _STATES or state == "transitional"
            or record["transition"] is not None):
        return False
    confidence = record["confidence"]
    created, updated = record["created_at"], record["updated_at"]
    if (type(confidence) is not str or _CONFIDENCE_MATCH(confidence) is None
            or not _timestamp(created)
            or not (updated == created or (_timestamp(updated) and updated > created))):
        return False
    if "occurred_at" in record and not _timestamp(record["occurred_at"]):
        return False
    provenance = record["provenance"]
    if type(provenance) is not dict or provenance.keys() != _PROVENANCE_KEYS:
        return False
    origin, ref, agent = provenance["kind"], provenance["ref"], provenance["agent"]
    if type(origin) is not str or not origin or not (origin.isascii() or _nfc(origin)) or not (
            ref is None or (type(ref) is str and (ref.isascii() or _nfc(ref)))):
        return False
    if agent is not None:
        if type(agent) is not str:
            return False
        if agent != record["signed_by"]:  # the signer's address is decoded below
            public_key_from_address(agent)
    evidence = record["evidence"]
    if type(evidence) is not list:
        return False
    for ref_id in evidence:
        if type(ref_id) is not str or _ID_MATCH(ref_id) is None:
            return False
    if len(set(evidence)) != len(evidence) or rid in evidence or (
            kind == "rule" and not evidence):
        return False
    successor = record["superseded_by"]
    if not _optional_id(record["supersedes"], rid) or not _optional_id(successor, rid):
        return False
    if (state == "superseded" and successor is None) or (
            state == "active" and successor is not None):
        return False
    reason = record["state_reason"]
    if not (reason is None or (type(reason) is str and _nfc(reason))):
        return False
    if (state == "superseded" or state == "archived") and not is_reason(reason):
        return False
    tags = record["tags"]
    if type(tags) is not list:
        return False
    for tag in tags:
        if type(tag) is not str or not tag or not _nfc(tag):
            return False
    if len(set(tags)) != len(tags):  # each tag is NFC: the set of their NFC forms
        return False
    flagged, flag_reason = record["flagged"], record["flag_reason"]
    if type(flagged) is not bool or not (
            flag_reason is None or (type(flag_reason) is str and _nfc(flag_reason))):
        return False
    if flagged:
        if kind != "rule" or not is_reason(flag_reason):
            return False
    elif flag_reason is not None:
        return False
    signer, signature = record["signed_by"], record["signature"]
    if type(signer) is not str or type(signature) is not str:
        return False
    public_key = public_key_from_address(signer)
    raw = _signature_bytes(signature)
    if not _nfc(body):
        return False
    if slots and not _canonical_nfc(slots)[1]:
        return False
    # Every string of the payload is NFC now (those not tested above are ASCII by their
    # patterns and sets), so the encoder's bytes are canonical, the birth's among them;
    # a text within the string limit holds no longer string.
    payload = record.copy()
    del payload["signature"]  # signed_by is already the signer
    data = _canonical_of_nfc(payload)
    if len(data) > _MAX_CHARS:
        return False
    birth = _canonical_of_nfc({"body": body, "created_at": created, "provenance": provenance,
                               "slots": slots, "type": kind})
    if rid != "mem:" + hashlib.sha256(birth).hexdigest()[:32]:
        return False
    # SIG-11 as memspec._signing._weakness judges it: any weak key, a small-order R.
    if public_key not in _SOUND_KEYS:
        if weak_point(public_key) is not None:
            return False
        if len(_SOUND_KEYS) >= _SOUND_KEYS_MAX:
            _SOUND_KEYS.clear()
        _SOUND_KEYS.add(public_key)
    if raw[:32] in _SMALL_ORDER_R:
        return False
    _key_object(public_key).verify(raw, _RECORD_TAG + data)
    return True


def _other_record_passes(record: object) -> tuple[bool, bool]:
    """(passes, NFC known) for a record outside the common shape, by the precise checks."""
    if type(record) is not dict or not _fast_check(record, _RECORD_DEPTH, DEFAULT_LIMITS):
        return False, False
    signature = record["signature"] if "signature" in record else None
    if isinstance(signature, str) and signature:
        decode_signature(signature)  # the spelling the precise path checks first
    validate_record(record, DEFAULT_LIMITS, _walked=True)
    signed, nfc = _verify_validated_nfc(record)
    return True, signed and nfc


def records_pass(records: list[Any], low: int, high: int) -> tuple[bool, bool]:
    """Whether ``records[low:high]`` all pass, and whether all their strings are known NFC.

    (False, False) at the first record that fails or raises anything.
    """
    plain = _plain_record_passes
    nfc = True
    try:
        for index in range(low, high):
            record = records[index]
            if type(record) is dict and plain(record):
                continue
            passed, record_nfc = _other_record_passes(record)
            if not passed:
                return False, False
            nfc = nfc and record_nfc
    except Exception:  # any failure or doubt (InvalidSignature too): the precise path decides
        return False, False
    return True, nfc


def header_passes(memory_file: object, *, require_signature: bool,
                  expected_agent: object) -> bool:
    """Whether the file-level checks that do not need the file's signature pass: the
    expected agent's spelling, the header, its walk, the signature's presence and signer,
    and that no record id appears twice."""
    from memspec._file import _validate_header, file_payload

    try:
        if expected_agent is not None:
            public_key_from_address(expected_agent)
        checked = _validate_header(memory_file, DEFAULT_LIMITS)
        header = {k: v for k, v in file_payload(checked).items() if k != "records"}
        if not _fast_check(header, 0, DEFAULT_LIMITS):
            return False
        signature = checked["signature"]
        if not signature and (require_signature or expected_agent is not None):
            return False
        if expected_agent is not None and checked["agent"] != expected_agent:
            return False
        records = checked["records"]
        ids = {record["id"] for record in records if type(record) is dict and "id" in record}
        return len(ids) == len(records)
    except Exception:
        return False


def file_signature_passes(memory_file: dict[str, Any], records_nfc: bool) -> bool:
    """Whether a file whose header passed has a valid signature or none (its absence was
    judged by :func:`header_passes`); ``records_nfc`` as memspec._file._file_bytes takes."""
    from memspec._file import _file_bytes

    signature = memory_file["signature"]
    if not signature:
        return True
    try:
        _verify_checked(memory_file["agent"], CONTEXT_MEMORY_FILE,
                        _file_bytes(memory_file, records_nfc), signature)
    except Exception:
        return False
    return True


def file_passes(memory_file: object, *, require_signature: bool,
                expected_agent: object) -> bool:
    """Whether verify_file's precise path would pass ``memory_file``; False also where it
    might not (then the precise path decides)."""
    if not header_passes(memory_file, require_signature=require_signature,
                         expected_agent=expected_agent):
        return False
    assert isinstance(memory_file, dict)
    records = memory_file["records"]
    passed, nfc = records_pass(records, 0, len(records))
    return passed and file_signature_passes(memory_file, nfc)
