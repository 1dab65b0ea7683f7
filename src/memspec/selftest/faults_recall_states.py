"""Recall faults that only lifecycle-awkward data shows: broken pairs, superseded
records under ``include_archived``, partners that also match, partial reinforcement."""

from __future__ import annotations

import math
from typing import Any

from memspec.selftest._shapes import stored
from memspec.selftest.faults import Fault, Inner, Json, Stateful, after, only

__all__ = ["FAULTS"]


def _tokens(record: Json) -> int:
    return max(1, math.ceil(len(record["body"]) / 4))


def _entry(record: Json, score: float, reasons: list[str]) -> Json:
    return {"record": record, "score": score, "tokens": _tokens(record), "reasons": reasons}


def _other_side(record: Json) -> Any:
    sides = record["transition"]["sides"]
    return sides[1] if sides[0] == record["id"] else sides[0]


def _shown_transitional_matches(args: Json, result: Json, inner: Inner) -> list[Json]:
    """Stored transitional records matching the query that the answer left out."""
    shown = {e["record"]["id"] for e in result["records"]}
    hits = inner("search", {"query": args.get("query"), "k": 32})["candidates"]
    out = []
    for hit in hits:
        record = stored(inner, hit["id"])
        if (hit["score"] > 0 and record is not None and record["state"] == "transitional"
                and record["transition"] is not None and record["id"] not in shown):
            out.append(record)
    return out


def _add(result: Json, entries: list[Json]) -> Json:
    floor = min((e["score"] for e in result["records"]), default=1.0)
    for entry in entries:
        entry["score"] = floor
    records = result["records"] + entries
    records.sort(key=lambda e: (-e["score"], e["record"]["id"]))
    return {"records": records, "total_tokens": sum(e["tokens"] for e in records)}


def _lone_sides(op: str, args: Json, inner: Inner) -> Json:
    """A unit whose partner is missing or no longer transitional is shown as the side alone."""
    result = inner(op, args)
    lone = []
    for record in _shown_transitional_matches(args, result, inner):
        partner = stored(inner, _other_side(record))
        if partner is None or partner["state"] != "transitional":
            lone.append(_entry(record, 0.0, ["query-match"]))
    return _add(result, lone)


def _archived_partners(op: str, args: Json, inner: Inner) -> Json:
    """The partner is fetched by id with no state check: an archived one comes along."""
    result = inner(op, args)
    pairs = []
    for record in _shown_transitional_matches(args, result, inner):
        partner = stored(inner, _other_side(record))
        if partner is not None and partner["state"] == "archived":
            pairs += [_entry(record, 0.0, ["query-match"]),
                      _entry(partner, 0.0, ["transition-partner"])]
    return _add(result, pairs)


def _superseded_as_archived(op: str, args: Json, inner: Inner) -> Json:
    """include_archived admits every retired state, superseded included."""
    if not args.get("include_archived") or args.get("include_history"):
        return inner(op, args)
    result = inner(op, {**args, "include_history": True})
    records = [e for e in result["records"] if e["reasons"] != ["predecessor"]]
    return {"records": records, "total_tokens": sum(e["tokens"] for e in records)}


def _partner_reason_only(result: Json, args: Json) -> Json:
    for entry in result["records"]:
        if "transition-partner" in entry["reasons"]:
            entry["reasons"] = ["transition-partner"]
    return result


class _TouchesMatchesOnly(Stateful):
    """Recall reinforces only the query matches, never partners or predecessors."""

    def forget(self) -> None:
        self.missed: dict[str, int] = {}

    def handle(self, op: str, args: Json, inner: Inner) -> Json:
        result = inner(op, args)
        if op == "recall":
            for entry in result["records"]:
                if "query-match" not in entry["reasons"]:
                    rid = entry["record"]["id"]
                    self.missed[rid] = self.missed.get(rid, 0) + 1
        elif op == "touch":
            return {"count": result["count"] - self.missed.get(str(args.get("id")), 0)}
        return result


def _aged_or_signed_only(record: Any) -> bool:
    """A record that is newborn in every way but its updated_at or its signature."""
    return (isinstance(record, dict) and record.get("state") == "active"
            and record.get("supersedes") is None and record.get("superseded_by") is None
            and record.get("transition") is None and record.get("flagged") is False
            and (record.get("updated_at") != record.get("created_at")
                 or record.get("signed_by") is not None))


def _admit_aged(op: str, args: Json, inner: Inner) -> Json:
    """The write stage checks lifecycle links and flags but not updated_at or signatures."""
    report = inner(op, args)
    given = args.get("proposals")
    proposals: list[Any] = given if isinstance(given, list) else []
    rejected = []
    admitted: list[tuple[int, str]] = []
    for entry in report["rejected"]:
        proposal = proposals[entry["index"]] if entry["index"] < len(proposals) else None
        record = proposal.get("record") if isinstance(proposal, dict) else None
        if entry["code"] == "proposal" and isinstance(record, dict) \
                and _aged_or_signed_only(record) \
                and stored(inner, record["id"]) is None:
            inner("put", {"record": record})
            admitted.append((entry["index"], record["id"]))
        else:
            rejected.append(entry)
    if not admitted:
        return report
    def position(rid: str) -> int:
        return next((i for i, p in enumerate(proposals) if isinstance(p, dict)
                     and isinstance(p.get("record"), dict) and p["record"].get("id") == rid),
                    len(proposals))

    merged = sorted([(position(rid), rid) for rid in report["accepted"]] + admitted)
    return {**report, "accepted": [rid for _, rid in merged], "rejected": rejected}


FAULTS = (
    Fault("recall-shows-lone-side", "RCL-5", "recall",
          "a transitional match whose partner is missing or no longer transitional is shown "
          "alone", only("recall", _lone_sides)),
    Fault("recall-pulls-archived-partner", "RCL-8", "recall",
          "a transition partner is fetched with no state check, so an archived one is shown",
          only("recall", _archived_partners)),
    Fault("include-archived-admits-superseded", "RCL-6", "recall",
          "include_archived also admits superseded records as direct candidates",
          only("recall", _superseded_as_archived)),
    Fault("partner-loses-query-match", "RCL-11", "recall",
          "a transition partner that also matches the query is marked transition-partner only",
          after("recall", _partner_reason_only)),
    Fault("ingest-admits-aged-records", "WR-3", "write",
          "the write stage admits a record whose updated_at differs from created_at, or that is "
          "signed", only("ingest", _admit_aged)),
    Fault("recall-touches-matches-only", "RCL-14", "recall",
          "recall reinforces only its query matches, not the partners and predecessors it "
          "returns", _TouchesMatchesOnly()),
)
