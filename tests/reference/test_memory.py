"""The Memory porcelain: the README ghost-memory demo, remember/recall, files, status."""

from __future__ import annotations

from pathlib import Path

import pytest

from memspec import (
    FileError,
    LifecycleError,
    LimitError,
    RecordError,
    SignatureError,
    SigningKey,
    canonical_json,
    check_timestamp,
    verify_file,
)
from memspec.reference import (
    ConsolidationOperators,
    HeuristicContradictionOperator,
    HeuristicResolutionOperator,
    Memory,
    MemoryRecord,
    RecordState,
    SQLiteRecordStore,
    TrigramNearDupOperator,
)

SEED = bytes(range(32))


class Clock:
    """A deterministic clock: every reading is one second after the previous one."""

    def __init__(self, day: int = 1) -> None:
        self.day, self.seconds = day, 0

    def __call__(self) -> str:
        self.seconds += 1
        minute, second = divmod(self.seconds, 60)
        hour, minute = divmod(minute, 60)
        return f"2026-01-{self.day:02d}T{hour:02d}:{minute:02d}:{second:02d}.000Z"


@pytest.fixture(params=["memory", "path"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Memory:
    path = None if request.param == "memory" else tmp_path / "memory"
    return Memory(path, clock=Clock(), auto_consolidate=False)


# -- the README ghost-memory demo ---------------------------------------------------------


def test_ghost_memory_demo_as_written(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "memory")  # the real clock, the default everything
    a = memory.remember("The staging database is Postgres.")
    b = memory.remember("The staging database is not Postgres.")
    memory.consolidate()
    assert sorted(memory.recall("staging database").as_prompt_block().splitlines()) == [
        "- The staging database is Postgres. [disputed: one side negates the other]",
        "- The staging database is not Postgres. [disputed: one side negates the other]",
    ]
    memory.resolve(a.record_id, b.record_id, "checked infra: staging moved off Postgres in March")
    assert memory.recall("staging database").as_prompt_block() == (
        "- The staging database is not Postgres.")
    assert memory.recall("staging database", include_history=True).as_prompt_block() == (
        "- The staging database is not Postgres.\n"
        "- The staging database is Postgres. [superseded — kept for history]")
    loser = memory.store.get(a.record_id)
    assert loser.superseded_by == b.record_id
    assert loser.state_reason == "checked infra: staging moved off Postgres in March"
    assert [v.state for v in memory.store.history(a.record_id)] == [
        RecordState.ACTIVE, RecordState.TRANSITIONAL, RecordState.SUPERSEDED]
    memory.close()


def test_disputed_pair_always_shows_both_sides(memory: Memory) -> None:
    memory.remember("The staging database is Postgres.")
    memory.remember("The staging database is not Postgres.")
    memory.consolidate()
    lines = memory.recall("staging database").as_prompt_block().splitlines()
    assert sorted(lines) == [
        "- The staging database is Postgres. [disputed: one side negates the other]",
        "- The staging database is not Postgres. [disputed: one side negates the other]",
    ]
    assert memory.status()["open_contradictions"] == 1


def test_resolve_needs_the_two_sides_of_one_transition(memory: Memory) -> None:
    a = memory.remember("The printer is on floor two.")
    b = memory.remember("The coffee machine is broken.")
    with pytest.raises(LifecycleError):
        memory.resolve(a.record_id, b.record_id, "no dispute here")
    with pytest.raises(LifecycleError):
        memory.resolve(a.record_id, a.record_id, "same record")


# -- remember -------------------------------------------------------------------------------


def test_remember_creates_one_fact_born_at_the_clock(memory: Memory) -> None:
    result = memory.remember("  Sandro's favourite editor is Zed.  ", tags=["people"],
                             source="chat-42")
    record = memory.store.get(result.record_id)
    assert not result.deduped and result.ingest.accepted == (result.record_id,)
    assert record.body == "Sandro's favourite editor is Zed."
    assert record.created_at == "2026-01-01T00:00:01.000Z"
    assert record.tags == ("people",)
    assert record.provenance.model_dump() == {"kind": "conversation", "ref": "chat-42",
                                              "agent": None}


def test_a_repeat_reinforces_and_merges_tags(memory: Memory) -> None:
    first = memory.remember("Deploys freeze on Fridays.", tags=["deploy"])
    again = memory.remember("Deploys freeze on Fridays.", tags=["deploy"])
    assert again.deduped and again.record_id == first.record_id
    assert len(memory.store.history(first.record_id)) == 1  # no tag change: no new version
    assert memory.scores.touches(first.record_id) == 1
    third = memory.remember("Deploys freeze on Fridays.", tags=["policy"])
    assert third.record_id == first.record_id
    assert memory.store.get(first.record_id).tags == ("deploy", "policy")
    assert len(memory.store.history(first.record_id)) == 2
    assert len(memory.store.ids()) == 1


@pytest.mark.parametrize("text", ["", "   ", 42])
def test_remember_rejects_empty_text(memory: Memory, text: object) -> None:
    with pytest.raises(RecordError):
        memory.remember(text)  # type: ignore[arg-type]
    assert memory.store.ids() == ()


def test_auto_consolidation_runs_every_n_remembers() -> None:
    memory = Memory(clock=Clock(), auto_consolidate_every=2)
    assert memory.remember("The API gateway is up.").consolidation is None
    report = memory.remember("The API gateway is not up.").consolidation
    assert report is not None and len(report.by_pass("contradiction")) == 1
    with pytest.raises(LimitError):
        Memory(auto_consolidate_every=0)


def test_operators_may_include_an_auto_resolver() -> None:
    operators = ConsolidationOperators(TrigramNearDupOperator(),
                                       HeuristicContradictionOperator(),
                                       HeuristicResolutionOperator())
    memory = Memory(clock=Clock(), operators=operators, auto_consolidate=False)
    memory.remember("Gateway is up.")  # single-word subjects: no inferred slot on either side
    newer = memory.remember("Gateway is not up.")
    report = memory.consolidate()
    assert [a.pass_name for a in report.actions] == ["contradiction", "resolution"]
    assert memory.recall("gateway").ids == (newer.record_id,)


# -- recall markers -------------------------------------------------------------------------


def test_prompt_block_marks_archived_and_flagged_records(memory: Memory) -> None:
    kept = memory.remember("The wiki lives on Confluence.")
    gone = memory.remember("The old wiki lived on MediaWiki.")
    rule = MemoryRecord.create("rule", "Check which wiki is current.", {"kind": "test"},
                               created_at="2026-01-01T00:00:00.000Z",
                               evidence=(gone.record_id,))
    memory.store.put(rule)
    memory.redact(gone.record_id, "wrong system")
    memory.consolidate()  # the flag sweep flags the rule: its only evidence is gone
    for index in memory.indexes:
        index.index(memory.store.get(rule.id))
    block = memory.recall("wiki", include_archived=True).as_prompt_block()
    assert "- Check which wiki is current. [flagged: " in block
    assert "- [redacted] [archived]" not in block  # tombstones leave the index (RED-7)
    assert "- The wiki lives on Confluence." in block
    assert kept.record_id in memory.recall("Confluence").ids


def test_recall_returns_iterable_results(memory: Memory) -> None:
    memory.remember("Rust compiles to native code.")
    result = memory.recall("rust native", budget_tokens=100)
    assert len(result) == 1 and [r.record.body for r in result] == [
        "Rust compiles to native code."]
    assert result.records[0].reasons == ("query-match",)
    assert len(memory.recall("rust", budget_tokens=1)) == 0


# -- decay and redaction -------------------------------------------------------------------


def test_decay_archives_what_has_faded() -> None:
    clock = Clock()
    memory = Memory(clock=clock, auto_consolidate=False)
    faded = memory.remember("A passing remark about the weather.")
    clock.day = 28
    memory.store.put(memory.store.get(faded.record_id).evolve(
        "2026-01-01T00:00:02.000Z", confidence="0.0500"))
    report = memory.decay()
    assert report.archived == (faded.record_id,)
    assert memory.store.get(faded.record_id).state is RecordState.ARCHIVED
    assert "[archived]" in memory.recall("weather", include_archived=True).as_prompt_block()
    assert memory.recall("weather").ids == ()


def test_redact_destroys_content_everywhere(memory: Memory) -> None:
    secret = memory.remember("The root password is hunter2.")
    tombstone = memory.redact(secret.record_id, "secret remembered by mistake")
    assert tombstone.body == MemoryRecord.REDACTED_BODY and tombstone.redacted
    assert all(v.body == "[redacted]" for v in memory.store.history(secret.record_id))
    assert memory.recall("hunter2 root password", include_archived=True).ids == ()


# -- files ----------------------------------------------------------------------------------


def _filled(identity: SigningKey | None = None, path: Path | None = None) -> Memory:
    memory = Memory(path, clock=Clock(), identity=identity, auto_consolidate=False)
    memory.remember("Zed is the editor of choice.")
    memory.remember("Standups start at nine.")
    return memory


def test_signed_export_round_trips(tmp_path: Path) -> None:
    key = SigningKey(SEED)
    memory = _filled(key)
    target = tmp_path / "memory.json"
    exported = memory.export(target)
    assert target.read_bytes() == canonical_json(exported)
    assert exported["agent"] == key.address and exported["signature"]
    verify_file(exported)
    assert [r["id"] for r in exported["records"]] == sorted(memory.store.ids())
    assert all(r["signed_by"] == key.address for r in exported["records"])
    loaded = Memory.load(target, clock=Clock())
    assert loaded.store.ids() == memory.store.ids()
    assert loaded.recall("editor").ids == memory.recall("editor").ids
    again = tmp_path / "again.json"
    loaded_export = loaded.export(again)
    assert loaded_export["records"] == exported["records"]


def test_export_is_deterministic_for_the_same_store_and_time(tmp_path: Path) -> None:
    first, second = _filled(), _filled()
    assert (first.export(tmp_path / "a.json") == second.export(tmp_path / "b.json"))
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    check_timestamp(first.export(tmp_path / "c.json")["created_at"])


def test_verifying_load_requires_a_file_signature(tmp_path: Path) -> None:
    unsigned = tmp_path / "unsigned.json"
    _filled().export(unsigned)
    with pytest.raises(SignatureError):
        Memory.load(unsigned)
    assert len(Memory.load(unsigned, verify=False).store.ids()) == 2


def test_tampered_files_are_rejected_and_nothing_is_loaded(tmp_path: Path) -> None:
    signed = tmp_path / "signed.json"
    exported = _filled(SigningKey(SEED)).export(signed)
    exported["records"][0]["tags"] = ["tampered"]
    signed.write_bytes(canonical_json(exported))
    target = tmp_path / "store"
    with pytest.raises(SignatureError):
        Memory.load(signed, path=target)
    assert Memory(target).store.ids() == ()
    with pytest.raises(FileError):
        (tmp_path / "junk.json").write_bytes(b"[1, 2]")
        Memory.load(tmp_path / "junk.json", verify=False)


def test_loading_into_an_existing_store_skips_known_ids(tmp_path: Path) -> None:
    file = tmp_path / "m.json"
    source = _filled()
    source.export(file)
    target = tmp_path / "target"
    existing = Memory(target, clock=Clock(), auto_consolidate=False)
    known = existing.remember("Zed is the editor of choice.")
    existing.store.put(existing.store.get(known.record_id).evolve(
        "2026-01-02T00:00:00.000Z", tags=("local",)))
    existing.close()
    merged = Memory.load(file, path=target, verify=False, clock=Clock())
    assert merged.store.get(known.record_id).tags == ("local",)  # never overwritten
    assert len(merged.store.ids()) == 2


# -- path layout, persistence and status ---------------------------------------------------


def test_a_path_memory_persists_and_rebuilds_its_index(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    memory = Memory(root, clock=Clock(), auto_consolidate=False)
    kept = memory.remember("The VPN config lives in the infra repo.")
    memory.recall("VPN")
    memory.close()
    assert (root / "records").is_dir() and (root / "index.sqlite").is_file()
    assert (root / "salience.json").is_file()
    reopened = Memory(root, clock=Clock(2))
    assert reopened.recall("VPN config").ids == (kept.record_id,)
    assert reopened.scores.touches(kept.record_id) >= 1
    reopened.close()
    for sidecar in root.glob("index.sqlite*"):
        sidecar.unlink()
    rebuilt = Memory(root, clock=Clock(3))
    assert rebuilt.recall("VPN config").ids == (kept.record_id,)
    rebuilt.close()


def test_custom_store_and_identity_signs_remembered_records(tmp_path: Path) -> None:
    key = SigningKey(SEED)
    store = SQLiteRecordStore(tmp_path / "m.sqlite")
    with Memory(store=store, identity=key, clock=Clock()) as memory:
        result = memory.remember("Signed memories verify.")
        record = memory.store.get(result.record_id)
        assert record.signed_by == key.address and record.verify()
        assert record.provenance.agent == key.address
        assert memory.status()["agent"] == key.address


def test_status_counts_states_and_types(memory: Memory) -> None:
    memory.remember("The staging database is Postgres.")
    memory.remember("The staging database is not Postgres.")
    memory.remember("Lunch is at noon.")
    memory.consolidate()
    status = memory.status()
    assert status["records"] == 3
    assert status["states"] == {"active": 1, "transitional": 2, "superseded": 0, "archived": 0}
    assert status["types"] == {"fact": 3, "episode": 0, "procedure": 0, "rule": 0}
    assert status["open_contradictions"] == 1 and status["flagged_rules"] == 0
    assert set(status) >= {"path", "agent"}


def test_export_never_overwrites_unasked_and_the_witness_waits_for_the_file(
        tmp_path: Path) -> None:
    from memspec._safe_paths import PathError

    memory = _filled(SigningKey(SEED), tmp_path / "memory")
    target = tmp_path / "memory.json"
    first = memory.export(target)
    witness = (tmp_path / "memory" / "witness.json").read_bytes()
    with pytest.raises(PathError, match="exists"):
        memory.export(target)
    assert target.read_bytes() == canonical_json(first)
    assert (tmp_path / "memory" / "witness.json").read_bytes() == witness
    second = memory.export(target, overwrite=True)
    assert second["sequence"] == first["sequence"] + 1
    assert target.read_bytes() == canonical_json(second)
    assert [p.name for p in tmp_path.iterdir() if ".tmp" in p.name] == []
    memory.close()


def test_a_clean_open_repairs_nothing_and_merge_loads_a_parsed_file(tmp_path: Path) -> None:
    source = _filled(SigningKey(SEED))
    exported = source.export(tmp_path / "source.json")
    with Memory(tmp_path / "memory", auto_consolidate=False) as memory:
        assert not memory.repair_report.repaired
        assert memory.repair_report.model_dump()["signed"] == []
        report = memory.merge(exported)
        assert len(report.loaded) == 2 and report.skipped == ()
        assert memory.merge(exported).skipped == report.loaded
    with Memory(tmp_path / "memory", auto_consolidate=False) as reopened:
        assert not reopened.repair_report.repaired
        assert reopened.recall("editor of choice").ids
