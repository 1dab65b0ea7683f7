"""The kit power page: which deliberately faulty engines the kit catches.

Rendered from a selftest result (``memspec selftest --json PATH``, shape
``schemas/selftest.json``) when one is given, else from the fault catalogue of
``memspec.selftest`` (what would be run), else a note.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from _docgen._common import (
    KIT_POWER_PAGE,
    REQUIREMENTS_PAGE,
    SELFTEST_COMMAND,
    DocgenError,
    IdLinker,
    cell,
    code,
    front,
    plural,
    rel,
    text,
)

PAGE = KIT_POWER_PAGE
INTRO = (
    "A conformance kit is only as good as the faults it notices. `memspec selftest` wraps "
    "the reference engine in faulty engines, each with one deliberate bug that breaks "
    "exactly one requirement, runs the kit against every one of them (in process and as a "
    "separate process) and against the unmodified reference engine, and checks that the "
    "kit fails each fault on its own requirement while the reference engine passes.")


@dataclass(frozen=True)
class Fault:
    """One entry of the fault catalogue."""

    name: str
    requirement: str
    profile: str
    description: str


def catalogue() -> list[Fault] | None:
    """The faults of ``memspec.selftest``, or None when it cannot be imported here."""
    try:
        from memspec.selftest.faults import all_faults

        return [Fault(f.name, f.requirement, f.profile, f.description) for f in all_faults()]
    except Exception:  # an absent or half-built selftest: the page says so instead
        return None


def check_result(result: Any) -> dict[str, Any]:
    """A selftest result, validated against schemas/selftest.json."""
    from memspec._schemas import iter_errors

    problems = iter_errors(result, "selftest")
    if problems:
        where, message = problems[0]
        raise DocgenError(f"not a selftest result: {where or '/'}: {message}")
    if not isinstance(result, dict):  # pragma: no cover - the schema says object
        raise DocgenError("not a selftest result: not an object")
    return result


class _Links:
    def __init__(self, linker: IdLinker, profiles: set[str]) -> None:
        self.linker = linker
        self.profiles = profiles

    def req(self, rid: str) -> str:
        return self.linker.link(rid, PAGE) if rid in self.linker.ids else code(rid)

    def reqs(self, ids: list[str]) -> str:
        return ", ".join(self.req(r) for r in ids) or "—"

    def profile(self, name: str) -> str:
        if name not in self.profiles:
            return code(name) if name else ""
        return f"[{name}]({rel(PAGE, REQUIREMENTS_PAGE + '#profile-' + name)})"


def _drift_note(result: dict[str, Any]) -> list[str]:
    try:
        from _docgen import selftest_record

        stale = selftest_record.staleness(result, selftest_record.catalogue())
    except Exception:  # an absent or half-built selftest: no catalogue to compare with
        return []
    if stale.current:
        return []
    out = ['!!! warning "The catalogue changed since this result was recorded"',
           f"    Run `{SELFTEST_COMMAND} --changed` and rebuild."]
    out.extend(f"    {text(line)}." for line in stale.explain())
    return [*out, ""]


def render_result(result: dict[str, Any], links: _Links) -> list[str]:
    """The body of the page for a selftest result."""
    summary = result["summary"]
    kind = "success" if summary["ok"] else "failure"
    reference = "passes" if summary["reference_passed"] else "does **not** pass"
    out = [
        f'!!! {kind} "The kit caught {summary["caught"]} of {summary["runs"]} faulty engine runs"',
        f"    {plural(summary['faults'], 'fault')} in {', '.join(result['modes'])} mode; "
        f"{summary['missed']} missed, {summary['with_collateral']} with collateral failures; "
        f"the reference engine {reference}. "
        + ("Every fault run used the whole kit." if result["full"] else
           "Each fault run used a selection of the kit: the tests naming its requirement "
           "(`memspec selftest` adds the tests of its profile; the committed result, "
           f"recorded by `{SELFTEST_COMMAND}`, does not)."),
        "",
        f"Run from {code(result['started_at'])} to {code(result['finished_at'])}.", "",
        *_drift_note(result),
        "## Faulty engines", "",
        "| fault | mode | breaks | profile | caught | the kit reported | collateral |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in result["faults"]:
        caught = "yes" if row["caught"] else "**no**"
        out.append(
            f"| {code(row['fault'])}<br>{cell(text(row['description']))} | {row['mode']} | "
            f"{links.req(row['requirement'])} | {links.profile(row['profile'])} | {caught} | "
            f"{links.reqs(row['reported'])} | {links.reqs(row.get('collateral', []))} |")
    missed = [row for row in result["faults"] if not row["caught"]]
    if missed:
        out.extend(["", "## Missed faults", ""])
        for row in missed:
            out.extend([f"- {code(row['fault'])} ({row['mode']}): "
                        f"{links.linker.text(row['message'], PAGE)}"])
    out.extend(["", "## The reference engine", "",
                "| mode | passed | verdict | failed | errored |", "|---|---|---|---|---|"])
    for row in result["references"]:
        out.append(f"| {row['mode']} | {'yes' if row['passed'] else '**no**'} | "
                   f"{text(row['verdict'])} | {links.reqs(row['failed'])} | "
                   f"{links.reqs(row['errored'])} |")
    out.append("")
    return out


def render_catalogue(faults: list[Fault], links: _Links) -> list[str]:
    """The body of the page without a result: the catalogue of faults."""
    out = ['!!! warning "No selftest result given"',
           "    The faults below are the catalogue; whether the kit catches them is shown "
           f"once the site is built with a result (`{SELFTEST_COMMAND}`).", "",
           f"The catalogue has **{len(faults)} faulty engines**, covering "
           f"{len({f.requirement for f in faults})} requirements.", "",
           "| fault | breaks | profile | what it does wrong |", "|---|---|---|---|"]
    for fault in faults:
        out.append(f"| {code(fault.name)} | {links.req(fault.requirement)} | "
                   f"{links.profile(fault.profile)} | {cell(text(fault.description))} |")
    out.append("")
    return out


def build(result: Any | None, linker: IdLinker, profiles: set[str]) -> dict[str, bytes]:
    """The kit power page from a selftest result, else from the catalogue, else a note."""
    links = _Links(linker, profiles)
    out = [front("Kit power", "How the memspec kit is tested itself: engines with one "
                 "deliberate fault each, and whether the kit catches them."), INTRO, ""]
    if result is not None:
        out[1:1] = ['!!! note "Generated page"',
                    "    Generated by `tools/gen_docs.py` from a selftest result "
                    f"(`{SELFTEST_COMMAND}` writes the committed one).", ""]
        out.extend(render_result(check_result(result), links))
    else:
        faults = catalogue()
        if faults is None:
            out.extend(['!!! warning "No selftest result"',
                        "    Run `memspec selftest --json selftest.json` and rebuild with "
                        "`python tools/gen_docs.py --selftest selftest.json`.", ""])
        else:
            out[1:1] = ['!!! note "Generated page"',
                        "    Generated by `tools/gen_docs.py` from the fault catalogue of "
                        "`memspec.selftest`.", ""]
            out.extend(render_catalogue(faults, links))
    return {PAGE: "\n".join(out).encode()}
