"""A request's arguments checked once, against ``schemas/protocol.json``, before any operation runs.

Each operation's arguments are the ``<op>.args`` definition of the protocol schema;
the error class of a missing or ill-shaped argument is ``argument_errors`` in the
operation table (``spec/operations.json``, ``spec/extensions.json``). An argument
that is required and absent, or whose value breaks its own schema at the top (a
wrong JSON type, enum, constant or bound), is rejected here with that class. What
a well-shaped value means (a record, a file, a timestamp, a config) is judged by
the operation itself, which names the requirement of the rule it breaks: the
shapes an argument refers to (``$ref``) and the members inside a value are left to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.protocols import Validator

from memspec._errors import MemspecError, error_for_code
from memspec._schemas import SCHEMA_REGISTRY, schema_id
from memspec.data import operations

__all__ = ["check_arguments"]

_SHOWN = 160


@dataclass(frozen=True)
class _Argument:
    name: str
    required: bool
    #: The error class of a request that gets this argument wrong.
    error: str
    #: The argument's own subschema (None: any value, judged by the operation).
    validator: Validator | None


@cache
def _plan(operation: str) -> tuple[_Argument, ...]:
    op = operations()[operation]
    definitions: dict[str, Any] = SCHEMA_REGISTRY.contents(schema_id("protocol"))["$defs"]
    definition: dict[str, Any] = definitions.get(f"{operation}.args", {})
    required = set(definition.get("required", ()))
    properties: dict[str, Any] = definition.get("properties", {})
    plan = []
    for name in op.argument_names:
        # Why without $ref: a referenced shape (a record, a timestamp) is the operation's to
        # judge, with the requirement of the rule it breaks.
        own = {k: v for k, v in properties.get(name, {}).items() if k != "$ref"}
        validator: Validator | None = (
            Draft202012Validator(own, registry=SCHEMA_REGISTRY) if own else None)
        plan.append(_Argument(name, name in required, op.argument_errors[name], validator))
    return tuple(plan)


def _shown(value: str) -> str:
    return value if len(value) <= _SHOWN else value[:_SHOWN] + "..."


def check_arguments(operation: str, arguments: Mapping[str, Any]) -> None:
    """Reject ``arguments`` of ``operation`` with the operation's declared class for the
    first argument, in table order, that is missing or ill-shaped; return when all are fine.
    """
    for argument in _plan(operation):
        if argument.name not in arguments:
            if argument.required:
                raise _rejection(argument, f"missing argument {argument.name!r}")
            continue
        if argument.validator is None:
            continue
        for error in argument.validator.iter_errors(arguments[argument.name]):
            # Why only the top: a member deeper in the value is the operation's to judge.
            if error.absolute_path:
                continue
            raise _rejection(argument, f"argument {argument.name!r}: {_shown(error.message)}")


def _rejection(argument: _Argument, message: str) -> MemspecError:
    return error_for_code(argument.error, message)
