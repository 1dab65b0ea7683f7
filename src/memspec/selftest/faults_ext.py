"""Faults of the extension profiles (spec/EXTENSIONS.md): one or more per requirement family.

Each fault breaks one extension requirement of a working engine at the operation level,
like the faults of the core profiles. ``faulty.<name>`` (``-`` spelled ``_``) builds the
reference engine behind one of them, so the kit can be pointed at it before the faults are
registered in :func:`memspec.selftest.faults.all_faults`.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable

from memspec._canonical import canonical_json
from memspec._encoding import check_timestamp
from memspec._errors import MemspecError
from memspec.selftest._shapes import (
    Factories,
    Watcher,
    drop_arg,
    propose,
    put,
    put_record,
    records_in,
    rescue,
    set_arg,
    then,
)
from memspec.selftest.faults import Fault, Inner, Json, after, before, evolve, only, phantom_id

__all__ = ["EXTENSION_FAULTS", "faulty"]

_R = "recall"
_PUT = ("put", "validate_record")
_TAGS = ("temporal", "paradigm", "architectural", "observational")


def _is_x(name: str) -> bool:
    return name.startswith("x_")


# -- XEXT ---------------------------------------------------------------------------------


def _sign_without_extensions(op: str, args: Json, inner: Inner) -> Json:
    record = args.get("record")
    if not isinstance(record, dict):
        return inner(op, args)
    stripped = {k: v for k, v in record.items() if not _is_x(k)}
    signed = inner(op, {**args, "record": stripped})["record"]
    return {"record": {**signed, **{k: v for k, v in record.items() if _is_x(k)}}}


def _id_over_extensions(result: Json, args: Json) -> Json:
    record = args.get("record")
    if isinstance(record, dict) and any(_is_x(k) for k in record):
        extension = {k: v for k, v in record.items() if _is_x(k)}
        result["id"] = phantom_id(canonical_json(extension).decode("utf-8"))
    return result


def _hide_any_expiry(result: Json, args: Json) -> Json:
    if not args.get("include_expired"):
        result["records"] = [e for e in result["records"] if "x_expires_at" not in e["record"]]
        result["total_tokens"] = sum(e["tokens"] for e in result["records"])
    return result


# -- field checks the faults skip -------------------------------------------------------------


def _bad_timestamp(value: object) -> bool:
    try:
        check_timestamp(value)
    except MemspecError:
        return True
    return False


def _drop_if(names: tuple[str, ...], bad: Callable[[Json], bool]) -> Callable[[Json], Json]:
    """Argument rewrite: remove ``names`` from the record argument when ``bad(record)``."""

    def change(args: Json) -> Json:
        record = args.get("record")
        if isinstance(record, dict) and bad(record):
            args["record"] = {k: v for k, v in record.items() if k not in names}
        return args

    return change


def _bad_expiry(record: Json) -> bool:
    return "x_expires_at" in record and _bad_timestamp(record["x_expires_at"])


def _bad_provenance(record: Json) -> bool:
    if "x_observed_at" in record:
        seen = record["x_observed_at"]
        if _bad_timestamp(seen) or not (str(record.get("created_at")) <= seen
                                         <= str(record.get("updated_at"))):
            return True
    if "x_derivation" in record:
        value = record["x_derivation"]
        if not isinstance(value, dict) or set(value) != {"hops", "from"}:
            return True
        hops, sources = value["hops"], value["from"]
        if isinstance(hops, bool) or not isinstance(hops, int) or hops < 0:
            return True
        if not isinstance(sources, list) or (hops == 0) != (not sources):
            return True
        return not all(isinstance(s, str) and s.startswith("mem:") and len(s) == 36
                       for s in sources)
    return False


def _bad_falsifiable(record: Json) -> bool:
    if "x_falsifiable" not in record:
        return False
    value = record["x_falsifiable"]
    return (not isinstance(value, dict) or set(value) != {"tag", "condition"}
            or value["tag"] not in _TAGS or not isinstance(value["condition"], str)
            or not value["condition"].strip())


# -- recall rewrites --------------------------------------------------------------------------


def _unmark(mark: str, keep: Callable[[Json], bool] = lambda e: False
            ) -> Callable[[Json, Json], Json]:
    def change(result: Json, args: Json) -> Json:
        for entry in result.get("records", []):
            marks = [m for m in entry.get("x_marks", []) if m != mark or keep(entry)]
            entry.pop("x_marks", None)
            if marks:
                entry["x_marks"] = marks
        return result

    return change


def _hypotheses_first(result: Json, args: Json) -> Json:
    def key(entry: Json) -> tuple[float, int, str]:
        sourced = "hypothesis" not in entry.get("x_marks", [])
        return (-entry["score"], int(sourced), entry["record"]["id"])

    result["records"] = sorted(result["records"], key=key)
    return result


class _TouchPromotes(Watcher):
    """A touched hypothesis loses its label: use turns it into a fact."""

    def forget(self) -> None:
        self.touched: set[str] = set()

    def note(self, op: str, args: Json, result: Json) -> None:
        if op == "touch":
            self.touched.add(str(args.get("id")))

    def rewrite(self, op: str, args: Json, result: Json, inner: Inner) -> Json:
        if op == _R:
            return _unmark("hypothesis", lambda e: e["record"]["id"] not in self.touched)(
                copy.deepcopy(result), args)
        return result


# -- time travel ------------------------------------------------------------------------------


def _as_of_writes(result: Json, args: Json, inner: Inner) -> None:
    if "as_of" in args:
        for record in result.get("records", []):
            latest = inner("get", {"id": record["id"]})["record"]
            put(inner, evolve(latest, latest["updated_at"]))


# -- observe and falsify ----------------------------------------------------------------------


def _observe_keeps_signature(op: str, args: Json, inner: Inner) -> Json:
    latest = inner("get", {"id": args.get("id")})["record"]
    result = inner(op, args)
    if latest.get("signature"):
        kept = {**result["record"], "signed_by": latest["signed_by"],
                "signature": latest["signature"]}
        return {"record": kept}
    return result


def _observe_forced(op: str, args: Json, inner: Inner) -> Json:
    latest = inner("get", {"id": args["id"]})["record"]
    now = max(str(args["now"]), latest["updated_at"])
    version = evolve(latest, now, x_observed_at=now)
    put(inner, version)
    return {"record": version}


def _falsify_forced(op: str, args: Json, inner: Inner) -> Json:
    reason = str(args.get("reason") or "").strip() or "falsified"
    propose(inner, args["now"], "archive", target_id=args["id"], reason=reason)
    return {"record": inner("get", {"id": args["id"]})["record"]}


def _plain_reason(result: Json, args: Json) -> Json:
    result["record"]["state_reason"] = args.get("reason")
    return result


def _hide_history(result: Json, args: Json) -> Json:
    versions = result.get("records", [])
    if versions and str(versions[-1].get("state_reason") or "").startswith("falsified"):
        result["records"] = versions[-1:]
    return result


def _hide_expiry_reason(result: Json, args: Json) -> Json:
    for record in records_in(result):
        if str(record.get("state_reason") or "").startswith("expired"):
            record["state_reason"] = "decayed"
    return result


def _drop_expiry_when_archived(result: Json, args: Json) -> Json:
    for record in records_in(result):
        if record.get("state") == "archived":
            record.pop("x_expires_at", None)
    return result


# -- audit ------------------------------------------------------------------------------------


def _redigest(result: Json) -> Json:
    result["digest"] = "sha256:" + hashlib.sha256(canonical_json(result["report"])).hexdigest()
    return result


def _audit_latest_only(result: Json, args: Json) -> Json:
    for entry in result["report"]["records"]:
        entry["versions"] = entry["versions"][-1:]
    return _redigest(result)


def _audit_no_supersessions(result: Json, args: Json) -> Json:
    result["report"]["supersessions"] = []
    return _redigest(result)


class _AuditLeaks(Watcher):
    """Remembers what was put, and names the destroyed content in the redaction log."""

    def forget(self) -> None:
        self.bodies: dict[str, str] = {}

    def note(self, op: str, args: Json, result: Json) -> None:
        record = put_record(op, args)
        if record is not None and isinstance(record.get("body"), str):
            self.bodies.setdefault(str(record.get("id")), record["body"])

    def rewrite(self, op: str, args: Json, result: Json, inner: Inner) -> Json:
        if op != "audit":
            return result
        result = copy.deepcopy(result)
        for entry in result["report"]["redactions"]:
            entry["reason"] += f" (it said: {self.bodies.get(entry['id'], '?')})"
        return _redigest(result)


def _audit_pretty_digest(result: Json, args: Json) -> Json:
    text = json.dumps(result["report"], indent=2, sort_keys=True).encode("utf-8")
    result["digest"] = "sha256:" + hashlib.sha256(text).hexdigest()
    return result


EXTENSION_FAULTS: tuple[Fault, ...] = (
    Fault("sign-skips-extension-fields", "XEXT-3", "format",
          "sign_record signs the record without its extension fields, then puts them back",
          only("sign_record", _sign_without_extensions)),
    Fault("id-covers-extension-fields", "XEXT-2", "format",
          "the content address of a record with extension fields is computed over them too",
          after("record_id", _id_over_extensions)),
    Fault("expiry-unchecked", "XEXP-1", "x-expiry",
          "a malformed x_expires_at is silently dropped instead of rejected",
          before(_PUT, _drop_if(("x_expires_at",), _bad_expiry))),
    Fault("expired-still-recalled", "XEXP-2", "x-expiry",
          "default recall includes expired records", before(_R, set_arg("include_expired", True))),
    Fault("include-expired-ignored", "XEXP-3", "x-expiry",
          "recall ignores include_expired", before(_R, set_arg("include_expired", False))),
    Fault("expiry-reason-hidden", "XEXP-4", "x-expiry",
          "records archived for expiry read back with a generic reason",
          after(("get", "history"), _hide_expiry_reason)),
    Fault("expiry-field-dropped", "XEXP-5", "x-expiry",
          "archived records lose their x_expires_at",
          after(("get", "history"), _drop_expiry_when_archived)),
    Fault("any-expiry-hides", "XEXP-6", "x-expiry",
          "default recall leaves out every record with an expiry, even a future one",
          after(_R, _hide_any_expiry)),
    Fault("list-as-of-ignored", "XTT-1", "x-time-travel",
          "list answers the latest versions whatever as_of says",
          before("list", drop_arg("as_of"))),
    Fault("recall-as-of-ignored", "XTT-2", "x-time-travel",
          "recall answers from the latest versions whatever as_of says",
          before(_R, drop_arg("as_of"))),
    Fault("as-of-unchecked", "XTT-3", "x-time-travel",
          "a malformed as_of is ignored instead of rejected",
          before(("list", _R), drop_arg("as_of", _bad_timestamp))),
    Fault("as-of-writes", "XTT-4", "x-time-travel",
          "a list as of a past instant rewrites each listed record",
          then("list", _as_of_writes)),
    Fault("provenance-unchecked", "XPROV-1", "x-provenance",
          "malformed x_observed_at / x_derivation are silently dropped",
          before(_PUT, _drop_if(("x_observed_at", "x_derivation"), _bad_provenance))),
    Fault("unattributable-unmarked", "XPROV-2", "x-provenance",
          "recall never marks records unattributable", after(_R, _unmark("unattributable"))),
    Fault("observe-keeps-signature", "XPROV-3", "x-provenance",
          "observe answers with the old signature still on the new version",
          only("observe", _observe_keeps_signature)),
    Fault("observe-anything", "XPROV-4", "x-provenance",
          "observe writes a version of archived records and ignores a stale now",
          rescue("observe", "lifecycle", _observe_forced)),
    Fault("hypothesis-unmarked", "XHYP-1", "x-hypothesis",
          "recall never marks hypotheses", after(_R, _unmark("hypothesis"))),
    Fault("hypotheses-first", "XHYP-2", "x-hypothesis",
          "hypotheses rank before sourced records of equal score",
          after(_R, _hypotheses_first)),
    Fault("touch-promotes-hypothesis", "XHYP-3", "x-hypothesis",
          "a touched hypothesis is no longer marked: use makes it a fact", _TouchPromotes()),
    Fault("falsifiable-unchecked", "XFALS-1", "x-falsifiability",
          "a malformed x_falsifiable is silently dropped",
          before(_PUT, _drop_if(("x_falsifiable",), _bad_falsifiable))),
    Fault("falsify-plain-reason", "XFALS-2", "x-falsifiability",
          "falsify answers with the bare reason, without the tag",
          after("falsify", _plain_reason)),
    Fault("falsify-anything", "XFALS-3", "x-falsifiability",
          "falsify archives records without x_falsifiable or already archived",
          rescue("falsify", "lifecycle", _falsify_forced)),
    Fault("falsify-drops-history", "XFALS-4", "x-falsifiability",
          "the history of a falsified record shows only its last version",
          after("history", _hide_history)),
    Fault("audit-latest-only", "XAUD-1", "x-audit",
          "the audit lists only each record's latest version", after("audit", _audit_latest_only)),
    Fault("audit-no-supersessions", "XAUD-2", "x-audit",
          "the audit's supersession changelog is always empty",
          after("audit", _audit_no_supersessions)),
    Fault("audit-leaks-bodies", "XAUD-3", "x-audit",
          "the redaction log quotes what the redacted record said", _AuditLeaks()),
    Fault("audit-digest-of-pretty-json", "XAUD-4", "x-audit",
          "the digest hashes indented JSON, not canonical JSON",
          after("audit", _audit_pretty_digest)),
)


#: Factories of the faulty engines of this module, by fault name (``-`` spelled ``_``).
faulty = Factories(EXTENSION_FAULTS, "extension")
