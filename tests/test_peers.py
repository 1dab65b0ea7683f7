"""fg-agent-memory 0.2.0, certified through its adapter, against its committed classification.

The kit certifies the original engine of the format once in process and once as a process
engine (module-scoped: one certification per mode per run), and the outcome of every requirement
is compared with spec/peers/fg-agent-memory-0.2.0.json in both directions: a requirement that
fails without being classified, and a classified one that no longer fails with that outcome
(the kit was fixed, or fg changed), both fail here. The data file's own rules (schema, quotes,
Decision notes, causes) are checked without running anything.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memspec._schemas import iter_errors
from memspec.data import json_resource, spec_text
from memspec.engine import operations, profiles
from memspec.peers import classification, expected_outcome

ROOT = Path(__file__).resolve().parents[1]
JUDGED = ("passed", "not-claimed", "untestable")


def _fg_installed() -> str | None:
    try:
        from importlib.metadata import version

        found = version("fg-agent-memory")
    except Exception:
        return "the peers extra is not installed (pip install -e '.[peers]')"
    if found != "0.2.0":
        return f"fg-agent-memory {found} is installed; the adapter translates 0.2.0"
    return None


needs_fg = pytest.mark.skipif(_fg_installed() is not None, reason=str(_fg_installed()))


def _memspec() -> str:
    found = shutil.which("memspec") or str(Path(sys.executable).with_name("memspec"))
    if not Path(found).exists():
        pytest.skip("the memspec console script is not installed")
    return found


def _certify(tmp: Path, *engine: str) -> dict[str, Any]:
    report = tmp / "report.json"
    run = subprocess.run([_memspec(), "certify", *engine, "--report", str(report), "--jobs", "2"],
                         cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert report.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    data: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    assert not data["engine"].get("fault"), data["engine"]["fault"]
    return data


@pytest.fixture(scope="module")
def in_process(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    data = classification()
    return _certify(tmp_path_factory.mktemp("fg-in-process"), "--engine",
                    data["adapter"]["in_process"])


@pytest.fixture(scope="module")
def as_process(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    command = f"{sys.executable} -m memspec.peers.fg_agent_memory"
    return _certify(tmp_path_factory.mktemp("fg-process"), "--engine-cmd", command)


def _differences(report: dict[str, Any]) -> list[str]:
    mode = report["mode"]
    expected = {rid: outcome for rid, entry in classification()["requirements"].items()
                if (outcome := expected_outcome(entry, mode)) is not None}
    actual = {entry["id"]: entry["outcome"] for entry in report["requirements"]}
    problems = []
    for rid, outcome in sorted(actual.items()):
        if outcome not in JUDGED and rid not in expected:
            problems.append(f"{rid} is {outcome} for fg-agent-memory ({mode}) but not classified")
    for rid, outcome in sorted(expected.items()):
        if actual.get(rid) != outcome:
            problems.append(f"{rid} is classified {outcome} but the kit reports "
                            f"{actual.get(rid, 'no outcome')} ({mode})")
    return problems


# -- the data file -------------------------------------------------------------------------


def test_the_classification_matches_its_schema() -> None:
    assert iter_errors(classification(), "peer-classification.json") == []


def test_every_cause_is_used_and_every_used_cause_is_defined() -> None:
    data = classification()
    used = {cause for entry in data["requirements"].values() for cause in entry["causes"]}
    assert used - set(data["causes"]) == set(), "requirements name undefined causes"
    assert set(data["causes"]) - used == set(), "causes no requirement names"


@needs_fg
def test_classified_requirements_exist_and_are_claimed_profiles() -> None:
    data = classification()
    known = {entry["id"]: entry["profile"] for entry in json_resource("spec", "requirements.json")
             ["requirements"]}
    from memspec.peers.fg_agent_memory import FgAgentMemoryEngine

    claimed = {*FgAgentMemoryEngine.claimed_profiles, "core"}
    for rid in data["requirements"]:
        assert rid in known, f"{rid} is not a requirement of SPEC.md"
        assert known[rid] in claimed, f"{rid} belongs to {known[rid]}, which fg does not claim"


def test_every_memspec_difference_names_a_decision_note_of_the_spec() -> None:
    spec = spec_text()
    for name, cause in classification()["causes"].items():
        if cause["class"] == "memspec-difference":
            assert f"**{cause['decision']}.**" in spec, (
                f"cause {name}: SPEC.md has no note **{cause['decision']}.**")


def test_every_engine_bug_quotes_one_of_the_engines_specifications() -> None:
    data = classification()
    sources = tuple(data["engine"]["specifications"])
    for name, cause in data["causes"].items():
        if cause["class"] == "engine-bug":
            assert cause["quote"]["source"].startswith(sources), name
            # A quote names a rule of the engine's own text: it carries an RFC 2119 keyword
            # or is the heading of a closed list.
            assert re.search(r"MUST|exactly one of", cause["quote"]["text"]), name


# -- the adapter ---------------------------------------------------------------------------


@needs_fg
def test_the_adapter_claims_exactly_the_profiles_it_has_operations_for() -> None:
    from memspec.peers.fg_agent_memory import FgAgentMemoryEngine

    claimed = set(FgAgentMemoryEngine.claimed_profiles)
    implemented = {spec["profile"] for name, spec in operations().items()
                   if spec["profile"] and hasattr(FgAgentMemoryEngine, f"op_{name}")}
    assert claimed == implemented
    assert claimed <= {name for name, p in profiles().items() if not p.get("always")}
    for name, spec in operations().items():
        if spec["profile"] in claimed:
            assert hasattr(FgAgentMemoryEngine, f"op_{name}"), f"{name} of a claimed profile"


def test_the_adapter_never_reaches_the_reference_engine() -> None:
    for source_file in (ROOT / "src" / "memspec" / "peers").glob("*.py"):
        source = source_file.read_text(encoding="utf-8")
        assert "memspec.reference" not in source and "memspec import reference" not in source


@needs_fg
def test_the_adapter_answers_the_handshake_as_a_process() -> None:
    hello = {"id": 1, "op": "hello", "args": {"protocol": "memspec-engine/1",
                                                "spec_version": "fg-agent-memory/0.1"}}
    run = subprocess.run([sys.executable, "-m", "memspec.peers.fg_agent_memory"],
                         input=json.dumps(hello) + "\n", capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout)
    assert answer["result"]["name"] == "fg-agent-memory"
    assert answer["result"]["version"] == classification()["engine"]["version"]


# -- the certifications --------------------------------------------------------------------


@needs_fg
def test_in_process_outcomes_match_the_classification(in_process: dict[str, Any]) -> None:
    assert in_process["engine"]["name"] == "fg-agent-memory"
    problems = _differences(in_process)
    assert not problems, "\n".join(problems)


@needs_fg
def test_process_outcomes_match_the_classification(as_process: dict[str, Any]) -> None:
    assert as_process["engine"]["name"] == "fg-agent-memory"
    problems = _differences(as_process)
    assert not problems, "\n".join(problems)
