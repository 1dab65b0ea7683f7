"""Recall: scoring, state awareness, transition pairs, history, budgets, touches (RCL-1..13)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from memspec import EncodingError, LimitError
from memspec.reference import lifecycle
from memspec.reference.pipeline.decay import SalienceScores
from memspec.reference.ports import RecordStore, SearchIndex
from memspec.reference.records import MemoryRecord, RecordState
from memspec.reference.retrieval import (
    STATE_WEIGHTS,
    RetrievedBlock,
    estimate_tokens,
    retrieve,
)
from memspec.reference.search import InMemorySearchIndex, SQLiteSearchIndex

T0 = "2026-01-01T00:00:00.000Z"
T30 = "2026-01-31T00:00:00.000Z"
LATER = "2036-01-01T00:00:00.000Z"


def rec(body: str, *, ref: str = "test", created_at: str = T0, **kwargs: Any) -> MemoryRecord:
    return MemoryRecord.create("fact", body, {"kind": "conversation", "ref": ref},
                               created_at=created_at, **kwargs)


def snapshot(store: RecordStore) -> dict[str, tuple[bytes, ...]]:
    return {rid: tuple(r.canonical_bytes() for r in store.history(rid)) for rid in store.ids()}


class Env:
    """A store plus an in-memory index kept in step with it."""

    def __init__(self, store: RecordStore) -> None:
        self.store = store
        self.index = InMemorySearchIndex()

    def put(self, *records: MemoryRecord, index: bool = True) -> None:
        for record in records:
            self.store.put(record)
            if index:
                self.index.index(record)

    def recall(self, query: str, budget: int = 10_000, now: str = T0,
               **kwargs: Any) -> RetrievedBlock:
        return retrieve(query, store=self.store, indexes=[self.index], budget_tokens=budget,
                        now=now, **kwargs)


@pytest.fixture
def env(store: RecordStore) -> Env:
    return Env(store)


def reasons(block: RetrievedBlock) -> dict[str, tuple[str, ...]]:
    return {r.record.id: r.reasons for r in block.records}


def test_score_is_the_product_of_the_factors(env: Env) -> None:
    record = rec("kiwi", confidence="0.9000")
    env.put(record)
    assert env.recall("kiwi").records[0].score == 0.9
    assert env.recall("kiwi", now=T30).records[0].score == 0.45
    touches = SalienceScores()
    touches.touch(record.id, T0)
    assert env.recall("kiwi", now=T30, touches=touches).records[0].score == 0.5625


def test_recency_has_a_positive_floor(env: Env) -> None:
    record = rec("kiwi")
    env.put(record)
    assert env.recall("kiwi", now=LATER).records[0].score == 0.1


def test_matches_carry_query_match_and_rank_by_score_then_id(env: Env) -> None:
    twins = [rec("same body words", ref=f"r{i}") for i in range(3)]
    weaker = rec("same body words", ref="weak", confidence="0.5000")
    env.put(*twins, weaker)
    block = env.recall("same body words")
    assert block.ids == (*sorted(r.id for r in twins), weaker.id)
    assert all(r.reasons == ("query-match",) for r in block.records)
    assert block.records[0].score == block.records[2].score > block.records[3].score


def test_active_outranks_superseded_all_else_equal(env: Env) -> None:
    active = rec("deploy window friday", ref="a")
    old = rec("deploy window friday", ref="b")
    successor = rec("unrelated mango", supersedes=old.id)
    env.put(active, old, successor)
    env.put(lifecycle.supersede(old, successor, reason="replaced", now=T0))
    assert env.recall("deploy window").ids == (active.id,)
    block = env.recall("deploy window", include_history=True)
    assert block.ids[:2] == (active.id, old.id)
    assert block.records[0].score > block.records[1].score
    weights = [STATE_WEIGHTS[RecordState(s)]
               for s in ("active", "transitional", "superseded", "archived")]
    assert weights == sorted(weights, reverse=True) and len(set(weights)) == 4


def test_include_history_surfaces_the_supersedes_chain(env: Env) -> None:
    first = rec("alpha one")
    second = rec("beta two", supersedes=first.id)
    third = rec("postgres sixteen", supersedes=second.id)
    env.put(first, second, third)
    env.put(lifecycle.supersede(first, second, reason="newer", now=T0))
    env.put(lifecycle.supersede(second, third, reason="newer", now=T0))
    assert env.recall("postgres").ids == (third.id,)
    block = env.recall("postgres", include_history=True)
    assert set(block.ids) == {first.id, second.id, third.id}
    assert reasons(block) == {third.id: ("query-match",), second.id: ("predecessor",),
                              first.id: ("predecessor",)}


def test_archived_only_with_include_archived(env: Env) -> None:
    record = rec("kiwi jam")
    env.put(record)
    env.put(lifecycle.archive(record, reason="stale", now=T0))
    assert len(env.recall("kiwi")) == 0
    block = env.recall("kiwi", include_archived=True)
    assert block.ids == (record.id,)
    assert block.records[0].score == STATE_WEIGHTS[block.records[0].record.state]


def test_archived_predecessor_needs_include_archived(env: Env) -> None:
    first = rec("alpha one")
    second = rec("postgres sixteen", supersedes=first.id)
    env.put(first, second)
    superseded = lifecycle.supersede(first, second, reason="newer", now=T0)
    env.put(superseded, lifecycle.archive(superseded, reason="decayed", now=T0))
    assert env.recall("postgres", include_history=True).ids == (second.id,)
    both = env.recall("postgres", include_history=True, include_archived=True)
    assert set(both.ids) == {first.id, second.id}


def _dispute(env: Env, *, index_partner: bool) -> tuple[MemoryRecord, MemoryRecord]:
    a = rec("the staging database is postgres")
    b = rec("mysql backs staging now")
    env.put(a)
    env.put(b, index=index_partner)
    a2, b2 = lifecycle.begin_transition(a, b, reason="one side negates the other", now=T0)
    env.put(a2)
    env.put(b2, index=index_partner)
    return a2, b2


def test_transition_partner_is_pulled_from_the_store(env: Env) -> None:
    a, b = _dispute(env, index_partner=False)
    assert [rid for rid, _ in env.index.candidates("postgres", 10)] == [a.id]
    block = env.recall("postgres")
    assert reasons(block) == {a.id: ("query-match",), b.id: ("transition-partner",)}
    assert all(r.record.state == "transitional" for r in block.records)


def test_transition_pair_is_budgeted_atomically(env: Env) -> None:
    a, b = _dispute(env, index_partner=False)
    one_side = estimate_tokens(a.body)
    assert len(env.recall("postgres", budget=one_side)) == 0
    pair = one_side + estimate_tokens(b.body)
    assert len(env.recall("postgres", budget=pair - 1)) == 0
    assert set(env.recall("postgres", budget=pair).ids) == {a.id, b.id}


def test_partner_that_also_matches_has_both_reasons(env: Env) -> None:
    a, b = _dispute(env, index_partner=True)
    block = env.recall("staging postgres mysql")
    assert set(block.ids) == {a.id, b.id}
    assert all("query-match" in r.reasons for r in block.records)


def test_one_side_is_never_shown_when_the_partner_is_missing(env: Env) -> None:
    a = rec("orphan dispute side")
    ghost = rec("never stored")
    env.put(a)
    a2 = a.evolve(T0, state="transitional",
                  transition={"sides": [a.id, ghost.id], "reason": "conflict"})
    env.put(a2)
    assert len(env.recall("orphan")) == 0


def test_budget_selects_whole_records_and_skips_what_does_not_fit(env: Env) -> None:
    big = rec("kiwi " * 40)
    small = rec("kiwi jam", ref="s", confidence="0.5000")
    env.put(big, small)
    block = env.recall("kiwi", budget=estimate_tokens(small.body) + 5)
    assert block.ids == (small.id,)
    assert block.total_tokens == estimate_tokens(small.body) <= block.budget_tokens
    assert block.records[0].record == small
    assert len(env.recall("kiwi", budget=0)) == 0
    full = env.recall("kiwi")
    assert full.ids == (big.id, small.id)
    assert full.records[0].record.body == big.body
    assert full.total_tokens == sum(r.tokens for r in full.records)


def test_recall_touches_the_sidecar_and_writes_no_record(env: Env) -> None:
    a, b = _dispute(env, index_partner=False)
    other = rec("unrelated mango")
    env.put(other)
    before = snapshot(env.store)
    touches = SalienceScores()
    env.recall("postgres", touches=touches, now=T30)
    env.recall("postgres", touches=touches, now=T30)
    assert snapshot(env.store) == before
    assert touches.touches(a.id) == touches.touches(b.id) == 2
    assert touches.touches(other.id) == 0
    assert touches.last_touched(a.id) == T30


def test_touches_never_lower_and_do_raise_the_score(env: Env) -> None:
    first, second = sorted((rec("kiwi", ref="x"), rec("kiwi", ref="y")), key=lambda r: r.id)
    env.put(first, second)
    assert env.recall("kiwi").ids == (first.id, second.id)
    touches = SalienceScores()
    scores = []
    for _ in range(4):
        touches.touch(second.id, T0)
        block = env.recall("kiwi", touches=SalienceScores.from_dict(touches.to_dict()))
        assert block.ids == (second.id, first.id)
        scores.append(block.records[0].score)
    assert scores == sorted(scores)


def test_stale_index_entries_are_skipped(env: Env) -> None:
    env.index.index(rec("kiwi ghost"))
    assert len(env.recall("kiwi")) == 0


def test_relevance_is_the_best_normalized_score_across_indexes(env: Env) -> None:
    fts = SQLiteSearchIndex()
    only_fts = rec("kiwi", ref="fts")
    only_vec = rec("kiwi", ref="vec")
    env.store.put(only_fts)
    env.store.put(only_vec)
    fts.index(only_fts)
    env.index.index(only_vec)
    block = retrieve("kiwi", store=env.store, indexes=[fts, env.index], budget_tokens=100,
                     now=T0)
    assert set(block.ids) == {only_fts.id, only_vec.id}
    assert [r.score for r in block.records] == [1.0, 1.0]
    fts.close()


def test_recall_is_deterministic(env: Env) -> None:
    for i in range(8):
        env.put(rec(f"note {i} on deploys", ref=str(i), confidence=f"0.{i}000"))
    assert env.recall("deploys", budget=20).model_dump() == \
        env.recall("deploys", budget=20).model_dump()


def test_model_dump_is_the_wire_result(env: Env) -> None:
    record = rec("kiwi")
    env.put(record)
    assert env.recall("kiwi").model_dump() == {
        "records": [{"record": record.model_dump(), "score": 1.0,
                     "tokens": estimate_tokens(record.body), "reasons": ["query-match"]}],
        "total_tokens": estimate_tokens(record.body),
    }


def test_estimate_tokens() -> None:
    assert [estimate_tokens("x" * n) for n in (0, 1, 4, 5, 8, 9)] == [1, 1, 1, 2, 2, 3]
    assert estimate_tokens("x" * 401) == math.ceil(401 / 4)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"budget_tokens": -1}, LimitError),
        ({"budget_tokens": True}, LimitError),
        ({"budget_tokens": 1.5}, LimitError),
        ({"now": "2026-01-01T00:00:00Z"}, EncodingError),
        ({"candidates_per_index": -3}, LimitError),
        ({"query": 7}, EncodingError),
    ],
)
def test_bad_arguments_raise_typed_errors(env: Env, kwargs: dict[str, Any],
                                          error: type[Exception]) -> None:
    args: dict[str, Any] = {"query": "kiwi", "budget_tokens": 10, "now": T0}
    args.update(kwargs)
    query = args.pop("query")
    indexes: list[SearchIndex] = [env.index]
    with pytest.raises(error):
        retrieve(query, store=env.store, indexes=indexes, **args)
