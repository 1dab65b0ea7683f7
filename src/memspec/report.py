"""The conformance report, typed: what one run of the kit found about one engine.

The wire format is ``schemas/report.json``; this module is its typed model. A
:class:`Report` is read with :meth:`Report.from_wire` (or :meth:`Report.load` from
a file), which validates it against the schema first and raises
:class:`MalformedReport` naming the JSON pointer and the reason, and is written
back with :meth:`Report.to_wire`, the same JSON the kit writes, member for member
and in the same order. Outcomes and verdicts are :class:`enum.StrEnum` members, so
they compare equal to, and serialize as, the words of the wire format.

    >>> from memspec.report import Report, Verdict
    >>> report = Report.load("memspec-report/report.json")  # doctest: +SKIP
    >>> report.verdict is Verdict.CERTIFIED  # doctest: +SKIP
    True

An optional member the kit leaves out when it is empty (a profile's ``notes``, a
requirement's ``needs``, a test's ``message``) is an empty tuple or None here, and
:meth:`Report.to_wire` leaves it out again. Importing this module loads neither
jsonschema nor cryptography: validation and signatures load them when asked for.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memspec._errors import MemspecError
from memspec._report_parts import (
    CrossProfile,
    EngineInfo,
    InputStrictness,
    InputVerdict,
    KitInfo,
    Mode,
    Outcome,
    ProfileVerdict,
    RequirementOutcome,
    Signature,
    Summary,
    TestOutcome,
    Verdict,
)

if TYPE_CHECKING:
    from memspec._signing import SigningKey

__all__ = [
    "REPORT_SCHEMA_ID",
    "CrossProfile",
    "EngineInfo",
    "InputStrictness",
    "InputVerdict",
    "KitInfo",
    "MalformedReport",
    "Mode",
    "Outcome",
    "ProfileVerdict",
    "Report",
    "RequirementOutcome",
    "Signature",
    "Summary",
    "TestOutcome",
    "Verdict",
    "validate_wire",
]

REPORT_SCHEMA_ID = "https://memspec.dev/schemas/report.json"


class MalformedReport(MemspecError):
    """A conformance report that is not JSON, not an object, or does not match
    schemas/report.json. ``pointer`` is the RFC 6901 pointer of the offending member ("" for
    the whole report), ``reason`` what is wrong there, ``source`` where the report came from."""

    def __init__(self, reason: str, *, pointer: str = "", source: str | None = None,
                 message: str | None = None) -> None:
        text = message if message is not None else reason
        super().__init__(f"{source}: {text}" if source else text)
        self.pointer = pointer
        self.reason = reason
        self.source = source

    def __str__(self) -> str:
        return self.message


def _escape(part: object) -> str:
    return str(part).replace("~", "~0").replace("/", "~1")


def validate_wire(obj: object, *, source: str | None = None) -> None:
    """Raise :class:`MalformedReport` unless ``obj`` matches schemas/report.json."""
    if not isinstance(obj, dict):
        raise MalformedReport("a conformance report is a JSON object", source=source)
    from jsonschema.exceptions import best_match

    from memspec._schemas import validator_for

    error = best_match(validator_for(REPORT_SCHEMA_ID).iter_errors(obj))
    if error is not None:
        parts = list(error.absolute_path)
        where = "/" + "/".join(str(p) for p in parts)
        raise MalformedReport(
            error.message, pointer="".join("/" + _escape(p) for p in parts), source=source,
            message=f"conformance report does not match report.json at {where}: "
                    f"{error.message}")


@dataclass(frozen=True)
class Report:
    """A conformance report (schemas/report.json)."""

    engine: EngineInfo
    kit: KitInfo
    spec_version: str
    suite_digest: str
    started_at: str
    finished_at: str
    mode: Mode
    verdict: Verdict
    #: Every profile of the spec, in the spec's order.
    profiles: Mapping[str, ProfileVerdict]
    #: Every requirement of the catalogue, in its order.
    requirements: tuple[RequirementOutcome, ...]
    summary: Summary
    input_strictness: InputVerdict | None = None
    needs_other_profiles: tuple[CrossProfile, ...] | None = None
    #: The kit's checks of itself (e.g. requirement traceability).
    kit_checks: tuple[TestOutcome, ...] | None = None
    signature: Signature | None = None
    report_version: int = 1

    @classmethod
    def from_wire(cls, obj: object, *, source: str | None = None) -> Report:
        """The report ``obj`` (parsed JSON), checked against schemas/report.json first.

        Raises :class:`MalformedReport` (its message prefixed with ``source`` when given).
        """
        validate_wire(obj, source=source)
        assert isinstance(obj, dict)  # validate_wire refused anything else
        strict = obj.get("input_strictness")
        cross = obj.get("needs_other_profiles")
        checks = obj.get("kit_checks")
        block = obj.get("signature")
        return cls(
            engine=EngineInfo.from_wire(obj["engine"]),
            kit=KitInfo.from_wire(obj["kit"]),
            spec_version=obj["spec_version"],
            suite_digest=obj["suite_digest"],
            started_at=obj["started_at"],
            finished_at=obj["finished_at"],
            mode=Mode(obj["mode"]),
            verdict=Verdict(obj["verdict"]),
            profiles={str(k): ProfileVerdict.from_wire(v) for k, v in obj["profiles"].items()},
            requirements=tuple(RequirementOutcome.from_wire(e) for e in obj["requirements"]),
            summary=Summary.from_wire(obj["summary"]),
            input_strictness=InputVerdict.from_wire(strict) if strict is not None else None,
            needs_other_profiles=(tuple(CrossProfile.from_wire(e) for e in cross)
                                  if cross is not None else None),
            kit_checks=tuple(TestOutcome.from_wire(t) for t in checks) if checks is not None
            else None,
            signature=Signature(block["signed_by"], block["signature"]) if block else None,
            report_version=int(obj["report_version"]),
        )

    @classmethod
    def load(cls, path: str | Path) -> Report:
        """The report in the file ``path``.

        An unreadable file raises ``OSError``; one that is not JSON, or not a valid report,
        raises :class:`MalformedReport` naming the path.
        """
        from memspec._canonical import parse_json

        source = str(path)
        try:
            obj = parse_json(Path(path).read_bytes())
        except MalformedReport:
            raise
        except MemspecError as exc:
            raise MalformedReport(f"not a conformance report: {exc}", source=source) from None
        return cls.from_wire(obj, source=source)

    def to_wire(self) -> dict[str, Any]:
        """The report as JSON-able data: exactly the members, and the order, the kit writes."""
        out: dict[str, Any] = {
            "report_version": self.report_version,
            "engine": self.engine.to_wire(),
            "kit": self.kit.to_wire(),
            "spec_version": self.spec_version,
            "suite_digest": self.suite_digest,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "mode": self.mode.value,
            "verdict": self.verdict.value,
        }
        if self.input_strictness is not None:
            out["input_strictness"] = self.input_strictness.to_wire()
        out["profiles"] = {name: p.to_wire() for name, p in self.profiles.items()}
        out["requirements"] = [r.to_wire() for r in self.requirements]
        if self.needs_other_profiles is not None:
            out["needs_other_profiles"] = [e.to_wire() for e in self.needs_other_profiles]
        out["summary"] = self.summary.to_wire()
        if self.kit_checks is not None:
            out["kit_checks"] = [t.to_wire() for t in self.kit_checks]
        if self.signature is not None:
            out["signature"] = self.signature.to_wire()
        return out

    def to_json(self, *, indent: int | None = 2) -> str:
        """The JSON text the kit writes for the report (a final newline included)."""
        return json.dumps(self.to_wire(), indent=indent, ensure_ascii=False) + "\n"

    # -- reading

    def requirement(self, rid: str) -> RequirementOutcome | None:
        """The outcome of requirement ``rid``; None when the report does not list it."""
        return next((r for r in self.requirements if r.id == rid), None)

    def with_outcome(self, *outcomes: Outcome) -> tuple[RequirementOutcome, ...]:
        """The requirements whose outcome is one of ``outcomes``, in report order."""
        return tuple(r for r in self.requirements if r.outcome in outcomes)

    def ids(self, *outcomes: Outcome) -> tuple[str, ...]:
        """The ids of the requirements whose outcome is one of ``outcomes``."""
        return tuple(r.id for r in self.with_outcome(*outcomes))

    # -- signatures

    def unsigned(self) -> Report:
        """The report without its signature."""
        return replace(self, signature=None)

    def signed(self, key: SigningKey) -> Report:
        """The report signed by ``key`` over everything but the signature block."""
        from memspec._signing import CONTEXT_REPORT

        body = self.unsigned()
        return replace(body, signature=Signature(key.address,
                                                 key.sign(CONTEXT_REPORT, body.to_wire())))

    def verify(self) -> bool:
        """True if signed and the signature holds, False if unsigned; raises
        :class:`~memspec.SignatureError` if the signature does not hold."""
        if self.signature is None:
            return False
        from memspec._signing import CONTEXT_REPORT, verify_by_address

        verify_by_address(self.signature.signed_by, CONTEXT_REPORT, self.unsigned().to_wire(),
                          self.signature.signature)
        return True
