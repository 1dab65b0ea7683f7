"""The conformance report: per-test outcomes folded into requirement and profile verdicts.

Folding rules (documented in the report schema too):

* a test is passed, failed, errored (the engine broke the protocol), not-claimed,
  untestable, skipped or not-run (deselected);
* a failed test whose failing check named its requirement (RequirementFailed) fails
  only that requirement; for the test's other requirements it is inconclusive;
* a not-claimed test is untestable for a claim-conditional requirement (one that
  reaches only what the engine claims, SPEC 19.2 and Appendix B): it is never left out;
* a requirement whose profile the engine does not claim is not-claimed; otherwise
  failed if any of its tests failed it, else errored if any errored, else passed if
  every test that judged it passed and none was left out; partial if some passed or
  none could run while some were left out (not-claimed: it needs another profile,
  skipped, deselected, inconclusive); else untestable if it has a reason (or a test
  said so), else not-run;
* a claimed profile is certified when none of its MUST / MUST NOT requirements is
  failed, errored, not-run or partial and every profile it requires is certified too;
  a profile with partial requirements (and nothing worse) is partial and names them.
  SHOULD / MAY failures are warnings: they show, but never fail a profile.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memspec._errors import MemspecError
from memspec._signing import CONTEXT_REPORT, SigningKey, verify_by_address
from memspec.conformance._outcomes import (
    ALWAYS_PROFILES,
    ERRORED,
    FAILED,
    INCONCLUSIVE,
    NOT_CLAIMED,
    PASSED,
    SKIPPED,
    UNTESTABLE,
    KitItem,
    Requirement,
    catalogue,
)
from memspec.conformance._session import EngineState, Finding
from memspec.data import json_resource, vector_files
from memspec.engine import PROTOCOL_VERSION, SPEC_VERSION, profiles
from memspec.report import (
    REPORT_SCHEMA_ID,
    CrossProfile,
    EngineInfo,
    InputVerdict,
    KitInfo,
    Mode,
    Outcome,
    ProfileVerdict,
    Report,
    RequirementOutcome,
    Summary,
    TestOutcome,
    Verdict,
    validate_wire,
)

__all__ = [
    "NOT_RUN",
    "PARTIAL",
    "REPORT_SCHEMA_ID",
    "HandOver",
    "TestResult",
    "build_report",
    "check_report",
    "fold_items",
    "sign_report",
    "suite_digest",
    "verify_report",
]

NOT_RUN = Outcome.NOT_RUN.value
#: A requirement (or profile) not fully judged: some test that traces to it did not run
#: or stopped before judging it (SPEC 19.2).
PARTIAL = Outcome.PARTIAL.value
_VERDICT_ORDER = (Verdict.FAILED, Verdict.ERRORED, Verdict.INCOMPLETE, Verdict.PARTIAL,
                  Verdict.CERTIFIED)
#: Test views that leave a requirement not fully judged.
_UNJUDGED = (INCONCLUSIVE, NOT_CLAIMED, SKIPPED, NOT_RUN)


@dataclass(frozen=True)
class TestResult:
    """One kit test as the report sees it."""

    __test__ = False  # not a pytest test class, despite the name

    kit_id: str
    requirements: tuple[str, ...]
    outcome: str
    message: str | None = None
    #: The requirements a failed test's failing check named (empty: all of them).
    blamed: tuple[str, ...] = ()
    #: The profiles the test needs (its requirements' and its profile markers').
    profiles: tuple[str, ...] = ()
    #: For a not-claimed test: the unclaimed profiles it needed (from its markers or the
    #: operation it called).
    needs: tuple[str, ...] = ()
    #: For a failed test: its failing check judged input strictness (SPEC 19.2).
    strictness: bool = False
    #: The requirements the test decides (empty: all of its requirements).
    decides: tuple[str, ...] = ()

    def decides_on(self, requirement: str) -> bool:
        """Whether a wrong answer to the test could fail ``requirement`` (it is one the test
        decides, not one it only exercises)."""
        return not self.decides or requirement in self.decides

    def view(self, requirement: str) -> str:
        """The test's outcome as it counts for ``requirement``: a not-claimed test is untestable
        for a claim-conditional requirement (SPEC 19.2, Appendix B)."""
        if self.outcome == FAILED and self.blamed and requirement not in self.blamed:
            return INCONCLUSIVE
        if self.outcome == NOT_CLAIMED and _claim_conditional(requirement):
            return UNTESTABLE
        return self.outcome


def _claim_conditional(requirement: str) -> bool:
    """Whether ``requirement`` reaches only what an engine claims (the catalogue's
    ``claim_conditional``, from Appendix B)."""
    req = catalogue().get(requirement)
    return req is not None and req.claim_conditional is not None


@dataclass(frozen=True)
class HandOver:
    """What a pytest-xdist worker hands the controller for the report (as JSON, at its end)."""

    items: tuple[tuple[str, KitItem], ...]
    deselected: tuple[str, ...]
    engine: EngineState | None

    def to_wire(self) -> dict[str, Any]:
        """A JSON-able form (for the worker's ``workeroutput``)."""
        return {"items": [[nodeid, item.to_wire()] for nodeid, item in self.items],
                "deselected": list(self.deselected),
                "engine": self.engine.to_wire() if self.engine is not None else None}

    @classmethod
    def from_wire(cls, data: Any) -> HandOver:
        """The hand-over :meth:`to_wire` gave; MemspecError if ``data`` is not such a form."""
        try:
            items = tuple((str(nodeid), KitItem.from_wire(wire)) for nodeid, wire in data["items"])
            deselected = tuple(str(nodeid) for nodeid in data["deselected"])
            engine = data["engine"]
        except (KeyError, TypeError, ValueError) as exc:  # MemspecError is a ValueError
            raise MemspecError(f"unreadable hand-over from an xdist worker: {exc}") from None
        return cls(items, deselected, EngineState.from_wire(engine) if engine is not None else None)


def fold_items(
    items: Mapping[str, KitItem],
    results: Mapping[str, tuple[Any, ...]],
    deselected: Collection[str] = (),
) -> tuple[list[TestResult], list[TestOutcome]]:
    """The report's tests and kit checks, in collection order, from items keyed by node id.

    ``results`` holds each test's :class:`~memspec.conformance._outcomes.Logged` (or an
    ``(outcome, message)`` pair). A collected test without a result did not run
    (``not-run``); a deselected one is ``not-run`` with the note "deselected", whatever
    its result.
    """
    tests: list[TestResult] = []
    checks: list[TestOutcome] = []
    for nodeid, item in items.items():
        logged = results.get(nodeid, (NOT_RUN, None))
        outcome, message = str(logged[0]), logged[1]
        blamed = tuple(logged[2]) if len(logged) > 2 else ()
        needs = tuple(logged[3]) if len(logged) > 3 else ()
        strictness = bool(logged[4]) if len(logged) > 4 else False
        if item.kit_check:
            checks.append(TestOutcome(item.kit_id, Outcome(outcome)))
            continue
        if nodeid in deselected:
            outcome, message, blamed, needs, strictness = NOT_RUN, "deselected", (), (), False
        tests.append(TestResult(item.kit_id, item.requirements, outcome, message, blamed,
                                item.profiles, needs, strictness, item.decides))
    return tests, checks


def suite_digest(test_ids: Iterable[str]) -> str:
    """sha256 (hex) over the kit's test ids, its vectors files and its requirement catalogue."""
    digest = hashlib.sha256()
    for test_id in sorted(set(test_ids)):
        digest.update(b"test\0" + test_id.encode("utf-8") + b"\n")
    for name in vector_files():
        body = json.dumps(json_resource("vectors", name), sort_keys=True, ensure_ascii=False)
        digest.update(b"vectors\0" + name.encode("utf-8") + b"\0" + body.encode("utf-8") + b"\n")
    reqs = sorted((r.id, r.level, r.profile) for r in catalogue().values())
    digest.update(b"requirements\0" + json.dumps(reqs).encode("utf-8"))
    return digest.hexdigest()


def _requirement_outcome(
    req: Requirement, tests: Sequence[TestResult], claimed: frozenset[str]
) -> tuple[str, str | None]:
    if req.profile not in claimed:
        return NOT_CLAIMED, None
    views = [(t.view(req.id), t) for t in tests]
    seen = {view for view, _ in views}
    for outcome in (FAILED, ERRORED):
        if outcome in seen:
            return outcome, None
    # A test left out for a profile the engine does not claim leaves out only what it
    # decides: it could never have failed a requirement it only exercises (SPEC 19.2).
    left_out = [(view, t) for view, t in views if view in _UNJUDGED
                and (view != NOT_CLAIMED or t.decides_on(req.id))]
    judged_none = PASSED not in seen
    if not left_out:
        if not judged_none:
            return PASSED, None
    elif not judged_none or any(view != NOT_RUN for view, _ in left_out):
        return PARTIAL, _left_out_note(left_out, claimed, judged_none)
    if req.untestable:
        return UNTESTABLE, req.untestable
    if UNTESTABLE in seen:
        first = next(t for view, t in views if view == UNTESTABLE)
        if first.outcome == NOT_CLAIMED:
            unclaimed = [t for view, t in views if view == UNTESTABLE and t.outcome == NOT_CLAIMED]
            return UNTESTABLE, _unclaimed_note(req, unclaimed, claimed)
        return UNTESTABLE, first.message
    if not tests:
        return NOT_RUN, "the kit has no test for this requirement"
    return NOT_RUN, "its tests did not run (deselected)"


def _unclaimed_note(req: Requirement, tests: Sequence[TestResult],
                    claimed: frozenset[str]) -> str:
    """Why a claim-conditional requirement is untestable: its tests need unclaimed profiles."""
    needs = sorted({p for t in tests for p in _test_needs(t, claimed)})
    return (f"{len(tests)} test(s) need profile {', '.join(needs)}, which the engine does not "
            f"claim, and {req.id} reaches only what it claims: {req.claim_conditional}")


def _left_out_note(left_out: Sequence[tuple[str, TestResult]], claimed: frozenset[str],
                   judged_none: bool) -> str:
    """Why a requirement is partial: which of its tests were left out, and what they needed."""
    parts: list[str] = []
    needs = sorted({p for view, t in left_out if view == NOT_CLAIMED
                    for p in _test_needs(t, claimed)})
    counts = Counter(view for view, _ in left_out)
    if counts[NOT_CLAIMED]:
        parts.append(f"{counts[NOT_CLAIMED]} test(s) need profile {', '.join(needs)}, "
                     "which the engine does not claim")
    if counts[INCONCLUSIVE]:
        named = sorted({r for view, t in left_out if view == INCONCLUSIVE for r in t.blamed})
        parts.append(f"{counts[INCONCLUSIVE]} test(s) failed on {', '.join(named)} before "
                     "judging it")
    if counts[SKIPPED]:
        parts.append(f"{counts[SKIPPED]} test(s) skipped")
    if counts[NOT_RUN]:
        parts.append(f"{counts[NOT_RUN]} test(s) not run")
    head = "not judged: " if judged_none else "not fully judged: "
    return head + "; ".join(parts)


def _test_needs(test: TestResult, claimed: frozenset[str]) -> tuple[str, ...]:
    found = {p for p in (*test.profiles, *test.needs) if p not in claimed}
    return tuple(sorted(found))


def _needs(tests: Sequence[TestResult], req_id: str, claimed: frozenset[str]) -> list[str]:
    return sorted({p for t in tests if t.view(req_id) == NOT_CLAIMED and t.decides_on(req_id)
                   for p in _test_needs(t, claimed)})


def _closure(profile: str) -> frozenset[str]:
    """``profile`` and every profile it requires, transitively."""
    table = profiles()
    seen: set[str] = set()
    todo = [profile]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(table.get(name, {}).get("requires", []))
    return frozenset(seen) | ALWAYS_PROFILES


def _cross_profile(by_req: Mapping[str, Sequence[TestResult]],
                   claimed: frozenset[str]) -> list[CrossProfile]:
    """Requirements of claimed profiles that some test can judge only with another profile."""
    out: list[CrossProfile] = []
    for req in catalogue().values():
        if req.profile not in claimed or req.claim_conditional is not None:
            continue  # a claim-conditional requirement is never partial for want of a claim
        own = _closure(req.profile)
        needing = [t for t in by_req.get(req.id, [])
                   if t.decides_on(req.id) and not {*t.profiles, *t.needs} <= own]
        if needing:
            out.append(CrossProfile(req.id, req.profile,
                                    tuple(sorted({p for t in needing
                                                  for p in (*t.profiles, *t.needs)} - own)),
                                    tuple(t.kit_id for t in needing)))
    return out


_OWN_VERDICT = {FAILED: Verdict.FAILED, ERRORED: Verdict.ERRORED, NOT_RUN: Verdict.INCOMPLETE,
                PARTIAL: Verdict.PARTIAL}


def _profile_verdicts(
    claimed: frozenset[str], req_entries: Sequence[RequirementOutcome]
) -> dict[str, ProfileVerdict]:
    table = profiles()
    own: dict[str, Verdict] = {}
    for name in table:
        worst = Verdict.CERTIFIED
        for entry in req_entries:
            if entry.profile != name or not entry.binding:
                continue
            if entry.input_only:
                continue  # input strictness has its own verdict (SPEC 19.2)
            verdict = _OWN_VERDICT.get(entry.outcome)
            if verdict and _VERDICT_ORDER.index(verdict) < _VERDICT_ORDER.index(worst):
                worst = verdict
        own[name] = worst
    out: dict[str, ProfileVerdict] = {}

    def settle(name: str, trail: tuple[str, ...] = ()) -> Verdict:
        if name in out:
            return out[name].verdict
        if name not in claimed:
            out[name] = ProfileVerdict(claimed=False, verdict=Verdict.NOT_CLAIMED)
            return Verdict.NOT_CLAIMED
        verdict = own.get(name, Verdict.CERTIFIED)
        notes: list[str] = []
        blocked: list[str] = []
        for dep in table.get(name, {}).get("requires", []):
            if dep in trail:
                continue
            dep_verdict = settle(dep, (*trail, name))
            if dep_verdict == Verdict.NOT_CLAIMED:
                dep_verdict = Verdict.FAILED
                notes.append(f"requires profile {dep}, which the engine does not claim")
            elif dep_verdict != Verdict.CERTIFIED:
                blocked.append(dep)
            if _VERDICT_ORDER.index(dep_verdict) < _VERDICT_ORDER.index(verdict):
                verdict = dep_verdict
        if blocked and own.get(name) == Verdict.CERTIFIED:
            notes.append(f"its own requirements pass; required profile {', '.join(blocked)} "
                         "is not certified")
        unjudged = [e.id for e in req_entries
                    if e.profile == name and e.binding and e.outcome == PARTIAL]
        if unjudged:
            notes.append("not certified: not fully judged " + ", ".join(unjudged))
        lenient = [e.id for e in req_entries
                   if e.profile == name and e.binding and e.input_only]
        out[name] = ProfileVerdict(claimed=True, verdict=verdict, input=InputVerdict.of(lenient),
                                   unjudged=tuple(unjudged), notes=tuple(notes))
        return verdict

    for name in table:
        settle(name)
    return {name: out[name] for name in table}


def build_report(
    *,
    engine_info: Mapping[str, Any] | None,
    engine_label: str,
    engine_fault: str | None,
    mode: str,
    kit_version: str,
    tests: Sequence[TestResult],
    digest: str,
    started_at: str,
    finished_at: str,
    findings: Sequence[Finding] = (),
    kit_checks: Sequence[TestOutcome] | None = None,
) -> Report:
    """Fold test results into the report (unsigned).

    Each finding the connection recorded fails its requirement once, as a test of its
    own (``finding:<requirement>:<where>``), whichever kit tests happened to see it.
    ``kit_checks`` are the kit's checks of itself (:func:`fold_items` gives them).
    """
    info = dict(engine_info or {})
    tests = [*tests, *(TestResult(f"finding:{f.requirement}:{f.where}", (f.requirement,),
                                  FAILED, f.message + (f" (call: {f.call})" if f.call else ""),
                                  (f.requirement,))
                       for f in findings)]
    claimed_list = [p for p in info.get("profiles", []) if isinstance(p, str)]
    claimed = frozenset(claimed_list) | ALWAYS_PROFILES
    by_req: dict[str, list[TestResult]] = {}
    for test in tests:
        # A failing check may name a requirement beyond the test's markers (a rejection
        # that writes breaks PROTO-7 in any test): the test counts for it only as failed.
        for req_id in dict.fromkeys((*test.requirements, *test.blamed)):
            by_req.setdefault(req_id, []).append(test)
    entries: list[RequirementOutcome] = []
    for req in catalogue().values():
        related = by_req.get(req.id, [])
        outcome, note = _requirement_outcome(req, related, claimed)
        needs = _needs(related, req.id, claimed) if outcome == PARTIAL else []
        input_only = outcome == FAILED and all(t.strictness for t in related
                                               if t.view(req.id) == FAILED)
        entries.append(RequirementOutcome(
            id=req.id, level=req.level, profile=req.profile, binding=req.binding,
            outcome=Outcome(outcome), tests=tuple(_test_entry(t, req.id, claimed)
                                                  for t in related),
            note=note or None, needs=tuple(needs), input_only=input_only))
    profile_table = _profile_verdicts(claimed, entries)
    verdicts = [v.verdict for v in profile_table.values() if v.claimed]
    verdict = min(verdicts, key=_VERDICT_ORDER.index) if verdicts else Verdict.CERTIFIED
    if engine_info is None:
        verdict = Verdict.ERRORED
    lenient = [r for v in profile_table.values() if v.claimed and v.input is not None
               for r in v.input.requirements]
    test_counts = Counter(t.outcome for t in tests)
    req_counts = Counter(e.outcome.value for e in entries)
    warnings = sum(1 for e in entries if not e.binding and e.outcome == FAILED)
    return Report(
        engine=EngineInfo(
            name=str(info.get("name", engine_label)),
            version=str(info["version"]) if "version" in info else None,
            spec_version=info.get("spec_version"),
            protocol=info.get("protocol"),
            profiles=tuple(claimed_list),
            loaded_as=engine_label,
            fault=engine_fault or None,
        ),
        kit=KitInfo(version=kit_version, spec_version=SPEC_VERSION, protocol=PROTOCOL_VERSION),
        spec_version=SPEC_VERSION,
        suite_digest=digest,
        started_at=started_at,
        finished_at=finished_at,
        mode=Mode(mode),
        verdict=verdict,
        input_strictness=InputVerdict.of(lenient),
        profiles=profile_table,
        requirements=tuple(entries),
        needs_other_profiles=tuple(_cross_profile(by_req, claimed)),
        summary=Summary(
            tests={str(k): test_counts[k] for k in sorted(test_counts)},
            requirements={k: req_counts[k] for k in sorted(req_counts)},
            warnings=warnings,
        ),
        kit_checks=tuple(kit_checks) if kit_checks is not None else None,
    )


def _test_entry(test: TestResult, req_id: str, claimed: frozenset[str]) -> TestOutcome:
    view = test.view(req_id)
    if view == INCONCLUSIVE:
        message: str | None = (f"failed on {', '.join(test.blamed)}, before judging {req_id}: "
                               + (test.message or ""))
    elif view == UNTESTABLE and test.outcome == NOT_CLAIMED:
        message = (f"{test.message or 'not claimed'}; {req_id} reaches only what the engine "
                   "claims (SPEC 19.2, Appendix B)")
    else:
        message = test.message or None
    needs = _test_needs(test, claimed)
    return TestOutcome(
        nodeid=test.kit_id, outcome=Outcome(view), message=message,
        blamed=test.blamed if test.outcome == FAILED else (),
        input_strictness=view == FAILED and test.strictness,
        needs=needs if view == NOT_CLAIMED else ())


def _unsigned(report: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k != "signature"}


def sign_report(report: Mapping[str, Any], key: SigningKey) -> dict[str, Any]:
    """The report with a signature block over everything else (context conformance-report)."""
    body = _unsigned(report)
    return {**body, "signature": {"signed_by": key.address,
                                  "signature": key.sign(CONTEXT_REPORT, body)}}


def verify_report(report: Mapping[str, Any]) -> bool:
    """True if signed and valid, False if unsigned; raises SignatureError if the signature fails."""
    block = report.get("signature")
    if block is None:
        return False
    if not isinstance(block, dict):
        from memspec._errors import SignatureError

        raise SignatureError("report signature block is not an object")
    verify_by_address(block.get("signed_by"), CONTEXT_REPORT, _unsigned(report),
                      block.get("signature"))
    return True


def check_report(report: Mapping[str, Any] | Report) -> None:
    """Raise :class:`~memspec.report.MalformedReport` (a MemspecError) naming the first problem
    unless ``report`` matches schemas/report.json."""
    validate_wire(report.to_wire() if isinstance(report, Report) else dict(report))
