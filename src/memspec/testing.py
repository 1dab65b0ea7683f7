"""The conformance kit's checks, for an engine author's own test suite.

Like ``zarr.testing``, this module gives engine authors the kit's reusable parts
to run inside their own pytest suite, with their own fixtures and settings:

* :class:`StoreContract`, a pytest base class: subclass it in a ``Test...`` class,
  say how to build your engine, and pytest runs the store profile's contract tests
  (put, get, history, list, iterate, version rules, not-found) against it. Each test
  is marked with the requirement it checks and fails with a
  :class:`RequirementFailed` whose message starts with that requirement's id.
* :class:`LifecycleMachine` and :class:`StoreMachine`, hypothesis state machines:
  build one with the engine under test (seen through :func:`connect`) and a
  :class:`KitClock`, and let hypothesis drive it with your settings. Every rule is
  mirrored on a model, and the engine is checked against the model after every step.
* :class:`Driver`, the steps the kit's behaviour suites share (make records with
  distinct provenance refs, put, apply proposals, supersede, transition, archive,
  redact, read versions back, run passes, recall), over the engine session and a
  clock: the kit's suites use this driver, through their ``driver`` fixture.
* The observers the kit's checks are built from, for checks of your own:
  :func:`snapshot` (every version the engine holds), :func:`describe_change`,
  :func:`attempt`, :func:`expect_rejected` (refused with the right error class, and
  nothing written) and :func:`fresh_id`.

The checks are the kit's own (``memspec.conformance``): the kit's store suite and
:class:`StoreContract` call the same functions, and the kit runs the same machines.
Importing this module never imports the reference engine.

A minimal suite (see the "Testing your engine" guide for more)::

    import pytest
    from memspec.testing import StoreContract

    from mypackage.engine import MyEngine

    class TestMyEngineStore(StoreContract[MyEngine]):
        engine_cls = MyEngine
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from memspec.conformance._clock import KitClock
from memspec.conformance._driver import Driver
from memspec.conformance._loading import process_engine
from memspec.conformance._machines_lifecycle import LifecycleMachine
from memspec.conformance._machines_observe import (
    ClockLike,
    EngineLike,
    attempt,
    describe_change,
    expect_rejected,
    fresh_id,
    kit_settings,
    snapshot,
)
from memspec.conformance._machines_store import STORE_MACHINE_REQUIREMENTS, StoreMachine
from memspec.conformance._outcomes import RequirementFailed
from memspec.conformance._session import Connection, EngineSession
from memspec.conformance._store_contract import CHECKS, ContractCheck
from memspec.engine import Engine

__all__ = [
    "ClockLike",
    "Driver",
    "EngineLike",
    "EngineSession",
    "KitClock",
    "LifecycleMachine",
    "RequirementFailed",
    "StoreContract",
    "StoreMachine",
    "attempt",
    "connect",
    "describe_change",
    "expect_rejected",
    "fresh_id",
    "machine_settings",
    "snapshot",
]

E = TypeVar("E", bound=Engine)


def connect(engine: Engine, *, label: str | None = None) -> EngineSession:
    """``engine`` as the kit sees it, reset to an empty store.

    The session is what the kit's checks and machines call: ``call(op, **args)``
    sends wire JSON (an in-process engine's answers go through a JSON round trip, its
    typed errors become :class:`memspec.EngineError`), every result is checked against
    ``schemas/protocol.json``, and an operation of a profile the engine does not claim
    skips the test as not claimed. ``label`` names the engine in messages (default:
    its class name).
    """
    session = EngineSession(Connection(engine, label=label or type(engine).__name__))
    session.reset()
    return session


def machine_settings() -> settings:
    """The hypothesis settings the kit runs its machines with: the active profile with no
    deadline and no health checks (see ``kit_settings``). Pass your own instead to
    ``run_state_machine_as_test`` for more examples or steps."""
    return kit_settings()


class StoreContract(Generic[E]):
    """The store profile's contract tests, for a pytest class of your own.

    Subclass it in a class whose name starts with ``Test`` and say how to build the
    engine under test, one of three ways:

    * ``engine_cls = MyEngine``: the engine's class, called with no arguments, once per
      test (for a factory function, override :meth:`make_engine` instead);
    * ``engine_command = "node engine.js"``: an engine speaking the process protocol,
      started once per test (``engine_timeout`` seconds per request);
    * override the ``memspec_engine`` fixture (it may use other fixtures, such as
      ``tmp_path``) to yield a fresh engine.

    Each test gets the engine reset, through :func:`connect`, as the ``engine``
    fixture, a :class:`KitClock` as ``clock`` and a :class:`Driver` over both as
    ``driver``. A test fails with a :class:`RequirementFailed` naming its
    requirement; an engine that does not claim
    the ``store`` profile has every test skipped as not claimed.
    """

    #: The engine's class, called with no arguments once per test.
    engine_cls: type[E] | None = None
    #: Instead of ``engine_cls``: the command line of an engine speaking the process
    #: protocol (shlex-split), started once per test.
    engine_command: str | None = None
    #: Seconds a process engine may take to answer one request.
    engine_timeout: float = 10.0

    def make_engine(self) -> Engine:
        """A fresh engine from ``engine_cls`` or ``engine_command``."""
        if self.engine_cls is not None:
            built: Engine = self.engine_cls()
            return built
        if self.engine_command is not None:
            return process_engine(self.engine_command, timeout=self.engine_timeout)
        pytest.fail(f"{type(self).__name__} does not say which engine to test: set "
                    "engine_cls or engine_command, or override the memspec_engine fixture",
                    pytrace=False)

    @pytest.fixture
    def memspec_engine(self) -> Iterator[Engine]:
        """The engine under test, fresh for each test and closed after it."""
        engine = self.make_engine()
        try:
            yield engine
        finally:
            engine.close()

    @pytest.fixture
    def engine(self, memspec_engine: Engine) -> EngineSession:
        """The engine under test as the kit's checks see it, reset (see :func:`connect`)."""
        return connect(memspec_engine)

    @pytest.fixture
    def clock(self) -> KitClock:
        """A deterministic clock starting at 2026-01-01T00:00:00.000Z."""
        return KitClock()

    @pytest.fixture
    def driver(self, engine: EngineSession, clock: KitClock) -> Driver:
        """The kit's shared test steps over ``engine`` and ``clock`` (see :class:`Driver`),
        for tests of your own in the subclass."""
        return Driver(engine, clock)

    def hypothesis_settings(self) -> settings:
        """The settings ``test_store_state_machine`` runs with (override for more steps)."""
        return machine_settings()

    @pytest.mark.parametrize("requirement", [
        pytest.param(req, marks=pytest.mark.requirement(req), id=req)
        for req in STORE_MACHINE_REQUIREMENTS])
    def test_store_state_machine(self, engine: EngineSession, clock: KitClock,
                                 requirement: str) -> None:
        """Random valid puts (and, for STORE-11, invalid ones) and the reads ``requirement``
        needs, checked against a model of the store (:class:`StoreMachine`, with
        :meth:`hypothesis_settings`): one run per requirement, as the kit runs it."""
        run_state_machine_as_test(
            lambda: StoreMachine(engine, clock, judge=(requirement,)),  # type: ignore[arg-type]
            settings=self.hypothesis_settings())


def _contract_test(check: ContractCheck) -> Callable[[StoreContract[Any], EngineSession, KitClock],
                                                     None]:
    """The test method of one shared store check, marked with its requirement."""
    def test(self: StoreContract[Any], engine: EngineSession, clock: KitClock) -> None:
        check.run(engine, clock)

    test.__name__ = test.__qualname__ = f"test_{check.name}"
    test.__doc__ = check.run.__doc__
    marked: Callable[[StoreContract[Any], EngineSession, KitClock], None] = (
        pytest.mark.requirement(check.requirement)(test))
    return marked


# One test per shared check, under the name and requirement the kit's store suite gives it
# (generated from the one list, so the base class cannot drift from the kit).
for _check in CHECKS:
    setattr(StoreContract, f"test_{_check.name}", _contract_test(_check))
del _check
