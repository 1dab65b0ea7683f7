"""The consolidation report: applied actions, rejections and deferrals (SPEC §9, CONS-3, CONS-8).

Plain frozen values; ``model_dump`` gives each one's wire form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Action", "ConsolidationReport", "Deferral", "Rejection"]


@dataclass(frozen=True)
class Action:
    """One applied mutation: the records involved, their states before and after, and why.

    ``after[i]`` is the state of ``record_ids[i]`` after the action and
    ``before[i]`` its state before. Records the action created come last in
    ``record_ids`` and have no ``before`` entry (they had no state), so
    ``before`` is shorter than ``record_ids`` exactly by the records created.
    """

    pass_name: str
    action: str
    record_ids: tuple[str, ...]
    before: tuple[str, ...]
    after: tuple[str, ...]
    reason: str

    def model_dump(self) -> dict[str, Any]:
        return {"pass": self.pass_name, "action": self.action,
                "record_ids": list(self.record_ids), "before": list(self.before),
                "after": list(self.after), "reason": self.reason}


@dataclass(frozen=True)
class Rejection:
    """A proposal or verdict the gate refused, with its error class (``error``)."""

    pass_name: str
    detail: str
    error: str

    def model_dump(self) -> dict[str, Any]:
        return {"pass": self.pass_name, "detail": self.detail, "code": self.error}


@dataclass(frozen=True)
class Deferral:
    """A detected pair that could not be acted on in this pass (CONS-8)."""

    pass_name: str
    record_ids: tuple[str, ...]
    reason: str

    def model_dump(self) -> dict[str, Any]:
        return {"pass": self.pass_name, "record_ids": list(self.record_ids),
                "reason": self.reason}


@dataclass(frozen=True)
class ConsolidationReport:
    """What one pass did. ``touched`` (ids written, sorted) is for re-indexing, not the wire."""

    actions: tuple[Action, ...] = ()
    rejections: tuple[Rejection, ...] = ()
    deferred: tuple[Deferral, ...] = ()
    touched: tuple[str, ...] = ()

    def by_pass(self, name: str) -> tuple[Action, ...]:
        """The actions of one sub-pass."""
        return tuple(a for a in self.actions if a.pass_name == name)

    def model_dump(self) -> dict[str, Any]:
        """The wire form: ``{actions, rejections, deferred}``."""
        return {"actions": [a.model_dump() for a in self.actions],
                "rejections": [r.model_dump() for r in self.rejections],
                "deferred": [d.model_dump() for d in self.deferred]}
