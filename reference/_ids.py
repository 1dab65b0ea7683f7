"""Checks that run before an id or a record reaches a file path, an SQL statement or a query."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from memspec import RecordError, validate_record

if TYPE_CHECKING:
    from memspec.reference.records import MemoryRecord

__all__ = ["ID_PATTERN", "check_record", "check_record_id", "id_hex", "is_record_id"]

#: The only spelling of a record id: ``mem:`` + 32 lowercase hex digits.
ID_PATTERN = re.compile(r"mem:[0-9a-f]{32}")


def is_record_id(value: object) -> bool:
    """True when ``value`` is a well-formed record id."""
    return isinstance(value, str) and ID_PATTERN.fullmatch(value) is not None


def check_record_id(value: object) -> str:
    """Return ``value`` if it is a well-formed record id, else raise RecordError (REC-3)."""
    if not is_record_id(value):
        raise RecordError(
            f"{value!r} is not a record id (mem: + 32 lowercase hex digits)",
            requirement="STORE-10",
        )
    assert isinstance(value, str)
    return value


def id_hex(record_id: object) -> str:
    """The 32 hex digits of a checked record id (safe to use as a path component)."""
    return check_record_id(record_id)[4:]


def check_record(record: object) -> MemoryRecord:
    """Return ``record`` if it is a MemoryRecord whose wire form passes every format rule."""
    from memspec.reference.records import MemoryRecord

    if not isinstance(record, MemoryRecord):
        raise RecordError(f"a store holds MemoryRecord values, not {type(record).__name__}",
                          requirement="STORE-11")
    validate_record(record.model_dump())
    return record
