"""The engine process protocol: newline-delimited JSON over stdin/stdout (PROTO-1..6).

One request per line, ``{"id": <int>, "op": <operation>, "args": {...}}``;
one response per line, ``{"id", "ok": true, "result": {...}}`` or
``{"id", "ok": false, "error": {"code", "message"}}``, in request order.
The first exchange is ``hello``; ``bye`` (or end of input) ends the session.

:func:`serve` runs any in-process :class:`~memspec.Engine` as such a process
(an engine author's adapter is one line: ``raise SystemExit(serve(MyEngine()))``).
:class:`ProcessEngine` is the kit's side: it starts an engine command and
presents it as an :class:`~memspec.Engine`, turning every way a process can
misbehave (crash, hang, garbage, wrong ids, malformed results) into an
:class:`EngineFault` instead of a hung or confused test run.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from contextlib import redirect_stdout
from functools import cache
from typing import IO, Any

from memspec._canonical import DEFAULT_LIMITS
from memspec._errors import ERROR_CLASSES, EngineError, MemspecError
from memspec.engine import PROTOCOL_VERSION, SPEC_VERSION, Engine

__all__ = [
    "INTERNAL",
    "PROTOCOL",
    "PROTOCOL_SCHEMA_ID",
    "WIRE_ERROR_CODES",
    "EngineFault",
    "ProcessEngine",
    "check_handshake",
    "check_result",
    "decode_message",
    "encode_message",
    "error_response",
    "hello_args",
    "ok_response",
    "serve",
]

log = logging.getLogger("memspec.protocol")

#: Error code for a broken exchange (garbage, wrong id, crash, timeout, malformed result).
PROTOCOL = "protocol"
#: Error code for an engine bug that is not a rejection of the input.
INTERNAL = "internal"
#: Every error code a response may carry.
WIRE_ERROR_CODES = frozenset(ERROR_CLASSES) | {PROTOCOL, INTERNAL}

_STDERR_TAIL_LINES = 40
#: Largest request id (the integers every JSON implementation reads exactly).
_MAX_ID = 2**53 - 1
_MAX_SHOWN = 300


class EngineFault(MemspecError):
    """The engine broke the protocol (or died, or hung): not a verdict on any rule.

    The kit reports a test that hits one as *errored*, distinct from failed.
    ``fatal`` marks faults that suggest the engine cannot be reached at all
    (it will not start, fails its handshake, or stops answering), as opposed to
    one bad answer; a kit gives up on an engine after a few fatal ones in a row.
    """

    code = PROTOCOL

    def __init__(self, message: str, *, pointer: str | None = None, fatal: bool = False) -> None:
        super().__init__(message, pointer=pointer)
        self.fatal = fatal


# --------------------------------------------------------------------------- messages


def encode_message(message: Mapping[str, Any]) -> bytes:
    """One protocol line: compact JSON, ASCII-escaped (so lone surrogates survive), newline."""
    text = json.dumps(message, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text.encode("ascii") + b"\n"


def _no_constants(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def decode_message(line: bytes) -> Any:
    """Parse one protocol line (UTF-8 JSON; NaN, Infinity and duplicate keys are refused)."""
    text = line.decode("utf-8")
    return json.loads(text, parse_constant=_no_constants, object_pairs_hook=_unique_pairs)


def hello_args() -> dict[str, str]:
    """The arguments of the opening ``hello``."""
    return {"protocol": PROTOCOL_VERSION, "spec_version": SPEC_VERSION}


def ok_response(request_id: int | None, result: Mapping[str, Any]) -> dict[str, Any]:
    """A success response."""
    return {"id": request_id, "ok": True, "result": dict(result)}


def error_response(
    request_id: int | None, code: str, message: str, requirement: str | None = None
) -> dict[str, Any]:
    """A rejection (or protocol error) response."""
    error: dict[str, Any] = {"code": code, "message": message}
    if requirement:
        error["requirement"] = requirement
    return {"id": request_id, "ok": False, "error": error}


def _shorten(text: str, limit: int = _MAX_SHOWN) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------- schemas

PROTOCOL_SCHEMA_ID = "https://memspec.dev/schemas/protocol.json"


_RECORD_SCHEMA_FILE = "record.json"
_MAX_MEMO = 50_000
#: Records already found valid, by their JSON text: results repeat the same records
#: (get, history, iterate, snapshots), and validating one against record.json is costly.
_valid_records: set[str] = set()


@cache
def _validator_class() -> Any:
    from jsonschema import Draft202012Validator
    from jsonschema.validators import extend

    plain_ref = Draft202012Validator.VALIDATORS["$ref"]

    def memo_ref(validator: Any, ref: str, instance: Any, schema: Any) -> Any:
        if ref.rsplit("/", 1)[-1] != _RECORD_SCHEMA_FILE or not isinstance(instance, dict):
            yield from plain_ref(validator, ref, instance, schema)
            return
        try:
            key = json.dumps(instance, sort_keys=True)
        except (TypeError, ValueError):
            key = None
        if key is not None and key in _valid_records:
            return
        errors = list(plain_ref(validator, ref, instance, schema))
        if not errors and key is not None:
            if len(_valid_records) >= _MAX_MEMO:
                _valid_records.clear()
            _valid_records.add(key)
        yield from errors

    return extend(Draft202012Validator, {"$ref": memo_ref})  # type: ignore[no-untyped-call]


@cache
def _validator(definition: str) -> Any:
    from memspec._schemas import SCHEMA_REGISTRY

    if PROTOCOL_SCHEMA_ID not in SCHEMA_REGISTRY:
        return None
    defs = SCHEMA_REGISTRY.contents(PROTOCOL_SCHEMA_ID).get("$defs", {})
    if definition not in defs:
        return None
    schema = {"$ref": f"{PROTOCOL_SCHEMA_ID}#/$defs/{definition}"}
    return _validator_class()(schema, registry=SCHEMA_REGISTRY)


def _pointer(path: Sequence[object]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _check(definition: str, value: Any, what: str) -> None:
    validator = _validator(definition)
    if validator is None:
        return
    from jsonschema.exceptions import best_match

    error = best_match(validator.iter_errors(value))
    if error is not None:
        where = _pointer(list(error.absolute_path)) or "/"
        raise EngineFault(f"{what} is malformed: {_shorten(error.message, 200)}", pointer=where)


def check_result(operation: str, result: Any) -> None:
    """Raise EngineFault unless ``result`` matches ``<operation>.result`` in protocol.json."""
    _check(f"{operation}.result", result, f"engine's result for {operation!r}")


def check_handshake(info: Any) -> None:
    """Raise EngineFault unless ``info`` is a hello result for this protocol and spec version."""
    _check("hello.result", info, "engine's hello result")
    if not isinstance(info, dict):
        raise EngineFault("engine's hello result is not an object")
    if info.get("protocol") != PROTOCOL_VERSION:
        raise EngineFault(
            f"engine speaks protocol {info.get('protocol')!r}; this kit speaks {PROTOCOL_VERSION}"
        )
    if info.get("spec_version") != SPEC_VERSION:
        raise EngineFault(
            f"engine implements {info.get('spec_version')!r}; this kit checks {SPEC_VERSION}"
        )


# --------------------------------------------------------------------------- server


def _wire_error(exc: MemspecError) -> tuple[str, str, str | None]:
    if exc.code in ERROR_CLASSES:
        return exc.code, str(exc), exc.requirement
    # A MemspecError outside the error classes is an engine bug, not a rejection class.
    return INTERNAL, f"unclassified error ({exc.code!r}): {exc}", exc.requirement


def _handle(engine: Engine, line: bytes) -> tuple[dict[str, Any], bool]:
    """Answer one request line; the flag says whether the session ends."""
    try:
        message = decode_message(line)
    except (UnicodeDecodeError, ValueError) as exc:
        return error_response(None, PROTOCOL, f"request line is not JSON: {exc}"), False
    except RecursionError:
        return error_response(None, "limit", "request line nests too deeply"), False
    if not isinstance(message, dict):
        return error_response(None, PROTOCOL, "a request is a JSON object"), False
    rid = message.get("id")
    if not isinstance(rid, int) or isinstance(rid, bool) or not 0 <= rid <= _MAX_ID:
        return error_response(None, PROTOCOL,
                              "request id must be an integer from 0 to 2**53 - 1"), False
    op = message.get("op")
    args = message.get("args", {})
    if not isinstance(op, str) or not isinstance(args, dict):
        return error_response(rid, PROTOCOL, "a request has op (string) and args (object)"), False
    try:
        if op == "hello":
            if args.get("protocol") != PROTOCOL_VERSION:
                return error_response(
                    rid, PROTOCOL,
                    f"this engine speaks {PROTOCOL_VERSION}, not {args.get('protocol')!r}",
                ), False
            if args.get("spec_version") != SPEC_VERSION:
                return error_response(
                    rid, PROTOCOL,
                    f"this engine implements {SPEC_VERSION}, not {args.get('spec_version')!r}",
                ), False
            return ok_response(rid, engine.describe()), False
        if op == "bye":
            return ok_response(rid, {}), True
        result = engine.call(op, args)
        if not isinstance(result, dict):
            return error_response(
                rid, INTERNAL, f"engine returned {type(result).__name__} for {op!r}, not an object"
            ), False
        encode_message(result)  # fail here, as an internal error, if it is not JSON
        return ok_response(rid, result), False
    except MemspecError as exc:
        code, text, requirement = _wire_error(exc)
        return error_response(rid, code, text, requirement), False
    except Exception as exc:
        log.exception("operation %r failed inside the engine", op)
        return error_response(rid, INTERNAL, f"{type(exc).__name__}: {exc}"), False


def serve(engine: Engine, stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None) -> int:
    """Serve ``engine`` over the process protocol until ``bye`` or end of input; return 0.

    ``stdin``/``stdout`` default to the process's binary standard streams. While
    serving on the real stdout, anything the engine prints goes to stderr, so
    stdout carries protocol messages only (PROTO-1). Logs go to stderr.
    """
    inp = stdin if stdin is not None else sys.stdin.buffer
    out = stdout if stdout is not None else sys.stdout.buffer
    guard = redirect_stdout(sys.stderr) if stdout is None else None
    try:
        if guard is not None:
            guard.__enter__()
        limit = DEFAULT_LIMITS.max_text_bytes
        while raw := inp.readline(limit + 1):
            if len(raw) > limit and not raw.endswith(b"\n"):
                while (rest := inp.readline(limit + 1)) and not rest.endswith(b"\n"):
                    pass  # skip the rest of the oversized line without keeping it
                response, stop = error_response(
                    None, "limit", f"request line exceeds {limit} bytes"), False
            else:
                line = raw.rstrip(b"\r\n")
                if not line.strip():
                    continue
                response, stop = _handle(engine, line)
            try:
                data = encode_message(response)
            except (TypeError, ValueError) as exc:
                data = encode_message(error_response(
                    response.get("id"), INTERNAL, f"response is not JSON: {exc}"
                ))
            out.write(data)
            out.flush()
            if stop:
                break
        return 0
    finally:
        if guard is not None:
            guard.__exit__(None, None, None)
        try:
            engine.close()
        except Exception:
            log.exception("engine.close() failed")


# --------------------------------------------------------------------------- client


def _pump_lines(stream: IO[bytes], sink: queue.Queue[bytes | None]) -> None:
    try:
        for line in stream:
            sink.put(line)
    except (OSError, ValueError):
        pass
    finally:
        sink.put(None)


def _pump_stderr(stream: IO[bytes], tail: deque[str]) -> None:
    try:
        for line in stream:
            tail.append(line.decode("utf-8", "replace").rstrip("\r\n"))
    except (OSError, ValueError):
        pass


class _Process:
    """One running engine process with its reader threads."""

    def __init__(self, command: Sequence[str], env: Mapping[str, str] | None,
                 cwd: str | os.PathLike[str] | None) -> None:
        full_env = None if env is None else {**os.environ, **env}
        self.popen = subprocess.Popen(
            list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=full_env, cwd=cwd, start_new_session=(os.name == "posix"),
        )
        assert self.popen.stdout is not None and self.popen.stderr is not None
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.stderr: deque[str] = deque(maxlen=_STDERR_TAIL_LINES)
        self.readers = [
            threading.Thread(target=_pump_lines, args=(self.popen.stdout, self.lines), daemon=True),
            threading.Thread(target=_pump_stderr, args=(self.popen.stderr, self.stderr),
                             daemon=True),
        ]
        for reader in self.readers:
            reader.start()

    def exit_code(self, wait: float = 0.0) -> int | None:
        try:
            return self.popen.wait(timeout=wait) if wait else self.popen.poll()
        except subprocess.TimeoutExpired:
            return None

    def stderr_tail(self) -> str:
        self.readers[1].join(timeout=0.5)
        return "\n".join(self.stderr)

    def kill(self) -> None:
        if self.popen.poll() is None:
            try:
                if os.name == "posix":
                    os.killpg(self.popen.pid, signal.SIGKILL)
                else:  # pragma: no cover - the kit is POSIX-first
                    self.popen.kill()
            except (ProcessLookupError, PermissionError):
                self.popen.kill()
        try:
            self.popen.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not wait
            pass
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass


class ProcessEngine:
    """An engine in another process, spoken to over the NDJSON protocol.

    Every call waits at most ``timeout`` seconds. A crash, hang, non-JSON line,
    wrong id or malformed result raises :class:`EngineFault` and kills the
    process; the next call starts a fresh one (with a new handshake), so one
    crash does not poison the rest of a run. An error response raises
    :class:`memspec.EngineError` with the engine's error class. ``env`` is added
    to the kit's environment. The handshake may take ``startup_timeout``
    (default: the larger of ``timeout`` and 30 s), as starting a process can be slow.
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        timeout: float = 10.0,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        startup_timeout: float | None = None,
    ) -> None:
        if isinstance(command, str) or not command or not all(
            isinstance(part, str) for part in command
        ):
            raise ValueError("command must be a non-empty list of strings (shlex.split a string)")
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self.command = list(command)
        self.timeout = float(timeout)
        # Starting an interpreter on a busy machine can take far longer than one request.
        self.startup_timeout = float(startup_timeout or max(self.timeout, 30.0))
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.starts = 0
        self._proc: _Process | None = None
        self._info: dict[str, Any] | None = None
        self._next_id = 1

    # -- Engine interface

    def describe(self) -> dict[str, Any]:
        """The engine's hello result (starting the process if needed)."""
        self._ensure_started()
        assert self._info is not None
        return dict(self._info)

    def call(self, operation: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Send one request and return its result, or raise EngineError / EngineFault."""
        self._ensure_started()
        return self._exchange(operation, arguments)

    def close(self) -> None:
        """Say bye, give the process a moment to exit, then make sure it is gone."""
        proc, self._proc, self._info = self._proc, None, None
        if proc is None:
            return
        try:
            if proc.exit_code() is None and proc.popen.stdin is not None:
                proc.popen.stdin.write(encode_message({"id": self._next_id, "op": "bye",
                                                       "args": {}}))
                proc.popen.stdin.flush()
                proc.popen.stdin.close()
                proc.exit_code(wait=min(self.timeout, 2.0))
        except (OSError, ValueError):
            pass
        finally:
            proc.kill()

    def __enter__(self) -> ProcessEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """The running process id, if any."""
        return self._proc.popen.pid if self._proc is not None else None

    # -- internals

    def _ensure_started(self) -> None:
        if self._proc is not None:
            code = self._proc.exit_code()
            if code is None:
                return
            raise self._fault(f"engine process exited with code {code} between requests")
        try:
            self._proc = _Process(self.command, self.env, self.cwd)
        except OSError as exc:
            raise EngineFault(f"cannot start engine command {self.command!r}: {exc}",
                              fatal=True) from exc
        self.starts += 1
        self._info = None
        try:
            info = self._exchange("hello", hello_args(), timeout=self.startup_timeout)
            check_handshake(info)
        except EngineError as exc:
            raise self._fault(f"engine rejected the hello handshake: {exc}", fatal=True) from exc
        except EngineFault as exc:
            if self._proc is not None:
                raise self._fault(f"handshake failed: {exc.message}", fatal=True) from exc
            raise EngineFault(f"handshake failed: {exc.message}", fatal=True) from exc
        self._info = info

    def _fault(self, message: str, *, with_stderr: bool = True, fatal: bool = False) -> EngineFault:
        proc, self._proc, self._info = self._proc, None, None
        if proc is not None:
            proc.kill()
            tail = proc.stderr_tail() if with_stderr else ""
            if tail:
                message += "\n--- engine stderr (tail) ---\n" + tail
        return EngineFault(message, fatal=fatal)

    def _exchange(
        self, op: str, args: dict[str, Any], timeout: float | None = None
    ) -> dict[str, Any]:
        proc = self._proc
        limit = self.timeout if timeout is None else timeout
        assert proc is not None
        rid = self._next_id
        self._next_id += 1
        data = encode_message({"id": rid, "op": op, "args": args})
        assert proc.popen.stdin is not None
        try:
            proc.popen.stdin.write(data)
            proc.popen.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            code = proc.exit_code(wait=1.0)
            raise self._fault(
                f"engine process is gone (exit code {code}) before request {rid} ({op})"
            ) from None
        deadline = time.monotonic() + limit
        try:
            line = proc.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise self._fault(
                f"engine did not answer {op!r} (request {rid}) within {limit:g}s;"
                " the process was killed", fatal=True,
            ) from None
        if line is None:
            code = proc.exit_code(wait=1.0)
            raise self._fault(
                f"engine process exited (code {code}) while {op!r} (request {rid}) was pending"
            )
        return self._read_response(op, rid, line)

    def _read_response(self, op: str, rid: int, line: bytes) -> dict[str, Any]:
        shown = _shorten(repr(line.rstrip(b"\r\n")))
        try:
            message = decode_message(line)
        except (UnicodeDecodeError, ValueError) as exc:
            raise self._fault(
                f"engine wrote a line that is not JSON in answer to {op!r} ({exc}): {shown}"
                " (PROTO-1: stdout carries protocol messages only)"
            ) from None
        if not isinstance(message, dict):
            raise self._fault(f"engine wrote a non-object JSON line in answer to {op!r}: {shown}")
        if "id" not in message or not isinstance(message.get("ok"), bool):
            raise self._fault(
                f"response to {op!r} lacks an id or a boolean ok (got keys {sorted(message)})"
            )
        if message["id"] != rid:
            raise self._fault(
                f"engine answered request id {message['id']!r} while request {rid} ({op!r}) was"
                " the one outstanding (PROTO-3: responses echo ids, in request order)"
            )
        if not message["ok"]:
            return self._raise_error(op, message.get("error"))
        result = message.get("result")
        if not isinstance(result, dict):
            raise self._fault(f"response to {op!r} has ok true but no result object")
        try:
            if op != "hello":
                check_result(op, result)
        except EngineFault as exc:
            raise self._fault(str(exc), with_stderr=False) from None
        return result

    def _raise_error(self, op: str, error: object) -> dict[str, Any]:
        if (
            not isinstance(error, dict)
            or not isinstance(error.get("code"), str)
            or not isinstance(error.get("message"), str)
        ):
            raise self._fault(f"error response to {op!r} lacks error.code / error.message")
        code, text = error["code"], error["message"]
        if code == PROTOCOL:
            raise self._fault(f"engine reported a protocol error for {op!r}: {text}")
        if code not in WIRE_ERROR_CODES:
            raise self._fault(
                f"engine rejected {op!r} with {code!r}, which is not an error class (PROTO-4): "
                f"{text}", with_stderr=False,
            )
        requirement = error.get("requirement")
        raise EngineError(code, text,
                          requirement=requirement if isinstance(requirement, str) else None)
