"""The porcelain: ``Memory`` — remember, recall, consolidate, decay, resolve, redact, export, load.

Two calls need no lifecycle vocabulary (``remember`` and ``recall``); everything
underneath is the reference pipeline wired to one store, its search indexes and
the salience sidecar. ``Memory()`` keeps everything in memory; ``Memory(path)``
writes a directory: ``records/`` (the file store), ``index.sqlite`` (keyword
index) and ``salience.json`` (reinforcement sidecar). The two sidecars are
engine-local and rebuildable: losing them only degrades search and decay.

The directory is opened safely (``memspec._safe_paths``): nothing inside it is
reached through a planted symlink, and every open repairs what a killed writer
left behind (see ``memspec.reference._repair``), reported by
:attr:`Memory.repair_report`. Faults of the disk (full, read-only, damaged) are
StoreErrors; a write the store refused leaves nothing behind.

The clock is injectable (``clock() -> canonical timestamp``). The default reads
the real UTC clock, and this module is the only place the reference does so.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from memspec import (
    DEFAULT_LIMITS,
    FileError,
    LimitError,
    MemspecError,
    RecordError,
    SigningKey,
    StoreError,
    UnsupportedError,
    canonical_json,
    parse_json,
    timestamp_from_datetime,
)
from memspec._rollback import Witness, sign_with_sequence, verify_fresh
from memspec._safe_paths import (
    lstat_at,
    open_dir,
    read_regular,
    remove_dead_temps,
    remove_link_at,
    write_atomic_at,
)
from memspec.reference._files import (
    LoadReport,
    check_file,
    export_file,
    load_file,
    load_records,
)
from memspec.reference._repair import (
    Journal,
    RepairReport,
    finish_pending,
    read_sidecar,
    reconcile_index,
)
from memspec.reference.pipeline.consolidation import (
    ConsolidationConfig,
    ConsolidationOperators,
    ConsolidationReport,
    consolidate,
    default_operators,
)
from memspec.reference.pipeline.decay import DecayConfig, DecayReport, SalienceScores, decay
from memspec.reference.pipeline.extractor import VerbatimExtractor, extract_all
from memspec.reference.pipeline.ingest import IngestReport, ingest
from memspec.reference.pipeline.operators import strength_key
from memspec.reference.ports import Closable, Operator, RecordStore, Redacting, SearchIndex
from memspec.reference.proposals import Proposal, ProposalKind, resolve
from memspec.reference.records import MemoryRecord, Provenance, RecordState, RecordType
from memspec.reference.retrieval import RetrievedBlock, RetrievedRecord, retrieve
from memspec.reference.search import HashEmbedder, InMemorySearchIndex, SQLiteSearchIndex
from memspec.reference.search.deferred import DeferredIndex
from memspec.reference.stores import FileRecordStore, InMemoryRecordStore
from memspec.reference.stores.sqlite import COMPANIONS

__all__ = [
    "LoadReport",
    "Memory",
    "RecallResult",
    "RememberResult",
    "RepairReport",
    "check_file",
    "export_file",
    "load_file",
    "utc_now",
]


_REPEAT_CANDIDATES = 8
_INDEX_FILE = "index.sqlite"
_SALIENCE_FILE = "salience.json"
_WITNESS_FILE = "witness.json"
_LIVE = frozenset({RecordState.ACTIVE, RecordState.TRANSITIONAL})


def _claim_key(record: MemoryRecord) -> bytes:
    return canonical_json([record.type.value, record.body, dict(record.slots)])


def utc_now() -> str:
    """The real UTC clock as a canonical timestamp (the porcelain's default clock)."""
    return timestamp_from_datetime(datetime.now(UTC))


# -- results --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RememberResult:
    """What ``remember`` did: the record id, whether it was a repeat, and the stage reports."""

    record_id: str
    deduped: bool
    ingest: IngestReport
    consolidation: ConsolidationReport | None = None


def _markers(record: MemoryRecord) -> str:
    marks = []
    if record.state is RecordState.TRANSITIONAL and record.transition is not None:
        marks.append(f"[disputed: {record.transition.reason}]")
    elif record.state is RecordState.SUPERSEDED:
        marks.append("[superseded — kept for history]")
    elif record.state is RecordState.ARCHIVED:
        marks.append("[archived]")
    if record.flagged:
        marks.append(f"[flagged: {record.flag_reason}]")
    return "".join(f" {mark}" for mark in marks)


@dataclass(frozen=True, kw_only=True)
class RecallResult:
    """A recall: the retrieved block, iterable as :class:`RetrievedRecord` items."""

    block: RetrievedBlock

    @property
    def records(self) -> tuple[RetrievedRecord, ...]:
        return tuple(self.block.records)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(self.block.ids)

    def __len__(self) -> int:
        return len(self.block.records)

    def __iter__(self) -> Iterator[RetrievedRecord]:
        return iter(self.block.records)

    def as_prompt_block(self) -> str:
        """One ``- body`` line per record, marked when disputed, superseded, archived or flagged."""
        return "\n".join(f"- {item.record.body}{_markers(item.record)}" for item in self)


# -- the porcelain ---------------------------------------------------------------------


class Memory:
    """One agent's memory: a record store, its search indexes and a salience sidecar.

    Consolidation runs without an auto-resolver unless ``operators`` says
    otherwise, so contradictions stay visible until :meth:`resolve`.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        store: RecordStore | None = None,
        indexes: Sequence[SearchIndex] | None = None,
        extractor: Operator | None = None,
        operators: ConsolidationOperators | None = None,
        consolidation_config: ConsolidationConfig | None = None,
        decay_config: DecayConfig | None = None,
        identity: SigningKey | None = None,
        source_kind: str = "conversation",
        auto_consolidate: bool = True,
        auto_consolidate_every: int = 4,
        clock: Callable[[], str] | None = None,
    ) -> None:
        if isinstance(auto_consolidate_every, bool) or not isinstance(
                auto_consolidate_every, int) or auto_consolidate_every < 1:
            raise LimitError("auto_consolidate_every must be a positive integer")
        self._path = None if path is None else Path(path)
        self._dir: int | None = None
        self._journal: Journal | None = None
        self._own_index: SQLiteSearchIndex | None = None
        self._closed = False
        self._sidecar_error: StoreError | None = None
        links: tuple[str, ...] = ()
        rebuilt: str | None = None
        if self._path is not None:
            try:
                self._dir = open_dir(self._path, create=True)
                self._dir_closer = weakref.finalize(self, os.close, self._dir)
                self._journal = Journal(self._dir)
                self._store = store if store is not None else FileRecordStore(
                    self._path / "records", follow_root=False)
                if indexes is not None:
                    self._indexes = tuple(indexes)
                else:
                    self._own_index, links, rebuilt = self._open_index()
                    self._indexes = (self._own_index,)
                self._scores = self._load_scores()
            except OSError as exc:
                raise StoreError(f"cannot open memory at {self._path}: "
                                 f"{exc.strerror or exc}") from exc
        else:
            self._store = store if store is not None else InMemoryRecordStore()
            self._indexes = (tuple(indexes) if indexes is not None
                             else (InMemorySearchIndex(HashEmbedder()),))
            self._scores = SalienceScores()
        # Why wrappers: the indexes are derived, so a write the store took must not fail
        # because an index could not follow; what is pending is retried (see DeferredIndex).
        self._sidecars = tuple(DeferredIndex(index) for index in self._indexes)
        self._extractor: Operator = extractor if extractor is not None else VerbatimExtractor()
        self._consolidation_config = consolidation_config or ConsolidationConfig()
        self._operators = operators or default_operators(self._consolidation_config)
        self._decay_config = decay_config or DecayConfig()
        self._identity = identity
        # The exporter's witness: the sequences this memory has signed (ROLL-2).
        self._witness = Witness()
        self._source_kind = source_kind
        self._auto_consolidate = auto_consolidate
        self._every = auto_consolidate_every
        self._clock = clock or utc_now
        self._remembered = 0
        try:
            self._repair_report = self._repair(links=links, rebuilt=rebuilt)
        except OSError as exc:
            raise StoreError(f"cannot repair memory at {self._path}: "
                             f"{exc.strerror or exc}") from exc

    def _open_index(self) -> tuple[SQLiteSearchIndex, tuple[str, ...], str | None]:
        """The keyword index, rebuilt when damaged; planted links removed first."""
        assert self._dir is not None and self._path is not None
        names = tuple(_INDEX_FILE + suffix for suffix in COMPANIONS)
        links = tuple(name for name in names if remove_link_at(self._dir, name))
        target = self._path / _INDEX_FILE
        try:
            index = SQLiteSearchIndex(target)
            try:
                index.check()
            except StoreError:
                index.close()
                raise
            return index, links, None
        except StoreError as exc:
            if "locked" in exc.message or "busy" in exc.message:
                raise  # a busy index is not a damaged one: never rebuild under a writer
            reason = exc.message
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=self._dir)
        return SQLiteSearchIndex(target), links, reason

    def _load_scores(self) -> SalienceScores:
        assert self._dir is not None
        value = read_sidecar(self._dir, _SALIENCE_FILE)
        if value is None:
            return SalienceScores()
        try:
            return SalienceScores.from_dict(value)
        except (MemspecError, ValueError, TypeError, KeyError):
            return SalienceScores()

    @property
    def path(self) -> Path | None:
        """The memory directory (None for a memory held in memory)."""
        return self._path

    @property
    def repair_report(self) -> RepairReport:
        """What opening this memory repaired (empty when nothing needed it)."""
        return self._repair_report

    def repair(self) -> RepairReport:
        """Repair now what a killed writer can leave behind (opening does this); the report."""
        self._repair_report = self._repair(links=(), rebuilt=None)
        return self._repair_report

    def _repair(self, *, links: tuple[str, ...], rebuilt: str | None) -> RepairReport:
        remove_temps = getattr(self._store, "remove_temp_files", None)
        temps: tuple[str, ...] = tuple(remove_temps()) if callable(remove_temps) else ()
        signed: tuple[str, ...] = ()
        waiting: tuple[str, ...] = ()
        finished = 0
        if self._journal is not None and self._dir is not None:
            temps += remove_dead_temps(self._dir) + self._journal.remove_temps()
            signed, waiting, finished = finish_pending(self._journal, self._store,
                                                       self._identity)
        reindexed: tuple[str, ...] = ()
        unindexed: tuple[str, ...] = ()
        if self._own_index is not None:
            reindexed, unindexed = reconcile_index(self._store, self._own_index)
        else:
            # Why: an in-memory or caller-supplied index may not know the stored records;
            # indexing replaces an id's entry, so this is always safe.
            self._index(tuple(self._store))
        return RepairReport(reindexed=reindexed, unindexed=unindexed, signed=signed,
                            unsigned_pending=waiting, journal_entries_finished=finished,
                            temp_files_removed=temps, links_removed=links,
                            index_rebuilt=rebuilt)

    # -- plumbing ----------------------------------------------------------------------

    @property
    def store(self) -> RecordStore:
        """The underlying record store."""
        return self._store

    @property
    def indexes(self) -> tuple[SearchIndex, ...]:
        """The search indexes kept current on every write."""
        return self._indexes

    @property
    def scores(self) -> SalienceScores:
        """The salience sidecar (touch counts; engine-local, never in records)."""
        return self._scores

    def _index(self, records: Sequence[MemoryRecord]) -> None:
        for record in records:
            for index in self._sidecars:
                index.index(record)

    def _index_ids(self, ids: Sequence[str]) -> None:
        self._index(tuple(self._store.get(rid) for rid in dict.fromkeys(ids)))

    def _save_scores(self, *, strict: bool = False) -> None:
        """Persist the salience sidecar; a failure is kept (and raised only when ``strict``).

        Why not fatal: the sidecar only steers decay, and the write it follows is done.
        """
        if self._dir is None:
            return
        try:
            remove_link_at(self._dir, _SALIENCE_FILE)
            write_atomic_at(self._dir, _SALIENCE_FILE, canonical_json(self._scores.to_dict()),
                            overwrite=True)
        except (StoreError, OSError) as exc:
            error = exc if isinstance(exc, StoreError) else StoreError(
                f"cannot write {_SALIENCE_FILE}: {exc.strerror or exc}")
            self._sidecar_error = error
            if strict:
                raise error from exc
        else:
            self._sidecar_error = None

    def close(self) -> None:
        """Persist the sidecar and release the store and indexes (idempotent).

        Everything is released even when something fails; the first failure is then
        raised as a StoreError (a full disk, say), never as a raw OSError.
        """
        if self._closed:
            return
        self._closed = True
        problems: list[str] = []
        for sidecar in self._sidecars:
            sidecar.flush()  # best effort: the next open reconciles what is still pending
        try:
            self._save_scores(strict=True)
        except StoreError as exc:
            problems.append(exc.message)
        for resource in (self._store, *self._indexes):
            if isinstance(resource, Closable):
                try:
                    resource.close()
                except (MemspecError, OSError, sqlite3.Error) as exc:
                    problems.append(f"closing {type(resource).__name__}: {exc}")
        if self._dir is not None:
            self._dir_closer()
        if problems:
            raise StoreError("closing the memory: " + "; ".join(problems))

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    # -- write -------------------------------------------------------------------------

    def _find_repeat(self, record: MemoryRecord) -> MemoryRecord | None:
        """The strongest live record saying exactly what ``record`` says (type, body, slots)."""
        ids: set[str] = set()
        for index in self._sidecars:
            ids.update(rid for rid, _ in index.candidates(record.body, _REPEAT_CANDIDATES))
        pool = (tuple(self._store.get(rid) for rid in sorted(ids) if rid in self._store)
                if self._indexes else tuple(self._store))
        key = _claim_key(record)
        same = [r for r in pool if r.state in _LIVE and _claim_key(r) == key]
        return min(same, key=strength_key) if same else None

    def _prepare(self, proposal: Proposal, tags: tuple[str, ...]) -> Proposal:
        """Re-birth a repeat as its stored twin (so the write stage dedups it) and add the
        caller's tags."""
        record = proposal.record
        if proposal.kind is not ProposalKind.CREATE or record is None:
            return proposal
        twin = self._find_repeat(record)
        if twin is not None:
            record = MemoryRecord.create(
                twin.type, twin.body, twin.provenance, created_at=twin.created_at,
                slots=twin.slots, confidence=record.confidence, tags=record.tags,
                occurred_at=record.occurred_at)
        merged = tuple(dict.fromkeys((*record.tags, *tags)))
        if merged != record.tags:
            record = record.evolve(record.created_at, tags=merged)
        return Proposal(kind=proposal.kind, record=record, target_id=proposal.target_id,
                        other_id=proposal.other_id, reason=proposal.reason)

    def _merge_tags(self, record_id: str, tags: tuple[str, ...], now: str) -> None:
        current = self._store.get(record_id)
        merged = tuple(dict.fromkeys((*current.tags, *tags)))
        if merged != current.tags:
            updated = current.evolve(now, tags=merged)
            self._store.put(updated)
            self._index((updated,))

    def _sign(self, ids: Sequence[str]) -> None:
        # Why a second version: the write stage admits only unsigned births (REC-14), so
        # the identity signs the accepted version explicitly afterwards (SIG-10).
        if self._identity is None:
            return
        for record_id in ids:
            signed = self._store.get(record_id).sign(self._identity)
            self._store.put(signed)
            self._index((signed,))

    def remember(self, text: str, *, tags: Sequence[str] | None = None,
                 source: str | None = None) -> RememberResult:
        """Store what ``text`` says.

        A repeat of a live record (same type, body and slots) is not stored
        again: it reinforces the existing record in the sidecar and merges the
        new tags into it (one new version, only when the tags change).
        """
        if not isinstance(text, str) or not text.strip():
            raise RecordError("remember needs non-empty text", requirement="REC-5")
        now = self._clock()
        wanted = tuple(tags or ())
        agent = self._identity.address if self._identity is not None else None
        provenance = Provenance(kind=self._source_kind, ref=source, agent=agent)
        extracted = extract_all(self._extractor, [text], provenance, now=now)
        proposals = tuple(self._prepare(p, wanted) for p in extracted)
        journal = self._journal if self._identity is not None else None
        entry = None
        if journal is not None:
            # Why: a birth is stored unsigned and signed as a second version; the journal
            # lets the next open sign what a killed writer stored but never signed.
            entry = journal.begin([p.record.id for p in proposals if p.record is not None],
                                  agent)
        try:
            report = ingest(proposals, store=self._store, now=now, scores=self._scores,
                            indexes=self._sidecars, extensions=True)
            for record_id in report.deduped:
                self._merge_tags(record_id, wanted, now)
            self._sign(report.accepted)
        except BaseException:
            if journal is not None and entry is not None:
                journal.release(entry)  # kept on disk: the next repair finishes it
            raise
        if journal is not None and entry is not None:
            journal.finish(entry)
        ids = (*report.accepted, *report.deduped)
        if not ids:
            detail = "; ".join(r.message for r in report.rejected) or "no record extracted"
            if any(r.code == StoreError.code for r in report.rejected):
                # A fault of the store (a full disk, say), not of the text.
                raise StoreError(f"nothing was remembered: {detail}")
            raise RecordError(f"nothing was remembered: {detail}", requirement="WR-5")
        self._remembered += 1
        consolidation = None
        if self._auto_consolidate and self._remembered % self._every == 0:
            consolidation = self.consolidate()
        self._save_scores()
        return RememberResult(record_id=ids[0], deduped=not report.accepted, ingest=report,
                              consolidation=consolidation)

    # -- read --------------------------------------------------------------------------

    def recall(self, query: str, *, budget_tokens: int = 2000, include_history: bool = False,
               include_archived: bool = False, include_expired: bool = False,
               as_of: str | None = None) -> RecallResult:
        """State-aware, budgeted retrieval; each hit is reinforced in the sidecar.

        Extension profiles (spec/EXTENSIONS.md): expired records are left out
        unless ``include_expired``; ``as_of`` recalls what was believed then.
        """
        block = retrieve(query, store=self._store, indexes=self._sidecars,
                         budget_tokens=budget_tokens, now=self._clock(),
                         include_archived=include_archived, include_history=include_history,
                         touches=self._scores, extensions=True,
                         include_expired=include_expired, as_of=as_of)
        self._save_scores()
        return RecallResult(block=block)

    # -- maintenance -------------------------------------------------------------------

    def consolidate(self) -> ConsolidationReport:
        """One consolidation pass (no auto-resolver by default)."""
        report = consolidate(self._store, now=self._clock(), operators=self._operators,
                             config=self._consolidation_config)
        self._index_ids(report.touched)
        return report

    def decay(self) -> DecayReport:
        """One decay pass: archive what has faded or expired, report what is protected."""
        return decay(self._store, now=self._clock(), scores=self._scores,
                     config=self._decay_config, indexes=self._sidecars, expiry=True)

    def resolve(self, record_id: str, winner_id: str, reason: str
                ) -> tuple[MemoryRecord, MemoryRecord]:
        """Settle the contradiction ``record_id`` is in: ``winner_id`` wins, ``record_id`` loses.

        Both must be the two sides of one transition, and a reason is required.
        Returns ``(winner', loser')``.
        """
        written = resolve(self._store, winner_id=winner_id, loser_id=record_id, reason=reason,
                          now=self._clock())
        self._index(written)
        return written

    def redact(self, record_id: str, reason: str) -> MemoryRecord:
        """Destroy a record's content in every version (spec section 11); returns the tombstone."""
        if not isinstance(self._store, Redacting):
            raise UnsupportedError(f"{type(self._store).__name__} offers no redaction")
        tombstone = self._store.redact(record_id, reason=reason, now=self._clock())
        self._index((tombstone,))
        return tombstone

    # -- files -------------------------------------------------------------------------

    def export(self, path: str | Path, *, sequence: int | None = None,
               overwrite: bool = False) -> dict[str, Any]:
        """Write the memory as one canonical MemoryFile, atomically.

        With an identity the file is stamped with ``sequence`` (default: one more than
        the last file this memory signed, kept in ``witness.json`` beside the store) and
        signed (ROLL-2); without one it is unsigned and ``sequence`` must be None. The
        file is written to a temp file beside ``path``, fsynced and renamed into place;
        the witness advances only after that. An existing ``path`` is replaced only
        with ``overwrite`` (and only when it is a regular file).
        """
        target = Path(path)
        try:
            parent = open_dir(target.parent)
        except StoreError as exc:
            raise StoreError(f"cannot write {path}: {exc.message}") from exc
        try:
            return self.export_at(parent, target.name, sequence=sequence,
                                  overwrite=overwrite)
        finally:
            os.close(parent)

    def export_at(self, directory: int, name: str, *, sequence: int | None = None,
                  overwrite: bool = False) -> dict[str, Any]:
        """:meth:`export` into file ``name`` of the open directory fd ``directory``."""
        memory_file = export_file(self._store, now=self._clock())
        advanced: Witness | None = None
        if self._identity is not None:
            witness = self._witness if self._dir is None else self._stored_witness()
            memory_file, advanced = sign_with_sequence(memory_file, self._identity, witness,
                                                       sequence=sequence)
        elif sequence is not None:
            raise FileError("a sequence is stamped only on a signed file: this memory has "
                            "no identity", requirement="ROLL-2")
        write_atomic_at(directory, name, canonical_json(memory_file), overwrite=overwrite)
        if advanced is not None:
            if self._path is None:
                self._witness = advanced
            else:
                try:
                    self._witness = advanced.save(self._path / _WITNESS_FILE)
                except OSError as exc:
                    raise StoreError(f"{name} was written, but the witness was not: "
                                     f"{exc.strerror or exc}") from exc
        return memory_file

    def _stored_witness(self) -> Witness:
        assert self._dir is not None and self._path is not None
        info = lstat_at(self._dir, _WITNESS_FILE)
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise StoreError(f"{_WITNESS_FILE} in {self._path} is not a regular file; "
                             "refusing to read or replace it")
        return Witness.load(self._path / _WITNESS_FILE)

    def merge(self, memory_file: object, *, verify: bool = True,
              expected_agent: str | None = None) -> LoadReport:
        """Load a parsed MemoryFile into this memory (checked whole first, FILE-12 applies);
        ids already held are skipped."""
        records = check_file(memory_file, verify=verify, expected_agent=expected_agent)
        return load_records(self._store, records, self._sidecars,
                             vouched=expected_agent is not None)

    @classmethod
    def load(cls, file_path: str | Path, *, path: str | Path | None = None, verify: bool = True,
             witness: str | Path | None = None, expected_agent: str | None = None,
             **kwargs: Any) -> Memory:
        """A Memory holding a MemoryFile's records (``verify`` requires a file signature;
        ``expected_agent`` requires it to be that agent's, FILE-11).

        Only a regular file is read (a FIFO or a device is refused without blocking),
        at most the text-size limit of it, and every check passes before anything,
        even the memory directory, is created. Loading into an existing ``path``
        merges: ids already there are skipped.
        """
        try:
            data = read_regular(file_path, limit=DEFAULT_LIMITS.max_text_bytes)
        except FileNotFoundError:
            raise FileError(f"{file_path}: no such file") from None
        except StoreError as exc:
            raise FileError(f"{file_path}: {exc.message}") from exc
        memory_file = parse_json(data)
        accepted = None
        if witness is not None and verify:
            if not isinstance(memory_file, dict):
                raise FileError("a memory file is a JSON object", requirement="FILE-1")
            # Refuse a replayed older snapshot (ROLL-4, ROLL-5) before anything is written.
            accepted = verify_fresh(memory_file, Witness.load(witness))
        records = check_file(memory_file, verify=verify, expected_agent=expected_agent)
        memory = cls(path, **kwargs)
        load_records(memory.store, records, memory._sidecars,
                      vouched=expected_agent is not None)
        if accepted is not None:
            accepted.save(witness)  # type: ignore[arg-type]
        return memory

    def status(self) -> dict[str, Any]:
        """Counts by state and type, open contradictions, flagged rules, path and agent."""
        states = {state.value: 0 for state in RecordState}
        types = {kind.value: 0 for kind in RecordType}
        open_pairs: set[tuple[str, ...]] = set()
        flagged = 0
        for record in self._store:
            states[record.state.value] += 1
            types[record.type.value] += 1
            if record.transition is not None:
                open_pairs.add(tuple(sorted(record.transition.sides)))
            flagged += int(record.flagged)
        return {
            "path": None if self._path is None else str(self._path),
            "agent": None if self._identity is None else self._identity.address,
            "records": sum(states.values()),
            "states": states,
            "types": types,
            "open_contradictions": len(open_pairs),
            "flagged_rules": flagged,
        }
