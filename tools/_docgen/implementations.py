"""The Implementations and Compatibility pages: engines side by side, and why fg differs.

Implementations (like Bowtie's report for JSON Schema) renders the reports that
tools/gen_implementations.py keeps in docs/data/implementations/: every engine's verdict per
profile, every requirement whose outcome is not the same for all engines, and per engine each
requirement it does not pass, linked to its anchor in the specification and to its explanation.
Compatibility renders spec/peers/fg-agent-memory-0.2.0.json: per requirement, what
fg-agent-memory 0.2.0 does, what memspec requires and why. Everything a report or an engine
says is escaped (memspec._display); the classification is data too and is escaped the same way.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from _docgen._common import GEN, IdLinker, front, generated_note, read_json, rel
from _docgen.spec import section_anchors
from memspec._display import markdown_inline
from memspec.cli._compare import comparison
from memspec.peers import expected_outcome
from memspec.report import Outcome, Report, RequirementOutcome

IMPLEMENTATIONS_PAGE = f"{GEN}/implementations.md"
COMPATIBILITY_PAGE = f"{GEN}/compatibility.md"
DATA = Path("docs") / "data" / "implementations"
CLASSIFICATION = Path("spec") / "peers" / "fg-agent-memory-0.2.0.json"
#: The engine whose failures the classification explains.
CLASSIFIED_ENGINE = "fg-agent-memory"
CLASS_TITLES = {
    "engine-bug": "engine bug",
    "memspec-difference": "memspec difference",
    "not-applicable": "not applicable",
    "kit-defect": "kit defect",
}
_PASSING = (Outcome.PASSED, Outcome.NOT_CLAIMED, Outcome.UNTESTABLE)
_HEADING = re.compile(r"^#{2,4} ((?:\d+(?:\.\d+)*)|Appendix [A-Z])\b")


def load_implementations(root: Path) -> list[tuple[dict[str, Any], Report]]:
    """(index entry, report) of every kept report, in the index's order; a kept report that
    does not match schemas/report.json raises MalformedReport."""
    folder = root / DATA
    if not (folder / "index.json").is_file():
        return []
    index = read_json(folder / "index.json")
    return [(entry, Report.load(folder / entry["report"])) for entry in index["engines"]]


def decision_sections(spec_text: str) -> dict[str, str]:
    """The section number holding each ``**Decision ....**`` note of SPEC.md."""
    found: dict[str, str] = {}
    current = ""
    for line in spec_text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            current = heading.group(1)
        for name in re.findall(r"\*\*(Decision[^*]*?)\.\*\*", line):
            found.setdefault(name, current)
    return found


def _anchor(rid: str) -> str:
    return f"fg-{rid.lower()}"


def _cause_anchor(name: str) -> str:
    return f"cause-{name}"


def _explained(entry: RequirementOutcome, report: Report,
               classification: dict[str, Any] | None) -> bool:
    if classification is None or report.engine.name != CLASSIFIED_ENGINE:
        return False
    found = classification["requirements"].get(entry.id)
    return found is not None and expected_outcome(found, report.mode) is not None


def _first_message(entry: RequirementOutcome) -> str:
    if entry.needs:
        return "judged in part: its other tests need the unclaimed profiles " + ", ".join(
            entry.needs)
    for test in entry.tests:
        if test.outcome not in (Outcome.PASSED, Outcome.INCONCLUSIVE) and test.message:
            return test.message
    return ""


def render_implementations(reports: list[tuple[dict[str, Any], Report]],
                           classification: dict[str, Any] | None, linker: IdLinker) -> str:
    """The Implementations page."""
    page = IMPLEMENTATIONS_PAGE
    lines = [front("Implementations", "Every engine the memspec project can run, certified by "
                   "the kit side by side: verdicts per profile and outcomes per requirement."),
             generated_note("`docs/data/implementations/` (written by "
                            "`tools/gen_implementations.py`)"), "",
             "Every engine the project can run, certified by the same kit and compared as "
             "`memspec compare` compares reports. The reports are regenerated with "
             "`python tools/gen_implementations.py`; an outcome that is not `passed` links to "
             "its requirement and, for fg-agent-memory, to its explanation on the "
             f"[compatibility page]({rel(page, COMPATIBILITY_PAGE)}).", ""]
    if not reports:
        return "\n".join([*lines, "No reports are kept yet.", ""])
    result = comparison([(entry["report"], report) for entry, report in reports])
    lines += ["## Engines {#engines}", "", "| # | engine | mode | kit | verdict | command |",
              "|---|---|---|---|---|---|"]
    for number, (entry, report) in enumerate(reports, 1):
        name = f"{report.engine.name} {report.engine.version or ''}".strip()
        lines.append(
            f"| [{number}](#{entry['id']}) | {markdown_inline(name)} | "
            f"{markdown_inline(report.mode)} | "
            f"{markdown_inline(report.kit.version)} | "
            f"**{markdown_inline(report.verdict)}** | "
            f"`{entry['command'].replace('`', '')}` |")
    numbers = " | ".join(f"[{n}](#{entry['id']})" for n, (entry, _) in enumerate(reports, 1))
    lines += ["", "## Profiles {#profiles}", "", f"| profile | {numbers} |",
              "|---|" + "---|" * len(reports)]
    for name, verdicts in result.profiles:
        lines.append(f"| `{markdown_inline(name)}` | "
                     + " | ".join(markdown_inline(v) for v in verdicts) + " |")
    lines += ["", "## Requirements that differ {#differing}", "",
              f"{len(result.requirements)} requirements do not have the same outcome for every "
              "engine.", "", f"| requirement | profile | level | {numbers} |",
              "|---|---|---|" + "---|" * len(reports)]
    for rid, profile, level, outcomes in result.requirements:
        cells = []
        for column, outcome in enumerate(outcomes):
            found = reports[column][1].requirement(rid)
            report = reports[column][1]
            shown = markdown_inline(outcome)
            if found is not None and outcome not in _PASSING and _explained(
                    found, report, classification):
                shown = f"[{shown}]({rel(page, COMPATIBILITY_PAGE)}#{_anchor(rid)})"
            cells.append(shown)
        lines.append(f"| {linker.link(rid, page)} | `{markdown_inline(profile)}` | {level} | "
                     + " | ".join(cells) + " |")
    for number, (entry, report) in enumerate(reports, 1):
        failing = [e for e in report.requirements if e.outcome not in _PASSING]
        lines += ["", f"## {number}. {markdown_inline(entry['title'])}, "
                      f"{markdown_inline(entry['mode'])} {{#{entry['id']}}}", "",
                  f"Verdict **{markdown_inline(report.verdict)}**; "
                  f"{len(failing)} requirements not passed. Command: "
                  f"`{entry['command'].replace('`', '')}`.", ""]
        if not failing:
            continue
        lines += ["| requirement | outcome | why |", "|---|---|---|"]
        for item in failing:
            if _explained(item, report, classification):
                names = ", ".join(markdown_inline(c)
                                  for c in item_causes(classification, item.id))
                why = f"[{names}]({rel(page, COMPATIBILITY_PAGE)}#{_anchor(item.id)})"
            else:
                why = markdown_inline(_first_message(item)[:300])
            lines.append(f"| {linker.link(item.id, page)} | {markdown_inline(item.outcome)} "
                         f"| {why} |")
    return "\n".join(lines) + "\n"


def item_causes(classification: dict[str, Any] | None, rid: str) -> list[str]:
    """The cause names the classification gives for ``rid``."""
    if classification is None:
        return []
    return list(classification["requirements"].get(rid, {}).get("causes", []))


def render_compatibility(classification: dict[str, Any], spec_text: str,
                         linker: IdLinker) -> str:
    """The Compatibility page: per requirement, what fg does, what memspec requires, why."""
    page = COMPATIBILITY_PAGE
    engine = classification["engine"]
    title = f"{engine['name']} {engine['version']}"
    sections = decision_sections(spec_text)
    anchors = section_anchors(spec_text)
    causes = classification["causes"]
    counts: dict[str, int] = {}
    for cause in causes.values():
        counts[cause["class"]] = counts.get(cause["class"], 0) + 1
    lines = [front(f"Compatibility with {title}",
                   f"Every requirement {title} does not pass, with what it does, what memspec "
                   "requires and why."),
             generated_note(f"`{CLASSIFICATION.as_posix()}`"), "",
             f"{markdown_inline(title)} is the original engine of the format. memspec certifies "
             "it through a translating adapter (`memspec.peers.fg_agent_memory`); every "
             f"requirement it does not pass ({len(classification['requirements'])}) is listed "
             "here with its causes. A test fails when the kit's outcome stops matching this "
             "list, in either direction. Causes by class: "
             + ", ".join(f"{CLASS_TITLES[k]} {v}" for k, v in sorted(counts.items())) + ".", "",
             f"See also the [Implementations page]({rel(page, IMPLEMENTATIONS_PAGE)}).", "",
             "## By requirement {#by-requirement}", ""]
    for rid, entry in classification["requirements"].items():
        lines += [f"### {rid} {{#{_anchor(rid)}}}", "",
                  f"{linker.link(rid, page, 'The requirement')}: outcome "
                  f"{_outcome_text(entry['outcome'])}.", ""]
        for name in entry["causes"]:
            cause = causes[name]
            lines += [f"- **{CLASS_TITLES[cause['class']]}** "
                      f"([{markdown_inline(name)}](#{_cause_anchor(name)})). "
                      f"{markdown_inline(engine['name'])} does: "
                      f"{markdown_inline(cause['engine'])} memspec requires: "
                      f"{markdown_inline(cause['memspec'])}"]
        lines.append("")
    lines += ["## Causes {#causes}", ""]
    for name, cause in causes.items():
        lines += [f"### {markdown_inline(name)} {{#{_cause_anchor(name)}}}", "",
                  f"*{CLASS_TITLES[cause['class']]}*", "",
                  f"- **{markdown_inline(engine['name'])} does:** "
                  f"{markdown_inline(cause['engine'])}",
                  f"- **memspec requires:** {markdown_inline(cause['memspec'])}",
                  f"- **Why:** {markdown_inline(cause['why'])}"]
        if "quote" in cause:
            lines += ["", f"{markdown_inline(cause['quote']['source'])} says:", "",
                      *(f"> {markdown_inline(part)}" if part.strip() else ">"
                        for part in cause["quote"]["text"].splitlines())]
        if "decision" in cause:
            number = sections.get(cause["decision"])
            target = anchors.get(number, "") if number else ""
            where = (f" in [section {number}]({rel(page, f'{GEN}/spec.md#{target}')})"
                     if target else "")
            lines += ["", f"memspec's note: *{markdown_inline(cause['decision'])}*{where}."]
        used = [rid for rid, e in classification["requirements"].items() if name in e["causes"]]
        lines += ["", "Requirements: " + ", ".join(f"[{rid}](#{_anchor(rid)})" for rid in used)
                  + ".", ""]
    return "\n".join(lines)


def _outcome_text(outcome: str | dict[str, str]) -> str:
    if isinstance(outcome, str):
        return f"**{markdown_inline(outcome)}**"
    return ", ".join(f"**{markdown_inline(value)}** {markdown_inline(mode)}"
                     for mode, value in outcome.items())


def build(root: Path, linker: IdLinker) -> dict[str, bytes]:
    """Both pages."""
    classification_path = root / CLASSIFICATION
    classification = read_json(classification_path) if classification_path.is_file() else None
    out = {IMPLEMENTATIONS_PAGE: render_implementations(load_implementations(root),
                                                        classification, linker).encode()}
    if classification is not None:
        spec_text = (root / "spec" / "SPEC.md").read_text(encoding="utf-8")
        out[COMPATIBILITY_PAGE] = render_compatibility(classification, spec_text,
                                                       linker).encode()
    return out
