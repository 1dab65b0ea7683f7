"""The kit's terminal summary of a report: engine, verdict, profiles, requirements."""

from __future__ import annotations

from memspec.conformance._outcomes import ALWAYS_PROFILES
from memspec.report import InputStrictness, Outcome, Report

__all__ = ["render_summary"]

_MARKUP: dict[str, dict[str, bool]] = {
    "certified": {"green": True, "bold": True},
    "passed": {"green": True},
    "failed": {"red": True, "bold": True},
    "errored": {"red": True, "bold": True},
    "incomplete": {"yellow": True, "bold": True},
    "partial": {"yellow": True, "bold": True},
}
_QUIET = (Outcome.PASSED, Outcome.NOT_CLAIMED, Outcome.UNTESTABLE)
_BAD = (Outcome.FAILED, Outcome.ERRORED)


def render_summary(report: Report, *, verbose: bool = False) -> list[
    tuple[str, dict[str, bool]]
]:
    """Terminal lines (with markup) summarizing a report: engine, profiles, requirements."""
    lines: list[tuple[str, dict[str, bool]]] = []
    eng = report.engine
    lines.append((
        f"engine: {eng.name} {eng.version or '?'} ({report.mode}; "
        f"spec {eng.spec_version or '?'}, protocol {eng.protocol or '?'})", {},
    ))
    if eng.fault:
        lines.append((f"engine fault: {eng.fault.splitlines()[0]}", {"red": True}))
    verdict = report.verdict.value
    lines.append((f"verdict: {verdict.upper()}", _MARKUP.get(verdict, {})))
    strictness = report.input_strictness
    if strictness:
        lenient = strictness.requirements
        lines.append((f"input strictness: {strictness.verdict.value.upper()}"
                      + (f" (accepts malformed input: {', '.join(lenient)})" if lenient else ""),
                      {"yellow": True} if lenient else {}))
    lines.append(("profiles:", {}))
    width = max((len(name) for name in report.profiles), default=0)
    for name, entry in report.profiles.items():
        claim = "always" if name in ALWAYS_PROFILES else ("claimed" if entry.claimed
                                                          else "not claimed")
        shown = entry.verdict.value if entry.claimed else ""
        notes = f"  ({'; '.join(entry.notes)})" if entry.notes else ""
        if (entry.claimed and entry.input is not None
                and entry.input.verdict == InputStrictness.LENIENT):
            shown += ", input lenient"
        lines.append((f"  {name:<{width}} {claim:<12} {shown}{notes}",
                      _MARKUP.get(entry.verdict, {}) if entry.claimed else {}))
    counts = report.summary.requirements
    counted = ", ".join(f"{n} {k}" for k, n in counts.items())
    lines.append((f"requirements: {counted}; SHOULD/MAY warnings: "
                  f"{report.summary.warnings}", {}))
    claimed = set(eng.profiles) | ALWAYS_PROFILES
    beyond = [e for e in report.needs_other_profiles or () if not set(e.needs) <= claimed]
    if beyond:
        shown = ", ".join(f"{e.id} (needs {', '.join(e.needs)})" for e in beyond[:8])
        more = f" and {len(beyond) - 8} more" if len(beyond) > 8 else ""
        lines.append((f"not judgeable with this claim alone: {shown}{more}", {"yellow": True}))
    ids = max((len(e.id) for e in report.requirements), default=0)
    profiles = max((len(e.profile) for e in report.requirements), default=0)
    for req in report.requirements:
        outcome = req.outcome
        if not verbose and outcome in _QUIET:
            continue
        label = outcome.value if req.binding or outcome != Outcome.FAILED else "failed (warning)"
        if req.input_only:
            label = "failed (input)"
        detail = ""
        # A vector names the exact input that broke; a property test's example is generated.
        bad = sorted((t for t in req.tests if t.outcome in _BAD),
                     key=lambda t: not t.nodeid.startswith("suites/test_vectors.py::"))
        if bad:
            first = bad[0]
            msg = (first.message or "").strip().splitlines()
            detail = f"  {first.nodeid}" + (f" -- {msg[0][:160]}" if msg else "")
            if len(bad) > 1:
                detail += f" (+{len(bad) - 1} more)"
        elif req.note:
            detail = f"  ({req.note})"
        markup = (_MARKUP.get(outcome, {}) if req.binding
                  else {"yellow": outcome == Outcome.FAILED})
        lines.append((f"  {req.id:<{ids}} {req.level:<8} {req.profile:<{profiles}} "
                      f"{label:<16}{detail}", markup))
    if report.signature is not None:
        lines.append((f"signed by {report.signature.signed_by}", {}))
    return lines
