"""Subcommands for identities: keygen and sign."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from memspec._canonical import canonical_json
from memspec._errors import FileError
from memspec._file import sign_file, validate_file
from memspec._keyfile import KEY_KIND, load_key
from memspec._record import is_tombstone, sign_record
from memspec._signing import SigningKey
from memspec.cli import _args
from memspec.cli._io import UsageError, emit, read_input, write_output

__all__ = ["register"]


def cmd_keygen(args: argparse.Namespace) -> int:
    target = Path(args.output)
    if target.exists() and not args.force:
        raise UsageError(f"{args.output} exists; refusing to overwrite a key (use --force)")
    key = SigningKey(os.urandom(32))
    body = {"kind": KEY_KIND, "seed_hex": key.seed.hex(), "address": key.address}
    # Mode 0600 from creation on (never chmod after: the name could be swapped for a link).
    write_output(args.output, (json.dumps(body, indent=2) + "\n").encode(), private=True,
                 overwrite=args.force)
    emit(args.json, {"address": key.address, "key_file": args.output},
         f"{key.address}\n(private key written to {args.output}, mode 600)")
    return 0


def cmd_sign(args: argparse.Namespace) -> int:
    key = load_key(args.key)
    loaded = read_input(args.path)
    if loaded.kind != "file":
        raise FileError(f"{args.path}: not a memory file", requirement="FILE-1")
    memory_file: dict[str, Any] = dict(loaded.value)
    validate_file(memory_file)
    if args.records:
        memory_file["records"] = [r if is_tombstone(r) else sign_record(r, key)
                                  for r in memory_file["records"]]
    if args.now:
        memory_file["created_at"] = args.now
    signed = sign_file(memory_file, key)
    write_output(args.output, canonical_json(signed) + (b"" if args.output else b"\n"))
    if args.output:
        emit(args.json, {"signed_by": key.address, "output": args.output,
                         "records_signed": len(memory_file["records"]) if args.records else 0},
             f"signed {args.output} as {key.address}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser],
             common: argparse.ArgumentParser) -> None:
    """Add this module's subcommands to the parser."""
    p = sub.add_parser("keygen", parents=[common], help="Make an Ed25519 key pair.",
                       description="Make an Ed25519 key pair; print its amp:key: address and write "
                       "the private key file with owner-only permissions.",
                       epilog="examples:\n  memspec keygen -o agent.key",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", required=True, help="where to write the private key file")
    p.add_argument("--force", action="store_true", help="overwrite an existing key file")
    p.set_defaults(func=cmd_keygen)
    p = sub.add_parser("sign", parents=[common], help="Sign a memory file.",
                       description="Sign a memory file with a key from `memspec keygen` "
                       "(the file's agent becomes the key's address); optionally sign every "
                       "record too.",
                       epilog="examples:\n"
                       "  memspec sign memory.json --key agent.key -o signed.json\n"
                       "  memspec sign memory.json --key agent.key --records -o signed.json",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", metavar="PATH")
    p.add_argument("--key", required=True, help="key file from memspec keygen")
    p.add_argument("--records", action="store_true", help="also sign every record")
    p.add_argument("--now", type=_args.timestamp, help="set the file's created_at (RFC 3339)")
    p.add_argument("-o", "--output", help="write the signed file here (default stdout)")
    p.set_defaults(func=cmd_sign)
