"""The record format beyond the vectors: generated records, ids, evolution and extensions."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from memspec import (
    MAX_SAFE_INTEGER,
    OPTIONAL_FIELDS,
    MemspecError,
    birth_digest,
    canonical_json,
    confidence_from_wire,
    record_id,
    validate_record,
)
from memspec import strategies as ms
from memspec.conformance import _builders as build
from memspec.conformance._clock import KitClock
from memspec.conformance._machines import attempt, expect_rejected, kit_settings
from memspec.conformance._outcomes import RequirementFailed
from memspec.conformance._session import EngineSession

# Keys and strings where byte-level choices show: code points beyond U+FFFF sort after
# U+E000..U+FFFF by code point but before them in UTF-16; decomposed text changes under NFC.
_KEY_CHARS = ["a", "B", "é", "\ue000", "\uffff", "\U00010000", "\U0001f989", "_", " "]
_TRICKY_KEYS = st.lists(st.sampled_from(_KEY_CHARS), min_size=1, max_size=3).map("".join)
_TRICKY_TEXT = st.lists(st.sampled_from(["e\u0301", "\u212b", "A\u030a", "x", "\U0001f989",
                                         "\u0000", "\"", "\\", "\n", "\u007f", "\u2028", " "]),
                        min_size=1, max_size=6).map("".join)
_SCALARS = (st.none() | st.booleans() | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
            | _TRICKY_TEXT)
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(_TRICKY_KEYS, inner, max_size=3), max_leaves=8)
_SLOTS = st.dictionaries(_TRICKY_KEYS, _VALUES, max_size=4)
_BODIES = _TRICKY_TEXT.filter(lambda s: bool(s.strip())) | st.text(min_size=1, max_size=40)
_TYPES = st.sampled_from(["fact", "episode", "procedure"])
_EXTENSIONS = st.dictionaries(st.from_regex(r"x_[a-z]{1,6}", fullmatch=True), _VALUES,
                              max_size=2)


def _birth(args: dict[str, Any]) -> dict[str, Any]:
    return {"type": args["type"], "body": args["body"], "slots": args.get("slots", {}),
            "provenance": args["provenance"], "created_at": args["now"]}


@st.composite
def _create_args(draw: st.DrawFn) -> dict[str, Any]:
    args: dict[str, Any] = {
        "type": draw(_TYPES), "body": draw(_BODIES), "provenance": draw(ms.provenances()),
        "now": draw(ms.timestamps()), "slots": draw(_SLOTS),
        "confidence": draw(ms.confidences()), "tags": draw(st.lists(
            st.text(min_size=1, max_size=8), max_size=3, unique=True)),
    }
    if draw(st.booleans()):
        args["occurred_at"] = draw(ms.timestamps())
    extra = draw(_EXTENSIONS)
    if extra:
        args["extra"] = extra
    return args


@pytest.mark.requirement("ID-1")
@kit_settings()
@given(args=_create_args())
def test_created_records_carry_their_content_address(
    engine: EngineSession, args: dict[str, Any]
) -> None:
    record = engine.call("create_record", **args)["record"]
    expected = record_id(_birth(args))
    assert record["id"] == expected, (
        f"ID-1: create_record gave id {record['id']}, the content address of the birth fields "
        f"is {expected} (canonical JSON: code-point key order, NFC strings, no whitespace)"
    )


@pytest.mark.requirement("REC-14", "REC-11")
@kit_settings()
@given(args=_create_args())
def test_created_records_are_newborn(engine: EngineSession, args: dict[str, Any]) -> None:
    record = engine.call("create_record", **args)["record"]
    try:
        validate_record(record)
    except MemspecError as exc:
        raise AssertionError(f"REC-14: create_record produced an invalid record: {exc}") from None
    born = {"state": "active", "updated_at": args["now"], "created_at": args["now"],
            "superseded_by": None, "transition": None, "flagged": False, "flag_reason": None,
            "signed_by": None, "signature": "", "state_reason": None}
    for field, value in born.items():
        if record[field] != value:
            raise RequirementFailed(
                "REC-14", f"a new record has {field} = {record[field]!r}, expected {value!r}")
    present = {f for f in OPTIONAL_FIELDS if f in record}
    if present != ({"occurred_at"} if "occurred_at" in args else set()):
        raise RequirementFailed(
            "REC-11", f"a new record carries optional fields {sorted(present)} that were never set")


@pytest.mark.requirement("ID-1")
@example(record=build.record("fact", "A\u030a", created_at="2026-01-01T00:00:00.000Z",
                             slots={"\uffff": 1, "\U00010000": [2]}),
         slots={"\ue000": "e\u0301", "\U0001f989": {"\uffff": 0, "\U00010000": 1}},
         body="\u212b")
@kit_settings()
@given(record=ms.records(signed=None) | ms.tombstones(),
       slots=_SLOTS, body=_BODIES)
def test_record_id_matches_the_content_address(engine: EngineSession, record: dict[str, Any],
                                               slots: dict[str, Any], body: str) -> None:
    for subject in (record, {**record, "slots": slots, "body": body}):
        result = engine.call("record_id", record=subject)
        assert result["id"] == record_id(subject), (
            f"ID-1: record_id gave {result['id']}, expected {record_id(subject)} for birth "
            f"{canonical_json({k: subject[k] for k in ('type', 'body', 'slots')})[:80]!r}"
        )
        assert result["birth_digest"] == birth_digest(subject), (
            "ID-1: birth_digest is not the full sha256 of the canonical birth content"
        )


@pytest.mark.requirement("CJ-2", "CJ-3", "CJ-4")
@example(value={"\uffff": 1, "\U00010000": 2, "\ue000": [{"\U0001f989": "e\u0301", "a": None}]},
         ascii_only=True, indent=None)
@example(value={"b": "\u212b", "a": ["A\u030a", "\u2028\u0000\u007f"]}, ascii_only=False,
         indent=2)
@kit_settings()
@given(value=_VALUES, ascii_only=st.booleans(), indent=st.sampled_from([None, 0, 2]))
def test_canonical_bytes_of_generated_values(engine: EngineSession, value: Any, ascii_only: bool,
                                             indent: int | None) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    got = engine.call("canonicalize", text=text)["hex"]
    expected = canonical_json(value)
    if got != expected.hex():
        answered = bytes.fromhex(got) if _is_hex(got) else got.encode()
        message = (f"canonicalize({text[:60]!r}) gave {answered[:60]!r}, expected "
                   f"{expected[:60]!r}")
        broken = _broken_rule(answered, expected)
        if broken is None:
            raise AssertionError(f"CJ-2/CJ-3/CJ-4: {message}")
        raise RequirementFailed(broken, message)


def _is_hex(text: str) -> bool:
    return len(text) % 2 == 0 and all(c in "0123456789abcdefABCDEF" for c in text)


def _outside_strings(raw: str) -> str:
    """``raw`` with the contents of its JSON strings removed (quotes kept)."""
    out: list[str] = []
    inside = escaped = False
    for char in raw:
        if inside:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                inside = False
                out.append(char)
            continue
        if char == '"':
            inside = True
        out.append(char)
    return "".join(out)


def _key_orders(value: Any) -> list[list[str]]:
    if isinstance(value, list):
        return [order for item in value for order in _key_orders(item)]
    if isinstance(value, dict):
        return [list(value), *(o for item in value.values() for o in _key_orders(item))]
    return []


def _broken_rule(got: bytes, expected: bytes) -> str | None:
    """Which of CJ-2 (key order), CJ-3 (whitespace) and CJ-4 (strings) the engine's bytes
    break, when exactly one explains the difference; None when the kit cannot tell."""
    try:
        raw = got.decode("utf-8")
        parsed = json.loads(raw, object_pairs_hook=dict)
    except ValueError:
        return None
    if any(c in _outside_strings(raw) for c in " \t\n\r"):
        return "CJ-3"
    try:
        same = canonical_json(parsed) == expected
    except ValueError:  # a MemspecError: not a value canonical JSON carries as it is
        same = False
    if same:
        # The same value, written wrongly: in another key order, or with other escapes.
        wanted = json.loads(expected.decode("utf-8"), object_pairs_hook=dict)
        return "CJ-2" if _key_orders(parsed) != _key_orders(wanted) else "CJ-4"
    try:
        normalized = canonical_json(_nfc(parsed))
    except ValueError:
        return None
    return "CJ-4" if normalized == expected else None


def _nfc(value: Any) -> Any:
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    if isinstance(value, list):
        return [_nfc(v) for v in value]
    if isinstance(value, dict):
        return {_nfc(k): _nfc(v) for k, v in value.items()}
    return value


_SAFE_CHANGES = st.one_of(
    st.fixed_dictionaries({"tags": st.lists(st.text(min_size=1, max_size=6), max_size=3,
                                            unique=True)}),
    st.fixed_dictionaries({"confidence": ms.confidences()}),
    st.fixed_dictionaries({"state_reason": ms.reasons()}),
)


@pytest.mark.requirement("ID-3", "REC-7")
@kit_settings()
@given(record=ms.records(signed=None), changes=_SAFE_CHANGES, later=ms.timestamps())
def test_evolution_never_changes_identity(engine: EngineSession, record: dict[str, Any],
                                          changes: dict[str, Any], later: str) -> None:
    now = max(record["updated_at"], later)
    evolved = engine.call("evolve_record", record=record, changes=changes, now=now)["record"]
    for field in ("id", "type", "body", "slots", "provenance", "created_at"):
        if evolved[field] != record[field]:
            raise RequirementFailed("ID-3" if field == "id" else "REC-7",
                                    f"evolve_record changed {field} "
                                    f"({record[field]!r} -> {evolved[field]!r})")
    if evolved.get("occurred_at") != record.get("occurred_at"):
        raise RequirementFailed(
            "REC-7", "evolve_record changed occurred_at, which never changes after birth")
    if evolved["updated_at"] != now:
        raise RequirementFailed(
            "REC-7", f"the new version's updated_at is {evolved['updated_at']}, not {now}")
    for field, value in changes.items():
        if evolved[field] != value:
            raise RequirementFailed("ID-3", f"evolve_record did not apply {field} = {value!r}")
    if not (evolved["id"] == record_id(evolved) or "birth_digest" in evolved):
        raise RequirementFailed(
            "ID-3", "the evolved record's id is not the content address of its birth fields")


@pytest.mark.requirement("ID-3", "REC-7")
def test_birth_fields_cannot_evolve(engine: EngineSession, clock: KitClock) -> None:
    record = engine.call("create_record", type="episode", body="we met on monday",
                         provenance={"kind": "conversation", "ref": None, "agent": None},
                         now=clock.now(), occurred_at=clock.at(-1))["record"]
    later = clock.advance(days=1)
    for change in ({"body": "we met on tuesday"}, {"type": "fact"}, {"slots": {"day": "mon"}},
                   {"created_at": clock.at(-2)}, {"occurred_at": clock.at(-3)},
                   {"provenance": {"kind": "tool", "ref": None, "agent": None}},
                   {"id": "mem:" + "0" * 32}):
        (field,) = change
        expect_rejected(engine, "evolve_record", "record",
                        "ID-3" if field in ("id", "body", "type", "slots", "provenance")
                        else "REC-7", f"an evolution that changes the birth field {field}",
                        record=record, changes=change, now=later)


@pytest.mark.requirement("ID-3")
def test_occurred_at_is_not_part_of_the_id(engine: EngineSession, clock: KitClock) -> None:
    args = {"type": "episode", "body": "the fire drill ran long",
            "provenance": {"kind": "observation", "ref": "log", "agent": None}, "now": clock.now()}
    plain = engine.call("create_record", **args)["record"]
    timed = engine.call("create_record", occurred_at=clock.at(-2), **args)["record"]
    assert plain["id"] == timed["id"], (
        "ID-3: occurred_at changed the record's id; event time is not part of the content address"
    )
    assert "occurred_at" not in plain and timed["occurred_at"] == clock.at(-2), (
        "REC-11: occurred_at is not emitted exactly when set"
    )


@pytest.mark.requirement("REC-2")
@kit_settings()
@given(record=ms.records(signed=None),
       extra=st.dictionaries(st.from_regex(r"x_[a-z]{1,6}", fullmatch=True), _VALUES,
                             min_size=1, max_size=2))
def test_unknown_fields_survive_validation_and_evolution(
    engine: EngineSession, record: dict[str, Any],
    extra: dict[str, Any]) -> None:
    created = engine.call("create_record", type="fact", body="extension carrier",
                          provenance={"kind": "tool", "ref": None, "agent": None},
                          now=record["created_at"], extra=extra)["record"]
    for name, value in extra.items():
        assert created.get(name) == value, (
            f"REC-2: create_record dropped or changed the extension field {name}"
        )
    extended = {**record, **extra}
    if extended["signed_by"] is not None:
        extended = {**extended, "signed_by": None, "signature": ""}
    validated = engine.call("validate_record", record=extended)["record"]
    assert canonical_json(validated) == canonical_json(extended), (
        "REC-2: validate_record did not return the record with its extension fields as given"
    )
    evolved = engine.call("evolve_record", record=extended, changes={"tags": ["kept"]},
                          now=max(extended["updated_at"], "2026-01-01T00:00:00.000Z"))["record"]
    for name, value in extra.items():
        assert evolved.get(name) == value, (
            f"REC-2: evolve_record dropped or changed the extension field {name}"
        )


@pytest.mark.requirement("REC-12")
def test_extension_fields_cannot_shadow_defined_fields(
    engine: EngineSession, clock: KitClock
) -> None:
    base = {"type": "fact", "body": "the kettle is in the left cupboard",
            "provenance": {"kind": "observation", "ref": None, "agent": None}, "now": clock.now()}
    for extra in ({"state": "archived"}, {"body": "something else"}, {"signature": "x"},
                  {"occurred_at": clock.now()}, {"redacted": True}, {"birth_digest": "0" * 64},
                  {"id": "mem:" + "1" * 32}):
        expect_rejected(engine, "create_record", "record", "REC-12",
                        f"an extension field named {next(iter(extra))}", extra=extra, **base)


_CONFIDENCE_SPELLINGS = st.one_of(
    ms.confidences(),
    st.from_regex(r"-?[01]?\.?[0-9]{0,6}", fullmatch=True),
    st.sampled_from(["1.0001", "0.5", "0.50000", ".5000", "+0.5000", "1e-1", "0,5000", " 0.5000",
                     "0.5000 ", "NaN", "1.0000\n"]),
)


@pytest.mark.requirement("CONF-1")
@kit_settings()
@given(record=ms.records(signed=False), spelling=_CONFIDENCE_SPELLINGS)
def test_only_canonical_confidence_strings_are_accepted(
    engine: EngineSession, record: dict[str, Any],
    spelling: str) -> None:
    subject = {**record, "confidence": spelling}
    try:
        confidence_from_wire(spelling)
        valid = True
    except MemspecError:
        valid = False
    _, error = attempt(engine, "validate_record", record=subject)
    if valid:
        assert error is None, f"CONF-1: validate_record rejected the confidence {spelling!r}"
    else:
        assert error is not None and error.code == "record", (
            f"CONF-1: validate_record {'accepted' if error is None else 'misclassified'} the "
            f"confidence {spelling!r}"
        )


@pytest.mark.requirement("CONF-1", "CJ-6")
def test_numeric_confidence_is_not_a_wire_confidence(
    engine: EngineSession, clock: KitClock
) -> None:
    base: dict[str, Any] = {"id": "", "type": "fact", "body": "x", "slots": {}, "state": "active",
            "created_at": clock.now(), "updated_at": clock.now(),
            "provenance": {"kind": "observation", "ref": None, "agent": None}, "evidence": [],
            "supersedes": None, "superseded_by": None, "transition": None, "state_reason": None,
            "tags": [], "flagged": False, "flag_reason": None, "signed_by": None, "signature": ""}
    base["id"] = record_id(base)
    for number in (0.5, 1, 0, 0.25):
        expect_rejected(engine, "validate_record", "record", "CONF-1",
                        f"a record whose confidence is the JSON number {number}",
                        record={**base, "confidence": number})


_SPELLINGS = ("2026-01-01T00:00:00Z", "2026-01-01T00:00:00.000+00:00", "2026-01-01 00:00:00.000Z",
              "2026-01-01T00:00:00.000000Z", "2026-01-01t00:00:00.000z", "2026-01-01T00:00:00.0Z",
              "2026-1-1T00:00:00.000Z", "20260101T000000.000Z", "2026-02-30T00:00:00.000Z")


@pytest.mark.requirement("ENC-4")
def test_timestamps_have_one_spelling(engine: EngineSession, clock: KitClock) -> None:
    base: dict[str, Any] = {"id": "", "type": "fact", "body": "x", "slots": {}, "state": "active",
            "confidence": "0.5000", "created_at": clock.now(), "updated_at": clock.now(),
            "provenance": {"kind": "observation", "ref": None, "agent": None}, "evidence": [],
            "supersedes": None, "superseded_by": None, "transition": None, "state_reason": None,
            "tags": [], "flagged": False, "flag_reason": None, "signed_by": None, "signature": ""}
    for spelling in _SPELLINGS:
        for field in ("updated_at", "occurred_at"):
            subject = {**base, field: spelling}
            subject["id"] = record_id(subject)
            expect_rejected(engine, "validate_record", "record", "ENC-4",
                            f"a record whose {field} is spelled {spelling!r}", record=subject)
        expect_rejected(engine, "create_record", "encoding", "ENC-4",
                        f"create_record with now spelled {spelling!r}", type="fact", body="x",
                        now=spelling,
                        provenance={"kind": "observation", "ref": None, "agent": None})


@pytest.mark.requirement("CJ-5")
def test_keys_must_already_be_nfc(engine: EngineSession) -> None:
    for key in ("e\u0301", "\u212b", "A\u030a"):
        assert not unicodedata.is_normalized("NFC", key)
        _, error = attempt(engine, "canonicalize", text=json.dumps({key: 1}))
        assert error is not None and error.code == "canonical", (
            f"CJ-5: canonicalize {'accepted' if error is None else 'misclassified'} an object "
            f"key {key!r} that is not in NFC"
        )
