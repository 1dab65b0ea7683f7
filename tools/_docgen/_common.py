"""Shared pieces of the docs generator: paths, the error type, Markdown helpers."""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from memspec._errors import MemspecError

ROOT = Path(__file__).resolve().parent.parent.parent

#: Folder of the generated pages, relative to the docs folder.
GEN = "generated"
SPEC_PAGE = f"{GEN}/spec.md"
EXTENSIONS_PAGE = f"{GEN}/extensions.md"
REQUIREMENTS_PAGE = f"{GEN}/requirements.md"
TESTS_PAGE = f"{GEN}/kit-tests.md"
LIFECYCLE_PAGE = f"{GEN}/lifecycle.md"
OPERATIONS_PAGE = f"{GEN}/operations.md"
SCHEMAS_INDEX = f"{GEN}/schemas/index.md"
VECTORS_INDEX = f"{GEN}/vectors/index.md"
KIT_POWER_PAGE = f"{GEN}/kit-power.md"
REPORT_PAGE = f"{GEN}/reference-report.md"
CLI_PAGE = f"{GEN}/cli.md"
API_PAGE = f"{GEN}/api.md"
MERMAID_ASSET = f"{GEN}/assets/mermaid.min.js"

#: Folders of raw downloads, relative to the docs folder (URL path = $id path).
RAW_SCHEMAS = "schemas"
RAW_VECTORS = "vectors"
RAW_SPEC = "spec"

SCHEMA_BASE = "https://memspec.dev/schemas/"
#: The selftest result the site is built with unless --selftest names another, relative to
#: the repository root, and the command that records it.
SELFTEST_RESULT = "docs/assets/selftest-result.json"
SELFTEST_COMMAND = "python tools/gen_docs.py --record-selftest"
NO_REPORT = "no report given"


class DocgenError(MemspecError):
    """The docs cannot be generated from these inputs (missing or malformed data)."""

    code = "docs"


def read_json(path: Path) -> Any:
    """A JSON file of the repository, with a DocgenError naming it when unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DocgenError(f"cannot read {path}: {exc}") from exc


def rel(page: str, target: str) -> str:
    """The relative link from docs page ``page`` to docs path ``target`` (``path#anchor``)."""
    path, _, anchor = target.partition("#")
    if path == page:
        link = ""
    else:
        link = posixpath.relpath(path, posixpath.dirname(page) or ".")
    return f"{link}#{anchor}" if anchor else link


_ESCAPE = {c: "\\" + c for c in "\\`*_{}[]()#+!|"}
_ESCAPE.update({"<": "&lt;", ">": "&gt;", "&": "&amp;"})


def text(value: str) -> str:
    """Plain text made safe for Markdown (and table cells): no markup, one line."""
    return "".join(_ESCAPE.get(c, c) for c in " ".join(str(value).split()))


def code(value: str) -> str:
    """An inline code span holding ``value`` exactly (one line)."""
    value = " ".join(str(value).split()) if "\n" in str(value) else str(value)
    fence = "`"
    while fence in value:
        fence += "`"
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def cell(value: str) -> str:
    """A table cell: one line (``text`` escapes pipes, and code spans may hold them)."""
    return " ".join(value.split("\n"))


_UNSAFE_ID = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|[*\\`{}\s]")


def md_heading(level: int, title: str, anchor: str) -> str:
    """A heading with the id ``anchor``.

    An attr_list id is used when emphasis cannot touch it (MkDocs checks anchors before
    backslash escapes are restored, so escaping is no way out); otherwise the id goes on
    an empty span inside the heading.
    """
    if _UNSAFE_ID.search(anchor):
        return f'{"#" * level} <span id="{anchor}"></span>{title}'
    return f"{'#' * level} {title} {{#{anchor}}}"


def paragraph_id(anchor: str, classes: str = "") -> tuple[str, str]:
    """(prefix for the paragraph's text, attr_list line) giving a paragraph an id."""
    if _UNSAFE_ID.search(anchor):
        return f'<span id="{anchor}"></span>', f"{{: {classes} }}" if classes else ""
    return "", f"{{: #{anchor} {classes} }}".replace("  ", " ")


def json_block(value: Any, indent: str = "", lang: str = "json") -> str:
    """A fenced JSON code block (indented for nesting in admonitions).

    ``lang="text"`` skips syntax highlighting: hundreds of highlighted vectors make pages
    (and the search indexer) several times heavier for little gain.
    """
    body = json.dumps(value, indent=2, ensure_ascii=False)
    fence = "```"
    while fence in body:
        fence += "`"
    lines = [f"{fence}{lang}", *body.splitlines(), fence]
    return "\n".join(indent + line if line else line for line in lines)


def indent(block: str, prefix: str = "    ") -> str:
    """Every non-empty line of ``block`` prefixed (for admonition bodies)."""
    return "\n".join(prefix + line if line.strip() else "" for line in block.splitlines())


def first_paragraph(doc: str | None) -> str:
    """The first paragraph of a docstring, on one line."""
    if not doc:
        return ""
    para = doc.strip().split("\n\n", 1)[0]
    return " ".join(para.split())


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 test`` / ``2 tests``."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


class IdLinker:
    """Turns requirement ids in text into links to their anchors in the specification.

    ``ids`` maps each id to the docs page that defines it (``generated/spec.md`` or
    ``generated/extensions.md``); a plain iterable of ids puts them all on the spec page.
    """

    def __init__(self, ids: Iterable[str] | Mapping[str, str]) -> None:
        self.pages: dict[str, str] = (dict(ids) if isinstance(ids, Mapping)
                                      else dict.fromkeys(ids, SPEC_PAGE))
        known = sorted(self.pages, key=lambda i: (-len(i), i))
        self.ids = frozenset(known)
        self._pattern = (
            re.compile(r"(?<![\w#/-])(" + "|".join(map(re.escape, known)) + r")(?![\w-])")
            if known else None
        )

    def target(self, rid: str) -> str:
        """``page#id`` of a requirement."""
        return f"{self.pages.get(rid, SPEC_PAGE)}#{rid}"

    def link(self, rid: str, page: str, label: str | None = None) -> str:
        """A Markdown link from ``page`` to requirement ``rid``."""
        return f"[{label or rid}]({rel(page, self.target(rid))})"

    def sub(self, markdown: str, page: str) -> str:
        """Every known id in ``markdown`` (outside code spans) linked to its text."""
        if self._pattern is None:
            return markdown
        pattern = self._pattern
        parts = re.split(r"(`+[^`]*?`+)", markdown)
        for index in range(0, len(parts), 2):
            parts[index] = pattern.sub(lambda m: self.link(m.group(1), page), parts[index])
        return "".join(parts)

    def text(self, value: str, page: str) -> str:
        """Plain ``value`` escaped for Markdown, with requirement ids linked."""
        return self.sub(text(value), page)

    def literal(self, value: str, page: str, escape: Callable[[str], str]) -> str:
        """``value`` as text someone else controls: every piece but the known requirement
        ids goes through ``escape`` (memspec._display), the ids become links."""
        if self._pattern is None:
            return escape(value)
        parts = self._pattern.split(value)
        return "".join(self.link(part, page) if index % 2 else escape(part) if part else ""
                       for index, part in enumerate(parts))


def front(title: str, description: str | None = None) -> str:
    """The page's front matter and title heading."""
    lines = ["---"]
    if description:
        lines.append("description: " + json.dumps(" ".join(description.split())))
    lines.extend(["---", "", f"# {title}", ""])
    return "\n".join(lines)


GENERATED_NOTE = (
    "!!! note \"Generated page\"\n"
    "    This page is generated by `tools/gen_docs.py` from {source}; edit the source, "
    "not the page.\n"
)


def generated_note(source: str) -> str:
    """The admonition saying where a generated page comes from."""
    return GENERATED_NOTE.format(source=source)
