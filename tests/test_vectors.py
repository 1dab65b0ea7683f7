"""memspec's own core code passes every vector of every core-level operation.

Each operation of the engine interface that the core implements as a plain
function is mapped to that function by ``DISPATCH``; every vector of those
operations runs through it. Store-backed and lifecycle vectors
(``apply_proposal``, ``resolve``, ``lifecycle``, and the extension operations
``observe``, ``falsify``, ``audit``, ``list``/``recall`` with ``as_of`` or
``include_expired``, ``decay``, ``ingest``, ``put``, ``load``) need an engine:
this file runs them against the reference engine in process, and the
conformance kit runs them against any engine under test.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import memspec
from memspec.conformance._placeholders import bind_placeholders
from memspec.data import json_resource, vector_files
from memspec.engine import operations
from tests._vectors import load_vector_cases

Args = dict[str, Any]


def _key(args: Args) -> memspec.SigningKey:
    return memspec.SigningKey.from_hex(args["seed_hex"])


def _derive(args: Args) -> Args:
    key = _key(args)
    return {"address": key.address, "public_key_hex": key.public_key.hex()}


def _is_legal(args: Args) -> Args:
    table = json_resource("spec", "legality.json")["transitions"]
    answers = {(t["from"], t["to"]): t["legal"] for t in table}
    return {"legal": answers[(args["from"], args["to"])]}


def _verify_file(args: Args) -> Args:
    memspec.verify_file(args["file"], require_signature=args["require_signature"])
    return {}


DISPATCH: dict[str, Callable[[Args], Args]] = {
    "canonicalize": lambda a: {"hex": memspec.canonical_json(memspec.parse_json(a["text"])).hex()},
    "canonical_timestamp": lambda a: {"timestamp": memspec.canonical_timestamp(a["value"])},
    "confidence_to_wire": lambda a: {"wire": memspec.confidence_to_wire(a["value"])},
    "address": lambda a: {
        "address": memspec.address_from_public_key(memspec.decode_hex(a["public_key_hex"]))},
    "parse_address": lambda a: {
        "public_key_hex": memspec.public_key_from_address(a["address"]).hex()},
    "decode_signature": lambda a: {"hex": memspec.decode_signature(a["signature"]).hex()},
    "record_id": lambda a: {"id": memspec.record_id(a["record"]),
                            "birth_digest": memspec.birth_digest(a["record"])},
    "validate_record": lambda a: {"record": memspec.validate_record(a["record"])},
    "validate_file": lambda a: {"file": memspec.validate_file(a["file"])},
    "derive_key": _derive,
    "signing_input": lambda a: {"hex": memspec.signing_input(a["context"], a["payload"]).hex()},
    "ed25519_verify": lambda a: {"valid": memspec.ed25519_verify(
        memspec.decode_hex(a["public_key_hex"]), memspec.decode_hex(a["message_hex"]),
        memspec.decode_hex(a["signature_hex"]))},
    "sign_record": lambda a: {"record": memspec.sign_record(a["record"], _key(a))},
    "verify_record": lambda a: {"signed": memspec.verify_record(a["record"])},
    "sign_file": lambda a: {"file": memspec.sign_file(a["file"], _key(a))},
    "verify_file": _verify_file,
    "is_legal": _is_legal,
}

#: Operations whose vectors need a store or the lifecycle machine, or an engine's argument
#: handling (create_record has no single core function): run against the reference engine.
ENGINE_ONLY = frozenset({"lifecycle", "apply_proposal", "resolve", "create_record",
                         "observe", "falsify", "audit", "list", "recall", "decay", "ingest",
                         "put", "load", "consolidate"})
#: Store-backed operations: their vectors, and only theirs, carry ``setup``.
SETUP_OPS = ENGINE_ONLY - {"lifecycle", "create_record"}

#: Vectors the current core fails, each a core bug reported to the lead. strict=True makes a
#: fixed bug fail loudly here, so the entry is removed with the fix.
ALL_CASES = [param for name in vector_files() for param in load_vector_cases(name)]
CORE_CASES = [p for p in ALL_CASES if p.values[0]["operation"] in DISPATCH]


@pytest.mark.parametrize("case", CORE_CASES)
def test_core_passes_vector(case: dict[str, Any]) -> None:
    run = DISPATCH[case["operation"]]
    args = copy.deepcopy(case["args"])
    if case["result"] == "valid":
        result = run(args)
        for key, value in case["expected"].items():
            assert result[key] == value, key
    else:
        with pytest.raises(memspec.MemspecError) as info:
            run(args)
        assert info.value.code == case["error"], str(info.value)


def test_every_vector_operation_is_run_somewhere() -> None:
    used = {p.values[0]["operation"] for p in ALL_CASES}
    assert used <= set(DISPATCH) | ENGINE_ONLY
    assert set(DISPATCH) <= used, "a dispatched operation has no vectors"
    assert len(CORE_CASES) + sum(
        p.values[0]["operation"] in ENGINE_ONLY for p in ALL_CASES) == len(ALL_CASES)


_REQ = re.compile(r"[A-Z]+-[0-9]+\Z")


@pytest.mark.parametrize("name", vector_files())
def test_vector_file_shape(name: str) -> None:
    doc = json_resource("vectors", name)
    stem = name.removesuffix(".json")
    assert doc["name"] == stem
    assert doc["spec_version"] == memspec.SPEC_VERSION
    assert doc["schema"] == f"https://memspec.dev/schemas/vectors/{stem}.json"
    table = operations()
    tests = [t for g in doc["groups"] for t in g["tests"]]
    assert doc["number_of_tests"] == len(tests)
    flags = {f for t in tests for f in t["flags"]}
    assert flags == set(doc["notes"]), "every flag explained, every note used"
    ids = [t["id"] for t in tests]
    assert len(ids) == len(set(ids))
    for grp in doc["groups"]:
        assert table[grp["operation"]]["profile"] == grp["profile"]
        for test in grp["tests"]:
            assert test["id"].startswith(f"{stem}/")
            assert test["requirements"] and all(_REQ.match(r) for r in test["requirements"])
            assert ("setup" in test) == (grp["operation"] in SETUP_OPS)
            if test["result"] == "valid":
                assert set(test) >= {"expected"} and "error" not in test
            else:
                assert test["result"] == "invalid" and "expected" not in test
                assert test["error"] in memspec.ERROR_CLASSES


def _engine_records(case: dict[str, Any]) -> list[Any]:
    args, expected = case["args"], case.get("expected", {})
    proposal = args.get("proposal") or {}
    returned = [e["record"] if "reasons" in e else e for e in expected.get("records", [])]
    found = [*case.get("setup", []), *args.get("records", []), *returned,
             *expected.get("written", [])]
    if "record" in expected:
        found.append(expected["record"])
    if case["result"] == "valid":
        if proposal.get("record") is not None:
            found.append(proposal["record"])
        found.extend(p["record"] for p in args.get("proposals", [])
                     if p["record"]["id"] in expected.get("accepted", []))
        found.extend((args.get("file") or {}).get("records", []))
    return found


@pytest.mark.parametrize("case", [p for p in ALL_CASES if p.values[0]["operation"] in ENGINE_ONLY])
def test_engine_vector_records_are_valid(case: dict[str, Any]) -> None:
    # Every stored, passed or expected record of a lifecycle/proposal vector is a valid record,
    # so those vectors fail an engine only for the rule they name.
    for record in _engine_records(case):
        memspec.validate_record(copy.deepcopy(record))


@pytest.mark.parametrize("name", vector_files())
def test_vector_file_matches_its_schema(name: str) -> None:
    from memspec._schemas import iter_errors

    assert iter_errors(json_resource("vectors", name), f"vectors/{name}") == []


def test_requirement_ids_are_in_the_catalogue() -> None:
    try:
        catalogue = json_resource("spec", "requirements.json")
    except FileNotFoundError:
        pytest.skip("spec/requirements.json is not generated yet")
    items = catalogue.get("requirements", catalogue)
    known = {r["id"] for r in items} if isinstance(items, list) else set(items)
    used = {r for p in ALL_CASES for r in p.values[0]["requirements"]}
    assert used <= known, sorted(used - known)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in (key, *_strings(item))]
    return []


@pytest.mark.parametrize("name", vector_files())
def test_no_vector_holds_a_reserved_code_point(name: str) -> None:
    # SPEC.md section 2.1 (CJ-11): text with a code point Unicode 14.0 leaves unassigned has no
    # interoperable NFC, so no vector may hold one (noncharacters are stable and allowed).
    from memspec._unicode import assigned_in_unicode_14

    reserved = sorted({f"U+{ord(char):04X}" for text in _strings(json_resource("vectors", name))
                       for char in text if not assigned_in_unicode_14(char)
                       and not _noncharacter(ord(char))})
    assert not reserved, reserved


def _noncharacter(code: int) -> bool:
    return 0xFDD0 <= code <= 0xFDEF or code & 0xFFFE == 0xFFFE


# -- the engine vectors, against the reference engine -------------------------------------------

ENGINE_CASES = [p for p in ALL_CASES if p.values[0]["operation"] in ENGINE_ONLY]
#: Each test id's group ``project``: per result key, the members each entry is compared on.
PROJECTIONS = {test["id"]: grp.get("project", {}) for name in vector_files()
               for grp in json_resource("vectors", name)["groups"] for test in grp["tests"]}
#: Tests whose group names engine-chosen ids by placeholders (memspec.conformance._placeholders).
PLACEHOLDERS = {test["id"] for name in vector_files()
                for grp in json_resource("vectors", name)["groups"] if grp.get("placeholders")
                for test in grp["tests"]}


def _project(value: Any, members: list[str] | None) -> Any:
    if members is None:
        return value
    return [{k: v for k, v in entry.items() if k in members} for entry in value]


def _store(engine: Any) -> list[list[dict[str, Any]]]:
    return [engine.call("history", {"id": r["id"]})["records"]
            for r in engine.call("iterate", {})["records"]]


@pytest.fixture(scope="module")
def reference() -> Iterator[Any]:
    from memspec.reference.engine import create_engine

    engine = create_engine()
    yield engine
    engine.close()


@pytest.mark.parametrize("case", ENGINE_CASES)
def test_reference_engine_passes_vector(reference: Any, case: dict[str, Any]) -> None:
    reference.call("reset", {})
    for record in case.get("setup", []):
        reference.call("put", {"record": copy.deepcopy(record)})
    before = _store(reference)
    args = copy.deepcopy(case["args"])
    if case["result"] == "valid":
        result = reference.call(case["operation"], args)
        projection = PROJECTIONS[case["id"]]
        held = {r["id"] for r in case.get("setup", [])}
        bound: dict[str, str] = {}
        for key, value in case["expected"].items():
            answered = _project(result[key], projection.get(key))
            if case["id"] in PLACEHOLDERS:
                value = bind_placeholders(value, answered, held, bound)
            assert answered == value, key
        return
    with pytest.raises(memspec.MemspecError) as info:
        reference.call(case["operation"], args)
    assert info.value.code == case["error"], str(info.value)
    assert _store(reference) == before, "a rejected operation changed the store"


_README_ROW = re.compile(r"\| `([a-z-]+\.json)` \| (\d+) \| (\d+) \| (\d+) \|")


def test_readme_table_counts_match_the_files() -> None:
    # vectors/README.md is prose over the data: its table of counts is checked, not trusted.
    from pathlib import Path

    text = (Path(__file__).parent.parent / "vectors" / "README.md").read_text(encoding="utf-8")
    rows = {m[1]: (int(m[2]), int(m[3]), int(m[4])) for m in _README_ROW.finditer(text)}
    counts = {}
    for name in vector_files():
        tests = [t for g in json_resource("vectors", name)["groups"] for t in g["tests"]]
        valid = sum(t["result"] == "valid" for t in tests)
        counts[name] = (len(tests), valid, len(tests) - valid)
    assert rows == counts
    total = re.search(r"\| \*\*total\*\* \| \*\*(\d+)\*\* \|", text)
    assert total is not None and int(total[1]) == sum(c[0] for c in counts.values())
