"""``memspec new``: create -> sign -> file -> verify -> diff through the real console script,
without a line of hand-written JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from memspec import record_id, validate_record, verify_record
from tests.cli.conftest import Run

T1, T2, T3, T4 = ("2026-03-01T09:00:00Z", "2026-03-01T09:00:00.250Z", "2026-03-02T18:30:00+02:00",
                  "2026-03-05T00:00:00Z")


def test_create_sign_file_verify_diff(memspec: Callable[..., Run], tmp_path: Path) -> None:
    key = tmp_path / "agent.key"
    address = memspec("keygen", "-o", key, "--json").json()["address"]

    fact = tmp_path / "fact.json"
    run = memspec("new", "fact", "Alice is allergic to peanuts", "--tag", "health",
                  "--tag", "alice", "--slot", "person=Alice", "--slots", '{"severity": 3}',
                  "--source-kind", "conversation", "--source-ref", "chat:42",
                  "--now", T1, "--confidence", "0.8", "--sign-key", key, "-o", fact)
    assert run.code == 0, run.err
    record = json.loads(fact.read_text())
    assert record["slots"] == {"person": "Alice", "severity": 3}
    assert record["tags"] == ["health", "alice"]
    assert record["provenance"] == {"kind": "conversation", "ref": "chat:42", "agent": None}
    assert record["confidence"] == "0.8000" and record["created_at"] == "2026-03-01T09:00:00.000Z"
    assert record["signed_by"] == address and verify_record(record)
    assert record["id"] == record_id(record) and record["id"] in run.out

    episode = memspec("new", "episode", "Met Bob at the station", "--now", T2,
                      "--occurred-at", T3, "--json")
    assert episode.code == 0, episode.err
    second = episode.json()["record"]
    assert second["occurred_at"] == "2026-03-02T16:30:00.000Z"
    assert second["signature"] == "" and validate_record(second) == second
    (tmp_path / "episode.json").write_text(json.dumps(second))

    rule = memspec("new", "rule", "Never offer Alice peanuts", "--evidence", record["id"],
                   "--now", T4, stdin=None)
    assert rule.code == 0, rule.err
    (tmp_path / "rule.json").write_text(rule.out)

    memory = tmp_path / "memory.json"
    assert memspec("merge", fact, tmp_path / "episode.json", "--now", T4, "-o", memory).code == 0
    signed = tmp_path / "signed.json"
    run = memspec("sign", memory, "--key", key, "--records", "-o", signed)
    assert run.code == 0, run.err
    assert memspec("validate", signed).code == 0
    run = memspec("verify", signed, "--expect-agent", address)
    assert run.code == 0, run.out + run.err
    assert memspec("diff", signed, signed).code == 0

    grown = tmp_path / "grown.json"
    assert memspec("merge", signed, tmp_path / "rule.json", "--now", T4, "-o", grown).code == 0
    run = memspec("diff", signed, grown, "--json")
    assert run.code == 1
    assert run.json()["added"] == [json.loads(rule.out)["id"]]


def test_body_from_stdin_and_default_time(memspec: Callable[..., Run]) -> None:
    run = memspec("new", "procedure", "-", "--json", stdin="1. boil water\n2. add tea\n")
    assert run.code == 0, run.err
    record = run.json()["record"]
    assert record["body"] == "1. boil water\n2. add tea"
    assert record["created_at"] == record["updated_at"] and record["state"] == "active"


def test_extension_fields_are_kept_and_collisions_refused(memspec: Callable[..., Run]) -> None:
    run = memspec("new", "fact", "x", "--now", T1, "--extra", '{"x-color": "blue"}', "--json")
    assert run.code == 0 and run.json()["record"]["x-color"] == "blue"
    run = memspec("new", "fact", "x", "--now", T1, "--extra", '{"occurred_at": "2026"}')
    assert run.code == 2 and "REC-12" in run.err
