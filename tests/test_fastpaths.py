"""Differential tests: every fast path agrees with the precise path it short-cuts.

The fast paths (canonical_json's shape walk and text checks, check_json_value's
specialised walks, the prebuilt C encoder, check_timestamp without strptime,
the address and key caches, decode_signature without the base64 wrappers,
validate_file not re-walking records, verify_file not re-walking what it
validated) must give the same bytes, or the same error class, requirement and
pointer, as the straightforward path for every input. The references here are
that straightforward path, written out: the precise walk plus json.dumps for
canonical JSON, strptime for timestamps, the uncached decoders, and
validate_file / verify_file as they read before the fast paths.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import unicodedata
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memspec import strategies as ms
from memspec._canonical import (
    _CHECKED_DUMPS,
    _DUMPS,
    _FAST_DEPTH,
    DEFAULT_LIMITS,
    MAX_SAFE_INTEGER,
    Limits,
    _canonical_checked,
    _fast_check,
    _precise_check,
    canonical_json,
    check_json_value,
)
from memspec._encoding import (
    _decode_address,
    check_timestamp,
    decode_signature,
    public_key_from_address,
)
from memspec._errors import (
    EncodingError,
    FileError,
    LimitError,
    MemspecError,
    RecordError,
    SignatureError,
)
from memspec._file import (
    FILE_FIELDS,
    FORMAT_VERSION,
    SEQUENCE_FIELD,
    file_payload,
    validate_file,
    verify_file,
)
from memspec._record import (
    _checked_record_id,
    _verify_validated,
    record_id,
    sign_record,
    validate_record,
    verify_record,
)
from memspec._signing import (
    CONTEXT_MEMORY_FILE,
    CONTEXT_RECORD,
    CONTEXTS,
    _verify_checked,
    ed25519_verify,
    signing_input,
    verify_by_address,
)

FAST = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
RECORDS = settings(max_examples=80, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
SLOW = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def outcome(call: Callable[..., Any]) -> tuple[Any, ...]:  # lambdas bind loop values as defaults
    """What a call did: its result, or its error's class, requirement and pointer."""
    try:
        return ("ok", call())
    except MemspecError as exc:
        return (type(exc), exc.requirement, exc.pointer)


# -- canonical JSON ------------------------------------------------------------------------------

#: Characters that stress the NFC and UTF-8 rules: combining marks (in and out of canonical
#: order), precomposed letters, a singleton (U+212B, never NFC), Hangul jamo that compose,
#: ASCII controls and the JSON escapes, lone surrogates, astral and CJK text.
_NASTY = ("a", "e", "n", "Z", "0", "~", "/", " ", "\u0301", "\u0300", "\u0316", "\u0303",
          "\u00e9", "\u212b", "\u1100", "\u1161", "\u11a8", "\uac00", "\n", "\x00", "\x1f",
          '"', "\\", "\ud800", "\udc00", "\U0001f600", "\u6771", "\u0345", "\u0327")
_chars = st.sampled_from(_NASTY)
_texts = st.text(_chars, max_size=6)


class _Str(str):
    """A str subclass: not a JSON string to memspec (CJ-1)."""


class _Int(int):
    """An int subclass: not a JSON integer to memspec (CJ-1)."""


_scalars = (
    st.none() | st.booleans() | _texts
    | st.integers(-MAX_SAFE_INTEGER - 3, MAX_SAFE_INTEGER + 3)
    | st.sampled_from([MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER, 2**53, -(2**53), 2**64, 0])
    | st.sampled_from([0.5, -0.0, 1.0, float("nan"), float("inf")])
    | st.sampled_from([_Str("s"), _Int(1), b"x", {1, 2}, object()])
)
_keys = _texts | st.sampled_from([1, None, True, 2.5, _Str("k")])


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return (st.lists(children, max_size=4)
            | st.lists(children, max_size=3).map(tuple)
            | st.dictionaries(_keys, children, max_size=4))


_values = st.recursive(_scalars, _containers, max_leaves=12)
_valid_values = st.recursive(
    st.none() | st.booleans() | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
    | st.text(_chars.filter(lambda c: not "\ud800" <= c <= "\udfff"), max_size=6),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.text(_chars.filter(lambda c: not "\ud800" <= c <= "\udfff"), max_size=5)
        .map(lambda s: unicodedata.normalize("NFC", s)), children, max_size=4),
    max_leaves=12)
_limits = st.sampled_from([DEFAULT_LIMITS, Limits(max_depth=2), Limits(max_depth=3),
                           Limits(max_string_chars=3), Limits(max_string_chars=8),
                           Limits(max_depth=2, max_string_chars=4)])


def _nfc_strings(value: Any) -> Any:
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    if isinstance(value, dict):
        return {key: _nfc_strings(sub) for key, sub in value.items()}
    if isinstance(value, list | tuple):
        return [_nfc_strings(sub) for sub in value]
    return value


def reference_canonical(value: Any, limits: Limits = DEFAULT_LIMITS) -> bytes:
    """Canonical JSON the slow way: the precise walk, then json.dumps, NFC per string."""
    _precise_check(value, limits)
    options: dict[str, Any] = {"sort_keys": True, "separators": (",", ":"),
                               "ensure_ascii": False, "allow_nan": False}
    text = json.dumps(value, **options)
    if not unicodedata.is_normalized("NFC", text):
        text = json.dumps(_nfc_strings(value), **options)
    return text.encode("utf-8")


@FAST
@given(_values, _limits)
def test_canonical_json_agrees_with_the_precise_path(value: Any, limits: Limits) -> None:
    assert outcome(lambda: canonical_json(value, limits)) == \
        outcome(lambda: reference_canonical(value, limits))


@FAST
@given(_values, _limits)
def test_check_json_value_agrees_with_the_precise_walk(value: Any, limits: Limits) -> None:
    assert outcome(lambda: check_json_value(value, limits)) == \
        outcome(lambda: _precise_check(value, limits))
    if _fast_check(value, 0, limits):
        _precise_check(value, limits)  # the fast walk only ever says "certainly valid"


@RECORDS
@given(_valid_values)
def test_valid_values_encode_the_same_through_every_path(value: Any) -> None:
    expected = reference_canonical(value)
    assert canonical_json(value) == expected
    assert _canonical_checked(value) == expected
    assert _CHECKED_DUMPS(value) == _DUMPS(value)


@FAST
@given(st.dictionaries(_texts, _texts, min_size=1, max_size=4), _texts)
def test_nfc_text_means_nfc_keys(obj: dict[str, str], prefix: str) -> None:
    # canonical_json reads key NFC off the encoded text: a non-NFC key must never hide in it.
    value = {prefix: obj}
    assert outcome(lambda: canonical_json(value)) == outcome(lambda: reference_canonical(value))


@pytest.mark.parametrize("depth", [_FAST_DEPTH - 1, _FAST_DEPTH, _FAST_DEPTH + 1, 70])
@pytest.mark.parametrize("max_depth", [_FAST_DEPTH, 66, 100])
def test_depth_near_the_fast_walk_bound(depth: int, max_depth: int) -> None:
    limits = Limits(max_depth=max_depth)
    leaf: object
    for leaf in ({}, [], "\u00e9", 1.5):
        value: Any = leaf
        for level in range(depth):
            value = [value] if level % 2 else {"k\u0301" if level == 7 else "k": value}
        assert outcome(lambda v=value: canonical_json(v, limits)) == \
            outcome(lambda v=value: reference_canonical(v, limits))


def test_cycles_and_long_texts_take_the_precise_path() -> None:
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    assert outcome(lambda: canonical_json(cyclic)) == outcome(lambda: _precise_check(cyclic,
                                                                                      DEFAULT_LIMITS))
    limits = Limits(max_string_chars=10)
    many = {"a": ["short"] * 5, "b": "x" * 9}  # text far over 10 characters, no long string
    assert canonical_json(many, limits) == reference_canonical(many, limits)
    over = {"a": ["short"] * 5, "b": "x" * 11}
    assert outcome(lambda: canonical_json(over, limits)) == \
        outcome(lambda: reference_canonical(over, limits))


# -- timestamps, addresses, signatures, keys ----------------------------------------------------

def reference_timestamp(value: object) -> tuple[Any, ...]:
    """check_timestamp as it read with strptime."""
    import re
    if not isinstance(value, str) or not re.match(
            r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z\Z", value, re.ASCII):
        return (EncodingError, "ENC-4", None)
    try:
        datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ")
    except ValueError:
        return (EncodingError, "ENC-4", None)
    return ("ok", value)


_YEARS = ("0000", "0001", "0004", "1900", "2000", "2023", "2024", "2100", "9999")


def test_check_timestamp_dates_near_every_edge() -> None:
    for year in _YEARS:
        for month in range(0, 14):
            for day in range(0, 33):
                stamp = f"{year}-{month:02d}-{day:02d}T12:00:00.000Z"
                assert outcome(lambda s=stamp: check_timestamp(s)) == reference_timestamp(stamp)


def test_check_timestamp_times_near_every_edge() -> None:
    for hour in (0, 1, 9, 19, 22, 23, 24, 25, 29, 99):
        for minute in (0, 9, 58, 59, 60, 61, 99):
            for second in (0, 9, 59, 60, 61, 62, 99):
                for millis in ("000", "999"):
                    stamp = f"2024-02-29T{hour:02d}:{minute:02d}:{second:02d}.{millis}Z"
                    assert outcome(lambda s=stamp: check_timestamp(s)) == \
                        reference_timestamp(stamp)


_digit_or_not = st.sampled_from("0123456789") | st.sampled_from(["\u0663", "a", "-", " ", "+"])


@FAST
@given(st.lists(_digit_or_not, min_size=17, max_size=17), st.sampled_from(["Z", "z", "", "ZZ"]))
def test_check_timestamp_on_arbitrary_digits(digits: list[str], tail: str) -> None:
    d = "".join(digits)
    stamp = f"{d[0:4]}-{d[4:6]}-{d[6:8]}T{d[8:10]}:{d[10:12]}:{d[12:14]}.{d[14:17]}{tail}"
    assert outcome(lambda: check_timestamp(stamp)) == reference_timestamp(stamp)


@FAST
@given(ms.timestamps())
def test_check_timestamp_accepts_every_canonical_timestamp(stamp: str) -> None:
    assert outcome(lambda: check_timestamp(stamp)) == reference_timestamp(stamp) == ("ok", stamp)


_b58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_address_like = (
    ms.addresses()
    | st.text(st.sampled_from(_b58 + "0OIl"), max_size=46).map(lambda s: "amp:key:" + s)
    | st.text(max_size=10)
    | st.sampled_from([None, 5, b"amp:key:1", "amp:key:" + "z" * 45, "AMP:key:1"])
)


@FAST
@given(_address_like)
def test_public_key_from_address_cached_agrees_twice(address: Any) -> None:
    def uncached() -> bytes:
        if not isinstance(address, str):
            raise EncodingError("not a string", requirement="ENC-1")
        if len(address) > 52:
            raise EncodingError("too long", requirement="ENC-1")
        return _decode_address(address)

    expected = outcome(uncached)
    assert outcome(lambda: public_key_from_address(address)) == expected
    assert outcome(lambda: public_key_from_address(address)) == expected  # a cache hit
    if isinstance(address, str):
        assert outcome(lambda: public_key_from_address(_Str(address))) == expected


def reference_decode_signature(text: object) -> bytes:
    """decode_signature as it read with the base64 module."""
    import re
    if not isinstance(text, str):
        raise EncodingError("not a string", requirement="ENC-3")
    if len(text) != 88 or not re.match(r"[A-Za-z0-9+/]*={0,2}\Z", text):
        raise EncodingError("not 88 base64 characters", requirement="ENC-3")
    try:
        raw = base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        raise EncodingError("not base64", requirement="ENC-3") from exc
    if len(raw) != 64 or base64.b64encode(raw).decode("ascii") != text:
        raise EncodingError("not canonical", requirement="ENC-3")
    return raw


_b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_signature_like = (
    st.binary(min_size=64, max_size=64).map(lambda b: base64.b64encode(b).decode())
    | st.tuples(st.text(st.sampled_from(_b64), min_size=85, max_size=86),
                st.sampled_from(["==", "=", "", "A=", "===", "-=", "\u00e9="]))
    .map(lambda t: t[0] + t[1])
    | st.text(st.sampled_from(_b64 + "=-_ \n\u00e9"), min_size=86, max_size=90)
    | st.sampled_from([None, 1, b"x" * 88, ""])
)


@FAST
@given(_signature_like)
def test_decode_signature_agrees_with_the_base64_module(text: Any) -> None:
    assert outcome(lambda: decode_signature(text)) == \
        outcome(lambda: reference_decode_signature(text))


@FAST
@given(st.binary(min_size=0, max_size=40), st.binary(max_size=40),
       st.binary(min_size=63, max_size=65), st.sampled_from([bytes, bytearray]))
def test_ed25519_verify_cached_key_objects_agree(key: bytes, message: bytes, signature: bytes,
                                                 kind: type) -> None:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    def uncached(key: Any, message: bytes, signature: bytes) -> bool:
        if len(key) != 32 or len(signature) != 64:
            return False
        try:
            Ed25519PublicKey.from_public_bytes(key).verify(signature, message)
        except (InvalidSignature, ValueError):
            return False
        return True

    def either(call: Callable[..., bool]) -> object:
        try:
            return call()
        except Exception as exc:  # a TypeError for a bytearray key, as before
            return type(exc)

    good = ms.TEST_KEY.sign_bytes(message)
    for args in ((kind(key), message, signature), (kind(ms.TEST_KEY.public_key), message, good),
                 (kind(ms.TEST_KEY.public_key), message + b"!", good)):
        assert either(lambda a=args: ed25519_verify(*a)) == either(lambda a=args: uncached(*a))
    assert ed25519_verify(ms.TEST_KEY.public_key, message, good) is True


@pytest.mark.parametrize("context", [*sorted(CONTEXTS), "nope", "Record", None])
def test_signing_input_tag_unchanged(context: Any) -> None:
    def reference() -> bytes:
        if not isinstance(context, str) or context not in CONTEXTS:
            raise SignatureError("unknown", requirement="SIG-2")
        tag = f"fg-agent-memory/v1/{context}".encode()
        return len(tag).to_bytes(2, "big") + tag + canonical_json({"a": 1})

    assert outcome(lambda: signing_input(context, {"a": 1})) == outcome(reference)


# -- records and files -------------------------------------------------------------------------

#: Values to break a record field with: wrong types, invalid JSON values, bad spellings.
_BAD = [None, True, 0, -1, 2**60, 1.5, "", " ", "x", "e\u0301", "\ud800", [], [1.5], {},
        {"a\u0301": 1}, {"k": 2.0}, ["mem:" + "0" * 32], "mem:" + "0" * 32,
        "2024-02-30T00:00:00.000Z", "2024-01-01T23:59:60.000Z", "2024-01-01T00:00:00.000Z",
        "9999-12-31T23:59:59.999Z", "amp:key:1111", "0.5000", "1.0000", "A" * 86 + "==",
        _Str("fact"), "rule", "archived", "superseded", "redaction"]
_FIELDS = ["id", "type", "body", "slots", "state", "confidence", "created_at", "updated_at",
           "occurred_at", "provenance", "evidence", "supersedes", "superseded_by", "transition",
           "state_reason", "tags", "flagged", "flag_reason", "signed_by", "signature",
           "redacted", "birth_digest", "redaction_reason", "ext\u0301", "x-extension"]


@st.composite
def mutated_records(draw: st.DrawFn) -> dict[str, Any]:
    record = copy.deepcopy(draw(ms.records() | ms.tombstones()))
    if draw(st.booleans()):
        record = sign_record(record, ms.TEST_KEY) if "redacted" not in record else record
    for _ in range(draw(st.integers(0, 2))):
        name = draw(st.sampled_from(_FIELDS))
        if draw(st.integers(0, 5)) == 0:
            record.pop(name, None)
        elif name == "provenance" and draw(st.booleans()):
            record[name] = {"kind": "k", "ref": draw(st.sampled_from(_BAD)), "agent": None}
        else:
            record[name] = copy.deepcopy(draw(st.sampled_from(_BAD)))
    return record


@SLOW
@given(mutated_records(), _limits)
def test_validate_record_walked_agrees_when_the_walk_passed(record: dict[str, Any],
                                                            limits: Limits) -> None:
    full = outcome(lambda: validate_record(record, limits))
    try:
        check_json_value({"records": [record]}, limits)
    except MemspecError:
        return
    assert outcome(lambda: validate_record(record, limits, _walked=True)) == full


@st.composite
def valid_records(draw: st.DrawFn) -> dict[str, Any]:
    """Valid records, signed or not, some with a signature that no longer verifies."""
    record = copy.deepcopy(draw(ms.records() | ms.tombstones()))
    if "redacted" in record or draw(st.booleans()):
        return record
    record = sign_record(record, ms.TEST_KEY)
    change = draw(st.integers(0, 3))
    if change == 1:  # content changed after signing, id recomputed: still a valid record
        record["tags"] = [*record["tags"], f"tag{len(record['tags'])}"]
        record["id"] = record_id(record)
    elif change == 2:  # a canonical spelling of another signature
        record["signature"] = base64.b64encode(bytes(64)).decode()
    elif change == 3:  # another signer named
        record["signed_by"] = draw(ms.addresses())
    return record


def test_looser_limits_still_fail_the_content_address_as_before() -> None:
    # Checked under limits looser than DEFAULT_LIMITS, a record's birth is not known to
    # pass canonical_json at DEFAULT_LIMITS, so the public record_id runs and fails as it did.
    record = _plain_record()
    record["slots"] = {"long": "x" * (DEFAULT_LIMITS.max_string_chars + 1)}
    loose = Limits(max_string_chars=DEFAULT_LIMITS.max_string_chars * 2)
    expected = outcome(lambda: record_id(record))
    assert expected == (LimitError, None, "/slots/long")
    assert outcome(lambda: validate_record(record, loose)) == expected
    assert outcome(lambda: validate_record(record, loose, _walked=True)) == expected


def _plain_record() -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": "", "type": "fact", "body": "b", "slots": {}, "state": "active",
        "confidence": "0.5000", "created_at": "2024-01-01T00:00:00.000Z",
        "updated_at": "2024-01-01T00:00:00.000Z",
        "provenance": {"kind": "k", "ref": None, "agent": None}, "evidence": [],
        "supersedes": None, "superseded_by": None, "transition": None, "state_reason": None,
        "tags": [], "flagged": False, "flag_reason": None, "signed_by": None, "signature": "",
    }
    record["id"] = record_id(record)
    return record


@RECORDS
@given(valid_records())
def test_content_address_and_verification_without_the_walk(record: dict[str, Any]) -> None:
    validate_record(record)
    if "redacted" not in record:
        assert _checked_record_id(record, DEFAULT_LIMITS) == record_id(record)
    assert outcome(lambda: _verify_validated(record)) == outcome(lambda: verify_record(record))
    if record["signed_by"] is not None:
        payload = {k: v for k, v in record.items() if k != "signature"}
        assert outcome(lambda: _verify_checked(record["signed_by"], CONTEXT_RECORD,
                                               canonical_json(payload), record["signature"])) \
            == outcome(lambda: verify_by_address(record["signed_by"], CONTEXT_RECORD, payload,
                                                 record["signature"]))


def reference_validate_file(memory_file: object, limits: Limits = DEFAULT_LIMITS) -> None:
    """validate_file as it read before the fast paths (every record walked again)."""
    if not isinstance(memory_file, dict):
        raise FileError("not an object", requirement="FILE-1")
    missing = [name for name in FILE_FIELDS if name not in memory_file]
    if missing:
        raise FileError("missing", pointer=f"/{missing[0]}", requirement="FILE-1")
    if memory_file["format"] != FORMAT_VERSION:
        raise FileError("format", pointer="/format", requirement="FILE-2")
    agent = memory_file["agent"]
    if agent is not None:
        try:
            _decode_address(agent) if isinstance(agent, str) and len(agent) <= 52 else \
                public_key_from_address(agent)
        except EncodingError as exc:
            raise FileError("agent", pointer="/agent", requirement="ENC-1") from exc
    if reference_timestamp(memory_file["created_at"])[0] != "ok":
        raise FileError("created_at", pointer="/created_at", requirement="REC-7")
    records = memory_file["records"]
    if not isinstance(records, list):
        raise FileError("records", pointer="/records", requirement="FILE-1")
    if len(records) > limits.max_records_per_file:
        raise FileError("too many", pointer="/records")
    signature = memory_file["signature"]
    if not isinstance(signature, str):
        raise FileError("signature", pointer="/signature", requirement="FILE-1")
    if signature and agent is None:
        raise FileError("agent", pointer="/agent", requirement="FILE-3")
    if signature:
        try:
            reference_decode_signature(signature)
        except EncodingError as exc:
            raise FileError("signature", pointer="/signature", requirement="ENC-3") from exc
    if SEQUENCE_FIELD in memory_file:
        sequence = memory_file[SEQUENCE_FIELD]
        if type(sequence) is not int or not 0 <= sequence <= MAX_SAFE_INTEGER:
            raise FileError("sequence", pointer=f"/{SEQUENCE_FIELD}", requirement="ROLL-1")
    try:
        _precise_check(file_payload(memory_file), limits)
    except MemspecError as exc:
        raise FileError(exc.message, pointer=exc.pointer, requirement=exc.requirement) from exc
    seen: set[str] = set()
    for index, record in enumerate(records):
        try:
            validate_record(record, limits)
        except MemspecError as exc:
            raise FileError(f"record {index}: {exc.message}",
                            pointer=f"/records/{index}{exc.pointer or ''}",
                            requirement=exc.requirement) from exc
        if record["id"] in seen:
            raise FileError("twice", requirement="FILE-4", pointer=f"/records/{index}/id")
        seen.add(record["id"])


def reference_verify_file(memory_file: Any, *, require_signature: bool = True) -> None:
    """verify_file as it read before the fast paths: public verify_record and
    verify_by_address, which canonicalize (and walk) every payload again."""
    from memspec._file import _spelled_first

    signature = memory_file.get("signature") if isinstance(memory_file, dict) else None
    _spelled_first(signature, "file signature", "/signature")
    records = memory_file.get("records") if isinstance(memory_file, dict) else None
    if isinstance(records, list):
        for index, record in enumerate(records):
            if isinstance(record, dict):
                _spelled_first(record.get("signature"), f"signature of record {index}",
                               f"/records/{index}/signature")
    reference_validate_file(memory_file)
    for index, record in enumerate(memory_file["records"]):
        try:
            verify_record(record)
        except SignatureError as exc:
            raise SignatureError("record", pointer=f"/records/{index}/signature",
                                 requirement=exc.requirement or "FILE-6") from exc
    if signature:
        try:
            verify_by_address(memory_file["agent"], CONTEXT_MEMORY_FILE,
                              file_payload(memory_file), signature)
        except SignatureError as exc:
            raise SignatureError("file", pointer="/signature",
                                 requirement=exc.requirement) from exc
    elif require_signature:
        raise SignatureError("unsigned", pointer="/signature", requirement="FILE-5")


@st.composite
def mutated_files(draw: st.DrawFn) -> dict[str, Any]:
    memory_file = copy.deepcopy(draw(ms.memory_files(signed=None, max_records=3)))
    records = memory_file["records"]
    if records and draw(st.booleans()):
        records.append(draw(mutated_records()))
    if records and draw(st.booleans()):
        index = draw(st.integers(0, len(records) - 1))
        target = records[index]
        name = draw(st.sampled_from(["body", "signature", "tags", "slots", "state", "id"]))
        target[name] = copy.deepcopy(draw(st.sampled_from([*_BAD, records[0].get(name)])))
    if records and draw(st.integers(0, 3)) == 0:
        records.append(copy.deepcopy(records[0]))  # a duplicate id
    if draw(st.integers(0, 3)) == 0:
        name = draw(st.sampled_from(["format", "agent", "created_at", "signature",
                                     SEQUENCE_FIELD, "x-ext", "records"]))
        memory_file[name] = copy.deepcopy(draw(st.sampled_from(
            [*_BAD, FORMAT_VERSION, 3, ms.TEST_KEY.address])))
    return memory_file


@SLOW
@given(mutated_files(), _limits)
def test_validate_file_agrees_with_the_rewalking_path(memory_file: dict[str, Any],
                                                      limits: Limits) -> None:
    def reference() -> dict[str, Any]:
        reference_validate_file(memory_file, limits)
        return memory_file

    assert outcome(lambda: validate_file(memory_file, limits)) == outcome(reference)


@SLOW
@given(mutated_files(), st.booleans())
def test_verify_file_agrees_with_the_rewalking_path(memory_file: dict[str, Any],
                                                    required: bool) -> None:
    assert outcome(lambda: verify_file(memory_file, require_signature=required)) == \
        outcome(lambda: reference_verify_file(memory_file, require_signature=required))


@SLOW
@given(ms.memory_files(signed=True, max_records=3), st.data())
def test_verify_file_detects_every_altered_signed_byte(memory_file: dict[str, Any],
                                                       data: st.DataObject) -> None:
    verify_file(memory_file)
    altered = copy.deepcopy(memory_file)
    signed = [r for r in altered["records"] if r["signed_by"] is not None]
    if len(signed) > 0 and data.draw(st.booleans()):
        target = data.draw(st.sampled_from(signed))
        target["tags"] = [*target["tags"], "added"]
        target["id"] = record_id(target)  # still a valid record: only its signature breaks
    else:
        stamp = "2000-01-01T00:00:00.000Z"
        altered["created_at"] = stamp if altered["created_at"] != stamp else \
            "2000-01-01T00:00:00.001Z"
    got = outcome(lambda: verify_file(altered))
    assert got[0] in (SignatureError, FileError)
    assert got == outcome(lambda: reference_verify_file(altered))


def test_public_key_cache_keeps_no_errors() -> None:
    bad = "amp:key:" + "1" * 40
    for _ in range(3):
        with pytest.raises(EncodingError) as info:
            public_key_from_address(bad)
        assert info.value.requirement == "ENC-1"
    with pytest.raises(RecordError):
        validate_record({**_plain_record(), "signed_by": bad, "signature": "A" * 86 + "=="})


# -- the optional accelerator (orjson) ----------------------------------------------------------


def _without_accelerator(monkeypatch: pytest.MonkeyPatch) -> None:
    from memspec import _canonical

    monkeypatch.setattr(_canonical, "_FAST_BYTES", None)


def _accelerator() -> Callable[[Any], bytes]:
    from memspec import _canonical

    pytest.importorskip("orjson")
    encode = _canonical._FAST_BYTES
    if encode is None:
        pytest.skip("the accelerator is turned off (MEMSPEC_NO_ACCELERATOR)")
    return lambda value: encode(value, None, _canonical._FAST_OPTION)


@FAST
@given(_values, _limits)
def test_accelerated_and_precise_paths_agree(value: Any, limits: Limits) -> None:
    _accelerator()
    fast = outcome(lambda: canonical_json(value, limits))
    with pytest.MonkeyPatch.context() as patch:
        _without_accelerator(patch)
        assert outcome(lambda: canonical_json(value, limits)) == fast
        assert fast == outcome(lambda: reference_canonical(value, limits))


@RECORDS
@given(_valid_values)
def test_orjson_writes_the_encoders_text_on_checked_values(value: Any) -> None:
    encode = _accelerator()
    try:
        data = encode(value)
    except Exception:  # refused: canonical_json then takes the encoder
        return
    assert data == _CHECKED_DUMPS(value).encode("utf-8")


def _json_nodes(value: Any) -> list[Any]:
    found = [value]
    if isinstance(value, dict):
        for sub in value.values():
            found.extend(_json_nodes(sub))
    elif isinstance(value, list):
        for sub in value:
            found.extend(_json_nodes(sub))
    return found


def test_every_vector_value_encodes_the_same_without_the_accelerator(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from memspec.data import json_resource, vector_files

    _accelerator()
    values = [node for name in vector_files()
              for node in _json_nodes(json_resource("vectors", name))
              if isinstance(node, dict | list)]
    assert len(values) > 1000
    fast = [outcome(lambda v=v: canonical_json(v)) for v in values]
    checked = [outcome(lambda v=v: _canonical_checked(v)) for v in values
               if outcome(lambda v=v: check_json_value(v)) == ("ok", None)]
    _without_accelerator(monkeypatch)
    assert [outcome(lambda v=v: canonical_json(v)) for v in values] == fast
    assert [outcome(lambda v=v: _canonical_checked(v)) for v in values
            if outcome(lambda v=v: check_json_value(v)) == ("ok", None)] == checked


def test_the_package_works_without_the_accelerator() -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "MEMSPEC_NO_ACCELERATOR": "1"}
    script = (
        "from memspec import _canonical\n"
        "assert _canonical._FAST_BYTES is None\n"
        "from memspec.data import json_resource\n"
        "doc = json_resource('vectors', 'canonical-json.json')\n"
        "tests = [t for g in doc['groups'] for t in g['tests']]\n"
        "print(len(tests))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/test_vectors.py", "-k", "canonical"],
                          capture_output=True, text=True, timeout=600, check=False,
                          cwd=str(Path(__file__).resolve().parent.parent), env=env)
    assert done.returncode == 0, done.stdout[-2000:]


@pytest.mark.parametrize("odd", [
    1.0, 2.5e10, float("nan"), __import__("uuid").UUID(int=7),
    __import__("datetime").date(2026, 1, 2), __import__("enum").Enum("E", "A").A,
    True.__class__(1), 2**53, -(2**53), b"x", {1, 2}, object(),
])
def test_what_orjson_would_encode_but_canonical_json_refuses(odd: Any) -> None:
    _accelerator()
    for value in ({"k": odd}, [odd], {"a": [{"b": (odd,)}]}):
        fast = outcome(lambda v=value: canonical_json(v))
        with pytest.MonkeyPatch.context() as patch:
            _without_accelerator(patch)
            assert outcome(lambda v=value: canonical_json(v)) == fast


@pytest.mark.parametrize("decomposed", ["none", "record", "header"])
def test_file_bytes_skip_the_nfc_test_only_when_every_string_is_known_nfc(
        decomposed: str) -> None:
    """verify_file builds a file's canonical bytes without testing the text for NFC only
    when every record's signing input was NFC and the header is: the same bytes, and the
    same verdict, as the checked path, whichever part holds a decomposed string."""
    from memspec._file import _file_bytes, sign_file
    from memspec._record import _verify_validated_nfc

    records = []
    for index in range(3):
        body = f"Caf\u00e9 number {index}"
        if decomposed == "record" and index == 1:
            body = f"Cafe\u0301 number {index}"
        birth = {"type": "fact", "body": body, "slots": {"city": "Z\u00fcrich"},
                 "provenance": {"kind": "conversation", "ref": None, "agent": None},
                 "created_at": f"2026-01-0{index + 1}T00:00:00.000Z"}
        record = {"id": record_id(birth), **birth, "state": "active",
                  "confidence": "0.9000", "updated_at": birth["created_at"], "evidence": [],
                  "supersedes": None, "superseded_by": None, "transition": None,
                  "state_reason": None, "tags": [], "flagged": False, "flag_reason": None,
                  "signed_by": None, "signature": ""}
        records.append(sign_record(record, ms.TEST_KEY))
    header = {"format": FORMAT_VERSION, "agent": None,
              "created_at": "2026-02-01T00:00:00.000Z", "records": records, "signature": ""}
    if decomposed == "header":
        header["x-note"] = "Sa\u0303o Paulo"
    signed = sign_file(header, ms.TEST_KEY)
    expected = _canonical_checked(file_payload(signed))
    known = all(_verify_validated_nfc(r) == (True, True) for r in signed["records"])
    assert known == (decomposed != "record")
    assert _file_bytes(signed, known) == _file_bytes(signed, False) == expected
    assert outcome(lambda: verify_file(signed, jobs=1)) == \
        outcome(lambda: reference_verify_file(signed))


# -- the NFC test of UTF-8 text -----------------------------------------------------------------

def _maybe_characters() -> set[int]:
    """Every code point that may compose with the one before it, from the running Unicode
    database: the second of every canonical pair (composition exclusions too) and the
    Hangul vowel and trailing jamo (composed algorithmically, listed nowhere)."""
    found = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))
    for code in range(0x110000):
        parts = unicodedata.decomposition(chr(code)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            found.add(int(parts[1], 16))
    return found


def test_the_quick_nfc_test_covers_every_maybe_character() -> None:
    """nfc_utf8 tests the non-ASCII bytes alone only when none may compose backwards:
    its pattern must match the UTF-8 of every such character of this Unicode version."""
    from memspec import _canonical_fast

    assert _canonical_fast._QUICK == (unicodedata.unidata_version
                                      in _canonical_fast.NFC_QUICK_VERSIONS)
    if not _canonical_fast._QUICK:
        pytest.skip(f"Unicode {unicodedata.unidata_version}: nfc_utf8 tests the whole text")
    maybe = _maybe_characters()
    assert {0x0301, 0x0338, 0x3099, 0x1161, 0x11A8} <= maybe
    missed = [hex(code) for code in sorted(maybe)
              if _canonical_fast._MAYBE(chr(code).encode("utf-8")) is None]
    assert missed == []
    for code in range(128):  # what deleting ASCII relies on: class 0, Quick_Check=Yes
        assert unicodedata.combining(chr(code)) == 0
        assert code not in maybe and unicodedata.is_normalized("NFC", chr(code))


def test_every_character_led_by_a_safe_byte_is_judged_alone_correctly() -> None:
    """nfc_utf8 answers YES outright when no non-ASCII character has a lead byte in
    _UNSAFE_LEADS: every character under any other lead must be class 0, Quick_Check=Yes
    (NFC alone) and never the second of a canonical pair."""
    from memspec import _canonical_fast

    if not _canonical_fast._QUICK:
        pytest.skip(f"Unicode {unicodedata.unidata_version}: nfc_utf8 tests the whole text")
    maybe = _maybe_characters()
    unsafe = [code for code in range(0x80, 0x110000)
              if 0xD800 <= code < 0xE000 or code in maybe
              or unicodedata.combining(chr(code)) != 0
              or not unicodedata.is_normalized("NFC", chr(code))]
    assert {0x0301, 0x0387, 0x2126, 0x3099, 0x1D165, 0xD800} <= set(unsafe)
    leads = {chr(code).encode("utf-8", "surrogatepass")[0] for code in unsafe}
    missed = sorted(hex(lead) for lead in leads - set(_canonical_fast._UNSAFE_LEADS))
    assert missed == []
    assert _canonical_fast._LEAD_CLASS == bytes(
        byte in _canonical_fast._UNSAFE_LEADS for byte in range(256))


#: Text that stresses the quick test: marks that compose with ASCII letters and with
#: non-ASCII ones, marks out of canonical order separated by ASCII, singletons (never
#: NFC), Hangul jamo, kana voicing, Hebrew points, Greek, CJK and emoji the pattern lets
#: through, and the JSON escapes.
_NFC_CHARS = st.sampled_from(
    ("a", "e", "n", "<", "=", "x", " ", '"', "\\", "\n", "\u00e9", "\u00fc", "\u03bb",
     "\u03cc", "\u6771", "\U0001f680", "\u20ac", "\u0301", "\u0316", "\u0338", "\u0345",
     "\u0344", "\u212b", "\u0387", "\u1100", "\u1161", "\u11a8", "\uac00", "\u304b",
     "\u3099", "\u05d0", "\u05b7", "\u0627", "\u0653", "\U0001d15e", "\U0001d165",
     "\u2000", "\u1f71", "\u0374", "\ufb1d"))


@FAST
@given(st.text(_NFC_CHARS, max_size=12))
def test_nfc_utf8_is_is_normalized(text: str) -> None:
    from memspec._canonical_fast import nfc_utf8

    assert nfc_utf8(text.encode("utf-8")) == unicodedata.is_normalized("NFC", text)


@pytest.mark.parametrize("text", [
    "e\u0301", "\u00e9x\u0301", "\u0301x\u0316", "\u0316x\u0301", "\u00fc\u0301", "<\u0338",
    "\u212b", "\u0387", "\u1100\u1161", "\u304b\u3099", "\u6771\U0001f680 \u00e9", "\u03ac",
    "a\u0344", "\u00e9\"\u0301", "Z\u00fcrich \u03bb\u03cc\u03b3\u03bf\u03c2 \u6771\u4eac",
])
def test_nfc_utf8_on_chosen_texts(text: str) -> None:
    from memspec._canonical_fast import nfc_utf8

    for whole in (text, f'{{"body":"{text}","n":1}}'):
        assert nfc_utf8(whole.encode("utf-8")) == unicodedata.is_normalized("NFC", whole)
