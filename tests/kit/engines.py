"""Tiny engines for testing the kit's harness, including deliberately broken process engines.

In-process: ``format_only()`` (claims only the format profile and implements a
few format operations with memspec's core code), ``not_an_engine()``,
``bad_results()`` (answers malformed results).

As a process: ``python engines.py MODE`` where MODE is one of good, crash, hang,
garbage, out-of-order, bad-result, no-handshake, chatty, crash-on-request.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import memspec
from memspec import EngineBase, canonical_json, canonical_timestamp, parse_json
from memspec.protocol import decode_message, encode_message, serve

MODES = ("good", "crash", "hang", "garbage", "out-of-order", "bad-result", "no-handshake",
         "chatty", "crash-on-request")


class FormatEngine(EngineBase):
    """Claims only ``format``; implements a handful of its operations."""

    name = "kit-format-only"
    version = "0.0.1"
    claimed_profiles = ("format",)

    def op_reset(self, args: dict[str, Any]) -> dict[str, Any]:
        return {}

    def op_canonicalize(self, args: dict[str, Any]) -> dict[str, Any]:
        if args.get("text") == "crash":
            raise SystemExit(7)
        return {"hex": canonical_json(parse_json(args["text"])).hex()}

    def op_canonical_timestamp(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": canonical_timestamp(args["value"])}

    def op_record_id(self, args: dict[str, Any]) -> dict[str, Any]:
        rec = args["record"]
        return {"id": memspec.record_id(rec), "birth_digest": memspec.birth_digest(rec)}

    def op_validate_record(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"record": memspec.validate_record(args["record"])}

    def op_create_record(self, args: dict[str, Any]) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "type": args["type"], "body": args["body"], "slots": args.get("slots", {}),
            "state": "active", "confidence": args.get("confidence", "1.0000"),
            "created_at": args["now"], "updated_at": args["now"],
            "provenance": args["provenance"], "evidence": args.get("evidence", []),
            "supersedes": args.get("supersedes"), "superseded_by": None, "transition": None,
            "state_reason": None, "tags": args.get("tags", []), "flagged": False,
            "flag_reason": None, "signed_by": None, "signature": "",
        }
        rec["id"] = memspec.record_id(rec)
        return {"record": memspec.validate_record(rec)}


class ChattyEngine(FormatEngine):
    """Prints to stdout while working: serve() must keep that off the protocol stream."""

    def op_canonicalize(self, args: dict[str, Any]) -> dict[str, Any]:
        print("debug: canonicalizing", args)
        return super().op_canonicalize(args)


class BadResultEngine(FormatEngine):
    """Answers canonicalize with a result that breaks protocol.json."""

    name = "kit-bad-results"

    def op_canonicalize(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"hex": "not hex at all"}


def format_only() -> FormatEngine:
    return FormatEngine()


def bad_results() -> BadResultEngine:
    return BadResultEngine()


def not_an_engine() -> object:
    return object()


def _write(message: dict[str, Any]) -> None:
    sys.stdout.buffer.write(encode_message(message))
    sys.stdout.buffer.flush()


def _misbehave(mode: str) -> int:
    engine = FormatEngine()
    for raw in sys.stdin.buffer:
        request = decode_message(raw)
        rid, op = request["id"], request["op"]
        if op == "hello":
            if mode == "no-handshake":
                _write({"id": rid, "ok": False,
                        "error": {"code": "unsupported", "message": "what is hello?"}})
                continue
            _write({"id": rid, "ok": True, "result": engine.describe()})
            continue
        if op == "bye":
            _write({"id": rid, "ok": True, "result": {}})
            return 0
        if op == "reset":
            _write({"id": rid, "ok": True, "result": {}})
            continue
        if mode == "crash":
            sys.stderr.write("engine: fatal: simulated crash\n")
            sys.stderr.flush()
            return 3
        if mode == "hang":
            time.sleep(3600)
        if mode == "garbage":
            sys.stdout.buffer.write(b"this is not json\n")
            sys.stdout.buffer.flush()
            continue
        if mode == "out-of-order":
            _write({"id": rid + 1000, "ok": True, "result": {}})
            continue
        if mode == "bad-result":
            _write({"id": rid, "ok": True, "result": {"hex": 42}})
            continue
    return 0


def main(argv: list[str]) -> int:
    mode = argv[1] if len(argv) > 1 else "good"
    if mode not in MODES:
        sys.stderr.write(f"unknown mode {mode!r}; one of {', '.join(MODES)}\n")
        return 2
    if mode in ("good", "crash-on-request"):
        return serve(FormatEngine())
    if mode == "chatty":
        return serve(ChattyEngine())
    return _misbehave(mode)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
