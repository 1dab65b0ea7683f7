"""Candidate generation for consolidation: the prefix filters lose nothing the operators act on.

The shipped operators narrow the blocked pair set (shared content word or slot
key) to the pairs they act on, through exact prefix filtering. These tests check
that against brute force over every pair, and that a whole consolidation report is
identical to the one the plain blocked set gives (the old algorithm, reproduced
here by operators whose ``propose_*`` is overridden, which makes them fall back to
blocking).
"""

from __future__ import annotations

import random
from decimal import Decimal
from fractions import Fraction
from itertools import combinations
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memspec.reference.pipeline import (
    ConsolidationConfig,
    ConsolidationOperators,
    HeuristicContradictionOperator,
    TrigramNearDupOperator,
    consolidate,
    default_operators,
)
from memspec.reference.pipeline.candidates import cross_join, prefix_join, similar_pairs
from memspec.reference.proposals import Proposal
from memspec.reference.records import MemoryRecord
from memspec.reference.stores import InMemoryRecordStore
from memspec.reference.text import content_words
from tests.reference.conftest import at, new_record, snapshot

NOW = "2026-03-01T00:00:00.000Z"


# -- the brute-force reference (the old algorithm) ---------------------------------------------


class BlockedNearDup(TrigramNearDupOperator):
    """The shipped near-dup verdicts over the plain blocked pair set."""

    def propose_merge(self, a: MemoryRecord, b: MemoryRecord, *, now: str) -> Proposal | None:
        return super().propose_merge(a, b, now=now)


class BlockedContradiction(HeuristicContradictionOperator):
    """The shipped contradiction verdicts over the plain blocked pair set."""

    def propose_transition(self, a: MemoryRecord, b: MemoryRecord, *,
                           now: str) -> Proposal | None:
        return super().propose_transition(a, b, now=now)


def blocked(a: MemoryRecord, b: MemoryRecord) -> bool:
    return bool(content_words(a.body) & content_words(b.body) or set(a.slots) & set(b.slots))


def brute_force(records: list[MemoryRecord], acts: Any) -> list[tuple[str, str]]:
    """Every blocked pair, in id order, on which ``acts(a, b)`` is true."""
    ordered = sorted(records, key=lambda r: r.id)
    return [(a.id, b.id) for a, b in combinations(ordered, 2) if blocked(a, b) and acts(a, b)]


def check_candidates(records: list[MemoryRecord], near: str, contra: str) -> None:
    merge = TrigramNearDupOperator(threshold=near)
    contradiction = HeuristicContradictionOperator(threshold=contra)
    got_merge = [(a.id, b.id) for a, b in merge.candidates(records)]
    got_contra = [(a.id, b.id) for a, b in contradiction.candidates(records)]
    assert got_merge == brute_force(
        records, lambda a, b: merge.propose_merge(a, b, now=NOW) is not None)
    assert got_contra == brute_force(
        records, lambda a, b: contradiction.propose_transition(a, b, now=NOW) is not None)


def check_report(records: list[MemoryRecord], near: str, contra: str) -> None:
    config = ConsolidationConfig(near_dup_threshold=Decimal(near),
                                 contradiction_threshold=Decimal(contra))
    old = ConsolidationOperators(BlockedNearDup(threshold=near),
                                 BlockedContradiction(threshold=contra))
    new_store, old_store = InMemoryRecordStore(), InMemoryRecordStore()
    for record in records:
        new_store.put(record)
        old_store.put(record)
    new = consolidate(new_store, now=NOW, config=config, operators=default_operators(config))
    reference = consolidate(old_store, now=NOW, config=config, operators=old)
    assert new.model_dump() == reference.model_dump()
    assert new.touched == reference.touched
    assert snapshot(new_store) == snapshot(old_store)


# -- corpora ------------------------------------------------------------------------------------

_WORDS = ("the", "staging", "database", "is", "postgres", "mysql", "server", "runs", "on",
          "port", "5432", "blue", "deploy", "friday", "team", "prefers", "tea", "coffee",
          "it", "was", "what", "a", "an", "databases", "ran", "running")
_NEGATIONS = ("not", "never", "no", "isn't", "don't")
_SLOT_KEYS = ("db", "port", "owner")
_SLOT_VALUES = ("postgres", "mysql", "5432", "dana", ["a", "b"])


@st.composite
def corpora(draw: st.DrawFn) -> list[MemoryRecord]:
    count = draw(st.integers(2, 14))
    records: dict[str, MemoryRecord] = {}
    for index in range(count):
        words = draw(st.lists(st.sampled_from(_WORDS), min_size=0, max_size=8))
        if draw(st.booleans()) and words:
            words.insert(draw(st.integers(0, len(words))), draw(st.sampled_from(_NEGATIONS)))
        if draw(st.integers(0, 9)) == 0:
            words = ["no", "restart", "needed", *words]
        body = " ".join(words) + draw(st.sampled_from(("", ".", "!", " ?")))
        if not body.strip():
            body = "-"
        kind = draw(st.sampled_from(("fact", "fact", "procedure", "episode")))
        slots = draw(st.dictionaries(st.sampled_from(_SLOT_KEYS), st.sampled_from(_SLOT_VALUES),
                                     max_size=2))
        confidence = draw(st.sampled_from(("0.5000", "0.9000", "1.0000")))
        record = new_record(body, type=kind, created_at=at(1 + index % 20, index),
                            slots=slots, confidence=confidence)
        records[record.id] = record
    return list(records.values())


_NEAR = ("0", "0.2", "0.4", "0.5", "0.6", "0.75", "0.9", "1")
_CONTRA = ("0", "0.25", "0.5", "0.6", "1")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora(), st.sampled_from(_NEAR), st.sampled_from(_CONTRA))
def test_candidates_equal_brute_force(records: list[MemoryRecord], near: str,
                                      contra: str) -> None:
    check_candidates(records, near, contra)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora(), st.sampled_from(_NEAR), st.sampled_from(_CONTRA))
def test_reports_equal_the_blocked_algorithm(records: list[MemoryRecord], near: str,
                                             contra: str) -> None:
    check_report(records, near, contra)


def _hand_corpora() -> dict[str, list[MemoryRecord]]:
    def fact(body: str, second: int, **kwargs: Any) -> MemoryRecord:
        return new_record(body, created_at=at(1, second), **kwargs)

    return {
        "near-duplicates": [
            fact("The staging database is Postgres.", 1),
            fact("The staging database is Postgres!", 2, confidence="0.5000"),
            fact("Staging database is Postgres", 3),
            fact("The staging database runs Postgres.", 4),
            fact("The prod database is MySQL.", 5),
        ],
        "stopwords-only": [  # similar text, no content word: blocking never pairs them
            fact("it is what it is", 1), fact("it is what it was", 2),
            fact("what it is", 3), fact("!!!", 4), fact("...", 5),
        ],
        "negations": [
            fact("The deploy runs on Friday.", 1),
            fact("The deploy never runs on Friday.", 2),
            fact("The deploy doesn't run on Friday.", 3),
            fact("No restart is needed for the deploy.", 4),
            fact("A restart is needed for the deploy.", 5),
            new_record("The deploy runs on Friday.", type="procedure", created_at=at(1, 6)),
        ],
        "slots": [
            fact("Owner is Dana.", 1, slots={"owner": "dana", "db": "postgres"}),
            fact("Owner is Sam.", 2, slots={"owner": "sam"}),
            fact("Database is Postgres.", 3, slots={"db": "postgres"}),
            fact("Database is MySQL.", 4, slots={"db": "mysql", "owner": "dana"}),
            fact("Runbook.", 5, slots={"steps": ["a", "b"]}),
            fact("Runbook again.", 6, slots={"steps": ["a", "c"]}),
        ],
        "thresholds-at-the-boundary": [  # trigram Jaccard 3/5 and friends
            fact("abcde", 1), fact("abcdf", 2), fact("abcd", 3), fact("abc", 4),
            fact("ab", 5), fact("a", 6), fact("b", 7),
        ],
    }


@pytest.mark.parametrize("name", sorted(_hand_corpora()))
@pytest.mark.parametrize(("near", "contra"), [("0.6", "0.5"), ("0", "0"), ("1", "1"),
                                              ("0.5", "0.25"), ("0.75", "0.6")])
def test_hand_corpora(name: str, near: str, contra: str) -> None:
    records = _hand_corpora()[name]
    check_candidates(records, near, contra)
    check_report(records, near, contra)


def test_a_generated_corpus_of_typical_records() -> None:
    from benchmarks._data import typical_records

    records = [MemoryRecord.model_validate(r) for r in typical_records(300, seed=41)]
    check_candidates(records, "0.6", "0.5")
    check_report(records, "0.6", "0.5")


# -- the prefix filter on its own ---------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text("abcdefgh", min_size=1, max_size=3),
                       st.frozensets(st.sampled_from("abcdefghijklmnop"), max_size=10),
                       max_size=12),
       st.sampled_from(("0.1", "0.3", "1/3", "0.5", "0.6", "2/3", "0.8", "1")))
def test_similar_pairs_keeps_every_pair_reaching_the_threshold(
        sets: dict[str, frozenset[str]], spelled: str) -> None:
    threshold = Fraction(spelled)
    decimal = Decimal(threshold.numerator) / Decimal(threshold.denominator)
    found = similar_pairs(sets, decimal)
    assert found is not None
    for a, b in combinations(sorted(sets), 2):
        union = sets[a] | sets[b]
        if union and Fraction(len(sets[a] & sets[b]), len(union)) >= threshold:
            assert (a, b) in found


def test_similar_pairs_declines_a_zero_threshold() -> None:
    assert similar_pairs({"a": frozenset("x"), "b": frozenset("y")}, Decimal(0)) is None


def test_subclasses_that_change_the_verdict_fall_back_to_blocking() -> None:
    records = _hand_corpora()["stopwords-only"] + _hand_corpora()["negations"]
    rng = random.Random(3)
    rng.shuffle(records)

    class Always(TrigramNearDupOperator):
        def similarity(self, a: MemoryRecord, b: MemoryRecord, features: Any) -> float | None:
            return 1.0

    pairs = [(a.id, b.id) for a, b in Always().candidates(records)]
    assert pairs == brute_force(records, lambda a, b: True)


# -- block purging -------------------------------------------------------------------------------


def _capped(near: str, contra: str, cap: int | None) -> tuple[TrigramNearDupOperator,
                                                                HeuristicContradictionOperator]:
    return (TrigramNearDupOperator(threshold=near, max_block=cap),
            HeuristicContradictionOperator(threshold=contra, max_block=cap))


def check_purged(records: list[MemoryRecord], near: str, contra: str, cap: int) -> None:
    """Capped candidates are a subset of brute force, and every missed pair's records are cut.

    (The pass reports an operator's cuts as deferred one for one; a whole report is
    not compared with brute force because a missed merge changes what later merges
    and passes see.)
    """
    merge, contradiction = _capped(near, contra, cap)
    checks: list[tuple[TrigramNearDupOperator | HeuristicContradictionOperator, Any]] = [
        (merge, lambda a, b: merge.propose_merge(a, b, now=NOW) is not None),
        (contradiction, lambda a, b: contradiction.propose_transition(a, b, now=NOW) is not None),
    ]
    for operator, acts in checks:
        found = operator.candidate_set(records)
        got = [(a.id, b.id) for a, b in found.pairs]
        expected = brute_force(records, acts)
        assert set(got) <= set(expected) and got == sorted(got)
        cut = {c.record_id for c in found.cuts}
        assert all(a in cut and b in cut for a, b in set(expected) - set(got))
        assert all(size > cap for c in found.cuts for _, size in c.features)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora(), st.sampled_from(_NEAR), st.sampled_from(_CONTRA), st.integers(1, 4))
def test_a_small_cap_only_drops_pairs_of_cut_records(records: list[MemoryRecord], near: str,
                                                     contra: str, cap: int) -> None:
    check_purged(records, near, contra, cap)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora(), st.sampled_from(_NEAR), st.sampled_from(_CONTRA))
def test_a_cap_above_every_block_changes_nothing(records: list[MemoryRecord], near: str,
                                                 contra: str) -> None:
    config = ConsolidationConfig(near_dup_threshold=Decimal(near),
                                 contradiction_threshold=Decimal(contra),
                                 max_block=len(records))
    capped, uncapped = InMemoryRecordStore(), InMemoryRecordStore()
    for record in records:
        capped.put(record)
        uncapped.put(record)
    got = consolidate(capped, now=NOW, config=config, operators=default_operators(config))
    free = ConsolidationOperators(*_capped(near, contra, None))
    assert got.model_dump() == consolidate(uncapped, now=NOW, config=config,
                                           operators=free).model_dump()
    assert not any("block purging" in d.reason for d in got.deferred)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora(), st.integers(1, 3))
def test_a_capped_report_merges_only_what_brute_force_merges(records: list[MemoryRecord],
                                                             cap: int) -> None:
    config = ConsolidationConfig(max_block=cap)
    store = InMemoryRecordStore()
    for record in records:
        store.put(record)
    report = consolidate(store, now=NOW, config=config)
    merge = TrigramNearDupOperator()
    acted = set(brute_force(records, lambda a, b: merge.propose_merge(a, b, now=NOW) is not None))
    for action in report.by_pass("near-dup"):
        assert tuple(sorted(action.record_ids[:2])) in acted
    ids = set(store.ids())  # a merged record the pass created may be cut later in it
    for deferral in report.deferred:
        if "block purging" in deferral.reason:
            assert deferral.pass_name in ("near-dup", "contradiction")
            assert len(deferral.record_ids) == 1 and deferral.record_ids[0] in ids
    cut = [(d.pass_name, d.record_ids[0]) for d in report.deferred
           if "block purging" in d.reason]
    assert len(cut) == len(set(cut))


def test_the_typical_corpus_under_a_small_cap() -> None:
    from benchmarks._data import typical_records

    records = [MemoryRecord.model_validate(r) for r in typical_records(300, seed=41)]
    check_purged(records, "0.6", "0.5", 25)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text("abcdefgh", min_size=1, max_size=3),
                       st.frozensets(st.sampled_from("abcdefghijklmnop"), max_size=10),
                       max_size=12),
       st.sampled_from(("0.1", "1/3", "0.5", "2/3", "1")), st.integers(1, 5))
def test_prefix_join_misses_only_pairs_it_reports_cut(
        sets: dict[str, frozenset[str]], spelled: str, cap: int) -> None:
    threshold = Fraction(spelled)
    join = prefix_join(sets, Decimal(threshold.numerator) / Decimal(threshold.denominator), cap)
    assert join is not None
    assert all(join.sizes[t] > cap for tokens in join.cut.values() for t in tokens)
    for a, b in combinations(sorted(sets), 2):
        union = sets[a] | sets[b]
        if union and Fraction(len(sets[a] & sets[b]), len(union)) >= threshold:
            assert (a, b) in join.pairs or (a in join.cut and b in join.cut)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text("abcd", min_size=1, max_size=3),
                       st.frozensets(st.sampled_from("abcdefghijklmnop"), max_size=10),
                       max_size=8),
       st.dictionaries(st.text("wxyz", min_size=1, max_size=3),
                       st.frozensets(st.sampled_from("abcdefghijklmnop"), max_size=10),
                       max_size=8),
       st.sampled_from(("0.1", "1/3", "0.5", "2/3", "1")), st.none() | st.integers(1, 5))
def test_cross_join_keeps_every_cross_pair_reaching_the_threshold(
        left: dict[str, frozenset[str]], right: dict[str, frozenset[str]], spelled: str,
        cap: int | None) -> None:
    threshold = Fraction(spelled)
    join = cross_join(left, right, Decimal(threshold.numerator) / Decimal(threshold.denominator),
                      cap)
    assert join is not None
    assert all(tuple(sorted(p)) == p and (p[0] in left) != (p[1] in left) for p in join.pairs)
    for a in left:
        for b in right:
            union = left[a] | right[b]
            pair = (a, b) if a < b else (b, a)
            reaches = bool(union) and Fraction(len(left[a] & right[b]), len(union)) >= threshold
            if reaches:
                assert pair in join.pairs or (a in join.cut and b in join.cut)
            elif cap is None:
                # Why: without a cap every candidate is verified exactly (bit sets), so the
                # join returns the pairs reaching the threshold and nothing else.
                assert pair not in join.pairs


def test_a_generated_agent_shaped_memory() -> None:
    from benchmarks._data import agent_records

    records = [MemoryRecord.model_validate(r) for r in agent_records(400, seed=5)]
    check_candidates(records, "0.6", "0.5")
    check_report(records, "0.6", "0.5")


# -- a hot entity: slot conflicts are a grouping, not a pair list (CONS-8) ----------------------


def _hot_entity(count: int, seed: int) -> list[MemoryRecord]:
    """``count`` facts about one entity: most give its one slot one of seven values, some
    hold a second key too, some negate a value in the body only; plus unrelated facts."""
    rng = random.Random(seed)
    values = ("postgres", "mysql", "sqlite", "oracle", "db2", 5432, ["a", "b"])
    records: list[MemoryRecord] = []
    for index in range(count):
        value = values[rng.randrange(len(values))]
        roll = rng.random()
        created = at(1 + index % 27, index)
        if roll < 0.1:
            body = f"The staging database is not {value} any more"
            records.append(new_record(body, created_at=created))
            continue
        slots: dict[str, Any] = {"staging database": value}
        if roll < 0.3:
            slots["staging region"] = rng.choice(("eu", "us", "ap"))
        if roll > 0.9:
            slots = {"prod database": value}
        body = f"The staging database is {value} (note {index})"
        records.append(new_record(body, created_at=created, slots=slots,
                                  confidence=rng.choice(("0.5000", "0.9000", "1.0000"))))
    return records


def test_a_hot_entity_reports_as_the_pair_list_does() -> None:
    """A second pass too, over a store a first pass left with open transitions."""
    records = _hot_entity(160, seed=3)
    check_report(records, "0.6", "0.5")
    config = ConsolidationConfig()
    fast, slow = InMemoryRecordStore(), InMemoryRecordStore()
    for record in records[:100]:
        fast.put(record)
        slow.put(record)
    consolidate(fast, now=NOW, config=config)
    consolidate(slow, now=NOW, config=config)
    for record in records[100:]:
        fast.put(record)
        slow.put(record)
    later = "2026-04-01T00:00:00.000Z"
    got = consolidate(fast, now=later, config=config)
    want = consolidate(slow, now=later, config=config, operators=ConsolidationOperators(
        BlockedNearDup(), BlockedContradiction()))
    assert got.model_dump() == want.model_dump()
    assert snapshot(fast) == snapshot(slow)
    assert any(len(d.record_ids) > 2 for d in got.deferred)


def test_every_waiting_slot_pair_is_covered_by_a_group() -> None:
    """Each slot-conflict pair not opened lies inside one deferral of its slot key, and the
    counts in the reasons add up to the pairs that wait."""
    records = _hot_entity(120, seed=8)
    store = InMemoryRecordStore()
    for record in records:
        store.put(record)
    report = consolidate(store, now=NOW)
    opened = {frozenset(a.record_ids) for a in report.by_pass("contradiction")}
    claims = [r for r in records if r.slots]
    waiting = 0
    for a, b in combinations(sorted(claims, key=lambda r: r.id), 2):
        keys = sorted(k for k in a.slots.keys() & b.slots.keys() if a.slots[k] != b.slots[k])
        if not keys or frozenset((a.id, b.id)) in opened:
            continue
        waiting += 1
        assert any(f"slot {keys[0]!r}" in d.reason and {a.id, b.id} <= set(d.record_ids)
                   for d in report.deferred), (a.id, b.id)
    stated = 0
    for deferral in report.deferred:
        if deferral.reason.startswith("slot 'staging database'"):
            stated += int(deferral.reason.split(" detected ")[0].rsplit(" ", 1)[1])
    first_key = sum(1 for a, b in combinations(claims, 2)
                    if "staging database" in a.slots.keys() & b.slots.keys()
                    and a.slots["staging database"] != b.slots["staging database"]
                    and frozenset((a.id, b.id)) not in opened)
    assert stated == first_key and waiting >= first_key


def test_a_hot_entity_asks_the_operator_linearly(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counting, not timing: the default pass asks about the pairs it opens and the negation
    pairs, while the pair list asks about every slot-conflict pair."""
    calls = [0]
    original = HeuristicContradictionOperator.propose_transition

    def counted(self: HeuristicContradictionOperator, a: MemoryRecord, b: MemoryRecord, *,
                now: str) -> Proposal | None:
        calls[0] += 1
        return original(self, a, b, now=now)

    monkeypatch.setattr(HeuristicContradictionOperator, "propose_transition", counted)
    asked = {}
    for count in (100, 400):
        store = InMemoryRecordStore()
        for record in _hot_entity(count, seed=count):
            store.put(record)
        calls[0] = 0
        consolidate(store, now=NOW)
        asked[count] = calls[0]
    negations = sum(1 for r in _hot_entity(400, seed=400) if " not " in r.body)
    assert asked[400] <= 400 + negations * 400 // 7 + 50
    assert asked[400] < 6 * asked[100]


# -- a hot entity's negations: many waiting pairs, each its own deferral (CONS-8) ---------------

_HOT_VALUES = ("postgres", "mysql", "api key rotation", "ubuntu 24 04", "blue green deploy",
               "sqlite", "the eu west region", "oat milk")


def _hot_negations(count: int, seed: int) -> list[MemoryRecord]:
    """``count`` claims about one three-word entity: plain statements in several shapes
    (some with its slot, a few procedures), and negations of any value in the body only,
    so most negated records contradict most plain ones and their further pairs wait."""
    rng = random.Random(seed)
    people = ("Dana", "Priya", "Marcus")
    records: list[MemoryRecord] = []
    for index in range(count):
        value = _HOT_VALUES[rng.randrange(len(_HOT_VALUES))]
        created = at(1 + index % 27, index)
        roll = rng.random()
        if roll < 0.2:
            body = rng.choice((f"The blue staging database is not {value} any more.",
                               f"The blue staging database is no longer {value}.",
                               f"{rng.choice(people)} says the blue staging database is "
                               f"not {value}."))
            records.append(new_record(body, created_at=created))
            continue
        if roll < 0.3:
            body = (f"To restart the blue staging database, check it is {value}, then tell "
                    f"{rng.choice(people)}.")
            records.append(new_record(body, type="procedure", created_at=created))
            continue
        body = rng.choice((f"The blue staging database is {value}.",
                           f"{rng.choice(people)} says the blue staging database is {value}.",
                           f"{rng.choice(people)} prefers {value} for the blue staging "
                           f"database.",
                           f"The blue staging database is {value}. {rng.choice(people)} "
                           f"confirmed it on day {index}."))
        slots: dict[str, Any] = ({"blue staging database": value} if rng.random() < 0.3
                                 else {})
        records.append(new_record(body, created_at=created, slots=slots,
                                  confidence=rng.choice(("0.5000", "0.7500", "1.0000"))))
    return records


@pytest.mark.parametrize("seed", [1, 2])
def test_a_hot_entity_of_negations_reports_as_the_pair_list_does(seed: int) -> None:
    records = _hot_negations(180, seed=seed)
    check_candidates(records, "0.6", "0.5")
    check_report(records, "0.6", "0.5")
    store = InMemoryRecordStore()
    for record in records:
        store.put(record)
    report = consolidate(store, now=NOW)
    negation_waits = [d for d in report.deferred
                      if len(d.record_ids) == 2 and "negat" in d.reason]
    # Why: the store is built so that most negation pairs wait; a corpus where none did
    # would not exercise the per-pair deferrals at all.
    assert len(negation_waits) > len(records)
