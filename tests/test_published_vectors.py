"""Every published golden check memspec inherits passes through memspec's own code.

vectors/published/ holds verbatim copies of the fg-agent-memory 0.1 and
fg-agent-id 0.2 vectors. Each check below is one published value recomputed
with memspec's core functions; the counts are pinned so that a check cannot
quietly disappear.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import pytest

import memspec
from memspec.data import json_resource

MEMORY: Mapping[str, Any] = json_resource("vectors", "published/fg-agent-memory-0.1.json")
IDENTITY: Mapping[str, Any] = json_resource("vectors", "published/fg-agent-id-0.2.json")
Check = tuple[str, Callable[..., None]]  # a lambda binding its loop item as a default

#: Seeds A, B, C (bytes 00..1f, 20..3f, 40..5f): fg-agent-id's addresses a, b, c are their keys.
SEEDS = {name: bytes(range(i * 32, i * 32 + 32)) for i, name in enumerate("abc")}


def _identity_signing_input(context: str, payload: Any) -> bytes:
    """fg-agent-id's layout (the same as fg-agent-memory's) under the fg-agent-id/v1 domain."""
    tag = f"{IDENTITY['domain']}/{context}".encode()
    return len(tag).to_bytes(2, "big") + tag + memspec.canonical_json(payload)


def _key_a() -> memspec.SigningKey:
    return memspec.SigningKey.from_hex(MEMORY["keys"]["seed_a_hex"])


def _memory_checks() -> list[Check]:
    keys, rid, canon = MEMORY["keys"], MEMORY["record_id"], MEMORY["canonical_record"]
    signed, mfile = MEMORY["artifacts"]["signed_record"], MEMORY["artifacts"]["memory_file"]

    def check_canonical_record_valid() -> None:
        record = canon["record"]
        assert memspec.validate_record(copy.deepcopy(record)) == record
        assert memspec.record_id(record) == record["id"]

    def check_signed_payload() -> None:
        unsigned = {k: v for k, v in signed["record"].items() if k != "signature"}
        assert memspec.signed_payload(unsigned, keys["address_a"]) == signed["payload"]

    checks: list[Check] = [
        ("keys/address-a", lambda: _eq(_key_a().address, keys["address_a"])),
        ("record-id", lambda: _eq(memspec.record_id(rid["birth"]), rid["expected"])),
        ("canonical-record/bytes",
         lambda: _eq(memspec.canonical_json(canon["record"]).hex(), canon["canonical_hex"])),
        ("canonical-record/valid", check_canonical_record_valid),
    ]
    for i, item in enumerate(MEMORY["signing_input"], 1):
        checks.append((f"signing-input/{i}", lambda item=item: _eq(
            memspec.signing_input(item["context"], item["payload"]).hex(),
            item["expected_hex"])))
    checks += [
        ("signed-record/signing-input", lambda: _eq(
            memspec.signing_input(signed["context"], signed["payload"]).hex(),
            signed["signing_input_hex"])),
        ("signed-record/payload", check_signed_payload),
        ("signed-record/signature", lambda: _eq(
            _key_a().sign(signed["context"], signed["payload"]), signed["signature_b64"])),
        ("signed-record/sign-record", lambda: _eq(
            memspec.sign_record(canon["record"], _key_a()), signed["record"])),
        ("signed-record/verify", lambda: _eq(memspec.verify_record(signed["record"]), True)),
        ("memory-file/signing-input", lambda: _eq(
            memspec.signing_input(mfile["context"], mfile["payload"]).hex(),
            mfile["signing_input_hex"])),
        ("memory-file/canonical-bytes", lambda: _eq(
            memspec.file_canonical_bytes(mfile["file"]).hex(), mfile["canonical_bytes_hex"])),
        ("memory-file/payload", lambda: _eq(memspec.file_payload(mfile["file"]),
                                            mfile["payload"])),
        ("memory-file/signature", lambda: _eq(
            _key_a().sign(mfile["context"], mfile["payload"]), mfile["signature_b64"])),
        ("memory-file/sign-file", lambda: _eq(
            memspec.sign_file({**mfile["payload"], "signature": ""}, _key_a()), mfile["file"])),
        ("memory-file/verify", lambda: memspec.verify_file(mfile["file"])),  # returns None
        ("memory-file/validate", lambda: _eq(memspec.validate_file(mfile["file"]),
                                             mfile["file"])),
    ]
    table = {(t["from"], t["to"]): t["legal"]
             for t in json_resource("spec", "legality.json")["transitions"]}
    for item in MEMORY["lifecycle"]["legality"]:
        checks.append((f"legality/{item['from']}-to-{item['to']}", lambda item=item: _eq(
            table[(item["from"], item["to"])], item["legal"])))
    return checks


def _identity_checks() -> list[Check]:
    ed = IDENTITY["ed25519"]
    seed, public = bytes.fromhex(ed["seed_hex"]), bytes.fromhex(ed["public_hex"])
    message, signature = bytes.fromhex(ed["message_hex"]), bytes.fromhex(ed["signature_hex"])
    checks: list[Check] = []
    for i, item in enumerate(IDENTITY["canonical_json"], 1):
        checks.append((f"canonical-json/{i}", lambda item=item: _eq(
            memspec.canonical_json(item["input"]).hex(), item["expected_hex"])))
    for i, item in enumerate(IDENTITY["base58"], 1):
        def check_base58(item: dict[str, str] = item) -> None:
            raw = bytes.fromhex(item["input_hex"])
            assert memspec.b58encode(raw) == item["expected"]
            assert memspec.b58decode(item["expected"]) == raw
        checks.append((f"base58/{i}", check_base58))
    checks += [
        ("ed25519/public-key", lambda: _eq(memspec.SigningKey(seed).public_key, public)),
        ("ed25519/address", lambda: _eq(memspec.address_from_public_key(public),
                                        ed["address"])),
        ("ed25519/signature", lambda: _eq(memspec.SigningKey(seed).sign_bytes(message),
                                          signature)),
        ("ed25519/verify", lambda: _eq(memspec.ed25519_verify(public, message, signature),
                                       True)),
    ]
    for i, item in enumerate(IDENTITY["canonical_timestamp"], 1):
        checks.append((f"canonical-timestamp/{i}", lambda item=item: _eq(
            memspec.canonical_timestamp(item["input"]), item["expected"])))
    for i, item in enumerate(IDENTITY["signing_input"], 1):
        checks.append((f"signing-input/{i}", lambda item=item: _eq(
            _identity_signing_input(item["context"], item["payload"]).hex(),
            item["expected_hex"])))
    signer_field = {"agent_card": "address", "agent_card_critical": "address",
                    "delegation": "issuer", "delegation_critical": "issuer",
                    "revocation": "issuer", "key_revocation": "issuer",
                    "inception": "address", "key_rotation": "previous",
                    "challenge_response": "address"}
    for name, art in IDENTITY["artifacts"].items():
        checks.append((f"artifacts/{name}/signing-input", lambda art=art: _eq(
            _identity_signing_input(art["context"], art["payload"]).hex(),
            art["signing_input_hex"])))

        def check_signature(art: dict[str, Any] = art, name: str = name) -> None:
            key = memspec.public_key_from_address(art["payload"][signer_field[name]])
            raw = memspec.decode_signature(art["signature_b64"])
            assert memspec.encode_signature(raw) == art["signature_b64"]
            message = _identity_signing_input(art["context"], art["payload"])
            assert memspec.ed25519_verify(key, message, raw)
        checks.append((f"artifacts/{name}/signature", check_signature))
    for name, address in IDENTITY["addresses"].items():
        def check_address(name: str = name, address: str = address) -> None:
            key = memspec.public_key_from_address(address)
            assert memspec.address_from_public_key(key) == address
            assert memspec.SigningKey(SEEDS[name]).address == address
        checks.append((f"addresses/{name}", check_address))

    def check_did_document() -> None:
        doc = IDENTITY["did_document"]
        key = memspec.public_key_from_address(doc["address"])
        assert doc["did"] == "did:amp:" + memspec.b58encode(key)
        method = doc["document"]["verificationMethod"][0]
        assert method["publicKeyMultibase"] == "z" + memspec.b58encode(b"\xed\x01" + key)
    checks.append(("did-document/multibase", check_did_document))
    return checks


def _eq(actual: object, expected: object) -> None:
    assert actual == expected


MEMORY_CHECKS = _memory_checks()
IDENTITY_CHECKS = _identity_checks()


@pytest.mark.parametrize("check", [pytest.param(fn, id=name) for name, fn in MEMORY_CHECKS])
def test_fg_agent_memory(check: Callable[[], None]) -> None:
    check()


@pytest.mark.parametrize("check", [pytest.param(fn, id=name) for name, fn in IDENTITY_CHECKS])
def test_fg_agent_id(check: Callable[[], None]) -> None:
    check()


def test_check_counts() -> None:
    # fg-agent-memory: 18 value checks + the 16 legality pairs. fg-agent-id: 3 canonical JSON,
    # 3 base58, 4 Ed25519, 3 timestamps, 2 signing inputs, 9 artifacts x (signing input,
    # signature), 3 addresses, 1 DID multibase key.
    assert len(MEMORY_CHECKS) == 34
    assert len(IDENTITY_CHECKS) == 37


def test_published_copies_are_verbatim_json() -> None:
    # The copies are the published files byte for byte: they parse, and carry the sections
    # the checks above walk.
    assert set(MEMORY) >= {"keys", "record_id", "canonical_record", "signing_input",
                           "artifacts", "lifecycle"}
    assert len(MEMORY["lifecycle"]["legality"]) == 16
    assert sum(t["legal"] for t in MEMORY["lifecycle"]["legality"]) == 7
