"""ReferenceEngine: every operation through ``engine.call``, typed errors, and every vector.

The vector test is the "reference engine passes every vector" proof: each case
of each ``vectors/*.json`` file runs against a fresh engine over each store
kind (reset; put the setup records; call; compare ``expected`` or the error
class, and for a rejection check that nothing was written).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memspec import (
    ERROR_CLASSES,
    PROTOCOL_VERSION,
    SPEC_VERSION,
    MemspecError,
    SigningKey,
    UnsupportedError,
)
from memspec.conformance._placeholders import bind_placeholders
from memspec.data import json_resource, operations_with, vector_files
from memspec.engine import extension_profiles, operations, profiles
from memspec.protocol import check_handshake, check_result
from memspec.reference import (
    STORE_KINDS,
    MemoryRecord,
    ReferenceEngine,
    create_engine,
    create_file_engine,
    create_sqlite_engine,
)
from tests.reference.conftest import snapshot

KEY = SigningKey(bytes(range(32)))
SEED_HEX = bytes(range(32)).hex()
T = [f"2026-01-{day:02d}T00:00:00.000Z" for day in range(1, 29)]


@pytest.fixture(params=STORE_KINDS)
def engine(request: pytest.FixtureRequest) -> Iterator[ReferenceEngine]:
    made = create_engine(request.param)
    yield made
    made.close()


def _record(body: str, when: str, **kwargs: Any) -> dict[str, Any]:
    record: dict[str, Any] = MemoryRecord.create(
        "fact", body, {"kind": "conversation"}, created_at=when, **kwargs).model_dump()
    return record


def _file(records: list[dict[str, Any]]) -> dict[str, Any]:
    return {"format": SPEC_VERSION, "agent": None, "created_at": T[0], "records": records,
            "signature": ""}


# -- handshake and factories --------------------------------------------------------------


def test_handshake_claims_every_profile() -> None:
    engine = create_engine()
    info = engine.describe()
    check_handshake(info)
    assert info["name"] == "memspec-reference" and info["protocol"] == PROTOCOL_VERSION
    claimable = [name for name, p in profiles().items() if not p.get("always")]
    assert sorted(info["profiles"]) == sorted(claimable)
    assert len(claimable) == 11 + len(extension_profiles())
    engine.close()


def test_factories_and_store_kinds() -> None:
    for factory, kind in ((create_file_engine, "file"), (create_sqlite_engine, "sqlite")):
        made = factory()
        assert made.store_kind == kind
        made.close()
    with pytest.raises(UnsupportedError):
        ReferenceEngine("postgres")


# -- every operation once -------------------------------------------------------------------


def _script() -> list[tuple[str, dict[str, Any]]]:
    a = _record("The staging database is Postgres.", T[0])
    b = _record("The staging database is not Postgres.", T[1])
    signed = MemoryRecord.model_validate(a).sign(KEY).model_dump()
    unsigned_file = _file([a])
    signed_file = _file([signed])
    transition = {"kind": "transition", "record": None, "target_id": a["id"],
                  "other_id": b["id"], "reason": "one side negates the other"}
    lunch = _record("Lunch is at noon.", T[2])
    create = {"kind": "create", "record": lunch, "target_id": None, "other_id": None,
              "reason": ""}
    return [
        ("hello", {"protocol": PROTOCOL_VERSION, "spec_version": SPEC_VERSION}),
        ("reset", {}),
        ("canonicalize", {"text": '{"b": 1, "a": [true, null, "\\u00e9"]}'}),
        ("canonical_timestamp", {"value": "2026-01-01T01:00:00.123456+01:00"}),
        ("confidence_to_wire", {"value": 0.5}),
        ("address", {"public_key_hex": KEY.public_key.hex()}),
        ("parse_address", {"address": KEY.address}),
        ("decode_signature", {"signature": signed["signature"]}),
        ("record_id", {"record": a}),
        ("validate_record", {"record": a}),
        ("create_record", {"type": "episode", "body": "Deploy failed.", "now": T[3],
                           "provenance": {"kind": "ci", "ref": None, "agent": None},
                           "occurred_at": T[2], "tags": ["deploy"], "confidence": "0.7000"}),
        ("evolve_record", {"record": a, "changes": {"tags": ["db"], "x-note": 1}, "now": T[4]}),
        ("validate_file", {"file": unsigned_file}),
        ("derive_key", {"seed_hex": SEED_HEX}),
        ("signing_input", {"context": "record", "payload": {"a": 1}}),
        ("ed25519_verify", {"public_key_hex": KEY.public_key.hex(), "message_hex": "00",
                            "signature_hex": KEY.sign_bytes(b"\x00").hex()}),
        ("sign_record", {"record": a, "seed_hex": SEED_HEX}),
        ("verify_record", {"record": signed}),
        ("sign_file", {"file": unsigned_file, "seed_hex": SEED_HEX}),
        ("verify_file", {"file": signed_file, "require_signature": False}),
        ("is_legal", {"from": "active", "to": "superseded"}),
        ("lifecycle", {"operation": "begin_transition", "records": [a, b],
                       "reason": "disagree", "now": T[4]}),
        ("put", {"record": a}),
        ("put", {"record": b}),
        ("get", {"id": a["id"]}),
        ("history", {"id": a["id"]}),
        ("list", {"state": "active", "type": "fact"}),
        ("iterate", {}),
        ("index", {"record": a}),
        ("search", {"query": "staging database", "k": 5}),
        ("embed", {"text": "staging database"}),
        ("apply_proposal", {"proposal": transition, "now": T[5]}),
        ("recall", {"query": "staging database", "budget_tokens": 100, "now": T[6]}),
        ("resolve", {"winner_id": b["id"], "loser_id": a["id"], "reason": "checked",
                     "now": T[7]}),
        ("touch", {"id": b["id"], "now": T[8]}),
        ("ingest", {"proposals": [create], "now": T[9]}),
        ("consolidate", {"now": T[10], "config": {"near_dup_threshold": "0.6",
                                                  "promotion_threshold": 3}}),
        ("decay", {"now": T[11], "config": {"half_life_days": 30, "archive_threshold": 0.05}}),
        ("redact", {"id": lunch["id"], "reason": "not needed", "now": T[12]}),
        ("export", {"now": T[13], "seed_hex": SEED_HEX}),
        ("bye", {}),
    ]


def test_every_operation_runs_and_answers_its_schema(engine: ReferenceEngine) -> None:
    seen: set[str] = set()
    results: dict[str, dict[str, Any]] = {}
    for op, args in _script():
        result = engine.call(op, args)
        check_result(op, result)
        json.dumps(result, allow_nan=False)  # plain JSON, nothing else
        seen.add(op)
        results[op] = result
    exported = results["export"]["file"]
    assert exported["agent"] == KEY.address
    again = engine.call("load", {"file": exported, "verify": True})
    assert again["loaded"] == [] and len(again["skipped"]) == 3
    engine.call("reset", {})
    # The export holds a tombstone: only the owner's own restore stores it (FILE-12).
    fresh = engine.call("load", {"file": exported, "verify": True,
                                 "expected_agent": KEY.address})
    check_result("load", fresh)
    assert fresh["loaded"] == again["skipped"]
    seen.add("load")
    # observe, falsify and audit belong to extension profiles: tests/test_extensions.py
    assert seen == set(operations()) - {"observe", "falsify", "audit"}
    assert results["canonical_timestamp"]["timestamp"] == "2026-01-01T00:00:00.123Z"
    assert results["resolve"]["written"][1]["state"] == "superseded"
    recalled = results["recall"]["records"]
    assert len(recalled) == 2 and {r["record"]["state"] for r in recalled} == {"transitional"}


def test_reset_discards_all_state(engine: ReferenceEngine) -> None:
    record = _record("Something to forget.", T[0])
    engine.call("put", {"record": record})
    engine.call("touch", {"id": record["id"], "now": T[1]})
    engine.call("reset", {})
    assert engine.call("iterate", {}) == {"records": []}
    assert engine.call("search", {"query": "forget", "k": 3}) == {"candidates": []}
    engine.call("put", {"record": record})
    assert engine.call("touch", {"id": record["id"], "now": T[2]}) == {"count": 1}


def test_temporary_directories_are_removed() -> None:
    for kind in ("file", "sqlite"):
        made = create_engine(kind)
        state = made._state  # the temp dir is private state; its removal is the contract
        assert state.tempdir is not None
        root = Path(state.tempdir.name)
        assert root.is_dir()
        made.call("reset", {})
        assert not root.exists()
        root = Path(made._state.tempdir.name)  # type: ignore[union-attr]
        made.close()
        assert not root.exists()


def test_every_write_keeps_the_index_current(engine: ReferenceEngine) -> None:
    secret = _record("The vault code is 1234.", T[0])
    engine.call("put", {"record": secret})
    assert [c["id"] for c in engine.call("search", {"query": "vault", "k": 3})["candidates"]] \
        == [secret["id"]]
    engine.call("redact", {"id": secret["id"], "reason": "secret", "now": T[1]})
    assert engine.call("search", {"query": "vault code", "k": 3}) == {"candidates": []}


# -- typed errors ---------------------------------------------------------------------------


def _required(op: str) -> list[str]:
    definition = json_resource("schemas", "protocol.json")["$defs"].get(f"{op}.args", {})
    required: list[str] = definition.get("required", [])
    return required


@pytest.mark.parametrize("op", sorted(op for op in operations()
                                      if op != "hello" and _required(op)))
def test_missing_arguments_are_typed_errors(op: str) -> None:
    engine = create_engine()
    before = snapshot(engine.store)
    with pytest.raises(MemspecError) as info:
        engine.call(op, {})
    assert info.value.code in ERROR_CLASSES, info.value
    assert snapshot(engine.store) == before
    engine.close()


@pytest.mark.parametrize(("op", "args", "code"), [
    ("get", {"id": 5}, "record"),
    ("get", {"id": "mem:" + "0" * 32}, "not-found"),
    ("canonicalize", {"text": 5}, "canonical"),
    ("canonicalize", {"text": '{"a": 1.5}'}, "canonical"),
    ("address", {"public_key_hex": "zz"}, "encoding"),
    ("create_record", {"type": "fact", "body": "x", "provenance": {"kind": "k"},
                       "now": "yesterday"}, "encoding"),
    ("create_record", {"type": "fact", "body": 7, "provenance": {"kind": "k"},
                       "now": T[0]}, "record"),
    ("evolve_record", {"record": _record("x y", T[0]), "changes": {"body": "z"},
                       "now": T[1]}, "record"),
    ("lifecycle", {"operation": "explode", "records": [], "now": T[0]}, "lifecycle"),
    ("lifecycle", {"operation": "archive", "records": "no", "now": T[0]}, "lifecycle"),
    ("apply_proposal", {"proposal": {"kind": "delete"}, "now": T[0]}, "proposal"),
    ("apply_proposal", {"proposal": [], "now": T[0]}, "proposal"),
    ("verify_file", {"file": _file([]), "require_signature": "yes"}, "file"),
    ("load", {"file": _file([]), "verify": True}, "signature"),
    ("load", {"file": "nope", "verify": False}, "file"),
    ("ingest", {"proposals": {}, "now": T[0]}, "proposal"),
    ("consolidate", {"now": T[0], "config": {"near_dup_threshold": "2"}}, "limit"),
    ("decay", {"now": T[0], "config": {"half_life_days": -1}}, "limit"),
    ("search", {"query": "x", "k": -1}, "limit"),
    ("embed", {"text": None}, "encoding"),
    ("recall", {"query": "x", "budget_tokens": "lots", "now": T[0]}, "limit"),
    ("touch", {"id": "mem:" + "1" * 32, "now": T[0]}, "not-found"),
    ("export", {"now": T[0], "seed_hex": "00"}, "encoding"),
    ("is_legal", {"from": "active", "to": "gone"}, "lifecycle"),
])
def test_bad_arguments_raise_their_error_class(op: str, args: dict[str, Any], code: str) -> None:
    engine = create_engine()
    with pytest.raises(MemspecError) as info:
        engine.call(op, args)
    assert info.value.code == code, info.value
    engine.close()


def test_unknown_operations_are_unsupported() -> None:
    engine = create_engine()
    with pytest.raises(UnsupportedError):
        engine.call("teleport", {})
    engine.close()


# -- the process entry point ----------------------------------------------------------------


def test_serve_main_speaks_the_process_protocol() -> None:
    record = _record("Served over stdin.", T[0])
    requests = [
        {"id": 1, "op": "hello", "args": {"protocol": PROTOCOL_VERSION,
                                          "spec_version": SPEC_VERSION}},
        {"id": 2, "op": "put", "args": {"record": record}},
        {"id": 3, "op": "get", "args": {"id": "mem:bad"}},
        {"id": 4, "op": "bye", "args": {}},
    ]
    done = subprocess.run(
        [sys.executable, "-m", "memspec.reference", "--store", "sqlite"],
        input="".join(json.dumps(r) + "\n" for r in requests).encode(),
        capture_output=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    replies = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [r["id"] for r in replies] == [1, 2, 3, 4]
    assert replies[0]["result"]["name"] == "memspec-reference"
    assert replies[1]["result"] == {"version": 1}
    assert replies[2]["ok"] is False and replies[2]["error"]["code"] == "record"


# -- every vector ---------------------------------------------------------------------------


#: Operations whose outcome depends on the engine's store; the others run on one store kind.
_STORE_BACKED = operations_with("reads") | operations_with("writes")


def _vector_cases() -> list[Any]:
    cases = []
    for name in vector_files():
        data = json_resource("vectors", name)
        for group in data.get("groups", []):
            operation = group["operation"]
            for test in group["tests"]:
                backed = operation in _STORE_BACKED or test.get("setup")
                # A group's project: per result key, the members each entry is compared on.
                test = {**test, "project": group.get("project", {}),
                        "placeholders": bool(group.get("placeholders"))}
                for kind in STORE_KINDS if backed else ("memory",):
                    cases.append(pytest.param(kind, operation, test,
                                              id=f"{test['id']}[{kind}]"))
    return cases


@pytest.fixture(scope="module")
def engines() -> Iterator[dict[str, ReferenceEngine]]:
    """One engine per store kind for the whole module; each vector starts with reset."""
    made = {kind: create_engine(kind) for kind in STORE_KINDS}
    yield made
    for engine in made.values():
        engine.close()


@pytest.mark.parametrize(("kind", "operation", "case"), _vector_cases())
def test_reference_engine_passes_every_vector(engines: dict[str, ReferenceEngine], kind: str,
                                              operation: str, case: dict[str, Any]) -> None:
    engine = engines[kind]
    engine.call("reset", {})
    for record in case.get("setup", []):
        engine.call("put", {"record": record})
    if case["result"] == "valid":
        result = engine.call(operation, case["args"])
        check_result(operation, result)
        held = {r["id"] for r in case.get("setup", [])}
        bound: dict[str, str] = {}
        for key, value in case["expected"].items():
            got: Any = result.get(key)
            if key in case["project"]:
                got = [{k: v for k, v in e.items() if k in case["project"][key]} for e in got]
            if case["placeholders"]:
                # Ids the engine chooses are named by placeholders (memspec's vectors README).
                value = bind_placeholders(value, got, held, bound)
            assert got == value, f"{key}: {got!r} != {value!r}"
    else:
        before = snapshot(engine.store)
        with pytest.raises(MemspecError) as info:
            engine.call(operation, case["args"])
        assert info.value.code == case["error"], str(info.value)
        assert snapshot(engine.store) == before


def test_there_are_vectors_to_pass() -> None:
    assert vector_files(), "no vectors/*.json found in the installed package data"


# -- the public surface ---------------------------------------------------------------------

_MODULES = ("records", "lifecycle", "proposals", "ports", "stores", "search", "text",
            "retrieval", "pipeline", "memory", "engine")


@pytest.mark.parametrize("module", _MODULES)
def test_the_package_reexports_every_public_name(module: str) -> None:
    import importlib

    import memspec.reference as package

    source = importlib.import_module(f"memspec.reference.{module}")
    missing = [name for name in source.__all__ if name not in package.__all__
               or getattr(package, name) is not getattr(source, name)]
    assert not missing, f"memspec.reference does not re-export {missing} from {module}"
