"""MemoryRecord: wire fidelity against the published vectors, evolve, tombstones, extras."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from memspec import (
    RecordError,
    SignatureError,
    SigningKey,
    birth_digest,
    canonical_json,
    validate_record,
)
from memspec.reference.records import (
    MemoryRecord,
    Provenance,
    RecordState,
    RecordType,
    Transition,
)

from .conftest import T0, at, new_record, published_vectors


@pytest.fixture(scope="module")
def vectors() -> dict[str, Any]:
    return published_vectors()


def test_canonical_record_vector(vectors: dict[str, Any]) -> None:
    wire = vectors["canonical_record"]["record"]
    record = MemoryRecord.model_validate(wire)
    assert record.model_dump() == wire
    assert record.canonical_bytes().hex() == vectors["canonical_record"]["canonical_hex"]


def test_create_reproduces_record_id_and_canonical_record(vectors: dict[str, Any]) -> None:
    birth = vectors["record_id"]["birth"]
    record = MemoryRecord.create(
        birth["type"], birth["body"], birth["provenance"], created_at=birth["created_at"],
        slots=birth["slots"], confidence=0.9, tags=["conformance"],
    )
    assert record.id == vectors["record_id"]["expected"]
    assert record.model_dump() == vectors["canonical_record"]["record"]


def test_signed_record_vector(vectors: dict[str, Any]) -> None:
    key = SigningKey.from_hex(vectors["keys"]["seed_a_hex"])
    artifact = vectors["artifacts"]["signed_record"]
    signed = MemoryRecord.model_validate(vectors["canonical_record"]["record"]).sign(key)
    assert signed.signature == artifact["signature_b64"]
    assert signed.signed_by == vectors["keys"]["address_a"]
    assert signed.model_dump() == artifact["record"]
    assert signed.verify() is True
    reparsed = MemoryRecord.model_validate(artifact["record"])
    assert reparsed.canonical_bytes() == canonical_json(artifact["record"])


def test_memory_file_records_round_trip_byte_identically(vectors: dict[str, Any]) -> None:
    artifact = vectors["artifacts"]["memory_file"]
    records = [MemoryRecord.model_validate(r) for r in artifact["file"]["records"]]
    for record, wire in zip(records, artifact["file"]["records"], strict=True):
        assert record.canonical_bytes() == canonical_json(wire)
    payload = {**artifact["payload"], "records": [r.model_dump() for r in records]}
    assert canonical_json(payload).hex() == artifact["canonical_bytes_hex"]


def test_unsigned_record_verifies_false() -> None:
    assert new_record().verify() is False


def test_optional_fields_are_emitted_only_when_set() -> None:
    plain = new_record().model_dump()
    assert not {"occurred_at", "redacted", "redaction_reason", "birth_digest"} & set(plain)
    episode = new_record("We shipped.", type="episode", occurred_at=at(1)).model_dump()
    assert episode["occurred_at"] == at(1)


def test_extra_fields_round_trip_and_are_signed() -> None:
    key = SigningKey.from_hex("11" * 32)
    record = new_record(extra={"x_source_app": {"name": "notes", "rev": [1, 2]}})
    wire = record.model_dump()
    assert wire["x_source_app"] == {"name": "notes", "rev": [1, 2]}
    assert MemoryRecord.model_validate(wire).extra == {"x_source_app": {"name": "notes",
                                                                         "rev": [1, 2]}}
    signed = record.sign(key)
    assert signed.verify() is True
    tampered = signed.model_dump()
    tampered["x_source_app"]["rev"] = [1, 3]
    with pytest.raises(SignatureError):
        MemoryRecord.model_validate(tampered).verify()


@pytest.mark.parametrize("name", ["body", "state", "occurred_at", "redacted", "birth_digest"])
def test_extra_colliding_with_a_defined_field_is_rejected(name: str) -> None:
    with pytest.raises(RecordError) as info:
        new_record(extra={name: "x"})
    assert info.value.requirement == "REC-12"


def test_create_is_born_active_and_content_addressed() -> None:
    record = new_record(slots={"subject": "sky"}, tags=["colour"], confidence="0.7500")
    assert record.state is RecordState.ACTIVE
    assert record.type is RecordType.FACT
    assert record.updated_at == record.created_at == T0
    assert record.confidence == "0.7500"
    assert record.superseded_by is None and record.transition is None
    assert not record.flagged and record.signed_by is None and record.signature == ""
    validate_record(record.model_dump())


@pytest.mark.parametrize("value, wire", [(1, "1.0000"), (0.5, "0.5000"), (0, "0.0000"),
                                         ("0.1234", "0.1234")])
def test_confidence_is_kept_as_its_wire_string(value: Any, wire: str) -> None:
    assert new_record(confidence=value).confidence == wire


@pytest.mark.parametrize("kwargs", [
    {"confidence": 1.5}, {"confidence": "0.5"}, {"confidence": True}, {"type": "opinion"},
    {"created_at": "2026-01-01T00:00:00Z"}, {"tags": ["a", "a"]}, {"tags": "abc"},
    {"type": "rule"}, {"evidence": ["not-an-id"]}, {"slots": ["not", "an", "object"]},
])
def test_bad_create_arguments_raise_record_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(RecordError):
        new_record(**kwargs)


def test_empty_body_is_rejected() -> None:
    with pytest.raises(RecordError):
        new_record("")


def test_record_is_frozen_and_copies_its_inputs() -> None:
    slots: dict[str, Any] = {"subject": {"name": "sky"}}
    record = new_record(slots=slots)
    slots["subject"]["name"] = "sea"
    assert record.slots == {"subject": {"name": "sky"}}
    dumped = record.model_dump()
    dumped["slots"]["subject"]["name"] = "sea"
    assert record.slots == {"subject": {"name": "sky"}}
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.body = "changed"  # type: ignore[misc]


def test_equal_records_are_equal_and_hashable() -> None:
    a, b = new_record(), new_record()
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != a.evolve(at(2), tags=["x"])


def test_evolve_makes_a_new_unsigned_version() -> None:
    key = SigningKey.from_hex("22" * 32)
    signed = new_record().sign(key)
    evolved = signed.evolve(at(2), tags=["checked"], confidence=0.25)
    assert evolved.id == signed.id
    assert evolved.updated_at == at(2)
    assert evolved.tags == ("checked",) and evolved.confidence == "0.2500"
    assert evolved.signed_by is None and evolved.signature == ""
    assert evolved.verify() is False
    assert signed.verify() is True
    assert evolved.sign(key).verify() is True


def test_evolve_accepts_wire_shaped_values() -> None:
    record = new_record()
    other = new_record("The sea is green.")
    evolved = record.evolve(at(2), state="transitional", state_reason="disputed",
                            transition={"sides": [record.id, other.id], "reason": "disputed"})
    assert evolved.state is RecordState.TRANSITIONAL
    assert evolved.transition == Transition((record.id, other.id), "disputed")


@pytest.mark.parametrize("name", ["id", "type", "body", "slots", "provenance", "created_at",
                                  "occurred_at", "updated_at", "signed_by", "signature",
                                  "redacted", "redaction_reason", "birth_digest", "colour"])
def test_evolve_refuses_fixed_reserved_and_unknown_fields(name: str) -> None:
    with pytest.raises(RecordError):
        new_record().evolve(at(2), **{name: "x"})


def test_evolve_result_must_be_a_valid_record() -> None:
    with pytest.raises(RecordError):
        new_record().evolve(at(2), state="superseded", state_reason="gone")  # no successor
    with pytest.raises(RecordError):
        new_record(created_at=at(3)).evolve(at(2), tags=["early"])  # updated_at < created_at


def test_tombstone_matches_section_11() -> None:
    key = SigningKey.from_hex("33" * 32)
    original = new_record("My password is hunter2.", slots={"secret": "hunter2"},
                          tags=["secret"], occurred_at=at(1), extra={"x_note": "hunter2"})
    evidence = new_record("A rule source.")
    linked = MemoryRecord.create("rule", "Never write passwords down.",
                                 Provenance("consolidation"), created_at=T0,
                                 evidence=[original.id, evidence.id]).sign(key)
    for source in (original, linked):
        tomb = MemoryRecord.tombstone(source, reason="contains a secret", now=at(5))
        wire = tomb.model_dump()
        assert wire == {
            "id": source.id, "type": source.type.value, "body": "[redacted]", "slots": {},
            "state": "archived", "confidence": "0.0000", "created_at": source.created_at,
            "updated_at": at(5),
            "provenance": {"kind": "redaction", "ref": None, "agent": None},
            "evidence": list(source.evidence), "supersedes": source.supersedes,
            "superseded_by": source.superseded_by, "transition": None,
            "state_reason": "contains a secret", "tags": [], "flagged": False,
            "flag_reason": None, "signed_by": None, "signature": "", "redacted": True,
            "redaction_reason": "contains a secret",
            "birth_digest": birth_digest(source.model_dump()),
        }
        validate_record(wire)
        assert tomb.is_tombstone and tomb.REDACTED_BODY == "[redacted]"
        assert MemoryRecord.model_validate(wire) == tomb
        with pytest.raises(SignatureError):
            tomb.sign(key)


def test_tombstone_of_a_tombstone_keeps_the_birth_digest() -> None:
    original = new_record()
    first = MemoryRecord.tombstone(original, reason="pii", now=at(2))
    again = MemoryRecord.tombstone(first, reason="pii, again", now=at(3))
    assert again.birth_digest == first.birth_digest == birth_digest(original.model_dump())


@pytest.mark.parametrize("reason", ["", "   "])
def test_tombstone_needs_a_reason(reason: str) -> None:
    with pytest.raises(RecordError):
        MemoryRecord.tombstone(new_record(), reason=reason, now=at(2))


@pytest.mark.parametrize("mutate", [
    lambda w: w.pop("flag_reason"),
    lambda w: w.update(id="mem:" + "0" * 32),
    lambda w: w.update(body="Edited after the fact."),
    lambda w: w.update(state="superseded"),
    lambda w: w.update(redacted=False),
    lambda w: w.update(provenance={"kind": "conversation", "ref": None}),
])
def test_model_validate_rejects_bad_wire_records(mutate: Any) -> None:
    wire = new_record().model_dump()
    mutate(wire)
    with pytest.raises(RecordError):
        MemoryRecord.model_validate(wire)


@pytest.mark.parametrize("value", [None, [], "record", 7])
def test_model_validate_rejects_non_objects(value: object) -> None:
    with pytest.raises(RecordError):
        MemoryRecord.model_validate(value)


def test_provenance_and_transition_wire_forms() -> None:
    assert Provenance("tool").model_dump() == {"kind": "tool", "ref": None, "agent": None}
    assert Provenance.model_validate({"kind": "tool", "ref": "x"}) == Provenance("tool", "x")
    block = Transition(("mem:" + "1" * 32, "mem:" + "2" * 32), "conflict")
    assert Transition.model_validate(block.model_dump()) == block
    with pytest.raises(RecordError):
        Provenance.model_validate({"kind": "tool", "extra": 1})
    with pytest.raises(RecordError):
        Transition.model_validate({"sides": ["a"], "reason": "r"})
