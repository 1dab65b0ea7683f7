"""Shared fixtures for the reference engine tests: a `store` over all three adapters."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memspec.reference.ports import RecordStore
from memspec.reference.records import MemoryRecord
from memspec.reference.stores import FileRecordStore, InMemoryRecordStore, SQLiteRecordStore

STORE_KINDS = ("memory", "file", "sqlite")
T0 = "2026-01-01T00:00:00.000Z"


def at(day: int, second: int = 0) -> str:
    """A canonical timestamp ``day`` days (1-based, January 2026) and ``second`` seconds in."""
    minute, sec = divmod(second, 60)
    return f"2026-01-{day:02d}T00:{minute:02d}:{sec:02d}.000Z"


#: The reference's stores: the port plus what each adds beyond it (redact).
ConcreteStore = InMemoryRecordStore | FileRecordStore | SQLiteRecordStore


def open_store(kind: str, path: Path) -> ConcreteStore:
    """A store of ``kind`` rooted at ``path`` (ignored for the in-memory store)."""
    if kind == "memory":
        return InMemoryRecordStore()
    if kind == "file":
        return FileRecordStore(path / "records")
    return SQLiteRecordStore(path / "records.sqlite")


def new_record(body: str = "The sky is blue.", *, type: str = "fact", created_at: str = T0,
               **kwargs: Any) -> MemoryRecord:
    """A fresh active record (provenance: conversation)."""
    return MemoryRecord.create(type, body, {"kind": "conversation", "ref": "test"},
                               created_at=created_at, **kwargs)


def snapshot(store: RecordStore) -> dict[str, tuple[bytes, ...]]:
    """Every version of every record as canonical bytes: compare before/after to prove
    that nothing was written."""
    return {rid: tuple(r.canonical_bytes() for r in store.history(rid)) for rid in store.ids()}


def published_vectors() -> dict[str, Any]:
    """The published fg-agent-memory vectors (memspec's package data copy, as plain JSON)."""
    from memspec.data import json_resource

    name = "published/fg-agent-memory-0.1.json"
    loaded: dict[str, Any] = dict(copy.deepcopy(json_resource("vectors", name)))
    return loaded


@pytest.fixture(params=STORE_KINDS)
def store_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@pytest.fixture
def store(store_kind: str, tmp_path: Path) -> Iterator[ConcreteStore]:
    """A fresh, empty store of each kind (memory, file, sqlite)."""
    opened = open_store(store_kind, tmp_path)
    yield opened
    opened.close()


@pytest.fixture
def reopen(store_kind: str, tmp_path: Path) -> Callable[[], RecordStore]:
    """Open another handle on the `store` fixture's storage (skips for the in-memory store)."""
    if store_kind == "memory":
        pytest.skip("the in-memory store has nothing to reopen")
    return lambda: open_store(store_kind, tmp_path)


@pytest.fixture
def make_record() -> Callable[..., MemoryRecord]:
    """Build fresh active records: ``make_record(body, type=..., created_at=..., **kwargs)``."""
    return new_record
