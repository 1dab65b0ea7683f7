"""memspec's primitives against public vectors nobody in this project wrote.

vectors/external/ holds copies (see vectors/external/README.md for sources and
licences): RFC 8785 (JCS) input/output pairs, RFC 8032 section 7.1, Wycheproof
ed25519_test.json and did:key Ed25519 vectors.

memspec's canonical JSON is not RFC 8785; where the two agree the bytes must be
identical, and where they differ the tests below pin exactly how.
"""

from __future__ import annotations

import base64
import json
import unicodedata
from typing import Any

import pytest

import memspec
from memspec._signing import _weakness, weak_point
from memspec.data import resource_bytes

JCS_AGREE = ("arrays", "french")


def _external(path: str) -> bytes:
    return resource_bytes("vectors", f"external/{path}")


def _jcs(name: str) -> tuple[bytes, bytes]:
    """(input text, expected RFC 8785 output bytes) of one JCS test file."""
    hexed = _external(f"jcs/outhex/{name}.txt").decode("ascii")
    return _external(f"jcs/input/{name}.json"), bytes.fromhex("".join(hexed.split()))


def _ours(text: bytes | str) -> bytes:
    return memspec.canonical_json(memspec.parse_json(text))


# --- RFC 8785 --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", JCS_AGREE)
def test_jcs_identical_where_the_rules_agree(name: str) -> None:
    text, expected = _jcs(name)
    assert _ours(text) == expected


@pytest.mark.parametrize("name", ["structures", "values"])
def test_jcs_floats_are_rejected(name: str) -> None:
    text, _ = _jcs(name)
    with pytest.raises(memspec.CanonicalJSONError) as info:
        _ours(text)
    assert info.value.requirement == "CJ-6"


def test_jcs_structures_identical_once_the_float_is_an_integer() -> None:
    # The only float in 'structures' is 56.0, which RFC 8785 prints as 56.
    text, expected = _jcs("structures")
    assert text.count(b"56.0") == 1
    assert _ours(text.replace(b"56.0", b"56")) == expected


def test_jcs_values_strings_and_literals_identical() -> None:
    # Everything in 'values' but its float array: the string escapes and the literals.
    text, expected = _jcs("values")
    parsed = json.loads(text)
    numbers = b'"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
    assert numbers in expected
    del parsed["numbers"]
    assert memspec.canonical_json(parsed) == expected.replace(numbers, b"")


def test_jcs_unicode_differs_exactly_by_nfc() -> None:
    # RFC 8785 leaves 'A' + U+030A alone; memspec normalizes string values to NFC.
    text, expected = _jcs("unicode")
    ours = _ours(text)
    assert ours != expected
    assert ours == unicodedata.normalize("NFC", expected.decode("utf-8")).encode("utf-8")


WEIRD_NON_NFC = '"\ufb33":"Hebrew Letter Dalet With Dagesh"'


def test_jcs_weird_non_nfc_key_is_rejected() -> None:
    # 'weird' has the key U+FB33, a composition exclusion: its NFC form is U+05D3 U+05BC,
    # so memspec rejects the object (CJ-5) where RFC 8785 sorts it.
    text, _ = _jcs("weird")
    assert not unicodedata.is_normalized("NFC", "\ufb33")
    with pytest.raises(memspec.CanonicalJSONError) as info:
        _ours(text)
    assert info.value.requirement == "CJ-5"


def test_jcs_weird_key_order_differs_exactly_by_code_point_sorting() -> None:
    # RFC 8785 sorts keys by UTF-16 code units; memspec by code point. In 'weird' the two
    # orders differ in exactly one place: U+FB33 (one code unit, 0xFB33) against U+1F602
    # (surrogates 0xD83D 0xDE02).
    _, expected = _jcs("weird")
    rfc_keys = list(json.loads(expected))

    def utf16(key: str) -> bytes:
        return key.encode("utf-16-be")

    assert rfc_keys == sorted(rfc_keys, key=utf16)
    ours = sorted(rfc_keys)
    assert ours != rfc_keys
    moved = [k for k in rfc_keys if k != "\ufb33"]
    moved.insert(moved.index("\U0001f602"), "\ufb33")
    assert ours == moved


def test_jcs_weird_identical_without_the_non_nfc_key() -> None:
    # With the U+FB33 member removed from both sides, every other byte agrees: the key order
    # of the rest, '\n' and '\r' escapes, U+0080 and U+007F raw, '</script>' unescaped.
    text, expected = _jcs("weird")
    parsed = json.loads(text)
    del parsed["\ufb33"]
    member = ("," + WEIRD_NON_NFC).encode("utf-8")
    assert expected.count(member) == 1
    assert memspec.canonical_json(parsed) == expected.replace(member, b"")


# --- RFC 8032 section 7.1 --------------------------------------------------------------------

RFC8032 = json.loads(_external("rfc8032/rfc8032-7.1-ed25519.json"))["vectors"]


@pytest.mark.parametrize("vector", [pytest.param(v, id=v["name"]) for v in RFC8032])
def test_rfc8032(vector: dict[str, str]) -> None:
    key = memspec.SigningKey(bytes.fromhex(vector["secret_key"]))
    message, signature = bytes.fromhex(vector["message"]), bytes.fromhex(vector["signature"])
    assert key.public_key.hex() == vector["public_key"]
    assert key.sign_bytes(message) == signature
    assert memspec.ed25519_verify(key.public_key, message, signature)
    assert not memspec.ed25519_verify(key.public_key, message + b"\0", signature)


def test_rfc8032_count() -> None:
    assert [v["name"] for v in RFC8032] == ["TEST 1", "TEST 2", "TEST 3", "TEST 1024",
                                            "TEST SHA(abc)"]


# --- Wycheproof ------------------------------------------------------------------------------

WYCHEPROOF = json.loads(_external("wycheproof/ed25519_test.json"))
#: (public key hex, test case) for every case; typed, where a pytest.param's values are not.
WYCHEPROOF_PAIRS: list[tuple[str, dict[str, Any]]] = [
    (group["publicKey"]["pk"], test)
    for group in WYCHEPROOF["testGroups"] for test in group["tests"]
]
WYCHEPROOF_CASES = [pytest.param(pk, test, id=f"tc{test['tcId']}")
                    for pk, test in WYCHEPROOF_PAIRS]


@pytest.mark.parametrize(("public_key", "test"), WYCHEPROOF_CASES)
def test_wycheproof_ed25519(public_key: str, test: dict[str, Any]) -> None:
    assert test["result"] in ("valid", "invalid")
    valid = memspec.ed25519_verify(bytes.fromhex(public_key), bytes.fromhex(test["msg"]),
                                   bytes.fromhex(test["sig"]))
    assert valid is (test["result"] == "valid"), (test["comment"], test["flags"])


def test_wycheproof_counts() -> None:
    results = [test["result"] for _, test in WYCHEPROOF_PAIRS]
    assert WYCHEPROOF["numberOfTests"] == len(results) == 151
    assert results.count("valid") == 88
    assert results.count("invalid") == 63


def test_wycheproof_counts_accepted_and_rejected() -> None:
    accepted = sum(
        memspec.ed25519_verify(bytes.fromhex(pk), bytes.fromhex(t["msg"]), bytes.fromhex(t["sig"]))
        for pk, t in WYCHEPROOF_PAIRS)
    assert accepted == 88
    assert len(WYCHEPROOF_CASES) - accepted == 63


# --- did:key ---------------------------------------------------------------------------------

DIDKEY = json.loads(_external("didkey/ed25519-x25519.json"))


def _listed_public_key(entry: dict[str, Any]) -> bytes:
    pair = entry["verificationKeyPair"]
    if "publicKeyBase58" in pair:
        return memspec.b58decode(pair["publicKeyBase58"])
    x = pair["publicKeyJwk"]["x"]
    return base64.urlsafe_b64decode(x + "=" * (-len(x) % 4))


@pytest.mark.parametrize("did", list(DIDKEY))
def test_did_key(did: str) -> None:
    entry = DIDKEY[did]
    public = memspec.SigningKey.from_hex(entry["seed"]).public_key
    assert public == _listed_public_key(entry)
    assert did == "did:key:z" + memspec.b58encode(b"\xed\x01" + public)


def test_did_key_count() -> None:
    assert len(DIDKEY) == 5


# --- Wycheproof and SIG-11 (small-order and non-canonical points) -------------------------

#: The Wycheproof cases SIG-11's weak-point checks reject by themselves: R is a small-order
#: point (tc 10-19 and 25-29 "special values for r and s", tc 60 R == 0, tc 151 y = 1 with the
#: sign bit set). Wycheproof already marks every one invalid, so the checks change no verdict.
WYCHEPROOF_WEAK_R = frozenset({*range(10, 20), *range(25, 30), 60, 151})


def _weak_cases() -> dict[int, str]:
    out: dict[int, str] = {}
    for public_key, test in WYCHEPROOF_PAIRS:
        signature = bytes.fromhex(test["sig"])
        if len(signature) == 64:
            reason = _weakness(bytes.fromhex(public_key), signature)
            if reason is not None:
                out[test["tcId"]] = reason
    return out


def test_wycheproof_has_no_acceptable_cases() -> None:
    # The v1 files dropped Wycheproof's third verdict, "acceptable" (behaviour a library may
    # choose either way); every case is valid or invalid, and memspec reaches each verdict.
    assert {t["result"] for _, t in WYCHEPROOF_PAIRS} == {"valid", "invalid"}


def test_wycheproof_cases_sig11_rejects_are_all_invalid() -> None:
    weak = _weak_cases()
    assert set(weak) == WYCHEPROOF_WEAK_R
    results = {t["tcId"]: t["result"] for _, t in WYCHEPROOF_PAIRS}
    assert {results[tc] for tc in weak} == {"invalid"}
    assert set(weak.values()) == {"the signature's R is a small-order point"}


def test_wycheproof_keys_are_never_weak() -> None:
    keys = {group["publicKey"]["pk"] for group in WYCHEPROOF["testGroups"]}
    assert all(weak_point(bytes.fromhex(key)) is None for key in keys)
