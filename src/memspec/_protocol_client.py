"""The kit's end of the process protocol: :class:`ProcessEngine` runs an engine command."""

from __future__ import annotations

import os
import queue
import select
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from memspec._canonical import DEFAULT_LIMITS
from memspec._errors import EngineError
from memspec._protocol_messages import (
    INTERNAL,
    PROTOCOL,
    WIRE_ERROR_CODES,
    EngineFault,
    check_handshake,
    check_result,
    decode_message,
    encode_message,
    hello_args,
    shorten,
)

__all__ = [
    "MAX_RESPONSE_DEPTH",
    "MAX_RESPONSE_LINE",
    "MAX_RESTARTS",
    "ProcessEngine",
    "StderrTail",
    "nests_deeper_than",
]

#: Longest response line the kit reads, the bound the engine side puts on a request line
#: (``Limits.max_text_bytes``); a longer one is a protocol fault, never buffered whole.
MAX_RESPONSE_LINE = DEFAULT_LIMITS.max_text_bytes
#: Deepest nesting of one response: a message wraps records, files and proposals, each of
#: which may itself nest ``Limits.max_depth`` levels.
MAX_RESPONSE_DEPTH = 2 * DEFAULT_LIMITS.max_depth
#: Times a process that crashed or was killed after a good handshake is started again
#: before the kit gives up on it (every later call is then a fault naming the last crash).
MAX_RESTARTS = 10
_STDERR_TAIL_LINES = 40
_STDERR_LINE_CHARS = 2000
#: Response lines read ahead of the kit: one is expected; more is a protocol violation
#: that must not make the reader buffer without bound.
_LINES_AHEAD = 4


@dataclass(frozen=True)
class _Oversized:
    """Stands in the line queue for a response line longer than :data:`MAX_RESPONSE_LINE`."""

    head: bytes


class StderrTail:
    """The last lines an engine wrote to its standard error, across restarts.

    A bounded ring: the reader thread keeps draining the pipe whatever the engine
    writes (so a chatty engine never blocks on a full pipe), keeping only the last
    :data:`_STDERR_TAIL_LINES` lines, each cut to :data:`_STDERR_LINE_CHARS` characters.
    """

    def __init__(self) -> None:
        self._lines: deque[tuple[int, str]] = deque(maxlen=_STDERR_TAIL_LINES)
        self._count = 0
        self._lock = threading.Lock()

    def add(self, text: str) -> None:
        """Keep one more line."""
        with self._lock:
            self._count += 1
            self._lines.append((self._count, text))

    def mark(self) -> int:
        """A position: :meth:`since` gives the lines written after it."""
        with self._lock:
            return self._count

    def since(self, mark: int = 0) -> list[str]:
        """The kept lines written after ``mark`` (an elision line first if some were lost)."""
        with self._lock:
            lines = [(n, t) for n, t in self._lines if n > mark]
            count = self._count
        if lines and lines[0][0] > mark + 1:
            return [f"[... {lines[0][0] - mark - 1} earlier lines not kept]",
                    *(t for _, t in lines)]
        return [t for _, t in lines] if count > mark else []


def _pump_lines(stream: IO[bytes], sink: queue.Queue[bytes | _Oversized | None],
                stop: threading.Event) -> None:
    def put(item: bytes | _Oversized | None) -> bool:
        while not stop.is_set():
            try:
                sink.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    try:
        while not stop.is_set():
            line = stream.readline(MAX_RESPONSE_LINE + 1)
            if not line:
                break
            if len(line) > MAX_RESPONSE_LINE and not line.endswith(b"\n"):
                if not put(_Oversized(line[:200])):
                    return
                # Drain the rest of the line without keeping it.
                while (rest := stream.readline(MAX_RESPONSE_LINE + 1)) and not rest.endswith(
                        b"\n"):
                    if stop.is_set():
                        return
                continue
            if not put(line):
                return
    except (OSError, ValueError):
        pass
    finally:
        try:
            sink.put_nowait(None)
        except queue.Full:
            pass


def _pump_stderr(stream: IO[bytes], tail: StderrTail) -> None:
    try:
        partial = b""
        while chunk := stream.readline(8192):
            if len(partial) < _STDERR_LINE_CHARS * 4:
                partial += chunk
            if chunk.endswith(b"\n"):
                text = partial.decode("utf-8", "replace").rstrip("\r\n")
                tail.add(text if len(text) <= _STDERR_LINE_CHARS
                         else text[:_STDERR_LINE_CHARS] + " [...]")
                partial = b""
        if partial:
            tail.add(partial.decode("utf-8", "replace")[:_STDERR_LINE_CHARS])
    except (OSError, ValueError):
        pass


def nests_deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests more than ``limit`` arrays and objects (an iterative walk)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values() if isinstance(v, dict | list))
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item if isinstance(v, dict | list))
    return False


class _Process:
    """One running engine process with its reader threads."""

    def __init__(self, command: Sequence[str], env: Mapping[str, str] | None,
                 cwd: str | os.PathLike[str] | None, stderr: StderrTail) -> None:
        full_env = None if env is None else {**os.environ, **env}
        # close_fds: the engine inherits no descriptor of the kit's beyond its three pipes
        # (the kit's report channel above all).
        self.popen = subprocess.Popen(
            list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=full_env, cwd=cwd, start_new_session=(os.name == "posix"), close_fds=True,
        )
        assert self.popen.stdout is not None and self.popen.stderr is not None
        self.lines: queue.Queue[bytes | _Oversized | None] = queue.Queue(maxsize=_LINES_AHEAD)
        self.stderr = stderr
        self.stop = threading.Event()
        self.readers = [
            threading.Thread(target=_pump_lines, args=(self.popen.stdout, self.lines, self.stop),
                             daemon=True),
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

    def settle_stderr(self, limit: float = 0.25) -> None:
        """Give the stderr reader a moment to take in what is already in the pipe (what the
        engine wrote before it answered), so that it can be shown with the answer."""
        assert self.popen.stderr is not None
        deadline = time.monotonic() + limit
        try:
            while time.monotonic() < deadline and select.select(
                    [self.popen.stderr], [], [], 0)[0]:
                time.sleep(0.005)
        except (OSError, ValueError):
            pass

    def kill(self) -> None:
        self.stop.set()
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
        # Let the stderr reader take in the last lines before its stream is closed.
        self.readers[1].join(timeout=0.5)
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass


class ProcessEngine:
    """An engine in another process, spoken to over the NDJSON protocol.

    Every call waits at most ``timeout`` seconds. A crash, hang, non-JSON line,
    wrong id, an oversized or too deeply nested line or (with ``check_results``)
    a malformed result raises :class:`EngineFault` and kills the process; the next
    call starts a fresh one (with a new handshake), so one crash does not poison
    the rest of a run, up to :data:`MAX_RESTARTS` times, after which every call is
    a fatal fault naming the last crash. A process that never answered its
    handshake is not started again (:attr:`given_up`). An error response raises
    :class:`memspec.EngineError` with the engine's error class, but ``internal``
    (a failure inside the engine, not a verdict) and ``protocol`` are faults.
    ``env`` is added to the kit's environment. The handshake may take
    ``startup_timeout`` (default: the larger of ``timeout`` and 30 s), as starting a
    process can be slow. What the engine writes to standard error is kept in
    :attr:`stderr` (the last lines) and shown with every fault.
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        timeout: float = 10.0,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        startup_timeout: float | None = None,
        check_results: bool = True,
        max_restarts: int = MAX_RESTARTS,
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
        #: Whether results are checked against protocol.json here (the kit's connection
        #: checks them itself, to attribute a bad field to its requirement).
        self.check_results = check_results
        self.max_restarts = max_restarts
        self.starts = 0
        #: Handshakes the engine answered (0: it never started).
        self.handshakes = 0
        #: Why the kit stopped starting the process, once it has.
        self.given_up: str | None = None
        self.stderr = StderrTail()
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
        if self.given_up is not None:
            raise EngineFault(self.given_up, fatal=True)
        if self._proc is not None:
            code = self._proc.exit_code()
            if code is None:
                return
            raise self._fault(f"engine process exited with code {code} between requests")
        if self.starts > self.max_restarts:
            self.given_up = (f"the engine process was started {self.starts} times (it crashed "
                             "or was killed after each); the kit does not start it again")
            tail = self.stderr.since()
            if tail:
                self.given_up += "\n--- engine stderr (last lines) ---\n" + "\n".join(tail)
            raise EngineFault(self.given_up, fatal=True)
        try:
            self._proc = _Process(self.command, self.env, self.cwd, self.stderr)
        except OSError as exc:
            self.given_up = f"cannot start engine command {self.command!r}: {exc}"
            raise EngineFault(self.given_up, fatal=True) from exc
        self.starts += 1
        self._info = None
        try:
            info = self._exchange("hello", hello_args(), timeout=self.startup_timeout)
            check_handshake(info)
        except EngineError as exc:
            raise self._start_fault(f"engine rejected the hello handshake: {exc}",
                                    None) from exc
        except EngineFault as exc:
            raise self._start_fault(f"handshake failed: {exc.message}", exc) from exc
        self.handshakes += 1
        self._info = info

    def _start_fault(self, message: str, cause: EngineFault | None) -> EngineFault:
        fault = self._fault(message, fatal=True) if self._proc is not None else EngineFault(
            message, fatal=True)
        if cause is not None:
            fault.requirement, fault.where = cause.requirement, cause.where
        if self.handshakes == 0:
            # It never started: starting it again for every test would only repeat this.
            self.given_up = fault.message
        return fault

    def _fault(self, message: str, *, with_stderr: bool = True, fatal: bool = False,
               requirement: str | None = None, where: str | None = None) -> EngineFault:
        proc, self._proc, self._info = self._proc, None, None
        if proc is not None:
            proc.kill()
        tail = self.stderr.since() if with_stderr else []
        if tail:
            message += "\n--- engine stderr (last lines) ---\n" + "\n".join(tail)
        return EngineFault(message, fatal=fatal, requirement=requirement, where=where)

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
        if isinstance(line, _Oversized):
            raise self._fault(
                f"engine's answer to {op!r} (request {rid}) is a line longer than "
                f"{MAX_RESPONSE_LINE} bytes, the most the kit reads; the process was killed "
                f"(it starts {shorten(repr(line.head), 120)})"
            )
        return self._read_response(op, rid, line)

    def _read_response(self, op: str, rid: int, line: bytes) -> dict[str, Any]:
        shown = shorten(repr(line.rstrip(b"\r\n")))
        try:
            message = decode_message(line)
        except RecursionError:
            message = None
            deep = True
        except (UnicodeDecodeError, ValueError) as exc:
            raise self._fault(
                f"engine wrote a line that is not JSON in answer to {op!r} ({exc}): {shown}"
                " (PROTO-1: stdout carries protocol messages only)",
                requirement="PROTO-1", where="standard output: a line that is not JSON",
            ) from None
        else:
            deep = (line.count(b"[") + line.count(b"{") > MAX_RESPONSE_DEPTH
                    and nests_deeper_than(message, MAX_RESPONSE_DEPTH))
        if deep:
            raise self._fault(
                f"engine's answer to {op!r} (request {rid}) nests arrays and objects deeper "
                f"than {MAX_RESPONSE_DEPTH} levels, the most the kit reads: {shorten(shown, 120)}"
            )
        if not isinstance(message, dict):
            raise self._fault(
                f"engine wrote a non-object JSON line in answer to {op!r}: {shown} "
                "(PROTO-1: messages are JSON objects)",
                requirement="PROTO-1", where="standard output: a line that is not an object")
        if "id" not in message or not isinstance(message.get("ok"), bool):
            raise self._fault(
                f"response to {op!r} lacks an id or a boolean ok (got keys {sorted(message)})"
            )
        if message["id"] != rid:
            raise self._fault(
                f"engine answered request id {message['id']!r} while request {rid} ({op!r}) was"
                " the one outstanding (PROTO-3: responses echo ids, in request order)",
                requirement="PROTO-3", where="response id",
            )
        if not message["ok"]:
            return self._raise_error(op, message.get("error"))
        result = message.get("result")
        if not isinstance(result, dict):
            raise self._fault(f"response to {op!r} has ok true but no result object")
        try:
            if op != "hello" and self.check_results:
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
        if code == INTERNAL:
            # A failure inside the engine, not a verdict on the input (SPEC 18.4): the test
            # is errored. The process answered in order, so it keeps running.
            if self._proc is not None:
                self._proc.settle_stderr()
            tail = self.stderr.since()
            shown = ("\n--- engine stderr (last lines) ---\n" + "\n".join(tail[-15:])
                     if tail else "")
            raise EngineFault(f"engine failed inside {op!r} (internal): {text}{shown}")
        if code not in WIRE_ERROR_CODES:
            raise self._fault(
                f"engine rejected {op!r} with {code!r}, which is not an error class (PROTO-4): "
                f"{text}", with_stderr=False, requirement="PROTO-4", where="error code",
            )
        requirement = error.get("requirement")
        raise EngineError(code, text,
                          requirement=requirement if isinstance(requirement, str) else None)
