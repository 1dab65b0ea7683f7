"""Faulty engines: the reference engine (or any engine) behind one fault.

In process, the kit loads ``memspec.selftest.engines:faulty.<fault_name>`` (the
fault's name with ``-`` spelled ``_``), which builds a :class:`FaultyEngine`
around a fresh reference engine. The process form is
:mod:`memspec.selftest.proxy`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from memspec._errors import error_for_code
from memspec.engine import Engine, hello_refusal, profiles
from memspec.selftest.faults import Fault, Json, UnknownFaultError, fault_named

__all__ = ["FaultyEngine", "factory_spec", "faulty", "faulty_engine", "narrow", "narrow_claim",
           "reference_engine"]


def narrow_claim(fault: Fault) -> tuple[str, ...]:
    """The narrowest claim that includes ``fault``'s profile: it and every profile it
    requires, transitively (``core`` is never claimed; a core fault claims nothing)."""
    table = profiles()
    seen: list[str] = []
    todo = [fault.profile]
    while todo:
        name = todo.pop()
        if name in seen or name not in table or table[name].get("always"):
            continue
        seen.append(name)
        todo.extend(table[name].get("requires", []))
    return tuple(name for name in table if name in seen)


class FaultyEngine:
    """``inner`` with ``fault`` applied to every operation; an :class:`memspec.Engine`.

    With ``claim``, the handshake claims only those of the inner engine's profiles.
    """

    def __init__(self, inner: Engine, fault: Fault,
                 claim: Collection[str] | None = None) -> None:
        self.inner = inner
        self.fault = fault
        self.claim = None if claim is None else frozenset(claim)
        self._transform = fault.bind()

    def describe(self) -> dict[str, Any]:
        """The inner engine's handshake, named ``faulty:<fault>`` (its claim narrowed)."""
        info = {**self.inner.describe(), "name": f"faulty:{self.fault.name}"}
        if self.claim is not None:
            info["profiles"] = [p for p in info.get("profiles", []) if p in self.claim]
        return info

    def call(self, operation: str, arguments: Json) -> Json:
        """Run ``operation`` through the fault (``hello`` is this engine's own handshake)."""
        return self._transform(operation, dict(arguments),
                               self._hello if operation == "hello" else self.inner.call)

    def _hello(self, operation: str, arguments: Json) -> Json:
        # Answered here, not by the inner engine: its answer would carry its own name and
        # claim, and a process engine's protocol answer would reach the fault as a crash.
        refusal = hello_refusal(arguments)
        if refusal is not None:
            raise error_for_code("protocol", refusal)
        return self.describe()

    def close(self) -> None:
        """Close the inner engine."""
        self.inner.close()


def reference_engine() -> Engine:
    """A fresh in-process reference engine: the self-test's one door to the reference."""
    from memspec.reference.engine import create_engine

    return create_engine()


def faulty_engine(name: str, *, narrowed: bool = False) -> FaultyEngine:
    """A fresh in-process reference engine behind the fault called ``name`` (claiming only
    :func:`narrow_claim` with ``narrowed``)."""
    fault = fault_named(name)
    return FaultyEngine(reference_engine(), fault, narrow_claim(fault) if narrowed else None)


def factory_spec(name: str, *, narrowed: bool = False) -> str:
    """The ``--memspec-engine`` value that loads the fault called ``name`` in process."""
    factories = "narrow" if narrowed else "faulty"
    return f"memspec.selftest.engines:{factories}.{name.replace('-', '_')}"


class _Factories:
    """``faulty.<name>`` is a zero-argument factory of the faulty engine ``name``;
    ``narrow.<name>`` of the same engine claiming only the fault's narrowest claim."""

    def __init__(self, narrowed: bool = False) -> None:
        self.narrowed = narrowed

    def __getattr__(self, attribute: str) -> Callable[[], FaultyEngine]:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        name = attribute.replace("_", "-")
        try:
            fault_named(name)
        except UnknownFaultError:
            raise AttributeError(f"no fault named {name!r}") from None

        def build() -> FaultyEngine:
            return faulty_engine(name, narrowed=self.narrowed)

        build.__name__ = attribute
        return build

    def __dir__(self) -> list[str]:
        from memspec.selftest.faults import all_faults

        return [f.name.replace("-", "_") for f in all_faults()]


#: Factories of every faulty in-process engine, by fault name (``-`` spelled ``_``).
faulty = _Factories()
#: The same engines, each claiming only the narrowest claim that includes its fault's profile.
narrow = _Factories(narrowed=True)
