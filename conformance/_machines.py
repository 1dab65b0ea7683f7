"""Reusable model-based checks for engines: store observers and the lifecycle state machine.

Everything here talks to an engine only through the kit's session interface
(``call(op, **args)``), so an engine author can reuse it in their own test suite
the way ``zarr.testing.stateful`` machines are reused; the public door is
:mod:`memspec.testing` (build the machine with the engine under test and let
hypothesis drive it)::

    from hypothesis.stateful import run_state_machine_as_test
    from memspec.testing import KitClock, LifecycleMachine, connect

    def test_lifecycle():
        engine = connect(MyEngine())
        run_state_machine_as_test(lambda: LifecycleMachine(engine, KitClock()))

``LifecycleMachine`` mirrors every operation on a model (the expected version
history of every record) and checks the engine against it after every step.

This module gathers the public names of three parts: ``_machines_observe``
(snapshots, attempts, rejection checks), ``_model`` (the lifecycle rules as pure
functions) and ``_machines_lifecycle`` (the state machine).
"""

from __future__ import annotations

from memspec.conformance._machines_lifecycle import LifecycleMachine
from memspec.conformance._machines_observe import (
    PURE_OPERATIONS,
    ClockLike,
    EngineLike,
    Snapshot,
    attempt,
    canon,
    describe_change,
    expect_rejected,
    fresh_id,
    kit_settings,
    snapshot,
)
from memspec.conformance._model import (
    LEGAL_TRANSITIONS,
    check_lifecycle_invariants,
    check_version,
    version_problems,
)

__all__ = [
    "LEGAL_TRANSITIONS",
    "PURE_OPERATIONS",
    "ClockLike",
    "EngineLike",
    "LifecycleMachine",
    "Snapshot",
    "attempt",
    "canon",
    "check_lifecycle_invariants",
    "check_version",
    "describe_change",
    "expect_rejected",
    "fresh_id",
    "kit_settings",
    "snapshot",
    "version_problems",
]
