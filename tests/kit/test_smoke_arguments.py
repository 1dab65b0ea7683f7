"""The smoke check's arguments come from the operation table, never a hand list per operation."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

import pytest

from memspec import MemspecError, data
from memspec._schemas import load_schema
from memspec.conformance import _smoke


def test_every_operation_gets_its_required_arguments() -> None:
    args = _smoke._trivial_args()
    defs = load_schema("protocol")["$defs"]
    assert set(args) == {n for n, op in data.operations().items() if op.profile is not None}
    for name, given in args.items():
        assert set(defs[f"{name}.args"].get("required", ())) <= set(given), name
        assert set(given) <= set(data.operations()[name].argument_names), name
    assert args["canonical_timestamp"]["value"] != args["confidence_to_wire"]["value"]


def test_an_argument_without_a_value_is_a_kit_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    table = dict(data.operations())
    put = table["put"]
    table["put"] = dataclasses.replace(
        put, args="{record, fresh_argument}",
        argument_errors=MappingProxyType({**put.argument_errors, "fresh_argument": "record"}))
    monkeypatch.setattr(data, "operations", lambda: table)
    with pytest.raises(MemspecError, match="no value for argument 'fresh_argument' of 'put'"):
        _smoke._trivial_args()
