"""Set semantics over records: fingerprint, diff and merge, keyed by record id."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memspec._canonical import canonical_json
from memspec._errors import RecordError

__all__ = ["Diff", "Merge", "diff_records", "fingerprint", "merge_records", "record_digest"]


def record_digest(record: dict[str, Any]) -> str:
    """SHA-256 hex of a record's canonical bytes (every field, signatures included)."""
    return hashlib.sha256(canonical_json(record)).hexdigest()


def fingerprint(records: Iterable[dict[str, Any]]) -> str:
    """Order-insensitive digest of a set of records.

    ``sha256`` of the sorted record digests, each 64 hex characters, joined
    with newlines: the same records in any order give the same fingerprint,
    and any byte change in any record changes it.
    """
    sha, canonical = hashlib.sha256, canonical_json  # record_digest, inlined: one call a record
    digests = sorted([sha(canonical(r)).hexdigest() for r in records])
    return hashlib.sha256("\n".join(digests).encode("ascii")).hexdigest()


def _by_id(records: Iterable[dict[str, Any]], label: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for record in records:
        rid = record.get("id") if isinstance(record, dict) else None
        if not isinstance(rid, str):
            raise RecordError(f"{label}: a record without a string id")
        if rid in out and canonical_json(out[rid]) != canonical_json(record):
            raise RecordError(f"{label}: record id {rid} appears twice with different content",
                              requirement="FILE-4")
        out[rid] = record
    return out


@dataclass(frozen=True)
class Diff:
    """What changed from one set of records to another."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[tuple[dict[str, Any], dict[str, Any]], ...]
    unchanged: int

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)

    def to_json(self) -> dict[str, Any]:
        return {
            "added": list(self.added),
            "removed": list(self.removed),
            "changed": [
                {"id": a["id"],
                 "before": {"state": a.get("state"), "updated_at": a.get("updated_at")},
                 "after": {"state": b.get("state"), "updated_at": b.get("updated_at")}}
                for a, b in self.changed
            ],
            "unchanged": self.unchanged,
        }


def diff_records(a: Iterable[dict[str, Any]], b: Iterable[dict[str, Any]]) -> Diff:
    """Set-semantic diff keyed by id: added, removed, changed versions, unchanged count."""
    left, right = _by_id(a, "first"), _by_id(b, "second")
    changed = tuple(
        (left[i], right[i]) for i in sorted(left.keys() & right.keys())
        if canonical_json(left[i]) != canonical_json(right[i])
    )
    return Diff(
        added=tuple(sorted(right.keys() - left.keys())),
        removed=tuple(sorted(left.keys() - right.keys())),
        changed=changed,
        unchanged=len(left.keys() & right.keys()) - len(changed),
    )


@dataclass(frozen=True)
class Merge:
    """A union of record sets; ids with differing content are conflicts, never picked silently."""

    records: tuple[dict[str, Any], ...]
    conflicts: tuple[tuple[str, tuple[dict[str, Any], ...]], ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "records": len(self.records),
            "conflicts": [
                {"id": rid, "versions": [
                    {"state": v.get("state"), "updated_at": v.get("updated_at"),
                     "digest": record_digest(v)} for v in versions]}
                for rid, versions in self.conflicts
            ],
        }


def merge_records(sets: Sequence[Iterable[dict[str, Any]]], *, prefer: str | None = None) -> Merge:
    """Union by id, in ascending id order. A conflict is kept out of ``records`` unless
    ``prefer`` ("first" or "last") explicitly says which input wins."""
    if prefer not in (None, "first", "last"):
        raise RecordError(f"prefer must be 'first' or 'last', not {prefer!r}")
    seen: dict[str, list[dict[str, Any]]] = {}
    for number, records in enumerate(sets, 1):
        for rid, record in _by_id(records, f"input {number}").items():
            versions = seen.setdefault(rid, [])
            if all(canonical_json(v) != canonical_json(record) for v in versions):
                versions.append(record)
    merged: list[dict[str, Any]] = []
    conflicts: list[tuple[str, tuple[dict[str, Any], ...]]] = []
    for rid in sorted(seen):
        versions = seen[rid]
        if len(versions) > 1:
            conflicts.append((rid, tuple(versions)))
            if prefer is None:
                continue
        merged.append(versions[0] if prefer != "last" else versions[-1])
    return Merge(records=tuple(merged), conflicts=tuple(conflicts))
