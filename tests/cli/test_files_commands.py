"""validate, verify, id, canonicalize, fingerprint, diff, merge, keygen and sign, run through
the real console script."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memspec import SigningKey, canonical_json, record_id, sign_file, sign_record
from tests.cli.conftest import Run


def test_validate_accepts_the_published_file(memspec: Callable[..., Run],
                                             write: Callable[[str, Any], Path],
                                             memory_file: dict[str, Any]) -> None:
    run = memspec("validate", write("m.json", memory_file))
    assert run.code == 0, run.out + run.err
    assert "ok (file, 3 records)" in run.out


def test_validate_reports_place_and_requirement(memspec: Callable[..., Run],
                                                write: Callable[[str, Any], Path],
                                                memory_file: dict[str, Any]) -> None:
    memory_file["records"][1]["body"] = "changed"  # id no longer matches content
    memory_file["records"][2]["evidence"] = []  # a rule without evidence
    run = memspec("validate", write("m.json", memory_file), "--json")
    assert run.code == 1
    problems = run.json()["inputs"][0]["problems"]
    assert {p["requirement"] for p in problems} == {"ID-2", "RULE-1"}
    where = {p["where"] for p in problems}
    assert any(w.endswith("#/records/1/id") for w in where)
    assert any(w.endswith("#/records/2/evidence") for w in where)


def test_validate_jsonl_and_list_and_stdin(memspec: Callable[..., Run],
                                           write: Callable[[str, Any], Path],
                                           memory_file: dict[str, Any]) -> None:
    records = memory_file["records"]
    jsonl = "\n".join(json.dumps(r) for r in records) + "\n"
    assert memspec("validate", write("r.jsonl", jsonl)).code == 0
    assert memspec("validate", write("r.json", records)).code == 0
    assert memspec("validate", "-", stdin=json.dumps(records[0])).code == 0


def test_validate_semantic_transition_pair(memspec: Callable[..., Run],
                                           write: Callable[[str, Any], Path],
                                           memory_file: dict[str, Any]) -> None:
    a, b = memory_file["records"][0], memory_file["records"][1]
    block = {"sides": [a["id"], b["id"]], "reason": "they disagree"}
    a.update(state="transitional", transition=block)
    run = memspec("validate", write("m.json", [a, b]), "--json")
    assert run.code == 1
    assert [p["requirement"] for p in run.json()["inputs"][0]["problems"]] == ["TRN-3"]


def test_validate_malformed_json_is_a_check_failure_not_a_traceback(
        memspec: Callable[..., Run], write: Callable[[str, Any], Path]) -> None:
    run = memspec("validate", write("bad.json", '{"a": 1.5}'))
    assert run.code == 1
    assert "CJ-6" in run.out


def test_missing_file_is_a_usage_error(memspec: Callable[..., Run], tmp_path: Path) -> None:
    run = memspec("validate", tmp_path / "absent.json")
    assert run.code == 2
    assert "no such file" in run.err


def test_verify_strict_by_default(memspec: Callable[..., Run], write: Callable[[str, Any], Path],
                                  memory_file: dict[str, Any]) -> None:
    assert memspec("verify", write("m.json", memory_file)).code == 0
    memory_file["signature"] = ""
    stripped = write("stripped.json", memory_file)
    run = memspec("verify", stripped)
    assert run.code == 1 and "FILE-5" in run.out
    assert memspec("verify", stripped, "--allow-unsigned").code == 0


def test_verify_names_the_tampered_record(memspec: Callable[..., Run],
                                          write: Callable[[str, Any], Path],
                                          memory_file: dict[str, Any], seed_a: str) -> None:
    key = SigningKey.from_hex(seed_a)
    memory_file["records"] = [sign_record(r, key) for r in memory_file["records"]]
    signed = sign_file(memory_file, key)
    assert memspec("verify", write("ok.json", signed)).code == 0
    signed["records"][1]["state_reason"] = "tampered"
    run = memspec("verify", write("m.json", signed), "--json")
    assert run.code == 1
    error = run.json()["inputs"][0]["error"]["message"]
    assert signed["records"][1]["id"] in error and "index 1" in error
    unsigned = dict(memory_file, signature="")
    unsigned["records"][0] = dict(unsigned["records"][0], body="x")
    run = memspec("verify", write("u.json", unsigned), "--allow-unsigned")
    assert run.code == 1


def test_verify_expect_agent_refuses_a_re_signed_file(memspec: Callable[..., Run],
                                                      write: Callable[[str, Any], Path],
                                                      memory_file: dict[str, Any],
                                                      seed_a: str) -> None:
    owner = SigningKey.from_hex(seed_a)
    attacker = SigningKey(bytes(range(200, 232)))
    assert memspec("verify", write("m.json", memory_file),
                   "--expect-agent", owner.address).code == 0
    resigned = sign_file(dict(memory_file, signature="", agent=None), attacker)
    path = write("resigned.json", resigned)
    assert memspec("verify", path).code == 0  # SIG-5: it verifies under the attacker's key
    run = memspec("verify", path, "--expect-agent", owner.address, "--json")
    assert run.code == 1
    error = run.json()["inputs"][0]["error"]
    assert error["requirement"] == "FILE-11" and attacker.address in error["message"]
    run = memspec("verify", path, "--expect-agent", "amp:key:0OIl")
    assert run.code == 2 and "not an agent address" in run.err


def test_id_and_canonicalize(memspec: Callable[..., Run], write: Callable[[str, Any], Path],
                             memory_file: dict[str, Any]) -> None:
    record = memory_file["records"][0]
    run = memspec("id", write("r.json", record))
    assert run.code == 0 and run.out.strip() == record_id(record)
    run = memspec("canonicalize", write("r.json", record), "--hex")
    assert bytes.fromhex(run.out.strip()) == canonical_json(record)
    assert memspec("canonicalize", "-", stdin='{"a": 1e2}').code == 1


def test_fingerprint_is_order_insensitive(memspec: Callable[..., Run],
                                          write: Callable[[str, Any], Path],
                                          memory_file: dict[str, Any]) -> None:
    records = memory_file["records"]
    one = memspec("fingerprint", write("a.json", records)).out
    two = memspec("fingerprint", write("b.json", list(reversed(records)))).out
    assert one == two and len(one.strip()) == 64


def test_diff_and_merge(memspec: Callable[..., Run], write: Callable[[str, Any], Path],
                        memory_file: dict[str, Any]) -> None:
    records = memory_file["records"]
    changed = dict(records[1], tags=["x"])
    a, b = write("a.json", records[:2]), write("b.json", [records[0], changed, records[2]])
    run = memspec("diff", a, b, "--json")
    assert run.code == 1
    assert run.json()["added"] == [records[2]["id"]]
    assert [c["id"] for c in run.json()["changed"]] == [records[1]["id"]]
    assert memspec("diff", a, a).code == 0
    run = memspec("merge", a, b, "--json")
    assert run.code == 1 and run.json()["conflicts"][0]["id"] == records[1]["id"]
    out = a.with_name("merged.json")
    run = memspec("merge", a, b, "--prefer", "last", "--now", "2026-02-01T00:00:00Z", "-o", out)
    assert run.code == 0, run.err
    merged = json.loads(out.read_text())
    assert [r["id"] for r in merged["records"]] == sorted(r["id"] for r in records)
    assert memspec("validate", out).code == 0


def test_keygen_and_sign(memspec: Callable[..., Run], tmp_path: Path,
                         write: Callable[[str, Any], Path], memory_file: dict[str, Any]) -> None:
    key = tmp_path / "agent.key"
    run = memspec("keygen", "-o", key, "--json")
    assert run.code == 0
    address = run.json()["address"]
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert memspec("keygen", "-o", key).code == 2  # never overwrites a key
    memory_file["signature"] = ""
    signed = tmp_path / "signed.json"
    run = memspec("sign", write("m.json", memory_file), "--key", key, "--records", "-o", signed)
    assert run.code == 0, run.err
    data = json.loads(signed.read_text())
    assert data["agent"] == address
    assert all(r["signed_by"] == address for r in data["records"])
    assert memspec("verify", signed).code == 0


@pytest.mark.parametrize("argv", [["validate"], ["merge"], ["--bogus"], ["sign", "x.json"]])
def test_usage_errors_exit_2(memspec: Callable[..., Run], argv: list[str]) -> None:
    assert memspec(*argv).code == 2


def test_bad_key_file_is_typed(memspec: Callable[..., Run], write: Callable[[str, Any], Path],
                               memory_file: dict[str, Any]) -> None:
    key = write("bad.key", '{"kind": "memspec-ed25519-seed", "seed_hex": "zz"}')
    run = memspec("sign", write("m.json", memory_file), "--key", key)
    assert run.code == 1 and "encoding error" in run.err
