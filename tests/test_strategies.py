"""The public hypothesis strategies generate what memspec's validators and schemas accept."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import InvalidArgument

import memspec
from memspec import strategies as ms
from memspec._schemas import iter_errors
from memspec._unicode import ASSIGNED_RANGES, UNICODE_VERSION, assigned_in_unicode_14

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _schema_valid(instance: Any, schema: str) -> None:
    assert iter_errors(instance, schema) == []


@FAST
@given(ms.records(signed=None))
def test_records_are_valid(record: dict[str, Any]) -> None:
    memspec.validate_record(record)
    _schema_valid(record, "record")
    assert record["id"] == memspec.record_id(record)
    assert memspec.canonical_json(memspec.parse_json(memspec.canonical_json(record))) == \
        memspec.canonical_json(record)


@FAST
@given(ms.records(signed=True))
def test_signed_records_verify(record: dict[str, Any]) -> None:
    memspec.validate_record(record)
    assert record["signed_by"] == ms.TEST_KEY.address
    assert memspec.verify_record(record) is True


@FAST
@given(ms.records(signed=False))
def test_unsigned_records_are_unsigned(record: dict[str, Any]) -> None:
    assert memspec.verify_record(record) is False


@pytest.mark.parametrize("state", memspec.RECORD_STATES)
@pytest.mark.parametrize("rtype", memspec.RECORD_TYPES)
def test_records_respect_type_and_state(rtype: str, state: str) -> None:
    @settings(max_examples=5, deadline=None)
    @given(ms.records(types=[rtype], states=[state]))
    def check(record: dict[str, Any]) -> None:
        memspec.validate_record(record)
        assert (record["type"], record["state"]) == (rtype, state)
        if state == "transitional":
            assert record["id"] in record["transition"]["sides"]
        if rtype == "rule":
            assert record["evidence"]

    check()


@FAST
@given(ms.born_records())
def test_born_records_are_born(record: dict[str, Any]) -> None:
    memspec.validate_record(record)
    assert record["state"] == "active"
    assert record["updated_at"] == record["created_at"]
    assert record["supersedes"] is record["superseded_by"] is record["transition"] is None
    assert record["flagged"] is False and record["signed_by"] is None


@FAST
@given(ms.tombstones())
def test_tombstones_are_valid(record: dict[str, Any]) -> None:
    memspec.validate_record(record)
    _schema_valid(record, "record")
    assert memspec.is_tombstone(record)
    assert record["id"] == "mem:" + record["birth_digest"][:32]


@FAST
@given(ms.memory_files(signed=False))
def test_unsigned_memory_files_are_valid(memory_file: dict[str, Any]) -> None:
    memspec.validate_file(memory_file)
    _schema_valid(memory_file, "memory-file")
    memspec.verify_file(memory_file, require_signature=False)
    with pytest.raises(memspec.SignatureError):
        memspec.verify_file(memory_file)


@FAST
@given(ms.memory_files(signed=True))
def test_signed_memory_files_verify(memory_file: dict[str, Any]) -> None:
    _schema_valid(memory_file, "memory-file")
    memspec.verify_file(memory_file)
    assert memory_file["agent"] == ms.TEST_KEY.address


@FAST
@given(ms.proposals())
def test_proposals_are_well_formed(proposal: dict[str, Any]) -> None:
    _schema_valid(proposal, "proposal")
    if proposal["record"] is not None:
        record = memspec.validate_record(proposal["record"])
        assert record["state"] == "active" and record["updated_at"] == record["created_at"]
    if proposal["kind"] == "supersede":
        assert proposal["record"]["supersedes"] == proposal["target_id"]
    if proposal["kind"] == "transition":
        assert proposal["target_id"] != proposal["other_id"]


@pytest.mark.parametrize("kind", ms.PROPOSAL_KINDS)
def test_proposals_respect_kind(kind: str) -> None:
    @settings(max_examples=5, deadline=None)
    @given(ms.proposals(kinds=[kind]))
    def check(proposal: dict[str, Any]) -> None:
        assert proposal["kind"] == kind

    check()


@FAST
@given(ms.timestamps())
def test_timestamps_are_canonical(value: str) -> None:
    assert memspec.check_timestamp(value) == value
    assert memspec.canonical_timestamp(value[:-1] + "+00:00").lstrip("0") == value.lstrip("0")


@FAST
@given(ms.addresses())
def test_addresses_round_trip(address: str) -> None:
    assert memspec.address_from_public_key(memspec.public_key_from_address(address)) == address


@FAST
@given(ms.record_ids())
def test_record_ids_are_well_formed(rid: str) -> None:
    assert re.fullmatch(r"mem:[0-9a-f]{32}", rid)


@FAST
@given(ms.confidences())
def test_confidences_are_wire_strings(wire: str) -> None:
    assert memspec.confidence_to_wire(memspec.confidence_from_wire(wire)) == wire


@FAST
@given(ms.reasons())
def test_reasons_are_not_blank(reason: str) -> None:
    assert memspec.is_reason(reason)
    assert reason.strip("\t\n\x0b\x0c\r ")


def test_reasons_include_unicode_spaces() -> None:
    seen: set[str] = set()

    @settings(max_examples=200, deadline=None, database=None)
    @given(ms.reasons())
    def collect(reason: str) -> None:
        seen.add(reason)

    collect()
    assert any(not reason.strip() for reason in seen), "no reason that str.strip() empties"


@pytest.mark.parametrize(("value", "verdict"), [
    ("\u00a0", True), ("\u3000", True), ("\u2003", True), ("\u0085", True), ("\ufeff", True),
    ("\x1c", True), (".", True), ("", False), (" ", False), ("\t \n", False),
    ("\x0b\x0c\r", False), (None, False), (3, False),
])
def test_is_reason_counts_only_ascii_whitespace_as_blank(value: Any, verdict: bool) -> None:
    assert memspec.is_reason(value) is verdict


@FAST
@given(ms.text_alphabet())
def test_text_alphabet_is_assigned_in_unicode_14(char: str) -> None:
    assert len(char) == 1 and assigned_in_unicode_14(char)
    assert not 0xD800 <= ord(char) <= 0xDFFF


@pytest.mark.skipif(unicodedata.unidata_version != UNICODE_VERSION,
                    reason="the table is checked against Unicode 14.0 data (Python 3.11)")
def test_unicode_14_table_matches_unicodedata() -> None:
    assigned = [cp for cp in range(0x110000) if unicodedata.category(chr(cp)) != "Cn"]
    from_table = [cp for start, end in ASSIGNED_RANGES for cp in range(start, end + 1)]
    assert from_table == assigned
    assert not assigned_in_unicode_14("\U000e0080")  # unassigned in 14.0
    assert assigned_in_unicode_14("\U0001f680")


def test_generated_text_never_holds_unassigned_code_points() -> None:
    @settings(max_examples=60, deadline=None, database=None)
    @given(ms.records(signed=None))
    def check(record: dict[str, Any]) -> None:
        text = memspec.canonical_json(record).decode("utf-8")
        assert all(assigned_in_unicode_14(char) for char in text)

    check()


@FAST
@given(ms.provenances())
def test_provenances_are_valid(provenance: dict[str, Any]) -> None:
    _schema_valid(provenance, "provenance")


@FAST
@given(ms.json_values())
def test_json_values_are_canonical_fixed_points(value: Any) -> None:
    text = memspec.canonical_json(value)
    assert memspec.parse_json(text) == value
    assert memspec.canonical_json(memspec.parse_json(text)) == text


def test_json_values_include_non_ascii_text() -> None:
    seen: list[str] = []

    @settings(max_examples=300, deadline=None, database=None)
    @given(ms.json_values())
    def collect(value: Any) -> None:
        if isinstance(value, str) and not value.isascii():
            seen.append(value)

    collect()
    assert seen


@pytest.mark.parametrize(
    "make",
    [
        lambda: ms.records(types=["belief"]),
        lambda: ms.records(states=[]),
        lambda: ms.proposals(kinds=["delete"]),
        lambda: ms.tombstones(types=["x"]),
        lambda: ms.memory_files(max_records=-1),
    ],
)
def test_bad_arguments_are_rejected(make: Any) -> None:
    with pytest.raises(InvalidArgument):
        make()


def test_strategy_table_is_complete() -> None:
    public = {name for name in ms.__all__ if name.islower()}
    assert public <= set(ms.STRATEGIES)
