"""Fixed keys, clock values, record builders and the vector-file assembly shared by every table."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from _vectorlib.primitives import Key, canon, record_id, signing_input

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "vectors" / "published"
SPEC_VERSION = "fg-agent-memory/0.1"
SCHEMA_BASE = "https://memspec.dev/schemas/vectors/"

#: Seeds A, B, C: bytes 0x00..0x1f, 0x20..0x3f, 0x40..0x5f. A is the published seed; the
#: fg-agent-id vectors' addresses b and c are the keys of B and C.
KEY_A = Key(bytes(range(0, 32)))
KEY_B = Key(bytes(range(32, 64)))
KEY_C = Key(bytes(range(64, 96)))
A, B, C = KEY_A.address, KEY_B.address, KEY_C.address


def day(n: int, hour: int = 0) -> str:
    """A fixed instant: 2026-01-01 plus ``n`` days (n < 31) at ``hour``."""
    return f"2026-01-{n + 1:02d}T{hour:02d}:00:00.000Z"


T0, T1, T2, T3, T4 = day(0), day(1), day(2), day(3), day(4)


def load_published(name: str) -> Any:
    """A verbatim published vectors file from vectors/published/."""
    return json.loads((PUBLISHED / name).read_text(encoding="utf-8"))


def provenance(kind: str = "conversation", ref: str | None = "session-0002",
               agent: str | None = A) -> dict[str, Any]:
    return {"kind": kind, "ref": ref, "agent": agent}


def make(rtype: str, body: str, *, created_at: str = T0, slots: dict[str, Any] | None = None,
         prov: dict[str, Any] | None = None, confidence: str = "0.9000",
         tags: tuple[str, ...] = (), evidence: tuple[str, ...] = (),
         supersedes: str | None = None, occurred_at: str | None = None,
         extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A new record as it is born: active, unflagged, unsigned, id = content address."""
    rec: dict[str, Any] = {
        "id": "", "type": rtype, "body": body, "slots": dict(slots or {}), "state": "active",
        "confidence": confidence, "created_at": created_at, "updated_at": created_at,
    }
    if occurred_at is not None:
        rec["occurred_at"] = occurred_at
    rec.update({
        "provenance": prov if prov is not None else provenance(), "evidence": list(evidence),
        "supersedes": supersedes, "superseded_by": None, "transition": None,
        "state_reason": None, "tags": list(tags), "flagged": False, "flag_reason": None,
        "signed_by": None, "signature": "",
    })
    rec.update(extra or {})
    rec["id"] = record_id(rec)
    return rec


def evolve(rec: dict[str, Any], now: str, **changes: Any) -> dict[str, Any]:
    """A new lifecycle version: the changes, updated_at = now, signature cleared (SIG-9)."""
    out = copy.deepcopy(rec)
    out.update(copy.deepcopy(changes))
    out["updated_at"] = now
    out["signed_by"] = None
    out["signature"] = ""
    return out


def edit(rec: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A copy with raw field changes (no other field touched)."""
    out = copy.deepcopy(rec)
    out.update(copy.deepcopy(changes))
    return out


def without(rec: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: copy.deepcopy(v) for k, v in rec.items() if k not in names}


def reid(rec: dict[str, Any]) -> dict[str, Any]:
    """The record with its id recomputed, so a birth-field edit breaks one rule only."""
    out = copy.deepcopy(rec)
    out["id"] = record_id(out)
    return out


def signed_payload(rec: dict[str, Any], signer: str) -> dict[str, Any]:
    payload = {k: copy.deepcopy(v) for k, v in rec.items() if k != "signature"}
    payload["signed_by"] = signer
    return payload


def sign(rec: dict[str, Any], key: Key, context: str = "record") -> dict[str, Any]:
    """The record signed by ``key`` (signed_by inside the payload, SIG-7)."""
    payload = signed_payload(rec, key.address)
    return {**payload, "signature": key.sign(context, payload)}


def file_of(records: list[dict[str, Any]], *, agent: str | None = None, created_at: str = T0,
            extra: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"format": SPEC_VERSION, "agent": agent, "created_at": created_at,
                           "records": copy.deepcopy(records)}
    out.update(extra or {})
    out["signature"] = ""
    return out


def sign_file(mfile: dict[str, Any], key: Key, context: str = "memory-file") -> dict[str, Any]:
    payload = {k: copy.deepcopy(v) for k, v in mfile.items() if k != "signature"}
    payload["agent"] = key.address
    return {**payload, "signature": key.sign(context, payload)}


def case(cid: str, comment: str, flags: list[str], requirements: list[str], args: dict[str, Any],
         *, expected: dict[str, Any] | None = None, error: str | None = None,
         setup: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One test; exactly one of ``expected`` (valid) and ``error`` (invalid)."""
    assert (expected is None) != (error is None), cid
    out: dict[str, Any] = {"id": cid, "comment": comment, "flags": flags,
                           "requirements": requirements}
    if setup is not None:
        out["setup"] = copy.deepcopy(setup)
    out["args"] = copy.deepcopy(args)
    if expected is not None:
        out["result"] = "valid"
        out["expected"] = copy.deepcopy(expected)
    else:
        out["result"] = "invalid"
        out["error"] = error
    return out


def group(gid: str, comment: str, operation: str, profile: str,
          tests: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": gid, "comment": comment, "operation": operation, "profile": profile,
            "tests": tests}


def vector_file(name: str, description: str, notes: dict[str, str],
                groups: list[dict[str, Any]]) -> dict[str, Any]:
    """Assemble a file, checking ids, flags and the result/expected pairing."""
    used: set[str] = set()
    seen: set[str] = set()
    for grp in groups:
        for test in grp["tests"]:
            assert test["id"].startswith(name + "/"), test["id"]
            assert test["id"] not in seen, f"duplicate test id {test['id']}"
            assert test["requirements"], f"{test['id']} names no requirement"
            seen.add(test["id"])
            used.update(test["flags"])
    assert used <= set(notes), f"{name}: flags without a note: {sorted(used - set(notes))}"
    assert set(notes) <= used, f"{name}: notes never used: {sorted(set(notes) - used)}"
    return {
        "name": name, "spec_version": SPEC_VERSION, "description": description,
        "schema": f"{SCHEMA_BASE}{name}.json", "notes": dict(sorted(notes.items())),
        "number_of_tests": len(seen), "groups": groups,
    }


def self_check() -> None:
    """Refuse to generate unless the primitives reproduce every published byte they touch."""
    mem = load_published("fg-agent-memory-0.1.json")
    ident = load_published("fg-agent-id-0.2.json")
    assert KEY_A.seed.hex() == mem["keys"]["seed_a_hex"] and A == mem["keys"]["address_a"]
    assert (A, B, C) == tuple(ident["addresses"][k] for k in "abc")
    assert record_id(mem["record_id"]["birth"]) == mem["record_id"]["expected"]
    record = mem["canonical_record"]
    assert canon(record["record"]).hex() == record["canonical_hex"]
    for item in mem["signing_input"]:
        assert signing_input(item["context"], item["payload"]).hex() == item["expected_hex"]
    signed = mem["artifacts"]["signed_record"]
    assert sign(mem["canonical_record"]["record"], KEY_A) == signed["record"]
    mfile = mem["artifacts"]["memory_file"]
    assert sign_file({**mfile["payload"], "signature": ""}, KEY_A) == mfile["file"]
    assert canon(mfile["payload"]).hex() == mfile["canonical_bytes_hex"]
    for item in ident["canonical_json"]:
        assert canon(item["input"]).hex() == item["expected_hex"]
    for item in ident["signing_input"]:
        got = signing_input(item["context"], item["payload"], domain=ident["domain"])
        assert got.hex() == item["expected_hex"]
