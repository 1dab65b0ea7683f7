"""Argument types shared by the subcommands: a bad value is a usage error (exit 2)."""

from __future__ import annotations

import argparse

from memspec._encoding import canonical_timestamp, public_key_from_address
from memspec._errors import MemspecError

__all__ = ["address", "timestamp"]


def address(text: str) -> str:
    """An agent address (amp:key:...), else a usage error naming why."""
    try:
        public_key_from_address(text)
    except MemspecError as exc:
        raise argparse.ArgumentTypeError(f"not an agent address: {exc.message}") from exc
    return text


def timestamp(text: str) -> str:
    """An RFC 3339 timestamp with an offset, in its canonical spelling; else a usage error."""
    try:
        return canonical_timestamp(text)
    except MemspecError as exc:
        raise argparse.ArgumentTypeError(f"not a timestamp: {exc.message}") from exc
