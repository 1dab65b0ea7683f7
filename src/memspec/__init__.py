"""memspec: fg-agent-memory/0.1 made executable and certifiable.

The public surface here is the wire format itself: canonical JSON, the
encodings, signing, the record and file rules, the error classes and the
engine interface. The reference engine lives in ``memspec.reference`` and
the conformance kit in ``memspec.conformance``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memspec._lazy import homes, lazy_getattr

# The names below are imported on first use (PEP 562), so that importing memspec, or any
# of its modules (the pytest plugin among them, which every pytest run loads), costs
# nothing until something is used: jsonschema, referencing and cryptography stay unloaded.
# This block is the one list: at run time _homes() reads it from this file's source.
if TYPE_CHECKING:
    from memspec._canonical import (
        DEFAULT_LIMITS,
        MAX_SAFE_INTEGER,
        Limits,
        canonical_json,
        check_json_value,
        parse_json,
    )
    from memspec._encoding import (
        address_from_public_key,
        b58decode,
        b58encode,
        canonical_timestamp,
        check_timestamp,
        confidence_from_wire,
        confidence_to_wire,
        decode_hex,
        decode_signature,
        encode_signature,
        public_key_from_address,
        timestamp_from_datetime,
    )
    from memspec._errors import (
        ERROR_CLASSES,
        CanonicalJSONError,
        EncodingError,
        EngineError,
        FileError,
        LifecycleError,
        LimitError,
        MemspecError,
        NotFoundError,
        ProposalError,
        RecordError,
        SignatureError,
        StoreError,
        UnsupportedError,
    )
    from memspec._file import (
        FORMAT_VERSION,
        file_canonical_bytes,
        file_payload,
        sign_file,
        validate_file,
        verify_file,
    )
    from memspec._record import (
        BIRTH_FIELDS,
        OPTIONAL_FIELDS,
        RECORD_FIELDS,
        RECORD_STATES,
        RECORD_TYPES,
        REDACTED_BODY,
        birth,
        birth_digest,
        is_reason,
        is_tombstone,
        record_id,
        sign_record,
        signed_payload,
        unknown_fields,
        validate_record,
        verify_record,
    )
    from memspec._schemas import (
        SCHEMA_BASE,
        iter_errors,
        load_schema,
        schema_id,
        schema_names,
        validator_for,
    )
    from memspec._schemas import validate as validate_schema
    from memspec._signing import (
        CONTEXT_MEMORY_FILE,
        CONTEXT_RECORD,
        CONTEXT_REPORT,
        DOMAIN,
        SigningKey,
        ed25519_verify,
        signing_input,
        verify_by_address,
    )
    from memspec.engine import PROTOCOL_VERSION, SPEC_VERSION, Engine, EngineBase

__version__ = "0.1.0"

__all__ = [
    "BIRTH_FIELDS",
    "CONTEXT_MEMORY_FILE",
    "CONTEXT_RECORD",
    "CONTEXT_REPORT",
    "DEFAULT_LIMITS",
    "DOMAIN",
    "ERROR_CLASSES",
    "FORMAT_VERSION",
    "MAX_SAFE_INTEGER",
    "OPTIONAL_FIELDS",
    "PROTOCOL_VERSION",
    "RECORD_FIELDS",
    "RECORD_STATES",
    "RECORD_TYPES",
    "REDACTED_BODY",
    "SCHEMA_BASE",
    "SPEC_VERSION",
    "CanonicalJSONError",
    "EncodingError",
    "Engine",
    "EngineBase",
    "EngineError",
    "FileError",
    "LifecycleError",
    "LimitError",
    "Limits",
    "MemspecError",
    "NotFoundError",
    "ProposalError",
    "RecordError",
    "SignatureError",
    "SigningKey",
    "StoreError",
    "UnsupportedError",
    "__version__",
    "address_from_public_key",
    "b58decode",
    "b58encode",
    "birth",
    "birth_digest",
    "canonical_json",
    "canonical_timestamp",
    "check_json_value",
    "check_timestamp",
    "confidence_from_wire",
    "confidence_to_wire",
    "decode_hex",
    "decode_signature",
    "ed25519_verify",
    "encode_signature",
    "file_canonical_bytes",
    "file_payload",
    "is_reason",
    "is_tombstone",
    "iter_errors",
    "load_schema",
    "parse_json",
    "public_key_from_address",
    "record_id",
    "schema_id",
    "schema_names",
    "sign_file",
    "sign_record",
    "signed_payload",
    "signing_input",
    "timestamp_from_datetime",
    "unknown_fields",
    "validate_file",
    "validate_record",
    "validate_schema",
    "validator_for",
    "verify_by_address",
    "verify_file",
    "verify_record",
]



def _homes() -> dict[str, tuple[str, str]]:
    """Public name -> (module, attribute): the TYPE_CHECKING imports above."""
    return homes(__file__)


__getattr__ = lazy_getattr(__name__, __file__, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
