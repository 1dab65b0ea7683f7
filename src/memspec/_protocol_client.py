"""The kit's end of the process protocol: :class:`ProcessEngine` runs an engine command."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import IO, Any

from memspec._errors import EngineError
from memspec._protocol_messages import (
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

__all__ = ["ProcessEngine"]

_STDERR_TAIL_LINES = 40


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
        shown = shorten(repr(line.rstrip(b"\r\n")))
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
