"""Arguments checked once against schemas/protocol.json, with the operation table's classes."""

from __future__ import annotations

from typing import Any

import pytest

from memspec import MemspecError
from memspec._schemas import load_schema
from memspec.data import operations
from memspec.reference._arguments import check_arguments
from memspec.reference.engine import create_engine
from memspec.reference.lifecycle import LIFECYCLE_STEPS

ARGS: dict[str, Any] = {name[: -len(".args")]: definition
                        for name, definition in load_schema("protocol")["$defs"].items()
                        if name.endswith(".args")}


def _code(operation: str, arguments: dict[str, Any]) -> str | None:
    try:
        check_arguments(operation, arguments)
    except MemspecError as exc:
        return exc.code
    return None


def test_every_argument_has_a_declared_class_and_the_schema_agrees() -> None:
    for name, op in operations().items():
        assert set(op.argument_errors) == set(op.argument_names), name
        definition = ARGS[name]
        assert set(definition.get("properties", {})) <= set(op.argument_names), name
        required = set(definition.get("required", ()))
        assert required == set(op.argument_names) - op.optional_arguments, name


#: Values of the right top-level shape for the arguments whose schema constrains it.
_WELL_SHAPED: dict[str, Any] = {
    "changes": {}, "slots": {}, "extra": {}, "config": {}, "records": [], "proposals": [],
    "missing": [], "evidence": [], "tags": [], "k": 1, "budget_tokens": 0,
    "require_signature": False, "verify": False, "include_history": False,
    "include_archived": False, "operation": "archive", "protocol": "memspec-engine/1",
}


def _required(operation: str) -> dict[str, Any]:
    op = operations()[operation]
    return {n: _WELL_SHAPED.get(n, "x") for n in op.argument_names
            if n not in op.optional_arguments}


@pytest.mark.parametrize("operation", list(operations()))
def test_a_missing_argument_gets_its_declared_class(operation: str) -> None:
    op = operations()[operation]
    given = _required(operation)
    assert _code(operation, given) is None, "the well-shaped request is rejected"
    for name in given:
        code = _code(operation, {k: v for k, v in given.items() if k != name})
        assert code == op.argument_errors[name], f"{operation} without {name}: {code}"


@pytest.mark.parametrize("operation", list(operations()))
def test_an_ill_shaped_argument_gets_its_declared_class(operation: str) -> None:
    op = operations()[operation]
    props: dict[str, Any] = ARGS[operation].get("properties", {})
    given = _required(operation)
    for name in op.argument_names:
        declared = props.get(name, {}).get("type")
        if declared is None:
            continue
        types = [declared] if isinstance(declared, str) else declared
        wrong: Any = 12.5 if "string" in types else "not-this-type"
        code = _code(operation, {**given, name: wrong})
        assert code == op.argument_errors[name], f"{operation} with {name}={wrong!r}: {code}"
    # Members deeper in a value, and shapes behind a $ref, are the operation's to judge.
    if "now" in given:
        assert _code(operation, {**given, "now": "yesterday"}) is None


def test_the_engine_rejects_before_any_write() -> None:
    engine = create_engine()
    with pytest.raises(MemspecError) as caught:
        engine.call("put", {"record": {}, "extra_argument": True})
    assert caught.value.code == "record"
    with pytest.raises(MemspecError) as caught:
        engine.call("search", {"query": "x", "k": -1})
    assert caught.value.code == "limit" and "minimum" in caught.value.message
    with pytest.raises(MemspecError) as caught:
        engine.call("resolve", {"winner_id": "mem:a", "loser_id": "mem:b", "reason": 7,
                                "now": "2026-01-01T00:00:00.000Z"})
    assert caught.value.code == "lifecycle"
    assert list(engine.call("iterate", {})["records"]) == []


def test_the_lifecycle_dispatch_table_is_the_schema_enum() -> None:
    enum = ARGS["lifecycle"]["properties"]["operation"]["enum"]
    assert list(LIFECYCLE_STEPS) == enum
