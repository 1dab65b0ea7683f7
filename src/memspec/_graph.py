"""Checks across a set of records: what no single record can tell about itself."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from memspec._canonical import DEFAULT_LIMITS, Limits
from memspec._errors import MemspecError
from memspec._record import validate_record
from memspec.data import legality

__all__ = ["Problem", "check_records", "first_problems"]

_LIVE = legality().live_states


@dataclass(frozen=True)
class Problem:
    """One rule a record (or a pair of records) breaks, and where."""

    index: int
    record_id: str | None
    pointer: str
    requirement: str | None
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "record_id": self.record_id,
            "pointer": self.pointer,
            "requirement": self.requirement,
            "message": self.message,
        }


def check_records(records: Iterable[Any], limits: Limits = DEFAULT_LIMITS) -> list[Problem]:
    """Every per-record and cross-record problem in ``records`` (latest versions, one per id).

    Cross-record rules: a record id appears once; transition partners carry the
    same block; a successor's ``supersedes`` is answered by the predecessor's
    ``superseded_by``; every ``superseded_by`` names a record in the set; a rule's
    flag agrees with its evidence when all of that evidence is in the set.
    """
    return first_problems(records, limits, limit=None)[0]


def first_problems(records: Iterable[Any], limits: Limits = DEFAULT_LIMITS, *,
                   limit: int | None) -> tuple[list[Problem], int]:
    """The first ``limit`` problems of :func:`check_records` (all when None) in its order,
    and how many there are in all; only O(limit) problems are held at any time."""
    kept = _Kept(limit)
    valid: dict[str, tuple[int, dict[str, Any]]] = {}
    for index, record in enumerate(records):
        if not isinstance(record, dict) and kept.beyond(index):
            kept.total += 1  # certainly a problem (REC-1), certainly not among the first
            continue
        try:
            validate_record(record, limits)
        except MemspecError as exc:
            rid = record.get("id") if isinstance(record, dict) else None
            kept.add(Problem(index, rid if isinstance(rid, str) else None,
                             exc.pointer or "", exc.requirement, exc.message))
            continue
        if record["id"] in valid:
            kept.add(Problem(index, record["id"], "/id", "FILE-4",
                             f"record id {record['id']} appears twice"))
            continue
        valid[record["id"]] = (index, record)
    for rid, (index, record) in valid.items():
        for problem in _links(index, rid, record, valid):
            kept.add(problem)
    return kept.result()


def _order(problem: Problem) -> tuple[int, str, str]:
    return (problem.index, problem.pointer, problem.message)


class _Kept:
    """The first ``limit`` problems seen so far in :func:`_order`, and how many were seen."""

    def __init__(self, limit: int | None) -> None:
        self.limit, self.total = limit, 0
        self.items: list[Problem] = []
        self.worst: tuple[int, str, str] | None = None

    def beyond(self, index: int) -> bool:
        """True when any problem at ``index`` sorts after every one kept (so is not kept)."""
        return self.worst is not None and index > self.worst[0]

    def add(self, problem: Problem) -> None:
        self.total += 1
        if self.worst is not None and _order(problem) >= self.worst:
            return
        self.items.append(problem)
        if self.limit is not None and len(self.items) >= 2 * self.limit + 64:
            self.items.sort(key=_order)
            del self.items[self.limit:]
            self.worst = _order(self.items[-1]) if self.limit else (-1, "", "")

    def result(self) -> tuple[list[Problem], int]:
        self.items.sort(key=_order)
        return (self.items if self.limit is None else self.items[:self.limit]), self.total


def _links(
    index: int, rid: str, record: dict[str, Any], valid: dict[str, tuple[int, dict[str, Any]]]
) -> list[Problem]:
    out: list[Problem] = []
    block = record["transition"]
    if block is not None:
        (partner_id,) = [side for side in block["sides"] if side != rid]
        partner = valid.get(partner_id)
        if partner is None:
            out.append(Problem(index, rid, "/transition/sides", "TRN-3",
                               f"transition partner {partner_id} is not in the set"))
        elif partner[1]["transition"] != block:
            out.append(Problem(index, rid, "/transition", "TRN-3",
                               f"transition partner {partner_id} does not carry the same block"))
    predecessor_id = record["supersedes"]
    if predecessor_id is not None and predecessor_id in valid:
        predecessor = valid[predecessor_id][1]
        if predecessor["superseded_by"] != rid:
            out.append(Problem(index, rid, "/supersedes", "SUP-2",
                               f"{rid} supersedes {predecessor_id}, whose superseded_by is "
                               f"{predecessor['superseded_by']!r} instead of {rid}"))
    successor_id = record["superseded_by"]
    if successor_id is not None and successor_id not in valid:
        out.append(Problem(index, rid, "/superseded_by", "SUP-1",
                           f"successor {successor_id} is not in the set"))
    if record["type"] == "rule" and all(e in valid for e in record["evidence"]):
        live = any(valid[e][1]["state"] in _LIVE for e in record["evidence"])
        if live and record["flagged"]:
            out.append(Problem(index, rid, "/flagged", "RULE-3",
                               "rule is flagged although some of its evidence is live"))
        if not live and not record["flagged"] and record["state"] != "archived":
            out.append(Problem(index, rid, "/flagged", "RULE-2",
                               "rule is not flagged although none of its evidence is live"))
    return out
