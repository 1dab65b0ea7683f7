"""Set semantics (fingerprint, diff, merge) and cross-record checks."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from memspec import RecordError
from memspec._bundle import diff_records, fingerprint, merge_records
from memspec._graph import check_records
from memspec.data import json_resource


@pytest.fixture
def records() -> list[dict[str, Any]]:
    data = json_resource("vectors", "published/fg-agent-memory-0.1.json")
    return copy.deepcopy(data["artifacts"]["memory_file"]["file"]["records"])


def test_fingerprint_order_insensitive_and_byte_sensitive(records: list[dict[str, Any]]) -> None:
    assert fingerprint(records) == fingerprint(list(reversed(records)))
    before = fingerprint(records)
    records[0]["tags"] = ["another"]
    assert fingerprint(records) != before


def test_diff_classifies(records: list[dict[str, Any]]) -> None:
    changed = dict(records[0], state_reason="x")
    diff = diff_records(records[:2], [changed, records[2]])
    assert diff.added == (records[2]["id"],)
    assert diff.removed == (records[1]["id"],)
    assert [a["id"] for a, _ in diff.changed] == [records[0]["id"]]
    assert diff.unchanged == 0


def test_diff_rejects_divergent_duplicates(records: list[dict[str, Any]]) -> None:
    with pytest.raises(RecordError):
        diff_records([records[0], dict(records[0], tags=[])], [])


def test_merge_surfaces_conflicts(records: list[dict[str, Any]]) -> None:
    other = dict(records[0], tags=["changed"])
    merge = merge_records([records, [other]])
    assert [rid for rid, _ in merge.conflicts] == [records[0]["id"]]
    assert records[0]["id"] not in {r["id"] for r in merge.records}
    assert merge_records([records, [other]], prefer="last").records[0]["tags"] in (
        ["changed"], records[1]["tags"], records[2]["tags"])
    with pytest.raises(RecordError):
        merge_records([records], prefer="newest")


def test_check_records_clean_and_broken(records: list[dict[str, Any]]) -> None:
    assert check_records(records) == []
    rule = records[2]
    for rid in rule["evidence"]:
        for r in records:
            if r["id"] == rid:
                r.update(state="archived", state_reason="decayed")
    problems = check_records(records)
    assert [p.requirement for p in problems] == ["RULE-2"]
    assert check_records([records[0], records[0]])[0].requirement == "FILE-4"
    assert check_records(["not a record"])[0].requirement == "REC-1"
