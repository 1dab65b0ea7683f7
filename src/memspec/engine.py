"""The engine interface: the one way the kit talks to an engine.

Every operation takes and returns wire JSON (``dict``). An in-process
engine implements :class:`Engine` directly (subclassing :class:`EngineBase`
is the easy way); an engine in any other language speaks the same
operations as newline-delimited JSON over stdin/stdout (see
``memspec.protocol``). The operations, their profiles and argument shapes
are data: ``spec/operations.json`` and ``schemas/protocol.json``; the optional
extension profiles and their operations are ``spec/extensions.json``
(``spec/EXTENSIONS.md``), merged in after the core ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any, Protocol, runtime_checkable

from memspec._errors import UnsupportedError, error_for_code
from memspec.data import json_resource

__all__ = [
    "PROTOCOL_VERSION",
    "SPEC_VERSION",
    "Engine",
    "EngineBase",
    "extension_profiles",
    "hello_refusal",
    "operations",
    "profiles",
]

SPEC_VERSION = "fg-agent-memory/0.1"
PROTOCOL_VERSION = "memspec-engine/1"


@cache
def _merged(member: str) -> Mapping[str, Any]:
    core: Mapping[str, Any] = json_resource("spec", "operations.json")[member]
    extra: Mapping[str, Any] = json_resource("spec", "extensions.json")[member]
    # Why core wins: an extension can add names but never redefine a core one.
    return {**core, **{k: v for k, v in extra.items() if k not in core}}


def operations() -> dict[str, Any]:
    """The operation table, core then extension operations: name -> {profile, summary, args,
    result} (merged once; each call hands out its own outer dict). The typed view is
    :func:`memspec.data.operations`."""
    return dict(_merged("operations"))


def profiles() -> dict[str, Any]:
    """The profile table, core then extension profiles: name -> {title, requires, summary}
    (merged once). The typed view is :func:`memspec.data.profiles`."""
    return dict(_merged("profiles"))


def extension_profiles() -> tuple[str, ...]:
    """The names of the optional extension profiles (``spec/extensions.json``), in order."""
    return tuple(json_resource("spec", "extensions.json")["profiles"])


@runtime_checkable
class Engine(Protocol):
    """What the conformance kit needs of an engine under test.

    ``hello`` is an operation like the others: ``call("hello", {protocol, spec_version})``
    answers what ``describe()`` does, or raises an error with code ``protocol`` for versions
    the engine does not speak (PROTO-2; :class:`EngineBase` does both).
    """

    def describe(self) -> dict[str, Any]:
        """The handshake: ``{name, version, spec_version, protocol, profiles}``."""
        ...

    def call(self, operation: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run one operation; raise a :class:`~memspec.MemspecError` to reject its input."""
        ...

    def close(self) -> None:
        """Release the engine's resources (files, processes)."""
        ...


def hello_refusal(arguments: Any) -> str | None:
    """Why a ``hello`` with ``arguments`` is refused (None: it carries both versions this
    package speaks). SPEC 18.2: another protocol version, another spec version or either one
    missing is answered with code ``protocol`` (PROTO-2)."""
    if not isinstance(arguments, dict):
        return "the arguments of hello must be an object"
    if arguments.get("protocol") != PROTOCOL_VERSION:
        return f"this engine speaks {PROTOCOL_VERSION}, not {arguments.get('protocol')!r}"
    if arguments.get("spec_version") != SPEC_VERSION:
        return f"this engine implements {SPEC_VERSION}, not {arguments.get('spec_version')!r}"
    return None


class EngineBase:
    """Dispatches ``call(op, args)`` to a method ``op_<op>(args)``; missing ones are unsupported."""

    name = "unnamed-engine"
    version = "0"
    claimed_profiles: tuple[str, ...] = ()

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "spec_version": SPEC_VERSION,
            "protocol": PROTOCOL_VERSION,
            "profiles": list(self.claimed_profiles),
        }

    def call(self, operation: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if operation not in operations():
            raise UnsupportedError(f"unknown operation {operation!r}")
        method = getattr(self, f"op_{operation}", None)
        if method is None:
            raise UnsupportedError(f"{self.name} does not implement {operation!r}")
        if not isinstance(arguments, dict):
            raise error_for_code("protocol", f"arguments of {operation!r} must be an object")
        result: dict[str, Any] = method(arguments)
        return result

    def op_hello(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The handshake: ``describe()``, or code ``protocol`` for versions it does not speak."""
        refusal = hello_refusal(arguments)
        if refusal is not None:
            raise error_for_code("protocol", refusal)
        return self.describe()

    def op_bye(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """End the session: answered ``{}``; the process server stops reading after it."""
        return {}

    def close(self) -> None:
        return None
