"""Faults of the signing profile: signing input, contexts, Ed25519 and record/file signatures."""

from __future__ import annotations

import copy

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from memspec._canonical import canonical_json
from memspec._encoding import decode_signature, public_key_from_address
from memspec._errors import MemspecError
from memspec._file import FILE_FIELDS, file_payload
from memspec._record import signed_payload
from memspec._signing import (
    CONTEXT_MEMORY_FILE,
    CONTEXT_RECORD,
    CONTEXT_REPORT,
    SigningKey,
    _weakness,
    signing_input,
    verify_by_address,
)
from memspec.selftest._shapes import rescue
from memspec.selftest.faults import Fault, Inner, Json, after, before, per_op, repair

__all__ = ["FAULTS"]

#: The order of the Ed25519 group (RFC 8032).
_L = 2**252 + 27742317777372353535851937790883648493


def _short_tag(result: Json, args: Json) -> Json:
    tag = f"fg-agent-memory/{args['context']}".encode()
    data = len(tag).to_bytes(2, "big") + tag + canonical_json(args["payload"])
    return {"hex": data.hex()}


def _loose_context(args: Json) -> Json:
    context = args.get("context")
    if isinstance(context, str):
        args["context"] = context.strip().lower().replace("_", "-").rstrip("s/")
    return args


def _reduce_s(args: Json) -> Json:
    try:
        signature = bytes.fromhex(args["signature_hex"])
    except (KeyError, TypeError, ValueError):
        return args
    s = int.from_bytes(signature[32:], "little")
    if len(signature) == 64 and s >= _L:
        args["signature_hex"] = (signature[:32] + (s % _L).to_bytes(32, "little")).hex()
    return args


def _lax_verify(public_key: bytes, message: bytes, signature: bytes) -> bool:
    """Ed25519 as OpenSSL verifies it: RFC 8032's equation, no weak-point checks."""
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def _lax_by_address(address: object, context: str, payload: object, signature: object) -> bool:
    """True when ``signature`` fails only SIG-11: it has a weak point and verifies laxly."""
    try:
        public_key, raw = public_key_from_address(address), decode_signature(signature)
        message = signing_input(context, payload)
    except MemspecError:
        return False
    return _weakness(public_key, raw) is not None and _lax_verify(public_key, message, raw)


def _weak_ed25519(op: str, args: Json, inner: Inner) -> Json:
    result = inner(op, args)
    try:
        key, message, signature = (bytes.fromhex(args[name]) for name in (
            "public_key_hex", "message_hex", "signature_hex"))
    except (KeyError, TypeError, ValueError):
        return result
    if len(key) == 32 and len(signature) == 64 and _weakness(key, signature) is not None:
        return {"valid": _lax_verify(key, message, signature)}
    return result


def _weak_record(op: str, args: Json, inner: Inner) -> Json | None:
    record = args.get("record")
    if isinstance(record, dict) and _lax_by_address(
            record.get("signed_by"), CONTEXT_RECORD,
            signed_payload(record, str(record.get("signed_by"))), record.get("signature")):
        return {"signed": True}
    return None


def _weak_file(op: str, args: Json, inner: Inner) -> Json | None:
    memory_file = args.get("file")
    if isinstance(memory_file, dict) and _lax_by_address(
            memory_file.get("agent"), CONTEXT_MEMORY_FILE, file_payload(memory_file),
            memory_file.get("signature")):
        return {}
    return None


def _other_contexts(op: str, args: Json, inner: Inner) -> Json | None:
    record = args.get("record")
    if not isinstance(record, dict):
        return None
    for context in (CONTEXT_MEMORY_FILE, CONTEXT_REPORT):
        try:
            verify_by_address(record.get("signed_by"), context,
                              signed_payload(record, str(record.get("signed_by"))),
                              record.get("signature"))
        except MemspecError:
            continue
        return {"signed": True}
    return None


def _half_signed(op: str, args: Json, inner: Inner) -> Json:
    record = args.get("record")
    if isinstance(record, dict) and (record.get("signed_by") is None) != (
            record.get("signature") in ("", None)):
        return {"signed": False}
    return inner(op, args)


def _unsign_half(record: Json) -> None:
    if (record.get("signed_by") is None) != (record.get("signature") in ("", None)):
        record["signed_by"], record["signature"] = None, ""


def _signer_outside(result: Json, args: Json) -> Json:
    key = SigningKey.from_hex(args["seed_hex"])
    record = result["record"]
    payload = {k: v for k, v in record.items() if k != "signature"}
    payload["signed_by"] = None
    record["signature"] = key.sign("record", payload)
    return result


def _keep_signature(result: Json, args: Json) -> Json:
    sources = [args.get("record"), *(args.get("records") or [])]
    signed = {r["id"]: r for r in sources if isinstance(r, dict) and r.get("signed_by")}
    for record in [result.get("record"), *(result.get("records") or [])]:
        if isinstance(record, dict) and record.get("id") in signed:
            record["signed_by"] = signed[record["id"]]["signed_by"]
            record["signature"] = signed[record["id"]]["signature"]
    return result


def _records_only(result: Json, args: Json) -> Json:
    key = SigningKey.from_hex(args["seed_hex"])
    memory_file = result["file"]
    memory_file["signature"] = key.sign(CONTEXT_MEMORY_FILE, {"records": memory_file["records"]})
    return result


def _drop_header_extensions(args: Json) -> Json:
    if isinstance(args.get("file"), dict):
        args["file"] = {k: v for k, v in copy.deepcopy(args["file"]).items() if k in FILE_FIELDS}
    return args


FAULTS = (
    Fault("signing-input-wrong-tag", "SIG-1", "signing",
          "the signing-input tag leaves out the /v1 of the domain", after("signing_input",
                                                                         _short_tag)),
    Fault("context-spelling-loose", "SIG-2", "signing",
          "a context is matched loosely ('Record', 'memory_file', 'records ')",
          before("signing_input", _loose_context)),
    Fault("ed25519-accepts-s-plus-l", "SIG-3", "signing",
          "Ed25519 verification reduces a non-canonical S (S >= L) instead of rejecting it",
          before("ed25519_verify", _reduce_s)),
    Fault("ed25519-accepts-small-order", "SIG-11", "signing",
          "Ed25519 verification skips the weak-point checks: a small-order or non-canonical "
          "key, or a small-order R, verifies when RFC 8032's equation holds",
          per_op({"ed25519_verify": _weak_ed25519,
                  "verify_record": rescue("verify_record", "signature", _weak_record),
                  "verify_file": rescue("verify_file", "signature", _weak_file)})),
    Fault("verify-accepts-other-context", "SIG-4", "signing",
          "a record signature made under the memory-file or conformance-report context "
          "verifies", rescue("verify_record", "signature", _other_contexts)),
    Fault("half-signed-record-accepted", "SIG-6", "signing",
          "signed_by without a signature (or the reverse) reads as unsigned",
          per_op({"verify_record": _half_signed,
                  "validate_record": repair("validate_record", _unsign_half)})),
    Fault("signed-by-outside-payload", "SIG-7", "signing",
          "sign_record signs the record with signed_by null, then fills signed_by in",
          after("sign_record", _signer_outside)),
    Fault("tampered-record-reads-unsigned", "SIG-8", "signing",
          "a record whose signature does not verify is answered as unsigned",
          rescue("verify_record", "signature", lambda op, args, inner: {"signed": False})),
    Fault("evolve-keeps-signature", "SIG-9", "signing",
          "a new lifecycle version keeps the old version's signature",
          after(("evolve_record", "lifecycle"), _keep_signature)),
    Fault("file-signature-over-records-only", "FILE-3", "signing",
          "sign_file signs only the records, not the header", after("sign_file",
                                                                     _records_only)),
    Fault("file-extension-header-dropped", "FILE-7", "format",
          "sign_file drops unknown header fields before signing",
          before("sign_file", _drop_header_extensions)),
)
