"""memspec's JSON Schemas: well-formed, resolvable offline, and in agreement with the code.

The differential tests compare each schema's verdict (valid / invalid) with
memspec's own validators on generated instances and small mutations of them.
Rules a JSON Schema cannot state (they relate a record to its own id, compare
two fields, or constrain key normalization) are KNOWN DEVIATIONS: each is a
function returning the reason it applies to an instance (None otherwise), and
an example on which the verdicts differ is skipped with that reason, never
silently. CODE GAPS are the opposite direction, where the schema follows the
requirement catalogue and the code is looser; each is reported to be fixed in
the code, after which its function stops matching and
``test_every_deviation_is_still_needed`` asks for its removal.
"""

from __future__ import annotations

import copy
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from jsonschema.validators import validator_for as jsonschema_validator_for
from referencing.exceptions import Unresolvable

import memspec
from memspec import strategies as ms
from memspec._errors import MemspecError
from memspec._schemas import (
    SCHEMA_BASE,
    SCHEMA_REGISTRY,
    iter_errors,
    load_schema,
    schema_id,
    schema_names,
    validate,
    validator_for,
)
from memspec.data import has_resource, json_resource, vector_files

PUBLISHED = "published/fg-agent-memory-0.1.json"
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
Instance = Any
Deviation = Callable[[Instance], "str | None"]

# --------------------------------------------------------------------------- the schemas


@pytest.mark.parametrize("name", schema_names())
def test_schema_is_well_formed(name: str) -> None:
    schema = load_schema(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"{SCHEMA_BASE}{name}.json"
    assert schema.get("title") and schema.get("description")
    jsonschema_validator_for(schema).check_schema(schema)


def _refs(node: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield path, value
            elif key not in ("const", "enum", "examples", "default"):
                yield from _refs(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _refs(item, f"{path}/{index}")


@pytest.mark.parametrize("name", schema_names())
def test_every_ref_resolves_offline(name: str) -> None:
    uri = schema_id(name)
    resolver = SCHEMA_REGISTRY.resolver(base_uri=uri)
    for where, ref in _refs(load_schema(name)):
        try:
            resolver.lookup(ref)
        except Unresolvable as exc:  # pragma: no cover - the failure message is the point
            pytest.fail(f"{name}.json{where}: $ref {ref!r} does not resolve: {exc}")


def test_the_registry_never_fetches() -> None:
    with pytest.raises(Unresolvable):
        SCHEMA_REGISTRY.resolver().lookup("https://example.com/not-a-memspec-schema.json")


def _examples(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for example in node.get("examples", []):
            yield path, example
        for key, value in node.items():
            if key not in ("const", "enum", "examples", "default"):
                yield from _examples(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _examples(item, f"{path}/{index}")


@pytest.mark.parametrize("name", schema_names())
def test_examples_are_valid(name: str) -> None:
    uri = schema_id(name)
    for where, example in _examples(load_schema(name)):
        check = Draft202012Validator({"$ref": f"{uri}#{where}"}, registry=SCHEMA_REGISTRY)
        assert check.is_valid(example), (where, example)


def test_schema_names_and_ids() -> None:
    names = schema_names()
    for expected in ("defs", "record", "provenance", "transition", "memory-file", "proposal",
                     "legality", "operations", "requirements", "vectors/common"):
        assert expected in names
    assert schema_id("record") == schema_id("record.json") == f"{SCHEMA_BASE}record.json"
    assert schema_id(f"{SCHEMA_BASE}vectors/records.json") == schema_id("vectors/records")
    with pytest.raises(MemspecError):
        schema_id("no-such-schema")
    assert validator_for("record") is validator_for(f"{SCHEMA_BASE}record.json")


@pytest.mark.parametrize(
    ("schema", "error"),
    [("record", memspec.RecordError), ("memory-file", memspec.FileError),
     ("proposal", memspec.ProposalError), ("provenance", MemspecError)],
)
def test_validate_raises_the_typed_error(schema: str, error: type[MemspecError]) -> None:
    with pytest.raises(error) as caught:
        validate({"kind": 7}, schema)
    assert type(caught.value) is error
    assert caught.value.code == error.code


def test_validate_names_the_pointer() -> None:
    record = copy.deepcopy(_published()["canonical_record"]["record"])
    validate(record, "record")
    record["provenance"]["agent"] = "amp:key:0OIl"
    with pytest.raises(memspec.RecordError) as caught:
        validate(record, "record")
    assert caught.value.pointer == "/provenance/agent"
    assert "/provenance/agent" in str(caught.value)
    assert "/provenance/agent" in caught.value.to_wire()["message"]
    assert iter_errors(record, "record")[0][0] == "/provenance/agent"


# --------------------------------------------------------------------------- data against schemas


def _published() -> Any:
    return json_resource("vectors", PUBLISHED)


def test_published_records_and_file_are_valid() -> None:
    published = _published()
    validate(published["canonical_record"]["record"], "record")
    validate(published["artifacts"]["signed_record"]["record"], "record")
    validate(published["artifacts"]["memory_file"]["file"], "memory-file")


@pytest.mark.parametrize("name", ["legality", "operations", "requirements"])
def test_spec_table_is_valid(name: str) -> None:
    if not has_resource("spec", f"{name}.json"):
        pytest.skip(f"spec/{name}.json does not exist yet")
    assert iter_errors(json_resource("spec", f"{name}.json"), name) == []


def test_vector_operations_match_the_operation_table() -> None:
    table = json_resource("spec", "operations.json")
    enum = load_schema("vectors/common")["$defs"]["group"]["properties"]["operation"]["enum"]
    assert set(enum) == set(table["operations"])
    for operation in table["operations"].values():
        assert operation["profile"] is None or operation["profile"] in table["profiles"]


@pytest.mark.parametrize("name", vector_files())
def test_vectors_file_matches_the_schema_it_names(name: str) -> None:
    doc = json_resource("vectors", name)
    assert doc["schema"] == f"{SCHEMA_BASE}vectors/{name.removesuffix('.json')}.json"
    assert iter_errors(doc, doc["schema"]) == []


def test_a_broken_vectors_file_is_rejected() -> None:
    doc: dict[str, Any] = {
        "name": "records", "spec_version": "fg-agent-memory/0.1", "description": "x",
        "schema": f"{SCHEMA_BASE}vectors/records.json", "notes": {}, "number_of_tests": 1,
        "groups": [{"id": "g", "operation": "validate_record", "profile": "format", "tests": [
            {"id": "records/x", "requirements": ["REC-1"], "args": {"record": {}},
             "result": "invalid", "expected": {}}]}]}
    assert iter_errors(doc, "vectors/records")
    doc["groups"][0]["tests"][0] = {"id": "records/x", "requirements": ["REC-1"],
                                    "args": {"record": {}}, "result": "invalid", "error": "record"}
    assert iter_errors(doc, "vectors/records") == []
    doc["groups"][0]["operation"] = "canonicalize"
    assert iter_errors(doc, "vectors/records")


# --------------------------------------------------------------------------- spellings in defs.json


def _def(name: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"{SCHEMA_BASE}defs.json#/$defs/{name}"},
                                registry=SCHEMA_REGISTRY)


def _code_ok(check: Callable[[Any], Any], value: Any) -> bool:
    try:
        check(value)
    except MemspecError:
        return False
    return True


_YEARS = ["0000", "0001", "0004", "0100", "0400", "0999", "1600", "1700", "1900", "2000",
          "2023", "2024", "2026", "2100", "2400", "9996", "9999"]


@pytest.mark.parametrize("year", _YEARS)
def test_timestamp_pattern_agrees_with_code(year: str) -> None:
    schema = _def("timestamp")
    for month in range(14):
        for day in range(33):
            for clock in ("00:00:00.000", "23:59:59.999", "24:00:00.000", "12:60:00.000",
                          "12:00:60.000"):
                value = f"{year}-{month:02d}-{day:02d}T{clock}Z"
                assert schema.is_valid(value) == _code_ok(memspec.check_timestamp, value), value


@pytest.mark.parametrize(
    "value",
    ["2026-01-01T00:00:00Z", "2026-01-01T00:00:00.000z", "2026-01-01 00:00:00.000Z",
     "2026-01-01T00:00:00.000+00:00", "2026-01-01T00:00:00.0000Z", "2026-01-01T00:00:00.000Z\n",
     "+2026-01-01T00:00:00.000Z", 20260101],
)
def test_timestamp_pattern_rejects_other_spellings(value: Any) -> None:
    assert not _def("timestamp").is_valid(value)
    assert not _code_ok(memspec.check_timestamp, value)


@pytest.mark.parametrize(
    "value", ["\u0662\u0660\u0662\u0666-01-01T00:00:00.000Z", "0.\u0665\u0660\u0660\u0660"])
def test_non_ascii_digits_are_rejected(value: str) -> None:
    assert not _def("timestamp").is_valid(value) and not _def("confidence").is_valid(value)
    assert not _code_ok(memspec.check_timestamp, value)
    assert not _code_ok(memspec.confidence_from_wire, value)


def test_reason_pattern_matches_the_code() -> None:
    # A reason holds a character other than U+0009-U+000D and U+0020 (SPEC.md section 1.2).
    schema = _def("reason")
    pattern = re.compile(load_schema("defs")["$defs"]["reason"]["pattern"])
    for code_point in range(0x110000):
        if 0xD800 <= code_point < 0xE000:
            continue
        char = chr(code_point)
        assert (pattern.search(char) is not None) == memspec.is_reason(char), hex(code_point)
    assert not schema.is_valid(" \t\n\x0b\x0c\r") and schema.is_valid(" x ")
    assert schema.is_valid("\u3000") and schema.is_valid("\u00a0") and schema.is_valid("\x1c")


_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


@SETTINGS
@given(st.binary(min_size=64, max_size=64), st.integers(0, 87), st.sampled_from(_B64 + "=-_ "))
def test_signature_pattern_agrees_with_code(raw: bytes, index: int, char: str) -> None:
    text = memspec.encode_signature(raw)
    assert _def("signature").is_valid(text) and _code_ok(memspec.decode_signature, text)
    mutated = text[:index] + char + text[index + 1:]
    assert _def("signature").is_valid(mutated) == _code_ok(memspec.decode_signature, mutated)


@SETTINGS
@given(st.binary(min_size=0, max_size=40), st.sampled_from(["", "0", "l", "=", "\n"]))
def test_address_pattern_agrees_with_code(raw: bytes, suffix: str) -> None:
    address = "amp:key:" + memspec.b58encode(raw) + suffix
    schema_ok = _def("address").is_valid(address)
    code_ok = _code_ok(memspec.public_key_from_address, address)
    if schema_ok and not code_ok:
        assert len(memspec.b58decode(address[8:])) != 32  # the one deviation: decoded length
        return
    assert schema_ok == code_ok, address


@SETTINGS
@given(st.integers(-100, 20_000), st.sampled_from(["", "0", " ", "\n", "e0"]))
def test_confidence_pattern_agrees_with_code(number: int, suffix: str) -> None:
    for text in (f"{number / 10_000:.4f}{suffix}", f"{number / 10_000:.3f}", str(number)):
        assert _def("confidence").is_valid(text) == _code_ok(memspec.confidence_from_wire, text)


# --------------------------------------------------------------------------- known deviations

_ID = re.compile(r"mem:[0-9a-f]{32}\Z")
_DIGEST = re.compile(r"[0-9a-f]{64}\Z")
_REDACTION_FIELDS = ("redacted", "redaction_reason", "birth_digest")


def _tombstone_like(record: Any) -> bool:
    return isinstance(record, dict) and any(f in record for f in _REDACTION_FIELDS)


def _walk(value: Any) -> Iterator[tuple[str | None, Any]]:
    stack: list[tuple[str | None, Any]] = [(None, value)]
    while stack:
        key, item = stack.pop()
        yield key, item
        if isinstance(item, dict):
            stack.extend(item.items())
        elif isinstance(item, list):
            stack.extend((None, sub) for sub in item)


def content_address(record: Instance) -> str | None:
    """ID-2: the id must be the content address of the birth fields."""
    if not isinstance(record, dict) or _tombstone_like(record):
        return None
    try:
        expected = memspec.record_id(record)
    except MemspecError:
        return None
    if isinstance(record.get("id"), str) and _ID.match(record["id"]) and record["id"] != expected:
        return "ID-2: id is not the content address of the birth fields"
    return None


def tombstone_id(record: Instance) -> str | None:
    """RED-5: a tombstone's id must be the prefix of its birth_digest."""
    digest = record.get("birth_digest") if isinstance(record, dict) else None
    if isinstance(digest, str) and _DIGEST.match(digest) and \
            record.get("id") != f"mem:{digest[:32]}":
        return "RED-5: tombstone id is not the prefix of its birth_digest"
    return None


def own_side(record: Instance) -> str | None:
    """TRN-1: the sides of a transition block include the carrying record's own id."""
    block = record.get("transition") if isinstance(record, dict) else None
    if isinstance(block, dict) and isinstance(block.get("sides"), list) and \
            record.get("id") not in block["sides"]:
        return "TRN-1: transition sides do not include the record's own id"
    return None


def self_reference(record: Instance) -> str | None:
    """SUP-4, REC-8: no record is its own evidence, predecessor or successor."""
    if not isinstance(record, dict):
        return None
    rid = record.get("id")
    evidence = record.get("evidence")
    if (isinstance(evidence, list) and rid in evidence) or rid in (
            record.get("supersedes"), record.get("superseded_by")):
        return "SUP-4/REC-8: the record references itself"
    return None


def time_order(record: Instance) -> str | None:
    """REC-7: updated_at never precedes created_at."""
    if not isinstance(record, dict):
        return None
    created, updated = record.get("created_at"), record.get("updated_at")
    if _code_ok(memspec.check_timestamp, created) and _code_ok(memspec.check_timestamp, updated) \
            and str(updated) < str(created):
        return "REC-7: updated_at precedes created_at"
    return None


def nfc_keys(instance: Instance) -> str | None:
    """CJ-5: object keys must already be in NFC."""
    for key, _ in _walk(instance):
        if key is not None and not unicodedata.is_normalized("NFC", key):
            return "CJ-5: an object key is not in NFC"
    return None


def nfc_tags(instance: Instance) -> str | None:
    """REC-10: tags are distinct after NFC (uniqueItems compares them as they are spelled)."""
    tags = instance.get("tags") if isinstance(instance, dict) else None
    if isinstance(tags, list) and all(isinstance(tag, str) for tag in tags):
        if len({unicodedata.normalize("NFC", tag) for tag in tags}) != len(set(tags)):
            return "REC-10: two tags are equal in NFC"
    return None


def integral_float(instance: Instance) -> str | None:
    """CJ-6: JSON Schema counts 2.0 as an integer; canonical JSON has no floats at all."""
    for _, value in _walk(instance):
        if isinstance(value, float) and value.is_integer():
            return "CJ-6: an integral float (the schema cannot tell 2.0 from 2)"
    return None


def address_length(instance: Instance) -> str | None:
    """ENC-1: an address must decode to exactly 32 bytes, which a pattern only approximates."""
    pattern = re.compile(load_schema("defs")["$defs"]["address"]["pattern"])
    for _, value in _walk(instance):
        if isinstance(value, str) and pattern.search(value) and \
                not _code_ok(memspec.public_key_from_address, value):
            return "ENC-1: the address does not decode to 32 bytes"
    return None


def limits(instance: Instance) -> str | None:
    """Configured limits (body size, string size, depth) are not format rules."""
    body = instance.get("body") if isinstance(instance, dict) else None
    if isinstance(body, str) and len(body) > memspec.DEFAULT_LIMITS.max_body_chars:
        return "REC-5: the body exceeds the configured limit"
    return None


#: Schema accepts, code rejects: rules no JSON Schema can state.
SCHEMA_CANNOT_EXPRESS: list[Deviation] = [
    content_address, tombstone_id, own_side, self_reference, time_order, nfc_keys,
    nfc_tags, integral_float, address_length, limits,
]
#: Schema rejects, code accepts: the code is looser than the requirement (none left; a new
#: entry here is a bug in the code, to be fixed there).
CODE_GAPS: list[Deviation] = []


def _in_records(deviation: Deviation) -> Deviation:
    def check(memory_file: Instance) -> str | None:
        records = memory_file.get("records") if isinstance(memory_file, dict) else None
        for record in records if isinstance(records, list) else []:
            if reason := deviation(record):
                return reason
        return None

    check.__name__ = f"records_{deviation.__name__}"
    return check


def duplicate_ids(memory_file: Instance) -> str | None:
    """FILE-4: a record id appears at most once (uniqueItems compares whole records)."""
    records = memory_file.get("records") if isinstance(memory_file, dict) else None
    ids = [r.get("id") for r in records if isinstance(r, dict)] if isinstance(records, list) else []
    return "FILE-4: a record id appears twice" if len(ids) != len(set(map(str, ids))) else None


FILE_CANNOT_EXPRESS: list[Deviation] = [
    duplicate_ids, nfc_keys, integral_float, address_length,
    *(_in_records(d) for d in SCHEMA_CANNOT_EXPRESS),
]
FILE_CODE_GAPS: list[Deviation] = [_in_records(d) for d in CODE_GAPS]
_VERDICTS: dict[int, tuple[Any, tuple[bool, bool]]] = {}


def _verdicts(instance: Instance, kind: str) -> tuple[bool, bool]:
    """(schema accepts, code accepts), memoized for the long-lived parametrized instances."""
    cached = _VERDICTS.get(id(instance))
    if cached is not None and cached[0] is instance:
        return cached[1]
    schema, check, _, _ = _SUBJECTS[kind]
    verdicts = validator_for(schema).is_valid(instance), _code_ok(check, instance)
    _VERDICTS[id(instance)] = (instance, verdicts)
    return verdicts


def _code_error(check: Callable[[Any], Any], value: Any) -> MemspecError | None:
    try:
        check(value)
    except MemspecError as exc:
        return exc
    return None


def _named(reason: str) -> set[str]:
    """The requirement ids a deviation's reason starts with (``"SUP-4/REC-8: ..."``)."""
    return set(reason.partition(":")[0].split("/"))


def _rejected_under(error: MemspecError | None) -> frozenset[str] | None:
    """The requirement the code rejected under (None: the code accepted)."""
    return None if error is None else frozenset({error.requirement or error.code})


def _deviation(instance: Instance, schema_ok: bool, code_ok: bool, accepts: list[Deviation],
               rejects: list[Deviation], under: frozenset[str] | None) -> tuple[str, str] | None:
    """The (name, reason) of the known deviation explaining differing verdicts, if any.

    It must hold for the instance and, where the instance was rejected, name a
    requirement it was rejected under (the code's error, or a vector's requirements):
    a broad predicate that happens to hold must not hide an unrelated difference.
    """
    for deviation in accepts if schema_ok and not code_ok else rejects if code_ok else []:
        if (reason := deviation(instance)) and (under is None or _named(reason) & under):
            return deviation.__name__, reason
    return None


def _compare(instance: Instance, kind: str) -> str | None:
    """None when schema and code agree; the deviation's reason when a known one explains it."""
    schema, check, accepts, rejects = _SUBJECTS[kind]
    schema_ok, code_ok = _verdicts(instance, kind)
    if schema_ok == code_ok:
        return None
    error = None if code_ok else _code_error(check, instance)
    found = _deviation(instance, schema_ok, code_ok, accepts, rejects, _rejected_under(error))
    if found is None:
        side = "schema accepts, code rejects" if schema_ok else "schema rejects, code accepts"
        first = iter_errors(instance, schema)[:1]
        said = f"; the code says {error.requirement or error.code}: {error}" if error else ""
        pytest.fail(f"{kind}: verdicts differ ({side}) and no known deviation explains it; "
                    f"schema says {first}{said}: {instance!r}")
    return found[1]


_SUBJECTS: dict[str, tuple[str, Callable[[Any], Any], list[Deviation], list[Deviation]]] = {
    "record": ("record", memspec.validate_record, SCHEMA_CANNOT_EXPRESS, CODE_GAPS),
    "file": ("memory-file", memspec.validate_file, FILE_CANNOT_EXPRESS, FILE_CODE_GAPS),
}

# --------------------------------------------------------------------------- base instances

T0, T1 = "2026-01-01T00:00:00.000Z", "2026-02-01T12:30:00.000Z"
OTHER, E1, E2, E3 = (f"mem:{c * 32}" for c in "1234")
ADDRESS = ms.TEST_KEY.address
SIGNATURE = ms.TEST_KEY.sign("record", {"any": "payload"})
NONCANONICAL = SIGNATURE[:85] + {"A": "B", "Q": "R", "g": "h", "w": "x"}[SIGNATURE[85]] + "=="


def _build(rtype: str = "fact", state: str = "active", **fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": "", "type": rtype, "body": f"A {rtype} about the deploy day.",
        "slots": {"day": "friday"}, "state": state, "confidence": "0.7500",
        "created_at": T0, "updated_at": T1,
        "provenance": {"kind": "conversation", "ref": "session-7", "agent": ADDRESS},
        "evidence": [], "supersedes": None, "superseded_by": None, "transition": None,
        "state_reason": None, "tags": ["ops", "déploiement"], "flagged": False,
        "flag_reason": None, "signed_by": None, "signature": "",
    }
    record.update(fields)
    record["id"] = memspec.record_id(record)
    if state == "transitional":
        record["transition"] = {"sides": [OTHER, record["id"]], "reason": "the days disagree"}
    return memspec.validate_record(record)


def _tombstone(original: dict[str, Any], reason: str = "personal data") -> dict[str, Any]:
    return {
        **{k: original[k] for k in ("id", "type", "created_at", "evidence", "supersedes",
                                    "superseded_by", "flagged", "flag_reason")},
        "body": memspec.REDACTED_BODY, "slots": {}, "state": "archived", "confidence": "0.0000",
        "updated_at": max(original["updated_at"], T1),
        "provenance": {"kind": "redaction", "ref": None, "agent": None},
        "transition": None, "state_reason": reason, "tags": [], "signed_by": None,
        "signature": "", "redacted": True, "redaction_reason": reason,
        "birth_digest": memspec.birth_digest(original),
    }


def _bases() -> dict[str, dict[str, Any]]:
    published = _published()["canonical_record"]["record"]
    rule = _build("rule", evidence=[E1, E2])
    bases = {
        "published": published,
        "episode": _build("episode", occurred_at="2025-12-24T18:00:00.000Z", x_note="hi",
                          x_meta={"n": [1, "b", None]}),
        "transitional": _build("fact", "transitional"),
        "superseded": _build("procedure", "superseded", superseded_by=OTHER, supersedes=E1,
                             state_reason="replaced by a newer procedure"),
        "archived": _build("fact", "archived", state_reason="decayed"),
        "rule": rule,
        "flagged-rule": _build("rule", evidence=[E1], flagged=True, flag_reason="evidence gone"),
        "signed": memspec.sign_record(published, ms.TEST_KEY),
        "tombstone": _tombstone(rule),
    }
    for record in bases.values():
        memspec.validate_record(record)
    return bases


BASE_RECORDS = _bases()

# --------------------------------------------------------------------------- mutations


@dataclass(frozen=True)
class Mutation:
    """A small change to an instance; ``change`` returns None where it does not apply."""

    name: str
    change: Callable[[Any], Any]
    rehash: bool = False  # recompute the id (and the record's own side) after the change


def _set(field: str, value: Any, *, rehash: bool = False, name: str = "") -> Mutation:
    def change(record: dict[str, Any]) -> Any:
        record[field] = copy.deepcopy(value)
        return record

    return Mutation(name or f"{field}={value!r}", change, rehash)


def _drop(field: str) -> Mutation:
    def change(record: dict[str, Any]) -> Any:
        if field not in record:
            return None
        del record[field]
        return record

    return Mutation(f"drop-{field}", change, rehash=field in memspec.BIRTH_FIELDS)


def _with(name: str, change: Callable[[dict[str, Any]], Any], rehash: bool = False) -> Mutation:
    return Mutation(name, change, rehash)


def _dup_first(field: str) -> Callable[[dict[str, Any]], Any]:
    def change(record: dict[str, Any]) -> Any:
        items = record.get(field)
        if not isinstance(items, list) or not items:
            return None
        record[field] = [*items, items[0]]
        return record

    return change


def _block(**changes: Any) -> Callable[[dict[str, Any]], Any]:
    def change(record: dict[str, Any]) -> Any:
        block = record.get("transition")
        if not isinstance(block, dict):
            return None
        block.update({k: (v(record) if callable(v) else v) for k, v in changes.items()})
        for key in [k for k, v in changes.items() if v is _DELETE]:
            del block[key]
        return record

    return change


_DELETE = object()


def _add_block(record: dict[str, Any]) -> Any:
    if record.get("transition") is not None:
        return None
    record["transition"] = {"sides": [record["id"], OTHER], "reason": "a new dispute"}
    return record


def _sign_fields(signer: Any, signature: Any) -> Callable[[dict[str, Any]], Any]:
    def change(record: dict[str, Any]) -> Any:
        record["signed_by"], record["signature"] = signer, signature
        return record

    return change


def _redaction(**fields: Any) -> Callable[[dict[str, Any]], Any]:
    def change(record: dict[str, Any]) -> Any:
        if _tombstone_like(record):
            return None
        values = {k: (memspec.birth_digest(record) if v is _DIGEST_OF else v)
                  for k, v in fields.items()}
        record.update(values)
        return record

    return change


_DIGEST_OF = object()


def _make_tombstone(record: dict[str, Any]) -> Any:
    return None if _tombstone_like(record) else _tombstone(record)


def _flip_flag(record: dict[str, Any]) -> Any:
    record["flagged"] = not record["flagged"]
    return record


def _self(field: str) -> Callable[[dict[str, Any]], Any]:
    def change(record: dict[str, Any]) -> Any:
        record[field] = [*record[field], record["id"]] if field == "evidence" else record["id"]
        return record

    return change


def _other_digest(record: dict[str, Any]) -> Any:
    if not _tombstone_like(record):
        return None
    record["birth_digest"] = "f" * 64
    return record


PROVENANCE = {"kind": "tool", "ref": None, "agent": None}
RECORD_MUTATIONS: list[Mutation] = [
    *(_drop(name) for name in (*memspec.RECORD_FIELDS, *memspec.OPTIONAL_FIELDS)),
    *(_set("type", v, rehash=True) for v in ("belief", 3, "rule", "fact", "episode")),
    *(_set("state", v) for v in (*memspec.RECORD_STATES, "deleted", None)),
    *(_set("body", v, rehash=True) for v in ("", 42, "a changed body", "[redacted]")),
    _set("body", "x" * (memspec.DEFAULT_LIMITS.max_body_chars + 1), rehash=True,
         name="body-over-limit"),
    *(_set("slots", v, rehash=True) for v in (
        list[Any](), {"x": 1.5}, {"x": 2.0}, {"x": 2**53}, {"x": -(2**53 - 1)}, {"e\u0301": 1},
        {"é": {"deep": [True, None, "ü"]}})),
    *(_set("confidence", v) for v in (
        "0.5", "1", "1.0001", "0.50000", 0.5, 1, "-0.5000", "0.5000 ", "1.0000", "0.0000",
        "0.\u0665\u0660\u0660\u0660", None)),
    *(_set("created_at", v, rehash=True) for v in (
        "2026-02-29T00:00:00.000Z", "2024-02-29T00:00:00.000Z", "2026-01-01T00:00:00Z")),
    *(_set("updated_at", v) for v in (
        "2026-01-01T00:00:00.000z", "2026-01-01T24:00:00.000Z", "2026-01-01T00:00:00.000+00:00",
        "2025-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z",
        "\u0662\u0660\u0662\u0666-03-01T00:00:00.000Z")),
    *(_set("occurred_at", v) for v in (
        "1999-12-31T23:59:59.999Z", "0000-01-01T00:00:00.000Z", "2026-04-31T00:00:00.000Z")),
    *(_set("provenance", v, rehash=True) for v in (
        PROVENANCE, {**PROVENANCE, "kind": ""}, {"kind": "tool"}, {**PROVENANCE, "ref": 5},
        {**PROVENANCE, "via": "x"}, {**PROVENANCE, "agent": "amp:key:0OIl"},
        {**PROVENANCE, "agent": "amp:key:" + "1" * 33}, {**PROVENANCE, "agent": "did:key:z6Mk"},
        "conversation", {**PROVENANCE, "kind": "redaction"})),
    *(_set("evidence", v) for v in ([], ["mem:XYZ"], [OTHER.upper()], E1, [E3], [E1, E2, E3])),
    _with("evidence-duplicate", _dup_first("evidence")),
    _with("evidence-self", _self("evidence")),
    *(_set("supersedes", v) for v in (OTHER, "mem:1", None)),
    _with("supersedes-self", _self("supersedes")),
    *(_set("superseded_by", v) for v in (OTHER, None, "mem:1")),
    _with("superseded_by-self", _self("superseded_by")),
    _set("transition", None),
    _with("transition-add", _add_block),
    _with("transition-three-sides", _block(sides=lambda r: [*r["transition"]["sides"], E3])),
    _with("transition-same-sides", _block(sides=lambda r: [r["id"], r["id"]])),
    _with("transition-without-own-id", _block(sides=[OTHER, E3])),
    _with("transition-bad-side", _block(sides=lambda r: [r["id"], "mem:1"])),
    _with("transition-extra-key", _block(opened_by="me")),
    _with("transition-no-reason", _block(reason=_DELETE)),
    _with("transition-blank-reason", _block(reason=" \n")),
    *(_set("state_reason", v) for v in ("", "   ", 5, "a reason", None)),
    *(_set("tags", v) for v in ([], ["ops", ""], [1], "ops", ["ops", "new"], [" "])),
    _set("tags", ["caf\u00e9", "cafe\u0301"], name="tags-equal-in-nfc"),
    _with("tags-duplicate", _dup_first("tags")),
    _with("flag-flip", _flip_flag),
    _with("flag-on", lambda r: {**r, "flagged": True, "flag_reason": "doubt"}),
    _with("flag-off", lambda r: {**r, "flagged": False, "flag_reason": None}),
    *(_set("flagged", v) for v in (1, "true", None)),
    *(_set("flag_reason", v) for v in ("  ", "a reason only", None)),
    _with("signed-without-signature", _sign_fields(ADDRESS, "")),
    _with("signature-without-signer", _sign_fields(None, SIGNATURE)),
    _with("signed-shape", _sign_fields(ADDRESS, SIGNATURE)),
    _with("signed-garbage", _sign_fields(ADDRESS, "abc")),
    _with("signed-noncanonical", _sign_fields(ADDRESS, NONCANONICAL)),
    _with("signed-by-bad-address", _sign_fields("amp:key:xyz", SIGNATURE)),
    *(_set("signature", v) for v in (None, 5)),
    _with("redacted-only", _redaction(redacted=True)),
    _with("redacted-false", _redaction(redacted=False)),
    _with("birth-digest-only", _redaction(birth_digest=_DIGEST_OF)),
    _with("redaction-fields-only",
          _redaction(redacted=True, redaction_reason="x", birth_digest=_DIGEST_OF)),
    _with("make-tombstone", _make_tombstone),
    *(_set(name, v) for name, v in (
        ("redacted", False), ("redacted", "true"), ("redaction_reason", " "),
        ("redaction_reason", "another reason"), ("birth_digest", "F" * 64),
        ("birth_digest", "0" * 63))),
    _with("birth-digest-of-another", _other_digest),
    *(_set("id", v) for v in (OTHER, "MEM:" + "a" * 32, "mem-" + "a" * 32, "mem:abc", None)),
    _with("id-uppercase", lambda r: {**r, "id": r["id"].upper().replace("MEM:", "mem:")}),
    *(_set(name, v) for name, v in (
        ("x_note", "hi"), ("x_score", 0.5), ("x_big", 2**60), ("x_nested", {"a": [1, "b", None]}),
        ("x_whole", 3.0), ("x_e\u0301", 1), ("x_deep", {"k\u0301": True}))),
    _with("not-an-object", lambda r: [r]),
    _with("a-string", lambda r: "mem:" + "a" * 32),
]
assert len({m.name for m in RECORD_MUTATIONS}) == len(RECORD_MUTATIONS)


def apply_mutation(record: dict[str, Any], mutation: Mutation) -> Any:
    """The mutated copy of ``record`` (None where the mutation does not apply)."""
    result = mutation.change(copy.deepcopy(record))
    if mutation.rehash and isinstance(result, dict) and not _tombstone_like(result):
        old = result.get("id")
        try:
            result["id"] = memspec.record_id(result)
        except MemspecError:
            return result  # broken birth fields: the code rejects them before the id anyway
        block = result.get("transition")
        if isinstance(block, dict) and isinstance(block.get("sides"), list):
            block["sides"] = [result["id"] if side == old else side for side in block["sides"]]
    return result


def _record_cases() -> list[Any]:
    cases: list[Any] = []
    for base_name, base in BASE_RECORDS.items():
        for mutation in RECORD_MUTATIONS:
            mutated = apply_mutation(base, mutation)
            if mutated is not None:
                cases.append(pytest.param(mutated, id=f"{base_name}/{mutation.name}"))
    return cases


RECORD_CASES = _record_cases()

# --------------------------------------------------------------------------- record differential


@pytest.mark.parametrize("record", RECORD_CASES)
def test_record_schema_agrees_with_code(record: Any) -> None:
    if reason := _compare(record, "record"):
        pytest.skip(reason)


@pytest.mark.parametrize("record", BASE_RECORDS.values(), ids=BASE_RECORDS.keys())
def test_base_records_are_valid(record: dict[str, Any]) -> None:
    validate(record, "record")
    memspec.validate_record(record)


def test_every_deviation_is_still_needed() -> None:
    used: set[str] = set()
    for param in RECORD_CASES + FILE_CASES:
        instance = param.values[0]
        kind = "file" if isinstance(instance, dict) and "format" in instance else "record"
        _, check, accepts, rejects = _SUBJECTS[kind]
        schema_ok, code_ok = _verdicts(instance, kind)
        under = None if code_ok else _rejected_under(_code_error(check, instance))
        if schema_ok != code_ok and (found := _deviation(instance, schema_ok, code_ok, accepts,
                                                         rejects, under)):
            used.add(found[0])
    declared = {d.__name__ for d in (*SCHEMA_CANNOT_EXPRESS, *CODE_GAPS, duplicate_ids)}
    assert declared <= used, f"deviations no longer observed (remove them): {declared - used}"


@SETTINGS
@given(st.one_of(ms.records(signed=None), ms.tombstones()), st.sampled_from(RECORD_MUTATIONS))
def test_record_schema_agrees_with_code_on_generated_mutants(
        record: dict[str, Any], mutation: Mutation) -> None:
    mutated = apply_mutation(record, mutation)
    if mutated is None:
        event("mutation does not apply")
        return
    if reason := _compare(mutated, "record"):
        event(f"known deviation: {reason}")
    if errors := iter_errors(mutated, "record"):
        with pytest.raises(memspec.RecordError) as caught:
            validate(mutated, "record")
        assert (caught.value.pointer or "") == errors[0][0]


_FIELD_VALUES = st.one_of(
    ms.json_values(max_leaves=4), ms.timestamps(), ms.record_ids(), ms.addresses(),
    ms.confidences(), ms.reasons(), ms.provenances(), st.lists(ms.record_ids(), max_size=3),
    st.floats(allow_nan=False), st.sampled_from(["", " ", "[redacted]", "0.0000", "archived"]),
)


@SETTINGS
@given(st.one_of(ms.records(signed=None), ms.tombstones()),
       st.sampled_from([*memspec.RECORD_FIELDS, *memspec.OPTIONAL_FIELDS, "x_ext"]),
       _FIELD_VALUES)
def test_record_schema_agrees_with_code_on_arbitrary_field_values(
        record: dict[str, Any], field: str, value: Any) -> None:
    mutated = apply_mutation(record, _set(field, value, rehash=field in memspec.BIRTH_FIELDS))
    if reason := _compare(mutated, "record"):
        event(f"known deviation: {reason}")


def _validation_vectors(operation: str) -> list[Any]:
    cases: list[Any] = []
    for name in vector_files():
        for group in json_resource("vectors", name)["groups"]:
            if group["operation"] == operation:
                cases.extend(pytest.param(t, id=t["id"]) for t in group["tests"])
    return cases


@pytest.mark.parametrize("vector", _validation_vectors("validate_record"))
def test_record_schema_agrees_with_the_record_vectors(vector: dict[str, Any]) -> None:
    record = vector["args"]["record"]
    schema_ok = validator_for("record").is_valid(record)
    if schema_ok != (vector["result"] == "valid"):
        found = _deviation(record, schema_ok, not schema_ok, SCHEMA_CANNOT_EXPRESS, CODE_GAPS,
                           None if schema_ok is False else frozenset(vector["requirements"]))
        assert found, f"schema says {iter_errors(record, 'record')[:1]}"
        pytest.skip(found[1])


@pytest.mark.parametrize("vector", _validation_vectors("validate_file"))
def test_file_schema_agrees_with_the_file_vectors(vector: dict[str, Any]) -> None:
    memory_file = vector["args"]["file"]
    schema_ok = validator_for("memory-file").is_valid(memory_file)
    if schema_ok != (vector["result"] == "valid"):
        found = _deviation(memory_file, schema_ok, not schema_ok, FILE_CANNOT_EXPRESS,
                           FILE_CODE_GAPS,
                           None if schema_ok is False else frozenset(vector["requirements"]))
        assert found, f"schema says {iter_errors(memory_file, 'memory-file')[:1]}"
        pytest.skip(found[1])


# --------------------------------------------------------------------------- memory files


def _base_files() -> dict[str, dict[str, Any]]:
    published = _published()["artifacts"]["memory_file"]["file"]
    built = {
        "format": memspec.FORMAT_VERSION, "agent": None, "created_at": T1,
        "records": [BASE_RECORDS[n] for n in ("signed", "tombstone", "transitional", "episode")],
        "signature": "", "x_exporter": {"name": "memspec-tests", "build": 7},
    }
    return {"published": published, "built": memspec.validate_file(built),
            "signed": memspec.sign_file(built, ms.TEST_KEY)}


def _records_change(mutation: Mutation) -> Mutation:
    def change(memory_file: dict[str, Any]) -> Any:
        records = memory_file.get("records")
        if not isinstance(records, list) or not records:
            return None
        mutated = apply_mutation(records[0], mutation)
        if mutated is None:
            return None
        records[0] = mutated
        return memory_file

    return Mutation(f"record-{mutation.name}", change)


def _duplicate_record(memory_file: dict[str, Any]) -> Any:
    if not memory_file["records"]:
        return None
    first = copy.deepcopy(memory_file["records"][0])
    first["updated_at"] = "9999-01-01T00:00:00.000Z"  # another version of the same id
    memory_file["records"].append(first)
    return memory_file


FILE_MUTATIONS: list[Mutation] = [
    *(_drop(name) for name in ("format", "agent", "created_at", "records", "signature")),
    *(_set("format", v) for v in ("fg-agent-memory/0.2", None)),
    *(_set("agent", v) for v in ("amp:key:0OIl", None, ADDRESS, "amp:key:" + "1" * 33)),
    *(_set("created_at", v) for v in ("2026-01-01T00:00:00Z", "2028-02-29T00:00:00.000Z")),
    *(_set("records", v) for v in ("x", [], [1])),
    _with("records-duplicate-id", _duplicate_record),
    *(_set("signature", v) for v in ("abc", None, SIGNATURE, NONCANONICAL, "")),
    *(_set(name, v) for name, v in (
        ("x_note", "hi"), ("x_score", 0.5), ("x_whole", 2.0), ("x_e\u0301", 1))),
    *(_records_change(m) for m in RECORD_MUTATIONS[::3]),
]
assert len({m.name for m in FILE_MUTATIONS}) == len(FILE_MUTATIONS)
BASE_FILES = _base_files()


def _file_cases() -> list[Any]:
    cases: list[Any] = []
    for base_name, base in BASE_FILES.items():
        for mutation in FILE_MUTATIONS:
            mutated = apply_mutation(base, mutation)
            if mutated is not None:
                cases.append(pytest.param(mutated, id=f"{base_name}/{mutation.name}"))
    return cases


FILE_CASES = _file_cases()


@pytest.mark.parametrize("memory_file", FILE_CASES)
def test_file_schema_agrees_with_code(memory_file: Any) -> None:
    if reason := _compare(memory_file, "file"):
        pytest.skip(reason)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(ms.memory_files(signed=None), st.sampled_from(FILE_MUTATIONS))
def test_file_schema_agrees_with_code_on_generated_mutants(
        memory_file: dict[str, Any], mutation: Mutation) -> None:
    mutated = apply_mutation(memory_file, mutation)
    if mutated is not None and (reason := _compare(mutated, "file")):
        event(f"known deviation: {reason}")


# --------------------------------------------------------------------------- proposals (shape)


def _proposal(kind: str, **fields: Any) -> dict[str, Any]:
    proposal = {"kind": kind, "record": None, "target_id": None, "other_id": None, "reason": ""}
    proposal.update(fields)
    return proposal


def _born(**changes: Any) -> dict[str, Any]:
    record = _build("fact", updated_at=T0, **changes)
    return record


_SUCCESSOR = _build("fact", updated_at=T0, supersedes=OTHER, body="The deploy day is Monday.")
VALID_PROPOSALS = {
    "create": _proposal("create", record=_born()),
    "create-rule-with-reason": _proposal("create", record=_build("rule", evidence=[E1],
                                                                 updated_at=T0), reason="why"),
    "supersede": _proposal("supersede", record=_SUCCESSOR, target_id=OTHER, reason="newer"),
    "transition": _proposal("transition", target_id=OTHER, other_id=E1, reason="they disagree"),
    "archive": _proposal("archive", target_id=OTHER, reason="no longer relevant"),
}
INVALID_PROPOSALS = {
    "unknown-kind": _proposal("merge", target_id=OTHER, reason="x"),
    "missing-kind": {k: v for k, v in VALID_PROPOSALS["archive"].items() if k != "kind"},
    "missing-reason": {k: v for k, v in VALID_PROPOSALS["archive"].items() if k != "reason"},
    "extra-key": {**VALID_PROPOSALS["archive"], "priority": 1},
    "create-without-record": _proposal("create"),
    "create-with-target": {**VALID_PROPOSALS["create"], "target_id": OTHER},
    "create-archived": _proposal("create", record=_build("fact", "archived", state_reason="x")),
    "create-transitional": _proposal("create", record=_build("fact", "transitional")),
    "create-flagged-rule": _proposal("create", record=_build(
        "rule", evidence=[E1], flagged=True, flag_reason="x")),
    "create-signed": _proposal("create", record=memspec.sign_record(_born(), ms.TEST_KEY)),
    "create-tombstone": _proposal("create", record=_tombstone(_born())),
    "create-invalid-record": _proposal("create", record={**_born(), "body": ""}),
    "supersede-without-record": _proposal("supersede", target_id=OTHER, reason="x"),
    "supersede-successor-without-link": _proposal("supersede", record=_born(), target_id=OTHER,
                                                  reason="x"),
    "supersede-without-target": {**VALID_PROPOSALS["supersede"], "target_id": None},
    "supersede-blank-reason": {**VALID_PROPOSALS["supersede"], "reason": " "},
    "supersede-with-other": {**VALID_PROPOSALS["supersede"], "other_id": E1},
    "transition-without-other": {**VALID_PROPOSALS["transition"], "other_id": None},
    "transition-with-record": {**VALID_PROPOSALS["transition"], "record": _born()},
    "transition-empty-reason": {**VALID_PROPOSALS["transition"], "reason": ""},
    "archive-without-target": {**VALID_PROPOSALS["archive"], "target_id": None},
    "archive-with-record": {**VALID_PROPOSALS["archive"], "record": _born()},
    "archive-empty-reason": {**VALID_PROPOSALS["archive"], "reason": ""},
    "archive-bad-id": {**VALID_PROPOSALS["archive"], "target_id": "mem:XYZ"},
    "reason-not-string": {**VALID_PROPOSALS["create"], "reason": None},
    "not-an-object": [VALID_PROPOSALS["archive"]],
}


@pytest.mark.parametrize("proposal", VALID_PROPOSALS.values(), ids=VALID_PROPOSALS.keys())
def test_well_formed_proposals_are_valid(proposal: dict[str, Any]) -> None:
    assert iter_errors(proposal, "proposal") == []


@pytest.mark.parametrize("proposal", INVALID_PROPOSALS.values(), ids=INVALID_PROPOSALS.keys())
def test_malformed_proposals_are_invalid(proposal: Any) -> None:
    assert iter_errors(proposal, "proposal")
    with pytest.raises(memspec.ProposalError):
        validate(proposal, "proposal")


@settings(SETTINGS, max_examples=50)
@given(ms.proposals(), st.sampled_from(["kind", "record", "target_id", "other_id", "reason"]),
       _FIELD_VALUES)
def test_proposal_schema_rejects_ill_typed_fields(
        proposal: dict[str, Any], field: str, value: Any) -> None:
    assert iter_errors(proposal, "proposal") == []
    mutated = {**proposal, field: value}
    types: dict[str, type | tuple[type, ...]] = {
        "kind": str, "record": (dict, type(None)), "target_id": (str, type(None)),
        "other_id": (str, type(None)), "reason": str}
    allowed = types[field]
    if not isinstance(value, allowed):
        assert iter_errors(mutated, "proposal")


def test_a_deviation_explains_only_the_requirement_it_names() -> None:
    """A broad predicate that holds (an integral float somewhere) must not excuse a
    rejection the code made for another reason."""
    instance = {"x_extra": 2.0}
    assert _deviation(instance, True, False, SCHEMA_CANNOT_EXPRESS, CODE_GAPS,
                      frozenset({"CJ-6"})) == ("integral_float", integral_float(instance))
    assert _deviation(instance, True, False, SCHEMA_CANNOT_EXPRESS, CODE_GAPS,
                      frozenset({"SIG-6"})) is None
