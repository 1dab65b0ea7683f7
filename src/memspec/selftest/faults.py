"""Faults: named, single-requirement breakages of a working engine, as data.

A :class:`Fault` names the one requirement it breaks and carries a
*transform* at the operation level, ``transform(op, args, inner) -> result``:
it may change the request, change the response, call ``inner`` several
times, or answer by itself. Because it only ever speaks operations, the
same fault wraps an in-process engine and an engine process alike
(:mod:`memspec.selftest.engines`, :mod:`memspec.selftest.proxy`).

Faults that need memory (a delete that really deletes, an order that depends
on insertion) subclass :class:`Stateful`: every engine gets a fresh copy, and
``reset`` empties it. The catalogue of faults lives in the ``faults_*``
modules; :func:`all_faults` gathers them.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from memspec._errors import MemspecError
from memspec._record import birth_digest, record_id
from memspec.data import tombstone

__all__ = [
    "Fault",
    "Inner",
    "Json",
    "Stateful",
    "Transform",
    "UnknownFaultError",
    "after",
    "all_faults",
    "before",
    "error_code",
    "evolve",
    "fault_named",
    "fix_record",
    "only",
    "per_op",
    "phantom_id",
    "repair",
    "tombstone_of",
]

Json = dict[str, Any]
#: The wrapped engine's operation call.
Inner = Callable[[str, Json], Json]
#: A fault's behaviour: answer ``op`` with ``args``, using ``inner`` as it likes.
Transform = Callable[[str, Json, Inner], Json]


@dataclass(frozen=True)
class Fault:
    """One deliberate bug: it breaks ``requirement`` (of ``profile``) and nothing else but
    ``also``."""

    name: str
    requirement: str
    profile: str
    description: str
    transform: Transform
    #: Requirements the bug genuinely breaks too (its docstring says why): reported failing,
    #: they are not collateral.
    also: tuple[str, ...] = ()

    def bind(self) -> Transform:
        """The transform for one new engine (stateful faults get a fresh memory)."""
        if isinstance(self.transform, Stateful):
            return self.transform.fresh()
        return self.transform


class Stateful:
    """A transform with memory: ``handle`` does the work; after a ``reset`` it forgets."""

    def __init__(self) -> None:
        self.forget()

    def fresh(self) -> Stateful:
        """A new, empty copy for another engine."""
        return type(self)()

    def forget(self) -> None:
        """Drop what was remembered (called on construction and on every reset)."""

    def handle(self, op: str, args: Json, inner: Inner) -> Json:
        """Answer one operation (the default passes it through)."""
        return inner(op, args)

    def __call__(self, op: str, args: Json, inner: Inner) -> Json:
        result = self.handle(op, args, inner)
        if op == "reset":
            self.forget()
        return result


# -- small combinators: most faults are one of these around a few lines of logic ---------


def _ops(ops: str | Collection[str]) -> frozenset[str]:
    return frozenset({ops} if isinstance(ops, str) else ops)


def only(ops: str | Collection[str], transform: Transform) -> Transform:
    """``transform`` for the operations ``ops``; every other operation passes through."""
    wanted = _ops(ops)

    def run(op: str, args: Json, inner: Inner) -> Json:
        return transform(op, args, inner) if op in wanted else inner(op, args)

    return run


def per_op(table: dict[str, Transform]) -> Transform:
    """A different transform per operation; operations not in ``table`` pass through."""

    def run(op: str, args: Json, inner: Inner) -> Json:
        transform = table.get(op)
        return transform(op, args, inner) if transform is not None else inner(op, args)

    return run


def before(ops: str | Collection[str], change: Callable[[Json], Json]) -> Transform:
    """Rewrite the arguments of ``ops`` (a copy) before the engine sees them."""

    def run(op: str, args: Json, inner: Inner) -> Json:
        return inner(op, change(copy.deepcopy(args)))

    return only(ops, run)


def after(ops: str | Collection[str], change: Callable[[Json, Json], Json]) -> Transform:
    """Rewrite the result of ``ops``: ``change(result copy, args)``."""

    def run(op: str, args: Json, inner: Inner) -> Json:
        return change(copy.deepcopy(inner(op, args)), args)

    return only(ops, run)


def error_code(call: Callable[[], Any]) -> str | None:
    """The error class ``call`` fails with, or None when it succeeds."""
    try:
        call()
    except MemspecError as exc:
        return str(exc.code)
    return None


# -- record helpers -----------------------------------------------------------------------


def phantom_id(seed: str) -> str:
    """A well-formed record id no real record carries."""
    return "mem:" + hashlib.sha256(f"memspec-selftest:{seed}".encode()).hexdigest()[:32]


def _addressed(record: Json) -> bool:
    try:
        return bool(record_id(record) == record.get("id"))
    except MemspecError:
        return True


def fix_record(record: Json, change: Callable[[Json], None]) -> Json:
    """A copy of ``record`` with ``change`` applied.

    When the record's id was its content address before the change, it is
    recomputed after it, so the change is all that differs (a stale id stays
    stale: that is another fault's business).
    """
    out = copy.deepcopy(record)
    addressed = _addressed(record)
    change(out)
    if addressed and "birth_digest" not in out:
        try:
            out["id"] = record_id(out)
        except MemspecError:
            pass
    return out


def repair(ops: str | Collection[str], change: Callable[[Json], None],
           field: str = "record") -> Transform:
    """Quietly "repair" the ``field`` record argument of ``ops`` instead of rejecting it."""

    def fix(args: Json) -> Json:
        if isinstance(args.get(field), dict):
            args[field] = fix_record(args[field], change)
        return args

    return before(ops, fix)


def evolve(record: Json, now: str, **changes: Any) -> Json:
    """A new lifecycle version: ``changes`` applied, ``updated_at = now``, signature cleared."""
    out = copy.deepcopy(record)
    out.update(updated_at=max(now, out.get("updated_at", now)), signed_by=None, signature="")
    out.update(copy.deepcopy(changes))
    return out


def tombstone_of(record: Json, reason: str, now: str) -> Json:
    """The redaction tombstone of ``record`` (what a correct engine would store)."""
    out = {**copy.deepcopy(record), **tombstone().fixed_values(),
           "updated_at": max(now, record["updated_at"]), "transition": None, "flagged": False,
           "flag_reason": None, "state_reason": reason, "redacted": True,
           "redaction_reason": reason,
           "birth_digest": record.get("birth_digest") or birth_digest(record)}
    for name in tombstone().absent:
        out.pop(name, None)
    return out


# -- the catalogue ------------------------------------------------------------------------


@cache
def all_faults() -> tuple[Fault, ...]:
    """Every fault, in catalogue order (format first, core last)."""
    from memspec.selftest import (
        faults_consolidation,
        faults_data,
        faults_ext,
        faults_ext_ingest,
        faults_files,
        faults_format,
        faults_headers,
        faults_lifecycle,
        faults_passes,
        faults_recall,
        faults_recall_history,
        faults_recall_states,
        faults_records,
        faults_report_ids,
        faults_signing,
        faults_store,
        faults_verdicts,
    )

    modules: Iterable[Any] = (faults_format, faults_records, faults_signing, faults_lifecycle,
                              faults_store, faults_recall, faults_consolidation, faults_files,
                              faults_data, faults_recall_states, faults_recall_history,
                              faults_passes, faults_report_ids, faults_headers,
                              faults_verdicts)
    extensions: tuple[Fault, ...] = (tuple(faults_ext.EXTENSION_FAULTS)
                                     + tuple(faults_ext_ingest.EXTENSION_INGEST_FAULTS))
    return tuple(fault for module in modules for fault in module.FAULTS) + extensions


class UnknownFaultError(LookupError):
    """A fault name that is not in the catalogue."""


def fault_named(name: str) -> Fault:
    """The fault called ``name``; UnknownFaultError (listing the valid names) otherwise."""
    for fault in all_faults():
        if fault.name == name:
            return fault
    raise UnknownFaultError(f"no fault named {name!r}; known faults: "
                            + ", ".join(f.name for f in all_faults()))
