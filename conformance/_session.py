"""The kit's side of an engine: one connection per run, one :class:`EngineSession` per test.

Under pytest-xdist every worker holds its own connection; :class:`EngineState`
is what each hands the controller for the report.

:class:`Connection` owns the engine (in-process or :class:`ProcessEngine`),
does the handshake, normalizes in-process behaviour to what the process
protocol would show (JSON round trip, typed errors become
:class:`memspec.EngineError`, results checked against ``schemas/protocol.json``)
and gives up on an engine that faults again and again, so a hung engine cannot
stall a run for hours. :class:`EngineSession` is the ``engine`` fixture tests
use. The quick "is my adapter wired right" check is :func:`memspec.conformance.smoke`
(``_smoke``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memspec._errors import EngineError, MemspecError
from memspec._protocol_client import MAX_RESPONSE_DEPTH, nests_deeper_than
from memspec._protocol_messages import result_problems
from memspec.conformance._outcomes import ALWAYS_PROFILES
from memspec.engine import Engine, operations
from memspec.protocol import (
    INTERNAL,
    WIRE_ERROR_CODES,
    EngineFault,
    ProcessEngine,
    check_handshake,
    encode_message,
)

__all__ = [
    "CallRecord",
    "Connection",
    "EngineSession",
    "EngineState",
    "Finding",
    "in_full",
    "summarize",
]

#: Fatal faults (engine will not start, fails its handshake, stops answering) in a row
#: after which the kit stops calling the engine and errors the remaining tests at once.
MAX_CONSECUTIVE_FAULTS = 3
_TRANSCRIPT_LIMIT = 40
#: How much of one call's arguments the transcript of a failing test shows: in full, as
#: the decisive detail can be anywhere (a ``"slots": {}`` deep in a record), up to a
#: generous bound that is said when it is hit.
TRANSCRIPT_ARGS_CHARS = 20_000
#: Lines of the engine's standard error shown with a failing or errored test.
STDERR_SHOWN = 20


def summarize(value: Any, limit: int = 160) -> str:
    """A one-line, length-capped JSON rendering for messages."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    except (ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def in_full(value: Any, limit: int = TRANSCRIPT_ARGS_CHARS) -> str:
    """``value`` as one line of JSON, whole up to ``limit`` characters (the cut is said)."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    except (ValueError, RecursionError):
        text = repr(value)
    if len(text) <= limit:
        return text
    return text[:limit] + f" [... cut at {limit} of {len(text)} characters]"


_ARRAY_INDEX = re.compile(r"/[0-9]+(?=/|$)")


@dataclass(frozen=True)
class CallRecord:
    """One call in a test's transcript."""

    op: str
    args: str
    outcome: str

    def __str__(self) -> str:
        return f"{self.op}({self.args}) -> {self.outcome}"


@dataclass(frozen=True)
class Finding:
    """A requirement the kit saw broken outside any one test's own assertions.

    A protocol violation (a diagnostic line on stdout, a response with the wrong
    id) or a result that breaks its schema in one field is seen by the connection
    while some test happens to be running; that test is not the place to judge it.
    The connection records a finding instead, and the report fails ``requirement``
    once per distinct ``where``, whichever tests saw it.
    """

    requirement: str
    #: What was broken, stable across runs (e.g. ``redact result /tombstone/state_reason``).
    where: str
    message: str
    #: The call that showed it, for the engine author.
    call: str | None = None

    def to_wire(self) -> dict[str, Any]:
        """A JSON-able form (for pytest-xdist's ``workeroutput``)."""
        return {"requirement": self.requirement, "where": self.where, "message": self.message,
                "call": self.call}

    @classmethod
    def from_wire(cls, data: Any) -> Finding:
        """The finding :meth:`to_wire` gave; MemspecError if ``data`` is not such a form."""
        if (not isinstance(data, dict)
                or not all(isinstance(data.get(k), str) for k in ("requirement", "where",
                                                                   "message"))
                or not isinstance(data.get("call"), str | None)):
            raise MemspecError(f"not a kit finding from an xdist worker: {data!r:.200}")
        return cls(data["requirement"], data["where"], data["message"], data["call"])


@dataclass(frozen=True)
class EngineState:
    """What the report needs of a connection: the handshake, the fault that ended it, the mode,
    and the findings it recorded."""

    info: dict[str, Any] | None
    fault: str | None
    mode: str
    findings: tuple[Finding, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        """A JSON-able form (for pytest-xdist's ``workeroutput``)."""
        return {"info": self.info, "fault": self.fault, "mode": self.mode,
                "findings": [f.to_wire() for f in self.findings]}

    @classmethod
    def from_wire(cls, data: Any) -> EngineState:
        """The state :meth:`to_wire` gave; MemspecError if ``data`` is not such a form."""
        if (not isinstance(data, dict) or data.get("mode") not in ("in-process", "process")
                or not isinstance(data.get("info"), dict | None)
                or not isinstance(data.get("fault"), str | None)
                or not isinstance(data.get("findings", []), list)):
            raise MemspecError(f"not an engine state from an xdist worker: {data!r:.200}")
        info = data["info"]
        findings = tuple(Finding.from_wire(f) for f in data.get("findings", []))
        return cls(dict(info) if info is not None else None, data["fault"], data["mode"],
                   findings)

    @classmethod
    def merge(cls, states: Sequence[EngineState]) -> EngineState | None:
        """One state for several connections to the same engine (xdist workers, in order).

        The first handshake and the first fault win; workers whose engines answered
        different handshakes are a fault of their own, as claims would differ by worker.
        """
        if not states:
            return None
        infos = [s.info for s in states if s.info is not None]
        fault = next((s.fault for s in states if s.fault), None)
        if any(info != infos[0] for info in infos[1:]):
            fault = fault or ("the engine answered the handshake differently on different "
                              "xdist workers: " + summarize(infos[:2], 300))
        findings = tuple(dict.fromkeys(f for s in states for f in s.findings))
        return cls(infos[0] if infos else None, fault, states[0].mode, findings)


class Connection:
    """The engine under test for a whole run (for one xdist worker, under pytest-xdist)."""

    def __init__(
        self, engine: Engine, *, label: str, max_consecutive_faults: int = MAX_CONSECUTIVE_FAULTS
    ) -> None:
        self.engine = engine
        self.label = label
        self.mode = "process" if isinstance(engine, ProcessEngine) else "in-process"
        self.max_consecutive_faults = max_consecutive_faults
        self.info: dict[str, Any] | None = None
        self.start_fault: str | None = None
        self.abandoned: str | None = None
        #: Findings recorded so far, first seen first (see :class:`Finding`).
        self.findings: dict[tuple[str, str], Finding] = {}
        self._faults_in_a_row = 0
        if isinstance(engine, ProcessEngine):
            # The connection checks results itself, in both modes alike.
            engine.check_results = False

    @property
    def never_started(self) -> bool:
        """Whether the engine failed its very first handshake (or could not be started)."""
        if self.info is not None or self.start_fault is None:
            return False
        return not isinstance(self.engine, ProcessEngine) or self.engine.handshakes == 0

    def stderr_mark(self) -> int:
        """A position in the engine's standard error (0 for an in-process engine)."""
        return self.engine.stderr.mark() if isinstance(self.engine, ProcessEngine) else 0

    def stderr_since(self, mark: int) -> list[str]:
        """What a process engine wrote to standard error after ``mark`` (last lines)."""
        if not isinstance(self.engine, ProcessEngine):
            return []
        return self.engine.stderr.since(mark)

    # -- handshake and claims

    def start(self) -> dict[str, Any] | None:
        """Do the handshake once; None (with ``start_fault`` set) if it faulted."""
        if self.info is not None:
            return self.info
        try:
            info = self.engine.describe()
            info = json.loads(encode_message(info)) if isinstance(info, dict) else info
            check_handshake(info)
        except EngineFault as exc:
            self.start_fault = str(exc)
            self._count_fault(str(exc))  # a failed handshake is always fatal
            return None
        except (TypeError, ValueError, RecursionError) as exc:
            self.start_fault = f"engine's describe() is not JSON: {exc}"
            self._count_fault(self.start_fault)
            return None
        except Exception as exc:  # an in-process engine's own bug: it crashed
            self.start_fault = f"engine's describe() raised {type(exc).__name__}: {exc}"
            self._count_fault(self.start_fault)
            return None
        self.info = dict(info)
        self.start_fault = None
        return self.info

    @property
    def claimed(self) -> frozenset[str]:
        """Profiles the engine claims, plus those every engine is checked for."""
        claimed = self.info.get("profiles", []) if self.info else []
        return frozenset(claimed) | ALWAYS_PROFILES

    @property
    def name(self) -> str:
        """The engine's own name, or the label it was loaded by."""
        return str(self.info.get("name")) if self.info else self.label

    @property
    def state(self) -> EngineState:
        """The handshake, the fault that stopped the engine (if any) and the mode, for reports."""
        return EngineState(dict(self.info) if self.info is not None else None,
                           self.abandoned or self.start_fault, self.mode,
                           tuple(self.findings.values()))

    def record_finding(self, finding: Finding) -> None:
        """Keep ``finding`` for the report (once per requirement and place)."""
        self.findings.setdefault((finding.requirement, finding.where), finding)

    # -- calls

    def _count_fault(self, message: str) -> None:
        # Only faults that say the engine cannot be reached count; one bad answer (even
        # repeated by hypothesis while it shrinks) must not end the run.
        self._faults_in_a_row += 1
        if self._faults_in_a_row >= self.max_consecutive_faults:
            self.abandoned = (
                f"engine abandoned after {self._faults_in_a_row} consecutive faults; "
                f"last: {message.splitlines()[0] if message else '?'}"
            )

    def call(self, op: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """One operation; every engine behaviour maps to a result, EngineError or EngineFault."""
        __tracebackhide__ = True
        if self.abandoned:
            raise EngineFault(self.abandoned)
        if self.info is None and self.start() is None:
            raise EngineFault(f"engine is unavailable: {self.start_fault}")
        try:
            if self.mode == "process":
                result = self.engine.call(op, dict(args))
            else:
                result = self._call_in_process(op, args)
            result = self._judge_result(op, args, result)
        except EngineFault as exc:
            if exc.requirement and exc.where:
                self.record_finding(Finding(exc.requirement, exc.where,
                                            exc.message.split("\n--- engine stderr")[0],
                                            f"{op}({summarize(dict(args), 2000)})"))
            if exc.fatal:
                self._count_fault(str(exc))
            raise
        except EngineError:
            self._faults_in_a_row = 0
            raise
        self._faults_in_a_row = 0
        return result

    def _call_in_process(self, op: str, args: Mapping[str, Any]) -> dict[str, Any]:
        __tracebackhide__ = True
        wire_args = json.loads(encode_message(dict(args)))
        try:
            result = self.engine.call(op, wire_args)
        except EngineFault:
            raise
        except MemspecError as exc:
            if exc.code in WIRE_ERROR_CODES and exc.code != INTERNAL:
                raise EngineError(exc.code, str(exc), requirement=exc.requirement) from exc
            # What the process protocol answers ``internal``: not a verdict on the input, so
            # the test is errored in both modes (SPEC 18.4, 19.2).
            raise EngineFault(f"engine failed inside {op!r} (internal): unclassified error "
                              f"({exc.code!r}): {exc}") from exc
        except Exception as exc:
            raise EngineFault(f"engine crashed inside {op!r}: {type(exc).__name__}: "
                              f"{summarize(str(exc), 2000)}") from exc
        if not isinstance(result, dict):
            raise EngineFault(f"engine returned {type(result).__name__} for {op!r}, not an object")
        try:
            data = encode_message(result)
        except (TypeError, ValueError) as exc:
            raise EngineFault(f"engine's result for {op!r} is not JSON: {exc}") from exc
        except RecursionError:
            raise EngineFault(f"engine's result for {op!r} nests arrays and objects deeper "
                              f"than {MAX_RESPONSE_DEPTH} levels, the most the kit reads") from None
        result = json.loads(data)
        if (data.count(b"[") + data.count(b"{") > MAX_RESPONSE_DEPTH
                and nests_deeper_than(result, MAX_RESPONSE_DEPTH)):
            raise EngineFault(f"engine's result for {op!r} nests arrays and objects deeper "
                              f"than {MAX_RESPONSE_DEPTH} levels, the most the kit reads")
        return dict(result)

    def _judge_result(self, op: str, args: Mapping[str, Any],
                      result: dict[str, Any]) -> dict[str, Any]:
        """``result``, after recording a finding for each field that breaks its schema.

        A field off its schema fails the requirement the schema attributes it to
        (``x-memspec-requirement``), once, and the test goes on to judge the rest of
        the behaviour on its own. A result that lacks one of its own members (what every
        test of the operation reads), or breaks a rule the schemas attribute to no
        requirement, is a fault: the test is errored.
        """
        __tracebackhide__ = True
        problems = result_problems(op, result)
        unusable = [p for p in problems if p.requirement is None
                    or (p.pointer == "/" and p.keyword == "required")]
        if unusable:
            first = unusable[0]
            raise EngineFault(f"engine's result for {op!r} is malformed: {first.message}",
                              pointer=first.pointer)
        call = f"{op}({summarize(dict(args), 2000)})"
        for problem in problems:
            assert problem.requirement is not None
            where = f"{op} result {_ARRAY_INDEX.sub('/*', problem.pointer)}"
            self.record_finding(Finding(
                problem.requirement, where,
                f"engine's result for {op!r} breaks its schema at {problem.pointer}: "
                f"{problem.message}", call))
        return result

    def close(self) -> None:
        """Release the engine."""
        self.engine.close()


class EngineSession:
    """The ``engine`` fixture: one test's view of the engine under test."""

    def __init__(self, connection: Connection) -> None:
        self._conn = connection
        self.transcript: list[CallRecord] = []
        self._stderr_mark = connection.stderr_mark()

    def stderr_lines(self) -> list[str]:
        """The last lines a process engine wrote to standard error during this test."""
        return self._conn.stderr_since(self._stderr_mark)[-STDERR_SHOWN:]

    @property
    def info(self) -> dict[str, Any]:
        """The handshake: ``{name, version, spec_version, protocol, profiles}``."""
        info = self._conn.info if self._conn.info is not None else self._conn.start()
        if info is None:
            raise EngineFault(f"engine is unavailable: {self._conn.start_fault}")
        return dict(info)

    @property
    def mode(self) -> str:
        """``in-process`` or ``process``."""
        return self._conn.mode

    @property
    def raw(self) -> Engine:
        """The underlying Engine (for protocol-level checks only)."""
        return self._conn.engine

    def claims(self, profile: str) -> bool:
        """Whether the engine claims ``profile`` (core is always claimed)."""
        return profile in self._conn.claimed

    def request(self, op: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """Run ``op`` with an argument object (for argument names that are not identifiers).

        An operation of a profile the engine does not claim ends the test as
        *not claimed* (the engine cannot be judged on it) instead of calling it.
        """
        __tracebackhide__ = True
        self._require_claim(op)
        shown = in_full(dict(args))
        try:
            result = self._conn.call(op, args)
        except EngineError as exc:
            self._log(CallRecord(op, shown, f"error {exc.code}: {summarize(exc.message, 400)}"))
            raise
        except EngineFault as exc:
            self._log(CallRecord(op, shown, f"FAULT: {str(exc).splitlines()[0]}"))
            raise
        self._log(CallRecord(op, shown, summarize(result, 2000)))
        return result

    def call(self, op: str, /, **args: Any) -> dict[str, Any]:
        """Run ``op``; raises EngineError when the engine rejects, EngineFault when it breaks."""
        __tracebackhide__ = True
        return self.request(op, args)

    def reject_request(self, op: str, error_class: str, args: Mapping[str, Any]) -> EngineError:
        """Assert ``op`` fails with ``error_class``; return the error."""
        __tracebackhide__ = True
        try:
            result = self.request(op, args)
        except EngineError as exc:
            if exc.code != error_class:
                raise AssertionError(
                    f"{op}({summarize(args)}) should fail with {error_class!r} but failed with "
                    f"{exc.code!r}: {exc.message}"
                ) from None
            return exc
        raise AssertionError(
            f"{op}({summarize(args)}) should fail with {error_class!r} but succeeded: "
            f"{summarize(result)}"
        )

    def reject(self, op: str, error_class: str, /, **args: Any) -> EngineError:
        """Assert ``op`` fails with ``error_class``; return the error."""
        __tracebackhide__ = True
        return self.reject_request(op, error_class, args)

    def reset(self) -> None:
        """Back to an empty engine (the fixture already did this once)."""
        self.request("reset", {})

    def snapshot(self) -> dict[str, Any] | None:
        """Latest versions and version counts of every record (None if store is not claimed)."""
        if not self.claims("store"):
            return None
        records = self.request("iterate", {})["records"]
        versions = {
            rec["id"]: len(self.request("history", {"id": rec["id"]})["records"])
            for rec in records
        }
        return {"records": records, "versions": versions}

    def _require_claim(self, op: str) -> None:
        spec = operations().get(op)
        profile = spec.get("profile") if spec else None
        if profile is None or self._conn.info is None or self.claims(profile):
            return
        import pytest

        from memspec.conformance._outcomes import not_claimed_reason

        pytest.skip(not_claimed_reason([profile], self._conn.name))

    def _log(self, record: CallRecord) -> None:
        self.transcript.append(record)
        if len(self.transcript) > _TRANSCRIPT_LIMIT:
            del self.transcript[0]
