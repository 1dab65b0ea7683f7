"""Wire-artifact builders for kit tests: records, new versions, proposals, memory files.

Pure core code (``memspec`` only): what these return is plain wire JSON, so a
test can hand it to any engine. ``record`` computes the content address with
:func:`memspec.record_id`; nothing here validates, so a test can also build
deliberately broken artifacts (``extra`` is applied last and may override any
field without recomputing the id).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from memspec._file import FORMAT_VERSION
from memspec._record import record_id
from memspec._signing import SigningKey
from memspec.data import proposal_kinds

__all__ = [
    "DEFAULT_PROVENANCE",
    "Keys",
    "evolve",
    "fixed_keys",
    "memory_file",
    "proposal",
    "record",
    "transition_block",
]

DEFAULT_PROVENANCE: dict[str, Any] = {"kind": "observation", "ref": None, "agent": None}
PROPOSAL_KINDS = proposal_kinds()


def record(
    type: str = "fact",
    body: str = "the kettle is in the left cupboard",
    *,
    created_at: str,
    slots: Mapping[str, Any] | None = None,
    provenance: Mapping[str, Any] | None = None,
    confidence: str = "0.9000",
    tags: Iterable[str] = (),
    evidence: Iterable[str] = (),
    occurred_at: str | None = None,
    supersedes: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A newly born active record (REC-14) with its content-address id (ID-1)."""
    out: dict[str, Any] = {
        "id": "",
        "type": type,
        "body": body,
        "slots": copy.deepcopy(dict(slots or {})),
        "state": "active",
        "confidence": confidence,
        "created_at": created_at,
        "updated_at": created_at,
        "provenance": copy.deepcopy(dict(provenance or DEFAULT_PROVENANCE)),
        "evidence": list(evidence),
        "supersedes": supersedes,
        "superseded_by": None,
        "transition": None,
        "state_reason": None,
        "tags": list(tags),
        "flagged": False,
        "flag_reason": None,
        "signed_by": None,
        "signature": "",
    }
    out["id"] = record_id(out)
    if occurred_at is not None:
        out["occurred_at"] = occurred_at
    if extra:
        out.update(copy.deepcopy(dict(extra)))
    return out


def evolve(rec: Mapping[str, Any], now: str, **changes: Any) -> dict[str, Any]:
    """A new lifecycle version: ``changes`` applied, ``updated_at = now``, signature cleared.

    The id is kept (ID-3); signed_by/signature are cleared (SIG-9) unless
    ``changes`` sets them explicitly.
    """
    out = copy.deepcopy(dict(rec))
    out["updated_at"] = now
    out["signed_by"] = None
    out["signature"] = ""
    out.update(copy.deepcopy(changes))
    return out


def transition_block(side_a: str, side_b: str, reason: str) -> dict[str, Any]:
    """The transition block both sides of a contradiction carry (TRN-1)."""
    return {"sides": [side_a, side_b], "reason": reason}


def proposal(
    kind: str,
    record: Mapping[str, Any] | None = None,
    *,
    target_id: str | None = None,
    other_id: str | None = None,
    reason: str = "",
) -> dict[str, Any]:
    """A proposal in its wire form (no checks: the kind may be deliberately unknown)."""
    return {
        "kind": kind,
        "record": copy.deepcopy(dict(record)) if record is not None else None,
        "target_id": target_id,
        "other_id": other_id,
        "reason": reason,
    }


def memory_file(
    records: Iterable[Mapping[str, Any]],
    *,
    created_at: str,
    agent: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An unsigned MemoryFile holding ``records`` in the order given."""
    out: dict[str, Any] = {
        "format": FORMAT_VERSION,
        "agent": agent,
        "created_at": created_at,
        "records": [copy.deepcopy(dict(r)) for r in records],
        "signature": "",
    }
    if extra:
        out.update(copy.deepcopy(dict(extra)))
    return out


@dataclass(frozen=True)
class Keys:
    """The kit's fixed signing keys (seeds 00..1f, 20..3f, 40..5f)."""

    a: SigningKey
    b: SigningKey
    c: SigningKey


def fixed_keys() -> Keys:
    """Three deterministic keys; ``a`` is amp:key:FAe4sisG95oZ42w7buUn5qEE4TAnfTTFPiguZUHmhiF."""
    return Keys(*(SigningKey(bytes(range(start, start + 32))) for start in (0, 32, 64)))
