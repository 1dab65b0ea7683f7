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


def _argument_values() -> tuple[dict[str, Any], dict[tuple[str, str], Any]]:
    """A plausible value for each argument name, and the few (operation, name) pairs whose
    value must differ from the name's (a timestamp ``value`` versus a confidence one)."""
    from memspec.conformance._builders import memory_file, proposal, record
    from memspec.conformance._clock import KitClock

    now = KitClock().now()
    rec = record(created_at=now)
    values: dict[str, Any] = {
        "now": now, "record": rec, "records": [rec], "id": rec["id"], "winner_id": rec["id"],
        "loser_id": rec["id"], "file": memory_file([rec], created_at=now), "seed_hex": "00" * 32,
        "reason": "smoke", "text": "{}", "query": "smoke", "k": 1, "budget_tokens": 100,
        "public_key_hex": "00" * 32, "message_hex": "", "signature_hex": "00" * 64,
        "address": "amp:key:11111111111111111111111111111111", "signature": "A" * 86 + "==",
        "context": "record", "payload": {}, "type": "fact", "body": "smoke",
        "provenance": {"kind": "observation", "ref": None, "agent": None},
        "changes": {"tags": ["smoke"]}, "require_signature": False, "verify": False,
        "from": "active", "to": "archived", "operation": "archive", "proposals": [],
        "proposal": proposal("create", rec),
    }
    overrides: dict[tuple[str, str], Any] = {
        ("canonical_timestamp", "value"): now, ("confidence_to_wire", "value"): 1,
        ("load", "file"): memory_file([], created_at=now),
    }
    return values, overrides


def _trivial_args() -> dict[str, dict[str, Any]]:
    """Arguments for every operation with an owning profile: each argument of the operation
    table the kit has a plausible value for. An operation with a required argument the kit
    has no value for is a kit bug, never a silent ``{}``."""
    from memspec._errors import MemspecError
    from memspec.data import operations as table

    values, overrides = _argument_values()
    out: dict[str, dict[str, Any]] = {}
    for name, op in table().items():
        if op.profile is None:
            continue
        args: dict[str, Any] = {}
        for arg in op.argument_names:
            if (name, arg) in overrides:
                args[arg] = overrides[(name, arg)]
            elif arg in values:
                args[arg] = values[arg]
            elif arg not in op.optional_arguments:
                raise MemspecError(f"kit bug: the smoke check has no value for argument {arg!r} "
                                   f"of {name!r}")
        out[name] = args
    return out


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
        checks.append(_try(conn, op, trivial[op], allow_errors=True))
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
