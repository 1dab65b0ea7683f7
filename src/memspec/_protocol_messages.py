"""The process protocol's messages: encoding, responses, error codes and schema checks.

Shared by both ends of :mod:`memspec.protocol` (the server and the kit's client).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from memspec._errors import ERROR_CLASSES, MemspecError
from memspec.engine import PROTOCOL_VERSION, SPEC_VERSION

__all__ = [
    "INTERNAL",
    "PROTOCOL",
    "PROTOCOL_SCHEMA_ID",
    "REQUIREMENT_KEYWORD",
    "WIRE_ERROR_CODES",
    "EngineFault",
    "ResultProblem",
    "check_handshake",
    "check_result",
    "decode_message",
    "encode_message",
    "error_response",
    "hello_args",
    "ok_response",
    "result_problems",
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


#: Attributes the kit's ``$ref`` sets on a validation error: the requirement found for
#: it, and how much of its schema path was already searched.
_REQ_ATTR = "_memspec_requirement"
_SEARCHED_ATTR = "_memspec_searched"


def _innermost_requirement(schema: Any, path: Sequence[object]) -> str | None:
    """The last ``x-memspec-requirement`` met walking ``path`` down from ``schema``."""
    node, found = schema, None
    for step in (*path, None):
        if isinstance(node, dict) and isinstance(node.get(REQUIREMENT_KEYWORD), str):
            found = node[REQUIREMENT_KEYWORD]
        if step is None:
            break
        if isinstance(node, dict):
            node = node.get(str(step))
        elif isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            node = node[step]
        else:
            break
    return found


def _attribute(errors: Any, target: Any) -> Any:
    """Pass ``errors`` (those of one ``$ref``, whose resolved schema is ``target``) on, each
    with the requirement of the innermost annotated subschema it broke."""
    for error in errors:
        path = list(error.relative_schema_path)
        searched = getattr(error, _SEARCHED_ATTR, 0)
        if getattr(error, _REQ_ATTR, None) is None and target is not None:
            setattr(error, _REQ_ATTR,
                    _innermost_requirement(target, path[: len(path) - searched]))
        # Validation leaves $ref out of schema paths: what a nested $ref searched is the
        # tail of the path; the rest belongs to this $ref's schema.
        setattr(error, _SEARCHED_ATTR, len(path))
        yield error


@cache
def _validator_class() -> Any:
    from jsonschema import Draft202012Validator
    from jsonschema.validators import extend

    plain_ref = Draft202012Validator.VALIDATORS["$ref"]

    def target_of(validator: Any, ref: str) -> Any:
        try:
            return validator._resolver.lookup(ref).contents
        except Exception:  # an unresolvable $ref is reported by plain_ref itself
            return None

    def memo_ref(validator: Any, ref: str, instance: Any, schema: Any) -> Any:
        if ref.rsplit("/", 1)[-1] != _RECORD_SCHEMA_FILE or not isinstance(instance, dict):
            yield from _attribute(plain_ref(validator, ref, instance, schema),
                                  target_of(validator, ref))
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
        yield from _attribute(errors, target_of(validator, ref))

    return extend(Draft202012Validator, {"$ref": memo_ref})  # type: ignore[no-untyped-call]


@cache
def _validator(definition: str) -> Any:
    from memspec._schemas import SCHEMA_REGISTRY
    from memspec.data import operations

    defs = (SCHEMA_REGISTRY.contents(PROTOCOL_SCHEMA_ID).get("$defs", {})
            if PROTOCOL_SCHEMA_ID in SCHEMA_REGISTRY else {})
    if definition not in defs:
        operation = definition.rsplit(".", 1)[0]
        if operation in operations() or definition == "hello.result":
            # Fail closed: a known operation whose shape is missing is a broken install or a
            # kit bug, never a reason to accept whatever the engine answered.
            raise MemspecError(f"kit bug: schemas/protocol.json has no $defs/{definition}")
        return None  # an operation the spec does not have: there is no shape to hold it to
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


#: The annotation keyword (unknown to JSON Schema, so ignored by validation) that names
#: the requirement a subschema expresses: a result that breaks the subschema breaks it.
REQUIREMENT_KEYWORD = "x-memspec-requirement"


@dataclass(frozen=True)
class ResultProblem:
    """One place where a result breaks its schema, and the requirement that defines it."""

    #: The requirement of the nearest annotated subschema on the way to the broken keyword
    #: (``x-memspec-requirement``), or None where the schemas name none.
    requirement: str | None
    #: The JSON pointer of the offending value in the result.
    pointer: str
    message: str
    #: The schema keyword that failed (``required``, ``type``, ``pattern``...).
    keyword: str = ""


def result_problems(operation: str, result: Any) -> tuple[ResultProblem, ...]:
    """Every place ``result`` breaks ``<operation>.result`` in protocol.json (one per value),
    each with the requirement the schemas attribute it to."""
    validator = _validator(f"{operation}.result")
    if validator is None:
        return ()
    from jsonschema.exceptions import best_match

    problems: dict[str, ResultProblem] = {}
    for error in validator.iter_errors(result):
        detail = best_match([error]) or error
        pointer = _pointer(list(detail.absolute_path)) or "/"
        if pointer not in problems:
            own = detail.schema.get(REQUIREMENT_KEYWORD) if isinstance(detail.schema,
                                                                       dict) else None
            requirement = (own if isinstance(own, str) else None) or getattr(
                detail, _REQ_ATTR, None) or getattr(error, _REQ_ATTR, None)
            problems[pointer] = ResultProblem(requirement, pointer, shorten(detail.message, 300),
                                              str(detail.validator))
    return tuple(problems.values())


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
