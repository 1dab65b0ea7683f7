"""``smoke``: the quick "is my adapter wired right" check, before compliance is judged.

Handshake, claims, reset, and every claimed operation answering something other than
``unsupported`` or ``internal``, each a :class:`SmokeCheck`; with a process engine, the
last lines of its standard error when a check failed. Not a conformance verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memspec._display import terminal
from memspec._errors import EngineError
from memspec.conformance._outcomes import ALWAYS_PROFILES
from memspec.conformance._session import STDERR_SHOWN, Connection
from memspec.engine import Engine, operations, profiles
from memspec.protocol import INTERNAL, EngineFault

__all__ = ["SmokeCheck", "SmokeResult", "smoke"]


@dataclass(frozen=True)
class SmokeCheck:
    """One smoke check: what was tried and what happened."""

    name: str
    ok: bool
    detail: str = ""


@dataclass(frozen=True)
class SmokeResult:
    """Whether an engine adapter is wired right (not a conformance verdict)."""

    ok: bool
    engine: dict[str, Any] | None
    checks: tuple[SmokeCheck, ...] = field(default_factory=tuple)
    #: The last lines a process engine wrote to standard error.
    stderr: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        """Human-readable lines, one per check (then the engine's stderr when a check failed),
        with every control character the engine sent shown as an escape."""
        out = [terminal(f"{'ok  ' if c.ok else 'FAIL'} {c.name}"
                        f"{': ' + c.detail if c.detail else ''}") for c in self.checks]
        if self.stderr and not self.ok:
            out.append("engine stderr (last lines):")
            out.extend("  " + terminal(line, one_line=True) for line in self.stderr)
        return out


def _trivial_args() -> dict[str, dict[str, Any]]:
    from memspec.conformance._builders import memory_file, proposal, record
    from memspec.conformance._clock import KitClock

    now = KitClock().now()
    rec = record(created_at=now)
    seed = "00" * 32
    return {
        "canonicalize": {"text": "{}"},
        "canonical_timestamp": {"value": now},
        "confidence_to_wire": {"value": 1},
        "address": {"public_key_hex": "00" * 32},
        "parse_address": {"address": "amp:key:11111111111111111111111111111111"},
        "decode_signature": {"signature": "A" * 86 + "=="},
        "record_id": {"record": rec},
        "validate_record": {"record": rec},
        "create_record": {"type": "fact", "body": "smoke", "now": now,
                          "provenance": {"kind": "observation", "ref": None, "agent": None}},
        "evolve_record": {"record": rec, "changes": {"tags": ["smoke"]}, "now": now},
        "validate_file": {"file": memory_file([rec], created_at=now)},
        "derive_key": {"seed_hex": seed},
        "signing_input": {"context": "record", "payload": {}},
        "ed25519_verify": {"public_key_hex": "00" * 32, "message_hex": "",
                           "signature_hex": "00" * 64},
        "sign_record": {"record": rec, "seed_hex": seed},
        "verify_record": {"record": rec},
        "sign_file": {"file": memory_file([rec], created_at=now), "seed_hex": seed},
        "verify_file": {"file": memory_file([rec], created_at=now), "require_signature": False},
        "is_legal": {"from": "active", "to": "archived"},
        "lifecycle": {"operation": "archive", "records": [rec], "reason": "smoke", "now": now},
        "apply_proposal": {"proposal": proposal("create", rec), "now": now},
        "resolve": {"winner_id": rec["id"], "loser_id": rec["id"], "reason": "smoke", "now": now},
        "put": {"record": rec},
        "get": {"id": rec["id"]},
        "history": {"id": rec["id"]},
        "list": {},
        "iterate": {},
        "index": {"record": rec},
        "search": {"query": "smoke", "k": 1},
        "embed": {"text": "smoke"},
        "recall": {"query": "smoke", "budget_tokens": 100, "now": now},
        "touch": {"id": rec["id"], "now": now},
        "ingest": {"proposals": [], "now": now},
        "consolidate": {"now": now},
        "decay": {"now": now},
        "redact": {"id": rec["id"], "reason": "smoke", "now": now},
        "export": {"now": now},
        "load": {"file": memory_file([], created_at=now), "verify": False},
    }


def smoke(engine: Engine) -> SmokeResult:
    """Check the wiring: handshake, reset, and every claimed operation answers (not unsupported)."""
    conn = Connection(engine, label=type(engine).__name__, max_consecutive_faults=10**6)
    checks: list[SmokeCheck] = []
    info = conn.start()
    if info is None:
        checks.append(SmokeCheck("handshake", False, conn.start_fault or "failed"))
        return SmokeResult(False, None, tuple(checks), tuple(conn.stderr_since(0)[-STDERR_SHOWN:]))
    known = set(profiles())
    unknown = sorted(set(info.get("profiles", [])) - known)
    checks.append(SmokeCheck(
        "handshake", not unknown,
        f"{info['name']} {info['version']} claims {', '.join(info['profiles']) or 'nothing'}"
        + (f"; unknown profiles {unknown}" if unknown else ""),
    ))
    for name in sorted(conn.claimed - ALWAYS_PROFILES):
        missing = [r for r in profiles().get(name, {}).get("requires", []) if r not in conn.claimed]
        if missing:
            checks.append(SmokeCheck(f"profile {name}", False,
                                     f"requires {', '.join(missing)}, which is not claimed"))
    checks.append(_try(conn, "reset", {}, allow_errors=False))
    if "store" in conn.claimed:
        try:
            records = conn.call("iterate", {})["records"]
            checks.append(SmokeCheck("reset leaves an empty store", not records,
                                     f"{len(records)} records after reset" if records else ""))
        except (EngineError, EngineFault) as exc:
            checks.append(SmokeCheck("reset leaves an empty store", False, str(exc)))
    trivial = _trivial_args()
    for op, spec in operations().items():
        if spec["profile"] is None or spec["profile"] not in conn.claimed:
            continue
        if conn.abandoned is None:
            try:
                conn.call("reset", {})
            except (EngineError, EngineFault):
                pass
        checks.append(_try(conn, op, trivial.get(op, {}), allow_errors=True))
    checks.extend(SmokeCheck(f"{f.requirement}: {f.where}", False, f.message)
                  for f in conn.findings.values())
    return SmokeResult(all(c.ok for c in checks), info, tuple(checks),
                       tuple(conn.stderr_since(0)[-STDERR_SHOWN:]))


def _try(conn: Connection, op: str, args: dict[str, Any], *, allow_errors: bool) -> SmokeCheck:
    try:
        conn.call(op, args)
    except EngineFault as exc:
        return SmokeCheck(op, False, f"fault: {exc}")
    except EngineError as exc:
        if exc.code == "unsupported":
            return SmokeCheck(op, False, f"claimed but answers unsupported: {exc.message}")
        if exc.code == INTERNAL:
            return SmokeCheck(op, False, f"internal error: {exc.message}")
        if not allow_errors:
            return SmokeCheck(op, False, f"{exc.code}: {exc.message}")
        return SmokeCheck(op, True, f"answers ({exc.code})")
    return SmokeCheck(op, True, "answers")
