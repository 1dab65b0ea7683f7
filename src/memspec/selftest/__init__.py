"""The kit proves its power: faulty engines and the selftest that must catch them all.

Each :class:`Fault` breaks one named requirement of a working engine (the
reference engine) at the operation level, so the same fault runs in process
(:class:`FaultyEngine`) and as a process (``python -m memspec.selftest.proxy
--fault NAME``). :func:`run_selftest` runs the conformance kit against every
faulty engine and the reference engine and says whether each fault is caught
on its own requirement; ``memspec selftest`` is its command line.
"""

from __future__ import annotations

from memspec.selftest.engines import FaultyEngine, faulty_engine
from memspec.selftest.faults import Fault, Stateful, UnknownFaultError, all_faults, fault_named
from memspec.selftest.runner import (
    FaultRow,
    ReferenceRow,
    SelftestError,
    SelftestResult,
    run_selftest,
)

__all__ = [
    "Fault",
    "FaultRow",
    "FaultyEngine",
    "ReferenceRow",
    "SelftestError",
    "SelftestResult",
    "Stateful",
    "UnknownFaultError",
    "all_faults",
    "fault_named",
    "faulty_engine",
    "run_selftest",
]
