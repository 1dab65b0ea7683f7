"""canonical-json.json: the canonicalize operation (strict parse, then canonical bytes)."""

from __future__ import annotations

import json
from typing import Any

from _vectorlib.fixtures import case, group, load_published, vector_file
from _vectorlib.primitives import canon

NAME = "canonical-json"
NOTES = {
    "published": "Taken from the published fg-agent-memory or fg-agent-id golden vectors.",
    "key-order": "Object keys are sorted by Unicode code point at every depth.",
    "code-point-order": "Keys hold characters beyond U+FFFF: code-point order differs from the "
                        "UTF-16 code-unit order of RFC 8785 and of naive sorts in UTF-16 "
                        "languages.",
    "escape": "String escaping: only '\"', '\\' and U+0000-U+001F are escaped (\\b \\f \\n \\r \\t "
              "short forms, otherwise \\u00xx lowercase); everything else, including U+007F, C1 "
              "controls, U+2028/U+2029 and U+FEFF inside a string, is emitted raw.",
    "nfc": "String values are normalized to Unicode NFC in the output.",
    "nfc-per-string": "NFC applies to each string value, never to the JSON text: a combining "
                      "mark after an escape stays a separate character (NFC over the text "
                      "would compose it with the escape's last letter and corrupt the JSON).",
    "non-nfc-key": "An object key that is not already NFC is rejected, never normalized (memspec "
                   "decision: normalizing after sorting would reorder or merge keys).",
    "integer-range": "Integers are carried up to +-(2^53-1); anything beyond is rejected.",
    "float": "A number with a fraction or an exponent (even 1.0 or 1e2) or spelled -0 is rejected.",
    "non-finite": "NaN and Infinity are not JSON and are rejected.",
    "duplicate-key": "JSON text with the same key twice in one object (after unescaping) is "
                     "rejected.",
    "lone-surrogate": "A \\uD800-\\uDFFF escape that is not part of a valid pair cannot be UTF-8 "
                      "and is rejected.",
    "invalid-json": "Text that is not JSON (RFC 8259) is rejected.",
    "bom": "The text starts with U+FEFF, whose UTF-8 encoding is the byte order mark. (Non-UTF-8 "
           "input cannot be carried by a JSON string argument, so CJ-10's other half is tested "
           "by the kit's byte-level tests, not here.)",
    "whitespace": "Insignificant whitespace in the input is accepted and never emitted.",
    "structure": "Nesting, empty containers, literals and top-level scalars.",
}


def _ok(cid: str, comment: str, flags: list[str], reqs: list[str], text: str,
        literal: str | None = None) -> dict[str, Any]:
    out = canon(json.loads(text))
    if literal is not None:
        assert out == literal.encode("utf-8"), (cid, out, literal)
    return case(f"{NAME}/{cid}", comment, flags, reqs, {"text": text},
                expected={"hex": out.hex()})


def _bad(cid: str, comment: str, flags: list[str], reqs: list[str], text: str,
         error: str = "canonical") -> dict[str, Any]:
    return case(f"{NAME}/{cid}", comment, flags, reqs, {"text": text}, error=error)


def _published() -> list[dict[str, Any]]:
    ident = load_published("fg-agent-id-0.2.json")
    mem = load_published("fg-agent-memory-0.1.json")
    tests = []
    for i, item in enumerate(ident["canonical_json"], 1):
        text = json.dumps(item["input"], ensure_ascii=False)
        tests.append(case(f"{NAME}/fg-agent-id-{i}", "fg-agent-id canonical_json vector "
                          f"{i} (input in its published key order)", ["published", "key-order"],
                          ["CJ-2", "CJ-3", "CJ-4"], {"text": text},
                          expected={"hex": item["expected_hex"]}))
    rec = mem["canonical_record"]
    tests.append(case(f"{NAME}/fg-agent-memory-canonical-record", "The published canonical "
                      "record, as indented JSON in wire field order", ["published", "key-order"],
                      ["CJ-2", "CJ-3", "CJ-4"], {"text": json.dumps(rec["record"], indent=2)},
                      expected={"hex": rec["canonical_hex"]}))
    return tests


def _controls_literal() -> tuple[str, str]:
    chars = "".join(chr(c) for c in range(0x20))
    short = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r"}
    escaped = "".join(short.get(c, f"\\u{c:04x}") for c in range(0x20))
    return json.dumps(chars), f'"{escaped}"'


def _accepted() -> list[dict[str, Any]]:
    ctext, clit = _controls_literal()
    e, k = ["escape"], ["key-order"]
    return [
        _ok("sorted-keys", "Keys come out sorted", k, ["CJ-2"], '{"b":1,"a":2,"c":3}',
            '{"a":2,"b":1,"c":3}'),
        _ok("sorted-keys-nested", "Sorted at every depth; arrays keep their order", k,
            ["CJ-2"], '{"z":{"y":1,"x":[3,{"b":1,"a":2}]},"a":[]}',
            '{"a":[],"z":{"x":[3,{"a":2,"b":1}],"y":1}}'),
        _ok("sorted-keys-case", "Uppercase sorts before lowercase (code points, no locale)", k,
            ["CJ-2"], '{"a":1,"B":2,"_":3}', '{"B":2,"_":3,"a":1}'),
        _ok("sorted-keys-numeric-strings", "Digit keys sort as strings, not numbers", k,
            ["CJ-2"], '{"10":1,"9":2,"1":3}', '{"1":3,"10":1,"9":2}'),
        _ok("sorted-keys-prefix", "A key sorts before its extensions; the empty key first", k,
            ["CJ-2", "CJ-4"], '{"ab":1,"a\\u0000":2,"a":3,"":4}',
            '{"":4,"a":3,"a\\u0000":2,"ab":1}'),
        _ok("sorted-keys-latin1", "U+00E9 sorts after every ASCII letter", k, ["CJ-2"],
            '{"\\u00e9":1,"z":2,"f":3}', '{"f":3,"z":2,"\u00e9":1}'),
        _ok("code-point-order-private-use", "U+E000 < U+1F600 by code point; in UTF-16 the "
            "surrogate D83D sorts first", ["key-order", "code-point-order"], ["CJ-2"],
            '{"\\ud83d\\ude00":1,"\\ue000":2}', '{"\ue000":2,"\U0001f600":1}'),
        _ok("code-point-order-ligature", "U+FB01 < U+1F602 by code point (RFC 8785 would put "
            "the emoji first)", ["key-order", "code-point-order"], ["CJ-2"],
            '{"\\ud83d\\ude02":"Smiley","\\ufb01":"fi ligature"}',
            '{"\ufb01":"fi ligature","\U0001f602":"Smiley"}'),
        _ok("escape-all-c0-controls", "All of U+0000-U+001F: five short forms, the rest "
            "\\u00xx in lowercase hex", e, ["CJ-4"], ctext, clit),
        _ok("escape-quote-backslash", "Quote and backslash are escaped; slash is not", e,
            ["CJ-4"], '"a\\"b\\\\c\\/d"', '"a\\"b\\\\c/d"'),
        _ok("escape-del-and-c1-raw", "U+007F and the C1 controls U+0080-U+009F are raw", e,
            ["CJ-4"], '"\\u007f\\u0080\\u009f"', '"\x7f\x80\x9f"'),
        _ok("escape-line-separators-raw", "U+2028 and U+2029 are emitted raw", e, ["CJ-4"],
            '"\\u2028\\u2029"', '"\u2028\u2029"'),
        _ok("escape-bom-inside-string-raw", "U+FEFF inside a string is ordinary text", e,
            ["CJ-4"], '"a\\ufeffb"', '"a\ufeffb"'),
        _ok("escape-decoded-non-ascii", "Escaped non-ASCII input comes out as raw UTF-8", e,
            ["CJ-4"], '"caf\\u00e9"', '"caf\u00e9"'),
        _ok("escape-surrogate-pair", "A valid surrogate pair escape is one raw 4-byte "
            "character", e, ["CJ-4", "CJ-8"], '"\\ud83d\\ude00"', '"\U0001f600"'),
        _ok("escape-control-in-key", "Keys are escaped like values", e, ["CJ-4"],
            '{"\\n":1,"\\u001f":2}', '{"\\n":1,"\\u001f":2}'),
        _ok("nfc-combining-acute", "e + U+0301 composes to U+00E9", ["nfc"], ["CJ-4"],
            '"e\\u0301"', '"\u00e9"'),
        _ok("nfc-ring-above", "A + U+030A composes to U+00C5 (the RFC 8785 'unicode' input)",
            ["nfc"], ["CJ-4"], '{"Unnormalized Unicode":"A\\u030a"}',
            '{"Unnormalized Unicode":"\u00c5"}'),
        _ok("nfc-angstrom-singleton", "U+212B ANGSTROM SIGN becomes U+00C5", ["nfc"], ["CJ-4"],
            '"\\u212b"', '"\u00c5"'),
        _ok("nfc-hangul-jamo", "Conjoining jamo compose to one syllable", ["nfc"], ["CJ-4"],
            '"\\u1100\\u1161\\u11a8"', '"\uac01"'),
        _ok("nfc-canonical-reordering", "Combining marks are put in canonical order", ["nfc"],
            ["CJ-4"], '"q\\u0307\\u0323"', '"q\u0323\u0307"'),
        _ok("nfc-nested-values", "Values are normalized inside arrays and objects", ["nfc"],
            ["CJ-4"], '{"a":["e\\u0301",{"b":"o\\u0308"}]}', '{"a":["\u00e9",{"b":"\u00f6"}]}'),
        _ok("nfc-mark-after-newline-escape", "U+0303 after a newline: the output keeps "
            "\\n then U+0303, never \\ñ", ["nfc", "nfc-per-string"], ["CJ-4"],
            '"\\n\\u0303"', '"\\n\u0303"'),
        _ok("nfc-mark-after-control-escape", "U+0307 after U+001F: the output keeps "
            "\\u001f then U+0307, never \\u001\u1e1f", ["nfc", "nfc-per-string"], ["CJ-4"],
            '"\\u001f\\u0307"', '"\\u001f\u0307"'),
        _ok("nfc-already-normalized", "NFC text is unchanged (including a compatibility "
            "character, which NFC keeps)", ["nfc"], ["CJ-4"], '"\\u00c5\\ufb01"', '"\u00c5\ufb01"'),
        _ok("integer-max-safe", "2^53-1 is carried", ["integer-range"], ["CJ-7"],
            "9007199254740991", "9007199254740991"),
        _ok("integer-min-safe", "-(2^53-1) is carried", ["integer-range"], ["CJ-7"],
            "-9007199254740991", "-9007199254740991"),
        _ok("integer-small", "Zero and small integers", ["integer-range"], ["CJ-1"],
            "[0,-1,1,42]", "[0,-1,1,42]"),
        _ok("whitespace-removed", "Every kind of JSON whitespace in the input disappears",
            ["whitespace"], ["CJ-3"], ' {\t"a" :\r\n [ 1 , 2 ] ,"b": { } }\n',
            '{"a":[1,2],"b":{}}'),
        _ok("literals", "true, false and null", ["structure"], ["CJ-1"],
            '{"t":true,"f":false,"n":null}', '{"f":false,"n":null,"t":true}'),
        _ok("empty-containers", "Empty object and array", ["structure"], ["CJ-1"],
            '[{},[],""]', '[{},[],""]'),
        _ok("top-level-string", "A top-level scalar is a JSON value too", ["structure"],
            ["CJ-1"], '"x"', '"x"'),
        _ok("top-level-integer", "A top-level integer", ["structure"], ["CJ-1"], "7", "7"),
        _ok("deep-nesting", "Twenty levels of mixed nesting", ["structure"], ["CJ-1"],
            '{"a":' * 10 + "[" * 10 + "1" + "]" * 10 + "}" * 10,
            '{"a":' * 10 + "[" * 10 + "1" + "]" * 10 + "}" * 10),
    ]


def _rejected() -> list[dict[str, Any]]:
    f, d, s, j = ["float"], ["duplicate-key"], ["lone-surrogate"], ["invalid-json"]
    return [
        _bad("float-1.0", "1.0 is a float even though its value is integral", f, ["CJ-6"],
             '{"a":1.0}'),
        _bad("float-exponent", "1e2", f, ["CJ-6"], '{"a":1e2}'),
        _bad("float-exponent-upper", "1E2", f, ["CJ-6"], "[1E2]"),
        _bad("float-negative-zero", "-0.0", f, ["CJ-6"], "[-0.0]"),
        _bad("integer-negative-zero", "-0 (integers with a sign on zero differ across "
             "implementations)", f, ["CJ-6"], "[-0]"),
        _bad("float-half", "0.5", f, ["CJ-6"], '{"confidence":0.5}'),
        _bad("float-huge-exponent", "1e400 overflows a double", f, ["CJ-6"], "1e400"),
        _bad("nan", "NaN", ["non-finite"], ["CJ-6"], "[NaN]"),
        _bad("infinity", "Infinity", ["non-finite"], ["CJ-6"], '{"a":Infinity}'),
        _bad("negative-infinity", "-Infinity", ["non-finite"], ["CJ-6"], "-Infinity"),
        _bad("integer-2-53", "2^53 is one past the safe range", ["integer-range"], ["CJ-7"],
             "9007199254740992"),
        _bad("integer-minus-2-53", "-(2^53)", ["integer-range"], ["CJ-7"],
             "[-9007199254740992]"),
        _bad("integer-2-64", "2^64", ["integer-range"], ["CJ-7"],
             '{"n":18446744073709551616}'),
        _bad("duplicate-key", "The same key twice", d, ["CJ-9"], '{"a":1,"a":2}'),
        _bad("duplicate-key-same-value", "Duplicates are rejected even with equal values", d,
             ["CJ-9"], '{"a":1,"a":1}'),
        _bad("duplicate-key-escaped", "\"a\" and \"\\u0061\" are the same key", d, ["CJ-9"],
             '{"a":1,"\\u0061":2}'),
        _bad("duplicate-key-nested", "A duplicate deep inside", d, ["CJ-9"],
             '{"x":[{"k":1,"k":2}]}'),
        _bad("non-nfc-key", "Key e + U+0301 is not NFC", ["non-nfc-key"], ["CJ-5"],
             '{"e\\u0301":1}'),
        _bad("non-nfc-key-singleton", "Key U+212B normalizes to U+00C5", ["non-nfc-key"],
             ["CJ-5"], '{"\\u212b":1,"\\u00c5":2}'),
        _bad("non-nfc-key-nested", "A non-NFC key inside an array", ["non-nfc-key"], ["CJ-5"],
             '[{"o\\u0308":true}]'),
        _bad("non-nfc-key-composition-exclusion", "Key U+FB33 (a composition exclusion from "
             "the RFC 8785 'weird' input) is not NFC", ["non-nfc-key"], ["CJ-5"],
             '{"\\ufb33":"Hebrew Letter Dalet With Dagesh"}'),
        _bad("lone-high-surrogate", "\\ud800 alone", s, ["CJ-8"], '"\\ud800"'),
        _bad("lone-low-surrogate", "\\udc00 alone", s, ["CJ-8"], '"\\udc00"'),
        _bad("reversed-surrogates", "Low then high is not a pair", s, ["CJ-8"],
             '"\\udc00\\ud800"'),
        _bad("high-surrogate-then-text", "High surrogate followed by a letter", s, ["CJ-8"],
             '["\\ud83dx"]'),
        _bad("lone-surrogate-key", "A lone surrogate in a key", s, ["CJ-8"], '{"\\ud800":1}'),
        _bad("empty-text", "No value at all", j, ["CJ-1"], ""),
        _bad("truncated", "Unterminated object", j, ["CJ-1"], '{"a":1'),
        _bad("trailing-comma-object", "Trailing comma in an object", j, ["CJ-1"], '{"a":1,}'),
        _bad("trailing-comma-array", "Trailing comma in an array", j, ["CJ-1"], "[1,]"),
        _bad("single-quotes", "Single-quoted strings", j, ["CJ-1"], "{'a':1}"),
        _bad("unquoted-key", "Unquoted key", j, ["CJ-1"], "{a:1}"),
        _bad("comment", "Comments are not JSON", j, ["CJ-1"], '// note\n{"a":1}'),
        _bad("leading-zero", "01 is not a JSON number", j, ["CJ-1"], "[01]"),
        _bad("plus-sign", "+1 is not a JSON number", j, ["CJ-1"], "[+1]"),
        _bad("missing-comma", "Two values without a separator", j, ["CJ-1"], "[1 2]"),
        _bad("trailing-data", "A second value after the first", j, ["CJ-1"], "true false"),
        _bad("invalid-escape", "\\x41 is not a JSON escape", j, ["CJ-1"], '"\\x41"'),
        _bad("short-unicode-escape", "\\u12 has too few digits", j, ["CJ-1"], '"\\u12"'),
        _bad("raw-control-in-string", "A raw line feed inside a string must be escaped", j,
             ["CJ-1", "CJ-4"], '"a\nb"'),
        _bad("raw-tab-in-string", "A raw tab inside a string must be escaped", j,
             ["CJ-1", "CJ-4"], '"a\tb"'),
        _bad("bom", "Text starting with a byte order mark", ["bom"], ["CJ-10"], '\ufeff{"a":1}'),
    ]


def build() -> dict[str, Any]:
    groups = [
        group("published", "Published golden values", "canonicalize", "format", _published()),
        group("accepted", "Texts with one canonical form", "canonicalize", "format",
              _accepted()),
        group("rejected", "Texts canonical JSON refuses (error class canonical)", "canonicalize",
              "format", _rejected()),
    ]
    return vector_file(NAME, "Canonical JSON: strict parsing of JSON text and the canonical "
                       "bytes (expected.hex) of what it holds. Not RFC 8785: keys sort by code "
                       "point, string values are NFC-normalized and only integers are allowed.",
                       NOTES, groups)
