"""Fuzz targets: each takes raw bytes and drives one memspec parser or validator.

A target returns normally for any input memspec handles correctly, including
input it rejects with a typed error (a MemspecError subclass naming what is
wrong). Anything else escaping (KeyError, TypeError, RecursionError,
UnicodeError, ...) is a bug; so is a protocol response that is not well formed or
that reports an ``internal`` engine error. ``fuzz/run.py`` runs a target under
atheris (coverage-guided); ``seeds(name)`` gives each target a starting corpus from
memspec's conformance vectors. The test suite replays every seed through every
target (tests/reliability/test_hostile_input.py), so the harnesses stay working.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from typing import Any

from memspec import (
    ERROR_CLASSES,
    MemspecError,
    canonical_json,
    canonical_timestamp,
    check_timestamp,
    confidence_from_wire,
    decode_signature,
    parse_json,
    public_key_from_address,
    validate_file,
    validate_record,
    verify_file,
    verify_record,
)
from memspec.data import json_resource, vector_files

__all__ = ["TARGETS", "seeds"]


def _typed(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except MemspecError as exc:
        if exc.code not in ERROR_CLASSES or not str(exc).strip():
            raise AssertionError(f"untyped or silent error {exc.code!r}: {exc!r}") from exc
        return exc


def _json(data: bytes) -> Any:
    value = _typed(lambda: parse_json(data))
    return None if isinstance(value, MemspecError) else value


def canonical(data: bytes) -> None:
    """parse_json on bytes and on text; accepted input re-canonicalizes to a fixed point."""
    value = _typed(lambda: parse_json(data))
    if not isinstance(value, MemspecError):
        once = canonical_json(value)
        if canonical_json(parse_json(once)) != once:
            raise AssertionError("canonical JSON is not a fixed point")
    text = data.decode("utf-8", "surrogateescape")
    _typed(lambda: parse_json(text))


def record(data: bytes) -> None:
    """validate_record and verify_record over any JSON the bytes parse to."""
    value = _json(data)
    if value is None:
        return
    result = _typed(lambda: validate_record(value))
    if not isinstance(result, MemspecError):
        _typed(lambda: verify_record(value))


def memory_file(data: bytes) -> None:
    """validate_file and verify_file (with and without a required signature)."""
    value = _json(data)
    if value is None:
        return
    _typed(lambda: validate_file(value))
    _typed(lambda: verify_file(value))
    _typed(lambda: verify_file(value, require_signature=False))


def encodings(data: bytes) -> None:
    """Addresses, signatures, timestamps and confidence strings from the same text."""
    text = data.decode("utf-8", "replace")
    parsers: tuple[Callable[[str], Any], ...] = (
        public_key_from_address, decode_signature, canonical_timestamp, check_timestamp,
        confidence_from_wire)
    for parse in parsers:
        _typed(lambda parse=parse: parse(text))  # type: ignore[misc]


def protocol(data: bytes) -> None:
    """The process protocol over the reference engine: one well-formed answer per line."""
    from memspec.protocol import WIRE_ERROR_CODES, serve
    from memspec.reference.engine import create_engine

    out = io.BytesIO()
    serve(create_engine(), io.BytesIO(data), out)
    for line in out.getvalue().splitlines():
        answer = json.loads(line)
        if answer.get("ok") is True:
            continue
        error = answer["error"]
        if error["code"] not in WIRE_ERROR_CODES or not error["message"]:
            raise AssertionError(f"malformed error response {answer!r}")
        if error["code"] == "internal":
            raise AssertionError(f"engine bug behind {answer!r}")


#: Every target by name.
TARGETS: dict[str, Callable[[bytes], None]] = {
    "canonical": canonical,
    "record": record,
    "file": memory_file,
    "encodings": encodings,
    "protocol": protocol,
}

_ARG_KEYS = {"canonical": ("text",), "record": ("record",), "file": ("file",),
             "encodings": ("address", "signature", "value", "wire")}


def _walk_args(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for key, sub in value.items():
            yield key, sub
            yield from _walk_args(sub)
    elif isinstance(value, list):
        for sub in value:
            yield from _walk_args(sub)


def seeds(name: str) -> list[bytes]:
    """A starting corpus for target ``name`` from the conformance vectors' arguments."""
    found: list[bytes] = []
    for file_name in vector_files():
        vectors = json_resource("vectors", file_name)
        for group in vectors.get("groups", []):
            for test in group.get("tests", []):
                args = test.get("args", {})
                if name == "protocol":
                    request = {"id": 1, "op": group.get("operation"), "args": args}
                    found.append(json.dumps(request, ensure_ascii=True).encode() + b"\n")
                    continue
                for key, value in _walk_args(args):
                    if key not in _ARG_KEYS[name]:
                        continue
                    if isinstance(value, str):
                        found.append(value.encode("utf-8", "surrogatepass"))
                    else:
                        found.append(json.dumps(value, ensure_ascii=False).encode(
                            "utf-8", "surrogatepass"))
    return sorted(set(found))
