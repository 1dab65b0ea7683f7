"""Decay: mechanical, salience-driven archival with reported protections (spec section 10),
and the engine-local salience sidecar that retrieval and the write stage reinforce."""

from __future__ import annotations

import math
import os
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memspec import (
    LimitError,
    MemspecError,
    canonical_json,
    check_timestamp,
    confidence_from_wire,
    parse_json,
)
from memspec.reference import lifecycle
from memspec.reference._ids import check_record_id, is_record_id
from memspec.reference.extensions import expiry_reason, is_expired
from memspec.reference.ports import RecordStore, SearchIndex
from memspec.reference.records import MemoryRecord, RecordState, RecordType

__all__ = [
    "PROTECTIONS",
    "DecayConfig",
    "DecayReport",
    "Protection",
    "SalienceScores",
    "age_days",
    "decay",
    "salience",
]

#: Protection names, in the order they are checked (DEC-5).
PROTECTIONS = ("transitional", "unflagged-rule", "rule-evidence")
_SIDECAR_VERSION = 1
_SALIENCE_DIGITS = 6


def _moment(timestamp: str) -> datetime:
    check_timestamp(timestamp)
    return datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def age_days(since: str, now: str) -> float:
    """Days from ``since`` to ``now`` (canonical timestamps), never negative."""
    seconds = (_moment(now) - _moment(since)).total_seconds()
    return max(0.0, seconds / 86400.0)


def _number(name: str, value: object, *, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise LimitError(f"decay config {name} must be a finite number, not {value!r}")
    if value < 0 or (positive and value == 0):
        bound = "positive" if positive else "non-negative"
        raise LimitError(f"decay config {name} must be {bound}, not {value!r}")
    return float(value)


@dataclass(frozen=True)
class DecayConfig:
    """Every constant of the reference salience scoring (DEC-6 defaults)."""

    half_life_days: float = 30.0
    reinforcement_bonus: float = 0.25
    archive_threshold: float = 0.05

    def __post_init__(self) -> None:
        object.__setattr__(self, "half_life_days",
                           _number("half_life_days", self.half_life_days, positive=True))
        object.__setattr__(self, "reinforcement_bonus", _number(
            "reinforcement_bonus", self.reinforcement_bonus, positive=False))
        object.__setattr__(self, "archive_threshold",
                           _number("archive_threshold", self.archive_threshold, positive=False))

    @classmethod
    def model_validate(cls, data: object) -> DecayConfig:
        """Build from the wire config ``{half_life_days?, reinforcement_bonus?,
        archive_threshold?}`` (numbers); missing keys take the defaults."""
        if data is None:
            return cls()
        if isinstance(data, DecayConfig):
            return data
        if not isinstance(data, Mapping):
            raise LimitError("decay config must be an object")
        unknown = sorted(set(data) - {"half_life_days", "reinforcement_bonus",
                                      "archive_threshold"})
        if unknown:
            raise LimitError(f"decay config has unknown keys {unknown}")
        return cls(**dict(data))

    def model_dump(self) -> dict[str, float]:
        """The config as plain numbers."""
        return {"half_life_days": self.half_life_days,
                "reinforcement_bonus": self.reinforcement_bonus,
                "archive_threshold": self.archive_threshold}


@dataclass
class _Entry:
    touches: int
    last_touched: str


class SalienceScores:
    """Engine-local reinforcement sidecar: per record id, a touch count and the last touch.

    It never enters a record (RCL-4, DEC-7). Thread-safe. ``save`` is atomic
    (temp file, fsync, ``os.replace``); ``load`` is tolerant: a missing or
    corrupt file, or a malformed entry, gives an empty (or partial) sidecar,
    which only degrades decay to age-since-update.
    """

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()

    def touch(self, record_id: str, now: str) -> int:
        """Reinforce ``record_id`` at ``now``; return its new touch count.

        The last-touch time never moves backwards, so reinforcement never
        lowers salience.
        """
        check_record_id(record_id)
        check_timestamp(now, field="now")
        with self._lock:
            entry = self._entries.get(record_id)
            if entry is None:
                entry = self._entries[record_id] = _Entry(0, now)
            entry.touches += 1
            entry.last_touched = max(entry.last_touched, now)
            return entry.touches

    def touches(self, record_id: str) -> int:
        """How often ``record_id`` was reinforced (0 when never)."""
        with self._lock:
            entry = self._entries.get(record_id)
            return 0 if entry is None else entry.touches

    def last_touched(self, record_id: str) -> str | None:
        """When ``record_id`` was last reinforced, or None."""
        with self._lock:
            entry = self._entries.get(record_id)
            return None if entry is None else entry.last_touched

    def ids(self) -> tuple[str, ...]:
        """Every reinforced record id, ascending."""
        with self._lock:
            return tuple(sorted(self._entries))

    def clear(self) -> None:
        """Forget every touch."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def to_dict(self) -> dict[str, Any]:
        """``{"version": 1, "records": {id: {"touches": n, "last_touched": ts}}}``."""
        with self._lock:
            records = {rid: {"touches": e.touches, "last_touched": e.last_touched}
                       for rid, e in sorted(self._entries.items())}
        return {"version": _SIDECAR_VERSION, "records": records}

    @classmethod
    def from_dict(cls, data: object) -> SalienceScores:
        """Rebuild from :meth:`to_dict` output, skipping anything malformed."""
        scores = cls()
        records = data.get("records") if isinstance(data, Mapping) else None
        if not isinstance(records, Mapping):
            return scores
        for rid, entry in records.items():
            if not is_record_id(rid) or not isinstance(entry, Mapping):
                continue
            count, last = entry.get("touches"), entry.get("last_touched")
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                continue
            try:
                check_timestamp(last)
            except MemspecError:
                continue
            assert isinstance(last, str)
            scores._entries[rid] = _Entry(count, last)
        return scores

    def save(self, path: str | Path) -> None:
        """Write the sidecar atomically as canonical JSON (temp file, fsync, os.replace)."""
        target = Path(path)
        data = canonical_json(self.to_dict())
        fd, temp = tempfile.mkstemp(prefix=".salience-", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, target)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        _fsync_dir(target.parent)

    @classmethod
    def load(cls, path: str | Path) -> SalienceScores:
        """Read a sidecar; a missing, unreadable or corrupt file gives an empty one."""
        try:
            raw = Path(path).read_bytes()
            return cls.from_dict(parse_json(raw))
        except (OSError, MemspecError, ValueError, RecursionError):
            return cls()


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory handles
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some filesystems refuse directory fsync
        pass
    finally:
        os.close(fd)


def salience(record: MemoryRecord, *, touches: int, last_touched: str | None, now: str,
             config: DecayConfig | None = None) -> float:
    """The reference salience (DEC-6), rounded to six decimals.

    ``confidence * 0.5 ** (idle_days / half_life_days) + reinforcement_bonus *
    touches``, where idle time runs from the later of ``updated_at`` and the
    last touch. Rounding happens once, here, so the reported value is the one
    compared with the archive threshold.
    """
    cfg = config or DecayConfig()
    since = record.updated_at if last_touched is None else max(record.updated_at, last_touched)
    idle = age_days(since, now)
    value = confidence_from_wire(record.confidence) * math.pow(0.5, idle / cfg.half_life_days)
    return round(value + cfg.reinforcement_bonus * max(0, touches), _SALIENCE_DIGITS)


@dataclass(frozen=True)
class Protection:
    """A below-threshold record decay left alone, and why (DEC-5)."""

    id: str
    protection: str

    def model_dump(self) -> dict[str, str]:
        """``{"id": ..., "protection": ...}``."""
        return {"id": self.id, "protection": self.protection}


@dataclass(frozen=True)
class DecayReport:
    """What one decay pass did: ids archived, protections applied, every salience computed."""

    archived: tuple[str, ...] = ()
    protected: tuple[Protection, ...] = ()
    saliences: Mapping[str, float] = field(default_factory=dict)
    written: tuple[MemoryRecord, ...] = ()

    def model_dump(self) -> dict[str, Any]:
        """The wire report ``{archived, protected, saliences}``."""
        return {
            "archived": list(self.archived),
            "protected": [p.model_dump() for p in self.protected],
            "saliences": dict(self.saliences),
        }


def _rule_evidence(records: Iterable[MemoryRecord]) -> frozenset[str]:
    return frozenset(
        eid for r in records
        if r.type is RecordType.RULE and r.state is RecordState.ACTIVE
        for eid in r.evidence
    )


def _protection(record: MemoryRecord, evidence: frozenset[str]) -> str | None:
    if record.state is RecordState.TRANSITIONAL:
        return "transitional"
    if record.type is RecordType.RULE and not record.flagged:
        return "unflagged-rule"
    if record.id in evidence:
        return "rule-evidence"
    return None


def decay(store: RecordStore, *, now: str, scores: SalienceScores | None = None,
          config: DecayConfig | None = None,
          indexes: Iterable[SearchIndex] = (), expiry: bool = False) -> DecayReport:
    """One decay pass over every record that is not yet archived (spec section 10).

    A record whose salience is below ``archive_threshold`` is archived through
    :func:`memspec.reference.lifecycle.archive` with a reason naming its
    salience (DEC-1), unless it is transitional (DEC-2), an unflagged rule
    (DEC-3) or evidence of an active rule (DEC-4), in which case it is reported
    with that protection (DEC-5). Protections are judged on the store as it was
    before the pass. Nothing is deleted; every archived version is re-indexed
    in ``indexes``. Deterministic: records are visited in id order. With
    ``expiry`` (extension profile x-expiry, XEXP-4) a record expired at ``now``
    is archived whatever its salience, under the same protections.
    """
    check_timestamp(now, field="now")
    cfg = config or DecayConfig()
    sidecar = scores if scores is not None else SalienceScores()
    latest = list(store)
    evidence = _rule_evidence(latest)
    saliences: dict[str, float] = {}
    protected: list[Protection] = []
    planned: list[MemoryRecord] = []
    for record in latest:
        if record.state is RecordState.ARCHIVED:
            continue
        value = salience(record, touches=sidecar.touches(record.id),
                         last_touched=sidecar.last_touched(record.id), now=now, config=cfg)
        saliences[record.id] = value
        expired = expiry and is_expired(record, now)
        if value >= cfg.archive_threshold and not expired:
            continue
        shield = _protection(record, evidence)
        if shield is not None:
            protected.append(Protection(record.id, shield))
            continue
        reason = (expiry_reason(record) if expired else
                  f"decayed: salience {value:.6f} fell below the archive threshold "
                  f"{cfg.archive_threshold:g}")
        planned.append(lifecycle.archive(record, reason=reason, now=now))
    targets = tuple(indexes)
    for version in planned:
        store.put(version)
        for index in targets:
            index.index(version)
    return DecayReport(archived=tuple(r.id for r in planned), protected=tuple(protected),
                       saliences=saliences, written=tuple(planned))
