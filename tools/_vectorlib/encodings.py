"""addresses.json, signature-encoding.json, timestamps.json and confidence.json."""

from __future__ import annotations

import base64
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from _vectorlib.fixtures import (
    KEY_A,
    KEY_B,
    KEY_C,
    case,
    edit,
    group,
    load_published,
    make,
    vector_file,
)
from _vectorlib.primitives import address, b58, b64

PUBLISHED_NOTE = "Taken from the published fg-agent-memory or fg-agent-id golden vectors."


# --- addresses -------------------------------------------------------------------------------

def _addresses() -> dict[str, Any]:
    name = "addresses"
    notes = {
        "published": PUBLISHED_NOTE,
        "leading-zeros": "Each leading zero byte of the key is one leading '1' in base58.",
        "wrong-prefix": "Anything but the exact prefix 'amp:key:' is rejected.",
        "wrong-length": "The base58 part must decode to exactly 32 bytes. Base58 with the "
                        "one-'1'-per-zero-byte rule is a bijection, so a non-canonical spelling "
                        "of a key (an extra or a missing leading '1') always shows up as a "
                        "wrong length.",
        "invalid-character": "Characters outside the Bitcoin alphabet (0 O I l, punctuation, "
                             "whitespace) are rejected.",
        "not-a-string": "The address is not a JSON string.",
        "hex-case": "Hexadecimal arguments are accepted in either letter case (PROTO-9).",
        "malformed-hex": "A hexadecimal argument with whitespace, a prefix or an odd number of "
                         "digits: class encoding.",
    }
    ident = load_published("fg-agent-id-0.2.json")
    keys = [
        ("key-a", KEY_A.public, ["published"], "Seed A's key (fg-agent-id ed25519 vector)"),
        ("key-b", KEY_B.public, ["published"], "Seed B's key (fg-agent-id address b)"),
        ("key-c", KEY_C.public, ["published"], "Seed C's key (fg-agent-id address c)"),
        ("all-zero", bytes(32), ["leading-zeros"], "Thirty-two zero bytes are 32 '1's"),
        ("one-leading-zero", b"\0" + b"\xff" * 31, ["leading-zeros"], "One leading zero byte"),
        ("two-leading-zeros", b"\0\0" + bytes(range(1, 31)), ["leading-zeros"],
         "Two leading zero bytes"),
        ("all-ff", b"\xff" * 32, [], "The largest key value (44 base58 digits)"),
    ]
    assert ident["ed25519"]["public_hex"] == KEY_A.public.hex()
    enc, dec = [], []
    for cid, key, flags, comment in keys:
        addr = address(key)
        enc.append(case(f"{name}/encode-{cid}", comment, flags, ["ENC-1", "ENC-2"],
                        {"public_key_hex": key.hex()}, expected={"address": addr}))
        dec.append(case(f"{name}/decode-{cid}", comment, flags, ["ENC-1", "ENC-2"],
                        {"address": addr}, expected={"public_key_hex": key.hex()}))
    upper = KEY_B.public.hex().upper()
    mixed = "".join(c.upper() if i % 2 else c for i, c in enumerate(KEY_C.public.hex()))
    assert upper != KEY_B.public.hex() and mixed not in (KEY_C.public.hex(),
                                                         KEY_C.public.hex().upper())
    enc.append(case(f"{name}/encode-uppercase-hex", "The key in uppercase hexadecimal",
                    ["hex-case"], ["ENC-1", "PROTO-9"], {"public_key_hex": upper},
                    expected={"address": KEY_B.address}))
    enc.append(case(f"{name}/encode-mixed-case-hex", "The key in mixed-case hexadecimal",
                    ["hex-case"], ["ENC-1", "PROTO-9"], {"public_key_hex": mixed},
                    expected={"address": KEY_C.address}))
    spaced = KEY_A.public.hex()[:8] + " " + KEY_A.public.hex()[8:]
    for cid, comment, text in (
            ("hex-with-space", "A space between two bytes", spaced),
            ("hex-odd-length", "63 hexadecimal digits", KEY_A.public.hex()[:-1]),
            ("hex-prefix", "A 0x prefix", "0x" + KEY_A.public.hex()),
            ("hex-trailing-newline", "A trailing line feed", KEY_A.public.hex() + "\n")):
        enc.append(case(f"{name}/encode-reject-{cid}", f"{comment}: not hexadecimal",
                        ["malformed-hex"], ["PROTO-9"], {"public_key_hex": text},
                        error="encoding"))
    for cid, size in (("31-bytes", 31), ("33-bytes", 33), ("empty", 0)):
        enc.append(case(f"{name}/encode-key-{cid}", f"A {size}-byte public key has no address",
                        ["wrong-length"], ["ENC-1"], {"public_key_hex": "07" * size},
                        error="encoding"))
    a = KEY_A.address
    body = a[len("amp:key:"):]
    zero_key = address(bytes(32))[len("amp:key:"):]
    lead = address(b"\0" + b"\xff" * 31)[len("amp:key:"):]
    bad = [
        ("prefix-did-key", "did:key: is not the amp:key: form", ["wrong-prefix"],
         "did:key:" + body),
        ("prefix-did-amp", "did:amp: is a DID, not an address", ["wrong-prefix"],
         "did:amp:" + body),
        ("prefix-uppercase", "The prefix is case-sensitive", ["wrong-prefix"],
         "AMP:KEY:" + body),
        ("prefix-missing-colon", "amp:key without the second colon", ["wrong-prefix"],
         "amp:key" + body),
        ("no-prefix", "Bare base58", ["wrong-prefix"], body),
        ("leading-space", "Whitespace before the prefix", ["wrong-prefix"], " " + a),
        ("trailing-newline", "A trailing newline", ["invalid-character"], a + "\n"),
        ("inner-space", "A space after the prefix", ["invalid-character"], "amp:key: " + body),
        ("char-zero", "'0' is not base58", ["invalid-character"], a[:-1] + "0"),
        ("char-capital-o", "'O' is not base58", ["invalid-character"], a[:-1] + "O"),
        ("char-capital-i", "'I' is not base58", ["invalid-character"], a[:-1] + "I"),
        ("char-lowercase-l", "'l' is not base58", ["invalid-character"], a[:-1] + "l"),
        ("char-plus", "'+' is base64, not base58", ["invalid-character"], a[:-1] + "+"),
        ("empty-key", "Prefix only", ["wrong-length"], "amp:key:"),
        ("31-bytes", "Base58 of a 31-byte value", ["wrong-length"],
         "amp:key:" + b58(KEY_A.public[1:])),
        ("33-bytes", "Base58 of a 33-byte value", ["wrong-length"],
         "amp:key:" + b58(KEY_A.public + b"\x01")),
        ("extra-leading-one", "An extra leading '1' adds a zero byte (33 bytes)",
         ["wrong-length", "leading-zeros"], "amp:key:1" + body),
        ("missing-leading-one", "Dropping the '1' of a key that starts with a zero byte "
         "leaves 31 bytes", ["wrong-length", "leading-zeros"], "amp:key:" + lead[1:]),
        ("33-ones", "Thirty-three '1's are 33 zero bytes", ["wrong-length", "leading-zeros"],
         "amp:key:1" + zero_key),
        ("value-over-256-bits", "44 digits whose value needs 33 bytes", ["wrong-length"],
         "amp:key:" + "z" * 44),
    ]
    for cid, comment, flags, text in bad:
        dec.append(case(f"{name}/reject-{cid}", comment, flags, ["ENC-1", "ENC-2"],
                        {"address": text}, error="encoding"))
    dec.append(case(f"{name}/reject-null", "null is not an address", ["not-a-string"],
                    ["ENC-1"], {"address": None}, error="encoding"))
    groups = [
        group("encode", "Public key -> address", "address", "format", enc),
        group("decode", "Address -> public key, and every malformed address rejected",
              "parse_address", "format", dec),
    ]
    return vector_file(name, "amp:key: addresses: 'amp:key:' + base58 (Bitcoin alphabet) of "
                       "the raw 32-byte Ed25519 public key, in both directions.", notes, groups)


# --- signature encoding ----------------------------------------------------------------------

def _signature_encoding() -> dict[str, Any]:
    name = "signature-encoding"
    notes = {
        "published": PUBLISHED_NOTE,
        "canonical": "The one accepted spelling: standard base64 alphabet, '=' padding, 88 "
                     "characters, re-encoding to the same text.",
        "padding": "Missing or extra '=' padding.",
        "wrong-length": "Decodes (or would decode) to a length other than 64 bytes.",
        "alphabet": "Characters outside the standard base64 alphabet, including the URL-safe "
                    "'-' and '_'.",
        "padding-bits": "The unused low bits of the last character are not zero, so the text "
                        "decodes but does not re-encode identically.",
        "whitespace": "Whitespace anywhere, including a MIME-style line break.",
        "not-a-string": "The signature is not a JSON string.",
    }
    mem = load_published("fg-agent-memory-0.1.json")
    rec_sig = mem["artifacts"]["signed_record"]["signature_b64"]
    file_sig = mem["artifacts"]["memory_file"]["signature_b64"]
    assert "/" in rec_sig and "+" in file_sig and rec_sig.endswith("Bw==")
    ok = [
        ("record-signature", "The published record signature", ["published", "canonical"],
         rec_sig),
        ("file-signature", "The published memory-file signature", ["published", "canonical"],
         file_sig),
        ("all-zero", "Sixty-four zero bytes", ["canonical"], b64(bytes(64))),
        ("all-ff", "Sixty-four 0xff bytes", ["canonical"], b64(b"\xff" * 64)),
    ]
    tests = [case(f"{name}/{cid}", comment, flags, ["ENC-3"], {"signature": text},
                  expected={"hex": base64.b64decode(text).hex()})
             for cid, comment, flags, text in ok]
    bad = [
        ("missing-padding", "The '==' is stripped", ["padding"], rec_sig[:-2]),
        ("extra-padding", "A third '='", ["padding", "wrong-length"], rec_sig + "="),
        ("short-63-bytes", "A 63-byte value", ["wrong-length"], b64(bytes(63))),
        ("long-65-bytes", "A 65-byte value", ["wrong-length"], b64(bytes(65))),
        ("empty", "The empty string", ["wrong-length"], ""),
        ("url-safe-underscore", "URL-safe '_' instead of '/'", ["alphabet"],
         rec_sig.replace("/", "_")),
        ("url-safe-dash", "URL-safe '-' instead of '+'", ["alphabet"],
         file_sig.replace("+", "-")),
        ("non-alphabet-char", "'*' is not base64", ["alphabet"], "*" + rec_sig[1:]),
        ("padding-bits", "'Bx==' decodes to the same bytes as 'Bw==' but is not canonical",
         ["padding-bits"], rec_sig[:-3] + "x=="),
        ("padding-bits-max", "'B/==' sets every unused bit", ["padding-bits"],
         rec_sig[:-3] + "/=="),
        ("leading-space", "A leading space", ["whitespace"], " " + rec_sig),
        ("trailing-newline", "A trailing newline", ["whitespace"], rec_sig + "\n"),
        ("inner-space", "A space replacing one character (length still 88)", ["whitespace"],
         rec_sig[:40] + " " + rec_sig[41:]),
        ("mime-line-break", "A line break after 76 characters", ["whitespace"],
         rec_sig[:76] + "\n" + rec_sig[76:]),
    ]
    for cid, comment, flags, text in bad:
        tests.append(case(f"{name}/reject-{cid}", comment, flags, ["ENC-3"],
                          {"signature": text}, error="encoding"))
    tests.append(case(f"{name}/reject-null", "null is not a signature", ["not-a-string"],
                      ["ENC-3"], {"signature": None}, error="encoding"))
    return vector_file(name, "Signature spelling: a 64-byte Ed25519 signature has exactly one "
                       "accepted text, standard padded base64 that re-encodes identically.",
                       notes, [group("decode", "Signature text -> raw bytes (expected.hex)",
                                     "decode_signature", "format", tests)])


# --- timestamps ------------------------------------------------------------------------------

def _timestamps() -> dict[str, Any]:
    name = "timestamps"
    notes = {
        "published": PUBLISHED_NOTE,
        "offset": "A non-UTC offset is converted to UTC (possibly crossing a day or year).",
        "truncation": "Sub-millisecond digits are dropped, never rounded.",
        "lowercase": "RFC 3339 allows lowercase 't' and 'z'; memspec accepts them as input.",
        "no-offset": "A timestamp without a time zone is rejected.",
        "invalid-instant": "The fields are shaped right but name no valid instant.",
        "malformed": "Not an RFC 3339 date-time at all.",
        "out-of-range": "The instant converted to UTC falls outside years 0001-9999.",
        "not-a-string": "The value is not a JSON string.",
    }
    ident = load_published("fg-agent-id-0.2.json")
    tests = [case(f"{name}/fg-agent-id-{i}", f"fg-agent-id canonical_timestamp vector {i}",
                  ["published"], ["ENC-4", "ENC-5"], {"value": item["input"]},
                  expected={"timestamp": item["expected"]})
             for i, item in enumerate(ident["canonical_timestamp"], 1)]
    ok = [
        ("canonical-unchanged", "An already canonical timestamp", [],
         "2026-07-19T12:30:05.123Z", "2026-07-19T12:30:05.123Z"),
        ("z-no-fraction", "Z without a fraction gains .000", [], "2026-03-01T08:09:10Z",
         "2026-03-01T08:09:10.000Z"),
        ("fraction-one-digit", ".1 is padded to .100", ["truncation"],
         "2026-03-01T08:09:10.1Z", "2026-03-01T08:09:10.100Z"),
        ("fraction-two-digits", ".12 is padded to .120", ["truncation"],
         "2026-03-01T08:09:10.12Z", "2026-03-01T08:09:10.120Z"),
        ("truncate-9999", ".9999 truncates to .999 (rounding would carry into the next "
         "second)", ["truncation"], "2026-03-01T08:09:10.9999Z", "2026-03-01T08:09:10.999Z"),
        ("truncate-end-of-year", "23:59:59.9999 stays in the old year", ["truncation"],
         "2025-12-31T23:59:59.9999Z", "2025-12-31T23:59:59.999Z"),
        ("truncate-nanoseconds", "Nine fractional digits", ["truncation"],
         "2026-03-01T08:09:10.123456789Z", "2026-03-01T08:09:10.123Z"),
        ("truncate-5", ".0005 truncates to .000", ["truncation"], "2026-03-01T08:09:10.0005Z",
         "2026-03-01T08:09:10.000Z"),
        ("offset-positive-half-hour", "+05:30", ["offset"], "2026-07-19T18:00:05.123+05:30",
         "2026-07-19T12:30:05.123Z"),
        ("offset-negative-next-day", "-08:00 crosses into the next UTC day", ["offset"],
         "2026-07-19T20:00:00-08:00", "2026-07-20T04:00:00.000Z"),
        ("offset-previous-year", "+01:00 just after midnight is the previous year in UTC",
         ["offset"], "2026-01-01T00:30:00+01:00", "2025-12-31T23:30:00.000Z"),
        ("offset-plus-14", "+14:00", ["offset"], "2026-01-01T13:00:00+14:00",
         "2025-12-31T23:00:00.000Z"),
        ("offset-minus-12", "-12:00", ["offset"], "2026-01-01T12:00:00.5-12:00",
         "2026-01-02T00:00:00.500Z"),
        ("offset-zero-explicit", "+00:00", ["offset"], "2026-01-01T00:00:00.000+00:00",
         "2026-01-01T00:00:00.000Z"),
        ("offset-minus-zero", "-00:00 (RFC 3339 'unknown local offset') is UTC", ["offset"],
         "2026-01-01T00:00:00-00:00", "2026-01-01T00:00:00.000Z"),
        ("leap-day", "29 February of a leap year", [], "2024-02-29T12:00:00Z",
         "2024-02-29T12:00:00.000Z"),
        ("leap-day-2000", "29 February 2000: divisible by 400, a leap year", [],
         "2000-02-29T00:00:00Z", "2000-02-29T00:00:00.000Z"),
        ("leap-day-2400", "29 February 2400: divisible by 400, a leap year", [],
         "2400-02-29T23:59:59.999Z", "2400-02-29T23:59:59.999Z"),
        ("lowercase-z", "Lowercase z", ["lowercase"], "2026-03-01T08:09:10.5z",
         "2026-03-01T08:09:10.500Z"),
        ("lowercase-t", "Lowercase t", ["lowercase"], "2026-03-01t08:09:10Z",
         "2026-03-01T08:09:10.000Z"),
        ("year-one", "The first representable year", [], "0001-01-01T00:00:00Z",
         "0001-01-01T00:00:00.000Z"),
    ]
    for cid, comment, flags, value, expected in ok:
        tests.append(case(f"{name}/{cid}", comment, flags, ["ENC-5"], {"value": value},
                          expected={"timestamp": expected}))
    bad = [
        ("no-offset", "No time zone at all", ["no-offset"], "2026-03-01T08:09:10"),
        ("no-offset-fraction", "No time zone, with a fraction", ["no-offset"],
         "2026-03-01T08:09:10.123"),
        ("date-only", "A date without a time", ["malformed"], "2026-03-01"),
        ("feb-30", "30 February", ["invalid-instant"], "2026-02-30T00:00:00Z"),
        ("feb-29-non-leap", "29 February of a common year", ["invalid-instant"],
         "2025-02-29T00:00:00Z"),
        ("feb-29-2100", "29 February 2100: divisible by 100 but not 400, a common year",
         ["invalid-instant"], "2100-02-29T00:00:00Z"),
        ("feb-29-1900", "29 February 1900: divisible by 100 but not 400, a common year",
         ["invalid-instant"], "1900-02-29T12:00:00+02:00"),
        ("month-13", "Month 13", ["invalid-instant"], "2026-13-01T00:00:00Z"),
        ("hour-24", "Hour 24", ["invalid-instant"], "2026-03-01T24:00:00Z"),
        ("minute-60", "Minute 60", ["invalid-instant"], "2026-03-01T10:60:00Z"),
        ("leap-second", "Second 60 (leap seconds are not representable)", ["invalid-instant"],
         "2016-12-31T23:59:60Z"),
        ("offset-hour-24", "Offset +24:00", ["invalid-instant"], "2026-03-01T10:00:00+24:00"),
        ("year-zero", "Year 0000", ["invalid-instant"], "0000-01-01T00:00:00Z"),
        ("offset-without-colon", "+0100", ["malformed"], "2026-03-01T10:00:00+0100"),
        ("offset-hours-only", "+01", ["malformed"], "2026-03-01T10:00:00+01"),
        ("space-separator", "A space instead of T (memspec accepts only T or t)",
         ["malformed"], "2026-03-01 10:00:00Z"),
        ("empty-fraction", "A dot without digits", ["malformed"], "2026-03-01T10:00:00.Z"),
        ("two-digit-year", "A two-digit year", ["malformed"], "26-03-01T10:00:00Z"),
        ("trailing-text", "Text after the offset", ["malformed"], "2026-03-01T10:00:00Z "),
        ("empty", "The empty string", ["malformed"], ""),
        ("fullwidth-digits", "Fullwidth digits are digits to Unicode, not to RFC 3339",
         ["malformed"], "\uff12\uff10\uff12\uff16-03-01T10:00:00Z"),
        ("arabic-indic-digits", "Arabic-Indic digits in the seconds", ["malformed"],
         "2026-03-01T10:00:\u0660\u0660Z"),
        ("offset-minute-60", "Offset minutes 60 (+05:60 is not +06:00)", ["malformed"],
         "2026-03-01T10:00:00+05:60"),
        ("over-year-9999", "Converting to UTC passes year 9999", ["out-of-range"],
         "9999-12-31T23:00:00-02:00"),
        ("under-year-1", "Converting to UTC falls before year 1", ["out-of-range"],
         "0001-01-01T00:30:00+01:00"),
    ]
    for cid, comment, flags, value in bad:
        tests.append(case(f"{name}/reject-{cid}", comment, flags, ["ENC-5"], {"value": value},
                          error="encoding"))
    tests.append(case(f"{name}/reject-number", "A number is not a timestamp",
                      ["not-a-string"], ["ENC-5"], {"value": 1767225600000}, error="encoding"))
    return vector_file(name, "Timestamps: any RFC 3339 date-time with an offset becomes "
                       "YYYY-MM-DDTHH:MM:SS.mmmZ in UTC, truncated to milliseconds.", notes,
                       [group("canonical", "RFC 3339 text -> canonical timestamp",
                              "canonical_timestamp", "format", tests)])


# --- confidence ------------------------------------------------------------------------------

def _wire(value: float | int) -> str:
    """Half-even on the exact value; the sign of -0.0 is dropped (every in-range value is >= 0)."""
    return str(Decimal(value).quantize(Decimal("0.0001"), rounding=ROUND_HALF_EVEN).copy_abs())


def _confidence() -> dict[str, Any]:
    name = "confidence"
    notes = {
        "half-even": "Rounding is half-to-even on the exact (binary) value of the number.",
        "exact-value": "The decimal literal is not exactly representable; the exact binary "
                       "value decides the rounding, not the literal's digits.",
        "bounds": "The value is exactly 0 or 1.",
        "out-of-range": "The value lies outside [0, 1].",
        "not-a-number": "The value is not a JSON number (a boolean, a string, null).",
        "negative-zero": "-0.0 is zero; its wire form has no sign.",
        "wire-spelling": "A wire confidence string inside a record; exactly four fractional "
                         "digits within [0, 1] are accepted.",
    }
    conv = [
        ("zero", 0, ["bounds"], "Integer 0"),
        ("one", 1, ["bounds"], "Integer 1"),
        ("zero-float", 0.0, ["bounds"], "0.0"),
        ("one-float", 1.0, ["bounds"], "1.0"),
        ("half", 0.5, [], "0.5"),
        ("quarter", 0.25, [], "0.25"),
        ("tie-down", 0.03125, ["half-even"], "0.03125 is exact; the tie goes to the even "
         "digit 2"),
        ("tie-up", 0.09375, ["half-even"], "0.09375 is exact; the tie goes to the even digit 8"),
        ("below-half-ulp", 0.99995, ["exact-value"], "0.99995 is stored just below the tie "
         "(naive decimal rounding would give 1.0000)"),
        ("above-tie", 0.12345, ["exact-value"], "0.12345 is stored just above the tie"),
        ("tiny", 0.00001, [], "Rounds to zero"),
        ("nearly-one", 0.99996, [], "Rounds up to 1.0000"),
        ("third", 1 / 3, [], "A repeating binary fraction"),
        ("negative-zero", -0.0, ["negative-zero"], "-0.0"),
    ]
    tests = []
    for cid, value, flags, comment in conv:
        tests.append(case(f"{name}/to-wire-{cid}", comment, flags, ["CONF-2"],
                          {"value": value}, expected={"wire": _wire(value)}))
    rejected: list[tuple[str, object, list[str], str]] = [
        ("negative", -0.0001, ["out-of-range"], "Just below zero"),
        ("above-one", 1.0001, ["out-of-range"], "Just above one"),
        ("two", 2, ["out-of-range"], "Integer 2"),
        ("minus-one", -1, ["out-of-range"], "Integer -1"),
        ("boolean-true", True, ["not-a-number"], "JSON true is not a number"),
        ("boolean-false", False, ["not-a-number"], "JSON false is not a number"),
        ("string", "0.5", ["not-a-number"], "A string is not a number"),
        ("null", None, ["not-a-number"], "null is not a number"),
    ]
    for cid, rejected_value, flags, comment in rejected:
        tests.append(case(f"{name}/to-wire-reject-{cid}", comment, flags, ["CONF-2"],
                          {"value": rejected_value}, error="record"))
    base = make("fact", "Confidence spellings are exact.", confidence="0.5000")
    records = []
    for cid, spelling, ok in [
        ("0.5000", "0.5000", True), ("0.0000", "0.0000", True), ("1.0000", "1.0000", True),
        ("0.0312", "0.0312", True), ("0.5", "0.5", False), ("1.00000", "1.00000", False),
        ("1.0001", "1.0001", False), ("1.0", "1.0", False), ("minus-0.0000", "-0.0000", False),
        ("dot-5000", ".5000", False), ("trailing-space", "0.5000 ", False),
        ("comma", "0,5000", False), ("exponent", "5.000e-1", False), ("empty", "", False),
        ("arabic-indic-digits", "0.\u0665\u0660\u0660\u0660", False),
        ("fullwidth-digits", "\uff10.\uff15\uff10\uff10\uff10", False),
    ]:
        rec = edit(base, confidence=spelling)
        comment = f"confidence {spelling!r}"
        records.append(case(f"{name}/record-{cid}", comment, ["wire-spelling"], ["CONF-1"],
                            {"record": rec}, **({"expected": {"record": rec}} if ok else
                                                {"error": "record"})))
    not_strings: list[tuple[str, float | None, str]] = [
        ("number", 0.5, "The number 0.5 instead of a string"),
        ("integer", 1, "The integer 1 instead of a string"), ("null", None, "null")]
    for cid, wrong, comment in not_strings:
        records.append(case(f"{name}/record-{cid}", comment, ["not-a-number"], ["CONF-1"],
                            {"record": edit(base, confidence=wrong)}, error="record"))
    groups = [
        group("to-wire", "Number -> wire string (error class record)", "confidence_to_wire",
              "format", tests),
        group("in-record", "Wire spellings accepted and rejected by record validation",
              "validate_record", "format", records),
    ]
    return vector_file(name, "Confidence: a number in [0, 1] rounds half-to-even on its exact "
                       "value to a four-digit decimal string; records carry only that string.",
                       notes, groups)


def build_all() -> list[dict[str, Any]]:
    return [_addresses(), _signature_encoding(), _timestamps(), _confidence()]
