"""Outcomes, requirement levels and the requirement catalogue the kit certifies against.

A kit test ends as one of :data:`TEST_OUTCOMES`. Two of them are signalled
with a ``pytest.skip`` whose reason starts with a machine-readable prefix, so
the plugin and the report can tell them from an ordinary skip:
``memspec:not-claimed:`` (the engine does not claim the test's profile) and
``memspec:untestable:`` (the requirement cannot be observed in this mode).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any, NamedTuple

from memspec._errors import EngineError, MemspecError
from memspec.data import Requirement, always_profiles, json_resource, requirements
from memspec.report import Outcome

__all__ = [
    "ALWAYS_PROFILES",
    "ERRORED",
    "FAILED",
    "INCONCLUSIVE",
    "NOT_CLAIMED",
    "NOT_CLAIMED_PREFIX",
    "PASSED",
    "SKIPPED",
    "TEST_OUTCOMES",
    "UNTESTABLE",
    "UNTESTABLE_PREFIX",
    "WARNING",
    "KitItem",
    "Logged",
    "Requirement",
    "RequirementFailed",
    "binding",
    "blame",
    "blamed_requirements",
    "catalogue",
    "check",
    "first_line",
    "has_failed_check",
    "input_classes",
    "input_only",
    "is_fault",
    "judges_input",
    "load_hypothesis_profile",
    "logged_outcome",
    "mark_report",
    "needed_profiles",
    "not_claimed_reason",
    "report_status",
    "skip_reason",
    "untestable_reason",
]

# The report model's words (memspec.report.Outcome) as plain strings, under the kit's short
# names: they ride on pytest reports across pytest-xdist's execnet, which carries no enums.
PASSED = Outcome.PASSED.value
FAILED = Outcome.FAILED.value
ERRORED = Outcome.ERRORED.value
NOT_CLAIMED = Outcome.NOT_CLAIMED.value
UNTESTABLE = Outcome.UNTESTABLE.value
SKIPPED = Outcome.SKIPPED.value
#: A failed SHOULD / MAY test: reported as failed, shown as a warning, never failing a profile.
WARNING = "warning"
TEST_OUTCOMES = (PASSED, FAILED, ERRORED, NOT_CLAIMED, UNTESTABLE, SKIPPED)
#: How a failed test counts for those of its requirements its failure did not name: it
#: stopped before it judged them, so it neither passes nor fails them (SPEC 19.2).
INCONCLUSIVE = Outcome.INCONCLUSIVE.value

NOT_CLAIMED_PREFIX = "memspec:not-claimed: "
UNTESTABLE_PREFIX = "memspec:untestable: "

#: Profiles every engine is checked against without claiming them.
ALWAYS_PROFILES = always_profiles()


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
    return dict(requirements())


_NOT_CLAIMED_TAIL = " does not claim profile "


def not_claimed_reason(profiles: list[str] | tuple[str, ...], engine: str) -> str:
    """The skip reason of a test whose profile the engine does not claim."""
    names = ", ".join(profiles)
    return f"{NOT_CLAIMED_PREFIX}{engine}{_NOT_CLAIMED_TAIL}{names}"


def needed_profiles(reason: str) -> tuple[str, ...]:
    """The profiles a :func:`not_claimed_reason` (without its prefix) names."""
    _, found, names = reason.rpartition(_NOT_CLAIMED_TAIL)
    return tuple(n for n in names.split(", ") if n) if found else ()


def untestable_reason(why: str) -> str:
    """The skip reason of a test that cannot observe its requirement here."""
    return f"{UNTESTABLE_PREFIX}{why}"


# --------------------------------------------------------------------------- attribution


class RequirementFailed(AssertionError):
    """A failed kit check that names the requirement it checks (SPEC 19.2).

    A test that traces to several requirements fails only the one its failing check
    names; for its other requirements it is inconclusive. ``requirement`` is one id, or
    a tuple when the check is a vector whose data names several.
    """

    def __init__(self, requirement: str | tuple[str, ...], message: str, *,
                 strictness: bool = False) -> None:
        names = (requirement,) if isinstance(requirement, str) else tuple(requirement)
        if not names:
            raise ValueError("RequirementFailed needs at least one requirement id")
        prefix = f"{names[0]}: "
        super().__init__(message if message.startswith(prefix) else prefix + message)
        self.requirements = names
        self.detail = message
        #: Whether the check judged input strictness: that malformed input is refused with
        #: a class SPEC 18.4 marks ``input`` (see :func:`input_classes`).
        self.strictness = strictness

    @property
    def requirement(self) -> str:
        """The (first) requirement the check names."""
        return self.requirements[0]

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.requirements, self.detail, self.strictness))


def _rebuild(requirements: tuple[str, ...], detail: str, strictness: bool) -> RequirementFailed:
    return RequirementFailed(requirements, detail, strictness=strictness)


@cache
def input_classes() -> frozenset[str]:
    """The error classes whose rejections judge input strictness (SPEC 18.4, ``judges``
    column, from spec/error-classes.json)."""
    data = json_resource("spec", "error-classes.json")
    return frozenset(c["code"] for c in data["classes"] if c["judges"] == "input")


def judges_input(classes: str | Iterable[str]) -> bool:
    """Whether a rejection expected with ``classes`` judges input strictness (all of them
    are ``input`` classes)."""
    wanted = {classes} if isinstance(classes, str) else set(classes)
    return bool(wanted) and wanted <= input_classes()


def input_only(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or every failure of a hypothesis group) judged input strictness."""
    if isinstance(exc, RequirementFailed):
        return exc.strictness
    if isinstance(exc, BaseExceptionGroup):
        return bool(exc.exceptions) and all(input_only(e) for e in exc.exceptions)
    return False


def check(requirement: str, condition: object, message: str | Callable[[], str]) -> None:
    """Raise :class:`RequirementFailed` naming ``requirement`` unless ``condition`` holds.

    ``message`` may be a callable, so that an expensive message is built only on failure.
    """
    __tracebackhide__ = True
    if not condition:
        raise RequirementFailed(requirement, message() if callable(message) else message)


@contextmanager
def blame(requirement: str | tuple[str, ...], *, override: bool = False) -> Iterator[None]:
    """Attribute a failure inside the block to ``requirement``.

    A plain ``assert`` that fails, or an engine that rejects a call the block expected it
    to answer (:class:`memspec.EngineError`), becomes a :class:`RequirementFailed` naming
    ``requirement``; a check that already names its requirement keeps it unless
    ``override`` (a shared check, such as the lifecycle invariants, run on the writes of
    one operation whose own requirement they then break), and an engine fault (crash,
    hang, broken protocol) passes through, to be reported errored.
    """
    __tracebackhide__ = True
    try:
        yield
    except RequirementFailed as exc:
        if override:
            raise RequirementFailed(requirement, str(exc), strictness=exc.strictness) from exc
        raise
    except AssertionError as exc:
        raise RequirementFailed(requirement, str(exc)) from exc
    except EngineError as exc:
        raise RequirementFailed(
            requirement, f"the engine rejected a call it should have answered "
            f"({exc.code}: {exc.message})") from exc


def blamed_requirements(exc: BaseException | None) -> tuple[str, ...]:
    """The requirements a test's failure names (empty: it names none, so it fails them all).

    A hypothesis group of failures names the union of what each member names, and
    nothing if any member names nothing.
    """
    if isinstance(exc, RequirementFailed):
        return exc.requirements
    if isinstance(exc, BaseExceptionGroup):
        named: list[str] = []
        for inner in exc.exceptions:
            found = blamed_requirements(inner)
            if not found:
                return ()
            named.extend(r for r in found if r not in named)
        return tuple(named)
    return ()


# --------------------------------------------------------------------------- pytest glue


@dataclass(frozen=True)
class KitItem:
    """One collected kit test as the report needs it (crosses from xdist workers as JSON)."""

    kit_id: str
    requirements: tuple[str, ...]
    profiles: tuple[str, ...]
    levels: tuple[str, ...]
    kit_check: bool = False
    #: The requirement(s) the test decides, when it only exercises the others it names (a
    #: vector's ``decides``); empty: it decides all of them.
    decides: tuple[str, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        """A JSON-able form (for pytest-xdist's ``workeroutput``)."""
        return {"kit_id": self.kit_id, "requirements": list(self.requirements),
                "profiles": list(self.profiles), "levels": list(self.levels),
                "kit_check": self.kit_check, "decides": list(self.decides)}

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
        decides = tuple(str(arg) for mark in item.iter_markers("decides") for arg in mark.args)
        return cls(kit_id, tuple(reqs), tuple(sorted(profiles)), levels, kit_check, decides)

    @classmethod
    def from_wire(cls, data: Any) -> KitItem:
        """The item :meth:`to_wire` gave; MemspecError if ``data`` is not such a form."""
        fields = ("requirements", "profiles", "levels", "decides")
        if (not isinstance(data, dict) or not isinstance(data.get("kit_id"), str)
                or not isinstance(data.get("kit_check"), bool)
                or not all(isinstance(data.get(f), list | tuple)
                           and all(isinstance(v, str) for v in data[f]) for f in fields)):
            raise MemspecError(f"not a kit item from an xdist worker: {data!r:.200}")
        return cls(data["kit_id"], tuple(data["requirements"]), tuple(data["profiles"]),
                   tuple(data["levels"]), data["kit_check"], tuple(data["decides"]))


class Logged(NamedTuple):
    """A kit test's outcome as the run logged it, with the requirements its failure named."""

    outcome: str
    message: str | None
    blamed: tuple[str, ...] = ()
    #: For a not-claimed test: the unclaimed profiles it needed.
    needs: tuple[str, ...] = ()
    #: For a failed test: whether its failing check judged input strictness only.
    strictness: bool = False


def mark_report(report: Any, exc: BaseException | None, levels: tuple[str, ...],
                transcript: list[str]) -> None:
    """Mark a kit test's report (in the process that ran it) with the kit's outcome.

    Sets ``memspec_outcome`` / ``memspec_message`` / ``memspec_blamed``: plain report
    attributes, which pytest serializes with the report, so they reach a pytest-xdist
    controller. A failure gets the engine calls of the test as a report section; a
    failure whose check names its requirement (:class:`RequirementFailed`) blames only
    that requirement (one the test's markers do not list too: a shared check such as a
    rejection that writes, PROTO-7, may find any requirement broken); a SHOULD / MAY
    miss becomes an xfail-like warning that never fails the run. Errored is only what
    SPEC 18.4 says: the engine could not be reached or broke the protocol (an
    :class:`memspec.protocol.EngineFault` with no failed check beside it), or the test's
    setup or teardown broke.
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
        blamed = blamed_requirements(exc) if report.when == "call" else ()
        unknown = [r for r in blamed if r not in catalogue()]
        if unknown:
            # A check naming an id the catalogue lacks is a kit bug: say so, and fail the
            # test's own requirements rather than none.
            message = (f"kit bug: the failing check names {', '.join(unknown)}, which the "
                       f"requirement catalogue does not have; {message}")
            blamed = ()
        report.memspec_message = message[:4000]
        report.memspec_blamed = list(blamed)
        report.memspec_strictness = bool(blamed) and input_only(exc)
        if transcript:
            report.sections.append(("memspec engine calls (latest last)", "\n".join(transcript)))
        judged = tuple(catalogue()[r].level for r in blamed if r in catalogue()) or levels
        if report.when != "call" or (is_fault(exc) and not has_failed_check(exc)):
            report.memspec_outcome = ERRORED
        elif judged and not any(binding(level) for level in judged):
            report.outcome = "skipped"
            report.wasxfail = (
                "memspec: SHOULD-level requirement not met (warning): " + first_line(message)
            )
            report.memspec_outcome = WARNING


def logged_outcome(report: Any, previous: Logged | None) -> Logged | None:
    """A test's outcome, message and blamed requirements after one more of its reports
    (None: unchanged).

    Reads only what crosses pytest-xdist with the report (its outcome, ``when`` and
    the ``memspec_*`` attributes the kit set on the worker), so the controller folds
    forwarded reports exactly as a one-process run does.
    """
    marked = getattr(report, "memspec_outcome", None)
    message: str | None = getattr(report, "memspec_message", None)
    blamed = tuple(str(r) for r in getattr(report, "memspec_blamed", None) or ())
    needs = needed_profiles(message or "") if marked == NOT_CLAIMED else ()
    strictness = bool(getattr(report, "memspec_strictness", False))
    if report.when == "teardown":
        if report.failed and (previous is None or previous.outcome == PASSED):
            return Logged(ERRORED, message)
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
    failed = outcome == FAILED
    return Logged(outcome, message or None, blamed if failed else (), needs,
                  strictness and failed)


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


def has_failed_check(exc: BaseException | None) -> bool:
    """Whether ``exc`` is (or a hypothesis group holds) a failed check: the engine answered
    and the answer was judged wrong."""
    if isinstance(exc, AssertionError):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return any(has_failed_check(inner) for inner in exc.exceptions)
    return False


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
