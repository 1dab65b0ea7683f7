"""The committed selftest result (docs/assets/selftest-result.json): its currency and its update.

A recorded result is *current* when every fault of the catalogue has a row in every recorded
mode, recorded with the fault's present requirement, profile and description, and no row names
a fault the catalogue no longer has. :func:`staleness` says what is not current (cheaply, without
running anything); :func:`merge` brings a result current from a run of only the stale faults,
so that adding a fault costs a few kit runs instead of the whole catalogue.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from _docgen._common import DocgenError
from memspec.selftest.faults import all_faults
from memspec.selftest.runner import FaultRow, ReferenceRow, SelftestResult

#: How a recorded row is matched to its fault: what a fault says it breaks and does.
_IDENTITY = ("requirement", "profile", "description")


@dataclass(frozen=True)
class CatalogueFault:
    """What the result must record of one fault of the catalogue."""

    name: str
    requirement: str
    profile: str
    description: str


@dataclass(frozen=True)
class Staleness:
    """What a recorded result lacks or holds beyond the catalogue (all empty: current)."""

    #: Catalogue faults without a row in some recorded mode.
    missing: tuple[str, ...]
    #: Faults recorded with another requirement, profile or description than they have now.
    changed: tuple[str, ...]
    #: Recorded faults the catalogue no longer has.
    removed: tuple[str, ...]

    @property
    def current(self) -> bool:
        """Whether the result records exactly the catalogue."""
        return not (self.missing or self.changed or self.removed)

    @property
    def to_run(self) -> tuple[str, ...]:
        """The faults a run must cover to bring the result current."""
        return tuple(sorted({*self.missing, *self.changed}))

    def explain(self) -> list[str]:
        """One line per kind of staleness, naming the faults."""
        out = []
        for what, names in (("not recorded", self.missing),
                            ("recorded with another requirement, profile or description",
                             self.changed),
                            ("recorded but no longer in the catalogue", self.removed)):
            if names:
                out.append(f"{len(names)} {what}: {', '.join(names)}")
        return out


def catalogue() -> list[CatalogueFault]:
    """The faults of ``memspec.selftest``, in catalogue order."""
    return [CatalogueFault(f.name, f.requirement, f.profile, f.description)
            for f in all_faults()]


def _rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    rows = result.get("faults")
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise DocgenError("not a selftest result: faults is not a list of rows")
    return rows


def staleness(result: dict[str, Any], faults: Sequence[CatalogueFault]) -> Staleness:
    """What ``result`` (a selftest result) lacks or holds beyond ``faults``."""
    modes = result.get("modes")
    if not isinstance(modes, list) or not modes:
        raise DocgenError("not a selftest result: no modes")
    recorded: dict[str, list[dict[str, Any]]] = {}
    for row in _rows(result):
        recorded.setdefault(str(row.get("fault")), []).append(row)
    missing, changed = [], []
    for fault in faults:
        rows = recorded.get(fault.name, [])
        if any(tuple(row.get(k) for k in _IDENTITY) != tuple(getattr(fault, k)
                                                              for k in _IDENTITY)
               for row in rows):
            changed.append(fault.name)
        elif {row.get("mode") for row in rows if row.get("claim", "all") == "all"} < set(modes):
            missing.append(fault.name)
    known = {fault.name for fault in faults}
    removed = sorted(name for name in recorded if name not in known)
    return Staleness(tuple(missing), tuple(changed), tuple(removed))


def merge(old: dict[str, Any], new: dict[str, Any],
          faults: Sequence[CatalogueFault]) -> dict[str, Any]:
    """``old`` brought current with ``new``, a run of the stale faults in the same modes.

    Rows of the faults ``new`` ran replace theirs in ``old``, rows of faults the catalogue no
    longer has are dropped, the reference rows are ``new``'s (the kit may have changed since),
    rows are in catalogue order, and the summary is counted again. ``started_at`` stays the
    first recording's, ``finished_at`` is ``new``'s: the span over which the rows were recorded.
    """
    if list(new.get("modes", [])) != list(old.get("modes", [])):
        raise DocgenError(f"the new run's modes {new.get('modes')} are not the recorded ones "
                          f"{old.get('modes')}")
    if bool(new.get("full")) != bool(old.get("full")):
        raise DocgenError("the new run and the recorded result differ in --full")
    rerun = {str(row["fault"]) for row in _rows(new)}
    order = {fault.name: i for i, fault in enumerate(faults)}
    kept = [row for row in _rows(old) if row["fault"] in order and row["fault"] not in rerun]
    rows = sorted([*kept, *_rows(new)],
                  key=lambda r: (order.get(r["fault"], len(order)), r.get("claim", "all") != "all",
                                 list(old["modes"]).index(r["mode"])))
    result = SelftestResult(
        faults=tuple(_fault_row(row) for row in rows),
        references=tuple(_reference_row(row) for row in new["references"]),
        modes=tuple(old["modes"]), full=bool(old["full"]),
        started_at=str(old["started_at"]), finished_at=str(new["finished_at"]))
    return result.to_json()


def _tuple(value: Iterable[Any] | None) -> tuple[str, ...]:
    return tuple(str(v) for v in (value or ()))


def _fault_row(row: dict[str, Any]) -> FaultRow:
    return FaultRow(fault=row["fault"], profile=row["profile"], requirement=row["requirement"],
               description=row["description"], mode=row["mode"], caught=bool(row["caught"]),
               reported=_tuple(row.get("reported")), collateral=_tuple(row.get("collateral")),
               errored=_tuple(row.get("errored")), message=str(row["message"]),
               seconds=float(row.get("seconds", 0.0)), claim=str(row.get("claim", "all")))


def _reference_row(row: dict[str, Any]) -> ReferenceRow:
    return ReferenceRow(mode=row["mode"], passed=bool(row["passed"]), failed=_tuple(row["failed"]),
               errored=_tuple(row["errored"]), verdict=str(row["verdict"]),
               message=str(row["message"]), seconds=float(row.get("seconds", 0.0)))
