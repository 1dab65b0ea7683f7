"""memspec.data: the typed door to the package data agrees with the JSON it reads."""

from __future__ import annotations

import dataclasses

import pytest

from memspec import data


def test_legality_is_the_table() -> None:
    raw = data.json_resource("spec", "legality.json")
    table = data.legality()
    assert table.states == tuple(raw["states"])
    assert len(table.transitions) == len(table.states) ** 2 == len(raw["transitions"])
    for entry in raw["transitions"]:
        assert table.is_legal(entry["from"], entry["to"]) is entry["legal"]
    assert table.legal_targets("archived") == ()
    with pytest.raises(data.DataNotFound, match="lifecycle state named 'deleted'"):
        table.is_legal("active", "deleted")


def test_profiles_and_operations_are_the_tables() -> None:
    core = data.json_resource("spec", "operations.json")
    ext = data.json_resource("spec", "extensions.json")
    assert list(data.profiles()) == [*core["profiles"], *ext["profiles"]]
    assert [p.name for p in data.profiles().values() if p.always] == [
        n for n, p in core["profiles"].items() if p.get("always")]
    assert list(data.operations()) == [*core["operations"], *ext["operations"]]
    for name, op in data.operations().items():
        raw = core["operations"].get(name) or ext["operations"][name]
        assert (op.profile, op.effect, op.args) == (raw["profile"], raw["effect"], raw["args"])
        assert op.extension is (name not in core["operations"])
    assert data.operations()["recall"].optional_arguments == {"include_history",
                                                              "include_archived"}
    with pytest.raises(data.DataNotFound, match="operation named 'delete'"):
        data.operations()["delete"]
    assert "delete" not in data.operations() and "put" in data.operations()
    assert data.operations().get("delete") is None


def test_requirements_are_the_catalogue() -> None:
    raw = data.json_resource("spec", "requirements.json")["requirements"]
    reqs = data.requirements()
    assert list(reqs) == [r["id"] for r in raw]
    assert all(reqs[r["id"]].level == r["level"] for r in raw)
    with pytest.raises(LookupError):
        reqs["NOPE-1"]


def test_vectors_are_typed_and_read_only() -> None:
    names = data.vector_files()
    assert "records.json" in names and names == tuple(sorted(names))
    total = 0
    for name in names:
        raw = data.json_resource("vectors", name)
        typed = data.vectors(name)
        cases = list(typed.cases())
        assert [c.id for c in cases] == [t["id"] for g in raw["groups"] for t in g["tests"]]
        assert all(c.valid is (c.raw["result"] == "valid") for c in cases)
        assert all(c.error is not None for c in cases if not c.valid)
        total += len(cases)
    assert total > 500
    case = next(data.vectors("records").cases())
    assert data.vectors("records") is data.vectors("records")
    with pytest.raises(dataclasses.FrozenInstanceError):
        case.id = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        case.args["record"] = {}  # type: ignore[index]
    with pytest.raises(data.DataNotFound, match="vectors file named 'nope'"):
        data.vectors("nope")
    with pytest.raises(data.DataNotFound):
        data.vectors("records").case("no-such-case")


def test_files_as_shipped() -> None:
    tamper = data.json_resource("spec", "tamper.json")
    assert tamper is data.json_resource("spec", "tamper.json")
    published = data.json_resource("vectors", "published/fg-agent-memory-0.1.json")
    assert list(published) == list(data.published("fg-agent-memory-0.1.json"))
    assert data.has_resource("schemas", "protocol.json")
    assert not data.has_resource("schemas", "no-such.json")
    assert not data.has_resource("vectors", "external")  # a folder is not a file
    assert data.spec_text().startswith("# ") and "MUST" in data.spec_text()
    assert "MUST" in data.spec_text("EXTENSIONS.md")
    jcs = data.resource_text("vectors", "external/jcs/outhex/french.txt")
    assert bytes.fromhex(jcs.replace(" ", "").replace("\n", "")).decode("utf-8")
    assert data.resource_bytes("spec", "SPEC.md").decode("utf-8") == data.spec_text()
    for probe in (lambda: data.json_resource("spec", "nope.json"),
                  lambda: data.resource_text("vectors", "external/nope.txt"),
                  lambda: data.resource_bytes("schemas", "nope.json"),
                  lambda: data.spec_text("NOPE.md")):
        with pytest.raises(data.DataNotFound, match="no file in memspec"):
            probe()


def test_facts_of_the_tables_are_read_not_typed() -> None:
    defs = data.json_resource("schemas", "defs.json")["$defs"]
    assert data.record_states() == tuple(defs["record-state"]["enum"])
    assert set(data.record_states()) == set(data.legality().states)
    assert data.record_types() == tuple(defs["record-type"]["enum"])
    assert data.legality().live_states < set(data.legality().states)
    proposal = data.json_resource("schemas", "proposal.json")
    assert data.proposal_kinds() == tuple(proposal["properties"]["kind"]["enum"])
    assert data.always_profiles() == {n for n, p in data.profiles().items() if p.always}
    effects = {op.effect for op in data.operations().values()}
    assert set().union(*(data.operations_with(e) for e in effects)) == set(data.operations())
    assert "put" in data.operations_with("writes") and "get" in data.operations_with("reads")
    assert all(data.operations()[n].pure for n in data.operations_with("pure"))


def test_the_tombstone_is_the_record_schema() -> None:
    shape = data.tombstone()
    rule = data.json_resource("schemas", "record.json")["$defs"]["tombstone"]
    assert set(shape.fixed) | set(shape.absent) == set(rule["properties"])
    assert shape.absent == ("occurred_at",)
    assert shape.required == tuple(rule["required"])
    values = shape.fixed_values()
    assert values["provenance"] == {"kind": "redaction", "ref": None, "agent": None}
    assert values["tags"] == [] and values["slots"] == {} and values["signed_by"] is None
    values["tags"].append("x")  # a fresh copy each time: the shared shape is untouched
    assert shape.fixed_values()["tags"] == []


def test_the_code_holds_the_tables_values() -> None:
    # Each of these was once a hand-typed copy of a table; now each is read from it.
    from memspec import _record, strategies
    from memspec.conformance import _builders, _machines_observe, _model, _outcomes
    from memspec.conformance.suites import test_vectors
    from memspec.reference import lifecycle

    assert _machines_observe.PURE_OPERATIONS == data.operations_with("pure")
    assert test_vectors.STORE_BACKED == data.operations_with("writes")
    assert _outcomes.ALWAYS_PROFILES == data.always_profiles() == {"core"}
    assert _model.LIVE_STATES == data.legality().live_states
    assert {s.value for s in lifecycle.LIVE_STATES} == data.legality().live_states
    assert _model.LEGAL_TRANSITIONS == data.legality().legal_pairs
    assert strategies.PROPOSAL_KINDS == _builders.PROPOSAL_KINDS == data.proposal_kinds()
    assert (_record.RECORD_STATES, _record.RECORD_TYPES) == (data.record_states(),
                                                            data.record_types())
    assert _record.REDACTED_BODY == data.tombstone().fixed["body"]
