"""The server end of the process protocol: :func:`serve` runs an in-process engine."""

from __future__ import annotations

import logging
import re
import sys
from contextlib import redirect_stdout
from typing import IO, Any

from memspec._canonical import DEFAULT_LIMITS, Limits
from memspec._errors import ERROR_CLASSES, MemspecError
from memspec._protocol_messages import (
    INTERNAL,
    PROTOCOL,
    decode_message,
    encode_message,
    error_response,
    ok_response,
)
from memspec.engine import Engine

__all__ = ["serve"]

# The public module's name, so logging configured for memspec.protocol still applies.
log = logging.getLogger("memspec.protocol")

#: Largest request id (the integers every JSON implementation reads exactly).
_MAX_ID = 2**53 - 1
#: A request's id when it is the line's first member (as memspec's client writes it): how a
#: line refused before decoding is still answered with its id.
_LEADING_ID = re.compile(rb'\s*\{\s*"id"\s*:\s*(0|[1-9][0-9]{0,15})\s*[,}]')


def _leading_id(line: bytes) -> int | None:
    match = _LEADING_ID.match(line)
    return int(match[1]) if match and int(match[1]) <= _MAX_ID else None


def _refused_undecoded(line: bytes, limits: Limits) -> dict[str, Any] | None:
    """The ``limit`` answer for a line whose containers alone exceed ``max_containers``.

    An upper bound (a bracket inside a string counts too), memchr-fast, taken before
    any object is built, as :func:`memspec.parse_json` does.
    """
    containers = line.count(b"[") + line.count(b"{")
    if containers <= limits.max_containers:
        return None
    return error_response(_leading_id(line), "limit",
                          f"request opens up to {containers} arrays and objects, over the "
                          f"limit of {limits.max_containers}")


def _over_limits(message: object, limits: Limits) -> str | None:
    """Why a decoded request breaks ``max_depth`` (a request nests at most twice it: it
    wraps records and files that may nest that deep themselves) or ``max_string_chars``
    (any key or string), or None; an iterative walk."""
    max_depth = 2 * limits.max_depth
    max_chars = limits.max_string_chars
    stack: list[tuple[object, int]] = [(message, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            return f"request nests arrays and objects deeper than {max_depth} levels"
        children: list[object]
        if isinstance(item, dict):
            if any(len(key) > max_chars for key in item):
                return f"a key of the request is longer than {max_chars} characters"
            children = list(item.values())
        else:
            children = item if isinstance(item, list) else []
        for child in children:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
            elif isinstance(child, str) and len(child) > max_chars:
                return f"a string in the request is longer than {max_chars} characters"
    return None


def _wire_error(exc: MemspecError, op: str) -> tuple[str, str, str | None]:
    if exc.code in ERROR_CLASSES:
        return exc.code, str(exc), exc.requirement
    if op == "hello" and exc.code == PROTOCOL:
        # A hello in versions the engine does not speak is answered protocol (SPEC 18.2).
        return PROTOCOL, exc.message, exc.requirement
    # A MemspecError outside the error classes is an engine bug, not a rejection class.
    return INTERNAL, f"unclassified error ({exc.code!r}): {exc}", exc.requirement


def _handle(engine: Engine, line: bytes, limits: Limits = DEFAULT_LIMITS
            ) -> tuple[dict[str, Any], bool]:
    """Answer one request line; the flag says whether the session ends."""
    refused = _refused_undecoded(line, limits)
    if refused is not None:
        return refused, False
    try:
        message = decode_message(line)
    except (UnicodeDecodeError, ValueError) as exc:
        return error_response(None, PROTOCOL, f"request line is not JSON: {exc}"), False
    except RecursionError:
        return error_response(_leading_id(line), "limit", "request line nests too deeply"), False
    if not isinstance(message, dict):
        return error_response(None, PROTOCOL, "a request is a JSON object"), False
    rid = message.get("id")
    if not isinstance(rid, int) or isinstance(rid, bool) or not 0 <= rid <= _MAX_ID:
        return error_response(None, PROTOCOL,
                              "request id must be an integer from 0 to 2**53 - 1"), False
    over = _over_limits(message, limits)
    if over is not None:
        return error_response(rid, "limit", over), False
    op = message.get("op")
    args = message.get("args", {})
    if not isinstance(op, str) or not isinstance(args, dict):
        return error_response(rid, PROTOCOL, "a request has op (string) and args (object)"), False
    try:
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
        code, text, requirement = _wire_error(exc, op)
        return error_response(rid, code, text, requirement), False
    except Exception as exc:
        log.exception("operation %r failed inside the engine", op)
        return error_response(rid, INTERNAL, f"{type(exc).__name__}: {exc}"), False


def serve(engine: Engine, stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None,
          *, limits: Limits = DEFAULT_LIMITS) -> int:
    """Serve ``engine`` over the process protocol until ``bye`` or end of input; return 0.

    ``stdin``/``stdout`` default to the process's binary standard streams. While
    serving on the real stdout, anything the engine prints goes to stderr, so
    stdout carries protocol messages only (PROTO-1). Logs go to stderr. ``hello`` is the
    engine's own operation like any other (``EngineBase.op_hello`` answers ``describe()``, or
    code ``protocol`` for versions it does not speak); ``bye`` is answered here. A request
    beyond ``limits`` (its size, its containers, counted before decoding, its
    depth or a string's length) is answered ``limit`` and the engine never sees it.
    """
    inp = stdin if stdin is not None else sys.stdin.buffer
    out = stdout if stdout is not None else sys.stdout.buffer
    guard = redirect_stdout(sys.stderr) if stdout is None else None
    try:
        if guard is not None:
            guard.__enter__()
        limit = limits.max_text_bytes
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
                response, stop = _handle(engine, line, limits)
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
