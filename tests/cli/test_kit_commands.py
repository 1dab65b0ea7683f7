"""smoke, vectors, report, audit and certify through the real console script."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ENGINE = Path(sys.executable).with_name("memspec-reference-engine")


def test_smoke_reference_in_process_and_as_process(memspec):
    assert memspec("smoke", "--engine", "reference").code == 0
    run = memspec("smoke", "--engine-cmd", f"{ENGINE} --store sqlite", "--json")
    assert run.code == 0, run.out + run.err
    assert run.json()["ok"] is True


def test_smoke_unknown_engine_is_typed(memspec):
    run = memspec("smoke", "--engine", "no-such-engine")
    assert run.code == 1
    assert "reference" in run.err  # the message lists the engines that exist


def test_vectors_list_and_check(memspec):
    run = memspec("vectors", "list", "--json")
    assert run.code == 0
    files = {row["file"] for row in run.json()["files"]}
    assert {"canonical-json.json", "records.json", "proposals.json"} <= files
    run = memspec("vectors", "check", "--engine", "reference", "--file", "timestamps", "--json")
    assert run.code == 0, run.out + run.err
    assert run.json()["selected"] > 40 and run.json()["failed"] == []
    assert memspec("vectors", "check").code == 2  # an engine is required


def test_report_renders_markdown_html_and_rejects_garbage(memspec, write, tmp_path: Path):
    report = tmp_path / "report.json"
    run = memspec("vectors", "check", "--engine", "reference", "--file", "legality")
    assert run.code == 0
    # a real report from a certify run of a small engine subset is produced by the kit
    kit = memspec("certify", "--engine", "reference", "--report", report, "--json")
    assert kit.code == 0, kit.out[-2000:] + kit.err[-2000:]
    assert kit.json()["verdict"] == "certified"
    assert report.with_suffix(".md").is_file()
    assert report.with_name("report-badge.svg").read_text().startswith("<svg")
    markdown = memspec("report", report)
    assert markdown.code == 0 and "# Conformance report" in markdown.out
    html = memspec("report", report, "--format", "html")
    assert html.code == 0 and html.out.startswith("<!doctype html>")
    assert memspec("report", report, "--verify").code == 1  # unsigned
    assert memspec("report", write("bad.json", {"engine": 1})).code == 1


def test_audit_of_a_memory_file(memspec, write, memory_file):
    run = memspec("audit", write("m.json", memory_file), "--format", "json")
    assert run.code == 0, run.err
    first = json.loads(run.out)
    again = json.loads(memspec("audit", write("n.json", memory_file), "--format", "json").out)
    assert first == again  # content-addressed: the same input gives the same report


def test_certify_jobs_runs_the_kit_under_xdist(memspec, tmp_path: Path, monkeypatch):
    from memspec.cli import _kit
    from memspec.cli._io import UsageError

    assert memspec("certify", "--engine", "reference", "--jobs", "0").code == 2
    monkeypatch.setattr(_kit.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(UsageError, match="pytest-xdist"):
        _kit.jobs_args(2)
    monkeypatch.undo()
    pytest.importorskip("xdist", reason="pytest-xdist is not installed")
    report = tmp_path / "report.json"
    kit = memspec("certify", "--engine", "reference", "--jobs", "2", "--report", report, "--json")
    assert kit.code == 0, kit.out[-2000:] + kit.err[-2000:]
    assert kit.json()["verdict"] == "certified"
    assert json.loads(report.read_text())["mode"] == "in-process"
