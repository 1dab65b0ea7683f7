"""Specification pages: SPEC.md (and EXTENSIONS.md) with an anchor and a trace per requirement."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from _docgen._common import (
    NO_REPORT,
    REPORT_PAGE,
    REQUIREMENTS_PAGE,
    SPEC_PAGE,
    TESTS_PAGE,
    IdLinker,
    md_heading,
    paragraph_id,
    plural,
    rel,
)
from _docgen.tracing import Trace
from memspec._requirements import Requirement
from memspec.report import Outcome

_FENCE = re.compile(r"\s*(```+|~~~+)")
_HEADING = re.compile(r"(#{1,6})\s+(.*?)\s*\Z")
_SECTION_NUMBER = re.compile(r"([A-Z]?\d+(?:\.\d+)*)\.?\s")
_APPENDIX = re.compile(r"Appendix\s+([A-Z])\b")
_COMMENT = re.compile(r"\s*<!--.*-->\s*\Z")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
_TAG = re.compile(r"\[([A-Z][A-Z0-9]*-\d+)\]")
_SECTION_REF = re.compile(
    r"\b(?:(SPEC\.md)\s+)?(section)\s+([A-Z]?\d+(?:\.\d+)*)(?![\d.]*\d)", re.I)
_NOT_PARAGRAPH = re.compile(r"\s*(?:[|>#<]|[-*+]\s|\d+[.)]\s)")


def section_anchor(number: str) -> str:
    """The anchor of a numbered section, e.g. ``section-8.1`` or ``section-x2``."""
    return f"section-{number.lower()}"


def _heading_section(title: str) -> tuple[str, str] | None:
    """(section number, anchor) of a numbered or appendix heading."""
    appendix = _APPENDIX.match(title)
    if appendix:
        return appendix.group(1), f"appendix-{appendix.group(1).lower()}"
    number = _SECTION_NUMBER.match(title)
    if number:
        return number.group(1), section_anchor(number.group(1))
    return None


def _headings(spec_text: str) -> list[tuple[str, str]]:
    """(level marks, title) of every heading outside code fences."""
    found: list[tuple[str, str]] = []
    fence: str | None = None
    for line in spec_text.splitlines():
        fence_match = _FENCE.match(line)
        if fence is not None:
            if fence_match and fence_match.group(1).startswith(fence):
                fence = None
            continue
        if fence_match:
            fence = fence_match.group(1)
            continue
        heading = _HEADING.fullmatch(line)
        if heading:
            found.append((heading.group(1), heading.group(2)))
    return found


def section_anchors(spec_text: str) -> dict[str, str]:
    """Section number (``"8.1"``, ``"X2"``, ``"A"``) -> heading anchor, for every heading."""
    found: dict[str, str] = {}
    for level, title in _headings(spec_text):
        section = _heading_section(title) if len(level) >= 2 else None
        if section:
            found.setdefault(*section)
    return found


@dataclass(frozen=True)
class Document:
    """One normative document and the page it is rendered to."""

    page: str
    source: str  # e.g. spec/SPEC.md
    text: str
    sections: dict[str, str]


@dataclass(frozen=True)
class _Context:
    doc: Document
    reqs: dict[str, Requirement]
    trace: Trace
    linker: IdLinker
    spec_sections: dict[str, str]  # of SPEC.md, for "SPEC.md section N" in other documents

    @property
    def page(self) -> str:
        return self.doc.page


def section_link(req: Requirement, page: str, linker: IdLinker,
                 sections: dict[str, dict[str, str]]) -> str:
    """A link from ``page`` to the section of the document that defines ``req``."""
    home = linker.pages.get(req.id, SPEC_PAGE)
    anchor = sections.get(home, {}).get(req.section.split(" ", 1)[0])
    label = req.section
    return f"[{label}]({rel(page, home + '#' + anchor)})" if anchor else label


def verdict_phrase(trace: Trace, rid: str) -> str:
    """The reference engine's outcome for ``rid`` in words."""
    if trace.report is None:
        return NO_REPORT
    return trace.verdict(rid) or "not in the report"


def trace_block(req: Requirement, ctx: _Context) -> str:
    """The collapsible trace under one requirement: profile, level, tests, vectors, verdict."""
    page, trace = ctx.page, ctx.trace
    tests = trace.tests_for(req.id)
    vectors = trace.vectors_for(req.id)
    verdict = verdict_phrase(trace, req.id)
    title = (f"{req.id} · {req.level} · {req.profile} · {plural(len(tests), 'kit test')} · "
             f"{plural(len(vectors), 'vector')} · reference engine: {verdict}")
    sections = {page: ctx.doc.sections}
    lines = [
        f"**Level** {req.level} · **Profile** "
        f"[{req.profile}]({rel(page, REQUIREMENTS_PAGE + '#profile-' + req.profile)}) · "
        f"**Section** {section_link(req, page, ctx.linker, sections)}",
    ]
    if req.untestable:
        lines.append(f"**Untestable:** {ctx.linker.text(req.untestable, page)}")
    if req.claim_conditional:
        lines.append(f"**Claim-conditional** (untestable over what an engine does not claim): "
                     f"{ctx.linker.text(req.claim_conditional, page)}")
    if tests:
        items = []
        for test in tests:
            outcome = trace.test_outcome(test.nodeid)
            suffix = f" ({outcome})" if outcome else ""
            items.append(f"[`{test.name}`]({rel(page, TESTS_PAGE + '#' + test.nodeid)})"
                         f"{suffix}")
        lines.append(f"**Kit tests ({len(tests)}):** " + ", ".join(items))
    else:
        lines.append("**Kit tests:** none")
    if vectors:
        by_file: dict[str, list[str]] = {}
        for case in vectors:
            by_file.setdefault(case.file, []).append(
                f"[{case.id.split('/', 1)[-1]}]"
                f"({rel(page, f'generated/vectors/{case.file}.md#{case.id}')})"
            )
        parts = [f"`{name}`: " + ", ".join(links) for name, links in by_file.items()]
        lines.append(f"**Vectors ({len(vectors)}):** " + "; ".join(parts))
    else:
        lines.append("**Vectors:** none")
    if trace.report is None:
        lines.append(f"**Reference engine:** {NO_REPORT} "
                     f"(see [the reference engine's report]({rel(page, REPORT_PAGE)}))")
    else:
        found = trace.outcomes.get(req.id)
        detail = ""
        if found is not None:
            passed = sum(1 for t in found.tests if t.outcome == Outcome.PASSED)
            detail = f", {passed} of {plural(len(found.tests), 'test')} passed"
            if found.note:
                detail += f"; {ctx.linker.text(found.note, page)}"
        target = REPORT_PAGE + ("#" + req.id if found is not None else "")
        lines.append(f"**Reference engine:** [{verdict}]({rel(page, target)}){detail}")
    body = "\n\n".join(lines)
    return f'??? trace "{title}"\n' + "\n".join(
        "    " + line if line else "" for line in body.splitlines()
    )


class _Protect:
    """Placeholders for Markdown produced by one pass, so later passes leave it alone."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def put(self, markdown: str) -> str:
        self.items.append(markdown)
        return f"\x00{len(self.items) - 1}\x00"

    def restore(self, value: str) -> str:
        return re.sub("\x00(\\d+)\x00", lambda m: self.items[int(m.group(1))], value)


def _outside_code(value: str, fn: Callable[[str], str]) -> str:
    parts: list[str] = []
    last = 0
    for match in _CODE_SPAN.finditer(value):
        parts.append(fn(value[last:match.start()]))
        parts.append(match.group(0))
        last = match.end()
    parts.append(fn(value[last:]))
    return "".join(parts)


def _inline(value: str, ctx: _Context, tag_html: bool) -> str:
    """Tags, bare ids and section numbers of ``value`` turned into links (outside code)."""
    protect = _Protect()

    def tags(segment: str) -> str:
        def one(match: re.Match[str]) -> str:
            rid = match.group(1)
            if rid not in ctx.reqs:
                return match.group(0)
            anchor = f' id="{rid}"' if tag_html else ""
            return protect.put(f'<a class="memspec-tag"{anchor} href="#{rid}">[{rid}]</a>')
        return _TAG.sub(one, segment)

    def sections(segment: str) -> str:
        def one(match: re.Match[str]) -> str:
            other, word, number = match.group(1), match.group(2), match.group(3)
            if other:
                anchor = ctx.spec_sections.get(number)
                target = f"{SPEC_PAGE}#{anchor}"
            else:
                anchor = ctx.doc.sections.get(number)
                target = f"{ctx.page}#{anchor}"
            if anchor is None:
                return match.group(0)
            prefix = f"{other} " if other else ""
            return protect.put(f"{prefix}[{word} {number}]({rel(ctx.page, target)})")
        return _SECTION_REF.sub(one, segment)

    def ids(segment: str) -> str:
        return ctx.linker.sub(segment, ctx.page)

    value = _outside_code(value, tags)
    value = _outside_code(value, sections)
    value = _outside_code(value, ids)
    return protect.restore(value)


def _tag_spans(block: str) -> list[re.Match[str]]:
    """Requirement tags of ``block`` that lie outside code spans."""
    code = [(m.start(), m.end()) for m in _CODE_SPAN.finditer(block)]
    return [m for m in _TAG.finditer(block)
            if not any(a <= m.start() < b for a, b in code)]


def _render_block(lines: list[str], ctx: _Context) -> list[str]:
    block = "\n".join(lines)
    tags = [m for m in _tag_spans(block) if m.group(1) in ctx.reqs]
    if not tags:
        return [_inline(block, ctx, tag_html=False), ""]
    if _NOT_PARAGRAPH.match(lines[0]):
        out = [_inline(block, ctx, tag_html=True), ""]
        for match in tags:
            out.extend([trace_block(ctx.reqs[match.group(1)], ctx), ""])
        return out
    out = []
    start = 0
    for match in tags:
        rid = match.group(1)
        chunk = block[start:match.end()].strip()
        start = match.end()
        prefix, attrs = paragraph_id(rid, ".memspec-req")
        out.extend([prefix + _inline(chunk, ctx, tag_html=False), attrs, ""])
        out.extend([trace_block(ctx.reqs[rid], ctx), ""])
    rest = block[start:].strip()
    if rest:
        out.extend([_inline(rest, ctx, tag_html=False), ""])
    return out


def render(doc: Document, reqs: list[Requirement], trace: Trace, linker: IdLinker,
           spec_sections: dict[str, str], description: str) -> str:
    """The page of one normative document."""
    ctx = _Context(doc, {r.id: r for r in reqs}, trace, linker, spec_sections)
    page = doc.page
    out: list[str] = ["---", f'description: "{description}"', "---", ""]
    block: list[str] = []
    fence: str | None = None
    title_done = False

    def flush() -> None:
        if block:
            out.extend(_render_block(block, ctx))
            block.clear()

    for line in doc.text.splitlines():
        fence_match = _FENCE.match(line)
        if fence is not None:
            out.append(line)
            if fence_match and fence_match.group(1).startswith(fence):
                fence = None
            continue
        if fence_match:
            flush()
            fence = fence_match.group(1)
            out.append(line)
            continue
        heading = _HEADING.fullmatch(line)
        if heading:
            flush()
            level, title = heading.group(1), heading.group(2)
            section = _heading_section(title) if len(level) >= 2 else None
            out.extend([md_heading(len(level), title, section[1]) if section
                        else f"{level} {title}", ""])
            if len(level) == 1 and not title_done:
                title_done = True
                out.extend([
                    "!!! note \"Generated page\"",
                    f"    Rendered by `tools/gen_docs.py` from `{doc.source}`. Every "
                    "requirement is an anchor (such as "
                    f"`#{reqs[0].id if reqs else 'REC-5'}`); the box under it lists its kit "
                    "tests, its vectors and the reference engine's verdict. "
                    f"[All requirements]({rel(page, REQUIREMENTS_PAGE)}) · "
                    f"[kit tests]({rel(page, TESTS_PAGE)}) · "
                    f"[reference report]({rel(page, REPORT_PAGE)})",
                    "",
                ])
            continue
        if _COMMENT.match(line):
            flush()
            continue
        if not line.strip():
            flush()
            continue
        block.append(line)
    flush()
    text = "\n".join(out)
    return re.sub(r"\n{3,}", "\n\n", text).rstrip("\n") + "\n"
