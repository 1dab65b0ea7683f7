"""report.md, the HTML page and the badge say what was certified: each profile with its
meaning, every requirement linked to the spec website, the untestable ones with reasons,
test counts as the terminal counts them."""

from __future__ import annotations

import json
from typing import Any

from memspec._display import markdown_inline
from memspec._requirements import load_requirements
from memspec.cli._render import (
    badge_endpoint,
    badge_svg,
    badge_text,
    report_html,
    report_markdown,
    requirement_url,
)
from memspec.engine import profiles


def _report(certified: tuple[str, ...], verdict: str = "certified") -> dict[str, Any]:
    """A report over the spec's own requirements: the profiles in ``certified`` claimed and
    certified, the others not claimed; untestable requirements untestable."""
    table = profiles()
    requirements = []
    for req in load_requirements():
        claimed = req.profile in certified or table[req.profile].get("always")
        outcome = ("untestable" if req.untestable else "passed" if claimed else "not-claimed")
        tests = [] if req.untestable else [{"nodeid": f"suites/t.py::test_{req.id}",
                                            "outcome": "passed" if claimed else "not-claimed"}]
        requirements.append({"id": req.id, "level": req.level, "profile": req.profile,
                             "binding": req.level.startswith("MUST"), "outcome": outcome,
                             "tests": tests})
    return {
        "report_version": 1, "spec_version": "fg-agent-memory/0.1",
        "kit": {"version": "0.1.0"},
        "engine": {"name": "tiny", "version": "2", "spec_version": "fg-agent-memory/0.1",
                   "protocol": "memspec-engine/1", "profiles": list(certified)},
        "mode": "process", "started_at": "2026-01-01T00:00:00.000Z",
        "finished_at": "2026-01-01T00:02:00.000Z", "suite_digest": "a" * 64,
        "verdict": verdict,
        "profiles": {name: {"claimed": name in certified or bool(entry.get("always")),
                            "verdict": "certified" if name in certified or entry.get("always")
                            else "not-claimed"} for name, entry in table.items()},
        "requirements": requirements,
        "kit_checks": [{"nodeid": "suites/test_traceability.py::test_a", "outcome": "passed"},
                       {"nodeid": "suites/test_traceability.py::test_b", "outcome": "passed"}],
        "summary": {"tests": {"passed": 7, "not-claimed": 3, "untestable": 1},
                    "requirements": {"passed": 5}, "warnings": 0},
    }


def test_badge_names_what_was_certified() -> None:
    two = _report(("format", "signing"))
    assert badge_text(two) == ("memspec", "format, signing", "yellowgreen")
    claimable = [n for n, e in profiles().items() if not e.get("always")]
    every = _report(tuple(claimable))
    assert badge_text(every) == ("memspec", f"{len(claimable)}/{len(claimable)} profiles",
                                 "brightgreen")
    assert badge_text(_report(tuple(claimable[:5])))[1] == f"5/{len(claimable)} profiles"
    failed = _report(("format",), verdict="failed")
    assert badge_text(failed)[1:] == (f"failed (1/{len(claimable)} profiles certified)", "red")
    svg = badge_svg(two)
    assert svg.startswith("<svg") and ">format, signing</text>" in svg
    endpoint = json.loads(badge_endpoint(two))
    assert endpoint == {"schemaVersion": 1, "label": "memspec", "message": "format, signing",
                        "color": "yellowgreen"}


def test_report_markdown_says_what_was_certified() -> None:
    report = _report(("format", "signing"))
    text = report_markdown(report)
    assert "- **Certified profiles:** 2 of" in text and ": format, signing" in text
    for name, entry in profiles().items():  # every profile with its one-line meaning
        assert f"[{name}](https://memspec.dev/generated/requirements/#profile-{name})" in text
        assert markdown_inline(f"{entry['title']}: {entry['summary']}") in text
    for req in report["requirements"]:  # every requirement linked to its anchor
        assert f"[{req['id']}]({requirement_url(req['id'])})" in text
    untestable = text.split("## Untestable requirements", 1)[1].split("## Every", 1)[0]
    for req in load_requirements():
        if req.untestable:
            assert f"[{req.id}](" in untestable
    assert requirement_url("XAUD-1").startswith("https://memspec.dev/generated/extensions/#")
    assert requirement_url("REC-5") == "https://memspec.dev/generated/spec/#REC-5"


def test_test_counts_agree_with_the_terminal() -> None:
    # the terminal counts the kit's own checks among the tests; so do report.md and HTML
    text = report_markdown(_report(("format",)))
    assert "- **Tests:** 13 (3 not-claimed, 9 passed, 1 untestable), 2 of them the kit's" in text
    assert "format" in report_html(_report(("format",)))
