"""Faults that friendly test data lets through: the store bugs adversarial data exposes.

Each is a realistic bug of a store written from the spec that records born at
one instant, short histories, distinct-looking ids and tags, or one filter at a
time would never show: ordering by birth time, version names compared as text,
case-folded ids, substring tag matches, a dropped filter, an overwrite keyed by
``updated_at``, an ``occurred_at`` that a later version may change.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from memspec._errors import EncodingError, MemspecError, RecordError, SignatureError
from memspec._file import sign_file
from memspec._signing import SigningKey
from memspec.selftest._shapes import put_record, records_in, rescue
from memspec.selftest.faults import Fault, Inner, Json, Stateful, after, before, only

__all__ = ["FAULTS"]

_LISTINGS = ("iterate", "list")
_ANY_CASE_ID = re.compile(r"(?i)mem:[0-9a-f]{32}\Z")


def _by_birth(result: Json, args: Json) -> Json:
    result["records"] = sorted(result["records"], key=lambda r: (r["created_at"], r["id"]))
    return result


def _export_by_birth(result: Json, args: Json) -> Json:
    file = result["file"]
    file["records"] = sorted(file["records"], key=lambda r: (r["created_at"], r["id"]))
    seed = args.get("seed_hex")
    if isinstance(seed, str):  # the bug is the order, not the signature: sign what is sent
        file = sign_file({**file, "signature": ""}, SigningKey(bytes.fromhex(seed)))
    return {"file": file}


def _unpadded_names(result: Json, args: Json) -> Json:
    versions = result["records"]
    order = sorted(range(len(versions)), key=lambda i: str(i + 1))
    result["records"] = [versions[i] for i in order]
    return result


def _fold_case(args: Json) -> Json:
    rid = args.get("id")
    if isinstance(rid, str) and _ANY_CASE_ID.match(rid):
        args["id"] = rid.lower()
    return args


def _substring_tags(op: str, args: Json, inner: Inner) -> Json:
    tag = args.get("tag")
    if not isinstance(tag, str):
        return inner(op, args)
    rest = {k: v for k, v in args.items() if k != "tag"}
    records = inner(op, rest)["records"]
    return {"records": [r for r in records if any(tag in t for t in r["tags"])]}


def _drop_state_with_type(args: Json) -> Json:
    if args.get("type") is not None and args.get("state") is not None:
        del args["state"]
    return args


class _OverwriteOnSameTime(Stateful):
    """A put whose ``updated_at`` equals the latest version's replaces that version
    (a store keyed by ``(id, updated_at)``): the replaced version drops out of history."""

    def forget(self) -> None:
        self.lost: dict[str, set[int]] = {}

    def handle(self, op: str, args: Json, inner: Inner) -> Json:
        record = put_record(op, args)
        if record is not None:
            rid = str(record.get("id"))
            try:
                previous = inner("history", {"id": rid})["records"]
            except MemspecError:  # an unknown id has no previous version
                previous = []
            result = inner(op, args)
            if previous and previous[-1]["updated_at"] == record.get("updated_at"):
                self.lost.setdefault(rid, set()).add(len(previous) - 1)
            return result
        result = inner(op, args)
        if op == "history" and args.get("id") in self.lost:
            gone = self.lost[str(args["id"])]
            return {"records": [v for i, v in enumerate(records_in(result)) if i not in gone]}
        return result


def _accept_changed_occurred_at(op: str, args: Json, inner: Inner) -> Json | None:
    record = args.get("record")
    if not isinstance(record, dict):
        return None
    try:
        born = inner("history", {"id": record.get("id")})["records"][0]
    except MemspecError:  # not stored: the rejection is not this bug's
        return None
    if born.get("occurred_at") == record.get("occurred_at"):
        return None
    carried = {**record}
    if "occurred_at" in born:
        carried["occurred_at"] = born["occurred_at"]
    else:
        carried.pop("occurred_at", None)
    # The engine stores what it was sent; only its check of occurred_at is missing.
    return inner(op, {**args, "record": carried})


_FEB_29 = re.compile(r"(\d{4})-02-29T")


def _no_400_rule(op: str, args: Json, inner: Inner) -> Json:
    """A leap-year test of ``year % 4 == 0 and year % 100 != 0``: 29 February 2000 fails."""
    value = args.get("value")
    match = _FEB_29.match(value) if isinstance(value, str) else None
    if match is not None and int(match.group(1)) % 100 == 0:
        raise EncodingError(f"{value!r} names no real day")
    return inner(op, args)


def _record_array_is_a_record(op: str, args: Json, inner: Inner) -> Json:
    """A proposal's ``record`` member is handed to record validation whatever its type."""
    proposal = args.get("proposal")
    if isinstance(proposal, dict) and isinstance(proposal.get("record"), list):
        raise RecordError("a record is a JSON object, not an array")
    return inner(op, args)


def _null_expects_unsigned(op: str, args: Json, inner: Inner) -> Json:
    """``expected_agent`` present is taken as an expectation even when it is null."""
    if "expected_agent" in args and args["expected_agent"] is None:
        given = args.get("file")
        memory_file: Json = given if isinstance(given, dict) else {}
        raise SignatureError(f"the file is signed by {memory_file.get('agent')!r}, "
                             "not by the expected agent None")
    return inner(op, args)


def _signed_counts(text: str, dimensions: int) -> list[int]:
    counts = [0] * dimensions
    tokens = re.findall(r"[^\W_]+", unicodedata.normalize("NFC", text).lower())
    for token in tokens:
        digest = hashlib.sha256(token.encode("utf-8")).digest()
        counts[int.from_bytes(digest[:4], "big") % dimensions] += 1 if digest[4] & 1 == 0 else -1
    return counts


def _cancelled_signs_to_zero(result: Json, args: Json) -> Json:
    """The signed hash scheme without its fallback: cancelling tokens give the zero vector."""
    text = args.get("text")
    vector = result["vector"]
    if isinstance(text, str) and not any(_signed_counts(text, len(vector))):
        result["vector"] = [0.0] * len(vector)
    return result


FAULTS = (
    Fault("iterate-orders-by-birth", "STORE-5", "store",
          "iterate and list order records by (created_at, id) instead of by id",
          after(_LISTINGS, _by_birth)),
    Fault("history-by-unpadded-name", "STORE-2", "store",
          "history orders versions by their unpadded number compared as text (1, 10, 11, 2)",
          after("history", _unpadded_names)),
    Fault("ids-case-folded", "STORE-10", "store",
          "get and history fold the case of an id before looking it up",
          before(("get", "history"), _fold_case)),
    Fault("tag-filter-matches-substring", "STORE-5", "store",
          "the list tag filter matches every record with a tag containing the filter",
          only("list", _substring_tags)),
    Fault("state-filter-dropped-with-type", "STORE-5", "store",
          "list silently ignores the state filter when a type filter is also given",
          before("list", _drop_state_with_type)),
    Fault("put-overwrites-same-updated-at", "STORE-1", "store",
          "a put whose updated_at equals the latest version's overwrites that version",
          _OverwriteOnSameTime()),
    Fault("put-accepts-changed-occurred-at", "STORE-11", "store",
          "put accepts a new version whose occurred_at differs from the first version's "
          "(and quietly stores the birth value instead)",
          rescue("put", "record", _accept_changed_occurred_at)),
    Fault("leap-year-without-400-rule", "ENC-5", "format",
          "canonical timestamps reject 29 February of every century year, 2000 included",
          only("canonical_timestamp", _no_400_rule)),
    Fault("proposal-record-array-is-record-error", "OP-1", "lifecycle",
          "a proposal whose record member is an array is rejected as an invalid record "
          "instead of a malformed proposal", only("apply_proposal", _record_array_is_a_record)),
    Fault("load-null-expected-agent-refuses", "FILE-11", "files",
          "load takes expected_agent null as an expectation no file can meet",
          only("load", _null_expects_unsigned)),
    Fault("embedder-cancels-to-zero", "SRCH-2", "search",
          "the hash embedder returns the zero vector when two tokens' signs cancel out",
          after("embed", _cancelled_signs_to_zero)),
    Fault("export-orders-by-birth", "FILE-8", "files",
          "export lists records by (created_at, id) instead of by id",
          after("export", _export_by_birth)),
)
