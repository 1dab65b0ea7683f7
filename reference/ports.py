"""The ports the engine is built around: RecordStore, Embedder, SearchIndex, Operator.

A port names what the engine needs, never how a backend provides it. Redaction is
deliberately absent from RecordStore (RED-6): it lives on the concrete stores as a
separate, explicitly invoked maintenance operation. No port offers deletion (STORE-6).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from memspec import NotFoundError, RecordError
from memspec.reference._ids import is_record_id
from memspec.reference.records import MemoryRecord, Provenance, RecordState, RecordType

if TYPE_CHECKING:
    from memspec.reference.proposals import Proposal

__all__ = [
    "Closable",
    "Embedder",
    "Operator",
    "RecordStore",
    "Redacting",
    "SearchIndex",
    "list_filters",
    "record_matches",
]


def _filter_value(enum: type[RecordState] | type[RecordType], value: object,
                  name: str) -> str:
    choices = [m.value for m in enum]
    if value not in choices:
        raise RecordError(f"{name} filter {value!r} is not one of {choices}",
                          requirement="REC-4")
    return str(value)


def list_filters(state: object = None, type: object = None,
                 tag: object = None) -> tuple[str | None, str | None, str | None]:
    """Checked ``list`` filters as plain strings (RecordError on an unknown state or type)."""
    if tag is not None and not isinstance(tag, str):
        raise RecordError(f"tag filter {tag!r} is not a string", requirement="REC-10")
    return (
        None if state is None else _filter_value(RecordState, state, "state"),
        None if type is None else _filter_value(RecordType, type, "type"),
        tag,
    )


def record_matches(record: MemoryRecord, state: str | None, type: str | None,
                   tag: str | None) -> bool:
    """Whether ``record`` passes every given (checked) ``list`` filter."""
    return ((state is None or record.state.value == state)
            and (type is None or record.type.value == type)
            and (tag is None or tag in record.tags))


class RecordStore(ABC):
    """Append-only storage of record versions keyed by record id.

    ``put`` appends (never overwrites); ``get`` answers the latest version;
    ``history`` every version, oldest first. Unknown ids raise NotFoundError and
    malformed ids RecordError before they reach any backend.
    """

    @abstractmethod
    def put(self, record: MemoryRecord) -> int:
        """Validate ``record`` and append it as the next version of its id.

        Returns the version number (1-based).
        """

    @abstractmethod
    def get(self, record_id: str) -> MemoryRecord:
        """The latest version of ``record_id``."""

    @abstractmethod
    def history(self, record_id: str) -> tuple[MemoryRecord, ...]:
        """Every version of ``record_id`` in write order, oldest first."""

    @abstractmethod
    def ids(self) -> tuple[str, ...]:
        """Every stored record id, ascending."""

    def list(
        self,
        *,
        state: RecordState | str | None = None,
        type: RecordType | str | None = None,
        tag: str | None = None,
    ) -> tuple[MemoryRecord, ...]:
        """Latest versions matching every given filter, ordered by id."""
        filters = list_filters(state, type, tag)
        return tuple(record for record in self if record_matches(record, *filters))

    def __iter__(self) -> Iterator[MemoryRecord]:
        """The latest version of every record, ordered by id."""
        for record_id in self.ids():
            yield self.get(record_id)

    def __contains__(self, record_id: object) -> bool:
        if not is_record_id(record_id):
            return False
        assert isinstance(record_id, str)
        try:
            self.get(record_id)
        except NotFoundError:
            return False
        return True

    def close(self) -> None:
        """Release the store's resources (nothing to do by default)."""
        return None

    def __enter__(self) -> RecordStore:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


class Embedder(ABC):
    """Maps text to a fixed-length vector."""

    @property
    @abstractmethod
    def dimensions(self) -> int:
        """Length of every vector :meth:`embed` returns."""

    @abstractmethod
    def embed(self, text: str) -> tuple[float, ...]:
        """The vector for ``text``."""


class SearchIndex(ABC):
    """Makes records findable; ``index`` of a known id replaces that id's entry."""

    @abstractmethod
    def index(self, record: MemoryRecord) -> None:
        """Index ``record`` (replacing whatever this id was indexed as before)."""

    @abstractmethod
    def candidates(self, query: str, k: int) -> tuple[tuple[str, float], ...]:
        """At most ``k`` ``(record id, score)`` pairs, best first, ties by id."""


@runtime_checkable
class Closable(Protocol):
    """A resource that holds something to release (a connection, a file, a pending sidecar)."""

    def close(self) -> None:
        """Release it."""
        ...


@runtime_checkable
class Redacting(Protocol):
    """A store that can redact: the capability RecordStore deliberately lacks (RED-6)."""

    def redact(self, record_id: str, *, reason: str, now: str) -> MemoryRecord:
        """Replace every version of ``record_id`` with its tombstone; return the tombstone."""
        ...


class Operator(ABC):
    """The model touchpoint: reads input, returns typed proposals, never writes (OP-4)."""

    @abstractmethod
    def propose(self, text: str, provenance: Provenance) -> tuple[Proposal, ...]:
        """Proposals for ``text`` from the source ``provenance`` describes."""
