"""Snapshot rollback: the signed ``sequence`` header and the holder's witness (ROLL-1..6).

An attacker who replays an entire older file that the agent really signed passes
every signature check; memspec._rollback lets a holder refuse it. These tests
pin the ROLL requirements (SPEC section 10.1) on the core functions, on an end-to-end
export -> load -> replay through the reference store, and on the reference porcelain.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest

from memspec import (
    FileError,
    MemspecError,
    SignatureError,
    SigningKey,
    canonical_json,
    parse_json,
    sign_file,
    validate_file,
    verify_file,
)
from memspec._rollback import (
    SEQUENCE_FIELD,
    Witness,
    WitnessEntry,
    check_sequence,
    file_digest,
    file_sequence,
    sign_with_sequence,
    verify_fresh,
    with_sequence,
)
from memspec.conformance import _builders as build
from memspec.reference.memory import Memory, export_file, load_file
from memspec.reference.records import MemoryRecord
from memspec.reference.stores import InMemoryRecordStore
from tests.reliability._workers import wait_child

AGENT = SigningKey(bytes(range(1, 33)))
OTHER = SigningKey(bytes(range(33, 65)))
T = [f"2026-08-0{day}T00:00:00.000Z" for day in range(1, 10)]


def _file(*bodies: str, at: str = T[1]) -> dict[str, Any]:
    records = sorted((build.record("fact", body, created_at=T[0]) for body in bodies),
                     key=lambda r: r["id"])
    return build.memory_file(records, created_at=at, agent=AGENT.address)


def _exports() -> tuple[dict[str, Any], dict[str, Any], Witness]:
    """Two successive signed exports (sequence 1 and 2) and the witness after both."""
    old, witness = sign_with_sequence(_file("a", at=T[1]), AGENT, Witness())
    new, witness = sign_with_sequence(_file("a", "b", at=T[2]), AGENT, witness)
    return old, new, witness


# -- the header (ROLL-1, ROLL-2) ---------------------------------------------------------------


@pytest.mark.requirement("ROLL-1")
@pytest.mark.parametrize("value", ["1", -1, 2**53, True, 1.0, None, [1]])
def test_a_malformed_sequence_is_a_file_error(value: object) -> None:
    with pytest.raises(FileError) as info:
        file_sequence({SEQUENCE_FIELD: value})
    assert info.value.requirement == "ROLL-1"
    signed = sign_file({**_file("a"), SEQUENCE_FIELD: 0}, AGENT) | {SEQUENCE_FIELD: value}
    with pytest.raises(FileError):
        check_sequence(signed, Witness())


@pytest.mark.requirement("ROLL-1", "FILE-7")
def test_the_sequence_is_an_ordinary_signed_header_member() -> None:
    stamped = with_sequence(_file("a"), 7)
    assert file_sequence(stamped) == 7 and file_sequence(_file("a")) is None
    signed = sign_file(stamped, AGENT)
    validate_file(signed)
    verify_file(signed)  # a reader that knows nothing of sequence still verifies it
    assert parse_json(canonical_json(signed))[SEQUENCE_FIELD] == 7
    with pytest.raises(SignatureError):
        verify_file({**signed, SEQUENCE_FIELD: 8})
    with pytest.raises(FileError, match="before signing"):
        with_sequence(signed, 9)


@pytest.mark.requirement("ROLL-2")
def test_an_exporter_stamps_increasing_sequences_and_never_goes_back() -> None:
    witness = Witness()
    seen = []
    for i in range(3):
        signed, witness = sign_with_sequence(_file(f"r{i}"), AGENT, witness)
        seen.append(signed[SEQUENCE_FIELD])
    assert seen == [1, 2, 3] and witness.sequence_for(AGENT.address) == 3
    with pytest.raises(SignatureError) as info:
        sign_with_sequence(_file("again"), AGENT, witness, sequence=3)
    assert info.value.requirement == "ROLL-2"
    signed, witness = sign_with_sequence(_file("jump"), AGENT, witness, sequence=10)
    assert witness.next_sequence(AGENT.address) == 11


# -- the witness (ROLL-3..6) -------------------------------------------------------------------


@pytest.mark.requirement("ROLL-4")
def test_an_older_snapshot_is_refused_with_a_signature_error() -> None:
    old, new, witness = _exports()
    verify_file(old)  # every signature of the old snapshot is valid...
    with pytest.raises(SignatureError) as info:
        verify_fresh(old, witness)  # ...but the witness has seen sequence 2
    assert info.value.requirement == "ROLL-4"
    assert AGENT.address in str(info.value) and "sequence 1" in str(info.value)
    assert verify_fresh(new, witness) == witness  # reloading the current file is fine


@pytest.mark.requirement("ROLL-4")
def test_a_file_without_sequence_counts_as_zero() -> None:
    legacy = sign_file(_file("a"), AGENT)
    check_sequence(legacy, Witness())  # accepted: it raises on a rollback, returns nothing
    _, _, witness = _exports()
    with pytest.raises(SignatureError, match="sequence 0"):
        check_sequence(legacy, witness)


@pytest.mark.requirement("ROLL-5")
def test_two_different_files_with_one_sequence_are_a_fork() -> None:
    _, _, witness = _exports()
    fork = sign_file({**_file("a", "c", at=T[3]), SEQUENCE_FIELD: 2}, AGENT)
    with pytest.raises(SignatureError) as info:
        verify_fresh(fork, witness)
    assert info.value.requirement == "ROLL-5" and "fork" in str(info.value)


@pytest.mark.requirement("ROLL-3", "ROLL-6")
def test_only_verified_signed_files_move_the_witness_and_it_never_goes_down() -> None:
    old, new, _ = _exports()
    witness = Witness().advance(new)
    assert witness.sequence_for(AGENT.address) == 2
    assert witness.advance(new) == witness
    unsigned = {**new, "signature": "", SEQUENCE_FIELD: 99}
    assert witness.advance(unsigned) == witness  # an unauthenticated sequence proves nothing
    assert verify_fresh(unsigned, witness, require_signature=False) == witness
    other, _ = sign_with_sequence(_file("x"), OTHER, Witness())
    both = witness.advance(other)
    assert both.sequence_for(OTHER.address) == 1 and both.sequence_for(AGENT.address) == 2
    with pytest.raises(SignatureError):
        both.advance(old)
    assert witness.merge(Witness()).entries == witness.entries


@pytest.mark.requirement("ROLL-3")
def test_witness_file_round_trip_and_atomic_merge(tmp_path: Path) -> None:
    path = tmp_path / "witness.json"
    assert Witness.load(path) == Witness()
    _, new, witness = _exports()
    assert witness.save(path) == witness
    assert Witness.load(path) == witness
    stale = Witness({AGENT.address: WitnessEntry(1, file_digest(new), T[0])})
    assert stale.save(path).sequence_for(AGENT.address) == 2  # saving never lowers
    assert Witness.load(path).sequence_for(AGENT.address) == 2
    assert not list(tmp_path.glob(".witness.json.*.tmp"))


@pytest.mark.parametrize("content", [b"{", b"[]", b'{"format":"memspec-witness/1"}',
                                     b'{"format":"memspec-witness/1","agents":{"x":{}}}'])
def test_a_malformed_witness_file_is_a_typed_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "witness.json"
    path.write_bytes(content)
    with pytest.raises(MemspecError):
        Witness.load(path)


@pytest.mark.requirement("ROLL-3")
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")
def test_concurrent_witness_saves_keep_the_highest(tmp_path: Path) -> None:
    path = tmp_path / "witness.json"
    digest = "0" * 64
    pids = []
    for sequence in range(1, 9):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 0
            try:
                for _ in range(5):
                    Witness({AGENT.address: WitnessEntry(sequence, digest, T[0])}).save(path)
            except BaseException:
                code = 1
            os._exit(code)
        pids.append(pid)
    assert all(wait_child(pid) == 0 for pid in pids)
    assert Witness.load(path).sequence_for(AGENT.address) == 8


# -- end to end through the reference store ----------------------------------------------------


@pytest.mark.requirement("ROLL-4")
def test_a_holder_refuses_a_replayed_snapshot_and_writes_nothing(tmp_path: Path) -> None:
    source = InMemoryRecordStore()
    witness_path = tmp_path / "exporter-witness.json"
    exports = []
    for body, at in (("the kettle is in the left cupboard", T[1]), ("Ana prefers tea", T[2])):
        source.put(MemoryRecord.model_validate(build.record("fact", body, created_at=at)))
        signed, witness = sign_with_sequence(export_file(source, now=at), AGENT,
                                             Witness.load(witness_path))
        witness.save(witness_path)
        exports.append(signed)
    old, new = exports
    holder_witness = tmp_path / "holder-witness.json"
    holder = InMemoryRecordStore()
    accepted = verify_fresh(new, Witness.load(holder_witness))
    load_file(holder, new, verify=True)
    accepted.save(holder_witness)

    replay = InMemoryRecordStore()
    before = holder_witness.read_bytes()
    with pytest.raises(SignatureError, match="rollback"):
        verify_fresh(copy.deepcopy(old), Witness.load(holder_witness))
    assert replay.ids() == () and holder_witness.read_bytes() == before
    load_file(replay, old, verify=True)  # without the witness the replay is accepted
    assert replay.ids() == tuple(r["id"] for r in old["records"])


@pytest.mark.requirement("ROLL-2", "ROLL-4")
def test_memory_porcelain_stamps_and_checks_sequences(tmp_path: Path) -> None:
    clock = iter(T)
    with Memory(tmp_path / "agent", identity=AGENT, clock=lambda: next(clock)) as memory:
        memory.remember("the kettle is in the left cupboard")
        old = memory.export(tmp_path / "old.json", sequence=None)
        memory.remember("Ana prefers tea")
        new = memory.export(tmp_path / "new.json")
    assert (old[SEQUENCE_FIELD], new[SEQUENCE_FIELD]) == (1, 2)
    witness = tmp_path / "holder-witness.json"
    Memory.load(tmp_path / "new.json", path=tmp_path / "holder", witness=witness).close()
    with pytest.raises(SignatureError):
        Memory.load(tmp_path / "old.json", path=tmp_path / "replay", witness=witness)
