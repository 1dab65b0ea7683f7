"""The lifecycle page (legality table and state diagram) and the operations page."""

from __future__ import annotations

import re
from typing import Any

from _docgen._common import (
    LIFECYCLE_PAGE,
    OPERATIONS_PAGE,
    REQUIREMENTS_PAGE,
    SPEC_PAGE,
    DocgenError,
    IdLinker,
    code,
    front,
    generated_note,
    md_heading,
    rel,
    text,
)


def edge_label(condition: str) -> str:
    """A short label for a diagram edge: the condition up to its first clause break."""
    label = re.split(r"[:,.(;]", condition, maxsplit=1)[0].strip()
    return re.sub(r"[^\w ]", "", label) or "legal"


def mermaid(legality: dict[str, Any]) -> str:
    """A mermaid stateDiagram-v2 of the legal transitions."""
    states = list(legality["states"])
    lines = ["stateDiagram-v2"]
    outgoing = {s: 0 for s in states}
    for item in legality["transitions"]:
        if item["legal"]:
            outgoing[item["from"]] = outgoing.get(item["from"], 0) + 1
            lines.append(f"    {item['from']} --> {item['to']}: {edge_label(item['condition'])}")
    for state in states:
        if outgoing.get(state, 0) == 0:
            lines.append(f"    {state} --> [*]")
            lines.append(f"    note right of {state}: terminal, nothing leaves it")
    return "\n".join(lines)


def _check(legality: dict[str, Any]) -> None:
    states = legality.get("states")
    transitions = legality.get("transitions")
    if not isinstance(states, list) or not isinstance(transitions, list):
        raise DocgenError("spec/legality.json needs states and transitions arrays")
    for item in transitions:
        if not isinstance(item, dict) or not {"from", "to", "legal"} <= set(item):
            raise DocgenError(f"spec/legality.json: malformed transition {item!r}")
        if item["from"] not in states or item["to"] not in states:
            raise DocgenError(f"spec/legality.json: unknown state in {item!r}")


def render_lifecycle(legality: dict[str, Any], linker: IdLinker) -> str:
    """The lifecycle page."""
    _check(legality)
    page = LIFECYCLE_PAGE
    states: list[str] = legality["states"]
    legal = {(t["from"], t["to"]) for t in legality["transitions"] if t["legal"]}
    out = [front("The lifecycle", "The record lifecycle of fg-agent-memory/0.1: four states, "
                 "the legality table and its state diagram."),
           generated_note("`spec/legality.json`"), "",
           f"Every record is in one of {len(states)} states: "
           + ", ".join(code(s) for s in states) + f". Of the {len(states) ** 2} pairs of "
           f"states, {len(legal)} are legal changes; every other change is rejected "
           f"({linker.link('LC-1', page) if 'LC-1' in linker.ids else 'LC-1'}). The "
           f"normative text is [section 8 of the specification]"
           f"({rel(page, SPEC_PAGE + '#section-8')}).", "",
           "## State diagram", "", "```mermaid", mermaid(legality), "```", "",
           "## Legality matrix", "",
           "Rows are the state a record is in, columns the state it would change to.", "",
           "| from \\ to | " + " | ".join(code(s) for s in states) + " |",
           "|---|" + "---|" * len(states)]
    for old in states:
        cells = ["**legal**" if (old, new) in legal else "—" for new in states]
        out.append(f"| {code(old)} | " + " | ".join(cells) + " |")
    out.extend(["", "## Legality table", "",
                "| from | to | legal | condition | requirements |", "|---|---|---|---|---|"])
    for item in legality["transitions"]:
        reqs = ", ".join(linker.link(r, page) if r in linker.ids else code(r)
                         for r in item.get("requirements", []))
        out.append(f"| {code(item['from'])} | {code(item['to'])} | "
                   f"{'yes' if item['legal'] else 'no'} | "
                   f"{text(str(item.get('condition', '')))} | {reqs} |")
    out.append("")
    return "\n".join(out)


def render_operations(operations: dict[str, Any], linker: IdLinker) -> str:
    """The engine operations page, grouped by profile."""
    page = OPERATIONS_PAGE
    ops: dict[str, Any] = operations.get("operations", {})
    profiles: dict[str, Any] = operations.get("profiles", {})
    out = [front("Engine operations", "The operations every memspec engine answers, "
                 "with their profiles, arguments and results."),
           generated_note("`spec/operations.json`"), "",
           f"The kit drives an engine through {len(ops)} operations (protocol "
           f"`{operations.get('protocol', '')}`). Operations of a profile an engine does not "
           "claim may answer `unsupported`. The normative text is "
           f"[section 18 of the specification]({rel(page, SPEC_PAGE + '#section-18')}).", ""]
    grouped: dict[str, list[tuple[str, Any]]] = {}
    for name, info in ops.items():
        grouped.setdefault(str(info.get("profile") or "core"), []).append((name, info))
    for profile in [*profiles, *sorted(set(grouped) - set(profiles))]:
        items = grouped.get(profile)
        if not items:
            continue
        title = profiles.get(profile, {}).get("title", profile)
        out.extend([md_heading(2, f"{text(str(title))} (`{profile}`)", f"ops-{profile}"), "",
                    f"[Requirements of this profile]"
                    f"({rel(page, REQUIREMENTS_PAGE + '#profile-' + profile)})", "",
                    "| operation | arguments | result | what it does |", "|---|---|---|---|"])
        for name, info in items:
            out.append(f'| <span id="op-{name}"></span>`{name}` | '
                       f"{code(str(info.get('args', '')))} | "
                       f"{code(str(info.get('result', '')))} | "
                       f"{linker.text(str(info.get('summary', '')), page)} |")
        out.append("")
    return "\n".join(out)
