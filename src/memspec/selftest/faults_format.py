"""Faults of the format profile: canonical JSON, encodings, records, ids and confidence."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from memspec._canonical import MAX_SAFE_INTEGER, canonical_json
from memspec._encoding import canonical_timestamp, check_timestamp
from memspec._errors import EncodingError, MemspecError
from memspec.selftest._shapes import rescue
from memspec.selftest.faults import (
    Fault,
    Inner,
    Json,
    Transform,
    after,
    before,
    only,
    per_op,
    repair,
)

__all__ = ["FAULTS"]

_V = "validate_record"


# -- canonical JSON ------------------------------------------------------------------------


def _dump(value: Any, *, key: Callable[[str], Any] = str, sep: tuple[str, str] = (",", ":"),
          nfc: bool = True) -> bytes:
    """JSON text with a chosen key order, separators and normalization (no value checks)."""

    def walk(item: Any) -> str:
        if isinstance(item, dict):
            pairs = sorted(item.items(), key=lambda kv: key(kv[0]))
            return "{" + sep[0].join(json.dumps(k, ensure_ascii=False) + sep[1] + walk(v)
                                     for k, v in pairs) + "}"
        if isinstance(item, list):
            return "[" + sep[0].join(walk(v) for v in item) + "]"
        return json.dumps(item, ensure_ascii=False)

    text = walk(value)
    return (unicodedata.normalize("NFC", text) if nfc else text).encode("utf-8", "surrogatepass")


def _recanonicalize(*, raw: bool = False, **style: Any) -> Transform:
    """canonicalize answers the same value, re-serialized in another ``style``.

    With ``raw`` the value is read again from the request's text (so whatever the
    engine normalized is lost).
    """

    def run(op: str, args: Json, inner: Inner) -> Json:
        out = inner(op, args)
        value = json.loads(args["text"] if raw else bytes.fromhex(out["hex"]).decode("utf-8"))
        return {"hex": _dump(value, **style).hex()}

    return only("canonicalize", run)


def _no_floats(token: str) -> Any:
    raise ValueError(f"number {token} is not an integer")


def _loose(text: str, **hooks: Any) -> Any:
    """Python's JSON reader, minus what ``hooks`` put back (duplicates always refused)."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(items)
        if len(out) != len(items) and not hooks.get("dups"):
            raise ValueError("duplicate key")
        return out

    return json.loads(text, object_pairs_hook=pairs,
                      parse_float=hooks.get("parse_float", _no_floats),
                      parse_constant=_no_floats)


def _canonicalize_despite(accept: Callable[[str, Inner], bytes | None]) -> Transform:
    """canonicalize: when the engine rejects a text, ``accept`` may answer for it instead."""

    def answer(op: str, args: Json, inner: Inner) -> Json | None:
        text = args.get("text")
        if not isinstance(text, str):
            return None
        try:
            out = accept(text, inner)
        except (ValueError, RecursionError, MemspecError):
            return None
        return None if out is None else {"hex": out.hex()}

    return rescue("canonicalize", "canonical", answer)


def _walk_all(value: Any) -> list[Any]:
    found = [value]
    if isinstance(value, dict):
        found += list(value.keys())
        for item in value.values():
            found += _walk_all(item)
    elif isinstance(value, list):
        for item in value:
            found += _walk_all(item)
    return found


def _accept_floats(text: str, inner: Inner) -> bytes:
    return canonical_json(_loose(text, parse_float=lambda s: int(Decimal(s))))


def _accept_big_ints(text: str, inner: Inner) -> bytes | None:
    value = _loose(text)
    if not any(isinstance(v, int) and abs(v) > MAX_SAFE_INTEGER for v in _walk_all(value)):
        return None
    return _dump(value)


def _lone(item: Any) -> bool:
    return isinstance(item, str) and any(0xD800 <= ord(c) <= 0xDFFF for c in item)


def _accept_surrogates(text: str, inner: Inner) -> bytes | None:
    value = _loose(text)
    return _dump(value) if any(_lone(v) for v in _walk_all(value)) else None


def _accept_non_nfc_keys(text: str, inner: Inner) -> bytes | None:
    value = _loose(text)
    keys = [v for v in _walk_all(value) if isinstance(v, str)]
    return _dump(value) if any(not unicodedata.is_normalized("NFC", k) for k in keys) else None


def _accept_duplicates(text: str, inner: Inner) -> bytes | None:
    try:
        _loose(text)
    except ValueError as exc:
        if "duplicate" not in str(exc):
            return None
        return canonical_json(_loose(text, dups=True))
    return None


def _accept_trailing_commas(text: str, inner: Inner) -> bytes | None:
    fixed = re.sub(r",(\s*[}\]])", r"\1", text)
    if fixed == text:
        return None
    return bytes.fromhex(inner("canonicalize", {"text": fixed})["hex"])


def _strip_bom(args: Json) -> Json:
    text = args.get("text")
    if isinstance(text, str) and text.startswith("\ufeff"):
        args["text"] = text[1:]
    return args


# -- encodings -----------------------------------------------------------------------------


def _any_prefix(address: Any) -> Any:
    if isinstance(address, str) and not address.startswith("amp:key:"):
        return "amp:key:" + address.rsplit(":", 1)[-1]
    return address


def _record_addresses(record: Json) -> None:
    if "signed_by" in record:
        record["signed_by"] = _any_prefix(record["signed_by"])
    if isinstance(record.get("provenance"), dict) and "agent" in record["provenance"]:
        record["provenance"]["agent"] = _any_prefix(record["provenance"]["agent"])


def _address_arg(args: Json) -> Json:
    args["address"] = _any_prefix(args.get("address"))
    return args


def _look_alikes(args: Json) -> Json:
    address = args.get("address")
    if isinstance(address, str) and address.startswith("amp:key:"):
        args["address"] = "amp:key:" + address[8:].translate(str.maketrans("0OIl", "1oiL"))
    return args


def _pad(value: Any) -> Any:
    return value + "==" if isinstance(value, str) and len(value) == 86 else value


def _pad_signature_args(args: Json) -> Json:
    if "signature" in args:
        args["signature"] = _pad(args["signature"])
    if isinstance(args.get("record"), dict):
        args["record"]["signature"] = _pad(args["record"].get("signature"))
    return args


def _respell(value: Any) -> Any:
    try:
        check_timestamp(value)
        return value
    except MemspecError:
        try:
            return canonical_timestamp(value)
        except MemspecError:
            return value


def _respell_record(record: Json) -> None:
    for name in ("created_at", "updated_at", "occurred_at"):
        if name in record:
            record[name] = _respell(record[name])


def _respell_file(args: Json) -> Json:
    if isinstance(args.get("file"), dict) and "created_at" in args["file"]:
        args["file"]["created_at"] = _respell(args["file"]["created_at"])
    return args


def _round_ms(result: Json, args: Json) -> Json:
    frac = re.search(r"[.](\d+)", str(args.get("value", "")))
    if frac and len(frac.group(1)) > 3 and frac.group(1)[3] >= "5":
        moment = datetime.strptime(result["timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ")
        try:
            moment += timedelta(milliseconds=1)
        except OverflowError:
            return result
        result["timestamp"] = moment.strftime("%Y-%m-%dT%H:%M:%S.") + \
            f"{moment.microsecond // 1000:03d}Z"
    return result


_FEB_29 = re.compile(r"(\d{4})(-02-29[Tt])")


def _leap_rule(is_leap: Callable[[int], bool]) -> Transform:
    """canonical_timestamp with its own leap-year test for 29 February (one branch wrong).

    A day the buggy test calls leap is converted as the same instant of a real leap
    year (2024) and given its year back, so the offset and fraction handling stay right.
    """

    def run(op: str, args: Json, inner: Inner) -> Json:
        value = args.get("value")
        match = _FEB_29.match(value) if isinstance(value, str) else None
        if match is None:
            return inner(op, args)
        year = match.group(1)
        if not is_leap(int(year)):
            raise EncodingError(f"{value!r} names no real day")
        result = inner(op, {**args, "value": "2024" + str(value)[4:]})
        stamp = str(result["timestamp"])
        return {**result, "timestamp": year + stamp[4:]} if stamp.startswith("2024") else result

    return only("canonical_timestamp", run)


FAULTS = (
    Fault("canonical-accepts-trailing-commas", "CJ-1", "format",
          "canonicalize drops a trailing comma instead of rejecting the text",
          _canonicalize_despite(_accept_trailing_commas)),
    Fault("canonical-utf16-key-order", "CJ-2", "format",
          "canonical JSON sorts object keys by UTF-16 code units, not code points",
          _recanonicalize(key=lambda k: k.encode("utf-16-be"))),
    Fault("canonical-with-spaces", "CJ-3", "format",
          "canonical JSON puts a space after every ',' and ':'",
          _recanonicalize(sep=(", ", ": "))),
    Fault("canonical-without-nfc", "CJ-4", "format",
          "canonical JSON leaves string values as given instead of normalizing them to NFC",
          _recanonicalize(raw=True, nfc=False)),
    Fault("canonical-accepts-non-nfc-keys", "CJ-5", "format",
          "canonicalize normalizes an object key that is not in NFC instead of rejecting it",
          _canonicalize_despite(_accept_non_nfc_keys)),
    Fault("canonical-accepts-floats", "CJ-6", "format",
          "canonicalize truncates a number with a fraction or exponent to an integer",
          _canonicalize_despite(_accept_floats)),
    Fault("canonical-accepts-big-integers", "CJ-7", "format",
          "canonicalize carries integers beyond 2^53-1", _canonicalize_despite(_accept_big_ints)),
    Fault("canonical-accepts-lone-surrogates", "CJ-8", "format",
          "canonicalize emits a lone surrogate instead of rejecting it",
          _canonicalize_despite(_accept_surrogates)),
    Fault("canonical-keeps-duplicate-keys", "CJ-9", "format",
          "canonicalize lets the last of two duplicate keys win",
          _canonicalize_despite(_accept_duplicates)),
    Fault("canonical-strips-bom", "CJ-10", "format",
          "canonicalize skips a leading byte order mark", before("canonicalize", _strip_bom)),
    Fault("address-wrong-prefix-accepted", "ENC-1", "format",
          "an address with another prefix (or none) is read as amp:key: + its last part",
          per_op({_V: repair(_V, _record_addresses),
                  "parse_address": before("parse_address", _address_arg)})),
    Fault("base58-reads-look-alikes", "ENC-2", "format",
          "base58 decoding reads the excluded characters 0 O I l as 1 o i L",
          before("parse_address", _look_alikes)),
    Fault("base64-padding-optional", "ENC-3", "format",
          "a signature without its '==' padding is accepted",
          before(("decode_signature", "verify_record"), _pad_signature_args)),
    Fault("timestamp-second-spelling", "ENC-4", "format",
          "records and files accept another RFC 3339 spelling of a timestamp (Z without "
          "milliseconds, +00:00, lowercase)",
          per_op({_V: repair(_V, _respell_record),
                  "validate_file": before("validate_file", _respell_file)})),
    Fault("timestamp-rounds-milliseconds", "ENC-5", "format",
          "canonical_timestamp rounds sub-millisecond digits instead of truncating them",
          after("canonical_timestamp", _round_ms)),
    Fault("leap-year-never", "ENC-5", "format",
          "canonical timestamps reject 29 February of every year, leap years included",
          _leap_rule(lambda year: False)),
    Fault("leap-year-always", "ENC-5", "format",
          "canonical timestamps accept 29 February of every year (only the day count of "
          "a leap February is known)", _leap_rule(lambda year: True)),
    Fault("leap-year-every-fourth", "ENC-5", "format",
          "the leap-year test is year % 4 == 0, so 29 February 1900 and 2100 are accepted",
          _leap_rule(lambda year: year % 4 == 0)),
)
