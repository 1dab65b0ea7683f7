"""Canonical JSON (fg-agent-id §3 as memspec pins it) and the strict JSON parser.

Canonical JSON is ``json.dumps(sort_keys=True, separators=(",", ":"),
ensure_ascii=False)`` over a value holding only objects with string keys,
arrays, strings, booleans, null and integers of magnitude at most 2**53 - 1,
then NFC over the text, then UTF-8. memspec rejects what the published
implementations disagree on: object keys not already in NFC (their sort
order would depend on when normalization runs), lone surrogates, integers
beyond the interoperable range, and numbers spelled with a fraction or an
exponent (``1.0``, ``1e2``) or as ``-0``.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from memspec._canonical_fast import load_orjson, load_plain, nfc_utf8
from memspec._errors import CanonicalJSONError, LimitError

__all__ = [
    "DEFAULT_LIMITS",
    "MAX_SAFE_INTEGER",
    "Limits",
    "canonical_json",
    "check_json_value",
    "parse_json",
]

#: Largest integer magnitude canonical JSON carries (I-JSON's interoperable range).
MAX_SAFE_INTEGER = 2**53 - 1


@dataclass(frozen=True)
class Limits:
    """Safe bounds on untrusted input, checked before the input costs memory or time."""

    max_depth: int = 64
    max_text_bytes: int = 64 * 1024 * 1024
    max_string_chars: int = 1024 * 1024
    max_body_chars: int = 256 * 1024
    max_records_per_file: int = 1_000_000
    max_containers: int = 1_000_000

    def __post_init__(self) -> None:
        for name in ("max_depth", "max_text_bytes", "max_string_chars", "max_body_chars",
                     "max_records_per_file", "max_containers"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise LimitError(f"Limits.{name} must be a positive integer, not {value!r}")
        if self.max_depth > _MAX_SUPPORTED_DEPTH:
            raise LimitError(f"Limits.max_depth above {_MAX_SUPPORTED_DEPTH} is not supported "
                             f"(got {self.max_depth})")


#: Deepest nesting the encoder and decoder (recursive, in C) handle within Python's budget.
_MAX_SUPPORTED_DEPTH = 500
#: The recursive fast check stops here and hands deeper values to the iterative walk.
_FAST_DEPTH = 64
DEFAULT_LIMITS = Limits()

def _nfc_strings(value: Any) -> Any:
    kind = type(value)
    if kind is str:
        return unicodedata.normalize("NFC", value)
    if kind is dict:
        return {key: _nfc_strings(sub) for key, sub in value.items()}
    if kind is list or kind is tuple:
        return [_nfc_strings(sub) for sub in value]
    return value


_DUMPS = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode


def _c_dumps() -> Callable[[Any], str]:
    """``_DUMPS`` for checked values, without JSONEncoder's per-call setup when C is there.

    JSONEncoder.encode builds a fresh C encoder on every call, behind two Python wrappers:
    15-30% of encoding a typical record. A checked value is finite and acyclic (the checks bound its
    depth) and holds only JSON types, so one prebuilt encoder without the circular-
    reference markers gives the same text.
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - no C accelerator (e.g. PyPy)
        return _DUMPS
    try:
        encode = make(None, None, json.encoder.encode_basestring, None, ":", ",", True,
                      False, False)
        join = "".join

        def dumps(value: Any) -> str:
            return join(encode(value, 0))

        probe = {"b": [1, -2, None, True, False, "\u00e9\n\"\\"], "a": {}, "\u00e9": []}
        if dumps(probe) != _DUMPS(probe) or dumps("x") != _DUMPS("x"):
            return _DUMPS  # pragma: no cover - a C encoder with another signature
    except Exception:  # pragma: no cover - any surprise: keep the portable path
        return _DUMPS
    return dumps


_CHECKED_DUMPS = _c_dumps()


_FAST_BYTES, _FAST_OPTION = load_orjson(_CHECKED_DUMPS)
#: The accelerator's type walk: memspec._speedups' C form where it is built.
_PLAIN = load_plain()
_DEFAULT_DEPTH = min(DEFAULT_LIMITS.max_depth, _FAST_DEPTH)
_DEFAULT_CHARS = DEFAULT_LIMITS.max_string_chars


def _pointer(path: tuple[str | int, ...]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _fast_check(value: Any, depth: int, limits: Limits) -> bool:
    """True when ``value`` is certainly valid; False sends the caller to the precise walk."""
    kind = type(value)
    max_depth = min(limits.max_depth, _FAST_DEPTH)
    if kind is dict:
        return _dict_ok(value, depth, max_depth, limits.max_string_chars)
    if kind is list or kind is tuple:
        return _list_ok(value, depth, max_depth, limits.max_string_chars)
    return False


# The fast walks: one loop per container kind and the cheapest test first, since this
# runs on every value canonicalized. They only ever answer "certainly valid" or "ask
# _precise_check", which alone words errors. The per-item test is written out in each
# loop rather than shared: a helper call per value cost more than the walk saves (measured
# on the canonical-json benchmark), and tests/test_fastpaths.py holds the copies together.
def _dict_ok(value: dict[Any, Any], depth: int, max_depth: int, max_chars: int) -> bool:
    if depth >= max_depth:
        return False
    for key, item in value.items():
        if type(key) is not str or len(key) > max_chars or not (
                key.isascii() or (_encodable(key) and unicodedata.is_normalized("NFC", key))):
            return False
        sub = type(item)
        if sub is str:
            if len(item) > max_chars or not (item.isascii() or _encodable(item)):
                return False
        elif item is None or sub is bool:
            continue
        elif sub is dict:
            if not _dict_ok(item, depth + 1, max_depth, max_chars):
                return False
        elif sub is list or sub is tuple:
            if not _list_ok(item, depth + 1, max_depth, max_chars):
                return False
        elif sub is not int or not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
            return False
    return True


def _list_ok(value: list[Any] | tuple[Any, ...], depth: int, max_depth: int,
             max_chars: int) -> bool:
    if depth >= max_depth:
        return False
    for item in value:
        sub = type(item)
        if sub is str:
            if len(item) > max_chars or not (item.isascii() or _encodable(item)):
                return False
        elif item is None or sub is bool:
            continue
        elif sub is dict:
            if not _dict_ok(item, depth + 1, max_depth, max_chars):
                return False
        elif sub is list or sub is tuple:
            if not _list_ok(item, depth + 1, max_depth, max_chars):
                return False
        elif sub is not int or not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
            return False
    return True


# canonical_json's walk checks what the encoder's output cannot show: container, key and
# scalar types, integer range, depth, and string and key lengths. Encodability and key NFC
# are read off the encoded text instead (see canonical_json).
def _dict_shape(value: dict[Any, Any], depth: int, max_depth: int, max_chars: int) -> bool:
    if depth >= max_depth:
        return False
    for key, item in value.items():
        if type(key) is not str or len(key) > max_chars:
            return False
        sub = type(item)
        if sub is str:
            if len(item) > max_chars:
                return False
        elif item is None or sub is bool:
            continue
        elif sub is dict:
            if not _dict_shape(item, depth + 1, max_depth, max_chars):
                return False
        elif sub is list or sub is tuple:
            if not _list_shape(item, depth + 1, max_depth, max_chars):
                return False
        elif sub is not int or not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
            return False
    return True


def _list_shape(value: list[Any] | tuple[Any, ...], depth: int, max_depth: int,
                max_chars: int) -> bool:
    if depth >= max_depth:
        return False
    for item in value:
        sub = type(item)
        if sub is str:
            if len(item) > max_chars:
                return False
        elif item is None or sub is bool:
            continue
        elif sub is dict:
            if not _dict_shape(item, depth + 1, max_depth, max_chars):
                return False
        elif sub is list or sub is tuple:
            if not _list_shape(item, depth + 1, max_depth, max_chars):
                return False
        elif sub is not int or not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
            return False
    return True


def check_json_value(value: Any, limits: Limits = DEFAULT_LIMITS) -> None:
    """Raise CanonicalJSONError unless ``value`` is representable in canonical JSON."""
    if _fast_check(value, 0, limits):
        return
    _precise_check(value, limits)


def _precise_check(value: Any, limits: Limits) -> None:
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    max_depth = limits.max_depth
    max_chars = limits.max_string_chars
    while stack:
        item, path = stack.pop()
        kind = type(item)
        if kind is str:
            if len(item) > max_chars:
                raise LimitError(
                    f"string of {len(item)} characters exceeds the limit of {max_chars}",
                    pointer=_pointer(path),
                )
            if not item.isascii() and not _encodable(item):
                raise CanonicalJSONError(
                    "string holds a lone surrogate, which has no UTF-8 encoding",
                    pointer=_pointer(path), requirement="CJ-8",
                )
            continue
        if kind is dict:
            if len(path) >= max_depth:
                raise LimitError(f"nesting deeper than {max_depth}", pointer=_pointer(path))
            for key, sub in item.items():
                if type(key) is not str:
                    raise CanonicalJSONError(
                        f"object key {key!r} is not a string", pointer=_pointer(path),
                        requirement="CJ-1",
                    )
                if len(key) > max_chars:
                    raise LimitError(
                        f"object key of {len(key)} characters exceeds the limit of {max_chars}",
                        pointer=_pointer(path),
                    )
                if not key.isascii() and not _encodable(key):
                    raise CanonicalJSONError(
                        "object key holds a lone surrogate, which has no UTF-8 encoding",
                        pointer=_pointer(path), requirement="CJ-8",
                    )
                if not key.isascii() and not unicodedata.is_normalized("NFC", key):
                    raise CanonicalJSONError(
                        f"object key {key!r} is not in Unicode NFC", pointer=_pointer(path),
                        requirement="CJ-5",
                    )
                stack.append((sub, (*path, key)))
            continue
        if kind is list or kind is tuple:
            if len(path) >= max_depth:
                raise LimitError(f"nesting deeper than {max_depth}", pointer=_pointer(path))
            stack.extend((sub, (*path, i)) for i, sub in enumerate(item))
            continue
        if item is None or kind is bool:
            continue
        if kind is int:
            if -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                continue
            raise CanonicalJSONError(
                f"integer {item} is outside +-(2**53 - 1)", pointer=_pointer(path),
                requirement="CJ-7",
            )
        if kind is float:
            raise CanonicalJSONError(
                f"floating-point number {item!r} is not allowed in canonical JSON",
                pointer=_pointer(path), requirement="CJ-6",
            )
        raise CanonicalJSONError(
            f"{kind.__name__} is not a JSON value", pointer=_pointer(path), requirement="CJ-1"
        )


def canonical_json(value: Any, limits: Limits = DEFAULT_LIMITS) -> bytes:
    """The canonical JSON bytes of ``value``."""
    kind = type(value)
    if limits is DEFAULT_LIMITS:
        depth, chars = _DEFAULT_DEPTH, _DEFAULT_CHARS
    else:
        depth, chars = min(limits.max_depth, _FAST_DEPTH), limits.max_string_chars
    encode = _FAST_BYTES
    if encode is not None and _PLAIN(value, depth):
        # orjson checks what this walk leaves out: keys are exact strings, integers are
        # within +-(2**53 - 1), no string is a lone surrogate; a string or key longer
        # than the limit makes the text longer too. Any refusal or doubt takes the
        # path below, which words errors.
        try:
            data = encode(value, None, _FAST_OPTION)
        except Exception:
            data = None
        if data is not None and len(data) <= chars and (data.isascii() or nfc_utf8(data)):
            return data
    if (kind is dict and _dict_shape(value, 0, depth, chars)) or (
            (kind is list or kind is tuple) and _list_shape(value, 0, depth, chars)):
        # What the walk left out shows in the text: a lone surrogate fails the encode,
        # and NFC text means NFC keys (keys appear verbatim but for escapes of ASCII
        # controls, quote and backslash, which compose with nothing). Any doubt goes to
        # the full check, whose precise walk alone words errors.
        try:
            text = _CHECKED_DUMPS(value)
        except RecursionError as exc:  # pragma: no cover - a caller already deep in its stack
            raise LimitError(f"nesting deeper than {limits.max_depth}") from exc
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            return _utf8(text, value, limits)
        if data.isascii() or nfc_utf8(data):
            return data
    check_json_value(value, limits)
    return _encode_checked(value, limits)


def _canonical_checked(value: Any) -> bytes:
    """Canonical bytes of a value that already passed check_json_value at DEFAULT_LIMITS."""
    return _encode_checked(value, DEFAULT_LIMITS)


def _canonical_nfc(value: Any) -> tuple[bytes, bool]:
    """:func:`_canonical_checked`, and whether the bytes are the value's strings as they
    are: True when every string of ``value`` is already in NFC."""
    data = _accelerated(value)
    if data is None:
        data = _utf8(_CHECKED_DUMPS(value), value, DEFAULT_LIMITS)
    if data.isascii() or nfc_utf8(data):
        return data, True
    return _normalized(value, DEFAULT_LIMITS), False


def _canonical_of_nfc(value: Any) -> bytes:
    """Canonical bytes of a value that passed check_json_value at DEFAULT_LIMITS and whose
    strings the caller knows to be in NFC (each one went through :func:`_canonical_nfc`
    with True): the encoder's output as it is, without testing the text for NFC again."""
    data = _accelerated(value)
    if data is not None:
        return data
    return _utf8(_CHECKED_DUMPS(value), value, DEFAULT_LIMITS)


def _accelerated(value: Any) -> bytes | None:
    """The accelerator's bytes of a checked value, or None without one or when it refuses
    (a lone surrogate, say: the portable encoder then words the error)."""
    encode = _FAST_BYTES
    if encode is None:
        return None
    try:
        return encode(value, None, _FAST_OPTION)
    except Exception:
        return None


def _encode_checked(value: Any, limits: Limits) -> bytes:
    data = _accelerated(value)
    if data is not None and (data.isascii() or nfc_utf8(data)):
        return data
    try:
        text = _CHECKED_DUMPS(value)
    except RecursionError as exc:  # pragma: no cover - max_depth is capped below this
        raise LimitError(f"nesting deeper than {limits.max_depth}") from exc
    if text.isascii() or unicodedata.is_normalized("NFC", text):
        return _utf8(text, value, limits)
    return _normalized(value, limits)


def _normalized(value: Any, limits: Limits) -> bytes:
    """Canonical bytes of a checked value with a string not in NFC."""
    # Normalize each string, never the JSON text: NFC over the text would let a combining
    # mark compose with an escape ("\\n" + U+0303 -> "\\ñ").
    try:
        text = _CHECKED_DUMPS(_nfc_strings(value))
    except RecursionError as exc:  # pragma: no cover - max_depth is capped below this
        raise LimitError(f"nesting deeper than {limits.max_depth}") from exc
    return _utf8(text, value, limits)


def _utf8(text: str, value: Any, limits: Limits) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        check_json_value(value, limits)  # names the string, when the value holds it
        raise CanonicalJSONError(
            "string holds a lone surrogate, which has no UTF-8 encoding", requirement="CJ-8"
        ) from exc


def _parse_int(token: str) -> int:
    if token == "-0":
        raise CanonicalJSONError("-0 is not an integer in every implementation", requirement="CJ-6")
    if len(token.lstrip("-")) > 16:
        raise CanonicalJSONError(f"integer {token} is outside +-(2**53 - 1)", requirement="CJ-7")
    number = int(token)
    if not -MAX_SAFE_INTEGER <= number <= MAX_SAFE_INTEGER:
        raise CanonicalJSONError(f"integer {token} is outside +-(2**53 - 1)", requirement="CJ-7")
    return number


def _parse_float(token: str) -> Any:
    raise CanonicalJSONError(
        f"number {token} has a fraction or exponent; only integers are allowed",
        requirement="CJ-6",
    )


def _parse_constant(token: str) -> Any:
    raise CanonicalJSONError(f"{token} is not valid JSON", requirement="CJ-6")


def _pairs(pairs: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise CanonicalJSONError(f"duplicate object key {key!r}", requirement="CJ-9")
            seen.add(key)
    return out


_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs,
    parse_int=_parse_int,
    parse_float=_parse_float,
    parse_constant=_parse_constant,
)


def parse_json(data: str | bytes, limits: Limits = DEFAULT_LIMITS) -> Any:
    """Parse JSON text strictly: UTF-8, no duplicate keys, integers only, within limits."""
    if isinstance(data, bytes | bytearray):
        if len(data) > limits.max_text_bytes:
            raise LimitError(
                f"JSON text of {len(data)} bytes exceeds the limit of {limits.max_text_bytes}"
            )
        if data.startswith(b"\xef\xbb\xbf"):
            raise CanonicalJSONError("JSON text starts with a byte order mark")
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CanonicalJSONError(f"JSON text is not valid UTF-8: {exc.reason}") from exc
    elif isinstance(data, str):
        text = data
        size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        if size > limits.max_text_bytes:
            raise LimitError(
                f"JSON text of {size} bytes exceeds the limit of {limits.max_text_bytes}"
            )
    else:
        raise CanonicalJSONError(f"expected JSON text, got {type(data).__name__}")
    # An upper bound (brackets inside strings count too), memchr-fast, before any object
    # is built: millions of tiny containers cost far more than their bytes.
    containers = text.count("[") + text.count("{")
    if containers > limits.max_containers:
        raise LimitError(f"JSON text opens up to {containers} arrays and objects, over the "
                         f"limit of {limits.max_containers}")
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise CanonicalJSONError(
            f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from exc
    except RecursionError as exc:
        raise LimitError(f"nesting deeper than {limits.max_depth}") from exc
    check_json_value(value, limits)
    return value
