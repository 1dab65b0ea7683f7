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
which the engine meets (RED-1 to RED-5, RED-7). It genuinely breaks RED-9 too: section 17's
table gives a tombstone the redaction reason as its state_reason, and RED-9 requires the
tombstone to be exactly that table (its ``also``). Every view of the store shows the one
tombstone (get, history, iterate, list, export, audit), so a list as of a time (XTT-1) or an
audit (XAUD-1) that shows it is consistent with the store and fails nothing of its own; a
tombstone the engine is given (put, load) is stored as given.
"""

from __future__ import annotations

from typing import Any

from memspec._audit import audit_digest
from memspec.selftest._shapes import Watcher
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


def _null_state_reason(value: Any, redacted: set[str]) -> Any:
    if isinstance(value, list):
        return [_null_state_reason(item, redacted) for item in value]
    if isinstance(value, dict):
        if value.get("redacted") is True and value.get("id") in redacted:
            return {**value, "state_reason": None}
        return {key: _null_state_reason(item, redacted) for key, item in value.items()}
    return value


class _TombstonesWithoutReason(Watcher):
    """Every tombstone redact writes has state_reason null: redact answers it so, and get,
    history, iterate, list, export and audit show it so. A tombstone the engine was given
    (put, load) is stored as given: the fault is in the redaction alone."""

    def forget(self) -> None:
        self.redacted: set[str] = set()

    def note(self, op: str, args: Json, result: Json) -> None:
        if op == "redact" and isinstance(args.get("id"), str):
            self.redacted.add(args["id"])

    def rewrite(self, op: str, args: Json, result: Json, inner: Inner) -> Json:
        if op == "audit":
            return self._audit(result)
        if op in ("redact", "get", "history", "iterate", "list", "export"):
            changed: Json = _null_state_reason(result, self.redacted)
            return changed
        return result

    def _audit(self, result: Json) -> Json:
        # Every version of a redacted record is its tombstone (RED-1), so each lists
        # state_reason null, and the digest is over that report (XAUD-4).
        report = result.get("report")
        if not isinstance(report, dict) or not isinstance(report.get("records"), list):
            return result
        records = [{**entry, "versions": [{**v, "state_reason": None}
                                          for v in entry["versions"]]}
                   if isinstance(entry, dict) and entry.get("id") in self.redacted else entry
                   for entry in report["records"]]
        changed = {**report, "records": records}
        return {**result, "report": changed, "digest": audit_digest(changed)}


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
          _TombstonesWithoutReason(), also=("RED-9",)),
)
