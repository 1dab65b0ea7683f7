"""Limits: each bound in ``memspec.Limits`` is enforced before the input costs memory or time,
is configurable, and surfaces as a typed error (never RecursionError or MemoryError).

"Before it costs" is checked structurally, never by timing: the expensive step
(the JSON decoder, base58 decoding, record validation) is replaced by a spy that
fails the test if it is reached for input the limit should have refused.
See docs/limits.md for the table these tests hold the code to.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

import memspec._canonical as canonical_module
import memspec._encoding as encoding_module
import memspec._file as file_module
from memspec import (
    DEFAULT_LIMITS,
    CanonicalJSONError,
    EncodingError,
    FileError,
    LimitError,
    Limits,
    MemspecError,
    RecordError,
    canonical_json,
    check_json_value,
    parse_json,
    public_key_from_address,
    validate_file,
    validate_record,
)
from memspec.cli import main as cli_main
from memspec.conformance import _builders as build
from memspec.protocol import serve
from memspec.reference.engine import create_engine
from memspec.reference.memory import Memory

NOW = "2026-05-01T00:00:00.000Z"
MIB = 1024 * 1024


class Reached(AssertionError):
    """The expensive step ran although a limit should have refused the input first."""


@pytest.fixture
def no_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the JSON decoder fail loudly if parse_json reaches it."""

    class Spy:
        def decode(self, text: str) -> Any:
            raise Reached(f"the JSON decoder was handed {len(text)} characters")

    monkeypatch.setattr(canonical_module, "_DECODER", Spy())


def nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


# -- max_text_bytes ----------------------------------------------------------------------------


@pytest.mark.parametrize("as_text", [False, True], ids=["bytes", "str"])
def test_100_mib_text_is_refused_by_size_before_parsing(no_decoder: None, as_text: bool) -> None:
    data = b" " * (100 * MIB)
    with pytest.raises(LimitError, match="exceeds the limit of 67108864"):
        parse_json(data.decode() if as_text else data)


def test_text_size_limit_is_configurable(no_decoder: None) -> None:
    with pytest.raises(LimitError):
        parse_json(b"[1,2,3,4,5,6]", Limits(max_text_bytes=10))


def test_text_at_the_size_limit_is_parsed() -> None:
    assert parse_json(b"[1,2,3,4]", Limits(max_text_bytes=9)) == [1, 2, 3, 4]


def test_text_size_of_a_str_is_counted_in_utf8_bytes(no_decoder: None) -> None:
    with pytest.raises(LimitError):
        parse_json('"' + "\U0001F600" * 5 + '"', Limits(max_text_bytes=12))


def test_cli_refuses_an_oversized_file_without_reading_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as handle:  # sparse: 65 MiB that take no disk space
        handle.truncate(DEFAULT_LIMITS.max_text_bytes + 1)

    def refuse(self: Path) -> bytes:
        raise Reached(f"read {self}")

    monkeypatch.setattr(Path, "read_bytes", refuse)
    assert cli_main(["validate", str(big)]) == 1
    assert "limit" in capsys.readouterr().out


def test_memory_load_refuses_an_oversized_file_without_reading_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as handle:
        handle.truncate(DEFAULT_LIMITS.max_text_bytes + 1)

    def refuse(self: Path) -> bytes:
        raise Reached(f"read {self}")

    monkeypatch.setattr(Path, "read_bytes", refuse)
    with pytest.raises(LimitError):
        Memory.load(big, verify=False)


def test_protocol_refuses_an_oversized_request_line() -> None:
    line = (b'{"id":1,"op":"hello","args":{"protocol":"memspec-engine/1","pad":"'
            + b"x" * (DEFAULT_LIMITS.max_text_bytes + 1) + b'"}}')
    out = io.BytesIO()
    serve(create_engine(), io.BytesIO(line + b"\n"), out)
    answer = json.loads(out.getvalue())
    assert answer["ok"] is False and answer["error"]["code"] == "limit"


# -- max_depth ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "[" * 100_000 + "]" * 100_000,
    '{"a":' * 100_000 + "1" + "}" * 100_000,
    "[" * 100_000,
    '[{"a":' * 50_000,
], ids=["arrays", "objects", "unclosed-arrays", "mixed-unclosed"])
@pytest.mark.parametrize("as_bytes", [False, True], ids=["str", "bytes"])
def test_100k_deep_nesting_is_a_limit_error(text: str, as_bytes: bool) -> None:
    # Unclosed text may fail as a syntax error first; either way a typed error, never
    # RecursionError.
    with pytest.raises((LimitError, CanonicalJSONError)):
        parse_json(text.encode() if as_bytes else text)


@pytest.mark.parametrize("check", [check_json_value, canonical_json],
                         ids=["check_json_value", "canonical_json"])
def test_100k_deep_value_is_a_limit_error(check: Any) -> None:
    with pytest.raises(LimitError, match="nesting deeper than 64"):
        check(nested(100_000))


def test_depth_limit_boundary_and_configuration() -> None:
    assert parse_json("[" * 64 + "]" * 64) is not None
    with pytest.raises(LimitError):
        parse_json("[" * 65 + "]" * 65)
    assert parse_json("[[1]]", Limits(max_depth=2)) == [[1]]
    with pytest.raises(LimitError):
        parse_json("[[[1]]]", Limits(max_depth=2))
    with pytest.raises(RecordError, match="nesting deeper than 3"):
        validate_record({"slots": nested(10)}, Limits(max_depth=3))


@pytest.mark.parametrize("step", ["check_json_value", "canonical_json"])
def test_a_high_configured_depth_never_raises_recursion_error(step: str) -> None:
    value = nested(5_000)
    try:  # refusing the configuration itself (LimitError) is a fix too
        limits = Limits(max_depth=100_000)
        if step == "check_json_value":
            check_json_value(value, limits)
        else:
            canonical_json(value, limits)
    except LimitError:
        pass


def test_a_high_configured_depth_still_parses_to_a_typed_error() -> None:
    # The C decoder's own recursion guard trips first; parse_json maps it to a limit error.
    with pytest.raises(LimitError):
        parse_json("[" * 5_000 + "]" * 5_000, Limits(max_depth=100_000))


# -- max_string_chars --------------------------------------------------------------------------


def test_string_limit_boundary_and_configuration() -> None:
    limits = Limits(max_string_chars=10)
    assert parse_json('["' + "k" * 10 + '"]', limits) == ["k" * 10]
    with pytest.raises(LimitError, match="string of 11 characters"):
        parse_json('["' + "k" * 11 + '"]', limits)
    with pytest.raises(LimitError):
        check_json_value({"a": ["k" * 11]}, limits)


def test_object_keys_are_bounded_by_the_string_limit() -> None:
    limits = Limits(max_string_chars=10)
    with pytest.raises(LimitError):
        parse_json('{"' + "k" * 11 + '":1}', limits)
    with pytest.raises(LimitError):
        check_json_value({"k" * 11: 1}, limits)


# -- max_body_chars ----------------------------------------------------------------------------


def test_body_limit_boundary_and_configuration() -> None:
    limits = Limits(max_body_chars=20)
    fits = build.record("fact", "b" * 20, created_at=NOW)
    assert validate_record(fits, limits) is fits
    over = build.record("fact", "b" * 21, created_at=NOW)
    with pytest.raises(RecordError, match="exceeds the limit of 20") as info:
        validate_record(over, limits)
    assert info.value.requirement == "REC-5"
    default = build.record("fact", "b" * (DEFAULT_LIMITS.max_body_chars + 1), created_at=NOW)
    with pytest.raises(RecordError, match="body of 262145 characters"):
        validate_record(default)


# -- max_records_per_file ----------------------------------------------------------------------


def test_record_count_is_refused_before_any_record_is_validated(
        monkeypatch: pytest.MonkeyPatch) -> None:
    records = [build.record("fact", f"fact {i}", created_at=NOW) for i in range(3)]
    memory_file = build.memory_file(records, created_at=NOW)

    def refuse(*_: Any, **__: Any) -> Any:
        raise Reached("validate_record ran for a file over the record limit")

    monkeypatch.setattr(file_module, "validate_record", refuse)
    with pytest.raises(FileError, match="3 records exceed the limit of 2"):
        validate_file(memory_file, Limits(max_records_per_file=2))


def test_record_count_at_the_limit_is_accepted() -> None:
    records = [build.record("fact", f"fact {i}", created_at=NOW) for i in range(2)]
    memory_file = build.memory_file(records, created_at=NOW)
    assert validate_file(memory_file, Limits(max_records_per_file=2)) is memory_file


# -- bounds outside Limits ---------------------------------------------------------------------


def test_an_overlong_address_is_refused_before_base58_decoding(
        monkeypatch: pytest.MonkeyPatch) -> None:
    real = encoding_module.b58decode

    def bounded(text: str) -> bytes:
        if len(text) > 44:
            raise Reached(f"base58 decoding of {len(text)} characters")
        return real(text)

    monkeypatch.setattr(encoding_module, "b58decode", bounded)
    with pytest.raises(EncodingError):
        public_key_from_address("amp:key:" + "z" * 100_000)
    record = build.record("fact", "x", created_at=NOW,
                          provenance={"kind": "t", "ref": None, "agent": "amp:key:" + "2" * 10**5})
    with pytest.raises(RecordError):
        validate_record(record)


def test_base58_addresses_at_the_longest_valid_length_decode() -> None:
    from memspec import address_from_public_key

    longest = address_from_public_key(b"\xff" * 32)
    assert len(longest) == 8 + 44
    assert public_key_from_address(longest) == b"\xff" * 32
    assert public_key_from_address(address_from_public_key(bytes(32))) == bytes(32)


def test_a_container_flood_is_refused_before_parsing(no_decoder: None) -> None:
    with pytest.raises(LimitError):
        parse_json(b"[" + b"[]," * 3_000_000 + b"[]]")


@pytest.mark.parametrize("field", ["max_depth", "max_text_bytes", "max_string_chars",
                                   "max_body_chars", "max_records_per_file"])
def test_limits_are_validated_when_configured(field: str) -> None:
    for bad in (-1, "64", 1.5, None):
        try:
            limits = Limits(**{field: bad})  # type: ignore[arg-type]  # a wrong type, refused
        except LimitError:
            continue
        try:
            parse_json(b"[]", limits)
            validate_file(build.memory_file([], created_at=NOW), limits)
        except MemspecError:
            pass
        raise Reached(f"Limits({field}={bad!r}) was accepted")
