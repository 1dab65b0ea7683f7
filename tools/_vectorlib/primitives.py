"""The wire primitives written out from their definitions, independently of ``memspec``.

The generator computes every expected value with these few lines (plus
pyca/cryptography for Ed25519) and checks them against the published
vectors before writing anything, so memspec's own implementation is tested
against the definitions rather than against itself.
"""

from __future__ import annotations

import base64
import hashlib
import json
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

DOMAIN = "fg-agent-memory/v1"
B58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
BIRTH_FIELDS = ("type", "body", "slots", "provenance", "created_at")
MAX_SAFE = 2**53 - 1


def _check(value: Any) -> None:
    """Refuse to compute an expected value for something canonical JSON cannot carry."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, int):
        assert -MAX_SAFE <= value <= MAX_SAFE, value
        return
    if isinstance(value, list):
        for item in value:
            _check(item)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            assert isinstance(key, str) and unicodedata.is_normalized("NFC", key), key
            _check(item)
        return
    raise AssertionError(f"not a canonical JSON value: {value!r}")


def canon(value: Any) -> bytes:
    """Canonical JSON: sorted keys, no whitespace, raw UTF-8, NFC, integers only."""
    _check(value)
    text = json.dumps(_nfc(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)
    return text.encode("utf-8")


def _nfc(value: Any) -> Any:
    """NFC on every string value (never on the JSON text, where a mark could join an escape)."""
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    if isinstance(value, list):
        return [_nfc(item) for item in value]
    if isinstance(value, dict):
        return {key: _nfc(item) for key, item in value.items()}
    return value


def b58(data: bytes) -> str:
    """Base58, Bitcoin alphabet, big-endian, one ``1`` per leading zero byte."""
    number = int.from_bytes(data, "big")
    out = ""
    while number:
        number, digit = divmod(number, 58)
        out = B58_ALPHABET[digit] + out
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + out


def address(public_key: bytes) -> str:
    """``amp:key:`` + base58 of a raw 32-byte Ed25519 public key."""
    assert len(public_key) == 32
    return "amp:key:" + b58(public_key)


def signing_input(context: str, payload: Any, domain: str = DOMAIN) -> bytes:
    """uint16be(len(tag)) || tag || canonical_json(payload), tag = domain/context."""
    tag = f"{domain}/{context}".encode()
    return len(tag).to_bytes(2, "big") + tag + canon(payload)


def b64(raw: bytes) -> str:
    """Standard padded base64."""
    return base64.b64encode(raw).decode("ascii")


@dataclass(frozen=True)
class Key:
    """An Ed25519 key from a fixed 32-byte seed."""

    seed: bytes = field(repr=False)

    @property
    def public(self) -> bytes:
        priv = Ed25519PrivateKey.from_private_bytes(self.seed)
        return priv.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)

    @property
    def address(self) -> str:
        return address(self.public)

    def sign_raw(self, message: bytes) -> bytes:
        return Ed25519PrivateKey.from_private_bytes(self.seed).sign(message)

    def sign(self, context: str, payload: Any) -> str:
        return b64(self.sign_raw(signing_input(context, payload)))


def birth_digest(record: dict[str, Any]) -> str:
    """Full SHA-256 hex of the canonical birth content."""
    return hashlib.sha256(canon({k: record[k] for k in BIRTH_FIELDS})).hexdigest()


def record_id(record: dict[str, Any]) -> str:
    """``mem:`` + the first 32 hex digits of the birth digest."""
    return "mem:" + birth_digest(record)[:32]
