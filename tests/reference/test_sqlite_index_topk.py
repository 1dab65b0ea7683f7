"""SQLiteSearchIndex's top-k: ordered by BM25 over a window, the same answers as sorting
every match by (score descending, record id ascending), ties at the k-th score included."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from memspec.reference.records import MemoryRecord
from memspec.reference.search import SQLiteSearchIndex
from memspec.reference.search.sqlite_index import _SLACK, fts_query

from .conftest import at, new_record

_WORDS = ("staging", "database", "deploy", "friday", "coffee", "server", "owner", "dana")


def _corpus(count: int, seed: int) -> list[MemoryRecord]:
    """Records whose bodies repeat a few templates, so that many share one BM25 score
    (ties far longer than the window), mixed with distinct ones."""
    rng = random.Random(seed)
    templates = [" ".join(rng.choices(_WORDS, k=rng.randint(1, 4))) for _ in range(3)]
    out = []
    for i in range(count):
        if rng.random() < 0.7:
            out.append(new_record(rng.choice(templates), created_at=at(1, i)))
            continue
        body = " ".join(rng.choices(_WORDS, k=rng.randint(1, 7))) + f" n{i}"
        out.append(new_record(body, created_at=at(1, i), tags=rng.sample(["ops", "home"],
                                                                         rng.randint(0, 2))))
    return out


def _every_match_sorted(path: Path, query: str, k: int) -> list[tuple[str, float]]:
    """The straightforward query: every match sorted by score and id, then LIMIT."""
    db = sqlite3.connect(path)
    try:
        rows = db.execute(
            "SELECT record_id, -bm25(record_fts) AS score FROM record_fts "
            "WHERE record_fts MATCH ? ORDER BY score DESC, record_id ASC LIMIT ?",
            (fts_query(query), k)).fetchall()
    finally:
        db.close()
    return [(str(r), float(s)) for r, s in rows]


@pytest.mark.parametrize("seed", [1, 2])
def test_top_k_equals_sorting_every_match(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "index.sqlite"
    index = SQLiteSearchIndex(path)
    try:
        for record in _corpus(400, seed):
            index.index(record)
        queries = ["staging", "coffee friday", "owner dana server", "deploy", "n17 database",
                   "nothing matches this", "the"]
        ks = [1, 2, 5, _SLACK - 1, _SLACK, _SLACK + 1, 2 * _SLACK, 100, 399, 400, 1000]
        tied_past_window = 0
        for query in queries:
            for k in ks:
                expected = _every_match_sorted(path, query, k)
                got = index.candidates(query, k)
                assert [rid for rid, _ in got] == [rid for rid, _ in expected], (query, k)
                if len(expected) == k and k + max(k, _SLACK) < 400:
                    scores = [s for _, s in _every_match_sorted(path, query, k + max(k, _SLACK))]
                    tied_past_window += scores[k - 1] == scores[-1]
        # The corpus is built so that the tie branch runs, not only the window.
        assert tied_past_window > 0
    finally:
        index.close()
