"""memspec.data: the typed door to the package data agrees with the JSON it reads."""

from __future__ import annotations

import dataclasses

import pytest

from memspec import data
from memspec._data import load_json


def test_legality_is_the_table() -> None:
    raw = load_json("spec", "legality.json")
    table = data.legality()
    assert table.states == tuple(raw["states"])
    assert len(table.transitions) == len(table.states) ** 2 == len(raw["transitions"])
    for entry in raw["transitions"]:
        assert table.is_legal(entry["from"], entry["to"]) is entry["legal"]
    assert table.legal_targets("archived") == ()
    with pytest.raises(data.DataNotFound, match="lifecycle state named 'deleted'"):
        table.is_legal("active", "deleted")


def test_profiles_and_operations_are_the_tables() -> None:
    core = load_json("spec", "operations.json")
    ext = load_json("spec", "extensions.json")
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
    raw = load_json("spec", "requirements.json")["requirements"]
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
        raw = load_json("vectors", name)
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
