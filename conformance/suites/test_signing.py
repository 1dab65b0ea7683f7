"""Signatures beyond the vectors: generated round trips, evolution, attribution and contexts."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memspec import (
    CONTEXT_MEMORY_FILE,
    CONTEXT_RECORD,
    CONTEXT_REPORT,
    MemspecError,
    SigningKey,
    sign_file,
    sign_record,
    signed_payload,
    signing_input,
    verify_file,
    verify_record,
)
from memspec import strategies as ms
from memspec.conformance import _builders as build
from memspec.conformance._builders import Keys
from memspec.conformance._clock import KitClock
from memspec.conformance._machines import expect_rejected, kit_settings
from memspec.conformance._outcomes import RequirementFailed, blame
from memspec.conformance._session import EngineSession

KEYS = build.fixed_keys()
_SIGNERS = st.sampled_from([KEYS.a, KEYS.b, KEYS.c])


def _sign(engine: EngineSession, record: dict[str, Any], key: SigningKey) -> dict[str, Any]:
    signed: dict[str, Any] = engine.call("sign_record", record=record,
                                         seed_hex=key.seed.hex())["record"]
    return signed


@pytest.mark.requirement("SIG-7", "REC-2")
@kit_settings()
@given(record=ms.records(signed=False), key=_SIGNERS)
def test_engine_signatures_verify_independently(engine: EngineSession, record: dict[str, Any],
                                                key: SigningKey) -> None:
    with blame("SIG-7"):  # an engine that refuses to sign a valid record breaks SIG-7
        signed = _sign(engine, record, key)
    if signed["signed_by"] != key.address:
        raise RequirementFailed(
            "SIG-7",
            f"sign_record set signed_by to {signed['signed_by']}, not the signer's address")
    unsigned_part = {k: v for k, v in signed.items() if k not in ("signed_by", "signature")}
    if not (unsigned_part == {k: v for k, v in record.items()
                             if k not in ("signed_by", "signature")}):
        raise RequirementFailed(
            "REC-2", "signing changed or dropped record fields (extension fields must survive)")
    try:
        verify_record(signed)
    except MemspecError as exc:
        raise RequirementFailed(
            "SIG-7", f"the engine's signature does not verify over the canonical record with "
            f"signed_by inside the payload ({exc})") from None
    expected = sign_record(record, key)
    if signed["signature"] != expected["signature"]:
        raise RequirementFailed(
            "SIG-7",
            "the engine's Ed25519 signature differs from the one over the specified signing "
            "input (Ed25519 is deterministic)")


@pytest.mark.requirement("SIG-8", "SIG-5")
@kit_settings()
@given(record=ms.records(signed=False), key=_SIGNERS)
def test_engine_verifies_and_rejects_generated_records(
    engine: EngineSession, record: dict[str, Any],
    key: SigningKey) -> None:
    signed = sign_record(record, key)
    with blame("SIG-8"):  # a valid signature must verify
        result = engine.call("verify_record", record=signed)
    if result["signed"] is not True:
        raise RequirementFailed("SIG-8", f"a valid signature was answered {result}")
    with blame("SIG-6"):  # an unsigned record is answered signed false, not rejected
        unsigned = engine.call("verify_record", record=record)
    if unsigned["signed"] is not False:
        raise RequirementFailed(
            "SIG-6", f"an unsigned record was answered {unsigned} instead of signed false")
    tampered = {**signed, "tags": [*signed["tags"], "added after signing"]}
    expect_rejected(engine, "verify_record", "signature", "SIG-8",
                    "a signed record whose tags changed after signing", record=tampered)


@pytest.mark.requirement("SIG-7")
def test_signatures_cannot_be_re_attributed(
    engine: EngineSession, clock: KitClock, keys: Keys
) -> None:
    record = build.record(created_at=clock.now())
    signed = sign_record(record, keys.a)
    for other in (keys.b, keys.c):
        expect_rejected(engine, "verify_record", "signature", "SIG-7",
                        "a signature by A whose signed_by was switched to another key",
                        record={**signed, "signed_by": other.address})
    outside = {**record, "signed_by": None}
    outside.pop("signature")
    bare = {**record, "signed_by": keys.a.address,
            "signature": keys.a.sign(CONTEXT_RECORD, outside)}
    expect_rejected(engine, "verify_record", "signature", "SIG-7",
                    "a signature computed with signed_by outside the payload", record=bare)


@pytest.mark.requirement("SIG-4")
def test_signatures_bind_their_context(engine: EngineSession, clock: KitClock, keys: Keys) -> None:
    record = build.record(created_at=clock.now(), tags=["context"])
    payload = signed_payload(record, keys.a.address)
    for context in (CONTEXT_MEMORY_FILE, CONTEXT_REPORT):
        forged = {**payload, "signature": keys.a.sign(context, payload)}
        expect_rejected(engine, "verify_record", "signature", "SIG-4",
                        f"a record signature made under the {context} context", record=forged)
    memory_file = build.memory_file([record], created_at=clock.now(), agent=keys.a.address)
    header = {k: v for k, v in memory_file.items() if k != "signature"}
    for context in (CONTEXT_RECORD, CONTEXT_REPORT):
        forged_file = {**header, "signature": keys.a.sign(context, header)}
        expect_rejected(engine, "verify_file", "signature", "SIG-4",
                        f"a file signature made under the {context} context",
                        file=forged_file, require_signature=True)


@pytest.mark.requirement("SIG-2")
def test_unknown_contexts_are_rejected(engine: EngineSession) -> None:
    for context in ("Record", "memory_file", "identity", "record/", "", "records"):
        expect_rejected(engine, "signing_input", "signature", "SIG-2",
                        f"signing_input under the unknown context {context!r}",
                        context=context, payload={"a": 1})
    for context in (CONTEXT_RECORD, CONTEXT_MEMORY_FILE, CONTEXT_REPORT):
        got = engine.call("signing_input", context=context, payload={"b": [1, "é"]})["hex"]
        assert got == signing_input(context, {"b": [1, "é"]}).hex(), (
            f"SIG-1: the signing input under context {context!r} differs from the specified one"
        )


@pytest.mark.requirement("SIG-6")
def test_signer_and_signature_go_together(
    engine: EngineSession, clock: KitClock, keys: Keys
) -> None:
    record = build.record(created_at=clock.now())
    signed = sign_record(record, keys.a)
    for what, broken in (("signed_by without a signature", {**record, "signed_by": keys.a.address}),
                         ("a signature without signed_by", {**signed, "signed_by": None})):
        expect_rejected(engine, "verify_record", ("signature", "record"), "SIG-6",
                        f"a record with {what}", record=broken)


@pytest.mark.requirement("SIG-9")
@kit_settings()
@given(record=ms.records(states=["active"], signed=True),
       change=st.sampled_from([{"state": "archived", "state_reason": "retired"},
                               {"tags": ["evolved"]}, {"confidence": "0.1234"},
                               {"flagged": False, "flag_reason": None}]))
def test_evolution_clears_the_signature(engine: EngineSession, record: dict[str, Any],
                                        change: dict[str, Any]) -> None:
    now = max(record["updated_at"], "2026-06-01T00:00:00.000Z")
    evolved = engine.call("evolve_record", record=record, changes=change, now=now)["record"]
    assert evolved["signed_by"] is None and evolved["signature"] == "", (
        f"SIG-9: evolve_record carried the signature forward (signed_by "
        f"{evolved['signed_by']}, signature {evolved['signature'][:12]!r}...)"
    )
    assert verify_record(record) is True, "SIG-9: the signed version no longer verifies"
    assert engine.call("verify_record", record=record)["signed"] is True, (
        "SIG-9: the engine no longer verifies the signed earlier version"
    )


@pytest.mark.requirement("SIG-10")
def test_an_evolved_version_may_be_re_signed(
    engine: EngineSession, clock: KitClock, keys: Keys
) -> None:
    signed = sign_record(build.record(created_at=clock.now()), keys.a)
    evolved = build.evolve(signed, clock.advance(seconds=1), tags=["second"])
    resigned = _sign(engine, evolved, keys.b)
    assert resigned["signed_by"] == keys.b.address and verify_record(resigned), (
        "SIG-10: an evolved version could not be re-signed"
    )


@pytest.mark.requirement("FILE-3")
@kit_settings()
@given(memory_file=ms.memory_files(signed=False), key=_SIGNERS)
def test_file_signatures_round_trip(engine: EngineSession, memory_file: dict[str, Any],
                                    key: SigningKey) -> None:
    signed = engine.call("sign_file", file=memory_file, seed_hex=key.seed.hex())["file"]
    assert signed["agent"] == key.address, (
        f"FILE-3: a file signed by {key.address} names agent {signed['agent']}"
    )
    try:
        verify_file(signed, require_signature=True)
    except MemspecError as exc:
        raise AssertionError(f"FILE-3: the engine's file signature does not verify: {exc}") \
            from None
    assert signed["signature"] == sign_file(memory_file, key)["signature"], (
        "FILE-3: the engine's file signature is not over the specified signing input"
    )
    engine.call("verify_file", file=sign_file(memory_file, key), require_signature=True)
    moved = "1999-01-01T00:00:00.000Z"
    if signed["created_at"] == moved:
        moved = "1999-01-02T00:00:00.000Z"
    expect_rejected(engine, "verify_file", "signature", "FILE-3",
                    "a signed file whose created_at changed after signing",
                    file={**signed, "created_at": moved}, require_signature=True)
