"""The benchmark machinery at a tiny size, and the committed results, against their schema.

Nothing here looks at how fast anything was: a benchmark's verdict is data it
reports, never a test outcome. These tests only check that every benchmark
runs, that the output has the documented shape, that a missing optional
package is reported as skipped, and that the committed results are valid.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import run as bench
from benchmarks._harness import Goal, Result
from memspec import validator_for

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = "benchmark-results"
EXPECTED = (
    "canonical-json-vs-raw-dumps",
    "canonical-json-vs-orjson",
    "canonical-json-vs-fg-agent-id",
    "canonical-json-vs-rfc8785",
    "fingerprint-vs-agent-memory-contracts",
    "verify-file-vs-bare-ed25519",
    "verify-file-parallel-vs-bare-ed25519",
    "schema-validation-vs-reused-validator",
    "sqlite-store-put",
    "sqlite-store-get",
    "sqlite-store-history",
    "file-store-put",
    "recall-latency-growth",
    "consolidation-growth",
    "consolidation-growth-agent-shaped",
    "near-dup-distinct-merged",
    "near-dup-duplicates-missed",
    "conformance-suite-process-overhead",
    "certify-in-process-time",
    "certify-jobs-2-speedup",
)


def _problems(document: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator_for(SCHEMA).iter_errors(document)]


@pytest.fixture(scope="module")
def smoke() -> dict[str, Any]:
    return bench.run(bench.MODES["smoke"], echo=lambda line: None)


def test_smoke_run_matches_the_schema(smoke: dict[str, Any]) -> None:
    assert _problems(smoke) == []
    assert smoke["mode"] == "smoke"


def test_smoke_run_has_every_benchmark_and_none_crashed(smoke: dict[str, Any]) -> None:
    names = [entry["name"] for entry in smoke["results"]]
    assert names == list(EXPECTED)
    errors = {e["name"]: e["reason"] for e in smoke["results"] if e["status"] == "error"}
    assert errors == {}


def test_every_judged_entry_states_its_gap_and_cause(smoke: dict[str, Any]) -> None:
    for entry in smoke["results"]:
        if entry["status"] == "unmet":
            assert entry["gap"] and entry["cause"], entry["name"]
        if entry["status"] in ("met", "unmet"):
            assert entry["subject"]["unit"] and entry["baseline"]["unit"], entry["name"]
            # A share that must stay at zero (a "<=" goal) may be zero; a speed ratio may not.
            assert entry["ratio"] > 0 or entry["goal"]["op"] == "<=", entry["name"]


def test_summary_counts_the_entries(smoke: dict[str, Any]) -> None:
    counted = {status: 0 for status in ("met", "unmet", "skipped", "error")}
    for entry in smoke["results"]:
        counted[entry["status"]] += 1
    assert smoke["summary"] == counted


def test_table_lists_every_entry(smoke: dict[str, Any]) -> None:
    text, markdown = bench.table(smoke), bench.markdown(smoke)
    for name in EXPECTED:
        assert name in text
        assert f"`{name}`" in markdown


def test_a_missing_optional_package_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in ("rfc8785", "fg_agent_id", "fg_agent_id.canonical", "agent_memory_contracts",
                   "orjson"):
        monkeypatch.setitem(sys.modules, module, None)  # makes the import raise ImportError
    document = bench.run(bench.MODES["smoke"], ["fg-agent-id", "rfc8785", "fingerprint",
                                                "orjson"],
                         echo=lambda line: None)
    assert _problems(document) == []
    reasons = {e["name"]: (e["status"], e["reason"]) for e in document["results"]}
    assert reasons == {
        "canonical-json-vs-fg-agent-id": ("skipped", "skipped: fg-agent-id not installed"),
        "canonical-json-vs-rfc8785": ("skipped", "skipped: rfc8785 not installed"),
        "canonical-json-vs-orjson": ("skipped", "skipped: orjson not installed"),
        "fingerprint-vs-agent-memory-contracts":
            ("skipped", "skipped: agent-memory-contracts not installed"),
    }


def test_goals_are_judged_from_the_ratio() -> None:
    at_least = Goal(">=", 0.7, "throughput ratio")
    assert at_least.met(0.7) and not at_least.met(0.69)
    below = Goal("<", 10.0, "growth")
    assert below.met(9.99) and not below.met(10.0)
    result = Result(name="x", compares="y", goal=at_least, ratio=0.5).judge("the cause")
    assert (result.status, result.cause) == ("unmet", "the cause")
    assert result.gap is not None and "0.500" in result.gap
    met = Result(name="x", compares="y", goal=at_least, ratio=0.9).judge("unused")
    assert (met.status, met.gap, met.cause) == ("met", None, None)


def test_the_command_writes_results(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--smoke", "--only",
         "canonical-json-vs-raw", "--out", str(out)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(out.read_text(encoding="utf-8"))
    assert _problems(document) == []
    assert [e["name"] for e in document["results"]] == ["canonical-json-vs-raw-dumps"]
    assert "canonical-json-vs-raw-dumps" in done.stdout


def test_committed_results_match_the_schema() -> None:
    document = json.loads((ROOT / "benchmarks" / "results.json").read_text(encoding="utf-8"))
    assert _problems(document) == []
    assert document["mode"] in ("full", "quick")
    assert [e["name"] for e in document["results"]] == list(EXPECTED)
    assert not [e["name"] for e in document["results"] if e["status"] == "error"]


def test_an_update_replaces_only_the_entries_run(smoke: dict[str, Any]) -> None:
    from benchmarks.run import update

    name = smoke["results"][0]["name"]
    partial = {**smoke, "created_at": "2030-01-01T00:00:00Z",
               "results": [{**smoke["results"][0], "notes": None}]}
    updated = update(smoke, partial)
    assert [r["name"] for r in updated["results"]] == [r["name"] for r in smoke["results"]]
    assert "re-measured on its own at 2030-01-01T00:00:00Z" in updated["results"][0]["notes"]
    assert updated["results"][0]["name"] == name
    assert updated["results"][1:] == smoke["results"][1:]
    assert sum(updated["summary"].values()) == len(updated["results"])
    assert not _problems(updated)
    with pytest.raises(SystemExit):
        update(smoke, {**partial, "mode": "full"})
