"""memspec.testing, the kit's checks for an engine author's own suite.

The reference engine passes :class:`memspec.testing.StoreContract` (in process and as
a process) and both state machines; engines from the self-test catalogue fail them on
exactly their fault's requirement; and the kit's own store suite runs the same checks.
"""

from __future__ import annotations

import ast
import inspect
import re
import shlex
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

import memspec.testing as testing
from memspec.conformance import _store_contract as contract
from memspec.conformance._machines_store import STORE_MACHINE_REQUIREMENTS
from memspec.selftest.engines import faulty_engine, reference_engine
from memspec.selftest.faults import fault_named
from memspec.testing import (
    EngineSession,
    KitClock,
    LifecycleMachine,
    RequirementFailed,
    StoreContract,
    StoreMachine,
    connect,
)

ROOT = Path(__file__).resolve().parents[1]
#: Faults the store contract must catch, each on its requirement and on no other (faults
#: such as put-overwrites also break what they hide, as the self-test reports).
STORE_FAULTS = ("unknown-id-answers-empty", "list-ignores-tag-filter",
                "archived-put-compacts-history", "store-drops-extension-fields",
                "wildcard-id-matches", "put-accepts-float-confidence")
#: The same for the store machine (which puts no extension fields and no malformed ids).
MACHINE_FAULTS = ("unknown-id-answers-empty", "list-ignores-tag-filter",
                  "archived-put-compacts-history", "put-accepts-float-confidence")
#: Few examples, fixed: the machines must catch these faults without a lucky seed. No
#: shrinking: it replays a failure against the engine for minutes.
FEW = settings(max_examples=20, stateful_step_count=30, derandomize=True, database=None,
               deadline=None, suppress_health_check=list(HealthCheck),
               report_multiple_bugs=False, phases=(Phase.explicit, Phase.reuse, Phase.generate))

Machine = Callable[[EngineSession, KitClock], RuleBasedStateMachine]


#: The engine author's conftest: fewer machine examples than hypothesis's default.
CONFTEST = """
from hypothesis import Phase, settings

settings.register_profile("few", max_examples=10, stateful_step_count=15, derandomize=True,
                          database=None, deadline=None,
                          phases=(Phase.explicit, Phase.reuse, Phase.generate))
settings.load_profile("few")
"""


def _suite(tmp_path: Path, body: str) -> ET.Element:
    """Run ``body`` as an engine author's test module in ``tmp_path``; the junit XML."""
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (tmp_path / "test_my_engine.py").write_text(textwrap.dedent(body), encoding="utf-8")
    junit = tmp_path / "junit.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    f"--junitxml={junit}", "test_my_engine.py"], cwd=tmp_path,
                   capture_output=True, text=True, check=False, timeout=600)
    return ET.parse(junit).getroot()


def _outcomes(root: ET.Element) -> dict[tuple[str, str], str | None]:
    """(class, test) -> None when it passed, else the first line of its failure or error."""
    found: dict[tuple[str, str], str | None] = {}
    for case in root.iter("testcase"):
        key = (case.get("classname", "").rsplit(".", 1)[-1], case.get("name", ""))
        problem = case.find("failure")
        problem = problem if problem is not None else case.find("error")
        skipped = case.find("skipped")
        if skipped is not None:
            found[key] = f"skipped: {skipped.get('message')}"
        else:
            found[key] = None if problem is None else (problem.get("message") or "?")
    return found


def _contract_tests() -> list[str]:
    return sorted(name for name in vars(StoreContract) if name.startswith("test_"))


def _contract_test_ids() -> list[str]:
    """The contract's test ids as pytest reports them: the machine test once per
    requirement it judges."""
    return sorted(f"{name}[{req}]" if name == "test_store_state_machine" else name
                  for name in _contract_tests()
                  for req in (STORE_MACHINE_REQUIREMENTS
                              if name == "test_store_state_machine" else ("",)))


def _requirements_marked(test: str) -> tuple[str, ...]:
    """The requirements a contract test id (``name`` or ``name[REQ]``) is marked with."""
    name, _, param = test.partition("[")
    if param:
        return (param.rstrip("]"),)
    return tuple(getattr(StoreContract, name).pytestmark[0].args)


def test_importing_memspec_testing_leaves_the_reference_out() -> None:
    probe = ("import sys, memspec.testing\n"
             "print([m for m in sys.modules if m.startswith('memspec.reference')])")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True)
    assert run.stdout.strip() == "[]"


def test_the_reference_passes_the_store_contract_in_process_and_as_a_process(
        tmp_path: Path) -> None:
    server = shlex.join([str(Path(sys.executable).parent / "memspec-reference-engine")])
    root = _suite(tmp_path, f"""
        from memspec.reference.engine import create_engine
        from memspec.testing import StoreContract


        class TestInProcess(StoreContract):
            def make_engine(self):
                return create_engine()


        class TestAsAProcess(StoreContract):
            engine_command = {server!r}
    """)
    outcomes = _outcomes(root)
    expected = {(cls, name) for cls in ("TestInProcess", "TestAsAProcess")
                for name in _contract_test_ids()}
    assert set(outcomes) == expected
    assert {key: problem for key, problem in outcomes.items() if problem is not None} == {}


def test_a_faulty_engine_fails_the_store_contract_on_exactly_its_requirement(
        tmp_path: Path) -> None:
    classes = "\n".join(textwrap.dedent(f"""
        class Test_{name.replace('-', '_')}(StoreContract):
            def make_engine(self):
                return faulty_engine({name!r})
    """) for name in STORE_FAULTS)
    outcomes = _outcomes(_suite(tmp_path, "from memspec.selftest.engines import faulty_engine\n"
                                "from memspec.testing import StoreContract\n" + classes))
    for name in STORE_FAULTS:
        requirement = fault_named(name).requirement
        failed = {test: problem for (cls, test), problem in outcomes.items()
                  if cls == f"Test_{name.replace('-', '_')}" and problem is not None}
        assert failed, f"{name} passed the whole store contract"
        for test, problem in failed.items():
            assert problem.startswith("memspec.conformance._outcomes.RequirementFailed: "
                                      f"{requirement}: "), (name, test, problem)
            marked = _requirements_marked(test)
            assert requirement in marked, (name, test, marked)


def test_an_unconfigured_contract_says_what_to_set(tmp_path: Path) -> None:
    outcomes = _outcomes(_suite(tmp_path, """
        from memspec.testing import StoreContract


        class TestNothing(StoreContract):
            pass
    """))
    problems = set(outcomes.values())
    assert len(problems) == 1
    (problem,) = problems
    assert problem is not None and "set engine_cls or engine_command" in problem


@pytest.mark.parametrize("machine", [StoreMachine, LifecycleMachine])
def test_the_reference_passes_the_machines(machine: Machine) -> None:
    engine = connect(reference_engine())
    # hypothesis documents a factory here; its annotation says type[RuleBasedStateMachine].
    run_state_machine_as_test(lambda: machine(engine, KitClock()),  # type: ignore[arg-type]
                              settings=FEW)


@pytest.mark.parametrize(("machine", "fault"), [
    *((StoreMachine, name) for name in MACHINE_FAULTS),
    (LifecycleMachine, "archive-really-deletes"),
    (LifecycleMachine, "successor-written-before-validation"),
])
def test_a_faulty_engine_fails_a_machine_on_exactly_its_requirement(machine: Machine,
                                                                    fault: str) -> None:
    engine = connect(faulty_engine(fault), label=fault)
    requirement = fault_named(fault).requirement

    def build() -> RuleBasedStateMachine:
        # As the kit runs it: the store machine once per requirement, judging the fault's.
        if machine is StoreMachine:
            return StoreMachine(engine, KitClock(), judge=(requirement,))
        return machine(engine, KitClock())

    with pytest.raises(RequirementFailed) as caught:
        # A factory, as hypothesis documents; its annotation says a class.
        run_state_machine_as_test(build, settings=FEW)  # type: ignore[arg-type]
    # A write on a rejection also names PROTO-7, which every rejected call breaks by writing.
    assert caught.value.requirements in ((requirement,), (requirement, "PROTO-7")), (
        str(caught.value))


def _calls(function: Callable[..., object]) -> list[str]:
    """The names of ``contract.<name>(...)`` calls in ``function``'s body."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    return [node.func.attr for node in ast.walk(tree) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "contract"]


def test_the_kit_and_the_base_class_run_the_same_checks() -> None:
    from memspec.conformance.suites import test_store as kit

    for check in contract.CHECKS:
        test = getattr(kit, f"test_{check.name}", None)
        assert test is not None, f"the kit has no test_{check.name}"
        assert [m.args for m in test.pytestmark] == [(check.requirement,)], check
        assert _calls(test) == [check.name], check
        method = getattr(StoreContract, f"test_{check.name}", None)
        assert method is not None, f"StoreContract has no test_{check.name}"
        assert [m.args for m in method.pytestmark] == [(check.requirement,)], check
        assert method.__doc__ == check.run.__doc__
    machine_tests: list[Any] = [kit.test_store_state_machine,  # pytest marks added at runtime
                                StoreContract.test_store_state_machine]
    marked = [[tuple(mark.args for mark in param.marks) for param in m.pytestmark[0].args[1]]
              for m in machine_tests]
    assert marked == [[((req,),) for req in STORE_MACHINE_REQUIREMENTS]] * 2
    assert all("judge=(requirement,)" in inspect.getsource(m) for m in machine_tests)
    assert set(_contract_tests()) == {f"test_{c.name}" for c in contract.CHECKS} | {
        "test_store_state_machine"}


def test_the_guide_example_runs_from_its_own_directory(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "guide" / "testing-api.md").read_text(encoding="utf-8")
    files = re.findall(r'```python title="([^"]+)"\n(.*?)```', page, re.S)
    assert [name for name, _ in files] == ["dict_store.py", "test_dict_store.py"]
    for name, body in files:
        (tmp_path / name).write_text(body, encoding="utf-8")
    junit = tmp_path / "junit.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    f"--junitxml={junit}"], cwd=tmp_path, capture_output=True, text=True,
                   check=False, timeout=600)
    outcomes = _outcomes(ET.parse(junit).getroot())
    skipped = {key for key, problem in outcomes.items()
               if problem is not None and problem.startswith("skipped: memspec:not-claimed")}
    assert skipped == {("test_dict_store", "test_the_lifecycle_machine_is_skipped_without_the_"
                                           "profile")}
    assert {key: problem for key, problem in outcomes.items()
            if problem is not None and key not in skipped} == {}
    assert {name for cls, name in outcomes if cls == "TestDictStore"} == set(
        _contract_test_ids())


def test_the_public_names_are_documented() -> None:
    for name in testing.__all__:
        value = getattr(testing, name)
        assert inspect.getdoc(value), f"memspec.testing.{name} has no docstring"
