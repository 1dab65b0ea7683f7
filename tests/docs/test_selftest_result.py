"""The committed selftest result (docs/assets/selftest-result.json) is current, and the command
that brings it current runs only what changed.

Currency is checked without running the kit: every fault of the catalogue is recorded in every
mode, with its present requirement, profile and description, and nothing else is recorded.
The merge is checked on small hand-made results, so these tests take a second.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.docs import REPO

sys.path.insert(0, str(REPO / "tools"))

from _docgen import selftest_record
from _docgen._common import SELFTEST_COMMAND, SELFTEST_RESULT, DocgenError
from _docgen.selftest_record import CatalogueFault

from memspec.selftest.runner import check_result

BRING_CURRENT = f"{SELFTEST_COMMAND} --changed"
MODES = ["in-process", "process"]
A = CatalogueFault("a-fault", "REC-5", "format", "drops the body")
B = CatalogueFault("b-fault", "SIG-1", "signing", "signs the wrong bytes")
C = CatalogueFault("c-fault", "PROTO-2", "core", "answers hello unsupported")


def _row(fault: CatalogueFault, mode: str, *, caught: bool = True, seconds: float = 1.0,
         **changes: Any) -> dict[str, Any]:
    row = {"fault": fault.name, "profile": fault.profile, "requirement": fault.requirement,
           "description": fault.description, "mode": mode, "claim": "all", "caught": caught,
           "reported": [fault.requirement] if caught else [], "collateral": [], "errored": [],
           "message": f"{fault.name} in {mode}", "seconds": seconds}
    return {**row, **changes}


def _result(rows: list[dict[str, Any]], *, started: str = "2026-01-01T00:00:00.000Z",
            finished: str = "2026-01-01T01:00:00.000Z", seconds: float = 90.0
            ) -> dict[str, Any]:
    caught = sum(r["caught"] for r in rows)
    return {"selftest_version": 1, "modes": MODES, "full": False,
            "started_at": started, "finished_at": finished, "faults": rows,
            "references": [{"engine": "reference", "mode": m, "passed": True, "failed": [],
                            "errored": [], "verdict": "certified", "message": "passes",
                            "seconds": seconds} for m in MODES],
            "summary": {"faults": len({r["fault"] for r in rows}), "runs": len(rows),
                        "caught": caught, "missed": len(rows) - caught, "with_collateral": 0,
                        "reference_passed": True, "ok": caught == len(rows)}}


def test_the_committed_selftest_result_is_current() -> None:
    path = REPO / SELFTEST_RESULT
    result = json.loads(path.read_text(encoding="utf-8"))
    assert check_result(result) == [], f"{SELFTEST_RESULT} is not a selftest result"
    assert result["modes"] == MODES, f"{SELFTEST_RESULT} must record both modes"
    stale = selftest_record.staleness(result, selftest_record.catalogue())
    assert stale.current, (
        f"{SELFTEST_RESULT} does not record the fault catalogue as it is; run "
        f"`{BRING_CURRENT}` (it runs only these faults):\n" + "\n".join(stale.explain()))
    assert result["summary"]["ok"], f"{SELFTEST_RESULT} records a missed fault"


def test_staleness_names_missing_changed_and_removed_faults() -> None:
    recorded = _result([_row(A, "in-process"), _row(A, "process"),
                        _row(B, "in-process"),  # its process row is missing
                        _row(C, "in-process", requirement="PROTO-4"), _row(C, "process",
                                                                          requirement="PROTO-4"),
                        _row(CatalogueFault("gone", "REC-1", "format", "x"), "process")])
    stale = selftest_record.staleness(recorded, [A, B, C])
    assert (stale.missing, stale.changed, stale.removed) == (("b-fault",), ("c-fault",),
                                                             ("gone",))
    assert stale.to_run == ("b-fault", "c-fault") and not stale.current
    explained = "\n".join(stale.explain())
    assert "1 not recorded: b-fault" in explained
    assert "no longer in the catalogue: gone" in explained
    described = _result([_row(A, m, description="an older description") for m in MODES])
    assert selftest_record.staleness(described, [A]).changed == ("a-fault",)
    assert selftest_record.staleness(_result([_row(A, m) for m in MODES]), [A]).current


def test_merge_replaces_reruns_drops_removed_and_recounts() -> None:
    gone = CatalogueFault("gone", "REC-1", "format", "x")
    old = _result([_row(A, m) for m in MODES] + [_row(B, m, caught=False) for m in MODES]
                  + [_row(gone, m) for m in MODES])
    new = _result([_row(C, m, seconds=3.0) for m in MODES] + [_row(B, m) for m in MODES],
                  started="2026-03-01T00:00:00.000Z", finished="2026-03-01T00:05:00.000Z",
                  seconds=7.5)
    merged = selftest_record.merge(old, new, [C, A, B])
    assert check_result(merged) == []
    assert [(r["fault"], r["mode"]) for r in merged["faults"]] == [
        (f.name, m) for f in (C, A, B) for m in MODES]
    assert all(r["caught"] for r in merged["faults"]), "the re-run rows replace the old ones"
    assert merged["summary"] == {"faults": 3, "runs": 6, "caught": 6, "missed": 0,
                                 "with_collateral": 0, "reference_passed": True, "ok": True}
    assert (merged["started_at"], merged["finished_at"]) == (old["started_at"],
                                                             new["finished_at"])
    assert [r["seconds"] for r in merged["references"]] == [7.5, 7.5], "the new reference rows"
    assert selftest_record.staleness(merged, [C, A, B]).current


def test_merge_refuses_a_run_in_other_modes() -> None:
    old = _result([_row(A, m) for m in MODES])
    new = {**_result([_row(A, "in-process")]), "modes": ["in-process"]}
    with pytest.raises(DocgenError, match="modes"):
        selftest_record.merge(old, new, [A])


def _gen_docs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "tools" / "gen_docs.py"), *args],
                          capture_output=True, text=True, timeout=120, check=False)


def test_changed_goes_with_record_selftest() -> None:
    done = _gen_docs("--changed")
    assert done.returncode == 2 and "--changed goes with --record-selftest" in done.stderr


def test_the_site_names_the_command_that_brings_the_result_current() -> None:
    from _docgen import kitpower
    from _docgen._common import IdLinker

    fault = selftest_record.catalogue()[0]
    old = CatalogueFault(fault.name, fault.requirement, fault.profile, "what it used to do")
    page = kitpower.build(_result([_row(old, m) for m in MODES]), IdLinker([]), set())
    text = next(iter(page.values())).decode()
    assert f"`{BRING_CURRENT}`" in text and fault.name in text
