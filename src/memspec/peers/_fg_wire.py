"""Wire translation for the fg-agent-memory adapter: its exceptions, its objects, its reports.

Nothing here judges input. A wire value goes to fg-agent-memory's own constructors and parsers
(``MemoryRecord.model_validate``, ``MemoryFile.model_validate``, ``Provenance.model_validate``);
what they raise is mapped to an error class of SPEC.md section 18.4; what they return is dumped
with fg's own ``model_dump``. fg's reports name passes, protections and reasons in its own
words, which are mapped to the protocol's vocabulary one to one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import fg_agent_id
import fg_agent_memory as fgm

from memspec._errors import (
    EncodingError,
    LifecycleError,
    LimitError,
    MemspecError,
    NotFoundError,
    ProposalError,
    RecordError,
    SignatureError,
)

__all__ = [
    "CONSOLIDATION_PASSES",
    "Args",
    "arg",
    "dump_actions",
    "dump_protections",
    "dump_records",
    "dump_retrieved",
    "fg_changes",
    "fg_proposal",
    "translated",
]

Args = dict[str, Any]
_Class = type[MemspecError]

#: fg's consolidation pass names -> the protocol's (schemas/protocol.json, consolidate.result).
CONSOLIDATION_PASSES = {
    "dedup.exact": "exact-dedup",
    "dedup.near": "near-dup",
    "contradiction": "contradiction",
    "resolution": "resolution",
    "promotion": "promotion",
    "rule-flags": "flag-sweep",
}

# fg's decay protections, as its decay pass words them (pipeline/decay.py, _protection).
_PROTECTIONS = (
    ("in an unresolved transition", "transitional"),
    ("unflagged rule", "unflagged-rule"),
    ("cited as evidence by an active rule", "rule-evidence"),
)

# fg's retrieval reasons, as retrieval.py words them, -> the protocol's reason codes.
_REASONS = (
    ("matched query", "query-match"),
    ("other side of the transition", "transition-partner"),
    ("superseded predecessor", "predecessor"),
)


@contextmanager
def translated(default: _Class, *, record_error: _Class = RecordError) -> Iterator[None]:
    """Run fg code, turning what it raises into the error class of SPEC.md 18.4.

    fg's typed errors map one to one (``record_error`` is the class of fg's ``RecordError``,
    which fg raises for a malformed record *or* memory file). fg's untyped rejections, the
    ``TypeError`` and ``ValueError`` its parsers raise for a value of the wrong shape, take the
    operation's ``default`` class.
    """
    try:
        yield
    except MemspecError:
        raise
    except fgm.RecordError as exc:
        raise record_error(str(exc)) from exc
    except fgm.LifecycleError as exc:
        raise LifecycleError(str(exc)) from exc
    except fgm.ProposalError as exc:
        raise ProposalError(str(exc)) from exc
    except fgm.StoreError as exc:
        # Why not-found: fg's stores raise StoreError only for an id they do not hold.
        raise NotFoundError(str(exc)) from exc
    except fg_agent_id.AddressError as exc:
        raise EncodingError(str(exc)) from exc
    except fg_agent_id.SignatureError as exc:
        raise SignatureError(str(exc)) from exc
    except RecursionError as exc:
        raise LimitError("input nests too deeply for fg-agent-memory's parsers") from exc
    except (fgm.AgentMemoryError, fg_agent_id.AgentIdError, TypeError, ValueError) as exc:
        raise default(f"{type(exc).__name__}: {exc}") from exc


def arg(args: Args, name: str, error: _Class) -> Any:
    """A required argument; its absence is a malformed request of class ``error``."""
    if name not in args:
        raise error(f"missing argument {name!r}")
    return args[name]


def dump_records(records: Sequence[Any]) -> list[dict[str, Any]]:
    """fg records as wire JSON, by fg's own ``model_dump``."""
    return [record.model_dump() for record in records]


def fg_record(data: Any) -> Any:
    """A wire record as an fg ``MemoryRecord`` (fg's parser; fg's errors propagate)."""
    return fgm.MemoryRecord.model_validate(data)


def fg_proposal(data: Any) -> Any:
    """A wire proposal as an fg ``Proposal``: fg's own dataclass, its record by fg's parser."""
    if not isinstance(data, dict):
        raise ProposalError(f"a proposal is an object, not {type(data).__name__}")
    record = data.get("record")
    kind: Any = data.get("kind")  # fg's Proposal parses its kind itself
    return fgm.Proposal(
        kind=kind,
        record=fg_record(record) if record is not None else None,
        target_id=data.get("target_id"),
        other_id=data.get("other_id"),
        reason=data.get("reason", ""),
    )


def fg_changes(record: Any, changes: Args) -> Args:
    """Wire field changes as the update ``MemoryRecord.evolve`` takes.

    Nested wire objects become fg's own types (``Transition``, ``Provenance``) through their
    ``model_validate``; a name that is not an fg field is an extension field, which fg keeps in
    ``extra``.
    """
    known = set(fgm.MemoryRecord.__dataclass_fields__) - {"extra"}
    update: Args = {}
    extension: Args = {}
    for name, value in changes.items():
        if name not in known:
            extension[name] = value
        elif name == "transition":
            update[name] = fgm.Transition.model_validate(value) if value else None
        elif name == "provenance":
            update[name] = fgm.Provenance.model_validate(value)
        else:
            update[name] = value
    if extension:
        update["extra"] = {**record.extra, **extension}
    return update


def _code(text: str, table: Sequence[tuple[str, str]]) -> str:
    for prefix, code in table:
        if prefix in text:
            return code
    raise ValueError(f"fg-agent-memory wrote an unknown reason: {text!r}")


def dump_retrieved(block: Any) -> Args:
    """An fg ``RetrievedBlock`` as the recall result."""
    return {
        "records": [
            {"record": item.record.model_dump(), "score": item.score, "tokens": item.tokens,
             "reasons": [_code(reason, _REASONS) for reason in item.reasons]}
            for item in block.records
        ],
        "total_tokens": block.total_tokens,
    }


def dump_actions(actions: Sequence[Any]) -> list[Args]:
    """fg report ``Action`` objects as the consolidation report's actions."""
    return [
        {"pass": CONSOLIDATION_PASSES.get(action.pass_name, action.pass_name),
         "action": action.action, "record_ids": list(action.record_ids),
         "before": list(action.before), "after": list(action.after), "reason": action.reason}
        for action in actions
    ]


def dump_protections(actions: Sequence[Any]) -> list[Args]:
    """fg decay ``protect`` actions as the decay report's protections."""
    return [{"id": record_id, "protection": _code(action.reason, _PROTECTIONS)}
            for action in actions for record_id in action.record_ids]


class ReplayExtractor(fgm.Operator):
    """The write stage's extractor port, played by the kit: it proposes what it was given."""

    def __init__(self, proposals: Sequence[Any]) -> None:
        self._proposals = tuple(proposals)

    def propose(self, text: str, provenance: Any) -> tuple[Any, ...]:
        return self._proposals


Translator = Callable[[Args], Args]
