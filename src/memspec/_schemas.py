"""memspec's JSON Schemas (Draft 2020-12): one offline registry and cached validators.

Every schema ships as package data under ``memspec.schemas`` (``schemas/*.json``
and ``schemas/vectors/*.json``). At import they are read once, crawled into a
single :class:`referencing.Registry` keyed by their ``$id``
(``https://memspec.dev/schemas/<name>.json``), and every cross-file ``$ref``
resolves against that registry: the network is never consulted.

A schema is named by its ``$id``, by its path below ``schemas/`` with or
without ``.json`` (``"record"``, ``"vectors/records.json"``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any

from jsonschema.exceptions import ValidationError, best_match, relevance
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for as _validator_class_for
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from memspec._errors import FileError, MemspecError, ProposalError, RecordError

__all__ = [
    "SCHEMA_BASE",
    "SCHEMA_REGISTRY",
    "iter_errors",
    "load_schema",
    "schema_id",
    "schema_names",
    "validate",
    "validator_for",
]

#: The URI every memspec schema ``$id`` starts with.
SCHEMA_BASE = "https://memspec.dev/schemas/"
_PACKAGE = "memspec.schemas"
_ERRORS: dict[str, type[MemspecError]] = {
    "record": RecordError,
    "memory-file": FileError,
    "proposal": ProposalError,
}


def _walk(folder: Traversable, prefix: str = "") -> Iterator[tuple[str, Traversable]]:
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.startswith((".", "_")):
            continue
        if entry.is_dir():
            yield from _walk(entry, f"{prefix}{entry.name}/")
        elif entry.name.endswith(".json"):
            yield f"{prefix}{entry.name[: -len('.json')]}", entry


def _load_resources() -> tuple[dict[str, str], list[Resource[Any]]]:
    names: dict[str, str] = {}
    resources: list[Resource[Any]] = []
    for name, entry in _walk(files(_PACKAGE)):
        contents = json.loads(entry.read_text(encoding="utf-8"))
        expected = f"{SCHEMA_BASE}{name}.json"
        if not isinstance(contents, dict) or contents.get("$id") != expected:
            raise MemspecError(f"schema {name}.json must declare $id {expected!r}")
        resources.append(Resource.from_contents(contents, default_specification=DRAFT202012))
        names[name] = expected
    return names, resources


_NAMES, _RESOURCES = _load_resources()

#: Every memspec schema, crawled: ``SCHEMA_REGISTRY.contents(uri)`` gives a schema by ``$id``.
SCHEMA_REGISTRY: Registry[Any] = (_RESOURCES @ Registry()).crawl()


def schema_names() -> list[str]:
    """The names of every shipped schema (``"record"``, ``"vectors/records"``, ...), sorted."""
    return sorted(_NAMES)


def schema_id(name_or_id: str) -> str:
    """The ``$id`` of a schema given its name, file name or ``$id``; MemspecError if unknown."""
    if not isinstance(name_or_id, str):
        raise MemspecError(f"a schema is named by a string, not {type(name_or_id).__name__}")
    name = name_or_id.removeprefix(SCHEMA_BASE).removesuffix(".json")
    if name not in _NAMES:
        raise MemspecError(f"no memspec schema named {name_or_id!r}")
    return _NAMES[name]


def load_schema(name_or_id: str) -> dict[str, Any]:
    """The contents of a schema (shared: callers must not mutate it)."""
    contents: dict[str, Any] = SCHEMA_REGISTRY.contents(schema_id(name_or_id))
    return contents


@cache
def _validator(uri: str) -> Validator:
    schema = SCHEMA_REGISTRY.contents(uri)
    cls = _validator_class_for(schema)
    validator: Validator = cls(schema, registry=SCHEMA_REGISTRY)
    return validator


def validator_for(name_or_id: str) -> Validator:
    """The jsonschema validator of a memspec schema, built once and reused."""
    return _validator(schema_id(name_or_id))


def _pointer(error: ValidationError) -> str:
    return "".join(
        "/" + str(part).replace("~", "~0").replace("/", "~1") for part in error.absolute_path
    )


def iter_errors(instance: Any, schema: str) -> list[tuple[str, str]]:
    """Every problem of ``instance`` under ``schema`` as (JSON pointer, message).

    One entry per failing top-level keyword, narrowed (like :func:`validate`)
    to its most relevant cause inside ``anyOf``/``oneOf``; the most relevant
    problem comes first, so it is the one :func:`validate` reports. An empty
    list means the instance is valid.
    """
    errors = sorted(validator_for(schema).iter_errors(instance), key=relevance, reverse=True)
    out = []
    for error in errors:
        best = best_match([error]) or error
        out.append((_pointer(best), best.message))
    return out


def validate(instance: Any, schema: str) -> None:
    """Raise a typed MemspecError for the best-matching problem of ``instance``, if any.

    The error's ``pointer`` is the JSON pointer of that problem and its text
    (``str(error)``, the protocol message) names it. The error type follows
    the schema: RecordError for ``record``, FileError for ``memory-file``,
    ProposalError for ``proposal``, MemspecError otherwise.
    """
    uri = schema_id(schema)
    error = best_match(validator_for(uri).iter_errors(instance))
    if error is None:
        return
    name = uri.removeprefix(SCHEMA_BASE).removesuffix(".json")
    pointer = _pointer(error)
    cls = _ERRORS.get(name, MemspecError)
    # MemspecError.__str__ appends " at <pointer>", so the wire message names it once.
    raise cls(f"{name}.json: {error.message}", pointer=pointer or None)
