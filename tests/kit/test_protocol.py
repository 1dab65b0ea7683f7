"""The process protocol: serve(), and ProcessEngine against well- and ill-behaved engines."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from memspec import EngineBase, EngineError, MemspecError, RecordError
from memspec.conformance._session import Connection, EngineSession, smoke
from memspec.protocol import (
    EngineFault,
    ProcessEngine,
    check_result,
    decode_message,
    encode_message,
    hello_args,
    serve,
)

from .engines import BadResultEngine, FormatEngine

ENGINES = str(Path(__file__).with_name("engines.py"))


def command(mode: str) -> list[str]:
    return [sys.executable, ENGINES, mode]


# --------------------------------------------------------------------------- serve()


class Dummy(EngineBase):
    name = "dummy"
    version = "1"
    claimed_profiles = ("format",)

    def op_reset(self, args: dict[str, Any]) -> dict[str, Any]:
        return {}

    def op_canonicalize(self, args: dict[str, Any]) -> dict[str, Any]:
        if args["text"] == "boom":
            raise KeyError("secret internals")
        if args["text"] == "bad":
            raise RecordError("not a record", requirement="REC-1")
        if args["text"] == "base":
            raise MemspecError("unclassified")
        return {"hex": args["text"].encode().hex()}


def run_serve(*lines: bytes | dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
    data = b"".join(line if isinstance(line, bytes) else encode_message(line) for line in lines)
    out = io.BytesIO()
    code = serve(Dummy(), stdin=io.BytesIO(data), stdout=out)
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


def test_serve_round_trip() -> None:
    code, answers = run_serve(
        {"id": 1, "op": "hello", "args": hello_args()},
        {"id": 2, "op": "reset", "args": {}},
        {"id": 3, "op": "canonicalize", "args": {"text": "{}"}},
        {"id": 4, "op": "bye", "args": {}},
        {"id": 5, "op": "reset", "args": {}},
    )
    assert code == 0
    assert [a["id"] for a in answers] == [1, 2, 3, 4], "nothing is answered after bye"
    assert answers[0]["result"]["name"] == "dummy"
    assert answers[0]["result"]["profiles"] == ["format"]
    assert answers[2] == {"id": 3, "ok": True, "result": {"hex": "7b7d"}}


def test_serve_errors_are_typed_and_never_tracebacks() -> None:
    code, answers = run_serve(
        {"id": 1, "op": "nope", "args": {}},
        {"id": 2, "op": "canonicalize", "args": {"text": "bad"}},
        {"id": 3, "op": "canonicalize", "args": {"text": "boom"}},
        {"id": 4, "op": "canonicalize", "args": {"text": "base"}},
        b"this is not json\n",
        b"[1, 2]\n",
        {"id": "seven", "op": "reset", "args": {}},
        {"id": 8, "op": "hello", "args": {"protocol": "memspec-engine/99"}},
        {"id": 9, "op": "hello", "args": {**hello_args(), "spec_version": "fg-agent-memory/9"}},
        {"id": 10, "op": "hello", "args": {"protocol": hello_args()["protocol"]}},
        b'{"id": 11.0, "op": "reset", "args": {}}\n',
        {"id": -1, "op": "reset", "args": {}},
        {"id": 2**53, "op": "reset", "args": {}},
    )
    assert code == 0
    errors = [(a["id"], a["ok"], a["error"]["code"]) for a in answers]
    assert errors == [
        (1, False, "unsupported"), (2, False, "record"), (3, False, "internal"),
        (4, False, "internal"), (None, False, "protocol"), (None, False, "protocol"),
        (None, False, "protocol"), (8, False, "protocol"), (9, False, "protocol"),
        (10, False, "protocol"), (None, False, "protocol"), (None, False, "protocol"),
        (None, False, "protocol"),
    ]
    assert answers[1]["error"]["requirement"] == "REC-1"
    assert "KeyError" in answers[2]["error"]["message"]
    assert "Traceback" not in json.dumps(answers)


def test_serve_ends_at_end_of_input() -> None:
    code, answers = run_serve({"id": 1, "op": "reset", "args": {}})
    assert code == 0 and answers == [{"id": 1, "ok": True, "result": {}}]


def test_messages_keep_lone_surrogates_and_refuse_non_json() -> None:
    line = encode_message({"id": 1, "op": "x", "args": {"text": "\ud800"}})
    assert line.isascii() and line.endswith(b"\n")
    assert decode_message(line)["args"]["text"] == "\ud800"
    for bad in (b'{"a": NaN}', b'{"a": 1, "a": 2}', b"\xff"):
        with pytest.raises(ValueError):
            decode_message(bad)


def test_check_result_names_the_operation_and_pointer() -> None:
    with pytest.raises(EngineFault) as info:
        check_result("put", {"version": 0})
    assert "'put'" in str(info.value) and info.value.pointer == "/version"
    check_result("put", {"version": 1})


# --------------------------------------------------------------------------- ProcessEngine


def test_process_engine_happy_path() -> None:
    with ProcessEngine(command("good"), timeout=20) as engine:
        assert engine.describe()["name"] == "kit-format-only"
        assert engine.call("canonicalize", {"text": '{"b":1,"a":2}'}) == {
            "hex": b'{"a":2,"b":1}'.hex()
        }
        with pytest.raises(EngineError) as info:
            engine.call("canonicalize", {"text": "1.5"})
        assert info.value.code == "canonical"
        with pytest.raises(EngineError) as info:
            engine.call("no_such_operation", {})
        assert info.value.code == "unsupported"
        assert engine.starts == 1
    assert engine.pid is None


def test_chatty_engine_keeps_stdout_clean() -> None:
    with ProcessEngine(command("chatty"), timeout=20) as engine:
        assert engine.call("canonicalize", {"text": "[]"}) == {"hex": "5b5d"}


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("crash", "simulated crash"),
        ("garbage", "not JSON"),
        ("out-of-order", "PROTO-3"),
        ("bad-result", "malformed"),
    ],
)
def test_broken_process_engines_fault_clearly(mode: str, expected: str) -> None:
    with ProcessEngine(command(mode), timeout=20) as engine:
        engine.describe()
        with pytest.raises(EngineFault) as info:
            engine.call("canonicalize", {"text": "{}"})
        assert expected in str(info.value)
        assert info.value.code == "protocol"
        # The next call starts a fresh process with a fresh handshake.
        assert engine.call("reset", {}) == {}
        assert engine.starts == 2


def test_hanging_engine_times_out() -> None:
    with ProcessEngine(command("hang"), timeout=0.5) as engine:
        engine.describe()
        with pytest.raises(EngineFault, match=r"did not answer 'canonicalize'.*within 0.5s"):
            engine.call("canonicalize", {"text": "{}"})


def test_engine_without_handshake_faults() -> None:
    with ProcessEngine(command("no-handshake"), timeout=20) as engine:
        with pytest.raises(EngineFault, match="hello"):
            engine.describe()


def test_crash_mid_run_does_not_poison_the_rest() -> None:
    with ProcessEngine(command("crash-on-request"), timeout=20) as engine:
        with pytest.raises(EngineFault, match="exited"):
            engine.call("canonicalize", {"text": "crash"})
        assert engine.call("canonicalize", {"text": "{}"}) == {"hex": "7b7d"}


def test_missing_command_faults() -> None:
    with pytest.raises(EngineFault, match="cannot start"):
        ProcessEngine(["/nonexistent/memspec-engine"]).describe()
    with pytest.raises(ValueError):
        ProcessEngine([])


# --------------------------------------------------------------------------- kit connection


def test_in_process_errors_map_like_the_wire() -> None:
    session = EngineSession(Connection(Dummy(), label="dummy"))
    with pytest.raises(EngineError) as info:
        session.call("canonicalize", text="bad")
    assert info.value.code == "record" and type(info.value) is EngineError
    assert session.reject("canonicalize", "internal", text="boom").code == "internal"
    assert session.reject("canonicalize", "internal", text="base").code == "internal"
    with pytest.raises(AssertionError, match="should fail with 'record' but succeeded"):
        session.reject("canonicalize", "record", text="{}")
    with pytest.raises(AssertionError, match="'canonical' but failed with 'record'"):
        session.reject("canonicalize", "canonical", text="bad")
    assert [c.op for c in session.transcript] == ["canonicalize"] * 5


def test_in_process_malformed_result_is_a_fault() -> None:
    session = EngineSession(Connection(BadResultEngine(), label="bad"))
    with pytest.raises(EngineFault, match="malformed"):
        session.call("canonicalize", text="{}")


def test_connection_abandons_an_engine_that_stops_answering() -> None:
    conn = Connection(ProcessEngine(command("hang"), timeout=0.2), label="hang")
    try:
        for _ in range(3):
            with pytest.raises(EngineFault, match="did not answer"):
                conn.call("canonicalize", {"text": "{}"})
        with pytest.raises(EngineFault, match="abandoned after 3 consecutive faults"):
            conn.call("reset", {})
    finally:
        conn.close()


def test_repeated_bad_answers_do_not_abandon_the_engine() -> None:
    conn = Connection(ProcessEngine(command("crash"), timeout=20), label="crash")
    try:
        for _ in range(4):
            with pytest.raises(EngineFault, match="simulated crash"):
                conn.call("canonicalize", {"text": "{}"})
        assert conn.call("reset", {}) == {}
    finally:
        conn.close()


def test_smoke_tells_wiring_from_conformance() -> None:
    result = smoke(FormatEngine())
    assert result.engine is not None and result.engine["name"] == "kit-format-only"
    by_name = {check.name: check for check in result.checks}
    assert by_name["handshake"].ok and by_name["reset"].ok
    assert by_name["canonicalize"].ok
    assert not by_name["address"].ok and "unsupported" in by_name["address"].detail
    assert not result.ok
    assert any(line.startswith("FAIL address") for line in result.lines())


def test_smoke_reports_a_broken_handshake() -> None:
    engine = ProcessEngine(command("no-handshake"), timeout=20)
    try:
        result = smoke(engine)
    finally:
        engine.close()
    assert not result.ok and result.checks[0].name == "handshake"
