"""signing-inputs.json, signatures.json and files.json."""

from __future__ import annotations

import copy
from typing import Any

from _vectorlib import edwards
from _vectorlib.fixtures import (
    KEY_A,
    KEY_B,
    KEY_C,
    T1,
    T2,
    B,
    case,
    edit,
    evolve,
    file_of,
    group,
    load_published,
    reid,
    sign,
    sign_file,
    signed_payload,
    vector_file,
    without,
)
from _vectorlib.primitives import Key, address, b64, canon, signing_input
from _vectorlib.records import BASE, EPISODE, OTHER, RULE, tombstone

PUBLISHED_NOTE = "Taken from the published fg-agent-memory or fg-agent-id golden vectors."
#: The order of the Ed25519 group; S must be below it.
L = 2**252 + 27742317777372353535851937790883648493


# --- signing inputs --------------------------------------------------------------------------

def _signing_inputs() -> dict[str, Any]:
    name = "signing-inputs"
    notes = {
        "published": PUBLISHED_NOTE,
        "context": "One of the three contexts: record, memory-file, conformance-report.",
        "unknown-context": "Any other context string, including fg-agent-id's and near misses, "
                           "is rejected (error class signature).",
        "payload": "The payload goes through canonical JSON (sorting, NFC, integer-only).",
    }
    mem = load_published("fg-agent-memory-0.1.json")
    tests = [case(f"{name}/published-{i}", f"Published signing_input vector {i}",
                  ["published", "context"], ["SIG-1"], {"context": item["context"],
                                                       "payload": item["payload"]},
                  expected={"hex": item["expected_hex"]})
             for i, item in enumerate(mem["signing_input"], 1)]
    for key in ("signed_record", "memory_file"):
        art = mem["artifacts"][key]
        tests.append(case(f"{name}/published-{key.replace('_', '-')}",
                          f"The published {key} artifact's signing input",
                          ["published", "context"], ["SIG-1", "SIG-7", "FILE-3"],
                          {"context": art["context"], "payload": art["payload"]},
                          expected={"hex": art["signing_input_hex"]}))
    own = [
        ("conformance-report", "memspec's own context", ["context"], "conformance-report",
         {"engine": "x", "passed": 3}),
        ("empty-payload", "An empty object", ["context"], "record", {}),
        ("array-payload", "A payload need not be an object", ["context", "payload"],
         "memory-file", [3, 1, 2]),
        ("nfc-payload", "A decomposed value is signed in NFC", ["payload"], "record",
         {"body": "Cafe\u0301", "b": 1, "a": [True, None]}),
    ]
    for cid, comment, flags, ctx, payload in own:
        tests.append(case(f"{name}/{cid}", comment, flags, ["SIG-1", "SIG-2"],
                          {"context": ctx, "payload": payload},
                          expected={"hex": signing_input(ctx, payload).hex()}))
    for cid, ctx in [("agent-card", "agent-card"), ("delegation", "delegation"),
                     ("capitalized", "Record"), ("trailing-space", "record "),
                     ("underscore", "memory_file"), ("empty", ""),
                     ("full-tag", "fg-agent-memory/v1/record"), ("file", "file")]:
        tests.append(case(f"{name}/reject-context-{cid}", f"Context {ctx!r}",
                          ["unknown-context"], ["SIG-2"], {"context": ctx, "payload": {"a": 1}},
                          error="signature"))
    tests.append(case(f"{name}/reject-payload-float", "A payload with a float", ["payload"],
                      ["SIG-1", "CJ-6"], {"context": "record", "payload": {"a": 0.5}},
                      error="canonical"))
    tests.append(case(f"{name}/reject-payload-non-nfc-key", "A payload key not in NFC",
                      ["payload"], ["SIG-1", "CJ-5"],
                      {"context": "record", "payload": {"e\u0301": 1}}, error="canonical"))
    return vector_file(name, "Signing input: uint16be(len(tag)) || tag || canonical_json(payload) "
                       "with tag = 'fg-agent-memory/v1/' + context.", notes,
                       [group("signing-input", "Context and payload -> signing input bytes",
                              "signing_input", "signing", tests)])


# --- weak points (SIG-11) --------------------------------------------------------------------

def _weak() -> dict[str, bytes]:
    """Small-order and non-canonical encodings, computed (never listed): see edwards.py."""
    points = edwards.small_order_points()
    identity = edwards.encode(points[0])
    order8 = edwards.encode(points[1])
    assert not edwards.equal(edwards.multiply(4, points[1]), edwards.IDENTITY)
    sign_bit = identity[:31] + bytes([identity[31] | 0x80])
    p_plus_1 = (edwards.P + 1).to_bytes(32, "little")
    assert edwards.decode(sign_bit) is None and edwards.decode(p_plus_1) is None
    assert edwards.decode(sign_bit, lenient=True) == edwards.decode(identity)
    return {"identity": identity, "order-8": order8, "identity-sign-bit": sign_bit,
            "identity-y-p-plus-1": p_plus_1}


def _zero_s_signature(public: bytes, message: bytes) -> bytes:
    """R || 0 with R the small-order point that makes [0]B == R + [h]A hold for the
    small-order key ``public``: a signature nobody made that a cofactorless verifier
    without SIG-11's checks accepts."""
    for point in edwards.small_order_points():
        signature = edwards.encode(point) + bytes(32)
        if edwards.cofactorless_verify(public, message, signature):
            return signature
    raise AssertionError("no small-order R fits this message; pick another")


def _small_r_signature(key: Key, message: bytes, r: bytes) -> bytes:
    """A signature by ``key``'s own secret with the small-order R ``r``: S = h * a mod L,
    so [S]B = [h]A and the equation holds with R contributing nothing."""
    s = edwards.challenge(r, key.public, message) * edwards.secret_scalar(key.seed)
    signature = r + (s % edwards.L).to_bytes(32, "little")
    assert edwards.cofactorless_verify(key.public, message, signature)
    return signature


# --- signatures ------------------------------------------------------------------------------

def _resig(rec: dict[str, Any], signature: str) -> dict[str, Any]:
    return {**rec, "signature": signature}


def _forged(rec: dict[str, Any], key: Key, message: bytes) -> dict[str, Any]:
    """signed_by = key's address, signature over some other message."""
    return {**signed_payload(rec, key.address), "signature": b64(key.sign_raw(message))}


def _url_safe_sig(rec: dict[str, Any]) -> dict[str, Any]:
    """``rec`` with its signature respelled in URL-safe base64 (ENC-3 rejects it)."""
    spelled = rec["signature"].replace("+", "-").replace("/", "_")
    assert spelled != rec["signature"], "the signature has no + or / to respell"
    return {**rec, "signature": spelled}


def _signatures() -> dict[str, Any]:
    name = "signatures"
    notes = {
        "published": PUBLISHED_NOTE,
        "seed": "A fixed seed: A = 00..1f (published), B = 20..3f, C = 40..5f, plus edge seeds.",
        "unsigned": "signed_by null and signature '': verify answers signed false.",
        "tampered": "A signed field changed after signing (the id is recomputed where a birth "
                    "field changed, so only the signature is wrong).",
        "re-attributed": "signed_by names a different key than the one that signed.",
        "replayed": "A valid signature copied from another record.",
        "wrong-domain": "A signature over a signing input of another context, domain or "
                        "layout.",
        "malformed-signature": "The signature text is not the canonical base64 of 64 bytes.",
        "unknown-field": "Extension fields are inside the signed payload.",
        "re-signed": "A record already signed, or a new lifecycle version, signed explicitly.",
        "tombstone": "A redaction tombstone cannot carry a signature.",
        "non-canonical-s": "S is replaced by S + L, the same scalar in a non-canonical encoding.",
        "wrong-input": "The message, key or signature differs from the signed one.",
        "hex-case": "Hexadecimal arguments are accepted in either letter case; hexadecimal "
                    "results are lowercase (PROTO-9).",
        "weak-point": "A small-order or non-canonically encoded public key, or a small-order "
                      "R (SIG-11). Each signature satisfies the cofactorless equation "
                      "[S]B = R + [h]A when encodings are read leniently, so a verifier "
                      "without SIG-11's checks accepts it; libsodium rejects every one.",
    }
    mem = load_published("fg-agent-memory-0.1.json")
    ident = load_published("fg-agent-id-0.2.json")
    canonical = mem["canonical_record"]["record"]
    signed = mem["artifacts"]["signed_record"]["record"]

    derive = []
    for cid, key, flags in [("a", KEY_A, ["published", "seed"]), ("b", KEY_B, ["seed"]),
                            ("c", KEY_C, ["seed"]), ("zero", Key(bytes(32)), ["seed"]),
                            ("ff", Key(b"\xff" * 32), ["seed"])]:
        derive.append(case(f"{name}/derive-{cid}", f"Seed {key.seed.hex()[:8]}...", flags,
                           ["ENC-1", "SIG-5"], {"seed_hex": key.seed.hex()},
                           expected={"address": key.address,
                                     "public_key_hex": key.public.hex()}))
    derive.append(case(f"{name}/derive-uppercase-seed", "Seed C in uppercase hexadecimal: the "
                       "same key, its public key written in lowercase", ["seed", "hex-case"],
                       ["SIG-5", "PROTO-9"], {"seed_hex": KEY_C.seed.hex().upper()},
                       expected={"address": KEY_C.address,
                                 "public_key_hex": KEY_C.public.hex()}))
    for cid, seed in [("short", "00" * 31), ("long", "00" * 33), ("not-hex", "zz" * 32)]:
        derive.append(case(f"{name}/derive-reject-{cid}", f"Seed {cid}", ["seed"], ["SIG-3"],
                           {"seed_hex": seed}, error="encoding"))

    unknown = edit(BASE, **{"x-origin": "import"})
    evolved = evolve(sign(BASE, KEY_A), T2, state="archived", state_reason="Decayed.")
    signing = [
        ("published", "Signing the published record with seed A gives the published "
         "signature", ["published"], canonical, KEY_A, ["SIG-7"]),
        ("seed-b", "A record signed with seed B", ["seed"], BASE, KEY_B, ["SIG-7"]),
        ("unknown-fields", "Extension fields are signed", ["unknown-field"], unknown, KEY_A,
         ["REC-2", "SIG-7"]),
        ("re-sign-other-key", "A record signed by A, signed again by B: signed_by becomes B",
         ["re-signed"], sign(BASE, KEY_A), KEY_B, ["SIG-7"]),
        ("evolved-version", "A new lifecycle version may be re-signed explicitly",
         ["re-signed"], evolved, KEY_A, ["SIG-9", "SIG-10"]),
    ]
    sign_tests = [case(f"{name}/sign-{cid}", comment, flags, reqs,
                       {"record": rec, "seed_hex": key.seed.hex()},
                       expected={"record": sign(rec, key)})
                  for cid, comment, flags, rec, key, reqs in signing]
    assert sign(canonical, KEY_A) == signed
    sign_tests.append(case(f"{name}/sign-reject-tombstone", "A tombstone stays unsigned",
                           ["tombstone"], ["RED-3"],
                           {"record": tombstone(BASE, "Mistake.", T2), "seed_hex":
                            KEY_A.seed.hex()}, error="signature"))

    sb = sign(BASE, KEY_A)
    so = sign(OTHER, KEY_A)
    payload = signed_payload(BASE, KEY_A.address)
    sig_bytes = KEY_A.sign_raw(signing_input("record", payload))
    good = [
        ("published", "The published signed record", ["published"], signed, True),
        ("published-unsigned", "The published unsigned record", ["published", "unsigned"],
         canonical, False),
        ("seed-b", "Signed by seed B", ["seed"], sign(BASE, KEY_B), True),
        ("unknown-fields", "Signed with extension fields", ["unknown-field"],
         sign(unknown, KEY_A), True),
        ("evolved-re-signed", "A new version re-signed", ["re-signed"], sign(evolved, KEY_A),
         True),
        ("evolved-unsigned", "A new version with its signature cleared", ["unsigned"], evolved,
         False),
    ]
    verify = [case(f"{name}/verify-{cid}", comment, flags, ["SIG-5", "SIG-7", "SIG-8"],
                   {"record": rec}, expected={"signed": result})
              for cid, comment, flags, rec, result in good]
    bad = [
        ("tampered-body", "Body changed after signing (id recomputed)", ["tampered"], "SIG-8",
         reid(edit(sb, body="The build uses Python 3.13."))),
        ("tampered-updated-at", "updated_at changed after signing", ["tampered"], "SIG-8",
         edit(sb, updated_at=T1)),
        ("tampered-state", "State moved to archived (with a reason) after signing",
         ["tampered"], "SIG-8", edit(sb, state="archived", state_reason="Decayed.")),
        ("tampered-tags", "A tag added after signing", ["tampered"], "SIG-8",
         edit(sb, tags=["build", "extra"])),
        ("tampered-confidence", "Confidence changed after signing", ["tampered"], "SIG-8",
         edit(sb, confidence="1.0000")),
        ("occurred-at-added", "occurred_at added after signing", ["tampered"], "SIG-8",
         edit(sb, occurred_at="2025-06-01T00:00:00.000Z")),
        ("unknown-field-stripped", "An extension field removed after signing",
         ["tampered", "unknown-field"], "REC-2", without(sign(unknown, KEY_A), "x-origin")),
        ("unknown-field-added", "An extension field added after signing",
         ["tampered", "unknown-field"], "REC-2", edit(sb, **{"x-origin": "import"})),
        ("re-attributed", "signed_by switched to B, A's signature kept", ["re-attributed"],
         "SIG-7", edit(sb, signed_by=B)),
        ("replayed", "The signature of another record by the same key", ["replayed"], "SIG-8",
         _resig(sb, so["signature"])),
        ("memory-file-context", "Signed under the memory-file context", ["wrong-domain"],
         "SIG-4", sign(BASE, KEY_A, context="memory-file")),
        ("conformance-report-context", "Signed under the conformance-report context",
         ["wrong-domain"], "SIG-4", sign(BASE, KEY_A, context="conformance-report")),
        ("fg-agent-id-domain", "Signed under fg-agent-id/v1/record", ["wrong-domain"], "SIG-1",
         _forged(BASE, KEY_A, signing_input("record", payload, domain="fg-agent-id/v1"))),
        ("bare-canonical-json", "Signed over canonical JSON without the domain prefix",
         ["wrong-domain"], "SIG-1", _forged(BASE, KEY_A, canon(payload))),
        ("signer-outside-payload", "Signed over the record with signed_by null",
         ["wrong-domain"], "SIG-7",
         _forged(BASE, KEY_A, signing_input("record", without(BASE, "signature")))),
        ("base64-url-safe", "The valid signature in URL-safe base64",
         ["malformed-signature"], "ENC-3",
         _resig(sb, b64(sig_bytes).replace("+", "-").replace("/", "_"))),
        ("base64-unpadded", "The valid signature without padding", ["malformed-signature"],
         "ENC-3", _resig(sb, b64(sig_bytes).rstrip("="))),
        ("base64-padding-bits", "The valid signature with non-zero padding bits",
         ["malformed-signature"], "ENC-3", _resig(sb, _dirty_padding(b64(sig_bytes)))),
        ("base64-63-bytes", "A 63-byte signature", ["malformed-signature"], "ENC-3",
         _resig(sb, b64(sig_bytes[:63]))),
        ("base64-before-validation", "A URL-safe signature on a record that is also invalid "
         "(its body changed without a new id): the spelling is checked first",
         ["malformed-signature", "tampered"], "ENC-3",
         _resig(edit(sb, body="The build uses Python 3.13."),
                b64(sig_bytes).replace("+", "-").replace("/", "_"))),
    ]
    assert "+" in b64(sig_bytes) or "/" in b64(sig_bytes)
    for cid, comment, flags, req, rec in bad:
        verify.append(case(f"{name}/verify-reject-{cid}", comment, flags, [req],
                           {"record": rec}, error="signature"))

    ed = ident["ed25519"]
    msg, sig = bytes.fromhex(ed["message_hex"]), bytes.fromhex(ed["signature_hex"])
    s_plus_l = (int.from_bytes(sig[32:], "little") + L).to_bytes(32, "little")
    pk_a, pk_b = KEY_A.public.hex(), KEY_B.public.hex()
    raw = [
        ("published", "fg-agent-id's ed25519 vector", ["published"], pk_a, msg, sig, True),
        ("empty-message", "Seed A over the empty message", ["seed"], pk_a, b"",
         KEY_A.sign_raw(b""), True),
        ("wrong-message", "Last message byte changed", ["wrong-input"], pk_a,
         msg[:-1] + b"f", sig, False),
        ("wrong-key", "Verified with B's key", ["wrong-input"], pk_b, msg, sig, False),
        ("flipped-r", "One bit of R flipped", ["wrong-input"], pk_a, msg,
         bytes([sig[0] ^ 1]) + sig[1:], False),
        ("flipped-s", "One bit of S flipped", ["wrong-input"], pk_a, msg,
         sig[:40] + bytes([sig[40] ^ 1]) + sig[41:], False),
        ("s-plus-l", "S + L: the same scalar, non-canonically encoded", ["non-canonical-s"],
         pk_a, msg, sig[:32] + s_plus_l, False),
        ("short-signature", "63 bytes", ["wrong-input"], pk_a, msg, sig[:63], False),
    ]
    ed_tests = [case(f"{name}/ed25519-{cid}", comment, flags, ["SIG-3"],
                     {"public_key_hex": pk, "message_hex": m.hex(), "signature_hex": s.hex()},
                     expected={"valid": ok})
                for cid, comment, flags, pk, m, s, ok in raw]
    ed_tests.append(case(f"{name}/ed25519-uppercase-hex", "fg-agent-id's ed25519 vector with "
                         "every argument in uppercase hexadecimal", ["published", "hex-case"],
                         ["SIG-3", "PROTO-9"],
                         {"public_key_hex": pk_a.upper(), "message_hex": msg.hex().upper(),
                          "signature_hex": sig.hex().upper()}, expected={"valid": True}))
    weak = _weak()
    small_r = edwards.encode(edwards.small_order_points()[0])
    weak_raw = [
        ("identity-key", "The neutral element as key, R the neutral element, S = 0: "
         "verifies any message without SIG-11", weak["identity"], msg,
         _zero_s_signature(weak["identity"], msg)),
        ("order-8-key", "A key of order 8 with S = 0 and the small-order R that fits",
         weak["order-8"], msg, _zero_s_signature(weak["order-8"], msg)),
        ("identity-key-sign-bit", "The neutral element's encoding with the sign bit set "
         "(x = 0 has no negative): non-canonical and small-order", weak["identity-sign-bit"],
         msg, _zero_s_signature(weak["identity-sign-bit"], msg)),
        ("identity-key-y-p-plus-1", "The neutral element spelled y = p + 1: non-canonical "
         "and small-order", weak["identity-y-p-plus-1"], msg,
         _zero_s_signature(weak["identity-y-p-plus-1"], msg)),
        ("small-order-r", "Seed A's key, R the neutral element and S = h * a mod L: made "
         "with A's secret, but R is small-order", KEY_A.public, msg,
         _small_r_signature(KEY_A, msg, small_r)),
    ]
    ed_tests += [case(f"{name}/ed25519-reject-{cid}", comment, ["weak-point"], ["SIG-11"],
                      {"public_key_hex": pk.hex(), "message_hex": m.hex(),
                       "signature_hex": sg.hex()}, expected={"valid": False})
                 for cid, comment, pk, m, sg in weak_raw]
    forged_by = address(weak["identity"])
    forged = {**signed_payload(BASE, forged_by),
              "signature": b64(weak["identity"] + bytes(32))}
    small_r_record = {**payload, "signature": b64(_small_r_signature(
        KEY_A, signing_input("record", payload), small_r))}
    for cid, comment, rec in [
            ("small-order-signer", "signed_by the neutral element's address, R the neutral "
             "element, S = 0: verifies for any content without SIG-11", forged),
            ("small-order-r", "Signed with A's secret but R the neutral element",
             small_r_record)]:
        verify.append(case(f"{name}/verify-reject-{cid}", comment, ["weak-point"], ["SIG-11"],
                           {"record": rec}, error="signature"))
    groups = [
        group("derive-key", "Seed -> public key and address", "derive_key", "signing", derive),
        group("sign-record", "Record and seed -> signed record", "sign_record", "signing",
              sign_tests),
        group("verify-record", "Record -> signed true/false, or error class signature",
              "verify_record", "signing", verify),
        group("ed25519", "Plain Ed25519 verification (Wycheproof covers the edge cases)",
              "ed25519_verify", "signing", ed_tests),
    ]
    return vector_file(name, "Keys and record signatures: derivation from seeds, signing "
                       "(signed_by inside the payload) and strict verification.", notes, groups)


def _dirty_padding(text: str) -> str:
    """Set the unused low bits of the last base64 digit (64 bytes leave four of them)."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    assert text.endswith("==")
    last = alphabet.index(text[-3])
    return text[:-3] + alphabet[last | 0b0101] + "=="


# --- files -----------------------------------------------------------------------------------

def _files() -> dict[str, Any]:
    name = "files"
    notes = {
        "published": PUBLISHED_NOTE,
        "unsigned": "A file with signature '' (and possibly agent null).",
        "header-field": "A file header field: missing, malformed or an extension.",
        "record-inside": "A record inside the file is invalid or carries its own signature.",
        "opt-out": "The caller passed require_signature false.",
        "tampered": "Signed content changed after signing (ids recomputed where a birth field "
                    "changed, so only the signature is wrong).",
        "re-attributed": "agent names a different key than the one that signed.",
        "wrong-domain": "A signature made under the record context.",
        "malformed-signature": "The file signature text is not canonical base64.",
        "duplicate-id": "A record id appears twice.",
        "sequence": "The optional sequence header member (section 10.1): an integer from 0 to "
                    "2^53 - 1, signed like any other header member.",
        "tombstone": "A file holding a tombstone for a record signed by A (FILE-12).",
        "weak-point": "agent is a small-order key and the signature R = the neutral "
                      "element, S = 0, which verifies for any content without SIG-11.",
        "number-token": "A value written with a fraction (3.0): a float, though its value is "
                        "integral; over the process protocol the engine must see the float "
                        "the token spells (PROTO-8).",
    }
    mem = load_published("fg-agent-memory-0.1.json")
    pub = mem["artifacts"]["memory_file"]["file"]
    unsigned_pub = {**pub, "signature": ""}
    records = pub["records"]
    ext = file_of(records, extra={"x-exporter": "memspec-vectors", "x-count": 3})
    signed_ext = sign_file(ext, KEY_A)
    inner_signed = file_of([sign(BASE, KEY_B), EPISODE], created_at=T2)
    empty = file_of([], created_at=T2)

    valid = [
        ("published", "The published signed file", ["published"], ["FILE-1", "FILE-3"], pub),
        ("published-unsigned", "The published file with its signature removed",
         ["published", "unsigned"], ["FILE-1"], unsigned_pub),
        ("empty-unsigned", "No records, no agent, unsigned", ["unsigned"], ["FILE-1"], empty),
        ("unknown-header", "Extension header fields", ["header-field"], ["FILE-7"], signed_ext),
        ("signed-record-inside", "A signed record inside an unsigned file",
         ["record-inside", "unsigned"], ["FILE-6"], inner_signed),
    ]
    vtests = [case(f"{name}/validate-{cid}", comment, flags, reqs, {"file": f},
                   expected={"file": f}) for cid, comment, flags, reqs, f in valid]
    bad_rec = edit(RULE, body="Changed without a new id.")
    invalid: list[tuple[str, str, list[str], str, Any]] = [
        ("not-an-object", "An array", ["header-field"], "FILE-1", [pub]),
    ]
    for field in ("format", "agent", "created_at", "records", "signature"):
        invalid.append((f"missing-{field.replace('_', '-')}", f"No {field}", ["header-field"],
                        "FILE-1", without(unsigned_pub, field)))
    invalid += [
        ("format-version", "format fg-agent-memory/0.2", ["header-field"], "FILE-2",
         edit(unsigned_pub, format="fg-agent-memory/0.2")),
        ("agent-not-address", "agent is not an amp:key: address", ["header-field"], "ENC-1",
         edit(unsigned_pub, agent="did:key:z6Mk")),
        ("created-at-not-canonical", "created_at without milliseconds", ["header-field"],
         "REC-7", edit(unsigned_pub, created_at="2026-01-01T00:00:00Z")),
        ("records-object", "records is an object", ["header-field"], "FILE-1",
         edit(unsigned_pub, records={})),
        ("signature-null", "signature null", ["header-field"], "FILE-1",
         edit(unsigned_pub, signature=None)),
        ("header-float", "An extension header holding a float", ["header-field"], "CJ-6",
         edit(unsigned_pub, **{"x-ratio": 0.5})),
        ("invalid-record", "A record whose id no longer matches its body", ["record-inside"],
         "ID-2", file_of([BASE, bad_rec])),
        ("duplicate-id", "The same record twice", ["duplicate-id"], "FILE-4",
         file_of([BASE, BASE])),
        ("duplicate-id-versions", "Two versions of one record", ["duplicate-id"], "FILE-4",
         file_of([BASE, evolve(BASE, T2, tags=["x"])])),
        ("signed-without-agent", "A signature but agent null", ["header-field"], "FILE-3",
         edit(pub, agent=None)),
        ("record-malformed-signature", "A record inside whose signature is URL-safe base64",
         ["record-inside", "malformed-signature"], "ENC-3",
         file_of([_url_safe_sig(sign(BASE, KEY_B)), EPISODE], created_at=T2)),
    ]
    for cid, comment, flags, req, f in invalid:
        vtests.append(case(f"{name}/validate-reject-{cid}", comment, flags, [req],
                           {"file": f}, error="file"))
    stamped = edit(empty, sequence=1)
    vtests.append(case(f"{name}/validate-sequence", "An unsigned file carrying sequence 1",
                       ["sequence"], ["ROLL-1"], {"file": stamped}, expected={"file": stamped}))
    for cid, value in (("negative", -1), ("string", "3"), ("null", None), ("boolean", True),
                       ("object", {"n": 3})):
        vtests.append(case(f"{name}/validate-reject-sequence-{cid}",
                           f"sequence {value!r}: not an integer from 0 to 2^53 - 1",
                           ["sequence"], ["ROLL-1"], {"file": edit(empty, sequence=value)},
                           error="file"))
    vtests.append(case(f"{name}/validate-reject-header-integral-float", "An extension header "
                       "holding 3.0: a float, though its value is integral",
                       ["header-field", "number-token"], ["CJ-6", "PROTO-8"],
                       {"file": edit(unsigned_pub, **{"x-count": 3.0})}, error="file"))

    stests = [
        case(f"{name}/sign-published", "Signing the published payload with seed A gives the "
             "published file", ["published"], ["FILE-3"],
             {"file": unsigned_pub, "seed_hex": KEY_A.seed.hex()}, expected={"file": pub}),
        case(f"{name}/sign-sets-agent", "agent null becomes the signer's address", ["unsigned"],
             ["FILE-3"], {"file": empty, "seed_hex": KEY_B.seed.hex()},
             expected={"file": sign_file(empty, KEY_B)}),
        case(f"{name}/sign-replaces-agent", "agent B signed with seed C names C",
             ["re-attributed"], ["FILE-3"],
             {"file": edit(empty, agent=B), "seed_hex": KEY_C.seed.hex()},
             expected={"file": sign_file(empty, KEY_C)}),
        case(f"{name}/sign-unknown-header", "Extension header fields are signed",
             ["header-field"], ["FILE-7"], {"file": ext, "seed_hex": KEY_A.seed.hex()},
             expected={"file": signed_ext}),
        case(f"{name}/sign-re-sign", "A signed file signed again by B", ["re-attributed"],
             ["FILE-3"], {"file": pub, "seed_hex": KEY_B.seed.hex()},
             expected={"file": sign_file(pub, KEY_B)}),
    ]
    assert sign_file(unsigned_pub, KEY_A) == pub

    broken_inner = copy.deepcopy(inner_signed)
    broken_inner["records"][0]["updated_at"] = T2
    tampered_rule = reid(edit(records[2], body="Never review the vector diff."))
    ok_verify = [
        ("published", "The published file, verification required", ["published"], pub, True),
        ("published-opt-out", "The published file, caller opted out", ["published", "opt-out"],
         pub, False),
        ("unknown-header", "Signed with extension header fields", ["header-field"], signed_ext,
         True),
        ("signed-record-inside", "Signed file holding a signed record", ["record-inside"],
         sign_file(inner_signed, KEY_A), True),
        ("unsigned-opt-out", "An unsigned file accepted because the caller opted out",
         ["unsigned", "opt-out"], unsigned_pub, False),
        ("unsigned-opt-out-signed-record", "Unsigned file, opt-out, valid signed record inside",
         ["unsigned", "opt-out", "record-inside"], inner_signed, False),
    ]
    ftests = [case(f"{name}/verify-{cid}", comment, flags, ["FILE-3", "FILE-5", "FILE-6"],
                   {"file": f, "require_signature": req}, expected={})
              for cid, comment, flags, f, req in ok_verify]
    signed_stamped = sign_file(file_of([BASE], created_at=T2, extra={"sequence": 3}), KEY_A)
    ftests.append(case(f"{name}/verify-sequence", "A signed file stamped with sequence 3: the "
                       "signature covers it like any header member", ["sequence"],
                       ["ROLL-1", "FILE-7"], {"file": signed_stamped, "require_signature": True},
                       expected={}))
    ftests.append(case(f"{name}/verify-reject-sequence-raised", "The sequence of a signed file "
                       "raised from 3 to 4 after signing", ["sequence", "tampered"],
                       ["FILE-7"], {"file": edit(signed_stamped, sequence=4),
                                    "require_signature": True}, error="signature"))
    bad_verify: list[tuple[str, str, list[str], str, dict[str, Any], bool, str]] = [
        ("stripped-signature", "Signature removed, verification required", ["unsigned"],
         "FILE-5", unsigned_pub, True, "signature"),
        ("unsigned-no-agent", "Never signed, verification required", ["unsigned"], "FILE-5",
         empty, True, "signature"),
        ("tampered-record-body", "A record's body changed (its id recomputed)", ["tampered"],
         "FILE-3", edit(pub, records=[records[0], records[1], tampered_rule]), True,
         "signature"),
        ("tampered-record-lifecycle", "A record archived after signing", ["tampered"],
         "FILE-3", edit(pub, records=[edit(records[0], state="archived",
                                           state_reason="Decayed."), *records[1:]]), True,
         "signature"),
        ("tampered-created-at", "The export time changed", ["tampered"], "FILE-3",
         edit(pub, created_at=T1), True, "signature"),
        ("records-reordered", "The same records in another order", ["tampered"], "FILE-3",
         edit(pub, records=[records[1], records[0], records[2]]), True, "signature"),
        ("record-removed", "One record dropped", ["tampered"], "FILE-3",
         edit(pub, records=records[:2]), True, "signature"),
        ("unknown-header-stripped", "An extension header removed after signing",
         ["tampered", "header-field"], "FILE-7", without(signed_ext, "x-exporter"), True,
         "signature"),
        ("unknown-header-added", "An extension header added after signing",
         ["tampered", "header-field"], "FILE-7", edit(pub, **{"x-note": "added"}), True,
         "signature"),
        ("re-attributed", "agent switched to B, A's signature kept", ["re-attributed"],
         "FILE-3", edit(pub, agent=B), True, "signature"),
        ("record-context", "The file signed under the record context", ["wrong-domain"],
         "SIG-4", sign_file(unsigned_pub, KEY_A, context="record"), True, "signature"),
        ("malformed-signature", "The file signature in URL-safe base64",
         ["malformed-signature"], "ENC-3",
         edit(pub, signature=pub["signature"].replace("+", "-").replace("/", "_")), True,
         "signature"),
        ("broken-record-signature", "Signed file; a signed record inside was changed before "
         "the file was signed", ["record-inside", "tampered"], "FILE-6",
         sign_file(broken_inner, KEY_A), True, "signature"),
        ("broken-record-signature-opt-out", "Opting out of the file signature still verifies "
         "signed records", ["record-inside", "tampered", "opt-out"], "FILE-6", broken_inner,
         False, "signature"),
        ("record-malformed-signature", "A record inside whose signature is URL-safe base64: "
         "a signature failure, not a file-format one", ["record-inside", "malformed-signature"],
         "ENC-3", sign_file(file_of([_url_safe_sig(sign(BASE, KEY_B)), EPISODE],
                                    created_at=T2), KEY_A), True, "signature"),
        ("record-malformed-signature-opt-out", "The same in an unsigned file, the caller "
         "opting out of the file signature", ["record-inside", "malformed-signature", "opt-out",
                                             "unsigned"], "ENC-3",
         file_of([_url_safe_sig(sign(BASE, KEY_B)), EPISODE], created_at=T2), False,
         "signature"),
        ("duplicate-id", "A correctly signed file listing a record twice", ["duplicate-id"],
         "FILE-4", sign_file(file_of([BASE, BASE]), KEY_A), True, "file"),
        ("signed-without-agent", "A signature but agent null", ["header-field"], "FILE-3",
         edit(pub, agent=None), True, "file"),
    ]
    weak = _weak()
    for cid, comment, key, require in [
            ("small-order-agent", "A file of three records whose agent is the neutral "
             "element, signature R = neutral element, S = 0", "identity", True),
            ("small-order-agent-opt-out", "The same with an order-8 agent, the caller opting "
             "out: a signature that is present is still verified", "order-8", False)]:
        forged_payload = {**without(file_of(records, created_at=T2), "signature"),
                          "agent": address(weak[key])}
        message = signing_input("memory-file", forged_payload)
        forged_file = {**forged_payload,
                       "signature": b64(_zero_s_signature(weak[key], message))}
        bad_verify.append((cid, comment, ["weak-point"], "SIG-11", forged_file, require,
                           "signature"))
    assert "+" in pub["signature"] or "/" in pub["signature"]
    for cid, comment, flags, req, f, require, err in bad_verify:
        ftests.append(case(f"{name}/verify-reject-{cid}", comment, flags, [req],
                           {"file": f, "require_signature": require}, error=err))
    groups = [
        group("validate", "File shape and every record in it (error class file)",
              "validate_file", "format", vtests),
        group("sign", "File and seed -> signed file (agent = signer)", "sign_file", "signing",
              stests),
        group("verify", "Verification: the file signature (unless the caller opts out) and "
              "every signed record inside", "verify_file", "signing", ftests),
        group("load", "Load into a store: which records are stored (loaded) and which are not "
              "(skipped), in file order", "load", "files", _load_tests(name)),
    ]
    return vector_file(name, "MemoryFile: validation, signing under the memory-file context "
                       "and verification that the file itself never gets to switch off.",
                       notes, groups)


def _load_tests(name: str) -> list[dict[str, Any]]:
    """FILE-9 and FILE-12: a tombstone claims a free id only from the expected agent's file."""
    tomb = tombstone(sign(BASE, KEY_A), "Stored by mistake.", T2)
    mixed = [EPISODE, tomb, RULE]
    unsigned = file_of(mixed, created_at=T2)
    by_a, by_b = sign_file(unsigned, KEY_A), sign_file(unsigned, KEY_B)
    ids = [r["id"] for r in mixed]
    kept = [EPISODE["id"], RULE["id"]]
    rows: list[tuple[str, str, list[str], dict[str, Any], list[dict[str, Any]], list[str],
                     list[str]]] = [
        ("unsigned-tombstone-skipped", "An unsigned file: its tombstone claims no free id",
         ["FILE-12"], {"file": unsigned, "verify": False}, [], kept, [tomb["id"]]),
        ("signed-tombstone-skipped", "A file signed by B, verified but no expected agent: "
         "the signature vouches for nothing about A's record", ["FILE-12"],
         {"file": by_b, "verify": True}, [], kept, [tomb["id"]]),
        ("own-tombstone-loaded", "A file signed by A, loaded with expected agent A: the "
         "tombstone is A's own redaction and is stored", ["FILE-12", "FILE-11"],
         {"file": by_a, "verify": True, "expected_agent": KEY_A.address}, [], ids, []),
        ("held-id-skipped", "The id is held: even the expected agent's tombstone is skipped",
         ["FILE-9"], {"file": by_a, "verify": True, "expected_agent": KEY_A.address},
         [sign(BASE, KEY_A)], kept, [tomb["id"]]),
    ]
    return [case(f"{name}/load-{cid}", comment, ["tombstone"], reqs, args, setup=setup,
                 expected={"loaded": loaded, "skipped": skipped})
            for cid, comment, reqs, args, setup, loaded, skipped in rows]


def build_all() -> list[dict[str, Any]]:
    return [_signing_inputs(), _signatures(), _files()]
