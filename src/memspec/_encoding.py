"""Spellings with exactly one valid form: base58, ``amp:key:`` addresses,
base64 signatures, timestamps and wire confidence; and hexadecimal arguments,
read in either letter case."""

from __future__ import annotations

import base64
import binascii
import functools
import re
from datetime import UTC, date, datetime
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

from memspec._errors import EncodingError, RecordError

__all__ = [
    "ADDRESS_PREFIX",
    "address_from_public_key",
    "b58decode",
    "b58encode",
    "canonical_timestamp",
    "check_timestamp",
    "confidence_from_wire",
    "confidence_to_wire",
    "decode_hex",
    "decode_signature",
    "encode_signature",
    "public_key_from_address",
    "timestamp_from_datetime",
]

_B58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_B58_INDEX = {c: i for i, c in enumerate(_B58_ALPHABET)}
ADDRESS_PREFIX = "amp:key:"
#: Base58 digits of the largest 32-byte key: no address is longer (checked before decoding,
#: which is quadratic in the length).
_MAX_KEY_B58 = 44
_HEX = re.compile(r"(?:[0-9a-fA-F]{2})*\Z")


def decode_hex(text: object, *, name: str = "argument") -> bytes:
    """Bytes from hexadecimal text in either letter case (PROTO-9); nothing else is allowed.

    Unlike :meth:`bytes.fromhex`, whitespace anywhere, a prefix and an odd number
    of digits are rejected (class ``encoding``).
    """
    if not isinstance(text, str):
        raise EncodingError(f"{name} must be a hexadecimal string, not {type(text).__name__}")
    if not _HEX.match(text):
        raise EncodingError(f"{name} is not hexadecimal: an even number of the digits 0-9, "
                            "a-f and A-F, and nothing else", requirement="PROTO-9")
    return bytes.fromhex(text)


def b58encode(data: bytes) -> str:
    """Base58 (Bitcoin alphabet), big-endian, each leading zero byte as ``1``."""
    zeros = len(data) - len(data.lstrip(b"\0"))
    number = int.from_bytes(data, "big")
    digits = []
    while number:
        number, rem = divmod(number, 58)
        digits.append(_B58_ALPHABET[rem])
    return "1" * zeros + "".join(reversed(digits))


def b58decode(text: str) -> bytes:
    """Inverse of :func:`b58encode`; any character outside the alphabet is an error."""
    if not isinstance(text, str):
        raise EncodingError(f"base58 text must be a string, not {type(text).__name__}")
    number = 0
    for char in text:
        digit = _B58_INDEX.get(char)
        if digit is None:
            raise EncodingError(f"{char!r} is not a base58 character", requirement="ENC-2")
        number = number * 58 + digit
    zeros = len(text) - len(text.lstrip("1"))
    body = number.to_bytes((number.bit_length() + 7) // 8, "big") if number else b""
    return b"\0" * zeros + body


def address_from_public_key(public_key: bytes) -> str:
    """The self-certifying address ``amp:key:<base58(public key)>`` of a raw Ed25519 key."""
    if len(public_key) != 32:
        raise EncodingError(f"an Ed25519 public key has 32 bytes, not {len(public_key)}")
    return ADDRESS_PREFIX + b58encode(public_key)


def public_key_from_address(address: object) -> bytes:
    """The raw 32-byte Ed25519 public key an ``amp:key:`` address certifies."""
    if not isinstance(address, str):
        raise EncodingError(
            f"an address must be a string, not {type(address).__name__}", requirement="ENC-1"
        )
    if len(address) > len(ADDRESS_PREFIX) + _MAX_KEY_B58:
        raise EncodingError(f"address of {len(address)} characters is longer than any "
                            "amp:key: address", requirement="ENC-1")
    if type(address) is str:
        return _cached_key(address)
    return _decode_address(address)


def _decode_address(address: str) -> bytes:
    if not address.startswith(ADDRESS_PREFIX):
        raise EncodingError(f"address {address!r} does not start with 'amp:key:'",
                            requirement="ENC-1")
    key = b58decode(address[len(ADDRESS_PREFIX):])
    if len(key) != 32:
        raise EncodingError(
            f"address {address!r} encodes {len(key)} bytes, not a 32-byte key",
            requirement="ENC-1",
        )
    return key


# A file or a store names a handful of signers over and over; base58 decoding is a
# Python loop. lru_cache keeps only returned keys: a bad address raises afresh each time.
# Only exact str is cached, and keys are immutable bytes.
_cached_key = functools.lru_cache(maxsize=1024)(_decode_address)


_B64 = re.compile(r"[A-Za-z0-9+/]*={0,2}\Z")


def encode_signature(signature: bytes) -> str:
    """The one canonical spelling of a signature: standard base64 with padding."""
    return base64.b64encode(signature).decode("ascii")


def decode_signature(text: object) -> bytes:
    """Decode a 64-byte Ed25519 signature, accepting only its canonical base64 spelling."""
    if not isinstance(text, str):
        raise EncodingError(
            f"a signature must be a string, not {type(text).__name__}", requirement="ENC-3"
        )
    if len(text) != 88 or not _B64.match(text):
        raise EncodingError(
            "a signature must be 88 characters of standard, padded base64", requirement="ENC-3"
        )
    try:
        # base64.b64decode(text, validate=True) and encode_signature without their
        # Python wrappers: three signatures are decoded per record of a verified file.
        raw = binascii.a2b_base64(text, strict_mode=True)
    except binascii.Error as exc:
        raise EncodingError(f"signature is not valid base64: {exc}", requirement="ENC-3") from exc
    if len(raw) != 64 or binascii.b2a_base64(raw, newline=False) != text.encode("ascii"):
        raise EncodingError(
            "signature is not in canonical base64 (non-zero padding bits)", requirement="ENC-3"
        )
    return raw


_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z\Z", re.ASCII)
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d)\Z",
    re.ASCII,
)


def timestamp_from_datetime(moment: datetime) -> str:
    """Render an aware datetime as ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (UTC, truncated to ms)."""
    if not isinstance(moment, datetime):
        raise EncodingError(f"expected a datetime, not {type(moment).__name__}")
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise EncodingError("timestamp has no time zone", requirement="ENC-5")
    try:
        utc = moment.astimezone(UTC)
    except OverflowError as exc:
        raise EncodingError("timestamp is outside years 0001-9999 in UTC",
                            requirement="ENC-5") from exc
    return (f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:"
            f"{utc.second:02d}.{utc.microsecond // 1000:03d}Z")


def canonical_timestamp(value: object) -> str:
    """Parse an RFC 3339 timestamp (offset required) into its canonical spelling."""
    if isinstance(value, datetime):
        return timestamp_from_datetime(value)
    if not isinstance(value, str):
        raise EncodingError(f"a timestamp must be a string, not {type(value).__name__}",
                            requirement="ENC-5")
    match = _RFC3339.match(value)
    if match is None:
        raise EncodingError(
            f"{value!r} is not an RFC 3339 timestamp with a time zone offset", requirement="ENC-5"
        )
    year, month, day, hour, minute, second, frac, offset = match.groups()
    micro = int((frac or "0")[:6].ljust(6, "0"))
    iso = f"{year}-{month}-{day}T{hour}:{minute}:{second}.{micro:06d}"
    iso += "+00:00" if offset in ("Z", "z") else offset
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError as exc:
        raise EncodingError(f"{value!r} is not a valid instant: {exc}",
                            requirement="ENC-5") from exc
    return timestamp_from_datetime(moment)


def check_timestamp(value: object, *, field: str = "timestamp") -> str:
    """Return ``value`` if it is a timestamp in its canonical spelling, else raise."""
    if not isinstance(value, str) or not _TIMESTAMP.match(value):
        raise EncodingError(
            f"{field} {value!r} is not spelled YYYY-MM-DDTHH:MM:SS.mmmZ", requirement="ENC-4"
        )
    # The regex fixed every position to an ASCII digit, so two-digit fields compare as
    # strings; together with the calendar day this rejects exactly what strptime did:
    # year 0, month, day (leap years included), hour, minute and second out of range
    # (milliseconds cannot be).
    try:
        if value[11:13] > "23" or value[14:16] > "59" or value[17:19] > "59":
            raise ValueError("time of day out of range")
        _calendar_day(value[:10])
    except ValueError as exc:
        raise EncodingError(f"{field} {value!r} is not a valid instant",
                            requirement="ENC-4") from exc
    return value


@functools.lru_cache(maxsize=4096)
def _calendar_day(day: str) -> None:
    """Raise ValueError unless ``YYYY-MM-DD`` (ASCII digits) is a day of years 1-9999.

    Cached: a store's timestamps fall on few days. A ValueError is not cached.
    """
    date(int(day[0:4]), int(day[5:7]), int(day[8:10]))


_CONFIDENCE = re.compile(r"(?:0\.\d{4}|1\.0000)\Z", re.ASCII)
_QUANTUM = Decimal("0.0001")


def confidence_to_wire(value: object) -> str:
    """Render a confidence in [0, 1] as its wire string, rounded half-even to 4 decimals."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise RecordError(f"confidence must be a number, not {type(value).__name__}",
                          requirement="CONF-2")
    try:
        exact = Decimal(value)
    except InvalidOperation as exc:  # pragma: no cover - Decimal accepts every float
        raise RecordError(f"confidence {value!r} is not a number", requirement="CONF-2") from exc
    if not exact.is_finite() or not Decimal(0) <= exact <= Decimal(1):
        raise RecordError(f"confidence {value!r} is outside [0, 1]", requirement="CONF-2")
    # copy_abs: -0.0 is a valid confidence but "-0.0000" is not a valid spelling
    return str(exact.quantize(_QUANTUM, rounding=ROUND_HALF_EVEN).copy_abs())


def confidence_from_wire(value: object) -> float:
    """Parse a wire confidence string (exactly four fractional digits, within [0, 1])."""
    if not isinstance(value, str) or not _CONFIDENCE.match(value):
        raise RecordError(
            f"confidence {value!r} is not a decimal string with four fractional digits in [0, 1]",
            requirement="CONF-1",
        )
    return float(value)
