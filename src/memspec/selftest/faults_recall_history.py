"""Recall faults of the include_history walk and of the budget (section 13, steps 4 and 5).

Each is a realistic shortcut of a recall written from the spec that a chain of one
link, or a budget every candidate fits into, would never show: a walk that stops
at the first predecessor the state filters exclude, a walk of one link, a walk
that follows ``superseded_by`` backwards, a walk that fails at a dangling link,
a selection that stops at the first unit that does not fit, and a repeated recall
that reinforces nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from memspec._errors import NotFoundError
from memspec.selftest._shapes import all_records, stored
from memspec.selftest.faults import Fault, Inner, Json, Stateful, after, only

__all__ = ["FAULTS"]

_BIG = 10**9
_PREDECESSOR_ONLY = ["predecessor"]


def _ids(result: Json) -> set[str]:
    return {str(e["record"]["id"]) for e in result["records"]}


def _totalled(entries: list[Json]) -> Json:
    return {"records": entries, "total_tokens": sum(e["tokens"] for e in entries)}


def _reached(result: Json, depth: int | None) -> set[str]:
    """Ids reached from the entries that are not predecessors alone, walking ``supersedes``
    through returned records only, at most ``depth`` links (None: no limit)."""
    by_id = {str(e["record"]["id"]): e["record"] for e in result["records"]}
    reached: set[str] = set()
    for entry in result["records"]:
        if entry["reasons"] == _PREDECESSOR_ONLY:
            continue
        link, steps = entry["record"].get("supersedes"), 0
        while isinstance(link, str) and link in by_id and link not in reached \
                and (depth is None or steps < depth):
            reached.add(link)
            link, steps = by_id[link].get("supersedes"), steps + 1
    return reached


def _cut_walk(depth: int | None) -> Callable[[Json, Json], Json]:
    """Keep only the predecessors a walk that ``depth`` bounds, or that ends at the first
    record it does not return, would have reached."""

    def run(result: Json, args: Json) -> Json:
        if not args.get("include_history"):
            return result
        reached = _reached(result, depth)
        return _totalled([e for e in result["records"]
                          if e["reasons"] != _PREDECESSOR_ONLY
                          or str(e["record"]["id"]) in reached])

    return run


def _tokens(record: Json) -> int:
    return max(1, math.ceil(len(record["body"]) / 4))


def _superseded_by_as_link(op: str, args: Json, inner: Inner) -> Json:
    """The walk also takes every record whose ``superseded_by`` names a returned record
    (a resolution's loser included) for one of its predecessors."""
    result = inner(op, args)
    if not args.get("include_history"):
        return result
    shown = {str(e["record"]["id"]): e for e in result["records"]}
    added: list[Json] = []
    for record in all_records(inner):
        puller = shown.get(str(record.get("superseded_by")))
        if record["state"] == "superseded" and puller is not None \
                and record["id"] not in shown and puller["reasons"] != _PREDECESSOR_ONLY:
            added.append({"record": record, "score": puller["score"],
                          "tokens": _tokens(record), "reasons": list(_PREDECESSOR_ONLY)})
    entries = sorted([*result["records"], *added],
                     key=lambda e: (-e["score"], e["record"]["id"]))
    return _totalled(entries)


def _dangling_link_fails(op: str, args: Json, inner: Inner) -> Json:
    """The walk fetches every link and fails with not-found at one the store does not hold."""
    result = inner(op, args)
    if not args.get("include_history"):
        return result
    for entry in result["records"]:
        link, seen = entry["record"].get("supersedes"), set()
        while isinstance(link, str) and link not in seen:
            seen.add(link)
            record = stored(inner, link)
            if record is None:
                raise NotFoundError(f"no record {link} in the store")
            link = record.get("supersedes")
    return result


def _skipped_candidates(args: Json, result: Json, inner: Inner) -> bool:
    """Whether a stored active query match was left out of the answer."""
    shown = _ids(result)
    hits = inner("search", {"query": args.get("query"), "k": 32})["candidates"]
    return any(hit["score"] > 0 and hit["id"] not in shown
               and (stored(inner, hit["id"]) or {}).get("state") == "active" for hit in hits)


def _stop_at_first_misfit(op: str, args: Json, inner: Inner) -> Json:
    """The selection stops at the first unit that does not fit instead of skipping it."""
    result = inner(op, args)
    if not isinstance(args.get("budget_tokens"), int) or not _skipped_candidates(args, result,
                                                                               inner):
        return result
    shown = _ids(result)
    ranked = inner(op, {**args, "budget_tokens": _BIG})["records"]
    stop = next((i for i, e in enumerate(ranked) if e["record"]["id"] not in shown),
                len(ranked))
    before = {str(e["record"]["id"]) for e in ranked[:stop]}
    return _totalled([e for e in result["records"] if e["record"]["id"] in before])


class _RepeatNotReinforced(Stateful):
    """A cache of the last answer per query serves a repeated recall without touching what
    it returns again (the second of two recalls in a row reinforces nothing)."""

    def forget(self) -> None:
        self.answered: set[str] = set()
        self.missed: dict[str, int] = {}

    def handle(self, op: str, args: Json, inner: Inner) -> Json:
        result = inner(op, args)
        if op == "recall":
            key = repr(sorted((k, repr(v)) for k, v in args.items() if k != "now"))
            if key in self.answered:
                for entry in result["records"]:
                    rid = str(entry["record"]["id"])
                    self.missed[rid] = self.missed.get(rid, 0) + 1
            self.answered.add(key)
        elif op == "touch":
            return {"count": result["count"] - self.missed.get(str(args.get("id")), 0)}
        return result


FAULTS = (
    Fault("history-stops-at-excluded", "RCL-7", "recall",
          "the include_history walk ends at the first predecessor the state filters exclude "
          "instead of passing over it", after("recall", _cut_walk(None))),
    Fault("history-walks-one-link", "RCL-7", "recall",
          "include_history surfaces only the record each included record names in supersedes, "
          "not the chain behind it", after("recall", _cut_walk(1))),
    Fault("history-follows-superseded-by", "RCL-7", "recall",
          "include_history also surfaces records whose superseded_by names an included record "
          "(a resolution's loser), though no supersedes link leads to them",
          only("recall", _superseded_by_as_link)),
    Fault("history-fails-at-dangling-link", "RCL-7", "recall",
          "recall with include_history fails with not-found when a supersedes chain reaches "
          "an id the store does not hold", only("recall", _dangling_link_fails)),
    Fault("budget-stops-at-first-misfit", "RCL-9", "recall",
          "the budget selection stops at the first record that does not fit, so smaller "
          "records after it are never included", only("recall", _stop_at_first_misfit)),
    Fault("repeat-recall-not-reinforced", "RCL-14", "recall",
          "the second of two identical recalls in a row is answered from a cache and touches "
          "nothing", _RepeatNotReinforced()),
)
