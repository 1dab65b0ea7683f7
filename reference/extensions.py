"""The reference engine's extension profiles (spec/EXTENSIONS.md).

Field checks for ``x_expires_at``, ``x_observed_at``, ``x_derivation`` and
``x_falsifiable``; the predicates recall and decay consult (expired,
unattributable, hypothesis); the view of the store as of a past instant; and
the extension operations ``observe``, ``falsify`` and ``audit``. Every write
here goes through :meth:`MemoryRecord.evolve` or the lifecycle functions, so a
new version always has ``updated_at = now`` and no signature.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memspec import LifecycleError, MemspecError, RecordError, check_timestamp, is_reason
from memspec._audit import audit_digest, build_report
from memspec.reference import lifecycle
from memspec.reference._ids import is_record_id
from memspec.reference.ports import RecordStore, list_filters, record_matches
from memspec.reference.records import MemoryRecord, RecordState

__all__ = [
    "DERIVATION",
    "EXPIRES_AT",
    "FALSIFIABLE",
    "FALSIFIABLE_TAGS",
    "MARKS",
    "OBSERVED_AT",
    "audit",
    "check_fields",
    "expiry_reason",
    "falsify",
    "is_expired",
    "is_hypothesis",
    "is_unattributable",
    "marks",
    "observe",
    "version_as_of",
    "view_as_of",
]

EXPIRES_AT = "x_expires_at"
OBSERVED_AT = "x_observed_at"
DERIVATION = "x_derivation"
FALSIFIABLE = "x_falsifiable"
FALSIFIABLE_TAGS = ("temporal", "paradigm", "architectural", "observational")
#: Recall marks, in the order an entry lists them (X1.1).
MARKS = ("expired", "unattributable", "hypothesis")
_LIVE = frozenset({RecordState.ACTIVE, RecordState.TRANSITIONAL})


def _extra(record: MemoryRecord | Mapping[str, Any]) -> Mapping[str, Any]:
    return record.extra if isinstance(record, MemoryRecord) else record


def _is_reason(value: object) -> bool:
    return is_reason(value)


def _timestamp(value: object, name: str, requirement: str) -> str:
    try:
        return check_timestamp(value, field=name)
    except MemspecError as exc:
        raise RecordError(f"{name} is not a canonical timestamp: {exc.message}",
                          pointer=f"/{name}", requirement=requirement) from exc


def _check_derivation(value: object, own_id: str) -> None:
    def bad(why: str) -> RecordError:
        return RecordError(f"x_derivation {why}", pointer="/x_derivation",
                           requirement="XPROV-1")

    if not isinstance(value, dict) or set(value) != {"hops", "from"}:
        raise bad("must be an object with exactly hops and from")
    hops, sources = value["hops"], value["from"]
    if isinstance(hops, bool) or not isinstance(hops, int) or hops < 0:
        raise bad("hops must be an integer, 0 or more")
    if not isinstance(sources, list) or not all(is_record_id(s) for s in sources):
        raise bad("from must be an array of record ids")
    if len(set(sources)) != len(sources) or own_id in sources:
        raise bad("from must hold distinct ids other than the record's own")
    if (hops == 0) != (not sources):
        raise bad("from must be empty exactly when hops is 0")


def check_fields(record: MemoryRecord) -> MemoryRecord:
    """``record`` unchanged if its extension fields are well formed; RecordError otherwise."""
    extra = record.extra
    if EXPIRES_AT in extra:
        _timestamp(extra[EXPIRES_AT], EXPIRES_AT, "XEXP-1")
    if OBSERVED_AT in extra:
        observed = _timestamp(extra[OBSERVED_AT], OBSERVED_AT, "XPROV-1")
        if not record.created_at <= observed <= record.updated_at:
            raise RecordError("x_observed_at must lie between created_at and updated_at",
                              pointer="/x_observed_at", requirement="XPROV-1")
    if DERIVATION in extra:
        _check_derivation(extra[DERIVATION], record.id)
    if FALSIFIABLE in extra:
        value = extra[FALSIFIABLE]
        if (not isinstance(value, dict) or set(value) != {"tag", "condition"}
                or value["tag"] not in FALSIFIABLE_TAGS or not _is_reason(value["condition"])):
            raise RecordError("x_falsifiable must be {tag, condition} with a known tag and a "
                              "condition that is a reason", pointer="/x_falsifiable",
                              requirement="XFALS-1")
    return record


def check_wire(data: object) -> None:
    """Check the extension fields of a wire record (other faults are left to the core)."""
    if isinstance(data, dict):
        check_fields(MemoryRecord.model_validate(data))


# -- predicates ----------------------------------------------------------------------------


def is_expired(record: MemoryRecord, at: str) -> bool:
    """Whether ``record`` carries an expiry not later than ``at`` (XEXP)."""
    expires = record.extra.get(EXPIRES_AT)
    return isinstance(expires, str) and expires <= at


def is_unattributable(record: MemoryRecord) -> bool:
    """Derived (hops > 0) and never observed (XPROV-2)."""
    derivation = record.extra.get(DERIVATION)
    hops = derivation.get("hops", 0) if isinstance(derivation, dict) else 0
    return isinstance(hops, int) and hops > 0 and OBSERVED_AT not in record.extra


def is_hypothesis(record: MemoryRecord) -> bool:
    """No source reference and never observed (XHYP-1)."""
    return record.provenance.ref is None and OBSERVED_AT not in record.extra


def marks(record: MemoryRecord, at: str) -> tuple[str, ...]:
    """The recall marks of ``record`` when judged at ``at``, in MARKS order."""
    found = {"expired": is_expired(record, at), "unattributable": is_unattributable(record),
             "hypothesis": is_hypothesis(record)}
    return tuple(name for name in MARKS if found[name])


def expiry_reason(record: MemoryRecord) -> str:
    """The state_reason of an archival for expiry (XEXP-4)."""
    return f"expired: x_expires_at {record.extra.get(EXPIRES_AT)} has passed"


# -- time travel -----------------------------------------------------------------------------


def version_as_of(store: RecordStore, record_id: str, as_of: str) -> MemoryRecord | None:
    """The last-written version of ``record_id`` with updated_at <= ``as_of``, or None."""
    found = None
    for version in store.history(record_id):
        if version.updated_at <= as_of:
            found = version
    return found


def view_as_of(store: RecordStore, as_of: str, *, state: str | None = None,
               type: str | None = None, tag: str | None = None) -> tuple[MemoryRecord, ...]:
    """The view as of ``as_of`` (XTT-1), filtered, in ascending id order."""
    filters = list_filters(state, type, tag)
    out = []
    for record_id in sorted(store.ids()):
        version = version_as_of(store, record_id, as_of)
        if version is not None and record_matches(version, *filters):
            out.append(version)
    return tuple(out)


# -- operations ------------------------------------------------------------------------------


def _not_before(record: MemoryRecord, now: str, requirement: str) -> None:
    if now < record.updated_at:
        raise LifecycleError(f"now {now} is earlier than the record's updated_at "
                             f"{record.updated_at}", requirement=requirement)


def observe(store: RecordStore, record_id: str, now: str) -> MemoryRecord:
    """Write and return one lifecycle-neutral version with x_observed_at = now (XPROV-3)."""
    check_timestamp(now, field="now")
    record = store.get(record_id)
    if record.state not in _LIVE:
        raise LifecycleError(f"only a live record can be observed, not a {record.state.value} "
                             "one", requirement="XPROV-4")
    _not_before(record, now, "XPROV-4")
    version = record.evolve(now, extra={**record.extra, OBSERVED_AT: now})
    store.put(version)
    return version


def falsify(store: RecordStore, record_id: str, reason: object, now: str) -> MemoryRecord:
    """Archive a falsifiable active record with the reason (XFALS-2); write and return it."""
    check_timestamp(now, field="now")
    record = store.get(record_id)
    spec = record.extra.get(FALSIFIABLE)
    if not isinstance(spec, dict):
        raise LifecycleError(f"{record_id} carries no x_falsifiable", requirement="XFALS-3")
    if record.state is not RecordState.ACTIVE:
        raise LifecycleError(f"only an active record can be falsified, not a "
                             f"{record.state.value} one", requirement="XFALS-3")
    if not _is_reason(reason):
        raise LifecycleError("falsify needs a reason", requirement="XFALS-3")
    _not_before(record, now, "XFALS-3")
    version = lifecycle.archive(record, reason=f"falsified ({spec['tag']}): {reason}", now=now)
    store.put(version)
    return version


def audit(store: RecordStore) -> dict[str, Any]:
    """``{report, digest}`` of the store as it is (XAUD)."""
    histories = {rid: [v.model_dump() for v in store.history(rid)] for rid in store.ids()}
    report = build_report(histories)
    return {"report": report, "digest": audit_digest(report)}
