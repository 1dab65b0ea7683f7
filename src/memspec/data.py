"""memspec's package data, typed: the spec's tables, its requirements and the golden vectors.

This is the one public door to the data that ships inside the package
(``spec/*.json``, ``vectors/*.json``), in the manner of
``cryptography_vectors``: a few frozen types, each table parsed once and
cached, and a typed :class:`DataNotFound` when something asked for is not
there. Nothing here re-states a table; every value comes from the JSON. (The
vectors' types live in ``memspec._data_vectors``; import them from here.)

    >>> from memspec import data
    >>> data.legality().is_legal("active", "archived")
    True
    >>> data.operations()["put"].effect
    'writes'
    >>> [case.id for case in data.vectors("timestamps.json").cases()][:1]
    ['timestamps/fg-agent-id-1']
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType
from typing import Any, Literal

from memspec._data import DataNotFound, data_path, load_json
from memspec._data import frozen_json as _frozen
from memspec._data_vectors import (
    VectorCase,
    VectorFile,
    VectorGroup,
    published,
    vector_files,
    vectors,
)

__all__ = [
    "Area",
    "DataNotFound",
    "Effect",
    "LegalityTable",
    "Operation",
    "Profile",
    "Requirement",
    "Tombstone",
    "Transition",
    "VectorCase",
    "VectorFile",
    "VectorGroup",
    "always_profiles",
    "has_resource",
    "json_resource",
    "legality",
    "operations",
    "operations_with",
    "profiles",
    "proposal_kinds",
    "published",
    "record_states",
    "record_types",
    "requirements",
    "resource_bytes",
    "resource_text",
    "spec_text",
    "tombstone",
    "vector_files",
    "vectors",
]

Effect = Literal["session", "pure", "reads", "writes"]
#: The folders of the package data: the spec's tables and prose, the JSON Schemas, the vectors.
Area = Literal["spec", "schemas", "vectors"]


class _Table(Mapping[str, Any]):
    """A read-only name -> value mapping that raises DataNotFound for an unknown name."""

    def __init__(self, what: str, items: dict[str, Any]) -> None:
        self._what = what
        self._items = items

    def __getitem__(self, name: str) -> Any:
        try:
            return self._items[name]
        except KeyError:
            raise DataNotFound(self._what, name, tuple(self._items)) from None

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def get(self, name: str, default: Any = None) -> Any:
        return self._items.get(name, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"<memspec.data {self._what} table: {len(self._items)} entries>"


# --------------------------------------------------------------------------- files as shipped


def _resource(area: Area, name: str) -> Any:
    path = data_path(area, name)
    if not path.is_file():
        raise DataNotFound(f"file in memspec.{area}", name)
    return path


def has_resource(area: Area, name: str) -> bool:
    """Whether the package data has the file ``name`` (a relative path) in ``area``."""
    return bool(data_path(area, name).is_file())


def json_resource(area: Area, name: str) -> Mapping[str, Any]:
    """A JSON file of the package data exactly as shipped (``json_resource("spec",
    "tamper.json")``, ``json_resource("vectors", "published/fg-agent-id-0.2.json")``).

    Parsed once and shared: the value is read only (typed ``Mapping``; copy it to change
    it). It stays plain JSON (dicts and lists) so that a JSON Schema validator or
    ``json.dumps`` takes it as it is; the typed views above are the way to read a table.
    """
    _resource(area, name)
    value: Mapping[str, Any] = load_json(area, name)
    return value


def resource_text(area: Area, name: str) -> str:
    """A text file of the package data, decoded as UTF-8."""
    text: str = _resource(area, name).read_text(encoding="utf-8")
    return text


def resource_bytes(area: Area, name: str) -> bytes:
    """A file of the package data, byte for byte."""
    raw: bytes = _resource(area, name).read_bytes()
    return raw


def spec_text(name: str = "SPEC.md") -> str:
    """The normative prose: ``SPEC.md``, or ``EXTENSIONS.md`` for the extension profiles."""
    return resource_text("spec", name)


# --------------------------------------------------------------------------- the legality table


@dataclass(frozen=True)
class Transition:
    """One from/to pair of the lifecycle legality table (``spec/legality.json``)."""

    from_state: str
    to_state: str
    legal: bool
    condition: str
    requirements: tuple[str, ...]


@dataclass(frozen=True)
class LegalityTable:
    """The complete legality table: every pair of the lifecycle states."""

    states: tuple[str, ...]
    transitions: tuple[Transition, ...]
    #: The states whose records count as live evidence for a rule (RULE-2).
    live_states: frozenset[str] = frozenset()

    def transition(self, from_state: str, to_state: str) -> Transition:
        """The table's entry for a pair; DataNotFound for a state outside the table."""
        for state in (from_state, to_state):
            if state not in self.states:
                raise DataNotFound("lifecycle state", state, self.states)
        return next(t for t in self.transitions
                    if t.from_state == from_state and t.to_state == to_state)

    def is_legal(self, from_state: str, to_state: str) -> bool:
        """Whether the table allows the change."""
        return self.transition(from_state, to_state).legal

    @property
    def legal_pairs(self) -> frozenset[tuple[str, str]]:
        """Every (from, to) pair the table allows."""
        return frozenset((t.from_state, t.to_state) for t in self.transitions if t.legal)

    def legal_targets(self, from_state: str) -> tuple[str, ...]:
        """The states a record in ``from_state`` may move to, in table order."""
        return tuple(t.to_state for t in self.transitions
                     if t.from_state == from_state and t.legal)


@cache
def legality() -> LegalityTable:
    """The lifecycle legality table."""
    raw = load_json("spec", "legality.json")
    return LegalityTable(
        states=tuple(raw["states"]),
        transitions=tuple(
            Transition(t["from"], t["to"], bool(t["legal"]), t["condition"],
                       tuple(t.get("requirements", ())))
            for t in raw["transitions"]
        ),
        live_states=frozenset(raw["live_states"]),
    )


# ------------------------------------------------------------------ profiles and operations


@dataclass(frozen=True)
class Profile:
    """A conformance profile: core and extension profiles alike."""

    name: str
    title: str
    requires: tuple[str, ...]
    summary: str
    #: Checked for every engine without being claimed (``core``).
    always: bool = False
    #: An optional extension profile (``spec/extensions.json``).
    extension: bool = False


@dataclass(frozen=True)
class Operation:
    """One engine operation of the operation table."""

    name: str
    #: The profile that owns it; None for the protocol's own operations.
    profile: str | None
    effect: Effect
    #: The section of SPEC.md (``X``-prefixed: of EXTENSIONS.md) that specifies it.
    section: str
    summary: str
    args: str
    result: str
    extension: bool = False
    #: Argument name -> the error class of a request that leaves it out (when required) or
    #: gives it a value of the wrong shape under ``schemas/protocol.json``.
    argument_errors: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def argument_names(self) -> tuple[str, ...]:
        """The argument names, without the optional marker."""
        return tuple(a.strip().rstrip("?") for a in self.args.strip("{}").split(",") if a.strip())

    @property
    def optional_arguments(self) -> frozenset[str]:
        """The argument names marked optional (``name?``)."""
        return frozenset(a.strip().rstrip("?") for a in self.args.strip("{}").split(",")
                         if a.strip().endswith("?"))

    @property
    def pure(self) -> bool:
        """Whether the operation reads and writes no engine state."""
        return self.effect == "pure"

    @property
    def writes(self) -> bool:
        """Whether the operation may change engine state (a rejection must not, PROTO-7)."""
        return self.effect == "writes"


def _both(member: str) -> list[tuple[str, dict[str, Any], bool]]:
    core: dict[str, Any] = load_json("spec", "operations.json")[member]
    extra: dict[str, Any] = load_json("spec", "extensions.json")[member]
    # Why core wins: an extension can add names but never redefine a core one.
    return ([(k, v, False) for k, v in core.items()]
            + [(k, v, True) for k, v in extra.items() if k not in core])


@cache
def profiles() -> Mapping[str, Profile]:
    """Every profile by name, core then extension, in table order."""
    return _Table("profile", {
        name: Profile(name, raw["title"], tuple(raw["requires"]), raw["summary"],
                      bool(raw.get("always", False)), ext)
        for name, raw, ext in _both("profiles")
    })


@cache
def operations() -> Mapping[str, Operation]:
    """Every operation by name, core then extension, in table order."""
    return _Table("operation", {
        name: Operation(name, raw["profile"], raw["effect"], raw["section"], raw["summary"],
                        raw["args"], raw["result"], ext,
                        MappingProxyType(dict(raw["argument_errors"])))
        for name, raw, ext in _both("operations")
    })


def always_profiles() -> frozenset[str]:
    """The profiles every engine is checked against without claiming them (``core``)."""
    return frozenset(name for name, p in profiles().items() if p.always)


def operations_with(effect: Effect) -> frozenset[str]:
    """The names of the operations of one effect (``operations_with("pure")``)."""
    return frozenset(name for name, op in operations().items() if op.effect == effect)


# --------------------------------------------------------------------------- record shapes


@dataclass(frozen=True)
class Tombstone:
    """What every redaction tombstone fixes, from ``schemas/record.json`` (RED-3, RED-4)."""

    #: Field -> the value every tombstone has (state, body, slots, tags, provenance, ...).
    fixed: Mapping[str, Any]
    #: Fields a tombstone never carries (``occurred_at``).
    absent: tuple[str, ...]
    #: Fields only a tombstone carries, and always (``redacted``, ``redaction_reason``, ...).
    required: tuple[str, ...]

    def fixed_values(self) -> dict[str, Any]:
        """The fixed fields as plain, fresh JSON, ready to merge into a record."""
        return {name: _thawed(value) for name, value in self.fixed.items()}


def _thawed(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _thawed(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_thawed(v) for v in value]
    return value


def _schema_value(schema: Mapping[str, Any], where: str) -> Any:
    """The one value a sub-schema allows (a const, a null type, an object of such)."""
    if "$ref" in schema:
        file, _, pointer = schema["$ref"].partition("#/$defs/")
        return _schema_value(load_json("schemas", file)["$defs"][pointer], where)
    if "const" in schema:
        return schema["const"]
    if schema.get("type") == "null":
        return None
    if schema.get("type") == "object" and "properties" in schema:
        return {k: _schema_value(v, f"{where}/{k}") for k, v in schema["properties"].items()}
    raise DataNotFound("single-valued schema", where)


@cache
def tombstone() -> Tombstone:
    """The tombstone's fixed fields, read from the record schema's ``tombstone`` definition."""
    rule = load_json("schemas", "record.json")["$defs"]["tombstone"]
    props: dict[str, Any] = rule["properties"]
    return Tombstone(
        fixed=_frozen({k: _schema_value(v, f"tombstone/{k}") for k, v in props.items()
                       if v is not False}),
        absent=tuple(k for k, v in props.items() if v is False),
        required=tuple(rule["required"]),
    )


@cache
def record_states() -> tuple[str, ...]:
    """The four lifecycle states, in the order of ``schemas/defs.json`` (REC-4)."""
    return tuple(load_json("schemas", "defs.json")["$defs"]["record-state"]["enum"])


@cache
def record_types() -> tuple[str, ...]:
    """The four record types, in the order of ``schemas/defs.json`` (REC-4)."""
    return tuple(load_json("schemas", "defs.json")["$defs"]["record-type"]["enum"])


@cache
def proposal_kinds() -> tuple[str, ...]:
    """The kinds of operator proposal (``schemas/proposal.json``), in schema order."""
    return tuple(load_json("schemas", "proposal.json")["properties"]["kind"]["enum"])


# --------------------------------------------------------------------------- requirements


@dataclass(frozen=True)
class Requirement:
    """One requirement of the spec (``spec/requirements.json``)."""

    id: str
    section: str
    level: str
    profile: str
    summary: str
    #: Appendix A's reason when the requirement cannot be observed through the engine interface.
    untestable: str | None = None
    #: Appendix B's reason when the requirement reaches only what an engine claims (SPEC 19.2).
    claim_conditional: str | None = None

    @property
    def binding(self) -> bool:
        """Whether failing it fails certification (MUST / MUST NOT)."""
        return self.level in ("MUST", "MUST NOT")


@cache
def requirements() -> Mapping[str, Requirement]:
    """Every requirement by id, in spec order."""
    raw = load_json("spec", "requirements.json")
    return _Table("requirement", {
        r["id"]: Requirement(r["id"], r.get("section", ""), r["level"], r["profile"],
                             r.get("summary", ""), r.get("untestable") or None,
                             r.get("claim_conditional") or None)
        for r in raw["requirements"]
    })
