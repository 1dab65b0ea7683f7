"""Decay and the salience sidecar (DEC-1..7)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memspec import LimitError, RecordError
from memspec.reference import lifecycle
from memspec.reference.pipeline import DecayConfig, DecayReport, SalienceScores, decay, salience
from memspec.reference.pipeline.decay import Protection, age_days
from memspec.reference.ports import RecordStore
from memspec.reference.records import MemoryRecord, RecordState
from memspec.reference.search import InMemorySearchIndex

T0 = "2026-01-01T00:00:00.000Z"
T30 = "2026-01-31T00:00:00.000Z"
YEAR = "2027-01-01T00:00:00.000Z"


def rec(body: str, *, type: str = "fact", confidence: str = "1.0000",
        **kwargs: Any) -> MemoryRecord:
    return MemoryRecord.create(type, body, {"kind": "conversation", "ref": "test"},
                               created_at=T0, confidence=confidence, **kwargs)


# -- salience -------------------------------------------------------------------------

def test_salience_halves_per_half_life_plus_touch_bonus() -> None:
    record = rec("a fact", confidence="0.8000")
    assert salience(record, touches=0, last_touched=None, now=T0) == 0.8
    assert salience(record, touches=0, last_touched=None, now=T30) == 0.4
    assert salience(record, touches=2, last_touched=None, now=T30) == 0.9
    assert salience(record, touches=1, last_touched=T30, now=T30) == 1.05
    config = DecayConfig(half_life_days=15, reinforcement_bonus=0.5)
    assert salience(record, touches=1, last_touched=None, now=T30, config=config) == 0.7


def test_salience_never_decreases_with_touches() -> None:
    record = rec("a fact")
    values = [salience(record, touches=n, last_touched=None, now=YEAR) for n in range(5)]
    assert values == sorted(values)


def test_age_days_is_never_negative() -> None:
    assert age_days(T0, T30) == 30.0
    assert age_days(T30, T0) == 0.0


# -- config ---------------------------------------------------------------------------

def test_config_defaults_and_wire_form() -> None:
    assert DecayConfig().model_dump() == {"half_life_days": 30.0, "reinforcement_bonus": 0.25,
                                          "archive_threshold": 0.05}
    assert DecayConfig.model_validate(None) == DecayConfig()
    assert DecayConfig.model_validate({"half_life_days": 7}).half_life_days == 7.0


@pytest.mark.parametrize(
    "data",
    [
        {"half_life_days": 0}, {"half_life_days": -1}, {"reinforcement_bonus": -0.1},
        {"archive_threshold": "0.05"}, {"archive_threshold": True}, {"surprise": 1},
        {"half_life_days": float("inf")}, [1, 2],
    ],
)
def test_bad_config_is_rejected(data: object) -> None:
    with pytest.raises(LimitError):
        DecayConfig.model_validate(data)


# -- decay ----------------------------------------------------------------------------

def test_below_threshold_records_are_archived_never_deleted(store: RecordStore) -> None:
    faint = rec("faint memory", confidence="0.0400")
    strong = rec("strong memory")
    store.put(faint)
    store.put(strong)
    index = InMemorySearchIndex()
    index.index(faint)
    report = decay(store, now=T0, indexes=[index])
    assert report.archived == (faint.id,)
    assert report.protected == ()
    assert report.saliences == {faint.id: 0.04, strong.id: 1.0}
    history = store.history(faint.id)
    assert [v.state for v in history] == [RecordState.ACTIVE, RecordState.ARCHIVED]
    assert history[0] == faint
    latest = store.get(faint.id)
    assert latest.updated_at == T0 and latest.body == faint.body
    assert latest.state_reason is not None and "salience 0.040000" in latest.state_reason
    assert store.get(strong.id) == strong
    assert report.written == (latest,)


def test_age_alone_decays_an_untouched_record(store: RecordStore) -> None:
    record = rec("old news")
    store.put(record)
    assert decay(store, now=T30).archived == ()
    # 1.0 * 0.5 ** (365 / 30) ~ 0.00022 < 0.05
    assert decay(store, now=YEAR).archived == (record.id,)


def test_already_archived_records_are_skipped(store: RecordStore) -> None:
    record = rec("gone")
    store.put(record)
    store.put(lifecycle.archive(record, reason="manual", now=T0))
    report = decay(store, now=YEAR)
    assert report == DecayReport()


def test_superseded_records_can_decay(store: RecordStore) -> None:
    old = rec("old value")
    new = rec("new value", supersedes=old.id)
    store.put(old)
    store.put(new)
    store.put(lifecycle.supersede(old, new, reason="newer", now=T0))
    touched = SalienceScores()
    touched.touch(new.id, YEAR)
    report = decay(store, now=YEAR, scores=touched)
    assert report.archived == (old.id,)
    archived = store.get(old.id)
    assert archived.state is RecordState.ARCHIVED and archived.superseded_by == new.id


def test_transitional_records_are_protected(store: RecordStore) -> None:
    a, b = rec("side a"), rec("side b")
    store.put(a)
    store.put(b)
    for version in lifecycle.begin_transition(a, b, reason="dispute", now=T0):
        store.put(version)
    report = decay(store, now=YEAR)
    assert report.archived == ()
    assert set(report.protected) == {Protection(a.id, "transitional"),
                                     Protection(b.id, "transitional")}


def _rule_with_evidence(store: RecordStore) -> tuple[MemoryRecord, MemoryRecord]:
    episode = rec("we deployed on friday", type="episode", occurred_at=T0)
    rule = rec("deploys happen on fridays", type="rule", evidence=[episode.id])
    store.put(episode)
    store.put(rule)
    return episode, rule


def test_unflagged_rules_and_their_evidence_are_protected(store: RecordStore) -> None:
    episode, rule = _rule_with_evidence(store)
    report = decay(store, now=YEAR)
    assert report.archived == ()
    assert sorted(report.protected, key=lambda p: p.id) == sorted(
        [Protection(rule.id, "unflagged-rule"), Protection(episode.id, "rule-evidence")],
        key=lambda p: p.id)
    assert report.model_dump()["protected"] == [p.model_dump() for p in report.protected]


def test_flagged_rule_decays_but_evidence_of_an_active_rule_never_does(
        store: RecordStore) -> None:
    episode, rule = _rule_with_evidence(store)
    archived_episode = lifecycle.archive(episode, reason="manual", now=T0)
    store.put(archived_episode)
    flagged = lifecycle.refresh_rule_flag(rule, {episode.id: archived_episode}, now=T0)
    store.put(flagged)
    assert flagged.flagged
    report = decay(store, now=YEAR)
    assert report.archived == (rule.id,)
    assert report.protected == ()


def test_evidence_of_an_archived_rule_is_not_protected(store: RecordStore) -> None:
    episode, rule = _rule_with_evidence(store)
    store.put(lifecycle.archive(rule, reason="manual", now=T0))
    report = decay(store, now=YEAR)
    assert report.archived == (episode.id,)


def test_losing_the_sidecar_degrades_to_age_since_update(store: RecordStore,
                                                         tmp_path: Path) -> None:
    record = rec("reinforced fact")
    store.put(record)
    scores = SalienceScores()
    scores.touch(record.id, T0)
    path = tmp_path / "salience.json"
    scores.save(path)
    kept = decay(store, now=YEAR, scores=SalienceScores.load(path))
    assert kept.archived == () and kept.saliences[record.id] == 0.250218
    path.write_bytes(b"{corrupt")
    lost = decay(store, now=YEAR, scores=SalienceScores.load(path))
    assert lost.archived == (record.id,)


def test_decay_is_deterministic(tmp_path: Path) -> None:
    from memspec.reference.stores import InMemoryRecordStore

    reports = []
    for _ in range(2):
        store = InMemoryRecordStore()
        for i in range(6):
            store.put(rec(f"fact {i}", confidence=f"0.{i}000"))
        reports.append(decay(store, now=T30).model_dump())
    assert reports[0] == reports[1]
    assert reports[0]["archived"] == sorted(reports[0]["archived"])


def test_report_wire_form(store: RecordStore) -> None:
    faint = rec("faint", confidence="0.0100")
    store.put(faint)
    dumped = decay(store, now=T0, config=DecayConfig(archive_threshold=0.02)).model_dump()
    assert dumped == {"archived": [faint.id], "protected": [], "saliences": {faint.id: 0.01}}
    json.dumps(dumped)


def test_decay_rejects_bad_time(store: RecordStore) -> None:
    with pytest.raises(Exception) as caught:
        decay(store, now="2026-01-01")
    assert getattr(caught.value, "code", None) == "encoding"


# -- sidecar --------------------------------------------------------------------------

RID = "mem:" + "ab" * 16
RID2 = "mem:" + "cd" * 16


def test_sidecar_counts_and_last_touch_never_moves_back() -> None:
    scores = SalienceScores()
    assert scores.touches(RID) == 0 and scores.last_touched(RID) is None
    assert scores.touch(RID, T30) == 1
    assert scores.touch(RID, T0) == 2
    assert scores.last_touched(RID) == T30
    assert scores.ids() == (RID,) and len(scores) == 1
    scores.clear()
    assert len(scores) == 0


def test_sidecar_rejects_bad_ids_and_times() -> None:
    scores = SalienceScores()
    with pytest.raises(RecordError):
        scores.touch("mem:nothex", T0)
    with pytest.raises(Exception) as caught:
        scores.touch(RID, "now")
    assert getattr(caught.value, "code", None) == "encoding"


def test_sidecar_round_trips_through_dict_and_file(tmp_path: Path) -> None:
    scores = SalienceScores()
    scores.touch(RID2, T0)
    scores.touch(RID, T0)
    scores.touch(RID, T30)
    expected = {"version": 1, "records": {
        RID: {"touches": 2, "last_touched": T30}, RID2: {"touches": 1, "last_touched": T0}}}
    assert scores.to_dict() == expected
    assert SalienceScores.from_dict(expected).to_dict() == expected
    path = tmp_path / "salience.json"
    scores.save(path)
    assert json.loads(path.read_bytes()) == expected
    assert SalienceScores.load(path).to_dict() == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["salience.json"]
    scores.touch(RID2, T30)
    scores.save(path)
    assert SalienceScores.load(path).touches(RID2) == 2


@pytest.mark.parametrize(
    "content",
    [b"", b"{corrupt", b"[]", b'{"records": 3}', b"\xff\xfe", b'{"a": 1.5}', b"null"],
)
def test_sidecar_load_is_tolerant(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "salience.json"
    path.write_bytes(content)
    assert len(SalienceScores.load(path)) == 0


def test_sidecar_load_of_missing_file_or_directory_is_empty(tmp_path: Path) -> None:
    assert len(SalienceScores.load(tmp_path / "absent.json")) == 0
    assert len(SalienceScores.load(tmp_path)) == 0


def test_sidecar_skips_malformed_entries() -> None:
    data = {"version": 1, "records": {
        RID: {"touches": 3, "last_touched": T0},
        "mem:bad": {"touches": 1, "last_touched": T0},
        RID2: {"touches": 0, "last_touched": T0},
        "mem:" + "ef" * 16: {"touches": 2, "last_touched": "yesterday"},
        "mem:" + "01" * 16: "nonsense",
    }}
    assert SalienceScores.from_dict(data).to_dict() == {
        "version": 1, "records": {RID: {"touches": 3, "last_touched": T0}}}
