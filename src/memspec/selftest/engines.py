"""Faulty engines: the reference engine (or any engine) behind one fault.

In process, the kit loads ``memspec.selftest.engines:faulty.<fault_name>`` (the
fault's name with ``-`` spelled ``_``), which builds a :class:`FaultyEngine`
around a fresh reference engine. The process form is
:mod:`memspec.selftest.proxy`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memspec.engine import Engine
from memspec.selftest.faults import Fault, Json, UnknownFaultError, fault_named

__all__ = ["FaultyEngine", "factory_spec", "faulty", "faulty_engine", "reference_engine"]


class FaultyEngine:
    """``inner`` with ``fault`` applied to every operation; an :class:`memspec.Engine`."""

    def __init__(self, inner: Engine, fault: Fault) -> None:
        self.inner = inner
        self.fault = fault
        self._transform = fault.bind()

    def describe(self) -> dict[str, Any]:
        """The inner engine's handshake, named ``faulty:<fault>``."""
        return {**self.inner.describe(), "name": f"faulty:{self.fault.name}"}

    def call(self, operation: str, arguments: Json) -> Json:
        """Run ``operation`` through the fault."""
        return self._transform(operation, dict(arguments), self.inner.call)

    def close(self) -> None:
        """Close the inner engine."""
        self.inner.close()


def reference_engine() -> Engine:
    """A fresh in-process reference engine: the self-test's one door to the reference."""
    from memspec.reference.engine import create_engine

    return create_engine()


def faulty_engine(name: str) -> FaultyEngine:
    """A fresh in-process reference engine behind the fault called ``name``."""
    return FaultyEngine(reference_engine(), fault_named(name))


def factory_spec(name: str) -> str:
    """The ``--memspec-engine`` value that loads the fault called ``name`` in process."""
    return f"memspec.selftest.engines:faulty.{name.replace('-', '_')}"


class _Factories:
    """``faulty.<name>`` is a zero-argument factory of the faulty engine ``name``."""

    def __getattr__(self, attribute: str) -> Callable[[], FaultyEngine]:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        name = attribute.replace("_", "-")
        try:
            fault_named(name)
        except UnknownFaultError:
            raise AttributeError(f"no fault named {name!r}") from None

        def build() -> FaultyEngine:
            return faulty_engine(name)

        build.__name__ = attribute
        return build

    def __dir__(self) -> list[str]:
        from memspec.selftest.faults import all_faults

        return [f.name.replace("-", "_") for f in all_faults()]


#: Factories of every faulty in-process engine, by fault name (``-`` spelled ``_``).
faulty = _Factories()
