"""The write stage and the extractors (WR-1..5)."""

from __future__ import annotations

from typing import Any

import pytest

from memspec import ProposalError, RecordError
from memspec.reference import lifecycle
from memspec.reference.pipeline import (
    HeuristicExtractor,
    IngestReport,
    SalienceScores,
    VerbatimExtractor,
    ingest,
)
from memspec.reference.pipeline.extractor import classify, split_sentences
from memspec.reference.pipeline.ingest import render_event
from memspec.reference.ports import RecordStore
from memspec.reference.proposals import Proposal, ProposalKind
from memspec.reference.records import MemoryRecord, Provenance, RecordType
from memspec.reference.search import InMemorySearchIndex

T0 = "2026-01-01T00:00:00.000Z"
T1 = "2026-01-02T00:00:00.000Z"
SOURCE = Provenance("conversation", "chat-1")


def rec(body: str = "The sky is blue.", *, type: str = "fact", ref: str = "test",
        **kwargs: Any) -> MemoryRecord:
    return MemoryRecord.create(type, body, {"kind": "conversation", "ref": ref},
                               created_at=T0, **kwargs)


def create(record: MemoryRecord) -> Proposal:
    return Proposal(ProposalKind.CREATE, record=record)


def snapshot(store: RecordStore) -> dict[str, tuple[bytes, ...]]:
    return {rid: tuple(r.canonical_bytes() for r in store.history(rid)) for rid in store.ids()}


def test_create_proposals_are_accepted_and_written(store: RecordStore) -> None:
    a, b = rec("first fact"), rec("second fact")
    index = InMemorySearchIndex()
    report = ingest([create(a), create(b)], store=store, now=T1, indexes=[index])
    assert report.accepted == (a.id, b.id)
    assert report.deduped == () and report.rejected == ()
    assert store.get(a.id) == a and store.get(b.id) == b
    assert [r.id for r in report.written] == [a.id, b.id]
    assert [rid for rid, _ in index.candidates("second", 5)] == [b.id]


def test_existing_id_is_a_reinforcement_not_a_write(store: RecordStore) -> None:
    record = rec()
    ingest([create(record)], store=store, now=T0)
    before = snapshot(store)
    scores = SalienceScores()
    report = ingest([create(record)], store=store, now=T1, scores=scores)
    assert report.deduped == (record.id,) and report.accepted == ()
    assert snapshot(store) == before
    assert scores.touches(record.id) == 1 and scores.last_touched(record.id) == T1


def test_duplicate_within_one_batch_is_deduped(store: RecordStore) -> None:
    record = rec()
    report = ingest([create(record), record_wire(record)], store=store, now=T0)
    assert report.accepted == (record.id,) and report.deduped == (record.id,)
    assert len(store.history(record.id)) == 1


def record_wire(record: MemoryRecord) -> dict[str, Any]:
    return create(record).model_dump()


def test_lifecycle_proposals_are_rejected(store: RecordStore) -> None:
    target = rec("target")
    successor = rec("successor", supersedes=target.id)
    store.put(target)
    before = snapshot(store)
    proposals = [
        Proposal(ProposalKind.SUPERSEDE, record=successor, target_id=target.id, reason="x"),
        Proposal(ProposalKind.ARCHIVE, target_id=target.id, reason="x"),
        Proposal(ProposalKind.TRANSITION, target_id=target.id, other_id=successor.id,
                 reason="x"),
    ]
    report = ingest(proposals, store=store, now=T1)
    assert [(r.index, r.code) for r in report.rejected] == [(0, "proposal"), (1, "proposal"),
                                                             (2, "proposal")]
    assert all("WR-1" in r.message for r in report.rejected)
    assert snapshot(store) == before


def test_rule_creation_is_rejected_and_reported(store: RecordStore) -> None:
    evidence = rec("an episode", type="episode")
    store.put(evidence)
    rule = rec("always do the thing", type="rule", evidence=[evidence.id])
    fact = rec("a plain fact")
    report = ingest([create(rule), create(fact)], store=store, now=T1)
    assert report.accepted == (fact.id,)
    assert [(r.index, r.code) for r in report.rejected] == [(0, "proposal")]
    assert "WR-2" in report.rejected[0].message
    assert rule.id not in store


def test_records_must_be_born_active_and_unlinked(store: RecordStore) -> None:
    old = rec("old")
    store.put(old)
    linked = rec("linked successor", supersedes=old.id)
    other = rec("other side")
    transitional, _ = lifecycle.begin_transition(rec("one side"), other, reason="r", now=T0)
    archived = lifecycle.archive(rec("gone"), reason="r", now=T0)
    before = snapshot(store)
    report = ingest([create(linked), create(transitional), create(archived)], store=store,
                    now=T1)
    assert report.accepted == () and report.deduped == ()
    assert [r.code for r in report.rejected] == ["proposal"] * 3
    assert all("WR-3" in r.message for r in report.rejected)
    assert snapshot(store) == before


def test_evolved_records_are_not_newly_born(store: RecordStore) -> None:
    evolved = rec("evolved").evolve(T1, tags=("x",))
    report = ingest([create(evolved)], store=store, now=T1)
    assert [r.code for r in report.rejected] == ["proposal"]  # OP-6: not newly born
    assert evolved.id not in store


def test_wire_proposals_and_malformed_items(store: RecordStore) -> None:
    good = rec("wire fact")
    bad_record = good.model_dump() | {"body": ""}
    items: list[Any] = [
        record_wire(good),
        {"kind": "create", "record": bad_record, "target_id": None, "other_id": None,
         "reason": ""},
        {"kind": "explode"},
        "not a proposal",
        {"kind": "create", "record": None, "target_id": None, "other_id": None, "reason": ""},
    ]
    report = ingest(items, store=store, now=T1)
    assert report.accepted == (good.id,)
    assert [(r.index, r.code) for r in report.rejected] == [
        (1, "record"), (2, "proposal"), (3, "proposal"), (4, "proposal"),
    ]


def test_report_wire_form(store: RecordStore) -> None:
    record = rec()
    store.put(record)
    report = ingest([create(rec("new")), create(record), {"kind": "archive"}], store=store,
                    now=T1)
    dumped = report.model_dump()
    assert set(dumped) == {"accepted", "deduped", "rejected"}
    assert dumped["accepted"] == [rec("new").id] and dumped["deduped"] == [record.id]
    assert dumped["rejected"][0]["index"] == 2 and dumped["rejected"][0]["code"] == "proposal"
    assert set(dumped["rejected"][0]) == {"index", "code", "message"}
    assert IngestReport().model_dump() == {"accepted": [], "deduped": [], "rejected": []}


def test_text_source_uses_the_verbatim_extractor_by_default(store: RecordStore) -> None:
    report = ingest("  The staging database is Postgres.  ", store=store, now=T0)
    (rid,) = report.accepted
    record = store.get(rid)
    assert record.body == "The staging database is Postgres."
    assert record.type is RecordType.FACT and record.created_at == T0
    assert record.slots == {"staging database": "postgres"}
    assert record.provenance == Provenance("conversation")
    again = ingest("The staging database is Postgres.", store=store, now=T0)
    assert again.deduped == (rid,)


def test_structured_events_are_rendered_as_sorted_lines(store: RecordStore) -> None:
    event = {"user": "sandro", "action": "deployed", "count": 3, "meta": {"b": 1, "a": [True]}}
    assert render_event(event) == (
        "action: deployed\ncount: 3\nmeta: {\"a\":[true],\"b\":1}\nuser: sandro"
    )
    report = ingest(event, store=store, now=T0, provenance=Provenance("event", "e-1"))
    assert store.get(report.accepted[0]).body == render_event(event)


def test_heuristic_extractor_through_ingest(store: RecordStore) -> None:
    text = ("The staging database is Postgres. Yesterday we migrated the cache. "
            "To rotate keys, run the vault script. Is it safe? Ok.")
    report = ingest(text, store=store, now=T1, extractor=HeuristicExtractor(tags=("chat",)),
                    provenance=SOURCE)
    records = [store.get(rid) for rid in report.accepted]
    assert [r.type for r in records] == [RecordType.FACT, RecordType.EPISODE,
                                         RecordType.PROCEDURE]
    assert all(r.confidence == "0.5000" and r.tags == ("chat",) for r in records)
    assert records[1].occurred_at == T0
    assert all(r.provenance == SOURCE for r in records)


@pytest.mark.parametrize("bad", [42, None, b"bytes"])
def test_bad_sources_raise(store: RecordStore, bad: object) -> None:
    with pytest.raises(ProposalError):
        ingest(bad, store=store, now=T0)  # type: ignore[arg-type]


# -- extractors -----------------------------------------------------------------------

@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("The build server runs Debian.", RecordType.FACT),
        ("Sandro prefers dark mode.", RecordType.FACT),
        ("Yesterday the deploy failed twice.", RecordType.EPISODE),
        ("We shipped the release last week.", RecordType.EPISODE),
        ("I fixed the flaky test.", RecordType.EPISODE),
        ("On 2025-12-24 the pager went off.", RecordType.EPISODE),
        ("Run the migrations before deploying.", RecordType.PROCEDURE),
        ("To reset the cache, delete the tmp folder.", RecordType.PROCEDURE),
        ("First, stop the workers.", RecordType.PROCEDURE),
        ("Always review the diff before merging.", RecordType.PROCEDURE),
        ("You should pin the versions.", RecordType.PROCEDURE),
    ],
)
def test_heuristic_sentence_shapes(sentence: str, kind: RecordType) -> None:
    shape = classify(sentence, T1)
    assert shape is not None and shape[0] is kind


@pytest.mark.parametrize("sentence", ["Is it down?", "Ok.", "Yes sure", "What now?"])
def test_questions_and_fragments_are_skipped(sentence: str) -> None:
    assert classify(sentence, T1) is None


def test_episode_event_time() -> None:
    assert classify("Yesterday the deploy failed.", T1) == (RecordType.EPISODE, T0)
    assert classify("We met the vendor today.", T1) == (RecordType.EPISODE, T1)
    assert classify("On 2025-12-24 the pager went off.", T1) == (
        RecordType.EPISODE, "2025-12-24T00:00:00.000Z")
    assert classify("On 2099-01-01 the pager went off.", T1) == (RecordType.EPISODE, T1)


def test_split_sentences_keeps_decimals_whole() -> None:
    assert split_sentences("Python 3.11 is required. Really!\nNext line") == [
        "Python 3.11 is required.", "Really!", "Next line",
    ]


def test_heuristic_extractor_never_proposes_rules_or_links() -> None:
    text = ("Always deploy on Tuesdays. Never deploy on Fridays. The rule is simple. "
            "Every release must be signed. The rule is simple.")
    proposals = HeuristicExtractor().extract(text, SOURCE, now=T0)
    assert len(proposals) == 4
    for proposal in proposals:
        assert proposal.kind is ProposalKind.CREATE and proposal.record is not None
        record = proposal.record
        assert record.type is not RecordType.RULE
        assert record.state == "active" and record.supersedes is None
        assert record.transition is None and not record.flagged
        assert record.created_at == record.updated_at == T0


def test_verbatim_extractor_one_fact_per_text() -> None:
    extractor = VerbatimExtractor(confidence=0.75, tags=["a", "b"])  # type: ignore[arg-type]
    (proposal,) = extractor.extract("Two sentences. In one fact.", SOURCE, now=T0)
    assert proposal.record is not None
    assert proposal.record.body == "Two sentences. In one fact."
    assert proposal.record.confidence == "0.7500" and proposal.record.tags == ("a", "b")
    assert extractor.extract("   \n ", SOURCE, now=T0) == ()


def test_extractors_need_a_time_on_the_port_method() -> None:
    with pytest.raises(ProposalError):
        VerbatimExtractor().propose("hello there", SOURCE)
    (proposal,) = VerbatimExtractor(now=T0).propose("hello there", SOURCE)
    assert proposal.record is not None and proposal.record.created_at == T0
    assert HeuristicExtractor(now=T0).propose("The cache is warm now.", SOURCE)


def test_extractor_input_must_be_text() -> None:
    with pytest.raises(ProposalError):
        HeuristicExtractor().extract(7, SOURCE, now=T0)  # type: ignore[arg-type]


def test_extractor_rejects_bad_time() -> None:
    with pytest.raises(Exception) as caught:
        VerbatimExtractor().extract("hi there", SOURCE, now="yesterday")
    assert getattr(caught.value, "code", None) == "encoding"


def test_oversized_text_is_a_record_error(store: RecordStore) -> None:
    with pytest.raises(RecordError):
        ingest("x" * 300_000, store=store, now=T0)
    assert store.ids() == ()
