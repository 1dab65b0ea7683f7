"""Reading the command line's inputs and writing its outputs."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memspec._canonical import DEFAULT_LIMITS, parse_json
from memspec._errors import LimitError, MemspecError, StoreError
from memspec._safe_paths import PathError, read_regular, write_atomic

__all__ = ["Input", "UsageError", "emit", "read_input", "read_text", "write_output"]


class UsageError(Exception):
    """A mistake in how the command was called (exit code 2)."""


@dataclass(frozen=True)
class Input:
    """A parsed input: its kind and the records it holds."""

    path: str
    kind: str  # "record" | "records" | "jsonl" | "file" | "value"
    value: Any
    records: tuple[Any, ...]


def read_text(path: str) -> bytes:
    """The bytes of ``path`` ("-" for stdin), refusing what is over the size limit."""
    if path == "-":
        data = sys.stdin.buffer.read(DEFAULT_LIMITS.max_text_bytes + 1)
    else:
        # One open, then fstat: a check by name and a later read could meet a FIFO or a
        # device swapped in between, and block or read without end.
        try:
            data = read_regular(path, limit=DEFAULT_LIMITS.max_text_bytes)
        except FileNotFoundError:
            raise UsageError(f"{path}: no such file") from None
        except LimitError:
            raise LimitError(
                f"{path}: file is over the {DEFAULT_LIMITS.max_text_bytes}-byte limit") from None
        except StoreError as exc:  # not a regular file, unreadable
            raise UsageError(exc.message) from None
    if len(data) > DEFAULT_LIMITS.max_text_bytes:
        raise LimitError(f"{path}: input is over the {DEFAULT_LIMITS.max_text_bytes}-byte limit")
    return data


def read_input(path: str, *, jsonl: bool = False) -> Input:
    """Parse a record, an array of records or a MemoryFile: one JSON text, whose own
    error is the error. With ``jsonl``, or for a path named ``*.jsonl``, the input is
    JSONL instead: one JSON text per non-blank line, a failure naming its line. The
    content never decides (a pretty-printed file is never mistaken for JSONL)."""
    data = read_text(path)
    if jsonl or path.endswith(".jsonl"):
        return _read_jsonl(path, data)
    value = parse_json(data)
    if isinstance(value, list):
        return Input(path, "records", value, tuple(value))
    if isinstance(value, dict) and "format" in value and "records" in value:
        records = value["records"] if isinstance(value["records"], list) else []
        return Input(path, "file", value, tuple(records))
    if isinstance(value, dict) and "id" in value:
        return Input(path, "record", value, (value,))
    return Input(path, "value", value, ())


def _read_jsonl(path: str, data: bytes) -> Input:
    records = []
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            records.append(parse_json(line))
        except MemspecError as exc:
            raise type(exc)(f"line {number}: {exc.message}",
                            requirement=exc.requirement) from exc
    return Input(path, "jsonl", records, tuple(records))


def write_output(path: str | None, data: bytes, *, private: bool = False,
                 overwrite: bool = True) -> None:
    """Write bytes to ``path`` (stdout when None or "-") atomically; owner-only when private.

    The bytes go to a temp file created beside ``path`` under an unpredictable name
    with ``O_EXCL|O_NOFOLLOW`` (mode 0600 when ``private``), fsynced and renamed into
    place: a symlink planted at the temp name or at ``path`` is never followed.
    Without ``overwrite`` an existing ``path`` is refused (a UsageError).
    """
    if path in (None, "-"):
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    assert path is not None
    target = Path(path)
    if not target.name or target.is_dir():
        raise UsageError(f"{path!r} is not a file name to write to")
    try:
        write_atomic(target, data, mode=0o600 if private else 0o644, overwrite=overwrite)
    except PathError as exc:
        raise UsageError(f"{path}: {exc.message}") from None


def emit(as_json: bool, payload: dict[str, Any], text: str) -> None:
    """Print ``payload`` as JSON for machines, or ``text`` for people."""
    if as_json:
        print(json.dumps(payload, indent=2, ensure_ascii=False, sort_keys=True))
    elif text:
        print(text)
