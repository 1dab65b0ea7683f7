"""Snapshot rollback protection: a signed ``sequence`` header and the holder's witness.

An attacker who can replace a memory file (or the store it is loaded into) can
replay an older file that the agent really signed: every signature verifies, so
signatures alone cannot tell a stale snapshot from the current one. The defence
has two halves:

* the exporter stamps each file it signs with ``sequence``, an integer header
  member that grows with every file the agent signs (an extension member to
  readers that predate it: preserved and signed, FILE-7), and
* the holder keeps a **witness**: for each agent address, the highest sequence of
  a verified file it has accepted and the digest of that file. A file whose
  sequence is below the witness's, or equal to it with different content, is a
  rollback (or a fork) and is refused with class ``signature``.

The witness is only as good as where it lives: keep it out of reach of whoever
can replace the files it protects (see docs/_drafts/snapshot-rollback.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from memspec._canonical import MAX_SAFE_INTEGER, canonical_json, parse_json
from memspec._encoding import public_key_from_address
from memspec._errors import EncodingError, FileError, LimitError, SignatureError, StoreError
from memspec._file import file_canonical_bytes, sign_file, verify_file
from memspec._safe_paths import read_regular, write_atomic
from memspec._signing import SigningKey

__all__ = [
    "SEQUENCE_FIELD",
    "WITNESS_FORMAT",
    "Witness",
    "WitnessEntry",
    "check_sequence",
    "file_digest",
    "file_sequence",
    "sign_with_sequence",
    "verify_fresh",
    "with_sequence",
]

#: The header member carrying a file's sequence number.
SEQUENCE_FIELD = "sequence"
#: The ``format`` member of a witness file.
WITNESS_FORMAT = "memspec-witness/1"
#: A witness holds one small entry per agent: anything larger is not a witness.
_WITNESS_LIMIT = 16 * 1024 * 1024

try:  # POSIX: serialize read-modify-write of one witness file across processes
    import fcntl as _fcntl
except ImportError:  # pragma: no cover - Windows: last writer wins, still never lowered here
    _fcntl = None  # type: ignore[assignment]


def file_sequence(memory_file: Mapping[str, Any]) -> int | None:
    """The file's ``sequence`` header, or None when absent; FileError when malformed (ROLL-1)."""
    if SEQUENCE_FIELD not in memory_file:
        return None
    value = memory_file[SEQUENCE_FIELD]
    if type(value) is not int or not 0 <= value <= MAX_SAFE_INTEGER:
        raise FileError(f"sequence {value!r} is not an integer from 0 to 2**53 - 1",
                        pointer=f"/{SEQUENCE_FIELD}", requirement="ROLL-1")
    return value


def with_sequence(memory_file: Mapping[str, Any], sequence: int) -> dict[str, Any]:
    """A copy of an *unsigned* file stamped with ``sequence`` (sign it afterwards)."""
    if memory_file.get("signature"):
        raise FileError("stamp the sequence before signing: a signed file's header cannot "
                        "change", pointer="/signature", requirement="ROLL-2")
    stamped = {**memory_file, SEQUENCE_FIELD: sequence}
    file_sequence(stamped)
    return stamped


def file_digest(memory_file: Mapping[str, Any]) -> str:
    """sha256 hex of the file's canonical bytes (the payload its signature covers)."""
    return hashlib.sha256(file_canonical_bytes(dict(memory_file))).hexdigest()


@dataclass(frozen=True)
class WitnessEntry:
    """What a holder remembers of one agent: its highest accepted sequence and that file."""

    sequence: int
    digest: str
    created_at: str

    def to_json(self) -> dict[str, Any]:
        return {"sequence": self.sequence, "digest": self.digest, "created_at": self.created_at}


def _entry(agent: object, value: object) -> WitnessEntry:
    if not isinstance(value, dict) or set(value) != {"sequence", "digest", "created_at"}:
        raise FileError(f"witness entry for {agent!r} is not {{sequence, digest, created_at}}")
    sequence, digest, created_at = value["sequence"], value["digest"], value["created_at"]
    if type(sequence) is not int or not 0 <= sequence <= MAX_SAFE_INTEGER:
        raise FileError(f"witness sequence for {agent!r} is not a non-negative integer")
    if not isinstance(digest, str) or len(digest) != 64 or digest.strip("0123456789abcdef"):
        raise FileError(f"witness digest for {agent!r} is not 64 lowercase hex digits")
    if not isinstance(created_at, str):
        raise FileError(f"witness created_at for {agent!r} is not a string")
    try:
        public_key_from_address(agent)
    except EncodingError as exc:
        raise FileError(f"witness names a malformed agent: {exc.message}") from exc
    return WitnessEntry(sequence, digest, created_at)


@dataclass(frozen=True)
class Witness:
    """The highest verified sequence seen per agent address (immutable: advance returns anew)."""

    entries: Mapping[str, WitnessEntry] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "entries", MappingProxyType(dict(self.entries)))

    def sequence_for(self, agent: str) -> int | None:
        """The highest accepted sequence of ``agent``, or None when never seen."""
        entry = self.entries.get(agent)
        return None if entry is None else entry.sequence

    def next_sequence(self, agent: str) -> int:
        """The sequence an exporter signing for ``agent`` should stamp next.

        Stamped sequences start at 1, so every stamped file is newer than any file
        exported before sequences existed (which count as 0).
        """
        current = self.sequence_for(agent)
        return 1 if current is None else current + 1

    def advance(self, memory_file: Mapping[str, Any]) -> Witness:
        """This witness after accepting ``memory_file`` (checked with :func:`check_sequence`).

        Only a signed file naming its agent moves the witness (ROLL-6); the
        sequence never goes down (ROLL-3).
        """
        check_sequence(memory_file, self)
        agent = memory_file.get("agent")
        if not memory_file.get("signature") or not isinstance(agent, str):
            return self
        sequence = file_sequence(memory_file) or 0
        current = self.entries.get(agent)
        if current is not None and current.sequence >= sequence:
            return self
        entry = WitnessEntry(sequence, file_digest(memory_file),
                             str(memory_file.get("created_at", "")))
        return Witness({**self.entries, agent: entry})

    def merge(self, other: Witness) -> Witness:
        """The per-agent maximum of two witnesses (never lowers either)."""
        merged = dict(self.entries)
        for agent, entry in other.entries.items():
            mine = merged.get(agent)
            if mine is None or entry.sequence > mine.sequence:
                merged[agent] = entry
        return Witness(merged)

    def to_json(self) -> dict[str, Any]:
        """The witness file's JSON value."""
        return {"format": WITNESS_FORMAT,
                "agents": {agent: self.entries[agent].to_json() for agent in sorted(self.entries)}}

    @classmethod
    def from_json(cls, value: object) -> Witness:
        """Parse a witness file's JSON value (FileError when malformed)."""
        if not isinstance(value, dict) or value.get("format") != WITNESS_FORMAT:
            raise FileError(f"not a witness file (format {WITNESS_FORMAT!r})")
        agents = value.get("agents")
        if not isinstance(agents, dict) or set(value) != {"format", "agents"}:
            raise FileError("a witness file is {format, agents}")
        return cls({agent: _entry(agent, entry) for agent, entry in agents.items()})

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Witness:
        """The witness stored at ``path``; an empty witness when the file does not exist."""
        target = Path(path)
        try:
            # A witness is a regular file, never a link planted in its place, and small.
            data = read_regular(target, limit=_WITNESS_LIMIT, follow=False)
        except FileNotFoundError:
            return cls()
        except (StoreError, LimitError) as exc:
            raise FileError(f"cannot read witness {target}: {exc.message}") from exc
        return cls.from_json(parse_json(data))

    def save(self, path: str | os.PathLike[str]) -> Witness:
        """Persist atomically, merged with what is already on disk; return what was written.

        Merging under an exclusive lock means two holders saving at once never
        lower each other's entries.
        """
        target = Path(path)
        with _locked(target):
            merged = Witness.load(target).merge(self)
            _atomic_write(target, canonical_json(merged.to_json()))
        return merged


@contextlib.contextmanager
def _locked(target: Path) -> Iterator[None]:
    if _fcntl is None:  # pragma: no cover
        yield
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    lock = target.with_name(target.name + ".lock")
    try:
        # O_NOFOLLOW: a link planted as the lock file must not create or open its target.
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise FileError(f"cannot lock witness {target}: {exc.strerror} ({lock})") from exc
    try:
        _fcntl.flock(fd, _fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _atomic_write(target: Path, data: bytes) -> None:
    try:
        write_atomic(target, data, mode=0o600, overwrite=True)
    except StoreError as exc:
        raise FileError(f"cannot write witness {target}: {exc.message}") from exc


def check_sequence(memory_file: Mapping[str, Any], witness: Witness) -> None:
    """Refuse a snapshot rollback or fork of a signed file; call after the file verified.

    An unsigned file, or one naming no agent, carries no authenticated sequence and
    is not checked (ROLL-6). A missing sequence counts as 0. A malformed sequence
    is a FileError (ROLL-1); a sequence below the witness's, or equal to it with
    different canonical bytes, is a SignatureError (ROLL-4, ROLL-5).
    """
    sequence = file_sequence(memory_file)
    agent = memory_file.get("agent")
    if not memory_file.get("signature") or not isinstance(agent, str):
        return
    entry = witness.entries.get(agent)
    if entry is None:
        return
    seen = sequence if sequence is not None else 0
    if seen < entry.sequence:
        raise SignatureError(
            f"memory file of {agent} has sequence {seen} but a file with sequence "
            f"{entry.sequence} was already accepted: an older snapshot replayed (rollback)",
            pointer=f"/{SEQUENCE_FIELD}", requirement="ROLL-4")
    if seen == entry.sequence and file_digest(memory_file) != entry.digest:
        raise SignatureError(
            f"memory file of {agent} reuses sequence {seen} with different content than the "
            "accepted file: two snapshots signed with one sequence (fork)",
            pointer=f"/{SEQUENCE_FIELD}", requirement="ROLL-5")


def verify_fresh(memory_file: dict[str, Any], witness: Witness, *,
                 require_signature: bool = True) -> Witness:
    """:func:`memspec.verify_file`, then :func:`check_sequence`; the witness advanced.

    Nothing is persisted: save the returned witness once the file's records are
    safely stored.
    """
    verify_file(memory_file, require_signature=require_signature)
    return witness.advance(memory_file)


def sign_with_sequence(memory_file: Mapping[str, Any], key: SigningKey, witness: Witness, *,
                       sequence: int | None = None) -> tuple[dict[str, Any], Witness]:
    """Stamp an unsigned file with the next sequence for ``key`` (or ``sequence``), sign it,
    and return it with the witness advanced past it (ROLL-2).

    An explicit ``sequence`` at or below one already signed for this agent is refused
    (SignatureError): an exporter never goes backwards.
    """
    chosen = witness.next_sequence(key.address) if sequence is None else sequence
    signed = sign_file(with_sequence(memory_file, chosen), key)
    current = witness.sequence_for(key.address)
    if current is not None and chosen <= current:
        raise SignatureError(f"sequence {chosen} is not above {current}, the highest already "
                             f"signed for {key.address}", pointer=f"/{SEQUENCE_FIELD}",
                             requirement="ROLL-2")
    return signed, witness.advance(signed)
