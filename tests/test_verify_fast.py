"""verify_file's fast path (memspec._verify_fast) against its precise path.

The fast path may only ever answer "passes" where the precise path
(memspec._file._verify_file) passes; everywhere else verify_file runs the
precise path, so the verdict and the first error are the precise path's. A
corruption here is re-signed (the record by canonical JSON or by the raw
encoder's bytes, the file likewise) and the record's id recomputed, so that
each corruption meets the rule it breaks instead of a broken signature.
Nothing here measures time.
"""

from __future__ import annotations

import copy
import enum
import hashlib
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks._data import memory_file, signed_records, typical_records
from memspec import _canonical, _verify_fast
from memspec import strategies as ms
from memspec._encoding import encode_signature as _b64
from memspec._errors import MemspecError
from memspec._file import _verify_file, file_payload, sign_file, verify_file
from memspec._record import BIRTH_FIELDS, is_tombstone, sign_record, signed_payload
from memspec._signing import CONTEXT_MEMORY_FILE, CONTEXT_RECORD, SigningKey, _tag

# The common shape's checks lean on the accelerator; the corruptions are signed with it.
orjson = pytest.importorskip("orjson")

CHECKS = settings(max_examples=300, deadline=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
OTHER = SigningKey.from_hex("22" * 32)


class _Str(str):
    """A str subclass: no JSON value (the walk refuses it), though it compares equal."""


class _Colour(enum.Enum):
    RED = "red"


_KEY = ms.TEST_KEY.address
_ID = "mem:" + "0" * 32
#: Values to corrupt a field with: wrong types, values canonical JSON refuses, values the
#: encoder writes differently from canonical JSON, bad spellings, and valid values.
_VALUES: list[Any] = [
    None, True, False, 0, -1, 2**53, 2**60, 1.5, 1.0, "", " ", "x", "e\u0301", "\u00e9",
    "\n\u0301", "\ud800", _Str("fact"), _Colour.RED, uuid.UUID(int=7), (), ("x",), [], [1.5],
    [""], ["x", "x"], ["e\u0301", "\u00e9"], {}, {"a\u0301": 1}, {"k": 2.0}, {"k": 2**60},
    {"k": _Str("v")}, {"k": "e\u0301"}, {"k": [[[[]]]]}, [_ID], [_ID, _ID], _ID,
    "mem:" + "A" * 32, "2024-02-29T00:00:00.000Z", "2023-02-29T00:00:00.000Z",
    "2024-01-01T23:59:60.000Z", "2024-01-01T24:00:00.000Z", "0001-01-01T00:00:00.000Z",
    "9999-12-31T23:59:59.999Z", "2024-01-01T00:00:00.000+00:00", "\uff12024-01-01T00:00:00.000Z",
    _KEY, "amp:key:1111", "0.5000", "1.0000", "1.0001", "0.50000", "\uff10.5000",
    "A" * 86 + "==", "fact", "rule", "episode", "active", "archived", "superseded",
    "transitional", "redaction", "x" * 300_000,
    {"kind": "k", "ref": None, "agent": None}, {"kind": "", "ref": None, "agent": None},
    {"kind": "k", "ref": 3, "agent": None}, {"kind": "k", "ref": None, "agent": "amp:key:1"},
    {"kind": "k", "ref": None}, {"kind": "e\u0301", "ref": "e\u0301", "agent": _KEY},
]
_SHORT_VALUES = [v for v in _VALUES if not (isinstance(v, str) and len(v) > 1000)]
_TOP = ["id", "type", "body", "slots", "state", "confidence", "created_at", "updated_at",
        "occurred_at", "provenance", "evidence", "supersedes", "superseded_by", "transition",
        "state_reason", "tags", "flagged", "flag_reason", "signed_by", "signature",
        "redacted", "birth_digest", "redaction_reason", "x-extension", "e\u0301xt"]


def _outcome(call: Callable[..., None]) -> tuple[Any, ...]:  # lambdas bind loop values as defaults
    try:
        call()
    except MemspecError as exc:
        return (type(exc).__name__, exc.code, exc.message, exc.pointer, exc.requirement)
    return ("ok",)


def _readdress(record: dict[str, Any]) -> None:
    """Give a corrupted record the id its birth fields hash to under the raw encoder."""
    try:
        birth = orjson.dumps({k: record[k] for k in BIRTH_FIELDS}, option=orjson.OPT_SORT_KEYS)
    except (KeyError, TypeError):
        return
    record["id"] = "mem:" + hashlib.sha256(birth).hexdigest()[:32]


def _resign(record: dict[str, Any], how: str) -> dict[str, Any]:
    """The record signed by TEST_KEY over canonical JSON ("canonical") or over the raw
    encoder's bytes ("raw"), or as it is ("keep")."""
    if how == "canonical":
        try:
            return sign_record(record, ms.TEST_KEY)
        except (MemspecError, TypeError, AttributeError):
            return record
    if how == "raw":
        payload = signed_payload(record, _KEY)
        try:
            data = orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)
        except TypeError:
            return record
        return {**payload,
                "signature": _b64(ms.TEST_KEY.sign_bytes(_tag(CONTEXT_RECORD) + data))}
    return record


def _resign_file(memory_file: dict[str, Any], how: str) -> dict[str, Any]:
    if how == "canonical":
        try:
            return sign_file(memory_file, ms.TEST_KEY)
        except (MemspecError, TypeError, AttributeError):
            return memory_file
    if how == "raw":
        payload = {**file_payload(memory_file), "agent": _KEY}
        try:
            data = orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)
        except TypeError:
            return memory_file
        signature = _b64(ms.TEST_KEY.sign_bytes(_tag(CONTEXT_MEMORY_FILE) + data))
        return {**payload, "signature": signature}
    return memory_file


_SIGNINGS = st.sampled_from(["canonical", "raw", "keep"])


@st.composite
def corrupted_files(draw: st.DrawFn) -> dict[str, Any]:
    """A valid file with one or two fields of its records (or of a record's provenance,
    slots, tags or evidence) corrupted, the record re-signed and re-addressed."""
    chosen = copy.deepcopy(draw(ms.memory_files(signed=True, max_records=3)))
    records = chosen["records"]
    if draw(st.integers(0, 2)) == 0:
        records.append(copy.deepcopy(draw(st.sampled_from(_PLAIN_POOL))))
    for _ in range(draw(st.integers(1, 2))):
        if not records:
            break
        index = draw(st.integers(0, len(records) - 1))
        record = records[index]
        value = copy.deepcopy(draw(st.sampled_from(_VALUES)))
        where = draw(st.sampled_from(["top", "top", "drop", "provenance", "slots", "tags",
                                      "evidence"]))
        if where == "top":
            record[draw(st.sampled_from(_TOP))] = value
        elif where == "drop":
            record.pop(draw(st.sampled_from(_TOP)), None)
        elif where == "provenance" and isinstance(record.get("provenance"), dict):
            record["provenance"][draw(st.sampled_from(["kind", "ref", "agent", "x"]))] = value
        elif where == "slots" and isinstance(record.get("slots"), dict):
            record["slots"][draw(st.sampled_from(["k", "e\u0301", "state"]))] = value
        elif where in ("tags", "evidence") and isinstance(record.get(where), list):
            record[where] = [*record[where], value]
        if draw(st.booleans()) and not is_tombstone(record):
            _readdress(record)
        if isinstance(record.get("signed_by"), str) and not is_tombstone(record):
            records[index] = _resign(record, draw(_SIGNINGS))
    return _resign_file(chosen, draw(_SIGNINGS))


_PLAIN_POOL = signed_records(typical_records(40, seed=19))


@CHECKS
@given(corrupted_files(), st.booleans(), st.sampled_from([None, _KEY, OTHER.address, "bad"]))
def test_the_fast_path_passes_only_what_the_precise_path_passes(
        chosen: dict[str, Any], required: bool, expected: object) -> None:
    precise = _outcome(lambda: _verify_file(chosen, require_signature=required,
                                            expected_agent=expected))
    if _verify_fast.file_passes(chosen, require_signature=required, expected_agent=expected):
        assert precise == ("ok",)
    assert _outcome(lambda: verify_file(chosen, require_signature=required,
                                        expected_agent=expected, jobs=1)) == precise


@CHECKS
@given(ms.memory_files(signed=True, max_records=4))
def test_the_fast_path_passes_valid_files(chosen: dict[str, Any]) -> None:
    """Tombstones, unsigned and transitional records, extension fields and strings
    not in NFC take the precise per-record checks, inside the fast path."""
    assert _verify_fast.file_passes(chosen, require_signature=True, expected_agent=_KEY)


def test_typical_records_take_the_common_shape() -> None:
    signed = memory_file(signed_records(typical_records(60, seed=3)), signed=True)
    assert all(_verify_fast._plain_record_passes(r) for r in signed["records"])
    assert _verify_fast.records_pass(signed["records"], 0, 60) == (True, True)
    assert _verify_fast.file_passes(signed, require_signature=True, expected_agent=None)


def test_a_decomposed_body_is_checked_by_the_precise_path() -> None:
    record = copy.deepcopy(_PLAIN_POOL[0])
    record["body"] = "Cafe\u0301 open"
    _readdress(record)  # the raw encoder's birth bytes: not the canonical (NFC) ones
    raw = _resign(record, "raw")
    assert not _verify_fast._plain_record_passes(raw)
    assert _verify_fast.records_pass([raw], 0, 1) == (False, False)
    canonical = sign_record({**record, "id": _canonical_id(record)}, ms.TEST_KEY)
    assert not _verify_fast._plain_record_passes(canonical)
    assert _verify_fast.records_pass([canonical], 0, 1) == (True, False)


def _canonical_id(record: dict[str, Any]) -> str:
    from memspec._record import record_id

    return record_id(record)


@pytest.mark.parametrize("alteration", [
    lambda r: r.__setitem__("body", "changed"),
    lambda r: r.__setitem__("signature", _PLAIN_POOL[1]["signature"]),
    lambda r: r.__setitem__("signed_by", OTHER.address),
    lambda r: r.__setitem__("tags", ["b", "a"]),
    lambda r: r["provenance"].__setitem__("ref", "other"),
])
def test_an_altered_record_fails_the_fast_path(alteration: Callable[[dict[str, Any]], None]
                                               ) -> None:
    record = copy.deepcopy(_PLAIN_POOL[2])
    alteration(record)
    assert _verify_fast.records_pass([record], 0, 1) == (False, False)


def test_without_the_accelerator_the_fast_path_judges_the_same(
        monkeypatch: pytest.MonkeyPatch) -> None:
    signed = memory_file(signed_records(typical_records(5, seed=4)), signed=True)
    tampered = copy.deepcopy(signed)
    tampered["records"][3]["tags"] = ["changed"]
    expected = _outcome(lambda: _verify_file(tampered, require_signature=True,
                                             expected_agent=None))
    monkeypatch.setattr(_canonical, "_FAST_BYTES", None)
    assert all(_verify_fast._plain_record_passes(r) for r in signed["records"])
    assert _verify_fast.file_passes(signed, require_signature=True, expected_agent=None)
    assert not _verify_fast.file_passes(tampered, require_signature=True, expected_agent=None)
    assert expected[0] == "SignatureError"
    assert _outcome(lambda: verify_file(tampered, jobs=1)) == expected


def _bases() -> list[dict[str, Any]]:
    """Signed records of every type and state the common shape holds (and one it does not)."""
    plain = _PLAIN_POOL[3]
    other = "mem:" + "1" * 32
    variants: list[dict[str, Any]] = [
        {},
        {"type": "rule", "evidence": [other], "flagged": True, "flag_reason": "stale"},
        {"state": "superseded", "superseded_by": other, "state_reason": "newer"},
        {"state": "archived", "superseded_by": other, "state_reason": "old"},
        {"occurred_at": "2024-02-29T12:00:00.000Z", "tags": ["a", "b"],
         "slots": {"k": [1, None, True, {"x": "y"}]}, "supersedes": other},
        {"state": "transitional", "transition": {"sides": [plain["id"], other],
                                                 "reason": "both"}},
    ]
    bases = []
    for change in variants:
        record = {**copy.deepcopy(plain), **change}
        record["id"] = _canonical_id(record)
        if record["state"] == "transitional":
            record["transition"]["sides"][0] = record["id"]
        bases.append(sign_record(record, ms.TEST_KEY))
    return bases


def _places(record: dict[str, Any]) -> list[Callable[..., None]]:
    """Setters ``place(record, value)``; each lambda binds its field name as a default."""
    places: list[Callable[..., None]] = []
    for name in _TOP:
        places.append(lambda r, v, name=name: r.__setitem__(name, v))
        places.append(lambda r, v, name=name: r.pop(name, None))
    for key in ("kind", "ref", "agent", "x"):
        places.append(lambda r, v, key=key: r["provenance"].__setitem__(key, v))
    for key in ("k", "e\u0301"):
        places.append(lambda r, v, key=key: r["slots"].__setitem__(key, v))
    for name in ("tags", "evidence"):
        places.append(lambda r, v, name=name: r.__setitem__(name, [*r[name], v]))
    return places


def test_every_field_corrupted_every_way_is_refused_where_the_precise_path_refuses() -> None:
    passed = refused = 0
    ways = (("no", "keep"), ("yes", "canonical"), ("yes", "raw"))
    turn = 0
    for base in _bases():
        for place in _places(base):
            for value in _SHORT_VALUES:
                # One way per case, in turn (each way meets every value across the places).
                turn += 1
                for readdress, how in (ways[turn % 3],):
                    record = copy.deepcopy(base)
                    place(record, copy.deepcopy(value))
                    if readdress == "yes":
                        _readdress(record)
                    record = _resign(record, how)
                    chosen = _resign_file({"format": "fg-agent-memory/0.1", "agent": None,
                                           "created_at": "2027-01-01T00:00:00.000Z",
                                           "records": [record], "signature": ""},
                                          "canonical")
                    precise = _outcome(lambda chosen=chosen: _verify_file(
                        chosen, require_signature=True, expected_agent=None))
                    if _verify_fast.file_passes(chosen, require_signature=True,
                                                expected_agent=None):
                        assert precise == ("ok",), (place, value, how)
                        passed += 1
                    else:
                        refused += 1
    assert passed and refused  # both sides were reached
