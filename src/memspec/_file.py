"""The MemoryFile: the portable, signable container of an agent's records."""

from __future__ import annotations

from typing import Any

from memspec import _parallel, _verify_fast
from memspec._canonical import (
    DEFAULT_LIMITS,
    MAX_SAFE_INTEGER,
    Limits,
    _canonical_checked,
    _canonical_nfc,
    _canonical_of_nfc,
    canonical_json,
    check_json_value,
)
from memspec._encoding import check_timestamp, decode_signature, public_key_from_address
from memspec._errors import EncodingError, FileError, MemspecError, SignatureError
from memspec._record import _verify_validated_nfc, validate_record
from memspec._signing import CONTEXT_MEMORY_FILE, SigningKey, _verify_checked

__all__ = [
    "FILE_FIELDS",
    "FORMAT_VERSION",
    "file_canonical_bytes",
    "file_payload",
    "sign_file",
    "validate_file",
    "verify_file",
]

FORMAT_VERSION = "fg-agent-memory/0.1"
FILE_FIELDS = ("format", "agent", "created_at", "records", "signature")
#: The optional header member numbering an agent's signed files (SPEC.md section 10.1).
SEQUENCE_FIELD = "sequence"


def file_payload(memory_file: dict[str, Any]) -> dict[str, Any]:
    """The file without its signature: what a file signature covers."""
    return {k: v for k, v in memory_file.items() if k != "signature"}


def file_canonical_bytes(memory_file: dict[str, Any]) -> bytes:
    """The canonical bytes of a file (canonical JSON of the file sans ``signature``)."""
    return canonical_json(file_payload(memory_file))


def validate_file(memory_file: object, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """Check a MemoryFile's shape and every record in it; return it."""
    checked = _validate_header(memory_file, limits)
    try:
        check_json_value(file_payload(checked), limits)
    except MemspecError as exc:
        raise FileError(exc.message, pointer=exc.pointer, requirement=exc.requirement) from exc
    seen: set[str] = set()
    for index, record in enumerate(checked["records"]):
        try:
            # The walk above covered every record (deeper, so more strictly): skip its own.
            validate_record(record, limits, _walked=True)
        except MemspecError as exc:
            raise FileError(f"record {index}: {exc.message}",
                            pointer=f"/records/{index}{exc.pointer or ''}",
                            requirement=exc.requirement) from exc
        if record["id"] in seen:
            raise FileError(f"record id {record['id']} appears twice", requirement="FILE-4",
                            pointer=f"/records/{index}/id")
        seen.add(record["id"])
    return checked


def _validate_header(memory_file: object, limits: Limits) -> dict[str, Any]:
    """validate_file's checks of everything but the walk and the records; the file."""
    if not isinstance(memory_file, dict):
        raise FileError(f"a memory file is a JSON object, not {type(memory_file).__name__}",
                        requirement="FILE-1")
    missing = [name for name in FILE_FIELDS if name not in memory_file]
    if missing:
        raise FileError(f"memory file lacks required fields {missing}", pointer=f"/{missing[0]}",
                        requirement="FILE-1")
    if memory_file["format"] != FORMAT_VERSION:
        raise FileError(f"format {memory_file['format']!r} is not {FORMAT_VERSION!r}",
                        pointer="/format", requirement="FILE-2")
    agent = memory_file["agent"]
    if agent is not None:
        try:
            public_key_from_address(agent)
        except EncodingError as exc:
            raise FileError(exc.message, pointer="/agent", requirement="ENC-1") from exc
    try:
        check_timestamp(memory_file["created_at"], field="created_at")
    except EncodingError as exc:
        raise FileError(exc.message, pointer="/created_at", requirement="REC-7") from exc
    records = memory_file["records"]
    if not isinstance(records, list):
        raise FileError("records must be an array", pointer="/records", requirement="FILE-1")
    if len(records) > limits.max_records_per_file:
        raise FileError(f"{len(records)} records exceed the limit of "
                        f"{limits.max_records_per_file}", pointer="/records")
    signature = memory_file["signature"]
    if not isinstance(signature, str):
        raise FileError("signature must be a string (empty when unsigned)",
                        pointer="/signature", requirement="FILE-1")
    if signature and agent is None:
        raise FileError("a signed memory file must name its agent", pointer="/agent",
                        requirement="FILE-3")
    if signature:
        try:
            decode_signature(signature)
        except EncodingError as exc:
            raise FileError(exc.message, pointer="/signature", requirement="ENC-3") from exc
    if SEQUENCE_FIELD in memory_file:
        sequence = memory_file[SEQUENCE_FIELD]
        if type(sequence) is not int or not 0 <= sequence <= MAX_SAFE_INTEGER:
            raise FileError(f"sequence {sequence!r} is not an integer from 0 to 2**53 - 1",
                            pointer=f"/{SEQUENCE_FIELD}", requirement="ROLL-1")
    return memory_file


def sign_file(memory_file: dict[str, Any], key: SigningKey) -> dict[str, Any]:
    """A copy of ``memory_file`` with ``agent`` set to the key's address and signed."""
    if not isinstance(memory_file, dict):
        raise FileError(f"a memory file is a JSON object, not {type(memory_file).__name__}",
                        requirement="FILE-1")
    payload = file_payload(memory_file)
    payload["agent"] = key.address
    return {**payload, "signature": key.sign(CONTEXT_MEMORY_FILE, payload)}


def _spelled_first(signature: object, what: str, pointer: str) -> None:
    """Raise SignatureError when a present signature is badly spelled (ENC-3)."""
    if isinstance(signature, str) and signature:
        try:
            decode_signature(signature)
        except EncodingError as exc:
            raise SignatureError(f"{what} is malformed: {exc.message}", pointer=pointer,
                                 requirement="ENC-3") from exc


def verify_file(memory_file: dict[str, Any], *, require_signature: bool = True,
                expected_agent: object = None, jobs: int | None = None) -> None:
    """Verify a file: its own signature (required unless opted out) and every signed record.

    The caller, never the file, decides whether a signature is required: with
    ``require_signature`` a missing or empty signature is a failure. A badly
    spelled signature, the file's or a record's, is a signature failure checked
    before anything else (SPEC.md section 2.4), not a file-format failure. With
    ``expected_agent`` (an address, else class ``encoding``) the file must also be
    signed by that agent: an unsigned file never is, whatever ``require_signature``
    says (FILE-11). ``jobs`` is how many processes check the records: None picks
    every CPU for a file of 2,000 records or more, 1 forces the serial path; the
    verdict and the first error are the same either way (memspec._parallel).
    """
    jobs = _parallel.plan_jobs(memory_file, jobs)
    if jobs > 1:
        _parallel.verify_parallel(memory_file, require_signature=require_signature,
                                  expected_agent=expected_agent, jobs=jobs)
        return
    if _verify_fast.file_passes(memory_file, require_signature=require_signature,
                                expected_agent=expected_agent):
        return
    _verify_file(memory_file, require_signature=require_signature,
                 expected_agent=expected_agent)


def _file_bytes(memory_file: dict[str, Any], records_nfc: bool) -> bytes:
    """The canonical bytes of a validated file; ``records_nfc``: every record's strings are
    known to be NFC, so only the header's are tested."""
    payload = file_payload(memory_file)
    if records_nfc and _canonical_nfc({**payload, "records": []})[1]:
        return _canonical_of_nfc(payload)
    return _canonical_checked(payload)


def _verify_file(memory_file: dict[str, Any], *, require_signature: bool,
                 expected_agent: object) -> None:
    """:func:`verify_file`'s precise serial path, in the order its errors are reported (the
    fast path, memspec._verify_fast, only ever passes what this passes)."""
    if expected_agent is not None:
        try:
            public_key_from_address(expected_agent)
        except EncodingError as exc:
            raise EncodingError(f"expected_agent is not an agent address: {exc.message}",
                                requirement="ENC-1") from exc
    signature = memory_file.get("signature") if isinstance(memory_file, dict) else None
    _spelled_first(signature, "file signature", "/signature")
    records = memory_file.get("records") if isinstance(memory_file, dict) else None
    if isinstance(records, list):
        for index, record in enumerate(records):
            if isinstance(record, dict):
                _spelled_first(record.get("signature"), f"signature of record {index}",
                               f"/records/{index}/signature")
    validate_file(memory_file)
    # Everything below was checked by validate_file at DEFAULT_LIMITS: verify without
    # walking it again (the signed bytes are the same; only the check is not repeated).
    # Records first: when one was altered, naming it says more than "the file changed".
    # Why track NFC: when every record's strings are known to be NFC, the file's canonical
    # bytes are the encoder's output as it is, and testing megabytes of text is saved.
    nfc = True
    for index, record in enumerate(memory_file["records"]):
        try:
            signed, record_nfc = _verify_validated_nfc(record)
            nfc = nfc and signed and record_nfc
        except SignatureError as exc:
            raise SignatureError(f"record {record['id']} (index {index}): {exc.message}",
                                 pointer=f"/records/{index}/signature",
                                 requirement=exc.requirement or "FILE-6") from exc
    if signature:
        try:
            _verify_checked(memory_file["agent"], CONTEXT_MEMORY_FILE,
                            _file_bytes(memory_file, nfc), signature)
        except SignatureError as exc:
            hint = ("" if exc.requirement == "SIG-11" else
                    " (the file changed after signing, or another key signed it)")
            raise SignatureError(f"file signature by {memory_file['agent']}: {exc.message}"
                                 f"{hint}", pointer="/signature",
                                 requirement=exc.requirement) from exc
    elif require_signature:
        raise SignatureError("the memory file is unsigned but verification was requested",
                             pointer="/signature", requirement="FILE-5")
    if expected_agent is not None and (not signature or memory_file["agent"] != expected_agent):
        signer = f"signed by {memory_file['agent']}" if signature else "unsigned"
        raise SignatureError(f"the memory file is {signer}, not by the expected agent "
                             f"{expected_agent}", pointer="/agent", requirement="FILE-11")
