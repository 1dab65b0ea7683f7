"""Faults of XEXT-4: an engine that skips the extension field rules on one of its entry points.

A working engine applies the field rules of the extension profiles it claims (XEXP-1,
XPROV-1, XFALS-1) wherever it takes in a record (spec/EXTENSIONS.md section X1). These
faults leave ``put`` and ``validate_record`` correct and break only ``ingest`` or ``load``,
so the kit must test those entry points to catch them. ``faulty.<name>`` (``-`` spelled
``_``) builds the reference engine behind one of them, so the kit can be pointed at it before
the faults are registered in :func:`memspec.selftest.faults.all_faults`.
"""

from __future__ import annotations

from typing import Any

from memspec._errors import RecordError
from memspec.selftest._shapes import Factories
from memspec.selftest.faults import Fault, Inner, Json, error_code, only

__all__ = ["EXTENSION_INGEST_FAULTS", "faulty"]


def _plain(record: Json) -> Json:
    return {k: v for k, v in record.items() if not k.startswith("x_")}


def _breaks_only_extension_rules(record: object, inner: Inner) -> bool:
    """Whether ``record`` is rejected with class record and is valid without its x_ fields."""
    if not isinstance(record, dict) or not any(str(k).startswith("x_") for k in record):
        return False
    rejected = error_code(lambda: inner("validate_record", {"record": record})) == "record"
    return rejected and error_code(
        lambda: inner("validate_record", {"record": _plain(record)})) is None


def _ingest_unchecked(op: str, args: Json, inner: Inner) -> Json:
    # Why strip the fields: the engine then admits (or dedups) the proposal as if it were fine.
    proposals = args.get("proposals")
    if not isinstance(proposals, list):
        return inner(op, args)
    changed: list[Any] = []
    for item in proposals:
        if isinstance(item, dict) and _breaks_only_extension_rules(item.get("record"), inner):
            item = {**item, "record": _plain(item["record"])}
        changed.append(item)
    return inner(op, {**args, "proposals": changed})


def _load_as_record_error(op: str, args: Json, inner: Inner) -> Json:
    memory_file = args.get("file")
    records = memory_file.get("records") if isinstance(memory_file, dict) else None
    if isinstance(records, list):
        for position, record in enumerate(records):
            if _breaks_only_extension_rules(record, inner):
                raise RecordError(f"record {position} breaks an extension field rule")
    return inner(op, args)


EXTENSION_INGEST_FAULTS: tuple[Fault, ...] = (
    Fault("ingest-skips-extension-rules", "XEXT-4", "format",
          "ingest drops malformed extension fields and admits the record instead of "
          "rejecting it", only("ingest", _ingest_unchecked)),
    Fault("load-extension-rule-as-record", "XEXT-4", "format",
          "load rejects a file holding a malformed extension field with class record, "
          "not file", only("load", _load_as_record_error)),
)


#: Factories of the faulty engines of this module, by fault name (``-`` spelled ``_``).
faulty = Factories(EXTENSION_INGEST_FAULTS, "XEXT-4")
