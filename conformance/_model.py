"""The lifecycle model's rules: legal moves, what a new version may change, the invariants.

Pure functions over wire records (no engine involved), shared by the lifecycle
state machine and the kit's lifecycle and consolidation suites.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any

from memspec import BIRTH_FIELDS, MemspecError, is_reason, validate_record
from memspec.conformance._outcomes import RequirementFailed
from memspec.data import legality

__all__ = [
    "LEGAL_TRANSITIONS",
    "LIVE_STATES",
    "check_lifecycle_invariants",
    "check_version",
    "planned_requirement",
    "version_problems",
]


#: Every (from, to) state pair the published legality table allows.
LEGAL_TRANSITIONS = legality().legal_pairs
#: Record states that count as live evidence for a rule (RULE-2).
LIVE_STATES = legality().live_states


_MISSING = object()


def version_problems(prev: Mapping[str, Any], actual: Mapping[str, Any], now: str,
                     expected: Mapping[str, tuple[Any, str]],
                     free: Mapping[str, Collection[Any] | None] | Collection[str] = ()
                     ) -> list[str]:
    """What is wrong with ``actual`` as the lifecycle version that follows ``prev`` at ``now``.

    ``expected`` maps a field to (required value, requirement id); a field in
    ``free`` may take any value, or one of the values it maps to; every other
    field must be carried over unchanged.
    """
    allowed: Mapping[str, Collection[Any] | None] = (
        free if isinstance(free, Mapping) else dict.fromkeys(free))
    must: dict[str, tuple[Any, str]] = {
        "id": (prev["id"], "ID-3"),
        "updated_at": (now, "LC-5"),
        "signed_by": (None, "SIG-9"),
        "signature": ("", "SIG-9"),
        **expected,
    }
    problems: list[str] = []
    for name, (value, requirement) in must.items():
        got = actual.get(name, _MISSING)
        if got != value:
            shown = "absent" if got is _MISSING else repr(got)
            problems.append(f"{requirement}: {name} of {prev['id']} is {shown}, expected "
                            f"{value!r}")
    for name in sorted(set(prev) | set(actual)):
        if name in must:
            continue
        if name in allowed:
            choices = allowed[name]
            if choices is not None and actual.get(name, _MISSING) not in list(choices):
                problems.append(f"LC-5: {name} of {prev['id']} is {actual.get(name)!r}, "
                                f"expected one of {list(choices)!r}")
            continue
        old, new = prev.get(name, _MISSING), actual.get(name, _MISSING)
        if old != new:
            requirement = "ID-3" if name in (*BIRTH_FIELDS, "occurred_at") else "LC-5"
            problems.append(
                f"{requirement}: the new version of {prev['id']} changed {name} from "
                f"{'absent' if old is _MISSING else repr(old)} to "
                f"{'absent' if new is _MISSING else repr(new)}, which the change does not touch"
            )
    return problems

def check_version(what: str, problems: Sequence[str]) -> None:
    """Fail on the first of :func:`version_problems`' problems, naming its requirement
    (every problem starts with the id of the requirement it breaks)."""
    if problems:
        raise RequirementFailed(problems[0].split(":", 1)[0],
                                f"{what}: " + "; ".join(problems))


def planned_requirement(planned: Iterable[tuple[Any, Any, Mapping[str, tuple[Any, str]],
                                                Any]]) -> str:
    """The first requirement a planned write names (for messages)."""
    for _, _, fields, _ in planned:
        for _, requirement in fields.values():
            return requirement
    return "OP-6"


def check_lifecycle_invariants(histories: Mapping[str, list[dict[str, Any]]]) -> None:
    """Assert the lifecycle invariants over every record's full history.

    Transition pairs are symmetric, supersession links go both ways, archived is
    terminal, every state change is in the legality table, superseded and archived
    records carry a reason, and every stored version is a valid record.
    """
    latest = {rid: versions[-1] for rid, versions in histories.items()}
    for rid, versions in histories.items():
        for version in versions:
            try:
                validate_record(version)
            except MemspecError as exc:
                raise RequirementFailed(exc.requirement or "REC-1", f"stored version of {rid} "
                                        f"is not a valid record: {exc}") from exc
        for old, new in pairwise(versions):
            move = (old["state"], new["state"])
            if old["state"] == "archived":
                if new["state"] != "archived":
                    raise RequirementFailed(
                        "LC-2", f"{rid} left the terminal state archived for {new['state']}")
            if not (move[0] == move[1] or move in LEGAL_TRANSITIONS):
                raise RequirementFailed(
                    "LC-1", f"{rid} moved {move[0]} -> {move[1]}, which the legality table forbids")
        record = latest[rid]
        if record["state"] in ("superseded", "archived"):
            reason = record["state_reason"]
            if not is_reason(reason):
                raise RequirementFailed(
                    "LC-3", f"{record['state']} record {rid} carries no state_reason")
        if record["state"] == "transitional":
            _check_pair(rid, record, latest, histories)
        if record["state"] == "superseded" or (
                record["state"] == "archived" and record["superseded_by"] is not None):
            _check_successor(rid, record, latest, histories)


def _check_pair(rid: str, record: Mapping[str, Any], latest: Mapping[str, Mapping[str, Any]],
                histories: Mapping[str, list[dict[str, Any]]]) -> None:
    block = record["transition"]
    partner = next(side for side in block["sides"] if side != rid)
    if partner not in latest:
        raise RequirementFailed(
            "TRN-3", f"{rid} is in a transition with {partner}, which is "
            "not in the store")
    other = latest[partner]
    if other["state"] == "archived":
        if not any(v["transition"] == block for v in histories[partner]):
            raise RequirementFailed(
                "TRN-3", f"{rid} names archived {partner} as its partner, but {partner} never "
                "carried the same transition block")
        return
    if not (other["state"] == "transitional" and other["transition"] == block):
        raise RequirementFailed(
            "TRN-3", f"{rid} is transitional with block {block}, but its partner {partner} is "
            f"{other['state']} with block {other['transition']} (one side only)")


def _check_successor(rid: str, record: Mapping[str, Any],
                     latest: Mapping[str, Mapping[str, Any]],
                     histories: Mapping[str, list[dict[str, Any]]]) -> None:
    successor = record["superseded_by"]
    if successor is None:
        raise RequirementFailed("SUP-2", f"superseded record {rid} names no successor")
    if successor not in latest:
        raise RequirementFailed(
            "SUP-2", f"{rid} is superseded by {successor}, which is not "
            "in the store")
    named_back = any(v["supersedes"] == rid for v in histories[successor])
    resolved = any(v["transition"] is not None and set(v["transition"]["sides"])
                   == {rid, successor} for v in histories[rid])
    if not (named_back or resolved):
        raise RequirementFailed(
            "SUP-1", f"{rid} is superseded by {successor}, but {successor} never names it in "
            "supersedes and they were not the two sides of a resolved transition")
