"""The requirement index: parsing SPEC.md's requirement sentences into data.

SPEC.md is the source of truth for requirement ids. A requirement is a
sentence that uses an RFC 2119 keyword (``MUST``, ``MUST NOT``, ``SHOULD``,
``SHOULD NOT``, ``MAY``) outside code and ends with one bracketed id such as
``[REC-5]``. Its profile comes from the nearest preceding
``<!-- profile: NAME -->`` comment in the same section (headings reset it).
Requirements listed in the "Untestable requirements" appendix as
``- **ID**: reason`` carry that reason; those listed the same way in the
"Claim-conditional requirements" appendix reach only what an engine claims and
carry why (SPEC 19.2). The optional extension profiles are
specified the same way in ``spec/EXTENSIONS.md`` (families ``X...``).
``spec/requirements.json`` is generated from both documents by
``tools/gen_requirements.py`` and loaded here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from memspec._errors import MemspecError
from memspec.data import Requirement as CatalogueEntry
from memspec.data import json_resource, resource_text
from memspec.data import profiles as profile_table

__all__ = [
    "EXTENSIONS_SOURCE",
    "EXTENSION_FAMILIES",
    "FAMILIES",
    "LEVELS",
    "SPEC_SOURCE",
    "Requirement",
    "SpecFormatError",
    "load_extensions_text",
    "load_requirements",
    "parse_requirements",
    "render_requirements_json",
    "requirement_index",
    "requirements_document",
    "requirements_from_document",
]

#: Requirement levels, as spelled in SPEC.md.
LEVELS = ("MUST", "MUST NOT", "SHOULD", "SHOULD NOT", "MAY")
#: Requirement id families in document order; the index is sorted by it.
FAMILIES = (
    "CJ", "ENC", "SIG", "REC", "ID", "CONF", "LC", "SUP", "TRN", "RES", "RULE", "OP", "FILE",
    "ROLL", "STORE", "SRCH", "RCL", "WR", "CONS", "DEC", "RED", "PROTO",
    "XEXT", "XEXP", "XTT", "XPROV", "XHYP", "XFALS", "XAUD",
)
#: The families of the extension profiles (spec/EXTENSIONS.md), a tail of FAMILIES.
EXTENSION_FAMILIES = ("XEXT", "XEXP", "XTT", "XPROV", "XHYP", "XFALS", "XAUD")
SPEC_SOURCE = "spec/SPEC.md"
EXTENSIONS_SOURCE = "spec/EXTENSIONS.md"
_SPEC_VERSION = "fg-agent-memory/0.1"
_FAMILY_RANK = {name: rank for rank, name in enumerate(FAMILIES)}

# Longer alternatives first, so "MUST NOT" is never read as "MUST". The
# other BCP 14 words are recognised only to be refused: SPEC.md uses five levels.
_KEYWORD = re.compile(
    r"\b(MUST NOT|MUST|SHOULD NOT|SHOULD|MAY|SHALL NOT|SHALL|NOT RECOMMENDED|RECOMMENDED|"
    r"REQUIRED|OPTIONAL)\b"
)
_TAG = re.compile(r"\[([A-Z][A-Z0-9]*)-(\d+)\]")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_HEADING = re.compile(r"(#{1,6})\s+(.*?)\s*#*\s*\Z")
_PROFILE_MARKER = re.compile(r"<!--\s*profile:\s*([A-Za-z0-9_-]+)\s*-->\Z")
_COMMENT = re.compile(r"<!--.*-->\Z")
_FENCE = re.compile(r"(```|~~~)")
_LIST_ITEM = re.compile(r"(?:[-*+]|\d+[.)])\s+")
_SENTENCE_END = re.compile(r"[.!?]\s+(?=[A-Z`\"*(])")
_ABBREVIATIONS = ("e.g.", "i.e.", "cf.", "vs.")
_SECTION_LABEL = re.compile(r"((?:Appendix\s+)?[A-Z0-9]+(?:\.\d+)*)\.\s+")
_UNTESTABLE_ITEM = re.compile(r"\*\*([A-Z][A-Z0-9]*-\d+)\*\*\s*[:\u2014\u2013-]\s*(.+)\Z", re.S)
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")


class SpecFormatError(MemspecError):
    """SPEC.md (or a requirements document) breaks the requirement-markup rules."""

    code = "spec"


@dataclass(frozen=True)
class Requirement(CatalogueEntry):
    """One normative statement of the specification: the fields of
    :class:`memspec.data.Requirement`, with what the parser and the index order need."""

    @property
    def family(self) -> str:
        """The id's family, e.g. ``REC`` for ``REC-5``."""
        return self.id.rsplit("-", 1)[0]

    @property
    def number(self) -> int:
        """The id's number, e.g. 5 for ``REC-5``."""
        return int(self.id.rsplit("-", 1)[1])

    def sort_key(self) -> tuple[int, int]:
        """Family order first, then number."""
        return (_FAMILY_RANK.get(self.family, len(FAMILIES)), self.number)


@dataclass(frozen=True)
class _Block:
    text: str
    line: int
    section: str
    profile: str | None


def _mask_code(text: str) -> str:
    """``text`` with the inside of every code span blanked, positions preserved."""
    return _CODE_SPAN.sub(lambda m: m.group(1) + "\0" * len(m.group(2)) + m.group(1), text)


def _plain_code(match: re.Match[str]) -> str:
    content = match.group(2)
    # A lone punctuation mark reads as noise once its backticks are gone.
    if len(content) == 1 and not content.isalnum():
        return f'"{content}"'
    return content


def _strip_markdown(text: str) -> str:
    text = _LINK.sub(r"\1", text)
    text = _CODE_SPAN.sub(_plain_code, text)
    text = text.replace("**", "")
    return " ".join(text.split())


def _section_name(heading: str) -> str:
    heading = _strip_markdown(heading)
    return _SECTION_LABEL.sub(lambda m: m.group(1) + " ", heading, count=1)


def _blocks(spec_text: str, profiles: frozenset[str]) -> Iterator[_Block]:
    """Paragraphs, list items and table rows, with their section and profile."""
    section = ""
    profile: str | None = None
    lines: list[str] = []
    start = 0
    fence: str | None = None
    in_table = False

    def flush() -> Iterator[_Block]:
        if lines:
            yield _Block(" ".join(" ".join(lines).split()), start, section, profile)
            lines.clear()

    for number, raw in enumerate(spec_text.splitlines(), start=1):
        stripped = raw.strip()
        fence_match = _FENCE.match(stripped)
        if fence is not None:
            if fence_match and fence_match.group(1) == fence:
                fence = None
            continue
        if fence_match:
            yield from flush()
            fence = fence_match.group(1)
            continue
        heading = _HEADING.fullmatch(raw)
        if heading:
            yield from flush()
            if len(heading.group(1)) >= 2:
                section = _section_name(heading.group(2))
            profile = None
            continue
        marker = _PROFILE_MARKER.match(stripped)
        if marker:
            yield from flush()
            name = marker.group(1)
            if name not in profiles:
                raise SpecFormatError(
                    f"line {number}: unknown profile {name!r} (known: {sorted(profiles)})"
                )
            profile = name
            continue
        if _COMMENT.match(stripped):
            continue
        if stripped.startswith(">"):
            stripped = stripped[1:].strip()
        if not stripped:
            yield from flush()
            in_table = False
            continue
        # A line opening with "|" starts a table row unless it continues a paragraph.
        if stripped.startswith("|") and (in_table or not lines):
            yield from flush()
            in_table = True
            start = number
            lines.append(stripped.strip("|"))
            yield from flush()
            continue
        in_table = False
        item = _LIST_ITEM.match(stripped)
        if item:
            yield from flush()
            stripped = stripped[item.end():]
        if not lines:
            start = number
        lines.append(stripped)
    if fence is not None:
        raise SpecFormatError(f"unterminated code fence ({fence}) at end of text")
    yield from flush()


def _sentence_starts(masked: str) -> list[int]:
    starts = [0]
    for match in _SENTENCE_END.finditer(masked):
        before = masked[: match.start() + 1]
        if before.endswith(_ABBREVIATIONS):
            continue
        starts.append(match.end())
    return starts


def _keywords(masked: str) -> list[str]:
    return [m.group(1) for m in _KEYWORD.finditer(masked)]


def _check_level_words(found: list[str], line: int) -> None:
    for word in found:
        if word not in LEVELS:
            raise SpecFormatError(
                f"line {line}: keyword {word!r} is not one of the levels {list(LEVELS)}"
            )


def _requirements_in(block: _Block) -> Iterator[tuple[str, str, str]]:
    """(id, level, summary) for each tagged sentence of a block; raise on stray keywords."""
    masked = _mask_code(block.text)
    position = 0
    for tag in _TAG.finditer(masked):
        segment = masked[position: tag.start()]
        starts = _sentence_starts(segment)
        last = starts[-1]
        for begin, end in zip(starts, [*starts[1:], len(segment)], strict=True):
            stray = _keywords(segment[begin:end])
            if end <= last and stray:
                sentence = _strip_markdown(block.text[position + begin: position + end])
                raise SpecFormatError(
                    f"line {block.line}: a sentence uses {stray[0]} but carries no "
                    f"requirement id: {sentence!r}"
                )
        sentence_masked = segment[last:]
        found = _keywords(sentence_masked)
        rid = f"{tag.group(1)}-{int(tag.group(2))}"
        if tag.group(0) != f"[{rid}]":
            raise SpecFormatError(f"line {block.line}: malformed requirement id {tag.group(0)}")
        if not found:
            raise SpecFormatError(
                f"line {block.line}: requirement {rid} has no MUST/SHOULD/MAY keyword "
                "in its sentence"
            )
        _check_level_words(found, block.line)
        summary = _strip_markdown(block.text[position + last: tag.start()])
        yield rid, found[0], summary
        position = tag.end()
    rest = _keywords(masked[position:])
    if rest:
        raise SpecFormatError(
            f"line {block.line}: a sentence uses {rest[0]} but carries no requirement id: "
            f"{_strip_markdown(block.text[position:])[:160]!r}"
        )


def _known_profiles() -> frozenset[str]:
    return frozenset(profile_table())


def load_extensions_text() -> str:
    """The normative text of the extension profiles (EXTENSIONS.md)."""
    return resource_text("spec", "EXTENSIONS.md")


def parse_requirements(
    spec_text: str, profiles: Iterable[str] | None = None
) -> list[Requirement]:
    """Every requirement of ``spec_text``, in document order.

    ``profiles`` is the set of known profile names (default: those of
    ``spec/operations.json``). Raises :class:`SpecFormatError` on a duplicate
    id, an id whose sentence has no level keyword, a keyword sentence without
    an id, an unknown profile or family, or an id outside any profile marker.
    """
    if not isinstance(spec_text, str):
        raise SpecFormatError(f"spec text must be a string, not {type(spec_text).__name__}")
    known = frozenset(profiles) if profiles is not None else _known_profiles()
    found: dict[str, Requirement] = {}
    untestable: dict[str, str] = {}
    conditional: dict[str, str] = {}
    for block in _blocks(spec_text, known):
        for heading, listed, word in (("untestable requirements", untestable, "untestable"),
                                      ("claim-conditional requirements", conditional,
                                       "claim-conditional")):
            item = _UNTESTABLE_ITEM.match(block.text)
            if heading in block.section.lower() and item:
                rid, reason = item.group(1), _strip_markdown(item.group(2))
                if rid in listed:
                    raise SpecFormatError(f"line {block.line}: {rid} is listed as {word} twice")
                listed[rid] = reason
        for rid, level, summary in _requirements_in(block):
            family = rid.rsplit("-", 1)[0]
            if family not in _FAMILY_RANK:
                raise SpecFormatError(
                    f"line {block.line}: {rid} has unknown family {family!r} "
                    f"(known: {list(FAMILIES)})"
                )
            if rid in found:
                raise SpecFormatError(
                    f"line {block.line}: requirement {rid} is defined twice "
                    f"(first in section {found[rid].section!r})"
                )
            if block.profile is None:
                raise SpecFormatError(
                    f"line {block.line}: requirement {rid} has no profile: put a "
                    "<!-- profile: NAME --> line before it in its section"
                )
            found[rid] = Requirement(rid, block.section, level, block.profile, summary)
    for rid, reason in untestable.items():
        if rid not in found:
            raise SpecFormatError(f"untestable list names {rid}, which the text does not define")
        found[rid] = replace(found[rid], untestable=reason)
    for rid, reason in conditional.items():
        if rid not in found:
            raise SpecFormatError(
                f"claim-conditional list names {rid}, which the text does not define")
        if rid in untestable:
            raise SpecFormatError(f"{rid} is listed both as untestable and as claim-conditional")
        found[rid] = replace(found[rid], claim_conditional=reason)
    return list(found.values())


def requirements_document(reqs: Iterable[Requirement],
                          source: str = SPEC_SOURCE) -> dict[str, Any]:
    """The JSON shape of ``spec/requirements.json``, sorted by family order then number."""
    ordered = sorted(reqs, key=Requirement.sort_key)
    items: list[dict[str, Any]] = []
    for req in ordered:
        item: dict[str, Any] = {
            "id": req.id,
            "section": req.section,
            "level": req.level,
            "profile": req.profile,
            "summary": req.summary,
        }
        if req.untestable is not None:
            item["untestable"] = req.untestable
        if req.claim_conditional is not None:
            item["claim_conditional"] = req.claim_conditional
        items.append(item)
    return {
        "spec_version": _SPEC_VERSION,
        "source": source,
        "count": len(items),
        "requirements": items,
    }


def render_requirements_json(spec_text: str, profiles: Iterable[str] | None = None,
                             extensions_text: str | None = None) -> str:
    """The exact text of ``spec/requirements.json`` for ``spec_text`` (and, when given, the
    extension profiles' ``extensions_text``; an id defined in both is a SpecFormatError)."""
    known = None if profiles is None else list(profiles)
    reqs = parse_requirements(spec_text, known)
    source = SPEC_SOURCE
    if extensions_text is not None:
        extra = parse_requirements(extensions_text, known)
        twice = sorted({r.id for r in reqs} & {r.id for r in extra})
        if twice:
            raise SpecFormatError(f"requirements defined in both documents: {twice}")
        core_families = set(FAMILIES) - set(EXTENSION_FAMILIES)
        stray = sorted(r.id for r in extra if r.family in core_families)
        stray += sorted(r.id for r in reqs if r.family in EXTENSION_FAMILIES)
        if stray:
            raise SpecFormatError(f"requirements in the wrong document for their family: {stray}")
        reqs = [*reqs, *extra]
        source = f"{SPEC_SOURCE} + {EXTENSIONS_SOURCE}"
    document = requirements_document(reqs, source)
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def requirements_from_document(document: object) -> list[Requirement]:
    """Rebuild requirements from the JSON shape of :func:`requirements_document`."""
    if not isinstance(document, dict) or not isinstance(document.get("requirements"), list):
        raise SpecFormatError("a requirements document is an object with a requirements array")
    out: list[Requirement] = []
    for index, item in enumerate(document["requirements"]):
        if not isinstance(item, dict):
            raise SpecFormatError(f"requirements[{index}] is not an object")
        try:
            fields = {name: item[name] for name in ("id", "section", "level", "summary", "profile")}
        except KeyError as exc:
            raise SpecFormatError(f"requirements[{index}] lacks {exc.args[0]!r}") from exc
        untestable = item.get("untestable")
        conditional = item.get("claim_conditional")
        if not all(isinstance(v, str) for v in fields.values()) or not all(
            v is None or isinstance(v, str) for v in (untestable, conditional)
        ):
            raise SpecFormatError(f"requirements[{index}] has a member of the wrong type")
        if fields["level"] not in LEVELS:
            raise SpecFormatError(f"requirements[{index}] has unknown level {fields['level']!r}")
        out.append(Requirement(untestable=untestable, claim_conditional=conditional, **fields))
    return out


def load_requirements() -> list[Requirement]:
    """Every requirement, from the packaged ``spec/requirements.json``."""
    return requirements_from_document(json_resource("spec", "requirements.json"))


def requirement_index() -> dict[str, Requirement]:
    """The packaged requirements keyed by id."""
    return {req.id: req for req in load_requirements()}
