"""Consolidation (SPEC section 9, CONS-1..12): passes, gate, report, determinism."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memspec import LimitError
from memspec.protocol import check_result
from memspec.reference.pipeline import (
    PASSES,
    PROMOTION_SLOT,
    ConsolidationConfig,
    ConsolidationOperators,
    ContradictionOperator,
    HeuristicContradictionOperator,
    HeuristicResolutionOperator,
    NearDupOperator,
    Resolution,
    ResolutionOperator,
    TrigramNearDupOperator,
    candidate_pairs,
    consolidate,
    default_operators,
)
from memspec.reference.ports import RecordStore
from memspec.reference.proposals import Proposal, ProposalKind, apply_proposal
from memspec.reference.records import MemoryRecord, RecordState, RecordType
from memspec.reference.stores import InMemoryRecordStore
from tests.reference.conftest import at, new_record, open_store, snapshot

NOW = "2026-03-01T00:00:00.000Z"


def put(store: RecordStore, *records: MemoryRecord) -> None:
    for record in records:
        store.put(record)


def state(store: RecordStore, record: MemoryRecord) -> RecordState:
    return store.get(record.id).state


def episode(body: str, day: int, *, tags: tuple[str, ...] = (), **kwargs: Any) -> MemoryRecord:
    return new_record(body, type="episode", created_at=at(day), occurred_at=at(day), tags=tags,
                      **kwargs)


def fresh() -> InMemoryRecordStore:
    return InMemoryRecordStore()


# -- report shape and pass order ----------------------------------------------------------


def _scenario(store: RecordStore) -> None:
    put(store,
        new_record("Backups run nightly at two.", created_at=at(1)),
        new_record("Backups run nightly at two.", created_at=at(2)),
        new_record("The release train leaves every Thursday morning", created_at=at(3),
                   confidence=0.6),
        new_record("The release train leaves every Thursday mornings", created_at=at(4)),
        new_record("The staging database is Postgres.", created_at=at(5)),
        new_record("The staging database is not Postgres.", created_at=at(6)),
        *(episode(f"Deploy number {i} needed a manual rollback", i + 1, tags=("deploy",))
          for i in range(3)))


def test_passes_run_in_order_and_report_validates(store: RecordStore) -> None:
    _scenario(store)
    report = consolidate(store, now=NOW)
    passes = [a.pass_name for a in report.actions]
    assert passes == ["exact-dedup", "near-dup", "contradiction", "promotion"]
    assert passes == sorted(passes, key=PASSES.index)
    wire = report.model_dump()
    check_result("consolidate", wire)
    assert set(wire) == {"actions", "rejections", "deferred"}
    assert report.rejections == () and report.deferred == ()
    for action in report.actions:
        assert action.reason
        assert len(action.after) == len(action.record_ids)
        assert action.after == tuple(store.get(i).state.value for i in action.record_ids)
    assert set(report.touched) >= {i for a in report.actions for i in a.record_ids}


def test_same_store_config_and_now_give_the_same_report(tmp_path: Path) -> None:
    reports = []
    for kind in ("memory", "file", "sqlite"):
        store = open_store(kind, tmp_path / kind)
        _scenario(store)
        reports.append(consolidate(store, now=NOW).model_dump())
        store.close()
    assert reports[0] == reports[1] == reports[2]


def test_a_second_pass_changes_nothing(store: RecordStore) -> None:
    _scenario(store)
    consolidate(store, now=NOW)
    before = snapshot(store)
    report = consolidate(store, now="2026-03-02T00:00:00.000Z")
    assert report.actions == () and report.rejections == ()
    assert snapshot(store) == before


# -- exact dedup (CONS-5) -------------------------------------------------------------------


def test_exact_dedup_keeps_the_strongest_copy() -> None:
    store = fresh()
    weak = new_record("Tea is served at four.", created_at=at(1), confidence=0.5)
    strong = new_record("Tea is served at four.", created_at=at(3), confidence=0.9)
    later = new_record("Tea is served at four.", created_at=at(4), confidence=0.9)
    put(store, weak, strong, later)
    report = consolidate(store, now=NOW)
    actions = report.by_pass("exact-dedup")
    assert [a.record_ids for a in actions] == [(later.id, strong.id), (weak.id, strong.id)]
    assert all(a.before == ("active", "active") and a.after == ("superseded", "active")
               for a in actions)
    for loser in (weak, later):
        old = store.get(loser.id)
        assert old.state is RecordState.SUPERSEDED and old.superseded_by == strong.id
        assert old.state_reason == f"exact duplicate of {strong.id}"
    keeper_history = store.history(strong.id)
    assert [v.supersedes for v in keeper_history] == [None, later.id, weak.id]
    assert store.get(strong.id).state is RecordState.ACTIVE


def test_exact_dedup_ties_break_on_created_at_then_id() -> None:
    store = fresh()
    first = new_record("Same words.", created_at=at(1))
    second = new_record("Same words.", created_at=at(2))
    put(store, second, first)
    consolidate(store, now=NOW)
    assert state(store, first) is RecordState.ACTIVE
    assert store.get(second.id).superseded_by == first.id


def test_exact_dedup_ignores_differing_slots_and_types() -> None:
    store = fresh()
    a = new_record("Port is 8080.", created_at=at(1), slots={"port": 8080})
    b = new_record("Port is 8080.", created_at=at(2), slots={"port": "8080"})
    c = new_record("Port is 8080.", type="procedure", created_at=at(3))
    put(store, a, b, c)
    assert consolidate(store, now=NOW).by_pass("exact-dedup") == ()


# -- near-dup (CONS-6, CONS-12) ----------------------------------------------------------


def test_near_dup_merge_links_both_sides() -> None:
    store = fresh()
    a = new_record("The office wifi password rotates every month", created_at=at(1),
                   confidence=0.9, tags=("wifi",))
    b = new_record("The office wifi password rotates every months", created_at=at(2),
                   confidence=0.4, tags=("office",))
    put(store, a, b)
    (action,) = consolidate(store, now=NOW).by_pass("near-dup")
    merged = store.get(action.record_ids[2])
    assert action.record_ids[:2] == (a.id, b.id)
    assert action.before == ("active", "active")
    assert action.after == ("superseded", "superseded", "active")
    assert set(merged.evidence) == {a.id, b.id}
    assert merged.body == a.body and merged.tags == ("wifi", "office")
    assert merged.confidence == "0.9000" and merged.provenance.kind == "consolidation"
    assert store.history(merged.id)[0].supersedes == a.id
    assert store.get(a.id).superseded_by == merged.id == store.get(b.id).superseded_by


@pytest.mark.parametrize(("first", "second", "kwargs"), [
    ("I walked the dog in the park today", "I walked the dog in the park today!", "episode"),
    ("The build server runs Ubuntu", "The build server runs Ubuntus", "slots"),
    ("The build server runs Ubuntu", "The build server never runs Ubuntu", "polarity"),
    ("Alice is allergic to pollen", "Alice is allergic to peanuts", "information"),
    ("Lunch is at noon on weekdays", "Lunch is at noon on most weekdays", "information"),
    ("Alice owes Bob ten euros", "Bob owes Alice ten euros", "information"),
    ("Coffee with sugar", "Coffee without sugar", "information"),
    ("The door code is 4711", "The door code is 4712", "information"),
])
def test_near_dup_abstains(first: str, second: str, kwargs: str) -> None:
    operator = TrigramNearDupOperator(threshold="0.5" if kwargs != "information" else "0")
    if kwargs == "episode":
        a, b = episode(first, 1), episode(second, 2)
    elif kwargs == "slots":
        a = new_record(first, created_at=at(1), slots={"os": "ubuntu 22"})
        b = new_record(second, created_at=at(2), slots={"os": "ubuntu 24"})
    else:
        a, b = new_record(first, created_at=at(1)), new_record(second, created_at=at(2))
    assert operator.propose_merge(a, b, now=NOW) is None


def test_near_dup_threshold_is_configurable() -> None:
    a = new_record("The lunch is at noon on weekdays", created_at=at(1))
    b = new_record("Lunch is at noon on weekdays!", created_at=at(2))
    for threshold, merges in (("0.95", 0), ("0.5", 1)):
        store = fresh()
        put(store, a, b)
        config = ConsolidationConfig(near_dup_threshold=Decimal(threshold))
        assert len(consolidate(store, now=NOW, config=config).by_pass("near-dup")) == merges


class _BadMerger(NearDupOperator):
    """An out-of-authority operator: proposes whatever it was given."""

    def __init__(self, make: str) -> None:
        self.make = make

    def propose_merge(self, a: MemoryRecord, b: MemoryRecord, *, now: str) -> Proposal | None:
        if self.make == "archive":
            return Proposal(kind=ProposalKind.ARCHIVE, target_id=a.id, reason="go away")
        evidence = (a.id,) if self.make == "one-sided" else (a.id, b.id)
        reason = "" if self.make == "no-reason" else "merge"
        merged = MemoryRecord.create("fact", a.body + " (merged)", {"kind": "llm"},
                                     created_at=now, evidence=evidence, supersedes=a.id)
        return Proposal(kind=ProposalKind.SUPERSEDE, record=merged, target_id=a.id,
                        reason=reason)


@pytest.mark.parametrize(("make", "code"), [
    ("archive", "proposal"), ("one-sided", "proposal"), ("no-reason", "proposal"),
])
def test_out_of_authority_or_illegal_merges_are_rejected_not_applied(make: str,
                                                                     code: str) -> None:
    store = fresh()
    put(store, new_record("Alpha beta gamma.", created_at=at(1)),
        new_record("Alpha beta delta.", created_at=at(2)))
    before = snapshot(store)
    operators = ConsolidationOperators(near_dup=_BadMerger(make),
                                       contradiction=HeuristicContradictionOperator())
    report = consolidate(store, now=NOW, operators=operators)
    (rejection,) = report.rejections
    assert rejection.pass_name == "near-dup" and rejection.error == code
    assert report.model_dump()["rejections"][0]["code"] == code
    assert snapshot(store) == before and report.actions == ()


# -- contradiction (CONS-7, CONS-8, CONS-9) ------------------------------------------------


def test_polarity_contradiction_opens_a_transition() -> None:
    store = fresh()
    x = new_record("The staging database is Postgres.", created_at=at(1))
    not_x = new_record("The staging database is not Postgres.", created_at=at(2))
    put(store, x, not_x)
    (action,) = consolidate(store, now=NOW).by_pass("contradiction")
    assert action.after == ("transitional", "transitional")
    a, b = store.get(x.id), store.get(not_x.id)
    assert a.transition == b.transition and a.transition is not None
    assert set(a.transition.sides) == {x.id, not_x.id}
    assert a.body == x.body and b.body == not_x.body


def test_slot_disagreement_is_a_contradiction() -> None:
    store = fresh()
    a = new_record("The build runner uses Java 17.", created_at=at(1), slots={"java": "17"})
    b = new_record("Our CI pipeline uses Java 21.", created_at=at(2), slots={"java": "21"})
    put(store, a, b)
    (action,) = consolidate(store, now=NOW).by_pass("contradiction")
    assert "java" in action.reason and state(store, a) is RecordState.TRANSITIONAL


def test_a_record_joins_at_most_one_transition_per_pass() -> None:
    store = fresh()
    x = new_record("The cache layer is enabled in production", created_at=at(1))
    no_1 = new_record("The cache layer is not enabled in production", created_at=at(2))
    no_2 = new_record("Production never has the cache layer enabled", created_at=at(3))
    put(store, x, no_1, no_2)
    report = consolidate(store, now=NOW)
    assert len(report.by_pass("contradiction")) == 1
    (deferred,) = report.deferred
    assert deferred.pass_name == "contradiction" and x.id in deferred.record_ids
    assert sum(store.get(r.id).state is RecordState.TRANSITIONAL for r in (x, no_1, no_2)) == 2


@pytest.mark.parametrize("kind", ["episode", "rule"])
def test_episodes_and_rules_are_never_contradiction_candidates(kind: str) -> None:
    store = fresh()
    base = new_record("Evidence for the rules.", created_at=at(1))
    put(store, base)
    extra = {"evidence": (base.id,)} if kind == "rule" else {"occurred_at": at(2)}
    a = new_record("The nightly job is fast", type=kind, created_at=at(2), **extra)
    b = new_record("The nightly job is not fast", type=kind, created_at=at(3), **extra)
    put(store, a, b)
    assert consolidate(store, now=NOW).by_pass("contradiction") == ()


class _Archiver(ContradictionOperator):
    def propose_transition(self, a: MemoryRecord, b: MemoryRecord, *,
                           now: str) -> Proposal | None:
        return Proposal(kind=ProposalKind.ARCHIVE, target_id=a.id, reason="contradicts")


def test_contradiction_operator_cannot_archive() -> None:
    store = fresh()
    put(store, new_record("Snow is cold.", created_at=at(1)),
        new_record("Snow is not cold.", created_at=at(2)))
    before = snapshot(store)
    operators = ConsolidationOperators(near_dup=TrigramNearDupOperator(),
                                       contradiction=_Archiver())
    report = consolidate(store, now=NOW, operators=operators)
    assert [r.error for r in report.rejections] == ["proposal"]
    assert snapshot(store) == before


# -- resolution -----------------------------------------------------------------------------


def _open_pair(store: RecordStore, kind_a: str = "conversation",
               kind_b: str = "conversation") -> tuple[MemoryRecord, MemoryRecord]:
    old = MemoryRecord.create("fact", "The VPN gateway is online", {"kind": kind_a},
                              created_at=at(1))
    new = MemoryRecord.create("fact", "The VPN gateway is not online", {"kind": kind_b},
                              created_at=at(2))
    put(store, old, new)
    apply_proposal(store, Proposal(kind=ProposalKind.TRANSITION, target_id=old.id,
                                   other_id=new.id, reason="disagree"), now=at(3))
    return old, new


def test_without_a_resolver_disputes_stay_open() -> None:
    store = fresh()
    old, new = _open_pair(store)
    assert default_operators().resolver is None
    consolidate(store, now=NOW)
    assert state(store, old) is state(store, new) is RecordState.TRANSITIONAL


def test_resolver_newer_wins_only_between_like_records() -> None:
    store = fresh()
    old, new = _open_pair(store)
    report = consolidate(store, now=NOW, operators=default_operators(auto_resolve=True))
    (action,) = report.by_pass("resolution")
    assert action.record_ids == (new.id, old.id)
    assert action.before == ("transitional", "transitional")
    assert action.after == ("active", "superseded")
    assert store.get(old.id).superseded_by == new.id


def test_resolver_abstains_across_sources_but_corrections_win() -> None:
    store = fresh()
    old, new = _open_pair(store, "conversation", "document")
    consolidate(store, now=NOW, operators=default_operators(auto_resolve=True))
    assert state(store, old) is RecordState.TRANSITIONAL
    resolver = HeuristicResolutionOperator()
    corrected = store.get(old.id)
    other = store.get(new.id)
    fixed = MemoryRecord.create("fact", "x y z", {"kind": "correction"}, created_at=at(1))
    assert resolver.propose_resolution(fixed, other, now=NOW) == Resolution(
        fixed.id, other.id, "explicit user correction wins")
    assert resolver.propose_resolution(corrected, other, now=NOW) is None


class _Rogue(ResolutionOperator):
    def propose_resolution(self, a: MemoryRecord, b: MemoryRecord, *,
                           now: str) -> Resolution | None:
        return Resolution(a.id, "mem:" + "0" * 32, "pick a stranger")


def test_a_verdict_outside_the_pair_is_rejected() -> None:
    store = fresh()
    _open_pair(store)
    before = snapshot(store)
    operators = ConsolidationOperators(TrigramNearDupOperator(),
                                       HeuristicContradictionOperator(), _Rogue())
    report = consolidate(store, now=NOW, operators=operators)
    assert [(r.pass_name, r.error) for r in report.rejections] == [("resolution", "proposal")]
    assert snapshot(store) == before


# -- promotion (CONS-10) ------------------------------------------------------------------


def test_three_episodes_with_one_signature_promote_one_rule() -> None:
    store = fresh()
    episodes = [episode(f"Standup ran long on day {i}", i, tags=("standup", "meetings"))
                for i in (3, 1, 2)]
    put(store, *episodes)
    (action,) = consolidate(store, now=NOW).by_pass("promotion")
    rule = store.get(action.record_ids[0])
    assert action.before == () and action.after == ("active",)
    assert rule.type is RecordType.RULE and rule.provenance.kind == "consolidation"
    assert rule.evidence == tuple(sorted(e.id for e in episodes))
    assert rule.slots[PROMOTION_SLOT] == {"tags": ["meetings", "standup"]}
    assert rule.tags == ("meetings", "standup")
    assert consolidate(store, now="2026-03-02T00:00:00.000Z").by_pass("promotion") == ()
    put(store, episode("Standup ran long again", 9, tags=("meetings", "standup")))
    assert consolidate(store, now="2026-03-03T00:00:00.000Z").by_pass("promotion") == ()


def test_promotion_uses_slot_keys_without_tags_and_respects_the_threshold() -> None:
    store = fresh()
    put(store, *(episode(f"Oncall page number {i}", i, slots={"service": f"s{i}"})
                 for i in range(1, 3)))
    assert consolidate(store, now=NOW).by_pass("promotion") == ()
    config = ConsolidationConfig(promotion_threshold=2)
    (action,) = consolidate(store, now=NOW, config=config).by_pass("promotion")
    assert store.get(action.record_ids[0]).slots[PROMOTION_SLOT] == {"slot_keys": ["service"]}


def test_an_archived_rule_does_not_suppress_promotion() -> None:
    store = fresh()
    put(store, *(episode(f"Cache miss storm {i}", i, tags=("cache",)) for i in range(1, 4)))
    (action,) = consolidate(store, now=NOW).by_pass("promotion")
    apply_proposal(store, Proposal(kind=ProposalKind.ARCHIVE, target_id=action.record_ids[0],
                                   reason="retired"), now=NOW)
    later = "2026-03-05T00:00:00.000Z"
    assert len(consolidate(store, now=later).by_pass("promotion")) == 1


# -- flag sweep (CONS-11, RED-8) ------------------------------------------------------------


def _rule_over(store: RecordStore, *evidence: MemoryRecord) -> MemoryRecord:
    rule = new_record("Always check the evidence", type="rule", created_at=at(5),
                      evidence=tuple(e.id for e in evidence))
    put(store, rule)
    return rule


def test_sweep_flags_a_rule_whose_evidence_is_gone_and_unflags_on_live_evidence() -> None:
    store = fresh()
    ev = new_record("Evidence one.", created_at=at(1))
    put(store, ev)
    rule = _rule_over(store, ev)
    missing = new_record("Never stored.", created_at=at(2))
    other = MemoryRecord.create("rule", "Another rule", {"kind": "t"}, created_at=at(6),
                                evidence=(missing.id,))
    put(store, other)
    apply_proposal(store, Proposal(kind=ProposalKind.ARCHIVE, target_id=ev.id, reason="old"),
                   now=at(7))
    report = consolidate(store, now=NOW)
    flags = report.by_pass("flag-sweep")
    assert [(a.action, a.record_ids) for a in flags] == [
        ("flag", (i,)) for i in sorted((rule.id, other.id))]
    assert all(a.before == a.after == ("active",) for a in flags)
    assert store.get(rule.id).flagged and store.get(other.id).flagged
    stale = store.get(rule.id).evolve(NOW, flagged=True, flag_reason="stale",
                                      evidence=(ev.id, new_record("Live.", created_at=at(2)).id))
    put(store, new_record("Live.", created_at=at(2)), stale)
    (unflag,) = consolidate(store, now="2026-03-02T00:00:00.000Z").by_pass("flag-sweep")
    assert unflag.action == "unflag" and not store.get(rule.id).flagged


def test_redacted_evidence_flags_its_rule(store: RecordStore) -> None:
    ev = new_record("Secret token is abc.", created_at=at(1))
    put(store, ev)
    rule = _rule_over(store, ev)
    store.redact(ev.id, reason="secret", now=at(8))  # type: ignore[attr-defined]
    consolidate(store, now=NOW)
    assert store.get(rule.id).flagged


# -- blocking and config ------------------------------------------------------------------


def test_candidate_pairs_are_blocked_on_shared_words_or_slot_keys() -> None:
    a = new_record("Apples are red", created_at=at(1))
    b = new_record("Bananas are yellow", created_at=at(2))
    c = new_record("Red apples taste sweet", created_at=at(3))
    d = new_record("Completely unrelated", created_at=at(4), slots={"colour": "x"})
    e = new_record("Nothing in common", created_at=at(5), slots={"colour": "y"})
    pairs = {frozenset((x.id, y.id)) for x, y in candidate_pairs([a, b, c, d, e])}
    assert pairs == {frozenset((a.id, c.id)), frozenset((d.id, e.id))}


@pytest.mark.parametrize("config", [
    {"near_dup_threshold": "1.5"}, {"near_dup_threshold": "x"}, {"promotion_threshold": 0},
    {"promotion_threshold": True}, {"bogus": 1}, "not-an-object",
])
def test_bad_config_is_a_typed_error(config: object) -> None:
    with pytest.raises(LimitError):
        ConsolidationConfig.from_wire(config)


def test_config_from_wire_reads_decimal_strings() -> None:
    config = ConsolidationConfig.from_wire({"near_dup_threshold": "0.75",
                                            "promotion_threshold": 4})
    assert config.near_dup_threshold == Decimal("0.75") and config.promotion_threshold == 4
    assert ConsolidationConfig.from_wire(None) == ConsolidationConfig()


def test_a_proposal_that_cannot_be_built_is_a_rejection_not_a_crash() -> None:
    store = fresh()
    put(store, new_record("Same words.", created_at=at(5)), new_record("Same words.",
                                                                       created_at=at(6)))
    before = snapshot(store)
    report = consolidate(store, now=at(1))  # a clock behind the records it would evolve
    assert [(r.pass_name, r.error) for r in report.rejections] == [
        ("exact-dedup", "record"), ("near-dup", "record")]
    assert report.actions == () and snapshot(store) == before


# -- block purging (max_block) -------------------------------------------------------------------


@pytest.mark.parametrize("cap", [0, -3, True, "5", 1.5, None])
def test_a_bad_max_block_is_a_limit_error(cap: object) -> None:
    with pytest.raises(LimitError):
        ConsolidationConfig.from_wire({"max_block": cap})


def test_max_block_is_read_from_the_wire() -> None:
    assert ConsolidationConfig.from_wire({"max_block": 7}).max_block == 7
    assert ConsolidationConfig().max_block is None  # exact unless the caller opts in


def test_slot_keys_are_never_purged() -> None:
    # CONS-13: the default operator finds every slot conflict, whatever the cap.
    store = fresh()
    records = [new_record(f"Owner note {i}.", created_at=at(i + 1),
                          slots={"owner": name})
               for i, name in enumerate(("dana", "sam", "lee"))]
    for record in records:
        store.put(record)
    capped = consolidate(store, now=NOW, config=ConsolidationConfig(max_block=2))
    assert capped.by_pass("contradiction")
    assert not any("slot key" in d.reason for d in capped.deferred)
    check_result("consolidate", capped.model_dump())


# -- near-dup safety: a merge never retires information the keeper lacks --------------------


def test_no_labelled_distinct_pair_is_merged() -> None:
    from benchmarks._neardup import labelled_pairs, merged

    pairs = labelled_pairs()
    assert len(pairs.distinct) >= 40
    assert any("pollen" in a and "peanuts" in b for a, b, _ in pairs.distinct)
    wrongly = [(a, b, why) for a, b, why in pairs.distinct if merged(a, b)]
    assert wrongly == []


def test_labelled_duplicates_merge_at_the_default_threshold() -> None:
    from benchmarks._neardup import labelled_pairs, merged

    missed = [(a, b, why) for a, b, why in labelled_pairs().duplicate if not merged(a, b)]
    assert missed == []


def test_distinct_worker_facts_all_stay_active() -> None:
    from benchmarks._neardup import worker_facts

    assert worker_facts(8, 100) == 800


_SAFETY_WORDS = ("alice", "bob", "is", "was", "allergic", "to", "pollen", "peanuts", "the", "a",
                 "with", "without", "4711", "4712", "owes", "in", "from", "months", "month")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(_SAFETY_WORDS), min_size=1, max_size=6),
       st.lists(st.sampled_from(_SAFETY_WORDS), min_size=1, max_size=6),
       st.sampled_from(("0", "0.3", "0.6")))
def test_a_merge_never_drops_a_word_the_keeper_lacks(first: list[str], second: list[str],
                                                     threshold: str) -> None:
    from memspec.reference.text import stem, tokenize

    a = new_record(" ".join(first) + ".", created_at=at(1))
    b = new_record(" ".join(second) + "!", created_at=at(2), confidence=0.5)
    if a.body == b.body:
        return
    store = fresh()
    put(store, a, b)
    config = ConsolidationConfig(near_dup_threshold=Decimal(threshold))
    if consolidate(store, now=NOW, config=config).by_pass("near-dup"):
        def words(body: str) -> list[str]:
            return [stem(t) for t in tokenize(body) if t not in ("a", "an", "the")]

        assert words(a.body) == words(b.body)
