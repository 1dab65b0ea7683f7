"""Input that is not what it claims: files that look signed, tombstones that look authentic,
texts that look like one document.

Each test builds the attack from its definition and drives it through the public surface
(the command line, :class:`memspec.reference.Memory`, the library), so the defence is
checked where a user meets it.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest

from memspec import (
    REDACTED_BODY,
    Limits,
    SignatureError,
    SigningKey,
    address_from_public_key,
    birth_digest,
    canonical_json,
    ed25519_verify,
    sign_file,
    sign_record,
    verify_file,
)
from memspec._graph import check_records, first_problems
from memspec.cli import main as cli_main
from memspec.cli._files import MAX_PROBLEMS
from memspec.conformance import _builders as build
from memspec.protocol import serve
from memspec.reference import Memory

#: The neutral element's encoding: y = 1, x = 0.
IDENTITY = bytes([1]) + bytes(31)
#: R = the neutral element, S = 0: verifies any message under the neutral element as key
#: when the small-order checks are missing.
NOBODY_SIGNED = base64.b64encode(IDENTITY + bytes(32)).decode("ascii")


def _forged_file(records: list[dict[str, Any]]) -> dict[str, Any]:
    return {"format": "fg-agent-memory/0.1", "agent": address_from_public_key(IDENTITY),
            "created_at": "2026-03-04T05:06:07.089Z", "records": records,
            "signature": NOBODY_SIGNED}


def _records() -> list[dict[str, Any]]:
    return [build.record(body=f"Forged fact {n}.", created_at=f"2026-02-0{n}T00:00:00.000Z")
            for n in range(1, 4)]


def test_the_small_order_forgery_verifies_nothing() -> None:
    assert not ed25519_verify(IDENTITY, b"any message at all", IDENTITY + bytes(32))
    for records in ([], _records()):
        with pytest.raises(SignatureError) as info:
            verify_file(_forged_file(records))
        assert info.value.requirement == "SIG-11"


def test_memspec_verify_refuses_the_forged_file(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "forged.json"
    target.write_text(json.dumps(_forged_file(_records())), encoding="utf-8")
    assert cli_main(["verify", str(target)]) == 1
    out = capsys.readouterr()
    assert "SIG-11" in out.out + out.err
    assert "valid" not in out.out


def test_memory_load_with_verify_refuses_the_forged_file(tmp_path: Path) -> None:
    target = tmp_path / "forged.json"
    target.write_text(json.dumps(_forged_file(_records())), encoding="utf-8")
    with pytest.raises(SignatureError) as info:
        Memory.load(target, verify=True)
    assert info.value.requirement == "SIG-11"


# --- tombstone squatting (FILE-12) ----------------------------------------------------------

KEY_A = SigningKey(bytes(range(32)))
KEY_B = SigningKey(bytes(range(32, 64)))


def _tombstone_for(record: dict[str, Any]) -> dict[str, Any]:
    """What an attacker who knows only ``record`` (its id and birth content) can write."""
    out = {**record, "state": "archived", "body": REDACTED_BODY, "slots": {}, "tags": [],
           "confidence": "0.0000", "updated_at": "2026-02-09T00:00:00.000Z",
           "transition": None, "flagged": False, "flag_reason": None, "signed_by": None,
           "signature": "", "state_reason": "squat", "redacted": True,
           "redaction_reason": "squat", "birth_digest": birth_digest(record),
           "provenance": {"kind": "redaction", "ref": None, "agent": None}}
    out.pop("occurred_at", None)
    return out


def _file_by(key: SigningKey, records: list[dict[str, Any]]) -> dict[str, Any]:
    return sign_file({"format": "fg-agent-memory/0.1", "agent": None,
                      "created_at": "2026-02-10T00:00:00.000Z", "records": records,
                      "signature": ""}, key)


def test_a_squatting_tombstone_does_not_hide_the_real_record(tmp_path: Path) -> None:
    original = sign_record(build.record(body="The pottery kiln fires on wednesdays.",
                                        created_at="2026-02-01T00:00:00.000Z"), KEY_A)
    attack, real = tmp_path / "attack.json", tmp_path / "real.json"
    attack.write_bytes(canonical_json(_file_by(KEY_B, [_tombstone_for(original)])))
    real.write_bytes(canonical_json(_file_by(KEY_A, [original])))
    home = tmp_path / "memory"
    Memory.load(attack, path=home, verify=True).close()
    memory = Memory.load(real, path=home, verify=True, expected_agent=KEY_A.address)
    try:
        assert original["id"] in memory.recall("pottery kiln").ids
    finally:
        memory.close()


def test_the_agents_own_restore_keeps_its_tombstones(tmp_path: Path) -> None:
    original = build.record(body="A secret stored by mistake.",
                            created_at="2026-02-01T00:00:00.000Z")
    tomb = _tombstone_for(original)
    own = tmp_path / "own.json"
    own.write_bytes(canonical_json(_file_by(KEY_A, [tomb])))
    memory = Memory.load(own, path=tmp_path / "m", verify=True, expected_agent=KEY_A.address)
    try:
        assert [r.model_dump() for r in memory.store] == [tomb]
    finally:
        memory.close()


# --- validate: bounded problems and output --------------------------------------------------

def test_validate_reports_a_bounded_number_of_problems(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    count = 200_000
    target = tmp_path / "numbers.json"
    target.write_text("[" + ",".join(["0"] * count) + "]", encoding="ascii")
    assert cli_main(["validate", "--json", str(target)]) == 1
    out = capsys.readouterr().out
    report = json.loads(out)["inputs"][0]
    assert report["problem_count"] == count
    assert len(report["problems"]) == MAX_PROBLEMS
    assert [p["index"] for p in report["problems"]] == list(range(MAX_PROBLEMS))
    assert len(out) < 400 * MAX_PROBLEMS + 2000  # the count, not the problems, grows
    assert cli_main(["validate", "--max-problems", "3", str(target)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4
    assert lines[-1].endswith(f"{count - 3} more problems not shown ({count} in all; "
                              "--max-problems N shows more)")


def test_the_first_problems_are_those_of_the_full_check() -> None:
    # Link problems (found after every record is read) interleave with per-record ones.
    records: list[Any] = []
    for n in range(400):  # enough problems that the bounded keeper trims several times
        record = build.record(body=f"fact {n}", created_at="2026-02-01T00:00:00.000Z")
        if n % 3 == 0:
            record = {**record, "superseded_by": "mem:" + f"{n:032x}", "state": "superseded",
                      "state_reason": "replaced"}
        records.append(record if n % 5 else "not a record")
    everything = check_records(records)
    assert len(everything) > 150
    for limit in (0, 1, 7, 15, len(everything), len(everything) + 5):
        first, total = first_problems(records, limit=limit)
        assert first == everything[:limit] and total == len(everything)


# --- JSONL only when asked for --------------------------------------------------------------

def _two_records() -> list[dict[str, Any]]:
    return [build.record(body=f"line fact {n}", created_at=f"2026-02-0{n}T00:00:00.000Z")
            for n in (1, 2)]


@pytest.mark.parametrize("command", ["canonicalize", "id", "fingerprint", "validate"])
def test_two_json_texts_are_not_silently_an_array(command: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "two.json"
    target.write_text("".join(json.dumps(r) + "\n" for r in _two_records()), encoding="utf-8")
    assert cli_main([command, str(target)]) == 1
    out = capsys.readouterr()
    assert "Extra data" in out.out + out.err
    assert cli_main([command, "--jsonl", str(target)]) == 0
    capsys.readouterr()


@pytest.mark.parametrize(("text", "requirement"), [
    ('{\n  "a": 0.5\n}\n', "CJ-6"),
    ('{\n  "a": "\\ud800"\n}\n', "CJ-8"),
    ('{\n  "a": 1,\n  "a": 2\n}\n', "CJ-9"),
    ('{\n  "a": 12345678901234567\n}\n', "CJ-7"),
])
def test_a_pretty_printed_file_gets_its_own_error(text: str, requirement: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "pretty.json"
    target.write_text(text, encoding="utf-8")
    for command in ("canonicalize", "id", "fingerprint"):
        assert cli_main([command, str(target)]) == 1
        out = capsys.readouterr()
        assert f"[{requirement}]" in out.out + out.err, (command, out)
        assert "Expecting property name" not in out.out + out.err


def test_canonicalize_jsonl_writes_one_canonical_line_per_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "values.jsonl"
    target.write_text('{"b": 1, "a": 2}\n\n[3, {"z": null, "y": true}]\n', encoding="utf-8")
    assert cli_main(["canonicalize", str(target)]) == 0
    assert capsys.readouterr().out == '{"a":2,"b":1}\n[3,{"y":true,"z":null}]\n'


# --- the protocol server enforces every limit before the engine sees a request --------------

class _Spy:
    """An engine that records the operations it was asked, answering each with {}."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def describe(self) -> dict[str, Any]:
        return {}

    def call(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(op)
        return {}

    def close(self) -> None:
        pass


def _serve(lines: list[bytes], limits: Limits) -> tuple[list[dict[str, Any]], list[str]]:
    spy = _Spy()
    out = io.BytesIO()
    inp = io.BytesIO(b"".join(line + b"\n" for line in lines))
    assert serve(spy, inp, out, limits=limits) == 0
    return [json.loads(line) for line in out.getvalue().splitlines()], spy.calls


def _request(rid: int, **args: Any) -> bytes:
    return json.dumps({"id": rid, "op": "reset", "args": args}).encode("utf-8")


def test_container_flood_in_an_ignored_argument_is_refused_undecoded() -> None:
    # The 60 MiB request with 21 M empty arrays, scaled down to a lowered limit.
    limits = Limits(max_containers=1_000)
    empties = b",".join([b"[]"] * 5_000)
    flood = b'{"id": 7, "op": "reset", "args": {"ignored": [' + empties + b"]}}"
    fine = _request(8, ignored=[[]] * 900)
    answers, calls = _serve([flood, fine], limits)
    assert answers[0]["id"] == 7 and answers[0]["ok"] is False
    assert answers[0]["error"]["code"] == "limit"
    assert "up to 5003 arrays and objects" in answers[0]["error"]["message"]
    assert answers[1] == {"id": 8, "ok": True, "result": {}}
    assert calls == ["reset"]


def test_depth_string_and_size_limits_are_answered_limit() -> None:
    limits = Limits(max_depth=4, max_string_chars=100, max_text_bytes=10_000)
    deep: Any = "x"
    for _ in range(9):
        deep = [deep]
    lines = [_request(1, a=deep), _request(2, a="y" * 101), _request(3, **{"k" * 101: 1}),
             _request(4, a="z" * 20_000), _request(5, a=[[["fits"]]], b="w" * 100)]
    answers, calls = _serve(lines, limits)
    assert [a["ok"] for a in answers] == [False, False, False, False, True]
    assert [a["error"]["code"] for a in answers[:4]] == ["limit"] * 4
    assert [a["id"] for a in answers] == [1, 2, 3, None, 5]
    assert calls == ["reset"]
