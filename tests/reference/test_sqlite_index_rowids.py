"""SQLiteSearchIndex's rowid side table: replace by rowid, same answers, old files still open."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from memspec.reference.records import MemoryRecord
from memspec.reference.search import SQLiteSearchIndex

from .conftest import at, new_record

_WORDS = ("staging", "database", "postgres", "deploy", "friday", "team", "coffee", "tea",
          "server", "port", "what", "is", "the", "runbook", "owner", "dana")


def _corpus(count: int, seed: int = 1) -> list[MemoryRecord]:
    rng = random.Random(seed)
    return [new_record(" ".join(rng.choices(_WORDS, k=rng.randint(1, 7))) + f" n{i}",
                       created_at=at(1, i), tags=rng.sample(["ops", "home"], rng.randint(0, 2)))
            for i in range(count)]


class _OldIndex:
    """The pre-side-table write: delete by the UNINDEXED record_id column, then insert."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS record_fts USING fts5("
                        "record_id UNINDEXED, body, tags, tokenize = 'unicode61')")

    def index(self, record: MemoryRecord) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        self.db.execute("DELETE FROM record_fts WHERE record_id = ?", (record.id,))
        if not record.is_tombstone:
            self.db.execute("INSERT INTO record_fts (record_id, body, tags) VALUES (?, ?, ?)",
                            (record.id, record.body, " ".join(record.tags)))
        self.db.execute("COMMIT")

    def answers(self, queries: list[str]) -> list[list[tuple[str, float]]]:
        from memspec.reference.search.sqlite_index import fts_query

        out = []
        for query in queries:
            rows = self.db.execute(
                "SELECT record_id, -bm25(record_fts) AS score FROM record_fts "
                "WHERE record_fts MATCH ? ORDER BY score DESC, record_id ASC LIMIT 20",
                (fts_query(query),)).fetchall()
            out.append([(str(r), float(s)) for r, s in rows])
        return out


def _writes(records: list[MemoryRecord]) -> list[MemoryRecord]:
    """First versions, then re-indexed versions (new tags) and a few tombstones."""
    later = [r.evolve(at(5), tags=["later"]) for r in records[::3]]
    gone = [MemoryRecord.tombstone(r, reason="asked", now=at(6)) for r in records[1::7]]
    return [*records, *later, *gone]


QUERIES = ["staging database", "what is the owner", "coffee OR tea", "later", "ops", "n3",
           "runbook friday", "nothing matches this"]


def _rowids(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        mapped = dict(conn.execute("SELECT record_id, fts_rowid FROM record_fts_rowid"))
        actual = dict(conn.execute("SELECT record_id, rowid FROM record_fts"))
    assert mapped == actual
    return mapped


def test_candidates_match_the_old_write_path(tmp_path: Path) -> None:
    writes = _writes(_corpus(60))
    old = _OldIndex(tmp_path / "old.sqlite")
    new = SQLiteSearchIndex(tmp_path / "new.sqlite")
    for record in writes:
        old.index(record)
        new.index(record)
    for query, expected in zip(QUERIES, old.answers(QUERIES), strict=True):
        got = new.candidates(query, 20)
        assert [rid for rid, _ in got] == [rid for rid, _ in expected], query
    assert len(new) == len(_rowids(tmp_path / "new.sqlite"))
    new.close()


def test_an_index_file_from_the_old_schema_opens_and_is_backfilled(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    records = _corpus(40)
    old = _OldIndex(path)
    for record in records:
        old.index(record)
    before = old.answers(QUERIES)
    old.db.close()
    index = SQLiteSearchIndex(path)
    assert len(_rowids(path)) == len(records)
    for query, expected in zip(QUERIES, before, strict=True):
        assert [rid for rid, _ in index.candidates(query, 20)] == [r for r, _ in expected]
    # Re-indexing replaces the one row (no duplicate), and a tombstone removes it.
    index.index(records[0].evolve(at(9), tags=["moved"]))
    index.index(MemoryRecord.tombstone(records[1], reason="asked", now=at(9)))
    assert len(index) == len(records) - 1
    assert [rid for rid, _ in index.candidates("moved", 5)] == [records[0].id]
    assert records[1].id not in _rowids(path)
    index.close()
    SQLiteSearchIndex(path).close()  # reopening a consistent file changes nothing
    assert len(_rowids(path)) == len(records) - 1
