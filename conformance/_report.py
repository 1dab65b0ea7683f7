"""The conformance report: per-test outcomes folded into requirement and profile verdicts.

Folding rules (documented in the report schema too):

* a test is passed, failed, errored (the engine broke the protocol), not-claimed,
  untestable, skipped or not-run (deselected);
* a requirement whose profile the engine does not claim is not-claimed; otherwise
  failed if any of its tests failed, else errored if any errored, else passed if
  any passed, else untestable if it has a reason (or a test said so), else not-run;
* a claimed profile is certified when none of its MUST / MUST NOT requirements is
  failed, errored or not-run and every profile it requires is certified too.
  SHOULD / MAY failures are warnings: they show, but never fail a profile.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memspec._data import load_json, vector_files
from memspec._errors import MemspecError
from memspec._signing import CONTEXT_REPORT, SigningKey, verify_by_address
from memspec.conformance._outcomes import (
    ALWAYS_PROFILES,
    ERRORED,
    FAILED,
    NOT_CLAIMED,
    PASSED,
    UNTESTABLE,
    KitItem,
    Requirement,
    catalogue,
)
from memspec.conformance._session import EngineState, Finding
from memspec.engine import PROTOCOL_VERSION, SPEC_VERSION, profiles

__all__ = [
    "NOT_RUN",
    "REPORT_SCHEMA_ID",
    "HandOver",
    "TestResult",
    "build_report",
    "check_report",
    "fold_items",
    "render_summary",
    "sign_report",
    "suite_digest",
    "verify_report",
]

REPORT_SCHEMA_ID = "https://memspec.dev/schemas/report.json"
NOT_RUN = "not-run"
_VERDICT_ORDER = ("failed", "errored", "incomplete", "certified")


@dataclass(frozen=True)
class TestResult:
    """One kit test as the report sees it."""

    __test__ = False  # not a pytest test class, despite the name

    kit_id: str
    requirements: tuple[str, ...]
    outcome: str
    message: str | None = None


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
    results: Mapping[str, tuple[str, str | None]],
    deselected: Collection[str] = (),
) -> tuple[list[TestResult], list[dict[str, str]]]:
    """The report's tests and kit checks, in collection order, from items keyed by node id.

    A collected test without a result did not run (``not-run``); a deselected one is
    ``not-run`` with the note "deselected", whatever its result.
    """
    tests: list[TestResult] = []
    checks: list[dict[str, str]] = []
    for nodeid, item in items.items():
        outcome, message = results.get(nodeid, (NOT_RUN, None))
        if item.kit_check:
            checks.append({"nodeid": item.kit_id, "outcome": outcome})
            continue
        if nodeid in deselected:
            outcome, message = NOT_RUN, "deselected"
        tests.append(TestResult(item.kit_id, item.requirements, outcome, message))
    return tests, checks


def suite_digest(test_ids: Iterable[str]) -> str:
    """sha256 (hex) over the kit's test ids, its vectors files and its requirement catalogue."""
    digest = hashlib.sha256()
    for test_id in sorted(set(test_ids)):
        digest.update(b"test\0" + test_id.encode("utf-8") + b"\n")
    for name in vector_files():
        body = json.dumps(load_json("vectors", name), sort_keys=True, ensure_ascii=False)
        digest.update(b"vectors\0" + name.encode("utf-8") + b"\0" + body.encode("utf-8") + b"\n")
    reqs = sorted((r.id, r.level, r.profile) for r in catalogue().values())
    digest.update(b"requirements\0" + json.dumps(reqs).encode("utf-8"))
    return digest.hexdigest()


def _requirement_outcome(
    req: Requirement, tests: Sequence[TestResult], claimed: frozenset[str]
) -> tuple[str, str | None]:
    if req.profile not in claimed:
        return NOT_CLAIMED, None
    seen = {t.outcome for t in tests}
    for outcome in (FAILED, ERRORED, PASSED):
        if outcome in seen:
            return outcome, None
    if req.untestable:
        return UNTESTABLE, req.untestable
    if UNTESTABLE in seen:
        note = next(t.message for t in tests if t.outcome == UNTESTABLE)
        return UNTESTABLE, note
    if tests and seen == {NOT_CLAIMED}:
        return NOT_CLAIMED, "its tests need a profile the engine does not claim"
    if not tests:
        return NOT_RUN, "the kit has no test for this requirement"
    return NOT_RUN, "its tests did not run (deselected or skipped)"


def _profile_verdicts(
    claimed: frozenset[str], req_entries: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    table = profiles()
    own: dict[str, str] = {}
    for name in table:
        worst = "certified"
        for entry in req_entries:
            if entry["profile"] != name or not entry["binding"]:
                continue
            outcome = entry["outcome"]
            verdict = {FAILED: "failed", ERRORED: "errored", NOT_RUN: "incomplete"}.get(outcome)
            if verdict and _VERDICT_ORDER.index(verdict) < _VERDICT_ORDER.index(worst):
                worst = verdict
        own[name] = worst
    out: dict[str, dict[str, Any]] = {}

    def settle(name: str, trail: tuple[str, ...] = ()) -> str:
        if name in out:
            return str(out[name]["verdict"])
        if name not in claimed:
            out[name] = {"claimed": False, "verdict": NOT_CLAIMED}
            return NOT_CLAIMED
        verdict = own.get(name, "certified")
        notes: list[str] = []
        blocked: list[str] = []
        for dep in table.get(name, {}).get("requires", []):
            if dep in trail:
                continue
            dep_verdict = settle(dep, (*trail, name))
            if dep_verdict == NOT_CLAIMED:
                dep_verdict = "failed"
                notes.append(f"requires profile {dep}, which the engine does not claim")
            elif dep_verdict != "certified":
                blocked.append(dep)
            if _VERDICT_ORDER.index(dep_verdict) < _VERDICT_ORDER.index(verdict):
                verdict = dep_verdict
        if blocked and own.get(name) == "certified":
            notes.append(f"its own requirements pass; required profile {', '.join(blocked)} "
                         "is not certified")
        out[name] = {"claimed": True, "verdict": verdict}
        if notes:
            out[name]["notes"] = notes
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
) -> dict[str, Any]:
    """Fold test results into the report (unsigned).

    Each finding the connection recorded fails its requirement once, as a test of its
    own (``finding:<requirement>:<where>``), whichever kit tests happened to see it.
    """
    info = dict(engine_info or {})
    tests = [*tests, *(TestResult(f"finding:{f.requirement}:{f.where}", (f.requirement,),
                                  FAILED, f.message + (f" (call: {f.call})" if f.call else ""))
                       for f in findings)]
    claimed_list = [p for p in info.get("profiles", []) if isinstance(p, str)]
    claimed = frozenset(claimed_list) | ALWAYS_PROFILES
    by_req: dict[str, list[TestResult]] = {}
    for test in tests:
        for req_id in test.requirements:
            by_req.setdefault(req_id, []).append(test)
    entries: list[dict[str, Any]] = []
    for req in catalogue().values():
        related = by_req.get(req.id, [])
        outcome, note = _requirement_outcome(req, related, claimed)
        entry: dict[str, Any] = {
            "id": req.id, "level": req.level, "profile": req.profile,
            "binding": req.binding, "outcome": outcome,
            "tests": [_test_entry(t) for t in related],
        }
        if note:
            entry["note"] = note
        entries.append(entry)
    profile_table = _profile_verdicts(claimed, entries)
    verdicts = [v["verdict"] for v in profile_table.values() if v["claimed"]]
    verdict = min(verdicts, key=_VERDICT_ORDER.index) if verdicts else "certified"
    if engine_info is None:
        verdict = "errored"
    test_counts = Counter(t.outcome for t in tests)
    req_counts = Counter(e["outcome"] for e in entries)
    warnings = sum(1 for e in entries if not e["binding"] and e["outcome"] == FAILED)
    report: dict[str, Any] = {
        "report_version": 1,
        "engine": {
            "name": str(info.get("name", engine_label)),
            "version": str(info["version"]) if "version" in info else None,
            "spec_version": info.get("spec_version"),
            "protocol": info.get("protocol"),
            "profiles": claimed_list,
            "loaded_as": engine_label,
        },
        "kit": {"version": kit_version, "spec_version": SPEC_VERSION, "protocol": PROTOCOL_VERSION},
        "spec_version": SPEC_VERSION,
        "suite_digest": digest,
        "started_at": started_at,
        "finished_at": finished_at,
        "mode": mode,
        "verdict": verdict,
        "profiles": profile_table,
        "requirements": entries,
        "summary": {
            "tests": {k: test_counts[k] for k in sorted(test_counts)},
            "requirements": {k: req_counts[k] for k in sorted(req_counts)},
            "warnings": warnings,
        },
    }
    if engine_fault:
        report["engine"]["fault"] = engine_fault
    return report


def _test_entry(test: TestResult) -> dict[str, Any]:
    entry: dict[str, Any] = {"nodeid": test.kit_id, "outcome": test.outcome}
    if test.message:
        entry["message"] = test.message
    return entry


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


def check_report(report: Mapping[str, Any]) -> None:
    """Raise ValueError naming the first problem unless ``report`` matches schemas/report.json."""
    from jsonschema.exceptions import best_match

    from memspec._schemas import validator_for

    error = best_match(validator_for(REPORT_SCHEMA_ID).iter_errors(dict(report)))
    if error is not None:
        where = "/" + "/".join(str(p) for p in error.absolute_path)
        raise MemspecError(f"conformance report does not match report.json at {where}: "
                         f"{error.message}")


_MARKUP: dict[str, dict[str, bool]] = {
    "certified": {"green": True, "bold": True},
    "passed": {"green": True},
    "failed": {"red": True, "bold": True},
    "errored": {"red": True, "bold": True},
    "incomplete": {"yellow": True, "bold": True},
}


def render_summary(report: Mapping[str, Any], *, verbose: bool = False) -> list[
    tuple[str, dict[str, bool]]
]:
    """Terminal lines (with markup) summarizing a report: engine, profiles, requirements."""
    lines: list[tuple[str, dict[str, bool]]] = []
    eng = report["engine"]
    lines.append((
        f"engine: {eng['name']} {eng.get('version') or '?'} ({report['mode']}; "
        f"spec {eng.get('spec_version') or '?'}, protocol {eng.get('protocol') or '?'})", {},
    ))
    if eng.get("fault"):
        lines.append((f"engine fault: {eng['fault'].splitlines()[0]}", {"red": True}))
    verdict = str(report["verdict"])
    lines.append((f"verdict: {verdict.upper()}", _MARKUP.get(verdict, {})))
    lines.append(("profiles:", {}))
    width = max((len(name) for name in report["profiles"]), default=0)
    for name, entry in report["profiles"].items():
        claim = "always" if name in ALWAYS_PROFILES else ("claimed" if entry["claimed"]
                                                          else "not claimed")
        shown = entry["verdict"] if entry["claimed"] else ""
        notes = f"  ({'; '.join(entry['notes'])})" if entry.get("notes") else ""
        lines.append((f"  {name:<{width}} {claim:<12} {shown}{notes}",
                      _MARKUP.get(entry["verdict"], {}) if entry["claimed"] else {}))
    counts = report["summary"]["requirements"]
    counted = ", ".join(f"{n} {k}" for k, n in counts.items())
    lines.append((f"requirements: {counted}; SHOULD/MAY warnings: "
                  f"{report['summary']['warnings']}", {}))
    quiet = {PASSED, NOT_CLAIMED, UNTESTABLE}
    ids = max((len(e["id"]) for e in report["requirements"]), default=0)
    profiles = max((len(e["profile"]) for e in report["requirements"]), default=0)
    for entry in report["requirements"]:
        outcome = entry["outcome"]
        if not verbose and outcome in quiet:
            continue
        label = outcome if entry["binding"] or outcome != FAILED else "failed (warning)"
        detail = ""
        bad = [t for t in entry["tests"] if t["outcome"] in (FAILED, ERRORED)]
        if bad:
            first = bad[0]
            msg = (first.get("message") or "").strip().splitlines()
            detail = f"  {first['nodeid']}" + (f" -- {msg[0][:160]}" if msg else "")
            if len(bad) > 1:
                detail += f" (+{len(bad) - 1} more)"
        elif entry.get("note"):
            detail = f"  ({entry['note']})"
        markup = _MARKUP.get(outcome, {}) if entry["binding"] else {"yellow": outcome == FAILED}
        lines.append((f"  {entry['id']:<{ids}} {entry['level']:<8} {entry['profile']:<{profiles}} "
                      f"{label:<16}{detail}", markup))
    if "signature" in report:
        lines.append((f"signed by {report['signature']['signed_by']}", {}))
    return lines
