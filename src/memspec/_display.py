"""Showing text that someone else controls: an engine's name, its error messages, a file's paths.

Everything an engine or a file says is data. Before it reaches a terminal, a
Markdown page or an HTML page it goes through one of these, so that it can
neither draw on the screen (ANSI / OSC escapes), nor close a code fence, nor
open a tag, nor fake an admonition.
"""

from __future__ import annotations

import html
import re

__all__ = ["code_fence", "html_text", "markdown_inline", "terminal"]

# C0 controls but tab and newline, DEL, the C1 controls, and the bidirectional
# overrides and isolates (which reorder what a reader sees).
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~>])")


def _escape_control(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}" if ord(match.group()) < 0x100 else (
        f"\\u{ord(match.group()):04x}")


def terminal(text: str, *, one_line: bool = False) -> str:
    """``text`` with every control character shown as an escape (``\\x1b``), never acted on.

    With ``one_line`` newlines and tabs are shown as escapes too, for a value that
    must stay on its own line (an engine's name in a summary line).
    """
    shown = _CONTROLS.sub(_escape_control, str(text))
    if one_line:
        shown = shown.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return shown


def markdown_inline(text: str) -> str:
    """``text`` as literal inline Markdown: one line, every Markdown and HTML character escaped."""
    one = terminal(str(text), one_line=True)
    # "<" as an entity: CommonMark takes "\\<" as an escape, Python-Markdown (the website)
    # does not and would show the backslash.
    return _MD_SPECIAL.sub(r"\\\1", one).replace("&", "&amp;").replace("\\<", "&lt;")


def code_fence(text: str, info: str = "text") -> str:
    """``text`` in a fenced code block that nothing inside it can close."""
    body = terminal(str(text))
    longest = max((len(run) for run in re.findall(r"`+|~+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body}\n{fence}"


def html_text(text: str) -> str:
    """``text`` escaped for an HTML element's content or a quoted attribute."""
    return html.escape(terminal(str(text)), quote=True)
