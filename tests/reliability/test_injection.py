"""Injection: hostile record ids, filters and queries are refused before they reach a file
path, an SQL statement or a full-text query, and touch nothing (STORE-10, SRCH-3).

Every store entry point (get, history, contains, list filters, redact), every
search index (candidates, index) and the engine operations that take an id are
fed path-traversal ids (``../``, absolute paths, NUL, trailing separators),
unicode look-alikes (full-width and other-script digits, look-alike colons,
zero-width and combining marks), SQL injection and FTS5 query syntax. A spy on
the filesystem and on every SQL statement proves the hostile text never got
there; a byte snapshot of the whole directory proves nothing changed.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memspec import MemspecError, NotFoundError, RecordError
from memspec.conformance import _builders as build
from memspec.reference.engine import create_engine
from memspec.reference.ports import RecordStore
from memspec.reference.records import MemoryRecord
from memspec.reference.search import InMemorySearchIndex, SQLiteSearchIndex
from memspec.reference.stores import FileRecordStore, InMemoryRecordStore, SQLiteRecordStore

NOW = "2026-06-01T00:00:00.000Z"
ZERO = "0" * 32

HOSTILE_IDS: dict[str, object] = {
    "dotdot": "../../../../etc/passwd",
    "mem-dotdot": "mem:../../../../../../etc/passwd",
    "mem-dotdot-32": "mem:" + "../" * 10 + "xx",
    "absolute": "/etc/passwd",
    "mem-absolute": "mem:/etc/passwd/" + "0" * 16,
    "nul-inside": "mem:" + "0" * 16 + "\x00" + "0" * 15,
    "nul-after": "mem:" + ZERO + "\x00",
    "slash-after": "mem:" + ZERO + "/../../x",
    "newline-after": "mem:" + ZERO + "\n",
    "space-before": " mem:" + ZERO,
    "uppercase-hex": "mem:" + "A" * 32,
    "upper-prefix": "MEM:" + ZERO,
    "fullwidth-digits": "mem:" + "\uff10" * 32,
    "arabic-indic-digits": "mem:" + "\u0660" * 32,
    "math-bold-digits": "mem:" + "\U0001d7ce" * 32,
    "fullwidth-prefix": "\uff4d\uff45\uff4d:" + ZERO,
    "fullwidth-colon": "mem\uff1a" + ZERO,
    "zero-width": "mem:" + "0" * 16 + "\u200b" + "0" * 16,
    "combining-mark": "mem:" + ZERO + "\u0301",
    "short": "mem:" + "0" * 31,
    "long": "mem:" + "0" * 33,
    "sql-or": "mem:" + ZERO + "' OR '1'='1",
    "sql-drop": "'; DROP TABLE history; --",
    "sql-union": "mem:' UNION SELECT payload FROM history --",
    "fts-star": "mem:*",
    "empty": "",
    "none": None,
    "int": 7,
    "list": ["mem:" + ZERO],
    "dict": {"$ne": ""},
    "bytes": b"mem:" + ZERO.encode(),
}
HOSTILE_TEXT = [
    "' OR '1'='1", "'; DROP TABLE records; --", "%", "_", "x' UNION SELECT 1 --",
    '"', '" OR "', "body:secret", "tags:kitchen", "NEAR(kettle cupboard)", "*", "kettle*",
    "^kettle", "kettle AND NOT cupboard", "-kettle", "(kettle", "kettle)", "{body}: kettle",
    "record_fts MATCH 'x'", '"""', "\\", "\x00", "kettle\x00cupboard", "\ud800",
    "rank:", "bm25(record_fts)", "x OR 1=1", "\u2028", "\uff02kettle\uff02",
]
FRAGMENTS = ("..", "etc", "passwd", "\x00", "DROP", "UNION", "\uff10", "\u0660", "\u200b")


def _tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` with the sha256 of its bytes (plus directories); SQLite's
    shared-memory index (``-shm``), which readers update, is not content."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        if path.name.endswith("-shm"):
            continue
        rel = path.relative_to(root).as_posix()
        out[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return out


class SQLSpy:
    """A proxy for a sqlite3 connection that records every statement and its parameters."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.seen: list[tuple[str, Any]] = []

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        self.seen.append((sql, params))
        return self._conn.execute(sql, params)

    def executemany(self, sql: str, params: Any) -> sqlite3.Cursor:
        params = list(params)
        self.seen.append((sql, params))
        return self._conn.executemany(sql, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def mentions(self, text: str) -> bool:
        return any(text in repr(entry) for entry in self.seen)


@pytest.fixture
def paths_seen(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every path the file store lists, scans, opens, links or creates."""
    seen: list[str] = []
    for name in ("listdir", "scandir", "open", "link", "mkdir", "stat", "replace", "unlink"):
        real = getattr(os, name)

        def spy(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
            if args:
                seen.append(os.fsdecode(args[0]) if isinstance(args[0], str | bytes | Path)
                            else repr(args[0]))
            return _real(*args, **kwargs)

        monkeypatch.setattr(os, name, spy)
    yield seen


def _sample() -> MemoryRecord:
    return MemoryRecord.create("fact", "the kettle is in the left cupboard",
                               {"kind": "test", "ref": None, "agent": None}, created_at=NOW,
                               tags=("kitchen",))


def _open(kind: str, root: Path) -> RecordStore:
    if kind == "memory":
        return InMemoryRecordStore()
    if kind == "file":
        return FileRecordStore(root / "records")
    return SQLiteRecordStore(root / "records.sqlite")


ENTRY_POINTS = ("get", "history", "contains", "redact")


def _call(store: RecordStore, entry: str, rid: object) -> Any:
    if entry == "get":
        return store.get(rid)  # type: ignore[arg-type]
    if entry == "history":
        return store.history(rid)  # type: ignore[arg-type]
    if entry == "contains":
        return rid in store
    return store.redact(rid, reason="hostile", now=NOW)  # type: ignore[attr-defined]


@pytest.mark.requirement("STORE-10")
@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("kind", ["memory", "file", "sqlite"])
def test_hostile_ids_never_reach_a_path_or_sql(kind: str, entry: str, tmp_path: Path,
                                              paths_seen: list[str]) -> None:
    canary = tmp_path / "outside" / "secret"
    canary.parent.mkdir()
    canary.write_text("do not touch")
    store = _open(kind, tmp_path / "store")
    record = _sample()
    store.put(record)
    spy = None
    if isinstance(store, SQLiteRecordStore):
        spy = SQLSpy(store._conn)  # type: ignore[arg-type]
        store._conn = spy  # type: ignore[assignment]
    before = _tree(tmp_path)
    paths_seen.clear()
    for name, rid in HOSTILE_IDS.items():
        if entry == "contains":
            assert _call(store, entry, rid) is False, name
            continue
        with pytest.raises(MemspecError) as info:
            _call(store, entry, rid)
        assert isinstance(info.value, RecordError | NotFoundError), (name, info.value)
        assert info.value.requirement in ("STORE-10", "REC-3", "STORE-4"), (name, info.value)
    for fragment in FRAGMENTS:
        assert not any(fragment in p for p in paths_seen), (fragment, paths_seen[:5])
        assert spy is None or not spy.mentions(fragment), fragment
    assert _tree(tmp_path) == before
    assert store.get(record.id) == record and len(store.history(record.id)) == 1


@pytest.mark.requirement("STORE-10", "STORE-8")
@pytest.mark.parametrize("kind", ["memory", "file", "sqlite"])
def test_hostile_text_in_records_and_filters_is_only_ever_data(kind: str, tmp_path: Path) -> None:
    store = _open(kind, tmp_path)
    plain = _sample()
    store.put(plain)
    texts = [t for t in HOSTILE_TEXT if t != "\ud800"]
    stored = []
    for i in range(0, len(texts), 10):
        chunk = texts[i:i + 10]
        record = MemoryRecord.create("fact", f"body {i}: {' '.join(chunk)}",
                                     {"kind": "test", "ref": chunk[0]}, created_at=NOW,
                                     tags=chunk, slots={t: t for t in chunk})
        store.put(record)
        stored.append((record, chunk))
    for record, chunk in stored:
        for tag in chunk:
            assert store.list(tag=tag) == (record,), tag
        assert store.get(record.id).canonical_bytes() == record.canonical_bytes()
    for text in texts:
        for probe in (text + " ", "x" + text):
            assert store.list(tag=probe) == ()
        with pytest.raises(RecordError):
            store.list(state=text)
        with pytest.raises(RecordError):
            store.list(type=text)
    assert len(store.ids()) == len(stored) + 1
    if kind == "sqlite":
        with sqlite3.connect(tmp_path / "records.sqlite") as conn:
            tables = {row[0] for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"history", "records", "record_tags"} <= tables


def _index_pair() -> list[Any]:
    indexes: list[Any] = [InMemorySearchIndex(), SQLiteSearchIndex()]
    for body, tags in (("the kettle is in the left cupboard", ("kitchen",)),
                       ("secret body text", ("private",)),
                       ('quote " star * caret ^ colon body: NEAR', ("x",))):
        record = MemoryRecord.create("fact", body, {"kind": "test"}, created_at=NOW, tags=tags)
        for index in indexes:
            index.index(record)
    return indexes


_SAFE_MATCH = re.compile(r'"[^"\s]+"(?: OR "[^"\s]+")*')


@pytest.mark.requirement("SRCH-3")
@pytest.mark.parametrize("query", HOSTILE_TEXT)
def test_fts_syntax_in_queries_is_searched_as_text(query: str) -> None:
    memory_index, sqlite_index = _index_pair()
    spy = SQLSpy(sqlite_index._db)
    sqlite_index._db = spy
    for index in (memory_index, sqlite_index):
        found = index.candidates(query, 10)
        assert isinstance(found, tuple) and all(score > 0 for _, score in found)
    # The column filter "body:" must not act as syntax: "secret" only matches as a word.
    assert all(rid for rid, _ in sqlite_index.candidates("body: secret", 10))
    for sql, params in spy.seen:
        if "MATCH" in sql:
            expression = params[0]
            assert _SAFE_MATCH.fullmatch(expression), f"unsafe MATCH expression {expression!r}"


@pytest.mark.requirement("SRCH-3")
def test_operator_words_are_words() -> None:
    _, sqlite_index = _index_pair()
    hits = dict(sqlite_index.candidates("NEAR", 10))
    assert len(hits) == 1  # the record whose body holds the word NEAR, nothing else
    assert sqlite_index.candidates("AND NOT OR", 10) == ()


ENGINE_CALLS: dict[str, Callable[[object], tuple[str, dict[str, Any]]]] = {
    "get": lambda rid: ("get", {"id": rid}),
    "history": lambda rid: ("history", {"id": rid}),
    "touch": lambda rid: ("touch", {"id": rid, "now": NOW}),
    "redact": lambda rid: ("redact", {"id": rid, "reason": "hostile", "now": NOW}),
    "resolve": lambda rid: ("resolve", {"winner_id": rid, "loser_id": "mem:" + ZERO,
                                        "reason": "x", "now": NOW}),
    "archive": lambda rid: ("apply_proposal", {"proposal": build.proposal(
        "archive", target_id=rid, reason="x"),  # type: ignore[arg-type]  # a hostile id
                                               "now": NOW}),
}


@pytest.mark.requirement("STORE-10")
@pytest.mark.parametrize("kind", ["memory", "file", "sqlite"])
def test_engine_operations_refuse_hostile_ids_and_write_nothing(kind: str) -> None:
    engine = create_engine(kind)
    try:
        record = _sample().model_dump()
        engine.call("put", {"record": record})
        tempdir = engine._state.tempdir
        root = Path(tempdir.name) if tempdir is not None else None
        before = _tree(root) if root else None
        for op_name, make in ENGINE_CALLS.items():
            for name, rid in HOSTILE_IDS.items():
                op, args = make(rid)
                with pytest.raises(MemspecError) as info:
                    engine.call(op, args)
                assert info.value.code in ("record", "not-found", "proposal", "lifecycle"), (
                    op_name, name, info.value)
        assert engine.call("iterate", {})["records"] == [record]
        assert engine.call("history", {"id": record["id"]})["records"] == [record]
        if root is not None:
            assert _tree(root) == before
    finally:
        engine.close()
