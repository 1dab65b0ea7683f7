"""Observing an engine from the outside: store snapshots, attempts and rejection checks.

Everything here talks to an engine only through the kit's session interface
(``call(op, **args)``), so engine authors can reuse it in their own tests.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from typing import Any, Protocol

from hypothesis import HealthCheck, Phase, settings

from memspec import MemspecError, canonical_json
from memspec.conformance._outcomes import RequirementFailed, judges_input
from memspec.data import operations_with

__all__ = [
    "PURE_OPERATIONS",
    "ClockLike",
    "EngineLike",
    "Snapshot",
    "attempt",
    "canon",
    "describe_change",
    "expect_refused",
    "expect_rejected",
    "fresh_id",
    "kit_settings",
    "shorten",
    "snapshot",
    "wrote_on_rejection",
]


class EngineLike(Protocol):
    """What the checks need of an engine session: ``call(op, **args) -> result``."""

    def call(self, operation: str, /, **arguments: Any) -> dict[str, Any]:
        """Run one operation; raise a MemspecError (with ``code``) when the engine rejects it."""
        ...


class ClockLike(Protocol):
    """A deterministic clock handing out canonical timestamps."""

    def now(self) -> str:
        """The current time."""
        ...

    def advance(self, days: float = 0, hours: float = 0, seconds: float = 0,
                ms: int = 0) -> str:
        """Move forward and return the new time."""
        ...

#: Operations that read and write no engine state: expect_rejected skips its store check.
PURE_OPERATIONS = operations_with("pure")

#: A store as the engine shows it: record id -> canonical bytes of every version, oldest first.
Snapshot = dict[str, tuple[bytes, ...]]


def kit_settings() -> settings:
    """Hypothesis settings for kit tests: the active profile (the kit's fast one, or the
    one ``--memspec-thorough`` loads), with no deadline and no health checks.

    Shrinking replays a failing example over and over against the engine, which can take
    minutes (and a broken engine may fault on every replay), so only a thorough run (many
    examples) shrinks; a fast run reports the first failure found, whose message names
    the requirement.
    """
    active = settings.default
    thorough = active is not None and active.max_examples > 50
    phases = tuple(Phase) if thorough else (Phase.explicit, Phase.reuse, Phase.generate)
    return settings(deadline=None, suppress_health_check=list(HealthCheck), phases=phases,
                    report_multiple_bugs=False)


def canon(value: Any) -> bytes:
    """Canonical JSON bytes, the kit's notion of "the same artifact"."""
    return canonical_json(value)


def fresh_id(seed: str) -> str:
    """A well-formed record id that no record built by the kit carries."""
    return "mem:" + hashlib.sha256(f"memspec-kit-phantom:{seed}".encode()).hexdigest()[:32]


def snapshot(engine: EngineLike) -> Snapshot:
    """Every record and every version the engine holds (via iterate and history)."""
    out: Snapshot = {}
    for latest in engine.call("iterate")["records"]:
        versions = engine.call("history", id=latest["id"])["records"]
        out[latest["id"]] = tuple(canon(v) for v in versions)
    return out


def describe_change(before: Snapshot, after: Snapshot) -> str:
    """A short account of how two snapshots differ ("" when they are equal)."""
    notes: list[str] = []
    for rid in sorted(set(before) | set(after)):
        old, new = before.get(rid, ()), after.get(rid, ())
        if old == new:
            continue
        if not old:
            notes.append(f"{rid} appeared with {len(new)} version(s)")
        elif not new:
            notes.append(f"{rid} disappeared (had {len(old)} version(s))")
        elif new[: len(old)] == old:
            notes.append(f"{rid} gained {len(new) - len(old)} version(s)")
        else:
            notes.append(f"{rid} changed its stored versions ({len(old)} -> {len(new)})")
    return "; ".join(notes)


def attempt(engine: EngineLike, operation: str, /,
            **arguments: Any) -> tuple[dict[str, Any] | None, MemspecError | None]:
    """Run an operation, returning (result, None) or (None, the engine's error)."""
    try:
        return engine.call(operation, **arguments), None
    except MemspecError as exc:
        return None, exc


def expect_rejected(engine: EngineLike, operation: str, classes: str | Collection[str],
                    requirement: str, what: str, /, **arguments: Any) -> str:
    """Assert the engine rejects the call with one of ``classes`` and writes nothing.

    A failure names ``requirement`` (accepted, or rejected with another class), or
    :func:`wrote_on_rejection` (rejected, yet something was written).

    The store is compared before and after, except around pure operations (which
    touch no state, so a format-only engine needs no store to be checked).
    Returns the error class the engine reported.
    """
    return _expect_rejected(engine, operation, classes, requirement, what, True, arguments)


def expect_refused(engine: EngineLike, operation: str, classes: str | Collection[str],
                   requirement: str, what: str, /, **arguments: Any) -> str:
    """:func:`expect_rejected` without the store check: for calls whose rejection a test of
    PROTO-7 of its own judges for writes, so that a wrongly accepted call fails
    ``requirement`` alone and never leaves PROTO-7 unjudged."""
    return _expect_rejected(engine, operation, classes, requirement, what, False, arguments)


def _expect_rejected(engine: EngineLike, operation: str, classes: str | Collection[str],
                     requirement: str, what: str, judge_writes: bool,
                     arguments: dict[str, Any]) -> str:
    allowed = {classes} if isinstance(classes, str) else set(classes)
    pure = operation in PURE_OPERATIONS or not judge_writes
    before = {} if pure else snapshot(engine)
    result, error = attempt(engine, operation, **arguments)
    after = {} if pure else snapshot(engine)
    change = describe_change(before, after)
    strict = judges_input(allowed)  # refusing malformed input: input strictness (SPEC 19.2)
    if error is None:
        raise RequirementFailed(
            requirement, f"{what} was accepted by {operation} (expected a "
            f"{'/'.join(sorted(allowed))} error); result {shorten(result)}"
            + (f"; it wrote: {change}" if change else ""), strictness=strict)
    if error.code not in allowed:
        raise RequirementFailed(
            requirement, f"{what} was rejected by {operation} with error class "
            f"{error.code!r}, expected {'/'.join(sorted(allowed))} ({error})",
            strictness=strict)
    if change:
        # A rejection that writes breaks PROTO-7, whatever the rejection was about, and for a
        # proposal OP-2 too (validated completely before anything is written).
        raise RequirementFailed(
            wrote_on_rejection(operation),
            f"{what} was rejected ({requirement}) but {operation} still wrote: {change}")
    return error.code


def wrote_on_rejection(operation: str) -> tuple[str, ...]:
    """The requirements a rejected ``operation`` breaks by writing: PROTO-7, and OP-2 for a
    proposal."""
    return ("OP-2", "PROTO-7") if operation == "apply_proposal" else ("PROTO-7",)


def shorten(value: Any, limit: int = 300) -> str:
    """``repr(value)``, cut to ``limit`` characters for assertion messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."

