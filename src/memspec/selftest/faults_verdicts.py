"""Faults that prove the kit's attribution (issue 14): each breaks one requirement in a way
that used to be reported under others.

``resolve-accepts-self-resolution`` accepts one invalid input, a resolution of a record with
itself, and writes nothing: the kit must fail RES-1, the vector's own requirement, and neither
PROTO-7 (nothing was rejected, so nothing rejected wrote) nor anything of ``core``.

``load-trusts-foreign-unverified-file`` accepts one invalid load, a file signed by another
agent than the expected one, when the caller opted out of verification: the kit must fail
FILE-11 alone, and judge PROTO-7 (every load it did refuse wrote nothing) rather than leave
it inconclusive.

``tombstone-state-reason-null`` writes every tombstone with ``state_reason`` null instead of
the redaction reason (fg-agent-memory 0.2.0 does): one field off its schema. The kit must
fail LC-3 (an archived record carries a reason) and still judge the redaction's behaviour,
which the engine meets (RED-1, RED-2, RED-7).
"""

from __future__ import annotations

from typing import Any

from memspec.selftest.faults import Fault, Inner, Json, only

__all__ = ["FAULTS"]


def _accept_self_resolution(op: str, args: Json, inner: Inner) -> Json:
    # Why an empty written list: the engine "accepts" the resolution without touching the
    # store, so the only thing wrong is that it was not refused.
    if args.get("winner_id") is not None and args.get("winner_id") == args.get("loser_id"):
        return {"written": []}
    return inner(op, args)


def _trust_foreign_unverified(op: str, args: Json, inner: Inner) -> Json:
    # Why only verify false with a signed file: the expectation is dropped exactly where a
    # loader might think it has nothing to check, and every other load stays correct.
    memory_file = args.get("file")
    signed = isinstance(memory_file, dict) and memory_file.get("signature") not in ("", None)
    if args.get("verify") is False and args.get("expected_agent") is not None and signed:
        return inner(op, {k: v for k, v in args.items() if k != "expected_agent"})
    return inner(op, args)


def _null_state_reason(value: Any) -> Any:
    if isinstance(value, list):
        return [_null_state_reason(item) for item in value]
    if isinstance(value, dict):
        if value.get("redacted") is True and "birth_digest" in value:
            return {**value, "state_reason": None}
        return {key: _null_state_reason(item) for key, item in value.items()}
    return value


def _tombstones_without_reason(op: str, args: Json, inner: Inner) -> Json:
    # Why these operations: the tombstone is stored, so get, history, iterate, list and
    # export show the one redact answered; validating a given record stays correct.
    result: Json = _null_state_reason(inner(op, args))
    return result


FAULTS: tuple[Fault, ...] = (
    Fault("resolve-accepts-self-resolution", "RES-1", "lifecycle",
          "resolve accepts a resolution whose winner and loser are one record (and writes "
          "nothing) instead of rejecting it",
          only("resolve", _accept_self_resolution)),
    Fault("load-trusts-foreign-unverified-file", "FILE-11", "files",
          "load with verify false ignores expected_agent for a signed file, so a file "
          "re-signed by another agent loads",
          only("load", _trust_foreign_unverified)),
    Fault("tombstone-state-reason-null", "LC-3", "lifecycle",
          "redaction writes tombstones whose state_reason is null instead of the redaction "
          "reason (an archived record without a reason)",
          only(("redact", "get", "history", "iterate", "list", "export"),
               _tombstones_without_reason)),
)
