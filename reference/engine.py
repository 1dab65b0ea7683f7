"""The reference engine behind the kit's engine interface: every operation of the operation
tables (spec/operations.json, spec/extensions.json), every profile.

``ReferenceEngine`` adapts the reference modules to ``memspec.Engine``: wire JSON
in, wire JSON out, typed errors for bad input (never a KeyError). Its state is
one record store (memory, file or SQLite), one search index kept current on
every write (in-memory cosine for the memory store, SQLite FTS5 otherwise) and
one salience sidecar. ``reset`` discards all of it; file and SQLite state lives
in a temporary directory removed on reset and close. Clock-dependent operations
use the ``now`` argument only (PROTO-5).
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memspec import (
    EncodingError,
    EngineBase,
    FileError,
    LifecycleError,
    RecordError,
    SignatureError,
    SigningKey,
    UnsupportedError,
    __version__,
    address_from_public_key,
    birth_digest,
    canonical_json,
    canonical_timestamp,
    check_timestamp,
    confidence_to_wire,
    decode_hex,
    decode_signature,
    ed25519_verify,
    parse_json,
    public_key_from_address,
    record_id,
    sign_file,
    signing_input,
    validate_file,
    validate_record,
    verify_file,
    verify_record,
)
from memspec.data import operations
from memspec.engine import profiles
from memspec.reference import extensions, lifecycle
from memspec.reference._arguments import check_arguments
from memspec.reference._files import export_file, load_file
from memspec.reference.pipeline.consolidation import (
    ConsolidationConfig,
    consolidate,
    default_operators,
)
from memspec.reference.pipeline.decay import DecayConfig, SalienceScores, decay
from memspec.reference.pipeline.ingest import ingest
from memspec.reference.ports import Closable, RecordStore, Redacting, SearchIndex
from memspec.reference.proposals import Proposal, apply_proposal, resolve
from memspec.reference.records import MemoryRecord
from memspec.reference.retrieval import retrieve
from memspec.reference.search import HashEmbedder, InMemorySearchIndex, SQLiteSearchIndex
from memspec.reference.search.deferred import DeferredIndex
from memspec.reference.stores import FileRecordStore, InMemoryRecordStore, SQLiteRecordStore

__all__ = [
    "STORE_KINDS",
    "ReferenceEngine",
    "create_engine",
    "create_file_engine",
    "create_sqlite_engine",
    "serve_main",
]

STORE_KINDS = ("memory", "file", "sqlite")
_Args = dict[str, Any]


# -- arguments: checked once (reference/_arguments.py) before an op_* method sees them ----


def _hex(args: _Args, name: str) -> bytes:
    return decode_hex(args[name], name=f"argument {name!r}")


def _now(args: _Args) -> str:
    return check_timestamp(args["now"], field="now")


def _key(args: _Args) -> SigningKey:
    return SigningKey.from_hex(args["seed_hex"])


def _record(args: _Args, name: str = "record") -> MemoryRecord:
    return extensions.check_fields(MemoryRecord.model_validate(args[name]))


def _extension_flag(args: _Args, name: str) -> bool:
    # Why here: an extension profile's argument of a core operation is not in the core
    # operation table, so the table-driven check does not see it.
    value = args.get(name, False)
    if not isinstance(value, bool):
        raise EncodingError(f"argument {name!r} must be a boolean, not {type(value).__name__}")
    return value


def _check_loaded(position: int, item: object) -> None:
    # Why FileError: a file holding an invalid record is an invalid file (XEXT-4, SPEC.md 10).
    try:
        extensions.check_wire(item)
    except RecordError as exc:
        raise FileError(f"record {position}: {exc.message}", pointer=f"/records/{position}"
                        f"{exc.pointer or ''}", requirement=exc.requirement) from exc


def _dumps(records: Sequence[MemoryRecord]) -> list[dict[str, Any]]:
    return [record.model_dump() for record in records]


# -- engine state ------------------------------------------------------------------------


@dataclass
class _State:
    """One engine lifetime between resets: store, search index, sidecar, temp directory."""

    store: RecordStore
    index: SearchIndex
    scores: SalienceScores
    tempdir: tempfile.TemporaryDirectory[str] | None

    @classmethod
    def fresh(cls, kind: str) -> _State:
        if kind == "memory":
            return cls(InMemoryRecordStore(), InMemorySearchIndex(HashEmbedder()),
                       SalienceScores(), None)
        tempdir = tempfile.TemporaryDirectory(prefix=f"memspec-{kind}-")
        root = Path(tempdir.name)
        store: RecordStore = (FileRecordStore(root / "records") if kind == "file"
                              else SQLiteRecordStore(root / "records.sqlite"))
        # Why deferred: the index is derived, so a put the store already took is answered
        # ok even when the index cannot follow (a full disk); the index catches up before
        # the next search (PROTO-7: an error answer must mean nothing changed).
        index = DeferredIndex(SQLiteSearchIndex(root / "index.sqlite"))
        return cls(store, index, SalienceScores(), tempdir)

    def index_all(self, records: Sequence[MemoryRecord]) -> None:
        for record in records:
            self.index.index(record)

    def reindex_ids(self, ids: Sequence[str]) -> None:
        self.index_all([self.store.get(rid) for rid in ids])

    def close(self) -> None:
        for resource in (self.store, self.index):
            if isinstance(resource, Closable):
                resource.close()
        if self.tempdir is not None:
            self.tempdir.cleanup()
            self.tempdir = None


class ReferenceEngine(EngineBase):
    """memspec's reference engine; claims every profile."""

    name = "memspec-reference"
    version = __version__
    claimed_profiles = tuple(name for name, p in profiles().items() if not p.get("always"))

    def __init__(self, store: str = "memory") -> None:
        if store not in STORE_KINDS:
            raise UnsupportedError(f"store kind {store!r} is not one of {list(STORE_KINDS)}")
        self.store_kind = store
        self._state = _State.fresh(store)

    @property
    def store(self) -> RecordStore:
        """The current record store (for in-process inspection)."""
        return self._state.store

    def close(self) -> None:
        self._state.close()

    def call(self, operation: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run ``operation`` once its arguments pass the table-driven check."""
        if operation in operations() and isinstance(arguments, dict):
            check_arguments(operation, arguments)
        return super().call(operation, arguments)

    # -- core --------------------------------------------------------------------------

    def op_reset(self, args: _Args) -> _Args:
        self._state.close()
        self._state = _State.fresh(self.store_kind)
        return {}

    # -- format ------------------------------------------------------------------------

    def op_canonicalize(self, args: _Args) -> _Args:
        text = args["text"]
        return {"hex": canonical_json(parse_json(text)).hex()}

    def op_canonical_timestamp(self, args: _Args) -> _Args:
        return {"timestamp": canonical_timestamp(args["value"])}

    def op_confidence_to_wire(self, args: _Args) -> _Args:
        return {"wire": confidence_to_wire(args["value"])}

    def op_address(self, args: _Args) -> _Args:
        return {"address": address_from_public_key(_hex(args, "public_key_hex"))}

    def op_parse_address(self, args: _Args) -> _Args:
        return {"public_key_hex": public_key_from_address(
            args["address"]).hex()}

    def op_decode_signature(self, args: _Args) -> _Args:
        return {"hex": decode_signature(args["signature"]).hex()}

    def op_record_id(self, args: _Args) -> _Args:
        record = args["record"]
        return {"id": record_id(record), "birth_digest": birth_digest(record)}

    def op_validate_record(self, args: _Args) -> _Args:
        return {"record": _record(args).model_dump()}

    def op_create_record(self, args: _Args) -> _Args:
        record = MemoryRecord.create(
            args["type"],
            args["body"],
            args["provenance"],
            created_at=_now(args),
            slots=args.get("slots"),
            confidence=args.get("confidence", 1.0),
            evidence=args.get("evidence", []),
            supersedes=args.get("supersedes"),
            tags=args.get("tags", []),
            occurred_at=args.get("occurred_at"),
            extra=args.get("extra"),
        )
        return {"record": record.model_dump()}

    def op_evolve_record(self, args: _Args) -> _Args:
        record = _record(args)
        changes = dict(args["changes"])
        known = set(MemoryRecord.__dataclass_fields__) - {"extra", "_trusted"}
        extension = {k: changes.pop(k) for k in list(changes) if k not in known}
        if extension:
            changes["extra"] = {**record.extra, **extension}
        return {"record": record.evolve(_now(args), **changes).model_dump()}

    def op_validate_file(self, args: _Args) -> _Args:
        return {"file": validate_file(args["file"])}

    # -- signing -----------------------------------------------------------------------

    def op_derive_key(self, args: _Args) -> _Args:
        key = _key(args)
        return {"address": key.address, "public_key_hex": key.public_key.hex()}

    def op_signing_input(self, args: _Args) -> _Args:
        context = args["context"]
        return {"hex": signing_input(context, args["payload"]).hex()}

    def op_ed25519_verify(self, args: _Args) -> _Args:
        return {"valid": ed25519_verify(_hex(args, "public_key_hex"), _hex(args, "message_hex"),
                                        _hex(args, "signature_hex"))}

    def op_sign_record(self, args: _Args) -> _Args:
        return {"record": _record(args).sign(_key(args)).model_dump()}

    def op_verify_record(self, args: _Args) -> _Args:
        record = args["record"]
        if isinstance(record, dict) and isinstance(record.get("signature"), str) \
                and record["signature"]:
            try:  # a badly spelled signature is a signature failure, whatever else is wrong
                decode_signature(record["signature"])
            except EncodingError as exc:
                raise SignatureError(f"signature is malformed: {exc.message}",
                                     requirement="ENC-3") from exc
        return {"signed": verify_record(validate_record(record))}

    def op_sign_file(self, args: _Args) -> _Args:
        memory_file = validate_file(args["file"])
        return {"file": sign_file(memory_file, _key(args))}

    def op_verify_file(self, args: _Args) -> _Args:
        required = args["require_signature"]
        verify_file(args["file"], require_signature=required)
        return {}

    # -- lifecycle ---------------------------------------------------------------------

    def op_is_legal(self, args: _Args) -> _Args:
        return {"legal": lifecycle.is_legal(args["from"], args["to"])}

    def op_lifecycle(self, args: _Args) -> _Args:
        # The schema's enum has checked the name: every one is a key of the table.
        step = lifecycle.LIFECYCLE_STEPS[args["operation"]]
        records = [MemoryRecord.model_validate(r) for r in args["records"]]
        now = _now(args)
        if step.arity is not None and len(records) != step.arity:
            raise LifecycleError(f"{args['operation']} takes {step.arity} record(s), "
                                 f"not {len(records)}")
        written = step.run(records, args.get("reason", ""), now, args.get("missing", []))
        return {"records": _dumps(written)}

    def op_apply_proposal(self, args: _Args) -> _Args:
        proposal = Proposal.model_validate(args["proposal"])
        if proposal.record is not None:
            extensions.check_fields(proposal.record)
        written = apply_proposal(self._state.store, proposal, now=_now(args))
        self._state.index_all(written)
        return {"written": _dumps(written)}

    def op_resolve(self, args: _Args) -> _Args:
        written = resolve(self._state.store,
                          winner_id=args["winner_id"],
                          loser_id=args["loser_id"],
                          reason=args["reason"],
                          now=_now(args))
        self._state.index_all(written)
        return {"written": _dumps(written)}

    # -- store -------------------------------------------------------------------------

    def op_put(self, args: _Args) -> _Args:
        record = _record(args)
        if record.id in self._state.store:
            born = self._state.store.get(record.id).occurred_at
            if record.occurred_at != born:
                raise RecordError(f"occurred_at of {record.id} is fixed at birth ({born}), "
                                  f"a new version gives {record.occurred_at}",
                                  requirement="REC-7")
        version = self._state.store.put(record)
        self._state.index.index(record)
        return {"version": version}

    def op_get(self, args: _Args) -> _Args:
        return {"record": self._state.store.get(args["id"]).model_dump()}

    def op_history(self, args: _Args) -> _Args:
        return {"records": _dumps(self._state.store.history(args["id"]))}

    def op_list(self, args: _Args) -> _Args:
        if "as_of" in args:  # x-time-travel (XTT-1)
            as_of = check_timestamp(args["as_of"], field="as_of")
            return {"records": _dumps(extensions.view_as_of(
                self._state.store, as_of,
                state=args.get("state"),
                type=args.get("type"),
                tag=args.get("tag")))}
        records = self._state.store.list(
            state=args.get("state"),
            type=args.get("type"),
            tag=args.get("tag"),
        )
        return {"records": _dumps(records)}

    def op_iterate(self, args: _Args) -> _Args:
        return {"records": _dumps(tuple(self._state.store))}

    # -- search and recall -------------------------------------------------------------

    def op_index(self, args: _Args) -> _Args:
        self._state.index.index(_record(args))
        return {}

    def op_search(self, args: _Args) -> _Args:
        pairs = self._state.index.candidates(args["query"], args["k"])
        return {"candidates": [{"id": rid, "score": score} for rid, score in pairs]}

    def op_embed(self, args: _Args) -> _Args:
        text = args["text"]
        return {"vector": list(HashEmbedder().embed(text))}

    def op_recall(self, args: _Args) -> _Args:
        block = retrieve(
            args["query"],
            store=self._state.store, indexes=(self._state.index,),
            budget_tokens=args["budget_tokens"], now=_now(args),
            include_history=args.get("include_history", False),
            include_archived=args.get("include_archived", False),
            touches=self._state.scores,
            extensions=True,
            include_expired=_extension_flag(args, "include_expired"),
            as_of=args.get("as_of"),
        )
        return block.model_dump()

    def op_touch(self, args: _Args) -> _Args:
        record = self._state.store.get(args["id"])
        return {"count": self._state.scores.touch(record.id, _now(args))}

    # -- pipeline ----------------------------------------------------------------------

    def op_ingest(self, args: _Args) -> _Args:
        proposals = args["proposals"]
        report = ingest(proposals, store=self._state.store, now=_now(args),
                        scores=self._state.scores, indexes=(self._state.index,),
                        extensions=True)
        return report.model_dump()

    def op_consolidate(self, args: _Args) -> _Args:
        now = _now(args)
        config = ConsolidationConfig.from_wire(args.get("config"))
        # No auto-resolver: contradictions stay open until an explicit resolve.
        report = consolidate(self._state.store, now=now, config=config,
                             operators=default_operators(config))
        self._state.reindex_ids(report.touched)
        return report.model_dump()

    def op_decay(self, args: _Args) -> _Args:
        report = decay(self._state.store, now=_now(args), scores=self._state.scores,
                       config=DecayConfig.model_validate(args.get("config")),
                       indexes=(self._state.index,), expiry=True)
        return report.model_dump()

    def op_redact(self, args: _Args) -> _Args:
        store = self._state.store
        if not isinstance(store, Redacting):  # pragma: no cover - every reference store redacts
            raise UnsupportedError("this store offers no redaction")
        tombstone = store.redact(args["id"], reason=args["reason"], now=_now(args))
        self._state.index.index(tombstone)
        return {"record": tombstone.model_dump()}

    # -- files -------------------------------------------------------------------------

    def op_export(self, args: _Args) -> _Args:
        identity = _key(args) if "seed_hex" in args else None
        return {"file": export_file(self._state.store, now=_now(args), identity=identity)}

    def op_load(self, args: _Args) -> _Args:
        verify = args["verify"]
        memory_file = args.get("file")
        if isinstance(memory_file, dict) and isinstance(memory_file.get("records"), list):
            validate_file(memory_file)
            for position, item in enumerate(memory_file["records"]):
                _check_loaded(position, item)
        report = load_file(self._state.store, args["file"], verify=verify,
                           indexes=(self._state.index,),
                           expected_agent=args.get("expected_agent"))
        return report.model_dump()


    # -- extension profiles (spec/EXTENSIONS.md) ----------------------------------------

    def op_observe(self, args: _Args) -> _Args:
        record = extensions.observe(self._state.store, args["id"],
                                    _now(args))
        self._state.index.index(record)
        return {"record": record.model_dump()}

    def op_falsify(self, args: _Args) -> _Args:
        record = extensions.falsify(self._state.store, args["id"], args["reason"],
                                    _now(args))
        self._state.index.index(record)
        return {"record": record.model_dump()}

    def op_audit(self, args: _Args) -> _Args:
        return extensions.audit(self._state.store)


# -- factories and the process entry point -------------------------------------------------


def create_engine(store: str = "memory") -> ReferenceEngine:
    """A reference engine over a fresh ``store`` ("memory", "file" or "sqlite")."""
    return ReferenceEngine(store)


def create_file_engine() -> ReferenceEngine:
    """A reference engine over the file store (in a temporary directory)."""
    return ReferenceEngine("file")


def create_sqlite_engine() -> ReferenceEngine:
    """A reference engine over the SQLite store (in a temporary directory)."""
    return ReferenceEngine("sqlite")


def serve_main(argv: Sequence[str] | None = None) -> int:
    """Console script ``memspec-reference-engine``: serve over stdin/stdout (PROTO-1)."""
    parser = argparse.ArgumentParser(prog="memspec-reference-engine",
                                     description="memspec's reference engine over the "
                                                 "memspec-engine/1 process protocol")
    parser.add_argument("--store", choices=STORE_KINDS, default="memory",
                        help="record store backing the engine (default: memory)")
    options = parser.parse_args(argv)
    from memspec.protocol import serve  # lazily: the process protocol is only needed here

    return serve(create_engine(options.store))

