"""Outcomes, requirement levels and the requirement catalogue the kit certifies against.

A kit test ends as one of :data:`TEST_OUTCOMES`. Two of them are signalled
with a ``pytest.skip`` whose reason starts with a machine-readable prefix, so
the plugin and the report can tell them from an ordinary skip:
``memspec:not-claimed:`` (the engine does not claim the test's profile) and
``memspec:untestable:`` (the requirement cannot be observed in this mode).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from memspec._data import load_json
from memspec._errors import MemspecError

__all__ = [
    "ALWAYS_PROFILES",
    "ERRORED",
    "FAILED",
    "LEVELS",
    "NOT_CLAIMED",
    "NOT_CLAIMED_PREFIX",
    "PASSED",
    "SKIPPED",
    "TEST_OUTCOMES",
    "UNTESTABLE",
    "UNTESTABLE_PREFIX",
    "WARNING",
    "KitItem",
    "Requirement",
    "binding",
    "catalogue",
    "first_line",
    "is_fault",
    "load_hypothesis_profile",
    "logged_outcome",
    "mark_report",
    "not_claimed_reason",
    "report_status",
    "skip_reason",
    "untestable_reason",
]

PASSED = "passed"
FAILED = "failed"
ERRORED = "errored"
NOT_CLAIMED = "not-claimed"
UNTESTABLE = "untestable"
SKIPPED = "skipped"
#: A failed SHOULD / MAY test: reported as failed, shown as a warning, never failing a profile.
WARNING = "warning"
TEST_OUTCOMES = (PASSED, FAILED, ERRORED, NOT_CLAIMED, UNTESTABLE, SKIPPED)

NOT_CLAIMED_PREFIX = "memspec:not-claimed: "
UNTESTABLE_PREFIX = "memspec:untestable: "

LEVELS = ("MUST", "MUST NOT", "SHOULD", "SHOULD NOT", "MAY")
#: Profiles every engine is checked against without claiming them.
ALWAYS_PROFILES = frozenset({"core"})

@dataclass(frozen=True)
class Requirement:
    """One catalogue entry."""

    id: str
    level: str
    profile: str
    summary: str
    untestable: str | None = None

    @property
    def binding(self) -> bool:
        """Whether failing it fails certification (MUST / MUST NOT)."""
        return binding(self.level)


def binding(level: str) -> bool:
    """MUST and MUST NOT bind; SHOULD and MAY failures are warnings."""
    return level in ("MUST", "MUST NOT")


@cache
def catalogue() -> dict[str, Requirement]:
    """Every requirement by id, in spec order, from the package's spec/requirements.json.

    A requirement is untestable exactly when the spec's Appendix A gives it a
    reason (the ``untestable`` member): the appendix is the only list, and the
    kit keeps no table of its own.
    """
    data: dict[str, Any] = load_json("spec", "requirements.json")
    found: dict[str, Requirement] = {}
    for item in data["requirements"]:
        found[item["id"]] = Requirement(
            id=item["id"], level=item["level"], profile=item["profile"],
            summary=item.get("summary", ""), untestable=item.get("untestable") or None,
        )
    return found


def not_claimed_reason(profiles: list[str] | tuple[str, ...], engine: str) -> str:
    """The skip reason of a test whose profile the engine does not claim."""
    names = ", ".join(profiles)
    return f"{NOT_CLAIMED_PREFIX}{engine} does not claim profile {names}"


def untestable_reason(why: str) -> str:
    """The skip reason of a test that cannot observe its requirement here."""
    return f"{UNTESTABLE_PREFIX}{why}"


# --------------------------------------------------------------------------- pytest glue


@dataclass(frozen=True)
class KitItem:
    """One collected kit test as the report needs it (crosses from xdist workers as JSON)."""

    kit_id: str
    requirements: tuple[str, ...]
    profiles: tuple[str, ...]
    levels: tuple[str, ...]
    kit_check: bool = False

    def to_wire(self) -> dict[str, Any]:
        """A JSON-able form (for pytest-xdist's ``workeroutput``)."""
        return {"kit_id": self.kit_id, "requirements": list(self.requirements),
                "profiles": list(self.profiles), "levels": list(self.levels),
                "kit_check": self.kit_check}

    @classmethod
    def of(cls, item: Any, kit_id: str) -> KitItem:
        """A collected pytest item's requirement and profile markers (ids not yet checked)."""
        known = catalogue()
        kit_check = item.get_closest_marker("kit_check") is not None
        reqs: list[str] = []
        for mark in item.iter_markers("requirement"):
            reqs.extend(str(arg) for arg in mark.args if str(arg) not in reqs)
        profiles = {known[r].profile for r in reqs if r in known}
        for mark in item.iter_markers("profile"):
            profiles.update(str(arg) for arg in mark.args)
        levels = tuple(known[r].level for r in reqs if r in known)
        return cls(kit_id, tuple(reqs), tuple(sorted(profiles)), levels, kit_check)

    @classmethod
    def from_wire(cls, data: Any) -> KitItem:
        """The item :meth:`to_wire` gave; MemspecError if ``data`` is not such a form."""
        fields = ("requirements", "profiles", "levels")
        if (not isinstance(data, dict) or not isinstance(data.get("kit_id"), str)
                or not isinstance(data.get("kit_check"), bool)
                or not all(isinstance(data.get(f), list | tuple)
                           and all(isinstance(v, str) for v in data[f]) for f in fields)):
            raise MemspecError(f"not a kit item from an xdist worker: {data!r:.200}")
        return cls(data["kit_id"], tuple(data["requirements"]), tuple(data["profiles"]),
                   tuple(data["levels"]), data["kit_check"])


def mark_report(report: Any, exc: BaseException | None, levels: tuple[str, ...],
                transcript: list[str]) -> None:
    """Mark a kit test's report (in the process that ran it) with the kit's outcome.

    Sets ``memspec_outcome`` / ``memspec_message``: plain report attributes, which
    pytest serializes with the report, so they reach a pytest-xdist controller. A
    failure gets the engine calls of the test as a report section; a SHOULD / MAY
    miss becomes an xfail-like warning that never fails the run.
    """
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = skip_reason(report)
        for prefix, outcome in ((NOT_CLAIMED_PREFIX, NOT_CLAIMED),
                                (UNTESTABLE_PREFIX, UNTESTABLE)):
            if reason.startswith(prefix):
                report.memspec_outcome = outcome
                reason = reason.removeprefix(prefix)
        report.memspec_message = reason
    elif report.failed:
        message = f"{type(exc).__name__}: {exc}" if exc is not None else report.longreprtext
        report.memspec_message = message[:2000]
        if transcript:
            report.sections.append(("memspec engine calls (latest last)", "\n".join(transcript)))
        if is_fault(exc) or report.when != "call":
            report.memspec_outcome = ERRORED
        elif levels and not any(binding(level) for level in levels):
            report.outcome = "skipped"
            report.wasxfail = (
                "memspec: SHOULD-level requirement not met (warning): " + first_line(message)
            )
            report.memspec_outcome = WARNING


def logged_outcome(
    report: Any, previous: tuple[str, str | None] | None
) -> tuple[str, str | None] | None:
    """A test's outcome and message after one more of its reports (None: unchanged).

    Reads only what crosses pytest-xdist with the report (its outcome, ``when`` and
    the ``memspec_outcome`` / ``memspec_message`` attributes the kit set on the worker),
    so the controller folds forwarded reports exactly as a one-process run does.
    """
    marked = getattr(report, "memspec_outcome", None)
    message: str | None = getattr(report, "memspec_message", None)
    if report.when == "teardown":
        if report.failed and (previous is None or previous[0] == PASSED):
            return ERRORED, message
        return None
    if report.when == "setup" and report.passed:
        return None
    if marked == WARNING:
        outcome = FAILED
    elif marked is not None:
        outcome = str(marked)
    elif report.passed:
        outcome = PASSED
    elif report.failed:
        outcome = FAILED
    else:
        outcome = SKIPPED
    return outcome, message or None


def report_status(report: Any) -> Any:
    """Terminal category, letter and word for a kit test report (None: pytest decides)."""
    outcome = getattr(report, "memspec_outcome", None)
    if outcome == ERRORED:
        return "errored", "E", ("ERRORED", {"red": True})
    if outcome == NOT_CLAIMED:
        return "not-claimed", "n", ("NOT CLAIMED", {"yellow": True})
    if outcome == UNTESTABLE:
        return "untestable", "u", ("UNTESTABLE", {"yellow": True})
    if outcome == WARNING:
        return "should-warning", "w", ("SHOULD WARNING", {"yellow": True})
    return None


def first_line(text: str, limit: int = 200) -> str:
    """The first non-blank line of ``text``, capped at ``limit`` characters."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def is_fault(exc: BaseException | None) -> bool:
    """Whether ``exc`` is (or a hypothesis group holds) an EngineFault."""
    from memspec.protocol import EngineFault

    if isinstance(exc, EngineFault):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return any(is_fault(inner) for inner in exc.exceptions)
    return False


def skip_reason(report: Any) -> str:
    """The reason of a skipped pytest report, without pytest's ``Skipped: `` prefix."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return ""


def load_hypothesis_profile(thorough: bool) -> None:
    """Small, derandomized, deadline-free hypothesis runs (many more with ``thorough``)."""
    from hypothesis import HealthCheck, settings

    # The engine fixture is function-scoped on purpose (reset per test); property tests
    # that need a fresh engine per example call engine.reset() themselves.
    suppressed = [
        getattr(HealthCheck, name)
        for name in ("function_scoped_fixture", "too_slow", "filter_too_much")
        if hasattr(HealthCheck, name)
    ]
    common: dict[str, Any] = {
        "derandomize": True, "deadline": None, "database": None, "print_blob": False,
        "suppress_health_check": suppressed,
    }
    settings.register_profile("memspec-fast", max_examples=20, stateful_step_count=15, **common)
    settings.register_profile("memspec-thorough", max_examples=300, stateful_step_count=50,
                              **common)
    settings.load_profile("memspec-thorough" if thorough else "memspec-fast")
