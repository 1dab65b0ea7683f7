"""Faults of the store and search profiles: the append-only port and the search index."""

from __future__ import annotations

import fnmatch
import itertools
import re

from memspec._errors import EncodingError
from memspec.selftest._shapes import (
    DEFINED_FIELDS,
    Watcher,
    all_records,
    drop_arg,
    history_of,
    map_records,
    put_record,
    rescue,
    then,
)
from memspec.selftest.faults import (
    Fault,
    Inner,
    Json,
    Stateful,
    after,
    before,
    only,
    repair,
    tombstone_of,
)
from memspec.selftest.faults_records import wire_confidence

__all__ = ["FAULTS", "history_of"]

_READS = ("get", "history", "list", "iterate")
_SYNTAX = re.compile(r"[\"*()^:{}\\%_-]|\b(?:AND|OR|NOT|NEAR)\b")


class _PutOverwrites(Stateful):
    """put of a stored id replaces its latest version (as far as anyone can see)."""

    def forget(self) -> None:
        self.hidden: dict[str, set[int]] = {}

    def handle(self, op: str, args: Json, inner: Inner) -> Json:
        record = put_record(op, args)
        if record is not None:
            earlier = len(history_of(inner, record.get("id")))
            result = inner(op, args)
            if earlier:
                self.hidden.setdefault(str(record["id"]), set()).add(earlier - 1)
            return {"version": result["version"] - len(self.hidden.get(str(record["id"]), ()))}
        result = inner(op, args)
        hide = self.hidden.get(str(args.get("id")), set()) if op == "history" else set()
        if hide:
            result = {"records": [r for i, r in enumerate(result["records"]) if i not in hide]}
        return result


class _ArchivedPutCompacts(Watcher):
    """put of an archived version drops every earlier version of that record."""

    def forget(self) -> None:
        self.cut: dict[str, int] = {}

    def note(self, op: str, args: Json, result: Json) -> None:
        record = put_record(op, args)
        if record is not None and record.get("state") == "archived":
            self.cut[str(record["id"])] = int(result["version"]) - 1

    def rewrite(self, op: str, args: Json, result: Json, inner: Inner) -> Json:
        if op == "history" and args.get("id") in self.cut:
            return {"records": result["records"][self.cut[str(args["id"])]:]}
        return result


def _newest_first(result: Json, args: Json) -> Json:
    return {"records": result["records"][::-1]}


def _oldest(op: str, args: Json, inner: Inner) -> Json:
    return {"record": inner("history", args)["records"][0]}


def _strip_extensions(record: Json) -> Json:
    return {k: v for k, v in record.items() if k in DEFINED_FIELDS}


def _drop_extensions(result: Json, args: Json) -> Json:
    return map_records(result, _strip_extensions)


def _wildcards(op: str, args: Json, inner: Inner) -> Json:
    rid = args.get("id")
    if isinstance(rid, str) and ("*" in rid or "%" in rid):
        pattern = rid.replace("%", "*")
        ids = [r["id"] for r in all_records(inner)]
        match = next((i for i in ids if fnmatch.fnmatchcase(i, pattern)), None)
        if match is not None:
            return inner(op, {**args, "id": match})
    return inner(op, args)


def _one_more(args: Json) -> Json:
    k = args.get("k")
    if isinstance(k, int) and not isinstance(k, bool) and k >= 0:
        args["k"] = k + 1
    return args


def _unnormalized(result: Json, args: Json) -> Json:
    if any(result["vector"]):
        result["vector"] = [2 * x for x in result["vector"]]
    return result


def _syntax_errors(op: str, args: Json, inner: Inner) -> Json:
    query = args.get("query")
    if isinstance(query, str) and _SYNTAX.search(query):
        raise EncodingError(f"fts5: syntax error in query {query!r}")
    return inner(op, args)


def _non_match_first(op: str, args: Json, inner: Inner) -> Json:
    result = inner(op, args)
    candidates, k = result["candidates"], args.get("k")
    if not candidates or not isinstance(k, int) or k < 1:
        return result
    matches = {c["id"] for c in inner(op, {**args, "k": 10**6})["candidates"]}
    others = sorted(r["id"] for r in all_records(inner) if r["id"] not in matches)
    if not others:
        return result
    top = {"id": others[0], "score": candidates[0]["score"] + 0.001}
    return {"candidates": [top, *candidates][:k]}


class _TiesAlternate(Watcher):
    """Asked the same query again, search lists equal-score candidates in reverse order."""

    def forget(self) -> None:
        self.asked: dict[str, int] = {}

    def note(self, op: str, args: Json, result: Json) -> None:
        if op == "search":
            query = str(args.get("query"))
            self.asked[query] = self.asked.get(query, 0) + 1

    def rewrite(self, op: str, args: Json, result: Json, inner: Inner) -> Json:
        if op != "search" or self.asked[str(args.get("query"))] % 2:
            return result
        groups = itertools.groupby(result["candidates"], key=lambda c: c["score"])
        return {"candidates": [c for _, group in groups for c in list(group)[::-1]]}


def _not_indexed(result: Json, args: Json, inner: Inner) -> None:
    for record in result["written"]:
        versions = history_of(inner, record["id"])
        previous = versions[-2] if len(versions) > 1 else None
        inner("index", {"record": previous or tombstone_of(record, "unindexed",
                                                           record["updated_at"])})


FAULTS = (
    Fault("put-overwrites", "STORE-1", "store",
          "put of a stored id replaces its latest version instead of appending",
          _PutOverwrites()),
    Fault("history-newest-first", "STORE-2", "store",
          "history lists the versions newest first", after("history", _newest_first)),
    Fault("get-returns-oldest", "STORE-3", "store",
          "get returns the first version, not the latest", only("get", _oldest)),
    Fault("unknown-id-answers-empty", "STORE-4", "store",
          "history of an unknown id answers an empty list instead of not-found",
          rescue("history", "not-found", lambda op, args, inner: {"records": []})),
    Fault("list-ignores-tag-filter", "STORE-5", "store",
          "list ignores the tag filter", before("list", drop_arg("tag"))),
    Fault("archived-put-compacts-history", "STORE-6", "store",
          "putting an archived version deletes the record's earlier versions",
          _ArchivedPutCompacts()),
    Fault("store-drops-extension-fields", "STORE-8", "store",
          "records come back from the store without their extension fields",
          after(_READS, _drop_extensions)),
    Fault("wildcard-id-matches", "STORE-10", "store",
          "an id holding * or % reaches the backend as a pattern and matches a record",
          only(("get", "history"), _wildcards)),
    Fault("put-accepts-float-confidence", "STORE-11", "store",
          "put converts a numeric confidence instead of rejecting the record",
          repair("put", wire_confidence)),
    Fault("search-returns-more-than-k", "SRCH-1", "search",
          "search returns k + 1 candidates", before("search", _one_more)),
    Fault("embedder-not-normalized", "SRCH-2", "search",
          "the default embedder's vectors have length 2, not 1", after("embed", _unnormalized)),
    Fault("query-syntax-interpreted", "SRCH-3", "search",
          "query text reaches the full-text engine as syntax (quotes, *, AND ... fail)",
          only("search", _syntax_errors)),
    Fault("search-ranks-non-match-first", "SRCH-4", "search",
          "search puts a record that does not match the query first",
          only("search", _non_match_first)),
    Fault("search-ties-alternate", "SRCH-5", "search",
          "equal-score candidates come in reverse order every other time a query is asked",
          _TiesAlternate()),
    Fault("proposals-not-indexed", "SRCH-6", "search",
          "records written by apply_proposal never reach the search index",
          then("apply_proposal", _not_indexed)),
)
