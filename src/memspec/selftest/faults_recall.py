"""Faults of the recall and write profiles: scoring, pairs, budgets, reasons, ingestion."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import datetime
from typing import Any

from memspec._errors import MemspecError
from memspec._record import record_id
from memspec.selftest._shapes import (
    InsertionOrder,
    Watcher,
    put,
    put_quietly,
    set_arg,
    stored,
    then,
)
from memspec.selftest.faults import Fault, Inner, Json, after, before, evolve, fix_record, only

__all__ = ["FAULTS"]

_BIG = 10**9


def _rerank(result: Json) -> Json:
    """Entries by score (descending), then id; total_tokens made to match."""
    entries = sorted(result["records"], key=lambda e: (-e["score"], e["record"]["id"]))
    return {"records": entries, "total_tokens": sum(e["tokens"] for e in entries)}


def _rescore(factor: Callable[[Json, Json], float]) -> Callable[[Json, Json], Json]:
    """A recall fault multiplying each entry's score by ``factor(entry, args)``."""

    def run(result: Json, args: Json) -> Json:
        for entry in result["records"]:
            entry["score"] = entry["score"] * factor(entry, args)
        return _rerank(result)

    return run


def _without_confidence(entry: Json, args: Json) -> float:
    confidence = float(entry["record"]["confidence"])
    return 1 / confidence if confidence > 0 else 1.0


def _transitional_boost(entry: Json, args: Json) -> float:
    return 4.0 if entry["record"]["state"] == "transitional" else 1.0


def _days(a: str, b: str) -> float:
    parse = "%Y-%m-%dT%H:%M:%S.%fZ"
    return (datetime.strptime(b, parse) - datetime.strptime(a, parse)).total_seconds() / 86400


def _erase_old(entry: Json, args: Json) -> float:
    return 0.0 if _days(entry["record"]["updated_at"], str(args.get("now"))) > 3650 else 1.0


class _TouchLowers(Watcher):
    """Each touch divides the record's recall score (reinforcement that punishes)."""

    def forget(self) -> None:
        self.touches: dict[str, int] = {}

    def note(self, op: str, args: Json, result: Json) -> None:
        if op == "touch":
            self.touches[str(args.get("id"))] = self.touches.get(str(args.get("id")), 0) + 1

    def rewrite(self, op: str, args: Json, result: Json, inner: Inner) -> Json:
        if op == "recall":
            return _rescore(lambda e, _: 1 / (1 + self.touches.get(e["record"]["id"], 0)))(
                copy.deepcopy(result), args)
        return result


def _drop_partners(result: Json, args: Json) -> Json:
    result["records"] = [e for e in result["records"]
                         if e["reasons"] != ["transition-partner"]]
    return _rerank(result)


def _relabel(old: str, new: str) -> Callable[[Json, Json], Json]:
    def run(result: Json, args: Json) -> Json:
        for entry in result["records"]:
            entry["reasons"] = list(dict.fromkeys(new if r == old else r
                                                  for r in entry["reasons"]))
        return result
    return run


def _whole_recall(inner: Inner, args: Json) -> list[Json]:
    return list(inner("recall", {**args, "budget_tokens": _BIG})["records"])


def _truncate_to_fit(op: str, args: Json, inner: Inner) -> Json:
    result = inner(op, args)
    budget = args.get("budget_tokens")
    left = budget - result["total_tokens"] if isinstance(budget, int) else 0
    shown = {e["record"]["id"] for e in result["records"]}
    for entry in _whole_recall(inner, args) if left > 0 else []:
        if entry["record"]["id"] not in shown and entry["record"]["state"] != "transitional":
            entry["record"]["body"] = entry["record"]["body"][: left * 4]
            entry["tokens"] = left
            result["records"].append(entry)
            result["total_tokens"] += left
            break
    return result


class _InsertionOrderTies(InsertionOrder):
    """Equal scores are ordered by when the record was put, not by id."""

    def rewrite(self, op: str, args: Json, result: Json, inner: Inner) -> Json:
        if op == "recall":
            return dict(result, records=sorted(
                result["records"], key=lambda e: (-e["score"],
                                                  self.order.get(e["record"]["id"], _BIG))))
        return result


def _at_least_one(op: str, args: Json, inner: Inner) -> Json:
    result = inner(op, args)
    if result["records"]:
        return result
    for entry in _whole_recall(inner, args):
        if entry["record"]["state"] != "transitional":
            return {"records": [entry], "total_tokens": entry["tokens"]}
    return result


def _recall_writes(result: Json, args: Json, inner: Inner) -> None:
    if result["records"]:
        record = result["records"][0]["record"]
        put_quietly(inner, evolve(record, str(args.get("now"))))


# -- the write stage -----------------------------------------------------------------------


#: Takes care of one extracted proposal itself (True) or leaves it to the engine (False).
Taker = Callable[[Json, Inner, Json], bool]


def _taken(take: Taker, proposal: Any, inner: Inner, args: Json) -> bool:
    if not isinstance(proposal, dict) or not isinstance(proposal.get("record"), dict):
        return False
    try:
        return take(proposal, inner, args)
    except MemspecError:
        return False


def _ingest_also(take: Taker) -> Callable[[str, Json, Inner], Json]:
    """ingest, except that the proposals ``take`` writes itself are reported accepted."""

    def run(op: str, args: Json, inner: Inner) -> Json:
        proposals = args.get("proposals")
        if not isinstance(proposals, list):
            return inner(op, args)
        mine: list[str] = []
        rest: list[int] = []
        for index, proposal in enumerate(proposals):
            if _taken(take, proposal, inner, args):
                mine.append(str(proposal["record"]["id"]))
            else:
                rest.append(index)
        report = inner(op, {**args, "proposals": [proposals[i] for i in rest]})
        for entry in report["rejected"]:
            entry["index"] = rest[entry["index"]]
        report["accepted"] = [*report["accepted"], *mine]
        return report

    return run


def _applies_supersede(proposal: Json, inner: Inner, args: Json) -> bool:
    if proposal.get("kind") != "supersede":
        return False
    inner("apply_proposal", {"proposal": proposal, "now": args.get("now")})
    return True


def _creates_rule(proposal: Json, inner: Inner, args: Json) -> bool:
    if proposal.get("kind") != "create" or proposal["record"].get("type") != "rule":
        return False
    inner("apply_proposal", {"proposal": proposal, "now": args.get("now")})
    return True


def _stores_linked(proposal: Json, inner: Inner, args: Json) -> bool:
    if proposal.get("kind") != "create" or proposal["record"].get("supersedes") is None:
        return False
    put(inner, proposal["record"])
    return True


def _rewrite_known(op: str, args: Json, inner: Inner) -> Json:
    for proposal in args.get("proposals") or []:
        record = proposal.get("record") if isinstance(proposal, dict) else None
        if isinstance(record, dict) and stored(inner, record.get("id")) is not None:
            put_quietly(inner, record)
    return inner(op, args)


def _ingest_then_write(op: str, args: Json, inner: Inner) -> Json:
    result = inner(op, args)
    proposals = args.get("proposals") or []
    for entry in result["rejected"]:
        proposal = proposals[entry["index"]]
        record = proposal.get("record") if isinstance(proposal, dict) else None
        if isinstance(record, dict) and proposal.get("kind") == "create":
            put_quietly(inner, fix_record(record, _readdress))
    return result


def _readdress(record: Json) -> None:
    try:
        record["id"] = record_id(record)
    except MemspecError:
        pass


_R = "recall"

FAULTS = (
    Fault("score-ignores-confidence", "RCL-1", "recall",
          "recall leaves confidence out of the score", after(_R, _rescore(_without_confidence))),
    Fault("transitional-outranks-active", "RCL-2", "recall",
          "transitional records weigh more than active ones",
          after(_R, _rescore(_transitional_boost))),
    Fault("old-records-erased", "RCL-3", "recall",
          "recency falls to zero for records idle over ten years",
          after(_R, _rescore(_erase_old))),
    Fault("touch-lowers-score", "RCL-4", "recall",
          "each touch lowers the record's recall score", _TouchLowers()),
    Fault("one-side-of-dispute", "RCL-5", "recall",
          "recall leaves out the transition partner of an included record",
          after(_R, _drop_partners)),
    Fault("recall-includes-superseded", "RCL-6", "recall",
          "recall includes superseded records by default",
          before(_R, set_arg("include_history", True))),
    Fault("predecessor-reason-missing", "RCL-7", "recall",
          "predecessors surfaced by include_history are marked query-match",
          after(_R, _relabel("predecessor", "query-match"))),
    Fault("recall-includes-archived", "RCL-8", "recall",
          "recall includes archived records by default",
          before(_R, set_arg("include_archived", True))),
    Fault("recall-truncates-body", "RCL-9", "recall",
          "recall truncates the body of a record that does not fit into the rest of the "
          "budget", only(_R, _truncate_to_fit)),
    Fault("ties-by-insertion-order", "RCL-10", "recall",
          "equal recall scores are ordered by insertion, not by record id",
          _InsertionOrderTies()),
    Fault("query-match-reason-missing", "RCL-11", "recall",
          "records matching the query are marked transition-partner, never query-match",
          after(_R, _relabel("query-match", "transition-partner"))),
    Fault("recall-exceeds-budget", "RCL-12", "recall",
          "recall always returns the best record, even when it does not fit the budget",
          only(_R, _at_least_one)),
    Fault("recall-writes-a-version", "RCL-13", "recall",
          "recall writes a new version of the best record (a 'last recalled' touch)",
          then(_R, _recall_writes)),
    Fault("ingest-accepts-supersede", "WR-1", "write",
          "the write stage applies supersede proposals", only("ingest",
                                                              _ingest_also(_applies_supersede))),
    Fault("ingest-accepts-rule", "WR-2", "write",
          "the write stage creates rules", only("ingest", _ingest_also(_creates_rule))),
    Fault("ingest-accepts-linked-record", "WR-3", "write",
          "the write stage stores an extracted record that already supersedes another",
          only("ingest", _ingest_also(_stores_linked))),
    Fault("ingest-rewrites-dedup", "WR-4", "write",
          "a proposal of a stored id is written again before being reported deduplicated",
          only("ingest", _rewrite_known)),
    Fault("rejected-proposal-still-writes", "WR-5", "write",
          "a create rejected for a stale id is still stored under its corrected id",
          only("ingest", _ingest_then_write)),
)
