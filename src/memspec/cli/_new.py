"""``memspec new``: a newborn record from the command line (SPEC section 4.4), optionally signed.

With it the command line covers the whole path without hand-written JSON:
``new`` -> ``merge`` (a memory file) -> ``sign`` -> ``verify`` -> ``diff``.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any

from memspec._canonical import canonical_json, parse_json
from memspec._encoding import confidence_from_wire, confidence_to_wire, timestamp_from_datetime
from memspec._errors import MemspecError
from memspec._keyfile import load_key
from memspec._record import (
    OPTIONAL_FIELDS,
    RECORD_FIELDS,
    RECORD_TYPES,
    record_id,
    sign_record,
    validate_record,
)
from memspec.cli import _args
from memspec.cli._io import UsageError, emit, write_output

__all__ = ["build_record", "cmd_new", "register"]

_EXAMPLES = """examples:
  memspec new fact "Alice is allergic to peanuts" --tag health --now 2026-03-01T09:00:00Z
  memspec new episode "Met Bob at the station" --occurred-at 2026-02-28T18:30:00Z \\
      --source-kind conversation --source-ref chat:42 -o episode.json
  memspec new rule "Ask before booking travel" --evidence mem:0123... --sign-key agent.key
  echo "a long body" | memspec new fact - --slot person=Alice --confidence 0.8
"""


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        value = parse_json(text.encode("utf-8"))
    except MemspecError as exc:
        raise UsageError(f"{what} is not canonical-JSON-compatible JSON: {exc.message}") from exc
    if not isinstance(value, dict):
        raise UsageError(f"{what} must be a JSON object, not {type(value).__name__}")
    return value


def _slot(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    return name, value


def _confidence(text: str) -> str:
    """A confidence as a number (CONF-2) or a wire string (CONF-1), in its wire spelling."""
    try:
        if text.count(".") == 1 and len(text.partition(".")[2]) == 4:
            confidence_from_wire(text)
            return text
        return confidence_to_wire(float(text))
    except (MemspecError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"not a confidence in [0, 1]: {text!r}") from exc


def _body(text: str) -> str:
    if text != "-":
        return text
    return sys.stdin.read().removesuffix("\n")


def build_record(args: argparse.Namespace, now: str) -> dict[str, Any]:
    """The newborn record the options describe, validated (REC-14: active, unsigned)."""
    slots = _json_object(args.slots, "--slots") if args.slots else {}
    for name, value in args.slot or ():
        if name in slots:
            raise UsageError(f"slot {name!r} is given twice")
        slots[name] = value
    extra = _json_object(args.extra, "--extra") if args.extra else {}
    clashes = sorted(set(extra) & (set(RECORD_FIELDS) | set(OPTIONAL_FIELDS)))
    if clashes:
        raise UsageError(f"--extra names defined fields {clashes} [REC-12]")
    record: dict[str, Any] = {
        "id": "", "type": args.type, "body": _body(args.body), "slots": slots,
        "state": "active", "confidence": args.confidence, "created_at": now, "updated_at": now,
        "provenance": {"kind": args.source_kind, "ref": args.source_ref,
                       "agent": args.source_agent},
        "evidence": list(args.evidence or ()), "supersedes": args.supersedes,
        "superseded_by": None, "transition": None, "state_reason": None,
        "tags": list(args.tag or ()), "flagged": False, "flag_reason": None,
        "signed_by": None, "signature": "",
    }
    if args.occurred_at is not None:
        record["occurred_at"] = args.occurred_at
    record.update(extra)
    record["id"] = record_id(record)
    try:
        validate_record(record)
    except MemspecError as exc:
        raise UsageError(f"the options do not make a valid record: {exc}") from exc
    return record


def cmd_new(args: argparse.Namespace) -> int:
    """Print (or write) the new record as canonical JSON."""
    key = load_key(args.sign_key) if args.sign_key else None
    now = args.now or timestamp_from_datetime(datetime.now(UTC))
    record = build_record(args, now)
    if key is not None:
        record = sign_record(record, key)
    data = canonical_json(record)
    if args.json:
        if args.output:
            write_output(args.output, data)
        emit(True, {"ok": True, "id": record["id"], "record": record,
                    "output": args.output}, "")
    elif args.output:
        write_output(args.output, data)
        print(f"{record['id']} written to {args.output}"
              + (f" (signed by {key.address})" if key else ""))
    else:
        write_output(None, data + b"\n")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser],
             common: argparse.ArgumentParser) -> None:
    """Add ``memspec new`` to the parser."""
    help_text = ("Create a newborn record (active, confidence 1 unless given) from the "
                 "command line and print it as canonical JSON; optionally sign it.")
    p = sub.add_parser("new", parents=[common], help=help_text, description=help_text,
                       epilog=_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(func=cmd_new)
    p.add_argument("type", choices=RECORD_TYPES, help="the record type")
    p.add_argument("body", help="the memory itself (- reads it from stdin)")
    p.add_argument("--slot", action="append", type=_slot, metavar="NAME=VALUE",
                   help="a string slot (repeatable)")
    p.add_argument("--slots", metavar="JSON", help="the slots as one JSON object")
    p.add_argument("--tag", action="append", metavar="TAG", help="a tag (repeatable)")
    p.add_argument("--source-kind", default="user", metavar="KIND",
                   help="provenance kind (default user)")
    p.add_argument("--source-ref", metavar="REF", help="provenance ref (default null)")
    p.add_argument("--source-agent", type=_args.address, metavar="ADDRESS",
                   help="provenance agent address (default null)")
    p.add_argument("--now", type=_args.timestamp, metavar="TIME",
                   help="created_at and updated_at (RFC 3339; default the current time)")
    p.add_argument("--occurred-at", type=_args.timestamp, metavar="TIME",
                   help="when the remembered event happened (episodes should carry it)")
    p.add_argument("--confidence", type=_confidence, default="1.0000", metavar="C",
                   help="a number in [0, 1] or a wire string like 0.7500 (default 1)")
    p.add_argument("--evidence", action="append", metavar="ID",
                   help="a record id that justifies this one (repeatable; rules need one)")
    p.add_argument("--supersedes", metavar="ID", help="the id of the record this one replaces")
    p.add_argument("--extra", metavar="JSON", help="extension fields as one JSON object")
    p.add_argument("--sign-key", metavar="KEYFILE", help="sign the record with this key file "
                   "(from memspec keygen)")
    p.add_argument("-o", "--output", help="write the record here (default stdout)")
