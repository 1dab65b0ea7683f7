"""The process protocol's messages: encoding, responses, error codes and schema checks.

Shared by both ends of :mod:`memspec.protocol` (the server and the kit's client).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from memspec._errors import ERROR_CLASSES, MemspecError
from memspec.engine import PROTOCOL_VERSION, SPEC_VERSION

__all__ = [
    "INTERNAL",
    "PROTOCOL",
    "PROTOCOL_SCHEMA_ID",
    "WIRE_ERROR_CODES",
    "EngineFault",
    "check_handshake",
    "check_result",
    "decode_message",
    "encode_message",
    "error_response",
    "hello_args",
    "ok_response",
    "shorten",
]

#: Error code for a broken exchange (garbage, wrong id, crash, timeout, malformed result).
PROTOCOL = "protocol"
#: Error code for an engine bug that is not a rejection of the input.
INTERNAL = "internal"
#: Every error code a response may carry.
WIRE_ERROR_CODES = frozenset(ERROR_CLASSES) | {PROTOCOL, INTERNAL}

_MAX_SHOWN = 300


class EngineFault(MemspecError):
    """The engine broke the protocol (or died, or hung): not a verdict on any rule.

    The kit reports a test that hits one as *errored*, distinct from failed.
    ``fatal`` marks faults that suggest the engine cannot be reached at all
    (it will not start, fails its handshake, or stops answering), as opposed to
    one bad answer; a kit gives up on an engine after a few fatal ones in a row.

    ``requirement`` names the protocol requirement the exchange broke, when it broke
    one (a line that is not JSON breaks PROTO-1, a wrong id PROTO-3), and ``where``
    says what was broken, stably, so that the kit reports the violation once as a
    finding on that requirement while the test that met it is errored.
    """

    code = PROTOCOL

    def __init__(self, message: str, *, pointer: str | None = None, fatal: bool = False,
                 requirement: str | None = None, where: str | None = None) -> None:
        super().__init__(message, pointer=pointer, requirement=requirement)
        self.fatal = fatal
        self.where = where

    def __str__(self) -> str:
        # The requirement is reported as a finding; the message already says why.
        return f"{self.message} at {self.pointer}" if self.pointer else self.message


# --------------------------------------------------------------------------- messages


def encode_message(message: Mapping[str, Any]) -> bytes:
    """One protocol line: compact JSON, ASCII-escaped (so lone surrogates survive), newline."""
    text = json.dumps(message, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text.encode("ascii") + b"\n"


def _no_constants(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def decode_message(line: bytes) -> Any:
    """Parse one protocol line (UTF-8 JSON; NaN, Infinity and duplicate keys are refused)."""
    text = line.decode("utf-8")
    return json.loads(text, parse_constant=_no_constants, object_pairs_hook=_unique_pairs)


def hello_args() -> dict[str, str]:
    """The arguments of the opening ``hello``."""
    return {"protocol": PROTOCOL_VERSION, "spec_version": SPEC_VERSION}


def ok_response(request_id: int | None, result: Mapping[str, Any]) -> dict[str, Any]:
    """A success response."""
    return {"id": request_id, "ok": True, "result": dict(result)}


def error_response(
    request_id: int | None, code: str, message: str, requirement: str | None = None
) -> dict[str, Any]:
    """A rejection (or protocol error) response."""
    error: dict[str, Any] = {"code": code, "message": message}
    if requirement:
        error["requirement"] = requirement
    return {"id": request_id, "ok": False, "error": error}


def shorten(text: str, limit: int = _MAX_SHOWN) -> str:
    """``text``, cut to ``limit`` characters for messages."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------- schemas

PROTOCOL_SCHEMA_ID = "https://memspec.dev/schemas/protocol.json"


_RECORD_SCHEMA_FILE = "record.json"
_MAX_MEMO = 50_000
#: Records already found valid, by their JSON text: results repeat the same records
#: (get, history, iterate, snapshots), and validating one against record.json is costly.
_valid_records: set[str] = set()


@cache
def _validator_class() -> Any:
    from jsonschema import Draft202012Validator
    from jsonschema.validators import extend

    plain_ref = Draft202012Validator.VALIDATORS["$ref"]

    def memo_ref(validator: Any, ref: str, instance: Any, schema: Any) -> Any:
        if ref.rsplit("/", 1)[-1] != _RECORD_SCHEMA_FILE or not isinstance(instance, dict):
            yield from plain_ref(validator, ref, instance, schema)
            return
        try:
            key = json.dumps(instance, sort_keys=True)
        except (TypeError, ValueError):
            key = None
        if key is not None and key in _valid_records:
            return
        errors = list(plain_ref(validator, ref, instance, schema))
        if not errors and key is not None:
            if len(_valid_records) >= _MAX_MEMO:
                _valid_records.clear()
            _valid_records.add(key)
        yield from errors

    return extend(Draft202012Validator, {"$ref": memo_ref})  # type: ignore[no-untyped-call]


@cache
def _validator(definition: str) -> Any:
    from memspec._schemas import SCHEMA_REGISTRY

    if PROTOCOL_SCHEMA_ID not in SCHEMA_REGISTRY:
        return None
    defs = SCHEMA_REGISTRY.contents(PROTOCOL_SCHEMA_ID).get("$defs", {})
    if definition not in defs:
        return None
    schema = {"$ref": f"{PROTOCOL_SCHEMA_ID}#/$defs/{definition}"}
    return _validator_class()(schema, registry=SCHEMA_REGISTRY)


def _pointer(path: Sequence[object]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _check(definition: str, value: Any, what: str) -> None:
    validator = _validator(definition)
    if validator is None:
        return
    from jsonschema.exceptions import best_match

    error = best_match(validator.iter_errors(value))
    if error is not None:
        where = _pointer(list(error.absolute_path)) or "/"
        raise EngineFault(f"{what} is malformed: {shorten(error.message, 200)}", pointer=where)


def check_result(operation: str, result: Any) -> None:
    """Raise EngineFault unless ``result`` matches ``<operation>.result`` in protocol.json."""
    _check(f"{operation}.result", result, f"engine's result for {operation!r}")


def check_handshake(info: Any) -> None:
    """Raise EngineFault unless ``info`` is a hello result for this protocol and spec version."""
    _check("hello.result", info, "engine's hello result")
    if not isinstance(info, dict):
        raise EngineFault("engine's hello result is not an object")
    if info.get("protocol") != PROTOCOL_VERSION:
        raise EngineFault(
            f"engine speaks protocol {info.get('protocol')!r}; this kit speaks {PROTOCOL_VERSION}"
        )
    if info.get("spec_version") != SPEC_VERSION:
        raise EngineFault(
            f"engine implements {info.get('spec_version')!r}; this kit checks {SPEC_VERSION}"
        )
