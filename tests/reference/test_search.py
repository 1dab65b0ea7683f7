"""Search: the pinned hash embedder and both reference indexes (SRCH-1..5, RED-7)."""

from __future__ import annotations

import hashlib
import math
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from memspec import EncodingError, LimitError, StoreError
from memspec.reference.ports import SearchIndex
from memspec.reference.records import MemoryRecord
from memspec.reference.search import (
    HashEmbedder,
    InMemorySearchIndex,
    SQLiteSearchIndex,
    fts_query,
)

T0 = "2026-01-01T00:00:00.000Z"


def rec(body: str, *, ref: str = "test", tags: tuple[str, ...] = ()) -> MemoryRecord:
    return MemoryRecord.create("fact", body, {"kind": "conversation", "ref": ref},
                               created_at=T0, tags=tags)


# -- HashEmbedder ---------------------------------------------------------------------

def test_embedder_pinned_small_vector() -> None:
    # sha256("a") = ca978112 ca..: bucket 0xca978112 % 8 = 2, digest[4] = 0xca even -> +1.
    # sha256("b") = 3e23e816 00..: bucket 0x3e23e816 % 8 = 6, digest[4] = 0x00 even -> +1.
    root5 = math.sqrt(5)
    assert HashEmbedder(8).embed("A a b") == (0.0, 0.0, 2 / root5, 0.0, 0.0, 0.0, 1 / root5, 0.0)


def test_embedder_pinned_default_vector() -> None:
    vector = HashEmbedder().embed("The staging database is Postgres")
    assert len(vector) == 256
    half = 1 / math.sqrt(5)
    assert {i: v for i, v in enumerate(vector) if v} == {
        2: -half, 73: -half, 83: half, 124: -half, 125: -half,
    }


def test_embedder_matches_its_documented_construction() -> None:
    text = "Deploys go out on Tuesdays; deploys never go out on Fridays"
    dims = 64
    counts = [0] * dims
    for token in text.lower().replace(";", " ").split():
        digest = hashlib.sha256(token.encode()).digest()
        counts[int.from_bytes(digest[:4], "big") % dims] += 1 if digest[4] % 2 == 0 else -1
    norm = math.sqrt(sum(c * c for c in counts))
    assert HashEmbedder(dims).embed(text) == tuple(c / norm for c in counts)


def test_embedder_vectors_are_l2_normalized_and_deterministic() -> None:
    embedder = HashEmbedder()
    for text in ("one", "the quick brown fox", "Zürich café 42", "a " * 50):
        vector = embedder.embed(text)
        assert math.isclose(math.sqrt(sum(v * v for v in vector)), 1.0, rel_tol=1e-12)
        assert vector == HashEmbedder().embed(text)


def test_embedder_zero_vector_stays_zero() -> None:
    assert HashEmbedder(4).embed("!!! ...") == (0.0, 0.0, 0.0, 0.0)
    assert HashEmbedder(4).embed("") == (0.0,) * 4


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "8"])
def test_embedder_rejects_bad_dimensions(bad: object) -> None:
    with pytest.raises(LimitError):
        HashEmbedder(bad)  # type: ignore[arg-type]


def test_embedder_dimensions_property() -> None:
    assert HashEmbedder().dimensions == 256
    assert HashEmbedder(16).dimensions == 16


# -- both indexes ---------------------------------------------------------------------

@pytest.fixture(params=["memory", "sqlite"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SearchIndex]:
    if request.param == "memory":
        yield InMemorySearchIndex()
        return
    opened = SQLiteSearchIndex(tmp_path / "index.sqlite")
    yield opened
    opened.close()


def test_candidates_best_first_with_scores_in_unit_interval(index: SearchIndex) -> None:
    # Words picked so that no two share a hash bucket (collisions are inherent to hashing).
    strong = rec("postgres postgres staging database")
    weak = rec("staging cluster runs on many machines today")
    other = rec("bananas are yellow")
    for r in (strong, weak, other):
        index.index(r)
    found = index.candidates("staging postgres", 10)
    assert [rid for rid, _ in found] == [strong.id, weak.id]
    assert all(0.0 < score <= 1.0 for _, score in found)
    assert found[0][1] > found[1][1]


def test_matches_only_and_at_most_k(index: SearchIndex) -> None:
    records = [rec(f"alpha note {i}") for i in range(5)]
    for r in records:
        index.index(r)
    index.index(rec("kiwi beta"))
    assert len(index.candidates("alpha", 3)) == 3
    assert len(index.candidates("alpha", 100)) == 5
    assert index.candidates("alpha", 0) == ()
    assert index.candidates("gamma", 10) == ()
    assert index.candidates("", 10) == ()


def test_equal_scores_tie_break_by_id(index: SearchIndex) -> None:
    twins = [rec("same words here", ref=f"source-{i}") for i in range(4)]
    for r in reversed(twins):
        index.index(r)
    found = index.candidates("same words", 10)
    assert [rid for rid, _ in found] == sorted(r.id for r in twins)
    assert len({score for _, score in found}) == 1


def test_same_contents_same_candidates(index: SearchIndex) -> None:
    for i in range(6):
        index.index(rec(f"note {i} about deploys and {'rollbacks ' * i}"))
    assert index.candidates("deploys rollbacks", 4) == index.candidates("deploys rollbacks", 4)


def test_reindexing_replaces_the_entry(index: SearchIndex) -> None:
    record = rec("original wording about kittens")
    index.index(record)
    archived = record.evolve("2026-01-02T00:00:00.000Z", state="archived", state_reason="old")
    index.index(archived)
    assert [rid for rid, _ in index.candidates("kittens", 10)] == [record.id]
    assert len(index) == 1  # type: ignore[arg-type]


def test_tags_are_searchable(index: SearchIndex) -> None:
    tagged = rec("plain body", tags=("infrastructure",))
    index.index(tagged)
    assert [rid for rid, _ in index.candidates("infrastructure", 5)] == [tagged.id]


def test_tombstone_removes_redacted_content(index: SearchIndex) -> None:
    record = rec("the launch code is 0000")
    index.index(record)
    assert index.candidates("launch code", 5)
    index.index(MemoryRecord.tombstone(record, reason="secret", now="2026-01-02T00:00:00.000Z"))
    assert index.candidates("launch code", 5) == ()
    assert index.candidates("redacted", 5) == ()


@pytest.mark.parametrize("bad", [-1, True, 1.5, "3", None])
def test_bad_k_is_rejected(index: SearchIndex, bad: object) -> None:
    with pytest.raises(LimitError):
        index.candidates("x", bad)  # type: ignore[arg-type]


def test_non_text_query_is_rejected(index: SearchIndex) -> None:
    with pytest.raises(EncodingError):
        index.candidates(b"x", 3)  # type: ignore[arg-type]


INJECTIONS = [
    'body:x OR 1', '"', '""', '*', 'x*', 'NEAR(a b)', 'NEAR(', '-', '-x', '^x', '^',
    'a AND', 'OR', 'NOT x', 'x NOT', '(', ')', '{body tags}: x', "'; DROP TABLE record_fts; --",
    'body:', 'tags:x', '+', 'x + y', ':', '\\', '\x00', 'a"b', 'record_id:mem', '\u201cx\u201d',
]


@pytest.mark.parametrize("query", INJECTIONS)
def test_query_syntax_injection_is_impossible(index: SearchIndex, query: str) -> None:
    plain = rec("x y a b 1 body tags near or not and some plain text")
    mango = rec("mango")
    index.index(plain)
    index.index(mango)
    found = index.candidates(query, 10)
    assert {rid for rid, _ in found} <= {plain.id}
    assert all(0.0 < score <= 1.0 for _, score in found)
    assert [rid for rid, _ in index.candidates("mango", 10)] == [mango.id]


# -- SQLite specifics ------------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hello world", '"hello" OR "world"'),
        ('body:x OR 1', '"body" OR "x" OR "1"'),
        ('NEAR("a" b)*', '"near" OR "b"'),
        ("what is the deadline", '"deadline"'),
        ("what is it", '"what" OR "is" OR "it"'),
        ("x x X", '"x"'),
        ("^-*()", ""),
    ],
)
def test_fts_query_quotes_alphanumeric_tokens(text: str, expected: str) -> None:
    assert fts_query(text) == expected


def test_fts_query_caps_the_token_count() -> None:
    assert fts_query(" ".join(f"w{i}" for i in range(500))).count(" OR ") == 63


def test_sqlite_best_match_scores_one(tmp_path: Path) -> None:
    index = SQLiteSearchIndex(tmp_path / "i.sqlite")
    for body in ("apples and pears", "apples apples apples", "pears only"):
        index.index(rec(body))
    found = index.candidates("apples", 5)
    assert found[0][1] == 1.0
    index.close()


def test_sqlite_index_persists_across_handles(tmp_path: Path) -> None:
    path = tmp_path / "i.sqlite"
    first = SQLiteSearchIndex(path)
    record = rec("persistent memory")
    first.index(record)
    first.close()
    second = SQLiteSearchIndex(path)
    assert [rid for rid, _ in second.candidates("persistent", 3)] == [record.id]
    second.close()


def test_sqlite_index_is_thread_safe(tmp_path: Path) -> None:
    index = SQLiteSearchIndex(tmp_path / "i.sqlite")
    records = [rec(f"threaded note number {i}") for i in range(40)]
    errors: list[BaseException] = []

    def work(chunk: list[MemoryRecord]) -> None:
        try:
            for r in chunk:
                index.index(r)
                index.candidates("threaded", 5)
        except BaseException as exc:  # pragma: no cover - only on failure
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(records[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(index) == 40
    assert len(index.candidates("threaded", 100)) == 40
    index.close()


def test_sqlite_closed_index_raises_store_error(tmp_path: Path) -> None:
    index = SQLiteSearchIndex(tmp_path / "i.sqlite")
    index.close()
    index.close()
    with pytest.raises(StoreError):
        index.candidates("x", 1)
    with pytest.raises(StoreError):
        index.index(rec("x y z"))


def test_sqlite_in_memory_default() -> None:
    index = SQLiteSearchIndex()
    record = rec("kept in memory")
    index.index(record)
    assert index.candidates("memory", 2)[0][0] == record.id
    index.close()


def test_memory_index_uses_given_embedder() -> None:
    embedder = HashEmbedder(32)
    index = InMemorySearchIndex(embedder)
    assert index.embedder is embedder
    record = rec("small vectors")
    index.index(record)
    assert index.candidates("vectors", 1)[0][0] == record.id


@pytest.mark.parametrize("query", ['"', "NEAR(", "body:x OR", "*", "^"])
def test_raw_text_would_break_fts5_but_not_the_index(tmp_path: Path, query: str) -> None:
    raw = sqlite3.connect(":memory:")
    raw.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
    with pytest.raises(sqlite3.OperationalError):
        raw.execute("SELECT * FROM t WHERE t MATCH ?", (query,)).fetchall()
    raw.close()
    index = SQLiteSearchIndex(tmp_path / "i.sqlite")
    index.index(rec("x body"))
    index.candidates(query, 5)
    index.close()


def test_sqlite_redaction_leaves_no_residue_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "i.sqlite"
    index = SQLiteSearchIndex(path)
    secret = rec("the password is zyxwvutsecret")
    for i in range(20):
        index.index(rec(f"filler record {i}"))
    index.index(secret)
    index.index(MemoryRecord.tombstone(secret, reason="leak", now="2026-01-02T00:00:00.000Z"))
    leftovers = [p for p in tmp_path.iterdir() if b"zyxwvutsecret" in p.read_bytes()]
    assert leftovers == []
    assert index.candidates("zyxwvutsecret", 5) == ()
    index.close()


def test_huge_k_means_all_matches(index: SearchIndex) -> None:
    index.index(rec("kiwi"))
    assert len(index.candidates("kiwi", 2**70)) == 1
