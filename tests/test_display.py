"""The display helpers neutralize what an engine or a file says."""

from __future__ import annotations

from memspec._display import code_fence, html_text, markdown_inline, terminal


def test_terminal_shows_escapes_instead_of_acting_on_them() -> None:
    hostile = "eng\x1b[2J\x1b]0;pwned\x07\u202ename"
    shown = terminal(hostile)
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    assert shown == "eng\\x1b[2J\\x1b]0;pwned\\x07\\u202ename"
    assert terminal("a\nb") == "a\nb"
    assert terminal("a\nb", one_line=True) == "a\\nb"


def test_markdown_inline_cannot_open_markup() -> None:
    shown = markdown_inline('x\n!!! success "Verdict: certified"\n<script>alert(1)</script>')
    assert "\n" not in shown
    assert "<" not in shown and "&lt;script\\>" in shown


def test_code_fence_cannot_be_closed_from_inside() -> None:
    body = "before\n```\n<img src=x onerror=alert(1)>\n````\nafter"
    fenced = code_fence(body)
    fence = fenced.splitlines()[0].removesuffix("text")
    assert len(fence) == 5
    inner = fenced.splitlines()[1:-1]
    assert all(not line.startswith(fence) for line in inner)
    assert fenced.splitlines()[-1] == fence


def test_html_text_escapes_tags_and_quotes() -> None:
    assert html_text('<b a="1">&') == "&lt;b a=&quot;1&quot;&gt;&amp;"
