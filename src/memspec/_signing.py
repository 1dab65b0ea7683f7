"""Domain-separated Ed25519 signing: ``uint16be(len(tag)) || tag || canonical_json(payload)``."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from memspec._canonical import canonical_json
from memspec._encoding import (
    address_from_public_key,
    decode_hex,
    decode_signature,
    encode_signature,
    public_key_from_address,
)
from memspec._errors import EncodingError, SignatureError

__all__ = [
    "CONTEXTS",
    "CONTEXT_MEMORY_FILE",
    "CONTEXT_RECORD",
    "CONTEXT_REPORT",
    "DOMAIN",
    "SigningKey",
    "ed25519_verify",
    "signing_input",
    "verify_by_address",
    "weak_point",
]

DOMAIN = "fg-agent-memory/v1"
CONTEXT_RECORD = "record"
CONTEXT_MEMORY_FILE = "memory-file"
#: memspec's own artifact: a signed conformance report.
CONTEXT_REPORT = "conformance-report"
CONTEXTS = frozenset({CONTEXT_RECORD, CONTEXT_MEMORY_FILE, CONTEXT_REPORT})


def signing_input(context: str, payload: Any) -> bytes:
    """The exact bytes a signature under ``context`` covers."""
    return _tag(context) + canonical_json(payload)


def _tag(context: object) -> bytes:
    """``uint16be(len(tag)) || tag``, the prefix of every signing input under ``context``."""
    if not isinstance(context, str) or context not in CONTEXTS:
        raise SignatureError(f"unknown signing context {context!r}", requirement="SIG-2")
    return _TAGS[context] if type(context) is str else _make_tag(context)


def _make_tag(context: str) -> bytes:
    tag = f"{DOMAIN}/{context}".encode()
    return len(tag).to_bytes(2, "big") + tag


_TAGS = {context: _make_tag(context) for context in CONTEXTS}


# Building the key object costs a few microseconds, a share of a verification worth
# keeping when a file holds thousands of records by one signer. Errors are not cached.
_key_object = functools.lru_cache(maxsize=1024)(Ed25519PublicKey.from_public_bytes)


_P = 2**255 - 19
_Y_MASK = (1 << 255) - 1
#: The y coordinates (sign bit masked off) of libsodium's small-order encodings: the eight
#: points of order dividing 8 (y = 1, p - 1, 0 and the two order-8 values, each with
#: either sign) and the non-canonical spellings y = p and y = p + 1 of 0 and 1.
_SMALL_ORDER_Y = frozenset({
    0, 1, _P - 1, _P, _P + 1,
    2707385501144840649318225287225658788936804267575313519463743609750303402022,
    55188659117513257062467267217118295137698188065244968500265048394206261417927,
})


def weak_point(encoding: bytes) -> str | None:
    """Why a 32-byte point encoding is unfit as a public key or as R, or None.

    A small-order point (order dividing the cofactor 8) lets one signature verify for
    every message; a non-canonical encoding (y not below p) gives one key two spellings.
    These are the checks libsodium's ``crypto_sign_verify_detached`` makes (SIG-11).
    """
    y = int.from_bytes(encoding, "little") & _Y_MASK
    if y in _SMALL_ORDER_Y:
        return "a small-order point"
    if y >= _P:
        return "a non-canonical point encoding (y is not below p)"
    return None


def _weakness(public_key: bytes, signature: bytes) -> str | None:
    """Why a key and signature of the right lengths fail SIG-11, or None."""
    key = weak_point(public_key)
    if key is not None:
        return f"the public key is {key}"
    if weak_point(signature[:32]) == "a small-order point":
        return "the signature's R is a small-order point"
    return None


def ed25519_verify(public_key: bytes, message: bytes, signature: bytes) -> bool:
    """Strict Ed25519 verification (RFC 8032 plus SIG-11's weak-point checks), False on
    any failure."""
    if len(public_key) != 32 or len(signature) != 64:
        return False
    if _weakness(bytes(public_key), bytes(signature)) is not None:
        return False
    return _rfc8032_verify(public_key, message, signature)


def _rfc8032_verify(public_key: bytes, message: bytes, signature: bytes) -> bool:
    """:func:`ed25519_verify` for a 32-byte key and a 64-byte signature whose weak points
    were checked already."""
    try:
        if type(public_key) is bytes:
            _key_object(public_key).verify(signature, message)
        else:
            Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def verify_by_address(address: object, context: str, payload: Any, signature: object) -> None:
    """Verify ``signature`` over ``payload`` under ``context`` with the key ``address`` names."""
    public_key, raw = _key_and_signature(address, signature)
    _verify_input(public_key, context, signing_input(context, payload), raw)


def _key_and_signature(address: object, signature: object) -> tuple[bytes, bytes]:
    try:
        public_key = public_key_from_address(address)
    except EncodingError as exc:
        raise SignatureError(f"signer address is malformed: {exc.message}",
                             requirement="SIG-5") from exc
    try:
        raw = decode_signature(signature)
    except EncodingError as exc:
        raise SignatureError(f"signature is malformed: {exc.message}", requirement="ENC-3") from exc
    return public_key, raw


def _verify_input(public_key: bytes, context: str, message: bytes, signature: bytes) -> None:
    weakness = _weakness(public_key, signature) if len(signature) == 64 else None
    if weakness is not None:
        raise SignatureError(f"{weakness}, which verifies signatures nobody made",
                             requirement="SIG-11")
    # Why not ed25519_verify: the weak points were just checked, for the error's sake.
    verified = (_rfc8032_verify(public_key, message, signature)
                if weakness is None and len(public_key) == 32 and len(signature) == 64
                else ed25519_verify(public_key, message, signature))
    if not verified:
        raise SignatureError(f"signature does not verify under context {context!r}",
                             requirement="SIG-4")


def _verify_checked(address: str, context: str, canonical: bytes, signature: str) -> None:
    """:func:`verify_by_address` for a payload already canonicalized (``canonical``).

    For callers that have validated the address and the signature's spelling: both
    are still decoded (and would still fail as there), only the payload's walk is saved.
    """
    public_key, raw = _key_and_signature(address, signature)
    _verify_input(public_key, context, _tag(context) + canonical, raw)


@dataclass(frozen=True)
class SigningKey:
    """An Ed25519 key pair made from a 32-byte seed, with its ``amp:key:`` address."""

    seed: bytes = field(repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.seed, bytes) or len(self.seed) != 32:
            raise EncodingError("an Ed25519 seed is 32 bytes")

    @classmethod
    def from_hex(cls, seed_hex: object) -> SigningKey:
        """Build a key from its seed as 64 hex digits, in either letter case."""
        if not isinstance(seed_hex, str) or len(seed_hex) != 64:
            raise EncodingError("an Ed25519 seed is 64 hex characters")
        return cls(decode_hex(seed_hex, name="seed"))

    @property
    def _private(self) -> Ed25519PrivateKey:
        return Ed25519PrivateKey.from_private_bytes(self.seed)

    @property
    def public_key(self) -> bytes:
        """The raw 32-byte public key."""
        return self._private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)

    @property
    def address(self) -> str:
        """The key's self-certifying ``amp:key:`` address."""
        return address_from_public_key(self.public_key)

    def sign_bytes(self, message: bytes) -> bytes:
        """Raw Ed25519 signature over ``message``."""
        return self._private.sign(message)

    def sign(self, context: str, payload: Any) -> str:
        """Base64 signature over the signing input of ``payload`` under ``context``."""
        return encode_signature(self.sign_bytes(signing_input(context, payload)))
