"""fg-agent-memory 0.2.0 behind memspec's engine interface: a translating adapter, nothing more.

Every operation takes its wire JSON to fg-agent-memory's (and fg-agent-id's) own parsers and
functions and dumps what they return with fg's ``model_dump``; fg's exceptions become the error
classes of SPEC.md section 18.4 (:func:`memspec.peers._fg_wire.translated`). The adapter never
repairs input, never re-implements a rule fg has, and never calls memspec's reference engine.
The protocol's own encodings (hexadecimal arguments, the ``now`` argument's type) are decoded by
memspec's protocol helpers, as any engine's protocol layer would.

The engine's state is the one the fg porcelain (``fg_agent_memory.Memory``) builds for a memory
without a directory: an ``InMemoryRecordStore``, an ``InMemorySearchIndex`` over the hash
embedder, a ``SalienceScores`` sidecar and the porcelain's recall-to-salience bridge; every
write is indexed, as the porcelain does. Where fg takes no time argument (``apply_proposal``,
``InMemoryRecordStore.redact``) it reads its own clock, and the report shows it.

Use it in process with ``memspec certify --engine memspec.peers.fg_agent_memory:create_engine``
or as a process engine with ``memspec certify --engine-cmd "python -m
memspec.peers.fg_agent_memory"``. What the kit finds, and why, is classified in
``spec/peers/fg-agent-memory-0.2.0.json``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import fg_agent_id
import fg_agent_memory as fgm
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from fg_agent_id.serde import canonical_timestamp, parse_datetime
from fg_agent_id.signing import decode_signature
from fg_agent_memory.memory import _RecallTouches
from fg_agent_memory.pipeline.decay import SalienceScores

from memspec._encoding import decode_hex
from memspec._errors import (
    CanonicalJSONError,
    EncodingError,
    FileError,
    LifecycleError,
    LimitError,
    NotFoundError,
    ProposalError,
    RecordError,
    SignatureError,
)
from memspec.engine import EngineBase
from memspec.peers._fg_wire import (
    CONSOLIDATION_PASSES,
    Args,
    ReplayExtractor,
    arg,
    dump_actions,
    dump_protections,
    dump_records,
    dump_retrieved,
    fg_changes,
    fg_proposal,
    fg_record,
    translated,
)

__all__ = ["FG_VERSION", "FgAgentMemoryEngine", "create_engine", "main"]

#: The fg-agent-memory release this adapter translates for.
FG_VERSION = "0.2.0"

# The profiles fg-agent-memory 0.2.0 has an API for: all of memspec's core profiles (format,
# signing, lifecycle, store, search, recall, write, consolidation, decay, redaction, files),
# none of the extension profiles of spec/EXTENSIONS.md.
_PROFILES = ("format", "signing", "lifecycle", "store", "search", "recall", "write",
             "consolidation", "decay", "redaction", "files")

_LIFECYCLE_ARITY = {"supersede": 2, "begin_transition": 2, "resolve_transition": 2,
                    "archive": 1}


def _keys(args: Args) -> tuple[Any, str]:
    """An fg-agent-id ``KeyPair`` for the ``seed_hex`` argument, and its address.

    fg-agent-id keys are a signing and an agreement key; only the Ed25519 half signs, so the
    X25519 half is a fresh key that nothing here uses.
    """
    seed = decode_hex(arg(args, "seed_hex", EncodingError), name="argument 'seed_hex'")
    with translated(EncodingError):
        signing = Ed25519PrivateKey.from_private_bytes(seed)
    keys = fg_agent_id.KeyPair(signing_key=signing, agreement_key=X25519PrivateKey.generate())
    return keys, fg_agent_id.address_from_signing_key(keys.public.signing)


def _now(args: Args) -> Any:
    """The ``now`` argument, read by fg-agent-id's own timestamp parser."""
    with translated(EncodingError):
        return parse_datetime("now", arg(args, "now", EncodingError))


class FgAgentMemoryEngine(EngineBase):
    """fg-agent-memory 0.2.0, translated to the memspec-engine/1 operations."""

    name = "fg-agent-memory"
    version = FG_VERSION
    claimed_profiles = _PROFILES

    def __init__(self) -> None:
        installed = version("fg-agent-memory")
        if installed != FG_VERSION:
            raise RuntimeError(f"this adapter translates fg-agent-memory {FG_VERSION}, "
                               f"not the installed {installed}")
        self._fresh()

    def _fresh(self) -> None:
        self.store = fgm.InMemoryRecordStore()
        self.index = fgm.InMemorySearchIndex(fgm.HashEmbedder())
        self.scores = SalienceScores()
        self.touches = _RecallTouches(self.scores)

    def _written(self, records: Sequence[Any]) -> None:
        # Why: the porcelain indexes every record version it writes (Memory._note_record).
        for record in records:
            self.index.index(record)

    def op_reset(self, args: Args) -> Args:
        self._fresh()
        return {}

    # -- format --------------------------------------------------------------------------

    def op_canonicalize(self, args: Args) -> Args:
        text = arg(args, "text", CanonicalJSONError)
        with translated(CanonicalJSONError):
            # fg reads JSON with the standard library (Memory.load) and writes it with
            # fg-agent-id's canonical_json.
            return {"hex": fg_agent_id.canonical_json(json.loads(text)).hex()}

    def op_canonical_timestamp(self, args: Args) -> Args:
        with translated(EncodingError):
            value = parse_datetime("value", arg(args, "value", EncodingError))
            return {"timestamp": canonical_timestamp(value)}

    def op_confidence_to_wire(self, args: Args) -> Args:
        with translated(RecordError):
            return {"wire": fgm.confidence_to_wire(arg(args, "value", RecordError))}

    def op_address(self, args: Args) -> Args:
        key = decode_hex(arg(args, "public_key_hex", EncodingError),
                         name="argument 'public_key_hex'")
        with translated(EncodingError):
            return {"address": fg_agent_id.address_from_signing_key(key)}

    def op_parse_address(self, args: Args) -> Args:
        with translated(EncodingError):
            key = fg_agent_id.signing_key_from_address(arg(args, "address", EncodingError))
            return {"public_key_hex": key.hex()}

    def op_decode_signature(self, args: Args) -> Args:
        with translated(EncodingError):
            raw = decode_signature(arg(args, "signature", EncodingError))
        return {"hex": raw.hex()}

    def op_record_id(self, args: Args) -> Args:
        data = arg(args, "record", RecordError)
        with translated(RecordError):
            if not isinstance(data, dict):
                raise TypeError(f"record must be a mapping, got {type(data).__name__}")
            # fg computes ids only inside a MemoryRecord: build one from the birth fields,
            # with fg's own defaults (MemoryRecord.model_validate), and let fg name it.
            created: Any = data.get("created_at")  # fg's MemoryRecord parses it itself
            born = fgm.MemoryRecord(
                type=data.get("type", ""), body=data.get("body", ""),
                slots=data.get("slots", {}),
                provenance=fgm.Provenance.model_validate(data.get("provenance", {})),
                created_at=created, updated_at=created,
                evidence=tuple(data.get("evidence", ()) or ()),
            )
            # fg computes the full birth digest when it writes a tombstone (MemoryRecord.tombstone).
            digest = fgm.MemoryRecord.tombstone(born, reason="birth digest").birth_digest
        return {"id": born.id, "birth_digest": digest}

    def op_validate_record(self, args: Args) -> Args:
        with translated(RecordError):
            return {"record": fg_record(arg(args, "record", RecordError)).model_dump()}

    def op_create_record(self, args: Args) -> Args:
        now = _now(args)
        with translated(RecordError):
            provenance = fgm.Provenance.model_validate(arg(args, "provenance", RecordError))
            record = fgm.MemoryRecord.create(
                arg(args, "type", RecordError), arg(args, "body", RecordError), provenance,
                slots=args.get("slots"), confidence=args.get("confidence", 1.0),
                evidence=tuple(args.get("evidence", ())), supersedes=args.get("supersedes"),
                tags=tuple(args.get("tags", ())), created_at=now,
                occurred_at=args.get("occurred_at"), extra=args.get("extra"),
            )
            return {"record": record.model_dump()}

    def op_evolve_record(self, args: Args) -> Args:
        now = _now(args)
        changes = arg(args, "changes", RecordError)
        if not isinstance(changes, dict):
            raise RecordError(f"argument 'changes' must be an object, not "
                              f"{type(changes).__name__}")
        with translated(RecordError):
            record = fg_record(arg(args, "record", RecordError))
            update = {**fg_changes(record, changes), "updated_at": now}
            return {"record": record.evolve(update).model_dump()}

    def op_validate_file(self, args: Args) -> Args:
        with translated(FileError, record_error=FileError):
            memory_file = fgm.MemoryFile.model_validate(arg(args, "file", FileError))
            return {"file": memory_file.model_dump()}

    # -- signing -------------------------------------------------------------------------

    def op_derive_key(self, args: Args) -> Args:
        keys, address = _keys(args)
        return {"address": address, "public_key_hex": keys.public.signing.hex()}

    def op_signing_input(self, args: Args) -> Args:
        context = arg(args, "context", SignatureError)
        with translated(CanonicalJSONError):
            raw = fgm.signing_input(context, arg(args, "payload", CanonicalJSONError))
        return {"hex": raw.hex()}

    def op_ed25519_verify(self, args: Args) -> Args:
        key, message, signature = (
            decode_hex(arg(args, name, EncodingError), name=f"argument {name!r}")
            for name in ("public_key_hex", "message_hex", "signature_hex"))
        public = fg_agent_id.PublicKeys(signing=key, agreement=bytes(32))
        try:
            with translated(EncodingError):
                public.verify(signature, message)
        except SignatureError:
            return {"valid": False}
        return {"valid": True}

    def op_sign_record(self, args: Args) -> Args:
        keys, address = _keys(args)
        with translated(RecordError):
            record = fg_record(arg(args, "record", RecordError))
            return {"record": record.sign(keys, address).model_dump()}

    def op_verify_record(self, args: Args) -> Args:
        with translated(RecordError):
            record = fg_record(arg(args, "record", RecordError))
            if not record.signed_by and not record.signature:
                return {"signed": False}
            record.verify()
        return {"signed": True}

    def op_sign_file(self, args: Args) -> Args:
        keys, address = _keys(args)
        with translated(FileError, record_error=FileError):
            memory_file = fgm.MemoryFile.model_validate(arg(args, "file", FileError))
            signed = memory_file.model_copy(update={"agent": address}).sign(keys)
            return {"file": signed.model_dump()}

    def op_verify_file(self, args: Args) -> Args:
        required = arg(args, "require_signature", FileError)
        if not isinstance(required, bool):
            raise FileError("argument 'require_signature' must be a boolean")
        with translated(FileError, record_error=FileError):
            memory_file = fgm.MemoryFile.model_validate(arg(args, "file", FileError))
        # fg verifies a file only when it loads one (Memory.load): with verify=True the file
        # signature is required and every record naming a signer is verified; with
        # verify=False nothing is.
        if required:
            with translated(SignatureError, record_error=SignatureError):
                memory_file.verify()
                for record in memory_file.records:
                    if record.signed_by or record.signature:
                        record.verify()
        return {}

    # -- lifecycle -----------------------------------------------------------------------

    def op_is_legal(self, args: Args) -> Args:
        with translated(LifecycleError):
            return {"legal": fgm.is_legal(arg(args, "from", LifecycleError),
                                          arg(args, "to", LifecycleError))}

    def op_lifecycle(self, args: Args) -> Args:
        operation = arg(args, "operation", LifecycleError)
        raw = arg(args, "records", LifecycleError)
        if not isinstance(raw, list):
            raise LifecycleError("argument 'records' must be an array")
        now = _now(args)
        reason = args.get("reason", "")
        with translated(LifecycleError, record_error=RecordError):
            records = [fg_record(item) for item in raw]
        with translated(LifecycleError):
            if operation == "refresh_rule_flag":
                if not records:
                    raise LifecycleError("refresh_rule_flag needs the rule as records[0]")
                evidence = {record.id: record for record in records[1:]}
                return {"records": dump_records(
                    [fgm.refresh_rule_flag(records[0], evidence, now=now)])}
            arity = _LIFECYCLE_ARITY.get(operation)
            if arity is None:
                raise LifecycleError(f"unknown lifecycle operation {operation!r}")
            if len(records) != arity:
                raise LifecycleError(f"{operation} takes {arity} record(s), not {len(records)}")
            if operation == "supersede":
                return {"records": dump_records(
                    [fgm.supersede(records[0], records[1], reason=reason, now=now)])}
            if operation == "archive":
                return {"records": dump_records(
                    [fgm.archive(records[0], reason=reason, now=now)])}
            function = (fgm.begin_transition if operation == "begin_transition"
                        else fgm.resolve_transition)
            return {"records": dump_records(function(records[0], records[1], reason=reason,
                                                     now=now))}

    def op_apply_proposal(self, args: Args) -> Args:
        _now(args)  # fg's apply_proposal takes no time: it reads its own clock
        with translated(ProposalError):
            proposal = fg_proposal(arg(args, "proposal", ProposalError))
            written = fgm.apply_proposal(self.store, proposal)
        self._written(written)
        return {"written": dump_records(written)}

    def op_resolve(self, args: Args) -> Args:
        now = _now(args)
        with translated(LifecycleError):
            written = fgm.resolve(self.store, winner_id=arg(args, "winner_id", ProposalError),
                                  loser_id=arg(args, "loser_id", ProposalError),
                                  reason=arg(args, "reason", LifecycleError), now=now)
        self._written(written)
        return {"written": dump_records(written)}

    # -- store ---------------------------------------------------------------------------

    def op_put(self, args: Args) -> Args:
        with translated(RecordError):
            record = fg_record(arg(args, "record", RecordError))
            self.store.put(record)
            count = len(self.store.history(record.id))
        self._written([record])
        return {"version": count}

    def op_get(self, args: Args) -> Args:
        with translated(NotFoundError):
            return {"record": self.store.get(arg(args, "id", RecordError)).model_dump()}

    def op_history(self, args: Args) -> Args:
        with translated(NotFoundError):
            return {"records": dump_records(self.store.history(arg(args, "id", RecordError)))}

    def op_list(self, args: Args) -> Args:
        with translated(RecordError):
            return {"records": dump_records(self.store.list(
                state=args.get("state"), type=args.get("type"), tag=args.get("tag")))}

    def op_iterate(self, args: Args) -> Args:
        return {"records": dump_records(list(self.store))}

    # -- search and recall ---------------------------------------------------------------

    def op_index(self, args: Args) -> Args:
        with translated(RecordError):
            self.index.index(fg_record(arg(args, "record", RecordError)))
        return {}

    def op_search(self, args: Args) -> Args:
        with translated(LimitError):
            pairs = self.index.candidates(arg(args, "query", EncodingError),
                                          arg(args, "k", LimitError))
        return {"candidates": [{"id": rid, "score": score} for rid, score in pairs]}

    def op_embed(self, args: Args) -> Args:
        with translated(EncodingError):
            return {"vector": list(fgm.HashEmbedder().embed(arg(args, "text", EncodingError)))}

    def op_recall(self, args: Args) -> Args:
        now = _now(args)
        with translated(EncodingError):
            block = fgm.retrieve(
                arg(args, "query", EncodingError), store=self.store, indexes=(self.index,),
                budget_tokens=arg(args, "budget_tokens", LimitError), now=now,
                include_history=args.get("include_history", False),
                include_archived=args.get("include_archived", False),
                touches=self.touches,
            )
        return dump_retrieved(block)

    def op_touch(self, args: Args) -> Args:
        now = _now(args)
        record_id = arg(args, "id", RecordError)
        self.scores.touch(record_id, now=now)
        return {"count": self.scores.touches(record_id)}

    # -- pipeline ------------------------------------------------------------------------

    def op_ingest(self, args: Args) -> Args:
        now = _now(args)
        wire = arg(args, "proposals", ProposalError)
        if not isinstance(wire, list):
            raise ProposalError("argument 'proposals' must be an array")
        accepted: list[str] = []
        deduped: list[str] = []
        rejected: list[Args] = []
        # One ingest per proposal, so that each rejection keeps the index the protocol names.
        for position, item in enumerate(wire):
            try:
                with translated(ProposalError):
                    proposal = fg_proposal(item)
            except (RecordError, ProposalError, EncodingError) as exc:
                rejected.append({"index": position, "code": exc.code, "message": str(exc)})
                continue
            with translated(ProposalError):
                report = fgm.ingest("", extractor=ReplayExtractor([proposal]), store=self.store,
                                    provenance=fgm.Provenance(kind="memspec-kit"), now=now,
                                    scores=self.scores)
            self._written([self.store.get(rid) for rid in report.accepted])
            accepted.extend(report.accepted)
            deduped.extend(report.deduped)
            rejected.extend({"index": position, "code": "proposal", "message": item.error}
                            for item in report.rejected)
        return {"accepted": accepted, "deduped": deduped, "rejected": rejected}

    def op_consolidate(self, args: Args) -> Args:
        now = _now(args)
        config = args.get("config") or {}
        with translated(LimitError):
            if not isinstance(config, dict):
                raise TypeError("config must be an object")
            cfg = fgm.ConsolidationConfig(
                near_dup_threshold=float(config.get("near_dup_threshold", "0.6")),
                promotion_threshold=config.get("promotion_threshold", 3))
            # The porcelain's operators: contradictions are detected, never auto-resolved.
            operators = fgm.ConsolidationOperators(
                near_dup=fgm.TrigramNearDupOperator(threshold=cfg.near_dup_threshold),
                contradiction=fgm.HeuristicContradictionOperator(), resolver=None)
            report = fgm.consolidate(self.store, operators=operators, now=now, config=cfg)
        self._written([self.store.get(rid) for rid in report.touched])
        return {
            "actions": dump_actions(report.actions),
            # fg rejects an operator's output only by its pipeline validation (ProposalError).
            "rejections": [{"pass": CONSOLIDATION_PASSES.get(r.pass_name, r.pass_name),
                            "detail": r.detail, "code": "proposal"}
                           for r in report.rejections],
            "deferred": [],
        }

    def op_decay(self, args: Args) -> Args:
        now = _now(args)
        config = args.get("config") or {}
        with translated(LimitError):
            if not isinstance(config, dict):
                raise TypeError("config must be an object")
            report = fgm.decay(self.store, scores=self.scores, now=now,
                               config=fgm.DecayConfig(**config))
        self._written([self.store.get(rid) for action in report.archived
                       for rid in action.record_ids])
        return {
            "archived": [rid for action in report.archived for rid in action.record_ids],
            "protected": dump_protections(report.protected),
            "saliences": dict(report.saliences),
        }

    def op_redact(self, args: Args) -> Args:
        _now(args)  # fg's redaction takes no time: the tombstone is stamped by fg's clock
        with translated(RecordError):
            tombstone = self.store.redact(arg(args, "id", RecordError),
                                          arg(args, "reason", RecordError))
        self._written([tombstone])
        return {"record": tombstone.model_dump()}

    # -- files ---------------------------------------------------------------------------

    def op_export(self, args: Args) -> Args:
        now = _now(args)
        identity = _keys(args) if "seed_hex" in args else None
        with translated(FileError, record_error=FileError):
            # Memory.export: the latest version of every record, signed with an identity.
            memory_file = fgm.MemoryFile.create(
                self.store.list(), agent=identity[1] if identity else None, created_at=now)
            if identity is not None:
                memory_file = memory_file.sign(identity[0])
        return {"file": memory_file.model_dump()}

    def op_load(self, args: Args) -> Args:
        verify = arg(args, "verify", FileError)
        if not isinstance(verify, bool):
            raise FileError("argument 'verify' must be a boolean")
        data = arg(args, "file", FileError)
        with translated(FileError, record_error=FileError):
            ids = [record.id for record in fgm.MemoryFile.model_validate(data).records]
        before = {record.id for record in self.store.list()}
        with tempfile.TemporaryDirectory(prefix="memspec-fg-") as folder:
            path = Path(folder) / "memory.json"
            path.write_text(json.dumps(data), encoding="utf-8")
            # The file parsed above, so what fg's loader raises now is its verification.
            with translated(SignatureError, record_error=SignatureError):
                # fg's own loader (it parses the file again), over this engine's store and index.
                fgm.Memory.load(path, verify=verify, store=self.store, indexes=(self.index,),
                                auto_consolidate=False)
        loaded = [rid for rid in ids if rid not in before]
        skipped = [rid for rid in ids if rid in before]
        return {"loaded": loaded, "skipped": skipped}


def create_engine() -> FgAgentMemoryEngine:
    """A fresh fg-agent-memory 0.2.0 engine (for ``--engine ...:create_engine``)."""
    return FgAgentMemoryEngine()


def main(argv: Sequence[str] | None = None) -> int:
    """Serve fg-agent-memory over the process protocol on stdin/stdout (PROTO-1)."""
    from memspec._protocol_server import serve

    del argv
    return serve(create_engine())


if __name__ == "__main__":
    sys.exit(main())
