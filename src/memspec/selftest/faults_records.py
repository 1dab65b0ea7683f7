"""Faults of the format profile in the record rules: fields, ids, confidence, links, flags
and tombstones (mostly a validator that quietly "repairs" what it should reject)."""

from __future__ import annotations

import hashlib
import json
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from memspec._canonical import canonical_json
from memspec._encoding import confidence_to_wire
from memspec._errors import MemspecError
from memspec._record import BIRTH_FIELDS, OPTIONAL_FIELDS, record_id
from memspec.selftest._shapes import DEFINED_FIELDS, ID_PATTERN, bypass, proposal_of
from memspec.selftest.faults import (
    Fault,
    Inner,
    Json,
    after,
    before,
    only,
    per_op,
    phantom_id,
    repair,
)

__all__ = ["FAULTS", "wire_confidence"]

_V = "validate_record"


# -- records --------------------------------------------------------------------------------

_DEFAULTS: dict[str, Any] = {
    "state": "active", "confidence": "1.0000", "evidence": [], "supersedes": None,
    "superseded_by": None, "transition": None, "state_reason": None, "tags": [],
    "flagged": False, "flag_reason": None, "signed_by": None, "signature": "", "slots": {},
}


def _fill_missing(record: Json) -> None:
    for name, value in _DEFAULTS.items():
        record.setdefault(name, value)
    if "updated_at" not in record and "created_at" in record:
        record["updated_at"] = record["created_at"]


def _drop_extensions(result: Json, args: Json) -> Json:
    result["record"] = {k: v for k, v in result["record"].items() if k in DEFINED_FIELDS}
    return result


def _lower(record: Json, *names: str) -> None:
    for name in names:
        if isinstance(record.get(name), str):
            record[name] = record[name].lower()


def _body_and_slots(record: Json) -> None:
    if "body" in record and not isinstance(record["body"], str):
        record["body"] = json.dumps(record["body"])
    if "slots" in record and not isinstance(record["slots"], dict):
        record["slots"] = {}


def _reshape_provenance(record: Json) -> None:
    if "provenance" not in record:
        return
    prov = record["provenance"]
    if not isinstance(prov, dict):
        record["provenance"] = {"kind": "unknown", "ref": None, "agent": None}
        return
    ref = prov.get("ref")
    record["provenance"] = {"kind": prov.get("kind") or "unknown",
                            "ref": ref if ref is None else str(ref), "agent": prov.get("agent")}


def _not_before_birth(record: Json) -> None:
    created, updated = record.get("created_at"), record.get("updated_at")
    if isinstance(created, str) and isinstance(updated, str) and updated < created:
        record["updated_at"] = created


def _clean_evidence(record: Json) -> None:
    evidence = record.get("evidence")
    items = [evidence] if isinstance(evidence, str) else evidence
    if isinstance(items, list):
        kept = [e for e in items
                if isinstance(e, str) and ID_PATTERN.match(e) and e != record.get("id")]
        record["evidence"] = list(dict.fromkeys(kept))


def _stringify_reason(record: Json) -> None:
    reason = record.get("state_reason")
    if reason is not None and not isinstance(reason, str):
        record["state_reason"] = str(reason)


def _clean_tags(record: Json) -> None:
    tags = record.get("tags")
    items = [tags] if isinstance(tags, str) else tags
    if isinstance(items, list):
        record["tags"] = list(dict.fromkeys(str(t) for t in items if t not in ("", None)))


def _drop_nulls(record: Json) -> None:
    for name in OPTIONAL_FIELDS:
        if name in record and record[name] is None:
            del record[name]


def _unshadow(args: Json) -> Json:
    if isinstance(args.get("extra"), dict):
        args["extra"] = {k: v for k, v in args["extra"].items() if k not in DEFINED_FIELDS}
    return args


def _id_over_lifecycle(result: Json, args: Json) -> Json:
    record = args["record"]
    covered = {k: record[k] for k in (*BIRTH_FIELDS, "state", "confidence", "tags",
                                       "updated_at", "occurred_at") if k in record}
    digest = hashlib.sha256(canonical_json(covered)).hexdigest()
    return {"id": "mem:" + digest[:32], "birth_digest": digest}


def _id_with_spaces(result: Json, args: Json) -> Json:
    birth = {k: args["record"][k] for k in BIRTH_FIELDS}
    digest = hashlib.sha256(json.dumps(birth, sort_keys=True, ensure_ascii=False)
                            .encode("utf-8")).hexdigest()
    return {"id": "mem:" + digest[:32], "birth_digest": digest}


def _readdress(record: Json) -> None:
    if "birth_digest" not in record and ID_PATTERN.match(str(record.get("id"))):
        try:
            record["id"] = record_id(record)
        except MemspecError:
            pass


def _pad_confidence(record: Json) -> None:
    value = record.get("confidence")
    if isinstance(value, str):
        try:
            exact = Decimal(value.strip())
        except InvalidOperation:
            return
        if exact.is_finite() and 0 <= exact <= 1:
            record["confidence"] = f"{abs(exact):.4f}"


def wire_confidence(record: Json) -> None:
    value = record.get("confidence")
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1:
        record["confidence"] = confidence_to_wire(value)


def _half_up(op: str, args: Json, inner: Inner) -> Json:
    value = args.get("value")
    out = inner(op, args)
    if isinstance(value, int | float) and not isinstance(value, bool):
        rounded = Decimal(str(value)).quantize(Decimal("0.0001"), rounding="ROUND_HALF_UP")
        out["wire"] = f"{abs(rounded):.4f}"
    return out


def _no_successor_on_live(record: Json) -> None:
    if record.get("state") in ("active", "transitional") and "superseded_by" in record:
        record["superseded_by"] = None


def _no_self_links(record: Json) -> None:
    for name in ("supersedes", "superseded_by"):
        value = record.get(name)
        if value == record.get("id") or (value is not None and not ID_PATTERN.match(str(value))):
            record[name] = None


def _reshape_block(record: Json) -> None:
    block = record.get("transition")
    if not isinstance(block, dict):
        return
    own = str(record.get("id"))
    given = block.get("sides")
    given = given if isinstance(given, list) else []
    sides = list(dict.fromkeys(
        s if isinstance(s, str) and ID_PATTERN.match(s) else phantom_id(str(s)) for s in given))
    if own not in sides:
        sides.insert(0, own)
    others = [s for s in sides if s != own] or [phantom_id(f"side-of-{own}")]
    sides = [own, others[0]] if sides.index(own) == 0 else [others[0], own]
    reason = block.get("reason")
    record["transition"] = {"sides": sides,
                            "reason": reason if isinstance(reason, str) and reason.strip()
                            else "unspecified"}


def _block_iff_transitional(record: Json) -> None:
    if record.get("state") != "transitional" and record.get("transition") is not None:
        record["transition"] = None
    elif record.get("state") == "transitional" and record.get("transition") is None:
        record["state"] = "active"


def _phantom_evidence(record: Json) -> None:
    if record.get("type") == "rule" and record.get("evidence") == []:
        record["evidence"] = [phantom_id(f"evidence-of-{record.get('id')}")]


def _flags_only_on_rules(record: Json) -> None:
    if "flagged" not in record or "flag_reason" not in record:
        return
    flagged = record.get("flagged")
    flagged = flagged if isinstance(flagged, bool) else flagged not in (0, "false", None)
    record["flagged"] = bool(flagged) and record.get("type") == "rule"
    reason = record.get("flag_reason")
    record["flag_reason"] = (reason if isinstance(reason, str) and reason.strip()
                             else "flagged") if record["flagged"] else None


def _unsign_tombstone(record: Json) -> None:
    if "redacted" in record or "birth_digest" in record:
        record["signed_by"], record["signature"] = None, ""


def _tombstone_reason(record: Json) -> None:
    if record.get("redacted") is True:
        reason = record.get("redaction_reason")
        if not isinstance(reason, str) or not reason.strip():
            record["redaction_reason"] = "redacted"


def _id_from_digest(record: Json) -> None:
    digest = record.get("birth_digest")
    if isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{64}", digest):
        record["id"] = "mem:" + digest[:32]


def _blank_reason(args: Json) -> Json:
    if not (isinstance(args.get("reason"), str) and args["reason"].strip()):
        args["reason"] = "redacted"
    return args


def _signed_create(args: Json, inner: Inner) -> list[Json] | None:
    proposal = proposal_of(args)
    record = proposal.get("record")
    if (isinstance(record, dict) and proposal.get("kind") == "create"
            and record.get("signed_by") is not None):
        return [record]
    return None


FAULTS = (
    Fault("record-missing-field-defaulted", "REC-1", "format",
          "a record missing a required field gets a default instead of being rejected",
          repair(_V, _fill_missing)),
    Fault("extension-fields-dropped", "REC-2", "format",
          "validate_record returns the record without its extension fields",
          after(_V, _drop_extensions)),
    Fault("uppercase-id-accepted", "REC-3", "format",
          "an id with uppercase hex digits is lowercased", repair(_V, lambda r: _lower(r, "id"))),
    Fault("type-and-state-case-insensitive", "REC-4", "format",
          "type and state are compared case-insensitively ('Fact', 'Active')",
          repair(_V, lambda r: _lower(r, "type", "state"))),
    Fault("body-coerced-to-string", "REC-5", "format",
          "a non-string body is turned into text and non-object slots into {}",
          repair(_V, _body_and_slots)),
    Fault("provenance-reshaped", "REC-6", "format",
          "provenance with missing, extra or mistyped members is reshaped to three members",
          repair(_V, _reshape_provenance)),
    Fault("updated-before-created-accepted", "REC-7", "format",
          "updated_at before created_at is moved up to created_at", repair(_V, _not_before_birth)),
    Fault("evidence-deduplicated", "REC-8", "format",
          "duplicate, self-referencing or malformed evidence ids are dropped silently",
          repair(_V, _clean_evidence)),
    Fault("state-reason-coerced", "REC-9", "format",
          "a non-string state_reason is turned into a string", repair(_V, _stringify_reason)),
    Fault("tags-deduplicated", "REC-10", "format",
          "duplicate or empty tags are dropped silently", repair(_V, _clean_tags)),
    Fault("optional-null-accepted", "REC-11", "format",
          "an optional field set to null is taken as absent", repair(_V, _drop_nulls)),
    Fault("extension-shadows-defined-field", "REC-12", "format",
          "create_record silently drops extension fields named like defined fields",
          before("create_record", _unshadow)),
    Fault("create-accepts-signed-record", "OP-6", "lifecycle",
          "a create proposal carrying a signed record is written as it is",
          bypass("apply_proposal", _signed_create)),
    Fault("id-hashes-spaced-json", "ID-1", "format",
          "record_id hashes the birth fields as JSON with spaces, not canonical JSON",
          after("record_id", _id_with_spaces)),
    Fault("stale-id-repaired", "ID-2", "format",
          "a record whose id is not its content address gets a fresh id instead of rejection",
          repair(_V, _readdress)),
    Fault("id-over-lifecycle-fields", "ID-3", "format",
          "record_id also hashes state, confidence, tags, updated_at and occurred_at",
          after("record_id", _id_over_lifecycle)),
    Fault("confidence-short-spelling-accepted", "CONF-1", "format",
          "confidence '0.5' (or '1.0', ' 0.5000', '5e-1') is padded to four digits",
          repair(_V, _pad_confidence)),
    Fault("confidence-float-accepted", "CONF-1", "format",
          "a numeric confidence (0.5) is converted instead of rejected",
          repair(_V, wire_confidence)),
    Fault("confidence-rounds-half-up", "CONF-2", "format",
          "confidence_to_wire rounds half up on the printed value, not half-even on the "
          "exact one", only("confidence_to_wire", _half_up)),
    Fault("successor-on-live-record-dropped", "SUP-3", "format",
          "an active or transitional record naming a successor has it dropped silently",
          repair(_V, _no_successor_on_live)),
    Fault("self-supersession-dropped", "SUP-4", "format",
          "supersedes / superseded_by naming the record itself (or no id) are dropped",
          repair(_V, _no_self_links)),
    Fault("transition-block-reshaped", "TRN-1", "format",
          "a malformed transition block is reshaped (extra keys dropped, sides and reason "
          "filled in)", repair(_V, _reshape_block)),
    Fault("block-outside-transitional-dropped", "TRN-2", "format",
          "a transition block on a non-transitional record is dropped (and a transitional "
          "record without one becomes active)", repair(_V, _block_iff_transitional)),
    Fault("rule-without-evidence-accepted", "RULE-1", "format",
          "a rule with empty evidence gets a made-up evidence id",
          repair(_V, _phantom_evidence)),
    Fault("flags-coerced", "RULE-4", "format",
          "flagged on a non-rule is cleared and flag_reason made to match flagged",
          repair(_V, _flags_only_on_rules)),
    Fault("signed-tombstone-accepted", "RED-3", "format",
          "a tombstone carrying a signature is accepted, the signature silently dropped",
          repair(_V, _unsign_tombstone)),
    Fault("redaction-without-reason", "RED-4", "format",
          "redaction without a reason (and a tombstone without redaction_reason) gets "
          "'redacted'", per_op({"redact": before("redact", _blank_reason),
                                  _V: repair(_V, _tombstone_reason)})),
    Fault("tombstone-id-repaired", "RED-5", "format",
          "a tombstone whose id is not its birth_digest prefix gets its id rewritten",
          repair(_V, _id_from_digest)),
)
