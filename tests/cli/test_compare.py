"""memspec compare through the real console script, on the reports the website keeps."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import Run

ROOT = Path(__file__).resolve().parents[2]
KEPT = ROOT / "docs" / "data" / "implementations"


def _kept() -> list[Path]:
    index = json.loads((KEPT / "index.json").read_text(encoding="utf-8"))
    return [KEPT / entry["report"] for entry in index["engines"]]


@pytest.fixture
def two(write: Callable[[str, Any], Path]) -> tuple[Path, Path, dict[str, Any]]:
    """Two reports that differ in one profile verdict and one requirement outcome."""
    first = json.loads(_kept()[0].read_text(encoding="utf-8"))
    second = copy.deepcopy(first)
    second["engine"]["name"] = "other\x1b[31m|engine"
    profile = next(iter(second["profiles"]))
    second["profiles"][profile]["verdict"] = "not-claimed"
    entry = second["requirements"][0]
    entry["outcome"] = "errored" if entry["outcome"] != "errored" else "failed"
    return write("a.json", first), write("b.json", second), first


def test_the_table_shows_profiles_then_differing_requirements(memspec: Callable[..., Run],
                                                              two: tuple[Path, Path, Any]) -> None:
    first, second, report = two
    run = memspec("compare", first, second)
    assert run.code == 0, run.err
    profile = next(iter(report["profiles"]))
    rid = report["requirements"][0]["id"]
    assert profile in run.out and rid in run.out
    assert run.out.index(profile) < run.out.index("requirements differ")
    assert "\x1b" not in run.out and "\\x1b" in run.out  # the engine's name cannot draw


def test_json_names_engines_profiles_and_differences(memspec: Callable[..., Run],
                                                     two: tuple[Path, Path, Any]) -> None:
    first, second, report = two
    run = memspec("compare", "--json", first, second)
    assert run.code == 0, run.err
    data = run.json()
    assert [e["report"] for e in data["engines"]] == [str(first), str(second)]
    assert [p["profile"] for p in data["profiles"]] == list(report["profiles"])
    assert data["profiles"][0]["verdicts"][1] == "not-claimed"
    assert [r["id"] for r in data["differing_requirements"]] == [report["requirements"][0]["id"]]


def test_markdown_escapes_what_the_engine_says(memspec: Callable[..., Run],
                                               two: tuple[Path, Path, Any]) -> None:
    first, second, _ = two
    run = memspec("compare", "--markdown", first, second)
    assert run.code == 0, run.err
    header = run.out.splitlines()[0]
    assert header.count(" | ") == 2  # the engine's '|' is escaped, not a new column
    assert "other" in header and "\x1b" not in run.out


def test_every_kept_report_compares(memspec: Callable[..., Run]) -> None:
    run = memspec("compare", "--json", *_kept())
    assert run.code == 0, run.err
    assert len(run.json()["engines"]) == len(_kept())


def test_identical_reports_have_no_differing_requirement(memspec: Callable[..., Run]) -> None:
    path = _kept()[0]
    run = memspec("compare", path, path)
    assert run.code == 0
    assert "every requirement has the same outcome" in run.out
    assert "#1" in run.out and "#2" in run.out  # two columns with one name stay apart


def test_a_report_that_fails_its_check_is_a_typed_error(memspec: Callable[..., Run],
                                                        write: Callable[[str, Any], Path]) -> None:
    good = _kept()[0]
    broken = json.loads(good.read_text(encoding="utf-8"))
    del broken["profiles"]
    for bad in (write("broken.json", broken), write("list.json", [1]),
                write("text.json", "{not json")):
        run = memspec("compare", good, bad)
        assert run.code == 1, (bad, run.out, run.err)
        assert str(bad) in run.err and run.out == ""


def test_a_missing_report_is_a_usage_error(memspec: Callable[..., Run], tmp_path: Path) -> None:
    # As for every memspec command, naming a file that is not there is a usage error.
    run = memspec("compare", _kept()[0], tmp_path / "missing.json")
    assert run.code == 2
    assert "missing.json" in run.err and run.out == ""


@pytest.mark.parametrize("args", [(), ("--json", "--markdown", "REPORT")])
def test_usage_errors_exit_2(memspec: Callable[..., Run], args: tuple[str, ...]) -> None:
    run = memspec("compare", *[str(_kept()[0]) if a == "REPORT" else a for a in args])
    assert run.code == 2
