"""Rendering a conformance report for people: Markdown, HTML, an SVG badge and a shields.io
endpoint.

A report says what an engine is: its name, version and messages are the engine's own
words, so every one of them is shown through memspec._display, never as markup. What
the profiles and requirements mean comes from the spec's own data (spec/operations.json,
spec/requirements.json), each requirement linked to its anchor on the spec website.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from memspec._display import html_text, markdown_inline
from memspec._requirements import EXTENSION_FAMILIES, load_requirements
from memspec.data import profiles as profile_table
from memspec.report import Outcome, Report, RequirementOutcome, Verdict

__all__ = ["SPEC_SITE", "badge_endpoint", "badge_svg", "badge_text", "report_html",
           "report_markdown", "requirement_url", "test_counts"]

#: The spec website (mkdocs.yml's site_url); requirement ids are anchors on its spec pages.
SPEC_SITE = "https://memspec.dev/"

# shields.io colour names and the same colours in the SVG.
_COLOURS = {"brightgreen": "#4c1", "yellowgreen": "#a4a61d", "yellow": "#dfb317",
            "orange": "#fe7d37", "red": "#e05d44", "lightgrey": "#9f9f9f"}
_VERDICT_COLOUR = {"certified": "brightgreen", "partial": "yellow", "failed": "red",
                   "errored": "orange", "incomplete": "yellow"}
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9 -]*\Z")
_ID = re.compile(r"[A-Z][A-Z0-9]*-\d+\Z")
_NOT_MET = (Outcome.FAILED, Outcome.ERRORED)
#: A report as the model, or as its wire form (read through the model).
AnyReport = Report | Mapping[str, Any]


def _model(report: AnyReport) -> Report:
    return report if isinstance(report, Report) else Report.from_wire(dict(report))


def requirement_url(rid: str) -> str:
    """The address of a requirement's anchor on the spec website."""
    page = "extensions" if rid.split("-", 1)[0] in EXTENSION_FAMILIES else "spec"
    return f"{SPEC_SITE}generated/{page}/#{rid}"


def _word(value: object) -> str:
    """A vocabulary word of the report (an outcome, a level, a profile), as literal text."""
    text = str(value)
    return text if _WORD.match(text) else markdown_inline(text)


def _rid(value: object) -> str:
    """A requirement id as a link to the spec, or literal text when it is not an id."""
    text = str(value)
    return f"[{text}]({requirement_url(text)})" if _ID.match(text) else markdown_inline(text)


def _certified(report: Report) -> tuple[list[str], list[str]]:
    """(the claimable profiles certified, every claimable profile in the report)."""
    table = profile_table()
    claimable = [name for name in report.profiles
                 if not ((found := table.get(name)) and found.always)]
    done = [name for name in claimable
            if report.profiles[name].claimed
            and report.profiles[name].verdict == Verdict.CERTIFIED]
    return done, claimable


def _meaning(name: str) -> str:
    entry = profile_table().get(name)
    if entry is None:
        return ""
    return f"{entry.title}: {entry.summary}" if entry.title else entry.summary


def _profile_rows(report: Report) -> list[tuple[str, str, str, str]]:
    """(name, claimed, verdict, notes) per profile, in the report's order."""
    table = profile_table()
    rows = []
    for name, entry in report.profiles.items():
        always = bool((found := table.get(name)) and found.always)
        claimed = "always" if always else ("yes" if entry.claimed else "no")
        verdict = entry.verdict.value if entry.claimed or always else "not claimed"
        rows.append((name, claimed, verdict, "; ".join(entry.notes)))
    return rows


def _problems(report: Report) -> list[RequirementOutcome]:
    return [r for r in report.requirements
            if r.outcome in _NOT_MET or (r.outcome == Outcome.PARTIAL and r.binding)]


def _first_message(entry: RequirementOutcome) -> tuple[str, str]:
    for test in entry.tests:
        if test.outcome in _NOT_MET:
            message = (test.message or "").strip().splitlines()
            return test.nodeid, message[0] if message else ""
    return "", entry.note or ""


def _untestable(report: Report) -> list[tuple[RequirementOutcome, str]]:
    """The report's untestable requirements with the reason (the report's, else the spec's)."""
    reasons = {r.id: r.untestable for r in load_requirements() if r.untestable}
    return [(entry, entry.note or reasons.get(entry.id) or "")
            for entry in report.requirements if entry.outcome == Outcome.UNTESTABLE]


def test_counts(report: Report) -> dict[str, int]:
    """Tests per outcome as the kit's terminal summary counts them: the requirement-traced
    tests of ``summary.tests`` plus the kit's checks of itself (``kit_checks``)."""
    counts = Counter(dict(report.summary.tests))
    counts.update(check.outcome.value for check in report.kit_checks or ())
    return dict(sorted(counts.items()))


def _counts(counts: Mapping[str, Any]) -> str:
    total = sum(int(n) for n in counts.values())
    listed = ", ".join(f"{n} {_word(k)}" for k, n in counts.items() if n)
    return f"{total} ({listed})" if listed else "0"


def report_markdown(given: AnyReport) -> str:
    """A Markdown summary: what was certified, every profile with its meaning, every
    requirement not met, the untestable requirements, and every requirement's outcome."""
    report = _model(given)
    engine = report.engine
    summary = report.summary
    done, claimable = _certified(report)
    name = markdown_inline(f"{engine.name} {engine.version or ''}".strip())
    lines = [
        f"# Conformance report: {name}",
        "",
        f"- **Verdict:** {_word(report.verdict)}",
        f"- **Certified profiles:** {len(done)} of {len(claimable)}"
        + (f": {', '.join(done)}" if done else ""),
        f"- **Spec:** {markdown_inline(report.spec_version)} · **kit:** memspec "
        f"{markdown_inline(report.kit.version)} · **mode:** {_word(report.mode)}",
        f"- **Suite digest:** {markdown_inline(report.suite_digest)}",
        f"- **Tests:** {_counts(test_counts(report))}"
        + (f", {len(report.kit_checks)} of them the kit's checks of itself"
           if report.kit_checks else ""),
        f"- **Requirements:** {_counts(summary.requirements)}",
        f"- **Warnings:** {summary.warnings} (SHOULD / MAY requirements not met)",
        "",
        "## Profiles",
        "",
        "| profile | what it covers | claimed | verdict | note |",
        "|---|---|---|---|---|",
    ]
    for profile, claimed, verdict, notes in _profile_rows(report):
        anchor = f"{SPEC_SITE}generated/requirements/#profile-{profile}"
        label = f"[{profile}]({anchor})" if _WORD.match(profile) else markdown_inline(profile)
        lines.append(f"| {label} | {markdown_inline(_meaning(profile))} | {claimed} | "
                     f"{_word(verdict)} | {markdown_inline(notes)} |")
    problems = _problems(report)
    lines += ["", "## Requirements not met", ""]
    if not problems:
        lines.append("None: every requirement of every claimed profile passed or is untestable.")
    else:
        lines += ["| requirement | level | profile | outcome | first failing test | message |",
                  "|---|---|---|---|---|---|"]
        for entry in problems:
            nodeid, message = _first_message(entry)
            cells = [_rid(entry.id), _word(entry.level), _word(entry.profile),
                     _word(entry.outcome), markdown_inline(nodeid),
                     markdown_inline(message[:200])]
            lines.append("| " + " | ".join(cells) + " |")
    untestable = _untestable(report)
    lines += ["", "## Untestable requirements", ""]
    if not untestable:
        lines.append("None.")
    else:
        lines += ["The spec lists these in its Appendix A, each with why the kit cannot "
                  "observe it through the engine interface.", "",
                  "| requirement | level | profile | why it cannot be tested |",
                  "|---|---|---|---|"]
        lines += [f"| {_rid(entry.id)} | {_word(entry.level)} | {_word(entry.profile)} "
                  f"| {markdown_inline(reason)} |" for entry, reason in untestable]
    lines += ["", "## Every requirement", "",
              "| requirement | level | profile | outcome | tests passed |", "|---|---|---|---|---|"]
    for entry in report.requirements:
        passed = sum(1 for t in entry.tests if t.outcome == Outcome.PASSED)
        lines.append(f"| {_rid(entry.id)} | {_word(entry.level)} | "
                     f"{_word(entry.profile)} | {_word(entry.outcome)} | "
                     f"{passed} / {len(entry.tests)} |")
    if report.signature is not None:
        lines += ["", f"Signed by {markdown_inline(report.signature.signed_by)} "
                  "(context conformance-report)."]
    return "\n".join(lines) + "\n"


def report_html(given: AnyReport) -> str:
    """A self-contained HTML page of the same summary (no external resources)."""
    report = _model(given)
    engine = report.engine
    esc = html_text
    done, claimable = _certified(report)
    rows = "".join(
        f"<tr><td>{esc(n)}</td><td>{esc(_meaning(n))}</td><td>{esc(c)}</td>"
        f"<td class=\"{esc(v)}\">{esc(v)}</td><td>{esc(notes)}</td></tr>"
        for n, c, v, notes in _profile_rows(report))
    problems = ""
    for entry in _problems(report):
        nodeid, message = _first_message(entry)
        link = (f'<a href="{esc(requirement_url(entry.id))}">{esc(entry.id)}</a>'
                if _ID.match(entry.id) else esc(entry.id))
        problems += (f"<tr><td>{link}</td><td>{esc(entry.level)}</td>"
                     f"<td>{esc(entry.profile)}</td><td>{esc(entry.outcome)}</td>"
                     f"<td><code>{esc(nodeid)}</code></td><td>{esc(message[:300])}</td></tr>")
    failing = (f"<table><tr><th>requirement</th><th>level</th><th>profile</th><th>outcome</th>"
               f"<th>test</th><th>message</th></tr>{problems}</table>" if problems
               else "<p>None: every requirement of every claimed profile passed.</p>")
    title = esc(f"{engine.name} {engine.version or ''}".strip())
    verdict = esc(report.verdict)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Conformance report: {title}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}}
table{{border-collapse:collapse;width:100%}}td,th{{border:1px solid #ccc;padding:.3rem .5rem;
text-align:left;vertical-align:top}}.certified{{color:#2e7d32}}.failed{{color:#c62828}}
.errored{{color:#ef6c00}}</style></head><body>
<h1>Conformance report: {title}</h1>
<p><strong>Verdict: <span class="{verdict}">{verdict}</span></strong>
 · {len(done)} of {len(claimable)} profiles certified{esc(': ' + ', '.join(done)) if done else ''}
 · spec {esc(report.spec_version)} · memspec {esc(report.kit.version)} ·
 {esc(report.mode)}</p>
<h2>Profiles</h2><table><tr><th>profile</th><th>what it covers</th><th>claimed</th>
<th>verdict</th><th>note</th></tr>{rows}</table>
<h2>Requirements not met</h2>{failing}
</body></html>
"""


def badge_text(given: AnyReport) -> tuple[str, str, str]:
    """(label, message, shields.io colour name): what was certified, not just the verdict.

    An engine certified on 2 profiles reads "format, signing"; on more than three,
    "12/18 profiles"; any other verdict says so and how many profiles were certified.
    """
    report = _model(given)
    done, claimable = _certified(report)
    verdict = report.verdict.value
    if verdict == Verdict.CERTIFIED:
        if not done:
            message = "certified: no profile claimed"
        elif len(done) <= 3 and len(done) < len(claimable):
            message = ", ".join(done)
        else:
            message = f"{len(done)}/{len(claimable)} profiles"
        colour = "brightgreen" if len(done) == len(claimable) else "yellowgreen"
    else:
        message = verdict + (f" ({len(done)}/{len(claimable)} profiles certified)" if done
                             else "")
        colour = _VERDICT_COLOUR.get(verdict, "lightgrey")
    return "memspec", message, colour


def badge_svg(given: AnyReport) -> str:
    """A flat SVG badge: "memspec | what was certified"."""
    report = _model(given)
    label, value, colour = badge_text(report)
    certified, _ = _certified(report)
    left, right = 7 * len(label) + 12, 7 * len(value) + 12
    esc = html_text
    title = (f"{label}: {value} ({report.spec_version}; certified: "
             f"{', '.join(certified) or 'none'})")
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + right}" height="20" '
        f'role="img" aria-label="{esc(label)}: {esc(value)}">'
        f"<title>{esc(title)}</title>"
        f'<rect width="{left}" height="20" fill="#555"/>'
        f'<rect x="{left}" width="{right}" height="20" fill="{_COLOURS[colour]}"/>'
        f'<g fill="#fff" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">'
        f'<text x="6" y="14">{esc(label)}</text>'
        f'<text x="{left + 6}" y="14">{esc(value)}</text></g></svg>\n'
    )


def badge_endpoint(report: AnyReport) -> str:
    """The same badge as a shields.io endpoint document (https://shields.io/badges/endpoint-badge)."""
    label, message, colour = badge_text(report)
    return json.dumps({"schemaVersion": 1, "label": label, "message": message,
                       "color": colour}, indent=2) + "\n"
