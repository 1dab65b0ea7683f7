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

This module is the public surface; the code lives in ``memspec._protocol_messages``
(messages, error codes, schema checks), ``memspec._protocol_server`` and
``memspec._protocol_client``.
"""

from __future__ import annotations

from memspec._protocol_client import ProcessEngine
from memspec._protocol_messages import (
    INTERNAL,
    PROTOCOL,
    PROTOCOL_SCHEMA_ID,
    WIRE_ERROR_CODES,
    EngineFault,
    check_handshake,
    check_result,
    decode_message,
    encode_message,
    error_response,
    hello_args,
    ok_response,
)
from memspec._protocol_server import serve

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
