"""The parts a conformance report is made of (memspec.report re-exports them): the outcome
and verdict enums, and one frozen class per member object of schemas/report.json.

Each class reads itself from a schema-valid wire object (``from_wire``) and writes itself
back (``to_wire``) with the kit's members in the kit's order; an optional member the kit
leaves out when it is empty is an empty tuple or None here, and is left out again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = [
    "CrossProfile",
    "EngineInfo",
    "InputStrictness",
    "InputVerdict",
    "KitInfo",
    "Mode",
    "Outcome",
    "ProfileVerdict",
    "RequirementOutcome",
    "Signature",
    "Summary",
    "TestOutcome",
    "Verdict",
]


class Outcome(StrEnum):
    """A test's or a requirement's outcome (the schema says which words each may use)."""

    PASSED = "passed"
    FAILED = "failed"
    ERRORED = "errored"
    #: A test that failed on another requirement before judging this one.
    INCONCLUSIVE = "inconclusive"
    #: A requirement not fully judged (requirements only).
    PARTIAL = "partial"
    NOT_CLAIMED = "not-claimed"
    UNTESTABLE = "untestable"
    #: A skipped test (tests only).
    SKIPPED = "skipped"
    NOT_RUN = "not-run"


class Verdict(StrEnum):
    """A profile's or the report's verdict (``not-claimed`` is a profile's only)."""

    CERTIFIED = "certified"
    PARTIAL = "partial"
    FAILED = "failed"
    ERRORED = "errored"
    INCOMPLETE = "incomplete"
    NOT_CLAIMED = "not-claimed"


class InputStrictness(StrEnum):
    """Whether malformed input was refused with its input class (SPEC 19.2)."""

    STRICT = "strict"
    LENIENT = "lenient"


class Mode(StrEnum):
    """How the kit reached the engine."""

    IN_PROCESS = "in-process"
    PROCESS = "process"


def _strs(values: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in values or ())


@dataclass(frozen=True)
class EngineInfo:
    """Who was certified: the engine's handshake, as the engine told it (data, not markup)."""

    name: str
    version: str | None
    spec_version: str | None
    protocol: str | None
    #: The profiles the engine claimed in its handshake.
    profiles: tuple[str, ...]
    #: The engine option the kit was given (the kept website reports leave it out).
    loaded_as: str | None = None
    #: Why the engine could not be (or stopped being) reached.
    fault: str | None = None

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> EngineInfo:
        """The engine member of a schema-valid report."""
        return cls(obj["name"], obj["version"], obj["spec_version"], obj["protocol"],
                   _strs(obj["profiles"]), obj.get("loaded_as"), obj.get("fault") or None)

    def to_wire(self) -> dict[str, Any]:
        """The wire form."""
        out: dict[str, Any] = {"name": self.name, "version": self.version,
                               "spec_version": self.spec_version, "protocol": self.protocol,
                               "profiles": list(self.profiles)}
        if self.loaded_as is not None:
            out["loaded_as"] = self.loaded_as
        if self.fault:
            out["fault"] = self.fault
        return out


@dataclass(frozen=True)
class KitInfo:
    """The kit that made the report."""

    version: str
    spec_version: str | None = None
    protocol: str | None = None
    #: Further members (the schema leaves the kit object open), kept as given.
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> KitInfo:
        """The kit member of a schema-valid report."""
        known = ("version", "spec_version", "protocol")
        return cls(obj["version"], obj.get("spec_version"), obj.get("protocol"),
                   {k: v for k, v in obj.items() if k not in known})

    def to_wire(self) -> dict[str, Any]:
        """The wire form."""
        out: dict[str, Any] = {"version": self.version}
        if self.spec_version is not None:
            out["spec_version"] = self.spec_version
        if self.protocol is not None:
            out["protocol"] = self.protocol
        out.update(self.extra)
        return out


@dataclass(frozen=True)
class InputVerdict:
    """Input strictness, of one profile or of the whole claim (SPEC 19.2)."""

    verdict: InputStrictness
    #: The requirements failed only by input-strictness checks.
    requirements: tuple[str, ...] = ()

    @classmethod
    def of(cls, requirements: Sequence[str]) -> InputVerdict:
        """Lenient with ``requirements`` if there are any, else strict."""
        return cls(InputStrictness.LENIENT if requirements else InputStrictness.STRICT,
                   tuple(requirements))

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> InputVerdict:
        """An input verdict of a schema-valid report."""
        return cls(InputStrictness(obj["verdict"]), _strs(obj["requirements"]))

    def to_wire(self) -> dict[str, Any]:
        """The wire form."""
        return {"verdict": self.verdict.value, "requirements": list(self.requirements)}


@dataclass(frozen=True)
class ProfileVerdict:
    """One profile's verdict."""

    claimed: bool
    verdict: Verdict
    #: The profile's input strictness (claimed profiles only).
    input: InputVerdict | None = None
    #: Its MUST / MUST NOT requirements that are partial.
    unjudged: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> ProfileVerdict:
        """A profile entry of a schema-valid report."""
        given = obj.get("input")
        return cls(bool(obj["claimed"]), Verdict(obj["verdict"]),
                   InputVerdict.from_wire(given) if given is not None else None,
                   _strs(obj.get("unjudged")), _strs(obj.get("notes")))

    def to_wire(self) -> dict[str, Any]:
        """The wire form."""
        out: dict[str, Any] = {"claimed": self.claimed, "verdict": self.verdict.value}
        if self.input is not None:
            out["input"] = self.input.to_wire()
        if self.unjudged:
            out["unjudged"] = list(self.unjudged)
        if self.notes:
            out["notes"] = list(self.notes)
        return out


@dataclass(frozen=True)
class TestOutcome:
    """A test as it counts for the requirement it is listed under (or a kit check)."""

    __test__ = False  # not a pytest test class, despite the name

    #: Kit-relative test id, e.g. ``suites/test_store.py::test_put_appends``.
    nodeid: str
    outcome: Outcome
    message: str | None = None
    #: For a failed test: the requirements its failing check named.
    blamed: tuple[str, ...] = ()
    #: The failing check judged input strictness.
    input_strictness: bool = False
    #: For a not-claimed test: the unclaimed profiles it needs.
    needs: tuple[str, ...] = ()

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> TestOutcome:
        """A test entry of a schema-valid report."""
        return cls(obj["nodeid"], Outcome(obj["outcome"]), obj.get("message") or None,
                   _strs(obj.get("blamed")), bool(obj.get("input_strictness")),
                   _strs(obj.get("needs")))

    def to_wire(self) -> dict[str, Any]:
        """The wire form."""
        out: dict[str, Any] = {"nodeid": self.nodeid, "outcome": self.outcome.value}
        if self.message:
            out["message"] = self.message
        if self.blamed:
            out["blamed"] = list(self.blamed)
        if self.input_strictness:
            out["input_strictness"] = True
        if self.needs:
            out["needs"] = list(self.needs)
        return out


@dataclass(frozen=True)
class RequirementOutcome:
    """One requirement's outcome, with every test that traces to it."""

    id: str
    level: str
    profile: str
    #: MUST / MUST NOT: failing it fails the profile.
    binding: bool
    outcome: Outcome
    tests: tuple[TestOutcome, ...] = ()
    note: str | None = None
    #: For a partial requirement: the unclaimed profiles its left-out tests need.
    needs: tuple[str, ...] = ()
    #: Every failure is an input-strictness failure.
    input_only: bool = False

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> RequirementOutcome:
        """A requirement entry of a schema-valid report."""
        return cls(obj["id"], obj["level"], obj["profile"], bool(obj["binding"]),
                   Outcome(obj["outcome"]),
                   tuple(TestOutcome.from_wire(t) for t in obj["tests"]),
                   obj.get("note") or None, _strs(obj.get("needs")), bool(obj.get("input_only")))

    def to_wire(self) -> dict[str, Any]:
        """The wire form."""
        out: dict[str, Any] = {"id": self.id, "level": self.level, "profile": self.profile,
                               "binding": self.binding, "outcome": self.outcome.value,
                               "tests": [t.to_wire() for t in self.tests]}
        if self.note:
            out["note"] = self.note
        if self.needs:
            out["needs"] = list(self.needs)
        if self.input_only:
            out["input_only"] = True
        return out


@dataclass(frozen=True)
class CrossProfile:
    """A requirement of a claimed profile that some test judges only with another profile."""

    id: str
    profile: str
    needs: tuple[str, ...]
    tests: tuple[str, ...]

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> CrossProfile:
        """A ``needs_other_profiles`` entry of a schema-valid report."""
        return cls(obj["id"], obj["profile"], _strs(obj["needs"]), _strs(obj["tests"]))

    def to_wire(self) -> dict[str, Any]:
        """The wire form."""
        return {"id": self.id, "profile": self.profile, "needs": list(self.needs),
                "tests": list(self.tests)}


@dataclass(frozen=True)
class Summary:
    """Counts: tests per outcome, requirements per outcome, SHOULD / MAY warnings."""

    tests: Mapping[str, int]
    requirements: Mapping[str, int]
    warnings: int
    #: Further members (the schema leaves the summary open), kept as given.
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> Summary:
        """The summary member of a schema-valid report."""
        known = ("tests", "requirements", "warnings")
        return cls(dict(obj["tests"]), dict(obj["requirements"]), int(obj["warnings"]),
                   {k: v for k, v in obj.items() if k not in known})

    def to_wire(self) -> dict[str, Any]:
        """The wire form."""
        return {"tests": dict(self.tests), "requirements": dict(self.requirements),
                "warnings": self.warnings, **self.extra}


@dataclass(frozen=True)
class Signature:
    """The report's signature block (context conformance-report)."""

    signed_by: str
    signature: str

    def to_wire(self) -> dict[str, Any]:
        """The wire form."""
        return {"signed_by": self.signed_by, "signature": self.signature}
