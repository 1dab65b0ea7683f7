"""Faults of the files and redaction profiles, and of the engine protocol (core)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

from memspec._encoding import timestamp_from_datetime
from memspec._errors import MemspecError, UnsupportedError
from memspec._file import FORMAT_VERSION, file_payload, sign_file
from memspec._signing import CONTEXT_MEMORY_FILE, SigningKey, verify_by_address
from memspec.engine import operations
from memspec.selftest._shapes import (
    InsertionOrder,
    Watcher,
    drop_arg,
    history_of,
    map_records,
    put,
    rescue,
    still_writes,
)
from memspec.selftest.faults import Fault, Inner, Json, Stateful, before, only

__all__ = ["FAULTS"]


def _file(args: Json) -> Json:
    memory_file = args.get("file")
    return memory_file if isinstance(memory_file, dict) else {}


def _header_defaults(args: Json) -> Json:
    memory_file = _file(args)
    if memory_file:
        for name, value in (("format", FORMAT_VERSION), ("agent", None), ("records", []),
                            ("created_at", "2026-01-01T00:00:00.000Z"), ("signature", "")):
            if memory_file.get(name) is None:
                memory_file[name] = value
        if isinstance(memory_file["records"], dict):
            memory_file["records"] = list(memory_file["records"].values())
    return args


def _any_format(args: Json) -> Json:
    if "format" in _file(args):
        args["file"]["format"] = FORMAT_VERSION
    return args


def _last_copy_wins(args: Json) -> Json:
    records = _file(args).get("records")
    if isinstance(records, list) and all(isinstance(r, dict) for r in records):
        args["file"]["records"] = list({r.get("id"): r for r in records}.values())
    return args


def _unsigned_is_fine(args: Json) -> Json:
    if args.get("verify") is True and _file(args).get("signature") in ("", None):
        args["verify"] = False
    return args


def _file_level_only(memory_file: Json, required: bool) -> bool:
    """Whether the file's own signature is acceptable, records aside."""
    if memory_file.get("signature") in ("", None):
        return not required
    try:
        verify_by_address(memory_file.get("agent"), CONTEXT_MEMORY_FILE,
                          file_payload(memory_file), memory_file.get("signature"))
    except MemspecError:
        return False
    return True


def _ignore_record_signatures(op: str, args: Json, inner: Inner) -> Json | None:
    required = bool(args.get("require_signature", args.get("verify")))
    if not _file_level_only(_file(args), required):
        return None
    if op == "load":
        return inner(op, {**args, "verify": False})
    return {}


class _ExportInInsertionOrder(InsertionOrder):
    """Export lists records in the order they were first put or loaded."""

    def note(self, op: str, args: Json, result: Json) -> None:
        super().note(op, args, result)
        if op == "load":
            for rid in result["loaded"]:
                self.first_seen(rid)

    def rewrite(self, op: str, args: Json, result: Json, inner: Inner) -> Json:
        if op != "export":
            return result
        memory_file = copy.deepcopy(result["file"])
        memory_file["records"].sort(key=lambda r: self.order.get(r["id"], len(self.order)))
        if isinstance(args.get("seed_hex"), str):
            memory_file = sign_file(memory_file, SigningKey.from_hex(args["seed_hex"]))
        return {"file": memory_file}


def _load_overwrites(op: str, args: Json, inner: Inner) -> Json:
    overwritten = []
    for record in _file(args).get("records") or []:
        if isinstance(record, dict) and history_of(inner, record.get("id")):
            put(inner, record)
            overwritten.append(record["id"])
    result = inner(op, args)
    return {"loaded": sorted([*result["loaded"], *overwritten]),
            "skipped": [r for r in result["skipped"] if r not in overwritten]}


def _load_without_tags(op: str, args: Json, inner: Inner) -> Json:
    memory_file = copy.deepcopy(_file(args))
    if not isinstance(memory_file.get("records"), list):
        return inner(op, args)
    if args.get("verify") is True:
        inner("verify_file", {"file": memory_file, "require_signature": True})
    for record in memory_file["records"]:
        if isinstance(record, dict) and record.get("tags"):
            record["tags"] = []
    return inner(op, {**args, "file": memory_file, "verify": False})


class _RedactionKeepsOldVersions(Stateful):
    """Redaction replaces only the latest version; earlier ones keep the content."""

    def forget(self) -> None:
        self.kept: dict[str, list[Json]] = {}

    def handle(self, op: str, args: Json, inner: Inner) -> Json:
        if op == "redact":
            earlier = history_of(inner, args.get("id"))[:-1]
            result = inner(op, args)
            self.kept[str(args["id"])] = earlier
            return result
        result = inner(op, args)
        kept = self.kept.get(str(args.get("id"))) if op == "history" else None
        if kept:
            result = {"records": kept + result["records"][len(kept):]}
        return result


class _RedactionDropsLinks(Watcher):
    """Tombstones lose supersedes / superseded_by (the link graph dangles)."""

    def forget(self) -> None:
        self.redacted: set[str] = set()

    def unlink(self, record: Json) -> Json:
        if record.get("id") in self.redacted:
            return {**record, "supersedes": None, "superseded_by": None}
        return record

    def note(self, op: str, args: Json, result: Json) -> None:
        if op == "redact":
            self.redacted.add(result["record"]["id"])

    def rewrite(self, op: str, args: Json, result: Json, inner: Inner) -> Json:
        if op in ("redact", "get", "history", "list", "iterate"):
            return map_records(result, self.unlink)
        return result


def _put_tombstone_redacts(op: str, args: Json, inner: Inner) -> Json:
    record = args.get("record")
    if isinstance(record, dict) and record.get("redacted") is True and history_of(
            inner, record.get("id")):
        inner("redact", {"id": record["id"], "now": record.get("updated_at"),
                         "reason": record.get("redaction_reason") or "redacted through put"})
        return {"version": len(history_of(inner, record["id"]))}
    return inner(op, args)


def _reindex_secret(op: str, args: Json, inner: Inner) -> Json:
    versions = history_of(inner, args.get("id"))
    result = inner(op, args)
    if versions:
        inner("index", {"record": versions[-1]})
    return result


def _unknown_is_internal(op: str, args: Json, inner: Inner) -> Json:
    if op not in operations():
        raise MemspecError(f"KeyError: {op!r}")
    return inner(op, args)


def _version_mismatch_unsupported(op: str, args: Json, inner: Inner) -> Json:
    try:
        return inner(op, args)
    except MemspecError as exc:
        if exc.code != "protocol":
            raise
        raise UnsupportedError(f"hello: {exc.message}") from None


def _wall_clock(args: Json) -> Json:
    args["now"] = timestamp_from_datetime(datetime.now(UTC))
    return args


class _ResetKeepsIndex(Watcher):
    """reset empties the store but the search index still finds what was there."""

    def forget(self) -> None:
        self.seen: list[Json] = []

    def note(self, op: str, args: Json, result: Json) -> None:
        if op in ("put", "index") and isinstance(args.get("record"), dict):
            self.seen.append(args["record"])

    def rewrite(self, op: str, args: Json, result: Json, inner: Inner) -> Json:
        if op == "reset":
            for record in self.seen:
                inner("index", {"record": record})
        return result


def _rejected_load_writes(op: str, args: Json, inner: Inner) -> None:
    if args.get("verify") is True:
        inner(op, {**args, "verify": False})


def _load_any_tombstone(op: str, args: Json, inner: Inner) -> Json:
    """load as published implementations do it: every tombstone claims a free id."""
    result = inner(op, args)
    records = _file(args).get("records")
    if not isinstance(records, list):
        return result
    skipped = set(result.get("skipped", []))
    claimed = {r["id"] for r in records if isinstance(r, dict) and r.get("redacted") is True
               and r.get("id") in skipped and not history_of(inner, r.get("id"))}
    for record in records:
        if record["id"] in claimed:
            put(inner, record)
    order = [r["id"] for r in records if isinstance(r, dict)]
    loaded = set(result.get("loaded", [])) | claimed
    return {**result, "loaded": [i for i in order if i in loaded],
            "skipped": [i for i in result.get("skipped", []) if i not in claimed]}


FAULTS = (
    Fault("file-header-defaults", "FILE-1", "format",
          "a memory file missing header members gets defaults instead of rejection",
          before("validate_file", _header_defaults)),
    Fault("file-format-version-ignored", "FILE-2", "format",
          "validate_file accepts any format string", before("validate_file", _any_format)),
    Fault("file-duplicate-ids-accepted", "FILE-4", "format",
          "a file listing a record id twice keeps the last copy",
          before("validate_file", _last_copy_wins)),
    Fault("load-accepts-unsigned-with-verify", "FILE-5", "files",
          "a verifying load accepts a file whose signature is missing",
          before("load", _unsigned_is_fine)),
    Fault("file-verify-ignores-record-signatures", "FILE-6", "files",
          "file verification checks the file signature but not the records' signatures",
          rescue(("verify_file", "load"), "signature", _ignore_record_signatures)),
    Fault("export-in-insertion-order", "FILE-8", "files",
          "export lists records in the order they were written, not by id",
          _ExportInInsertionOrder()),
    Fault("load-overwrites-existing", "FILE-9", "files",
          "load writes a new version of ids already in the store", only("load",
                                                                        _load_overwrites)),
    Fault("load-forgets-tags", "FILE-10", "files",
          "load stores records without their tags, so a round trip is not byte-identical",
          only("load", _load_without_tags)),
    Fault("load-ignores-expected-agent", "FILE-11", "files",
          "load ignores expected_agent, so a file re-signed by another agent loads",
          before("load", drop_arg("expected_agent"))),
    Fault("load-stores-any-tombstone", "FILE-12", "files",
          "load stores a tombstone for a free id from any file, so it squats that id",
          only("load", _load_any_tombstone)),
    Fault("redaction-keeps-old-versions", "RED-1", "redaction",
          "redaction replaces the latest version only", _RedactionKeepsOldVersions()),
    Fault("redaction-drops-links", "RED-2", "redaction",
          "tombstones lose supersedes and superseded_by", _RedactionDropsLinks()),
    Fault("put-of-tombstone-redacts", "RED-6", "redaction",
          "put of a tombstone-shaped version redacts the record (the store port can redact)",
          only("put", _put_tombstone_redacts)),
    Fault("redaction-leaves-index", "RED-7", "redaction",
          "redaction leaves the original body in the search index",
          only("redact", _reindex_secret)),
    Fault("unknown-operation-internal", "PROTO-4", "core",
          "an unknown operation fails as an internal error, not unsupported",
          _unknown_is_internal),
    Fault("hello-version-mismatch-unsupported", "PROTO-2", "core",
          "a hello in a protocol version the engine does not speak is answered unsupported, "
          "not protocol", only("hello", _version_mismatch_unsupported)),
    Fault("create-record-reads-wall-clock", "PROTO-5", "core",
          "create_record stamps records with the engine's own clock, not now",
          before("create_record", _wall_clock)),
    Fault("reset-keeps-index", "PROTO-6", "core",
          "reset empties the store but leaves the search index full", _ResetKeepsIndex()),
    Fault("rejected-load-writes", "PROTO-7", "core",
          "a verifying load that is rejected has already stored the records",
          still_writes("load", _rejected_load_writes)),
)

