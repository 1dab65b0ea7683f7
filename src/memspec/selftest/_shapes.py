"""The shapes many faults share, so that each fault in the ``faults_*`` modules reads as its intent.

Reads of the wrapped engine (:func:`stored`, :func:`history_of`, :func:`all_records`),
argument and answer rewrites (:func:`set_arg`, :func:`drop_arg`, :func:`records_in`,
:func:`map_records`) and transforms for the ways a fault bends an operation:
:func:`then` (do something more after it), :func:`rescue` (answer a rejection
instead of failing), :func:`still_writes` (fail, but write anyway) and
:func:`bypass` (write without the engine's checks). :class:`Watcher` is the
scaffold of a stateful fault that only watches calls and rewrites answers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from typing import Any

from memspec._errors import MemspecError, NotFoundError
from memspec._record import OPTIONAL_FIELDS, RECORD_FIELDS
from memspec.selftest.faults import Fault, Inner, Json, Stateful, Transform, only

__all__ = [
    "DEFINED_FIELDS",
    "ID_PATTERN",
    "Factories",
    "InsertionOrder",
    "Masked",
    "Watcher",
    "all_records",
    "bypass",
    "drop_arg",
    "history_of",
    "map_records",
    "named",
    "proposal_of",
    "propose",
    "put",
    "put_quietly",
    "put_record",
    "records_in",
    "rescue",
    "set_arg",
    "still_writes",
    "stored",
    "then",
]

#: Every record field the format defines (anything else is an extension field).
DEFINED_FIELDS = frozenset(RECORD_FIELDS) | frozenset(OPTIONAL_FIELDS)
#: A well-formed record id.
ID_PATTERN = re.compile(r"mem:[0-9a-f]{32}\Z")


# -- reads and writes through the wrapped engine --------------------------------------------


def stored(inner: Inner, rid: Any) -> Json | None:
    """The latest stored version of ``rid``, or None."""
    try:
        return inner("get", {"id": rid})["record"]  # type: ignore[no-any-return]
    except MemspecError:
        return None


def history_of(inner: Inner, rid: Any) -> list[Json]:
    """Every stored version of ``rid`` (empty when it is not stored)."""
    try:
        return list(inner("history", {"id": rid})["records"])
    except MemspecError:
        return []


def all_records(inner: Inner) -> list[Json]:
    """The latest version of every stored record."""
    return list(inner("iterate", {})["records"])


def put(inner: Inner, record: Json) -> Json:
    """Append ``record`` to the store as it is."""
    return inner("put", {"record": record})


def put_quietly(inner: Inner, record: Json) -> None:
    """Append ``record`` to the store as it is, if the engine lets it."""
    try:
        put(inner, record)
    except MemspecError:
        pass


def propose(inner: Inner, now: Any, kind: str, *, record: Json | None = None,
            target_id: Any = None, other_id: Any = None, reason: str) -> Json:
    """Apply one proposal at ``now``."""
    return inner("apply_proposal", {"now": now, "proposal": {
        "kind": kind, "record": record, "target_id": target_id, "other_id": other_id,
        "reason": reason}})


def put_record(op: str, args: Json) -> Json | None:
    """The record a ``put`` call stores (None for any other call)."""
    record = args.get("record")
    return record if op == "put" and isinstance(record, dict) else None


def proposal_of(args: Json) -> Json:
    """The proposal argument of ``apply_proposal`` ({} when there is none)."""
    proposal = args.get("proposal")
    return proposal if isinstance(proposal, dict) else {}


def named(inner: Inner, proposal: Json, key: str) -> Json | None:
    """The stored record a proposal names under ``key`` (None when absent or unknown)."""
    return stored(inner, proposal.get(key)) if proposal.get(key) else None


# -- arguments and answers -------------------------------------------------------------------


def set_arg(name: str, value: Any) -> Callable[[Json], Json]:
    """Argument rewrite: set ``name`` to ``value``."""

    def change(args: Json) -> Json:
        args[name] = value
        return args

    return change


def drop_arg(name: str, when: Callable[[object], bool] = lambda v: True
             ) -> Callable[[Json], Json]:
    """Argument rewrite: leave out ``name`` (only when ``when(value)``)."""

    def change(args: Json) -> Json:
        if name in args and when(args[name]):
            del args[name]
        return args

    return change


def records_in(result: Json) -> list[Json]:
    """The records a read answered: the one of ``get``, every one of a listing."""
    return [result["record"]] if "record" in result else list(result.get("records", []))


def map_records(result: Json, change: Callable[[Json], Json]) -> Json:
    """A read's answer with ``change`` applied to each record it holds."""
    if "record" in result:
        return {"record": change(result["record"])}
    return {"records": [change(r) for r in result["records"]]}


# -- ways to bend an operation ---------------------------------------------------------------


def then(ops: str | Collection[str], extra: Callable[[Json, Json, Inner], None]) -> Transform:
    """``ops`` run, then ``extra(result, args, inner)`` does something more; the answer stands."""

    def run(op: str, args: Json, inner: Inner) -> Json:
        result = inner(op, args)
        extra(result, args, inner)
        return result

    return only(ops, run)


def rescue(ops: str | Collection[str], code: str,
           answer: Callable[[str, Json, Inner], Json | None]) -> Transform:
    """``ops``, except that a rejection of error class ``code`` is answered by
    ``answer(op, args, inner)`` instead; when that gives None the rejection stands."""

    def run(op: str, args: Json, inner: Inner) -> Json:
        try:
            return inner(op, args)
        except MemspecError as exc:
            if exc.code != code:
                raise
            out = answer(op, args, inner)
            if out is None:
                raise
            return out

    return only(ops, run)


def still_writes(ops: str | Collection[str], write: Callable[[str, Json, Inner], None]
                 ) -> Transform:
    """``ops``, except that a rejected call still ``write``s (its own errors ignored)
    before the rejection is raised."""

    def run(op: str, args: Json, inner: Inner) -> Json:
        try:
            return inner(op, args)
        except MemspecError:
            try:
                write(op, args, inner)
            except MemspecError:
                pass
            raise

    return only(ops, run)


def bypass(ops: str | Collection[str], plan: Callable[[Json, Inner], list[Json] | None]
           ) -> Transform:
    """``ops`` skip the engine when ``plan(args, inner)`` names versions: they are put as
    they are and reported written; when it gives None the engine answers."""

    def run(op: str, args: Json, inner: Inner) -> Json:
        versions = plan(args, inner)
        if versions is None:
            return inner(op, args)
        for version in versions:
            put(inner, version)
        return {"written": versions}

    return only(ops, run)


# -- stateful scaffolds ----------------------------------------------------------------------


class Watcher(Stateful):
    """A stateful fault that lets every call through, ``note``s what it saw, then may
    ``rewrite`` the answer (with ``inner`` at hand for more calls)."""

    def note(self, op: str, args: Json, result: Json) -> None:
        """Remember what the finished call shows (the default remembers nothing)."""

    def rewrite(self, op: str, args: Json, result: Json, inner: Inner) -> Json:
        """The answer the caller gets (the default is the engine's)."""
        return result

    def handle(self, op: str, args: Json, inner: Inner) -> Json:
        result = inner(op, args)
        self.note(op, args, result)
        return self.rewrite(op, args, result, inner)


class InsertionOrder(Watcher):
    """A watcher that numbers record ids in the order they were first put (from 0)."""

    def forget(self) -> None:
        self.order: dict[str, int] = {}

    def first_seen(self, rid: Any) -> None:
        """Number ``rid`` unless it already has a number."""
        self.order.setdefault(str(rid), len(self.order))

    def note(self, op: str, args: Json, result: Json) -> None:
        record = put_record(op, args)
        if record is not None:
            self.first_seen(record.get("id"))


class Masked(Stateful):
    """A stateful fault that hides some of the engine's writes from every read.

    ``act`` answers an operation (by default the engine does); it calls ``hide`` to
    make every version of an id past the first ``keep`` invisible to ``get``,
    ``history``, ``iterate`` and ``list`` (``keep`` 0 hides the record), so that
    from outside the engine never wrote them: the shape of a pass that failed to
    do something the real engine did.
    """

    def forget(self) -> None:
        self.keep: dict[str, int] = {}

    def hide(self, rid: str, keep: int) -> None:
        """Show only the first ``keep`` versions of ``rid`` from now on."""
        self.keep[rid] = min(keep, self.keep.get(rid, keep))

    def act(self, op: str, args: Json, inner: Inner) -> Json:
        """Answer ``op`` (the default passes it to the engine)."""
        return inner(op, args)

    def _visible(self, inner: Inner, rid: str) -> list[Json]:
        return history_of(inner, rid)[: self.keep[rid]]

    def _latest(self, inner: Inner) -> list[Json]:
        out = []
        for record in all_records(inner):
            if record["id"] in self.keep:
                versions = self._visible(inner, record["id"])
                if not versions:
                    continue
                record = versions[-1]
            out.append(record)
        return out

    def handle(self, op: str, args: Json, inner: Inner) -> Json:
        rid = args.get("id")
        if op in ("get", "history") and isinstance(rid, str) and rid in self.keep:
            versions = self._visible(inner, rid)
            if not versions:
                raise NotFoundError(f"no record {rid}")
            return {"record": versions[-1]} if op == "get" else {"records": versions}
        if op in ("iterate", "list") and self.keep:
            inner(op, args)  # the engine still checks the arguments
            records = self._latest(inner)
            if op == "list":
                records = [r for r in records
                           if args.get("state") in (None, r["state"])
                           and args.get("type") in (None, r["type"])
                           and (args.get("tag") is None or args["tag"] in r["tags"])]
            return {"records": records}
        return self.act(op, args, inner)


class Factories:
    """``faulty.<name>``: a zero-argument factory of the reference engine behind one of ``faults``.

    ``-`` in a fault name is spelled ``_``, so that ``--memspec-engine=module:faulty.<name>``
    can point the kit at a faulty engine before its fault is in the catalogue.
    """

    def __init__(self, faults: Collection[Fault], label: str) -> None:
        self._faults = tuple(faults)
        self._label = label

    def __getattr__(self, attribute: str) -> Callable[[], Any]:
        if attribute.startswith("_"):
            raise AttributeError(attribute)
        name = attribute.replace("_", "-")
        fault = next((f for f in self._faults if f.name == name), None)
        if fault is None:
            raise AttributeError(f"no {self._label} fault named {name!r}")

        def build() -> Any:
            from memspec.selftest.engines import FaultyEngine, reference_engine

            return FaultyEngine(reference_engine(), fault)

        build.__name__ = attribute
        return build
