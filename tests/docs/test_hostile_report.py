"""A report whose engine-controlled text is hostile renders as data everywhere it is shown:
the website's report page, report.md and ``memspec report`` (Markdown and HTML)."""

from __future__ import annotations

import copy
import importlib
import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests.docs import REPO, load_yaml

sys.path.insert(0, str(REPO / "tools"))

from _docgen import report as report_page
from _docgen import tracing
from _docgen._common import IdLinker

from memspec.cli._render import report_html, report_markdown
from memspec.report import MalformedReport, Report

SCRIPT = "<script>alert(document.cookie)</script>"
IMG = '<img src=x onerror="alert(1)">'
FAKE = '!!! success "Verdict: certified"\n    every profile passed'
FENCE_BREAK = f"expected 1\n```\n{SCRIPT}\n{IMG}\n\n{FAKE}\n~~~\n````"
NAME = f"evil\n\n# Verdict: certified\n{SCRIPT}{IMG}\x1b]0;pwned\x07\x1b[2J|x|"


def hostile_report() -> dict[str, Any]:
    """A schema-shaped failing report; every string an engine can choose is an attack."""
    test = {"nodeid": "suites/test_records.py::test_rec5", "outcome": "failed",
            "message": FENCE_BREAK}
    return {
        "report_version": 1, "spec_version": "fg-agent-memory/0.1",
        "kit": {"name": "memspec", "version": "0.1.0"},
        "engine": {"name": NAME, "version": f"1.0{SCRIPT}", "protocol": "memspec-engine/1",
                   "spec_version": "fg-agent-memory/0.1", "loaded_as": f"cmd {IMG}",
                   "profiles": ["format"]},
        "mode": "process", "started_at": "2026-01-01T00:00:00.000Z",
        "finished_at": "2026-01-01T00:01:00.000Z", "suite_digest": "0" * 64,
        "verdict": "failed",
        "profiles": {"format": {"claimed": True, "verdict": "failed",
                                "notes": [f"REC-5 {SCRIPT}", FAKE]}},
        "requirements": [{"id": "REC-5", "level": "MUST", "profile": "format",
                          "binding": True, "outcome": "failed", "note": IMG, "tests": [test]}],
        "kit_checks": [],
        "summary": {"tests": {"failed": 1}, "requirements": {"failed": 1}, "warnings": 0},
    }


class Elements(HTMLParser):
    """Every element and attribute of an HTML document, and its admonition titles."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.handlers: list[str] = []
        self.titles: list[str] = []
        self._title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.handlers += [name for name, _ in attrs if name.startswith("on")]
        self._title = ("class", "admonition-title") in attrs

    def handle_data(self, data: str) -> None:
        if self._title:
            self.titles.append(data)
            self._title = False


def _scan(html: str) -> Elements:
    parser = Elements()
    parser.feed(html)
    return parser


def _site_markdown(text: str) -> str:
    """``text`` through the site's own Markdown extensions, as mkdocs.yml configures them."""
    markdown = pytest.importorskip("markdown")
    config = load_yaml(REPO / "mkdocs.yml")
    names: list[str] = []
    configs: dict[str, Any] = {}
    for entry in config["markdown_extensions"]:
        name, options = (entry, {}) if isinstance(entry, str) else next(iter(entry.items()))
        if name == "pymdownx.snippets":
            continue  # includes files; the report page never uses it
        names.append(name)
        configs[name] = _resolve(copy.deepcopy(options))
    return str(markdown.markdown(text, extensions=names, extension_configs=configs))


def _resolve(value: Any) -> Any:
    if isinstance(value, str) and value.startswith("python/name:"):
        module, _, attr = value.removeprefix("python/name:").rpartition(".")
        return getattr(importlib.import_module(module), attr)
    if isinstance(value, dict):
        return {k: _resolve(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v) for v in value]
    return value


def _assert_inert(html: str) -> None:
    found = _scan(html)
    assert "script" not in found.tags and "img" not in found.tags, found.tags
    assert not found.handlers
    assert not [t for t in found.titles if "certified" in t], found.titles
    assert "\x1b" not in html and "\x07" not in html


def test_website_report_page_shows_hostile_text_as_data() -> None:
    linker = IdLinker(["REC-5"])
    report = Report.from_wire(hostile_report())
    text = report_page.render_report(report, linker, tracing.Trace((), (), None))
    html = _site_markdown(text)
    _assert_inert(html)
    found = _scan(html)
    assert found.titles == ["Generated page", "Verdict: failed"]
    assert found.tags.count("h1") == 1  # the page title; the engine's "# Verdict" is none
    assert "&lt;script&gt;" in html  # the message is there, as text
    assert 'href="spec.md#REC-5"' in html  # requirement ids in notes are still links


def test_an_unknown_verdict_never_reaches_the_page(tmp_path: Path) -> None:
    # The page takes the typed report: a verdict outside the schema's words is refused when
    # the report is read, naming where, and never rendered.
    path = tmp_path / "report.json"
    path.write_text(json.dumps(dict(hostile_report(), verdict=FAKE)), encoding="utf-8")
    with pytest.raises(MalformedReport) as caught:
        tracing.load_report(path)
    assert caught.value.pointer == "/verdict"
    assert str(path) in str(caught.value)


def test_report_markdown_shows_hostile_text_as_data() -> None:
    text = report_markdown(hostile_report())
    title = text.splitlines()[0]
    assert title.startswith("# Conformance report: evil") and "\n" not in title
    _assert_inert(_site_markdown(text))
    # in any Markdown dialect (GitHub's too): no raw tag, no line that starts a block
    assert "<" not in text.replace("<br>", "")
    assert not [line for line in text.splitlines() if line.startswith(("!!!", "```", "~~~"))]


def test_report_html_shows_hostile_text_as_data() -> None:
    _assert_inert(report_html(hostile_report()).replace("<style>", "").replace("</style>", ""))


def _memspec(*args: str | Path) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("memspec")
    return subprocess.run([str(script), *map(str, args)], capture_output=True, text=True,
                          timeout=120, check=False)


def test_memspec_report_command_renders_a_hostile_report(tmp_path: Path) -> None:
    from memspec.conformance import check_report

    report = hostile_report()
    check_report(report)  # the command accepts it: it is schema-valid
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    run = _memspec("report", path)
    assert run.returncode == 0, run.stderr
    assert "\x1b" not in run.stdout and "<" not in run.stdout
    run = _memspec("report", path, "--format", "html")
    assert run.returncode == 0, run.stderr
    _assert_inert(run.stdout.replace("<style>", "").replace("</style>", ""))
