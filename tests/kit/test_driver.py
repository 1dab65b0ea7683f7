"""The kit's shared driver (memspec.testing.Driver) and the suites' use of it.

The suites take their steps from the one driver: no class in conformance/suites may
define a step of its own under a driver step's name (the per-suite helper classes
that repeated ``new``/``put``/``get``/``history`` must not come back), and the
suites that need other settings say so through ``configured``, not a copy. The
driver's own behaviour is checked against the reference engine through the public
``memspec.testing`` door, with a clock that only moves when told.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from memspec.conformance import _builders as build
from memspec.reference.engine import create_engine
from memspec.testing import Driver, EngineSession, KitClock, connect

pytest_plugins = ["pytester"]

SUITES = Path(__file__).resolve().parents[2] / "conformance" / "suites"
#: The driver's public steps: what a suite's class must not define again.
STEPS = frozenset(name for name, _ in inspect.getmembers(Driver, inspect.isfunction)
                  if not name.startswith("_"))


def _suite_classes() -> list[tuple[str, ast.ClassDef]]:
    found = []
    for path in sorted(SUITES.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found += [(path.name, node) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    return found


def test_the_driver_steps_include_the_ones_the_suites_repeated() -> None:
    assert {"new", "put", "get", "history", "apply", "create", "consolidate", "latest",
            "redact", "supersede", "archive", "pair", "recall"} <= STEPS


def test_no_suite_class_defines_a_driver_step() -> None:
    copies = sorted(f"{file}: {cls.name}.{item.name}" for file, cls in _suite_classes()
                    for item in cls.body
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                    and item.name in STEPS)
    assert copies == [], f"steps that belong to the shared driver: {copies}"


def test_no_suite_builds_a_driver_of_its_own() -> None:
    # A suite with other settings derives them from the kit's driver fixture.
    built = []
    for path in sorted(SUITES.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        built += [f"{path.name}:{node.lineno}" for node in ast.walk(tree)
                  if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                  and node.func.id == "Driver"]
    assert built == [], f"suites constructing a Driver instead of taking the fixture: {built}"


@pytest.fixture
def session() -> EngineSession:
    return connect(create_engine())


def test_records_carry_distinct_provenance_and_episodes_a_time(session: EngineSession) -> None:
    clock = KitClock()
    driver = Driver(session, clock, ref_prefix="mine", provenance_kind="conversation")
    first, twin = driver.new("the same body"), driver.new("the same body")
    assert [first["provenance"]["ref"], twin["provenance"]["ref"]] == ["mine-1", "mine-2"]
    assert {first["provenance"]["kind"], twin["provenance"]["kind"]} == {"conversation"}
    assert first["id"] != twin["id"]
    assert "occurred_at" not in first
    episode = driver.new("we met on monday", "episode")
    assert episode["occurred_at"] == episode["created_at"] == clock.now()
    assert "occurred_at" not in driver.new("we met on tuesday", "episode", occurred_at=None)
    assert driver.configured(ref_prefix="other").new()["provenance"]["ref"] == "other-1"


def test_births_and_writes_move_the_clock_as_configured(session: EngineSession) -> None:
    clock = KitClock()
    start = clock.now()
    still = Driver(session, clock, write_step=0)
    born = still.put("born at the start")
    assert born["created_at"] == start
    still.archive(born["id"], "withdrawn")
    assert still.get(born["id"])["updated_at"] == start and clock.now() == start
    spaced = still.configured(birth_step=61, write_step=1)
    later = spaced.put("born a minute on")
    assert later["created_at"] == clock.at(61 / 86400)
    version = spaced.put_version(later, tags=["moved"])
    assert version["updated_at"] == clock.at(62 / 86400)
    assert spaced.history(later["id"]) == [later, version]
    given = spaced.new("born when told", at=clock.at(400))
    assert given["created_at"] == clock.at(400) and clock.now() == clock.at(62 / 86400)


def test_lifecycle_steps_write_through_the_engine(session: EngineSession) -> None:
    driver = Driver(session, KitClock())
    old = driver.create()
    successor = driver.supersede(old, "the kettle is in the right cupboard", "it moved")
    assert [v["state"] for v in driver.history(old["id"])] == ["active", "superseded"]
    assert driver.get(old["id"])["superseded_by"] == successor["id"]
    a, b = driver.pair("they disagree")
    assert {driver.get(a["id"])["state"], driver.get(b["id"])["state"]} == {"transitional"}
    written = driver.apply(build.proposal("archive", target_id=successor["id"],
                                          reason="sold"))
    assert [w["state"] for w in written] == ["archived"]
    assert set(driver.latest()) == {old["id"], successor["id"], a["id"], b["id"]}
    assert [r["id"] for r in driver.iterate()] == sorted(driver.latest())
    tombstone = driver.redact(b["id"], "a secret")
    assert tombstone["id"] == b["id"] and tombstone["body"] != b["body"]


def test_passes_search_and_recall(session: EngineSession) -> None:
    clock = KitClock()
    driver = Driver(session, clock)
    kept = driver.put("the backup job runs at two")
    driver.put("the deploy script lives in the tools folder")
    assert driver.search("backup job")[0][0] == kept["id"]
    assert list(driver.entries("backup job")) == [kept["id"]]
    assert driver.recall("backup job", now=clock.at(1))["records"][0]["record"] == kept
    touched = driver.touch(kept["id"])  # recall touched it too (RCL-14)
    assert driver.touch(kept["id"]) == touched + 1


def test_passes_run_a_day_later_unless_told(session: EngineSession) -> None:
    clock = KitClock()
    driver = Driver(session, clock)
    driver.put("the backup job runs at two")
    driver.put("the backup job runs at two")
    assert set(driver.consolidate()) == {"actions", "rejections", "deferred"}
    assert clock.now() == clock.at(1)
    driver.decay(now=clock.at(5))
    assert clock.now() == clock.at(1)
    assert set(driver.decay()) == {"archived", "protected", "saliences"}
    assert clock.now() == clock.at(2)


def test_store_contract_gives_its_tests_the_driver(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mine="""
        from memspec.reference.engine import ReferenceEngine
        from memspec.testing import Driver, StoreContract

        class TestMine(StoreContract[ReferenceEngine]):
            engine_cls = ReferenceEngine

            def test_my_own_check(self, driver: Driver) -> None:
                record = driver.put()
                assert driver.history(record["id"]) == [record]
        """)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", "-k", "my_own_check")
    result.assert_outcomes(passed=1)
