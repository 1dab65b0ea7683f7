"""Faults of requirements the rest of the catalogue left without one: the memory file's
``sequence`` (ROLL-1) and hexadecimal results (PROTO-9)."""

from __future__ import annotations

import re
from typing import Any

from memspec.selftest.faults import Fault, Json, after, before, per_op

__all__ = ["FAULTS"]

_DIGITS = re.compile(r"[0-9]+\Z")
_HEX_RESULTS = ("hex", "public_key_hex", "birth_digest")
#: The operations whose results carry one of them (schemas/protocol.json).
_HEX_OPS = ("canonicalize", "parse_address", "decode_signature", "record_id", "derive_key",
            "signing_input")


def _read_sequence(value: Any) -> Any:
    return int(value) if isinstance(value, str) and _DIGITS.match(value) else value


def _sequence_from_text(args: Json) -> Json:
    """A sequence spelled as a string of digits is read as the integer it spells."""
    file = args.get("file")
    if isinstance(file, dict) and "sequence" in file:
        file["sequence"] = _read_sequence(file["sequence"])
    return args


def _upper_hex(result: Json, args: Json) -> Json:
    for name in _HEX_RESULTS:
        if isinstance(result.get(name), str):
            result[name] = result[name].upper()
    return result


FAULTS = (
    Fault("sequence-read-from-text", "ROLL-1", "format",
          "a memory file's sequence spelled as a string of digits (\"3\") is read as the "
          "integer it spells", per_op({"validate_file": before("validate_file",
                                                                _sequence_from_text),
                                       "load": before("load", _sequence_from_text)})),
    Fault("hex-results-uppercase", "PROTO-9", "core",
          "hexadecimal results (hex, public_key_hex, birth_digest) are written in uppercase",
          after(_HEX_OPS, _upper_hex)),
)
