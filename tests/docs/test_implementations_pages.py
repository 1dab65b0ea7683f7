"""The Implementations and Compatibility pages and the reports they are generated from.

No certification runs here: the kept reports (docs/data/implementations/, written by
tools/gen_implementations.py) are checked against the report schema and the engine list, and the
fg-agent-memory ones against the committed classification. The strict site build of
test_docs_build.py checks every link and anchor of both pages.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.docs import REPO, load_yaml

sys.path.insert(0, str(REPO / "tools"))

import gen_implementations
from _docgen import implementations
from _docgen._common import IdLinker
from gen_docs import generate

from memspec._requirements import load_requirements
from memspec.conformance import check_report
from memspec.peers import classification, expected_outcome
from memspec.report import MalformedReport, Report

KEPT = REPO / "docs" / "data" / "implementations"
PASSING = ("passed", "not-claimed", "untestable")


def _linker() -> IdLinker:
    return IdLinker([r.id for r in load_requirements()])


def _kept() -> list[tuple[dict[str, Any], Report]]:
    return implementations.load_implementations(REPO)


def test_both_pages_are_generated_and_in_the_nav() -> None:
    out = generate(REPO, None, None, None)
    assert implementations.IMPLEMENTATIONS_PAGE in out
    assert implementations.COMPATIBILITY_PAGE in out
    nav = json.dumps(load_yaml(REPO / "mkdocs.yml")["nav"])
    assert implementations.IMPLEMENTATIONS_PAGE in nav
    assert implementations.COMPATIBILITY_PAGE in nav


def test_every_engine_the_project_runs_has_a_kept_report() -> None:
    ids = [entry["id"] for entry, _ in _kept()]
    assert ids == [engine.id for engine in gen_implementations.ENGINES]
    index = json.loads((KEPT / "index.json").read_text(encoding="utf-8"))
    assert {p.name for p in KEPT.iterdir()} == {"index.json",
                                                 *(e["report"] for e in index["engines"])}


@pytest.mark.parametrize("engine", gen_implementations.ENGINES, ids=lambda e: e.id)
def test_every_kept_report_matches_the_report_schema(engine: Any) -> None:
    report = json.loads((KEPT / f"{engine.id}.json").read_text(encoding="utf-8"))
    check_report(report)
    assert report["mode"] == engine.mode
    assert not report["engine"].get("fault"), report["engine"]["fault"]
    assert "passed" not in {t["outcome"] for r in report["requirements"] for t in r["tests"]}


def test_the_reference_engine_is_certified_everywhere() -> None:
    for entry, report in _kept():
        if entry["id"].startswith("reference-"):
            assert report.verdict == "certified", entry["id"]


def test_the_kept_fg_reports_agree_with_the_classification() -> None:
    data = classification()
    fg = [(entry, report) for entry, report in _kept()
          if report.engine.name == data["engine"]["name"]]
    assert {report.mode for _, report in fg} == {"in-process", "process"}
    for _, report in fg:
        assert report.engine.version == data["engine"]["version"]
        mode = report.mode
        expected = {rid: outcome for rid, e in data["requirements"].items()
                    if (outcome := expected_outcome(e, mode)) is not None}
        actual = {r.id: r.outcome for r in report.requirements if r.outcome not in PASSING}
        assert actual == expected, mode


def test_every_classified_failure_links_to_its_explanation_and_requirement() -> None:
    page = implementations.render_implementations(_kept(), classification(), _linker())
    compat = implementations.render_compatibility(
        classification(), (REPO / "spec" / "SPEC.md").read_text(encoding="utf-8"), _linker())
    for rid, entry in classification()["requirements"].items():
        anchor = f"fg-{rid.lower()}"
        assert f"{{#{anchor}}}" in compat, rid
        assert f"compatibility.md#{anchor}" in page, rid
        assert f"(spec.md#{rid})" in compat, rid
        for cause in entry["causes"]:
            assert f"{{#cause-{cause}}}" in compat


def test_every_memspec_difference_links_to_the_section_of_its_decision_note() -> None:
    sections = implementations.decision_sections(
        (REPO / "spec" / "SPEC.md").read_text(encoding="utf-8"))
    for name, cause in classification()["causes"].items():
        if cause["class"] == "memspec-difference":
            assert sections.get(cause["decision"]), name


def test_what_an_engine_says_is_escaped() -> None:
    entry, report = _kept()[-1]
    hostile = copy.deepcopy(report.to_wire())
    hostile["engine"]["name"] = "<script>alert(1)</script>|`x`"
    hostile["engine"]["version"] = "1<img src=x>"
    failing = next(r for r in hostile["requirements"] if r["outcome"] not in PASSING)
    failing["tests"] = [{"nodeid": "t", "outcome": "failed", "message": "**bold** <b>|"}]
    other = {**entry, "id": "hostile", "title": "<i>x</i>"}
    text = implementations.render_implementations([(other, Report.from_wire(hostile))], None,
                                                  _linker())
    assert "<script>" not in text and "<img" not in text and "<b>" not in text
    assert "<i>" not in text and "**bold**" not in text
    assert "&lt;script" in text


def test_the_pages_say_so_when_nothing_is_kept(tmp_path: Path) -> None:
    text = implementations.render_implementations([], None, _linker())
    assert "No reports are kept yet" in text
    assert implementations.load_implementations(tmp_path) == []


def test_a_kept_report_off_the_schema_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / implementations.DATA
    folder.mkdir(parents=True)
    wire = json.loads((KEPT / "js-example-process.json").read_text(encoding="utf-8"))
    wire["verdict"] = "certified<img src=x>"  # a verdict the schema does not know
    (folder / "bad.json").write_text(json.dumps(wire), encoding="utf-8")
    (folder / "index.json").write_text(json.dumps({"engines": [{"report": "bad.json"}]}),
                                       encoding="utf-8")
    with pytest.raises(MalformedReport, match=r"bad\.json") as caught:
        implementations.load_implementations(tmp_path)
    assert caught.value.pointer == "/verdict"
