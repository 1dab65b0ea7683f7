"""The process protocol: serve(), and ProcessEngine against well- and ill-behaved engines."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memspec import EngineBase, EngineError, MemspecError, RecordError
from memspec._protocol_messages import REQUIREMENT_KEYWORD
from memspec.conformance._outcomes import catalogue
from memspec.conformance._session import Connection, EngineSession
from memspec.conformance._smoke import smoke
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


_SCRIPT = """\
import json, sys
def answer(message):
    sys.stdout.write(json.dumps(message) + "\\n"); sys.stdout.flush()
PRELUDE
for raw in sys.stdin:
    request = json.loads(raw)
    rid, op = request["id"], request["op"]
    BODY
    if op == "hello":
        answer({"id": rid, "ok": True, "result": {
            "name": "scripted", "version": "1", "spec_version": "fg-agent-memory/0.1",
            "protocol": "memspec-engine/1", "profiles": ["format"]}})
    elif op == "bye":
        answer({"id": rid, "ok": True, "result": {}}); break
    else:
        answer({"id": rid, "ok": True, "result": {"hex": "7b7d"} if op == "canonicalize" else {}})
"""


def script(tmp_path: Path, body: str = "", prelude: str = "") -> list[str]:
    """A small engine: ``body`` runs first for every request (``rid``, ``op``, ``answer``);
    it ``continue``s after answering itself, else the engine answers well."""
    import textwrap

    code = _SCRIPT.replace("PRELUDE", textwrap.dedent(prelude).strip() or "pass")
    code = code.replace("BODY", textwrap.indent(textwrap.dedent(body).strip() or "pass",
                                                "    ").lstrip())
    path = tmp_path / "engine.py"
    path.write_text(code, encoding="utf-8")
    return [sys.executable, str(path)]


# --------------------------------------------------------------------------- serve()


class Dummy(EngineBase):
    name = "dummy"
    version = "1"
    claimed_profiles: tuple[str, ...] = ("format",)

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
    # A crash (any exception but a typed rejection) and an unclassified MemspecError are
    # what the process protocol answers `internal`: errored in both modes, never a verdict.
    with pytest.raises(EngineFault, match="crashed inside 'canonicalize': KeyError"):
        session.reject("canonicalize", "internal", text="boom")
    with pytest.raises(EngineFault, match="internal"):
        session.reject("canonicalize", "record", text="base")
    with pytest.raises(AssertionError, match="should fail with 'record' but succeeded"):
        session.reject("canonicalize", "record", text="{}")
    with pytest.raises(AssertionError, match="'canonical' but failed with 'record'"):
        session.reject("canonicalize", "canonical", text="bad")
    assert [c.op for c in session.transcript] == ["canonicalize"] * 5


def test_an_internal_error_over_the_wire_is_a_fault_too(tmp_path: Path) -> None:
    engine = ProcessEngine(script(tmp_path, """
        if op == "canonicalize":
            sys.stderr.write("Traceback: KeyError in the engine\\n"); sys.stderr.flush()
            answer({"id": rid, "ok": False,
                    "error": {"code": "internal", "message": "KeyError: 'x'"}})
        """), timeout=20)
    session = EngineSession(Connection(engine, label="internal"))
    try:
        with pytest.raises(EngineFault, match=r"failed inside 'canonicalize' \(internal\)"):
            session.reject("canonicalize", "record", text="{}")
        assert engine.starts == 1  # it answered in order: the process keeps running
        engine.close()
        assert session.stderr_lines() == ["Traceback: KeyError in the engine"]
    finally:
        engine.close()


def test_transcript_shows_arguments_in_full() -> None:
    session = EngineSession(Connection(Dummy(), label="dummy"))
    text = json.dumps({"pad": "x" * 400, "slots": {}})
    session.call("canonicalize", text=text)
    shown = str(session.transcript[-1])
    assert '\\"slots\\": {}' in shown and "..." not in shown
    session.call("canonicalize", text="y" * 30_000)
    assert "[... cut at 20000 of 30012 characters]" in str(session.transcript[-1])


def test_a_result_field_off_its_schema_is_a_finding_on_its_requirement() -> None:
    conn = Connection(BadResultEngine(), label="bad")
    session = EngineSession(conn)
    # The result goes back to the test, which judges the behaviour on its own ...
    assert session.call("canonicalize", text="{}") == {"hex": "not hex at all"}
    session.call("canonicalize", text="[]")
    # ... and the field fails the requirement that defines it, once.
    findings = list(conn.findings.values())
    assert [(f.requirement, f.where) for f in findings] == [("PROTO-9", "canonicalize result /hex")]
    assert "'not hex at all' does not match" in findings[0].message


class OddTombstone(Dummy):
    """Answers redact with a tombstone whose state_reason is null (as fg-agent-memory does)."""

    claimed_profiles = ("format", "store", "redaction")

    def op_redact(self, args: dict[str, Any]) -> dict[str, Any]:
        from memspec.conformance._builders import record

        rec = record(created_at="2026-01-01T00:00:00.000Z")
        return {"record": {**rec, "state": "archived", "state_reason": None}}

    def op_history(self, args: dict[str, Any]) -> dict[str, Any]:
        from memspec.conformance._builders import record

        rec = record(created_at="2026-01-01T00:00:00.000Z")
        return {"records": [rec, {**rec, "confidence": 0.5}, {**rec, "confidence": 1}]}

    def op_get(self, args: dict[str, Any]) -> dict[str, Any]:
        return {}


def test_one_odd_field_fails_its_requirement_and_the_test_goes_on() -> None:
    conn = Connection(OddTombstone(), label="odd")
    result = conn.call("redact", {"id": "mem:" + "0" * 32, "reason": "r", "now": "x"})
    assert result["record"]["state_reason"] is None
    conn.call("history", {"id": "mem:" + "0" * 32})
    assert {(f.requirement, f.where) for f in conn.findings.values()} == {
        ("LC-3", "redact result /record/state_reason"),
        ("CONF-1", "history result /records/*/confidence")}
    # a result that lacks its own member is unusable: a fault (errored), not a verdict
    with pytest.raises(EngineFault, match="'record' is a required property"):
        conn.call("get", {"id": "mem:" + "0" * 32})
    assert len(conn.findings) == 2


def _annotations(value: Any, where: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == REQUIREMENT_KEYWORD:
                yield where, item
            else:
                yield from _annotations(item, f"{where}/{key}")
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from _annotations(item, f"{where}/{n}")


def test_every_requirement_annotation_names_a_real_requirement() -> None:
    import memspec.schemas

    schemas = Path(next(iter(memspec.schemas.__path__)))
    known = set(catalogue())
    found = []
    for path in sorted(schemas.rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for where, value in _annotations(data):
            found.append(where)
            assert isinstance(value, str) and value in known, f"{path.name}{where}: {value!r}"
    assert len(found) > 50
    # every operation's result names a fallback requirement, but for the session's own and
    # index, whose results are bare objects (their one shape is checked before any schema)
    protocol = json.loads((schemas / "protocol.json").read_text(encoding="utf-8"))
    unannotated = sorted(name for name, schema in protocol["$defs"].items()
                         if name.endswith(".result") and REQUIREMENT_KEYWORD not in schema)
    assert unannotated == ["bye.result", "index.result", "reset.result"]


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


# --------------------------------------------------------------------------- start-up, stderr


def test_a_banner_before_the_handshake_stops_the_engine_at_once(tmp_path: Path) -> None:
    engine = ProcessEngine(script(tmp_path, prelude="""
        sys.stderr.write("node: Cannot find module './lib'\\n"); sys.stderr.flush()
        print("my-engine 1.0 starting", flush=True)
        """), timeout=20)
    conn = Connection(engine, label="banner")
    try:
        assert conn.start() is None and conn.never_started
        assert "PROTO-1" in (conn.start_fault or "")
        assert "Cannot find module './lib'" in (conn.start_fault or "")
        for _ in range(3):
            with pytest.raises(EngineFault, match="handshake failed"):
                conn.call("canonicalize", {"text": "{}"})
        assert engine.starts == 1  # never started again
    finally:
        conn.close()


def test_an_engine_that_dies_at_start_up_is_not_restarted(tmp_path: Path) -> None:
    engine = ProcessEngine(script(tmp_path, prelude="""
        sys.stderr.write("Error: Cannot find module 'x'\\n"); raise SystemExit(1)
        """), timeout=20)
    try:
        with pytest.raises(EngineFault, match="Cannot find module 'x'"):
            engine.describe()
        with pytest.raises(EngineFault, match="Cannot find module 'x'"):
            engine.call("reset", {})
        assert engine.starts == 1 and engine.given_up is not None
    finally:
        engine.close()


def test_a_crash_mid_run_is_restarted_a_bounded_number_of_times(tmp_path: Path) -> None:
    engine = ProcessEngine(script(tmp_path, """
        if op == "canonicalize":
            sys.stderr.write("segfault in canonicalize\\n"); raise SystemExit(139)
        """), timeout=20, max_restarts=2)
    try:
        for _ in range(3):
            with pytest.raises(EngineFault, match="exited"):
                engine.call("canonicalize", {"text": "{}"})
        with pytest.raises(EngineFault, match="started 3 times") as info:
            engine.call("reset", {})
        assert "segfault in canonicalize" in str(info.value) and info.value.fatal
        assert engine.starts == 3
    finally:
        engine.close()


def test_stderr_is_drained_and_bounded(tmp_path: Path) -> None:
    engine = ProcessEngine(script(tmp_path, """
        if op == "canonicalize":
            for n in range(20000):
                sys.stderr.write(f"noise {n}\\n")
            sys.stderr.write("z" * 1_000_000 + "\\n"); sys.stderr.flush()
        """), timeout=30)
    try:
        assert engine.call("canonicalize", {"text": "{}"}) == {"hex": "7b7d"}
        assert engine.call("reset", {}) == {}
        engine.close()
        lines = engine.stderr.since()
        assert len(lines) <= 41 and lines[0].startswith("[... ")
        assert lines[-1].endswith("[...]") and len(lines[-1]) < 2100
    finally:
        engine.close()


def test_smoke_shows_the_engines_stderr(tmp_path: Path) -> None:
    engine = ProcessEngine(script(tmp_path, prelude="""
        sys.stderr.write("\\x1b[2Jfatal: no config\\n"); raise SystemExit(2)
        """), timeout=20)
    try:
        result = smoke(engine)
    finally:
        engine.close()
    assert not result.ok
    text = "\n".join(result.lines())
    assert "engine stderr" in text and "fatal: no config" in text
    assert "\x1b" not in text and "\\x1b[2J" in text


# --------------------------------------------------------------------------- protocol findings


@pytest.mark.parametrize(("body", "requirement"), [
    ('if op == "canonicalize":\n    print("debug: here", flush=True); continue', "PROTO-1"),
    ('if op == "canonicalize":\n    answer({"id": rid + 7, "ok": True, "result": {}}); continue',
     "PROTO-3"),
])
def test_protocol_violations_are_findings_and_the_test_errors(
        tmp_path: Path, body: str, requirement: str) -> None:
    conn = Connection(ProcessEngine(script(tmp_path, body), timeout=20), label="x")
    try:
        for _ in range(2):
            with pytest.raises(EngineFault, match=requirement):
                EngineSession(conn).call("canonicalize", text="{}")
        assert conn.call("reset", {}) == {}
        findings = list(conn.findings.values())
        assert [f.requirement for f in findings] == [requirement]  # once, however often seen
        assert findings[0].call is not None and findings[0].call.startswith("canonicalize(")
        assert conn.state.findings == tuple(findings)
    finally:
        conn.close()


def test_a_deep_or_huge_response_is_a_fault_not_a_crash(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import memspec._protocol_client as client

    engine = ProcessEngine(script(tmp_path, """
        if op == "canonicalize" and request["args"]["text"] == "deep":
            sys.stdout.write('{"id": %d, "ok": true, "result": {"hex": ' % rid
                             + "[" * 200000 + "]" * 200000 + "}}\\n"); sys.stdout.flush()
            continue
        if op == "canonicalize" and request["args"]["text"] == "shallow-deep":
            sys.stdout.write('{"id": %d, "ok": true, "result": {"hex": ' % rid
                             + "[" * 200 + "]" * 200 + "}}\\n"); sys.stdout.flush()
            continue
        if op == "canonicalize" and request["args"]["text"] == "huge":
            sys.stdout.write("x" * 50000); sys.stdout.flush()
            continue
        """), timeout=20)
    conn = Connection(engine, label="x")
    try:
        for text in ("deep", "shallow-deep"):
            with pytest.raises(EngineFault, match="deeper than 128 levels"):
                conn.call("canonicalize", {"text": text})
        # each fault killed the process; the next one reads with a small bound
        monkeypatch.setattr(client, "MAX_RESPONSE_LINE", 4096)
        with pytest.raises(EngineFault, match="longer than 4096 bytes"):
            conn.call("canonicalize", {"text": "huge"})
        assert conn.call("canonicalize", {"text": "{}"}) == {"hex": "7b7d"}
    finally:
        conn.close()


class DeepEngine(Dummy):
    def op_canonicalize(self, args: dict[str, Any]) -> dict[str, Any]:
        value: Any = []
        for _ in range(int(args["text"])):
            value = [value]
        return {"hex": value}


@pytest.mark.parametrize("depth", [200, 200_000])
def test_a_deep_in_process_result_is_a_fault(depth: int) -> None:
    conn = Connection(DeepEngine(), label="deep")
    with pytest.raises(EngineFault, match="deeper than 128 levels"):
        conn.call("canonicalize", {"text": str(depth)})


def test_result_checking_fails_closed_for_a_known_operation() -> None:
    """A known operation always has a result shape; only an unknown one goes unchecked."""
    from memspec._protocol_messages import _validator
    from memspec.data import operations

    for name in operations():
        assert _validator(f"{name}.result") is not None, name
    assert _validator("no_such_operation.result") is None
